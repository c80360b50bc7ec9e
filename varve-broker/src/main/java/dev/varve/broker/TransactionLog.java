package dev.varve.broker;

import dev.varve.broker.txn.TransactionCoordinator;
import dev.varve.broker.txn.TransactionRecords;
import dev.varve.broker.txn.TransactionState;
import dev.varve.broker.txn.TxnMetadata;
import dev.varve.storage.PartitionLog;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.errors.CoordinatorNotAvailableException;
import org.apache.kafka.common.errors.NotCoordinatorException;
import org.apache.kafka.common.internals.Topic;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.utils.Utils;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * The internal compacted topic {@code __transaction_state}: one record per transition of a
 * transactional id (key: the id; value: its {@link TxnMetadata}; a tombstone once the id expired), in
 * the partition {@link #partitionFor} picks by the id's hash, as Kafka does. Created on the first
 * FindCoordinator for a transactional id with {@code transaction.state.log.num.partitions}
 * partitions, {@code transaction.state.log.replication.factor} replicas (capped at the brokers
 * present) and {@code transaction.state.log.min.isr}.
 *
 * <p>Thread-safe; nothing here waits for another node.
 */
public final class TransactionLog implements TransactionCoordinator.Log {
    private static final Logger LOG = LoggerFactory.getLogger(TransactionLog.class);
    public static final String NAME = Topic.TRANSACTION_STATE_TOPIC_NAME;
    /** How long a write waits for the in-sync replicas (Kafka's request timeout for coordinator appends). */
    private static final long WRITE_TIMEOUT_MS = 5_000;

    private final BrokerContext broker;
    /** Fixed at start-up (the existing topic's count, else the configured one), as Kafka fixes it. */
    private final int partitions;
    private final InternalTopicCreation creation;

    public TransactionLog(BrokerContext broker) {
        this.broker = broker;
        this.partitions = broker.topics().get(NAME).map(TopicRegistry.TopicInfo::partitions)
                .orElse(broker.config().intValue(BrokerConfig.TRANSACTION_STATE_LOG_NUM_PARTITIONS));
        this.creation = new InternalTopicCreation(broker, NAME);
    }

    public int partitions() {
        return partitions;
    }

    @Override
    public int partitionFor(String transactionalId) {
        return Utils.abs(transactionalId.hashCode()) % partitions;
    }

    /**
     * Whether the topic exists; when it does not, starts creating it and answers false (the client is
     * told COORDINATOR_NOT_AVAILABLE and asks again). A single node creates it here and now.
     */
    public boolean ensureExists() {
        if (broker.topics().get(NAME).isPresent()) {
            return true;
        }
        BrokerConfig config = broker.config();
        short rf = (short) config.intValue(BrokerConfig.TRANSACTION_STATE_LOG_REPLICATION_FACTOR);
        var cluster = broker.replicaManager().cluster();
        // the replication factor is capped at the brokers present, and min.insync.replicas at it
        int alive = cluster == null ? 1 : (int) cluster.image().brokers().values().stream().filter(b -> !b.fenced()).count();
        int minIsr = Math.max(1, Math.min(config.intValue(BrokerConfig.TRANSACTION_STATE_LOG_MIN_ISR), Math.min(rf, alive)));
        return creation.ensureExists(partitions, rf, Map.of(
                "cleanup.policy", "compact",
                "compression.type", "uncompressed",
                "segment.bytes", Integer.toString(config.intValue(BrokerConfig.TRANSACTION_STATE_LOG_SEGMENT_BYTES)),
                "min.insync.replicas", Integer.toString(minIsr)));
    }

    @Override
    public CompletableFuture<Void> write(int partition, int coordinatorEpoch, TxnMetadata metadata) {
        try {
            if (!ensureExists()) {
                throw new CoordinatorNotAvailableException(NAME + " is being created");
            }
            TopicPartition tp = new TopicPartition(NAME, partition);
            byte[] value = metadata.state() == TransactionState.DEAD ? null : TransactionRecords.value(metadata);
            MemoryRecords batch = MemoryRecords.withRecords(Compression.NONE,
                    new SimpleRecord(System.currentTimeMillis(), TransactionRecords.key(metadata.transactionalId()), value));
            ReplicaManager.LeaderAppend appended = broker.replicaManager().appendAsLeader(tp, batch, true);
            if (appended.leaderEpoch() != coordinatorEpoch) {
                // leadership moved and came back since this coordinator loaded: its state may be stale
                throw new NotCoordinatorException("__transaction_state-" + partition + " is in leader epoch "
                        + appended.leaderEpoch() + ", the coordinator loaded epoch " + coordinatorEpoch);
            }
            return broker.replicaManager().awaitAck(tp, appended, WRITE_TIMEOUT_MS).thenAccept(error -> {
                if (error != Errors.NONE) {
                    throw error.exception("the write to " + tp + " was not replicated: " + error);
                }
            });
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    /**
     * Reads a partition this broker has just become leader of, up to its log end: the last record of
     * each transactional id (ids whose last record is a tombstone are left out). A record that does
     * not decode is skipped with an error in the log, as Kafka's loader would refuse it.
     */
    public Map<String, TxnMetadata> load(int partition) {
        Map<String, TxnMetadata> ids = new HashMap<>();
        if (broker.topics().get(NAME).isEmpty()) {
            return ids;
        }
        PartitionLog log = broker.replicaManager().log(new TopicPartition(NAME, partition));
        InternalTopicReplay.replay(log, log.logEndOffset(), (batch, from) -> {
            if (batch.isControlBatch()) {
                return;
            }
            for (Record r : batch) {
                if (r.offset() < from || !r.hasKey()) {
                    continue;
                }
                try {
                    String id = TransactionRecords.decodeKey(r.key());
                    if (r.hasValue()) {
                        ids.put(id, TransactionRecords.decodeValue(id, r.value()));
                    } else {
                        ids.remove(id);
                    }
                } catch (TransactionRecords.CorruptTransactionRecordException e) {
                    LOG.error("{}-{} at offset {}: {}", NAME, partition, r.offset(), e.getMessage());
                }
            }
        });
        return ids;
    }
}
