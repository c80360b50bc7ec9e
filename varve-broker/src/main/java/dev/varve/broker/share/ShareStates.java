package dev.varve.broker.share;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.protocol.Errors;

import java.util.Map;

/**
 * The share-partition state a share group's admin operations read and change: DescribeShareGroupOffsets
 * (the start offsets), AlterShareGroupOffsets (set a start offset; the caller makes sure the group has no
 * member) and DeleteShareGroupOffsets / DeleteGroups (forget state). Every change is persisted before it
 * returns.
 */
public interface ShareStates {
    /** The start offset (SPSO) of every partition the group has state for. */
    Map<SharePartitionKey, Long> startOffsets(String groupId);

    /** Sets a partition's start offset: everything in flight is forgotten, delivery starts there. */
    Errors alterStartOffset(String groupId, Uuid topicId, int partition, long startOffset);

    /** Forgets the group's state of one topic (DeleteShareGroupOffsets). */
    void deleteState(String groupId, Uuid topicId);

    /** Forgets all of the group's state and its share sessions (DeleteGroups). */
    void deleteState(String groupId);

    /**
     * Where the group configs the data path reads come from (share.auto.offset.reset, share.isolation.level);
     * Kafka's defaults (latest, read_uncommitted) until set.
     */
    void setGroupSettings(ShareGroupSettings settings);
}
