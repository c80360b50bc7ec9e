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
    private volatile dev.varve.broker.cluster.ClusterReplicaManager cluster;

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
        dev.varve.broker.cluster.ClusterReplicaManager c = cluster;
        if (c != null) {
            return c.leaderLog(tp, -1);
        }
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

    /** Cluster mode: partitions follow the metadata image (set once at start-up). */
    public void setCluster(dev.varve.broker.cluster.ClusterReplicaManager cluster) {
        this.cluster = cluster;
    }

    /** The cluster-mode replica manager, or null on a single node. */
    public dev.varve.broker.cluster.ClusterReplicaManager cluster() {
        return cluster;
    }

    /**
     * Appends as leader; with {@code acksAll}, first checks min.insync.replicas (NOT_ENOUGH_REPLICAS).
     * On a single node the ISR is this broker alone.
     */
    public LeaderAppend appendAsLeader(TopicPartition tp, MemoryRecords records, boolean acksAll) {
        return appendAsLeader(tp, records, acksAll, dev.varve.storage.AppendOrigin.CLIENT);
    }

    /** As {@link #appendAsLeader(TopicPartition, MemoryRecords, boolean)}, with the producer checks of {@code origin}. */
    public LeaderAppend appendAsLeader(TopicPartition tp, MemoryRecords records, boolean acksAll,
                                       dev.varve.storage.AppendOrigin origin) {
        return appendAsLeader(tp, records, acksAll, origin, null);
    }

    /**
     * As {@link #appendAsLeader(TopicPartition, MemoryRecords, boolean, dev.varve.storage.AppendOrigin)};
     * with {@code guard} not null the leader verifies transactions (KIP-890, see
     * {@link dev.varve.storage.PartitionLog#appendAsLeader(MemoryRecords, int, dev.varve.storage.AppendOrigin,
     * dev.varve.storage.VerificationGuard)}).
     */
    public LeaderAppend appendAsLeader(TopicPartition tp, MemoryRecords records, boolean acksAll,
                                       dev.varve.storage.AppendOrigin origin, dev.varve.storage.VerificationGuard guard) {
        dev.varve.broker.cluster.ClusterReplicaManager c = cluster;
        if (c != null) {
            return c.appendAsLeader(tp, records, acksAll, origin, guard);
        }
        PartitionLog log = log(tp);
        LogAppendInfo info = log.appendAsLeader(records, LEADER_EPOCH, origin, guard);
        // committed at once; forward only: a racing append may have moved it past this one's end already
        log.maybeIncrementHighWatermark(info.lastOffset() + 1);
        if (info.numRecords() > 0) {
            purgatory.wake(tp);
        }
        return new LeaderAppend(info, LEADER_EPOCH);
    }

    /**
     * Starts verifying {@code producerId}'s transactional write to {@code tp}, which this broker must
     * lead (see {@link PartitionLog#startTransactionVerification}).
     */
    public dev.varve.storage.VerificationGuard startTransactionVerification(TopicPartition tp, long producerId, short epoch,
                                                                            boolean supportsEpochBump) {
        return log(tp).startTransactionVerification(producerId, epoch, supportsEpochBump);
    }

    /** An append as leader and the leader epoch it was made in (what an acks=all wait is tied to). */
    public record LeaderAppend(LogAppendInfo info, int leaderEpoch) {
    }

    /**
     * Completes when an acks=all append ending at {@code requiredOffset} is committed (NONE) or cannot
     * be (an error code; NOT_LEADER_OR_FOLLOWER once this broker no longer leads in the append's leader
     * epoch). Immediate on a single node: its appends are committed at once.
     */
    public java.util.concurrent.CompletableFuture<org.apache.kafka.common.protocol.Errors> awaitAck(
            TopicPartition tp, LeaderAppend append, long timeoutMs) {
        dev.varve.broker.cluster.ClusterReplicaManager c = cluster;
        if (c != null) {
            return c.awaitAck(tp, append.leaderEpoch(), append.info().lastOffset() + 1, timeoutMs);
        }
        return java.util.concurrent.CompletableFuture.completedFuture(org.apache.kafka.common.protocol.Errors.NONE);
    }

    /**
     * Writes a transaction marker as the leader of {@code tp} (WriteTxnMarkers), as an acks=all append;
     * wait for it with {@link #awaitAck}.
     *
     * @throws org.apache.kafka.common.errors.TransactionCoordinatorFencedException a newer coordinator wrote the producer's last marker
     * @throws org.apache.kafka.common.errors.InvalidProducerEpochException        the producer epoch is older than the partition's
     */
    public LeaderAppend appendMarkerAsLeader(TopicPartition tp, long producerId, short producerEpoch, int coordinatorEpoch,
                                             boolean commit) {
        return appendMarkerAsLeader(tp, producerId, producerEpoch, coordinatorEpoch, commit, (short) 0);
    }

    /**
     * {@link #appendMarkerAsLeader(TopicPartition, long, short, int, boolean)} of a transaction of
     * {@code transactionVersion} (2: its marker's epoch must be newer than the producer's, see
     * {@link dev.varve.storage.ProducerStateTable#checkMarker(long, short, int, short)}).
     */
    public LeaderAppend appendMarkerAsLeader(TopicPartition tp, long producerId, short producerEpoch, int coordinatorEpoch,
                                             boolean commit, short transactionVersion) {
        dev.varve.broker.cluster.ClusterReplicaManager c = cluster;
        if (c != null) {
            return c.appendMarkerAsLeader(tp, producerId, producerEpoch, coordinatorEpoch, commit, transactionVersion);
        }
        PartitionLog log = log(tp);
        LogAppendInfo info = log.appendMarkerAsLeader(producerId, producerEpoch, coordinatorEpoch, commit, LEADER_EPOCH,
                transactionVersion);
        log.maybeIncrementHighWatermark(info.lastOffset() + 1);
        purgatory.wake(tp);
        return new LeaderAppend(info, LEADER_EPOCH);
    }

    public LogAppendInfo appendAsLeader(TopicPartition tp, MemoryRecords records) {
        dev.varve.broker.cluster.ClusterReplicaManager c = cluster;
        if (c != null) {
            return c.appendAsLeader(tp, records, false).info();
        }
        return appendLocally(tp, records, dev.varve.storage.AppendOrigin.CLIENT);
    }

    private LogAppendInfo appendLocally(TopicPartition tp, MemoryRecords records, dev.varve.storage.AppendOrigin origin) {
        return appendAsLeader(tp, records, false, origin, null).info();
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
