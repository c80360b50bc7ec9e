package dev.varve.broker.share;

import dev.varve.storage.PartitionLog;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;

/** The partitions the share data path reads, as the broker has them. */
public interface ShareLogs {
    /** The log of a partition this broker leads; throws UnknownTopicOrPartitionException otherwise. */
    PartitionLog log(TopicPartition tp);

    /** The name of a topic by id, or null when there is no such topic. */
    String topicName(Uuid topicId);

    /** Wakes the share fetches waiting on {@code tp}: records of it may be acquirable now. */
    void wake(TopicPartition tp);
}
