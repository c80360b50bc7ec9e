package dev.varve.broker;

import dev.varve.storage.LogAppendInfo;
import dev.varve.storage.LogManager;
import dev.varve.storage.PartitionLog;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.record.internal.MemoryRecords;

import java.util.Optional;

/**
 * The broker's partitions: resolves a topic-partition to its log, appends as the (only) leader and
 * advances the high watermark. On a single node every acknowledged append is committed at once, so
 * the high watermark is the log end; replication (ISR, acks=all waiting) arrives with clustering.
 */
public final class ReplicaManager {
    /** The leader epoch stamped on batches; a single node never changes leader. */
    public static final int LEADER_EPOCH = 0;

    private final LogManager logManager;
    private final TopicRegistry topics;
    private final FetchPurgatory purgatory;

    public ReplicaManager(LogManager logManager, TopicRegistry topics, FetchPurgatory purgatory) {
        this.logManager = logManager;
        this.topics = topics;
        this.purgatory = purgatory;
    }

    /**
     * The log of an existing partition. A log is created only under the registry's lock, which
     * topic deletion also holds, so a request racing a deletion cannot re-create a deleted log.
     */
    public PartitionLog log(TopicPartition tp) {
        Optional<PartitionLog> open = logManager.getLog(tp);
        if (open.isPresent() && hosts(tp)) {
            return open.get();
        }
        synchronized (topics) {
            if (!hosts(tp)) {
                throw new UnknownTopicOrPartitionException("This server does not host this topic-partition: " + tp);
            }
            return logManager.getOrCreateLog(tp);
        }
    }

    private boolean hosts(TopicPartition tp) {
        Optional<TopicRegistry.TopicInfo> topic = topics.get(tp.topic());
        return topic.isPresent() && tp.partition() >= 0 && tp.partition() < topic.get().partitions();
    }

    public LogAppendInfo appendAsLeader(TopicPartition tp, MemoryRecords records) {
        PartitionLog log = log(tp);
        LogAppendInfo info = log.appendAsLeader(records, LEADER_EPOCH);
        log.updateHighWatermark(log.logEndOffset());
        if (info.numRecords() > 0) {
            purgatory.wake(tp);
        }
        return info;
    }

    public FetchPurgatory purgatory() {
        return purgatory;
    }

    public LogManager logManager() {
        return logManager;
    }

    public TopicRegistry topics() {
        return topics;
    }
}
