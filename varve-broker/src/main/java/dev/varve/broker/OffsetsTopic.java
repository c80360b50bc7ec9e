package dev.varve.broker;

import dev.varve.broker.group.GroupConfig;
import dev.varve.broker.group.GroupOffsets;
import dev.varve.broker.group.GroupStore;
import dev.varve.storage.AppendOrigin;
import dev.varve.storage.PartitionLog;
import dev.varve.storage.ProducerStateTable;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.errors.CoordinatorNotAvailableException;
import org.apache.kafka.common.errors.CorruptRecordException;
import org.apache.kafka.common.internals.Topic;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.ControlRecordType;
import org.apache.kafka.common.record.internal.EndTransactionMarker;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.utils.Utils;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * The internal compacted topic {@code __consumer_offsets}: where the group coordinator stores
 * committed offsets and group membership, one partition per group (by the hash of the group id, as
 * Kafka computes it), so a group's records are totally ordered. Created on first use with
 * {@code offsets.topic.num.partitions} partitions; replayed into the coordinator at start-up.
 *
 * <p>Thread-safe: appends go through the {@link ReplicaManager}, which serializes per partition;
 * nothing here waits for another node.
 */
public final class OffsetsTopic implements GroupStore {
    private static final Logger LOG = LoggerFactory.getLogger(OffsetsTopic.class);
    public static final String NAME = Topic.GROUP_METADATA_TOPIC_NAME;
    /** Kafka's offsets.commit.timeout.ms default: how long a write waits for the in-sync replicas. */
    private static final long COMMIT_TIMEOUT_MS = 5_000;

    private final BrokerContext broker;
    private final GroupConfig config;
    /** Fixed at start-up (the existing topic's count, else the configured one), as Kafka fixes it. */
    private final int partitions;
    private final InternalTopicCreation creation;

    public OffsetsTopic(BrokerContext broker, GroupConfig config) {
        this.broker = broker;
        this.config = config;
        this.partitions = broker.topics().get(NAME).map(TopicRegistry.TopicInfo::partitions)
                .orElse(config.offsetsTopicNumPartitions());
        this.creation = new InternalTopicCreation(broker, NAME);
    }

    /** The partition of {@code __consumer_offsets} that holds a group. */
    @Override
    public int partitionFor(String groupId) {
        return Utils.abs(groupId.hashCode()) % partitions();
    }

    private int partitions() {
        return partitions;
    }

    /**
     * Cluster mode: replays one partition this broker has just become leader of, up to its log end (a
     * new leader's log is the one every replica follows from now on).
     *
     * @return the number of records replayed
     */
    public long loadPartition(int partition, GroupOffsets offsets) {
        PartitionLog log = broker.replicaManager().log(new TopicPartition(NAME, partition));
        return loadPartition(log, offsets, log.logEndOffset());
    }

    /**
     * Whether the topic exists; when it does not, starts creating it and answers false (the caller
     * answers COORDINATOR_NOT_AVAILABLE and the client retries, as with Kafka). On a single node the
     * topic is created here and then exists; in a cluster the request goes to the controller and no
     * request thread waits for it.
     */
    public boolean ensureExists() {
        Map<String, String> configs = Map.of(
                "cleanup.policy", "compact",
                "segment.bytes", Integer.toString(config.offsetsTopicSegmentBytes()),
                "compression.type", "producer");
        return creation.ensureExists(partitions,
                (short) broker.config().intValue(BrokerConfig.OFFSETS_TOPIC_REPLICATION_FACTOR), configs);
    }

    @Override
    public Write append(String groupId, List<SimpleRecord> records) {
        return append(groupId, () -> MemoryRecords.withRecords(Compression.NONE, records.toArray(new SimpleRecord[0])),
                AppendOrigin.CLIENT);
    }

    /**
     * As Kafka writes a TxnOffsetCommit: base sequence 0, appended with the coordinator's checks (the
     * producer epoch only: the sequence is not the producer's).
     */
    @Override
    public Write appendTransactional(String groupId, long producerId, short producerEpoch, List<SimpleRecord> records) {
        return appendTransactional(groupId, producerId, producerEpoch, records, null);
    }

    @Override
    public Write appendTransactional(String groupId, long producerId, short producerEpoch, List<SimpleRecord> records,
                                     dev.varve.storage.VerificationGuard guard) {
        return append(groupId, () -> MemoryRecords.withTransactionalRecords(Compression.NONE, producerId, producerEpoch, 0,
                records.toArray(new SimpleRecord[0])), AppendOrigin.COORDINATOR, guard);
    }

    private Write append(String groupId, java.util.function.Supplier<MemoryRecords> records, AppendOrigin origin) {
        return append(groupId, records, origin, null);
    }

    private Write append(String groupId, java.util.function.Supplier<MemoryRecords> records, AppendOrigin origin,
                         dev.varve.storage.VerificationGuard guard) {
        if (!ensureExists()) {
            throw new CoordinatorNotAvailableException(NAME + " is being created");
        }
        TopicPartition tp = new TopicPartition(NAME, partitionFor(groupId));
        MemoryRecords batch = records.get();
        // as acks=all: a change is answered only once every in-sync replica has it (at once on a single node)
        ReplicaManager.LeaderAppend appended = broker.replicaManager().appendAsLeader(tp, batch, true, origin, guard);
        long last = appended.info().lastOffset();
        CompletableFuture<Void> committed = broker.replicaManager().awaitAck(tp, appended, COMMIT_TIMEOUT_MS)
                .thenApply(error -> {
                    if (error != Errors.NONE) {
                        throw error.exception("the offsets topic write to " + tp + " was not replicated: " + error);
                    }
                    return null;
                });
        return new Write(last, committed);
    }

    /** Replays every partition of the topic (if it exists) into the coordinator, then completes the load. */
    public void load(GroupOffsets offsets) {
        Optional<TopicRegistry.TopicInfo> topic = broker.topics().get(NAME);
        long records = 0;
        if (topic.isPresent()) {
            for (int p = 0; p < topic.get().partitions(); p++) {
                PartitionLog log = broker.replicaManager().log(new TopicPartition(NAME, p));
                records += loadPartition(log, offsets, log.highWatermark());
            }
        }
        LOG.info("replayed {} record(s) of {}", records, NAME);
        offsets.completeLoad();
    }

    /**
     * Replays a partition's records in log order: those of a transactional batch become the producer's
     * pending offsets, which its COMMIT marker applies and its ABORT marker drops; a transaction still
     * open at {@code end} stays pending.
     */
    private static long loadPartition(PartitionLog log, GroupOffsets offsets, long end) {
        int partition = log.topicPartition().partition();
        long[] count = {0};
        InternalTopicReplay.replay(log, end, (batch, from) -> {
            if (batch.isControlBatch()) {
                EndTransactionMarker marker = batch.hasProducerId() ? markerOf(batch) : null;
                if (marker != null) {
                    offsets.replayEndTransaction(partition, batch.producerId(),
                            marker.controlType() == ControlRecordType.COMMIT, batch.baseOffset());
                }
                return;
            }
            long producerId = batch.isTransactional() ? batch.producerId() : RecordBatch.NO_PRODUCER_ID;
            for (Record r : batch) {
                if (r.offset() >= from) {
                    offsets.replay(r.offset(), producerId, r.key(), r.hasValue() ? r.value() : null);
                    count[0]++;
                }
            }
        });
        return count[0];
    }

    /** The COMMIT or ABORT marker of a control batch; null (with a warning) when it holds none that decodes. */
    private static EndTransactionMarker markerOf(RecordBatch batch) {
        try {
            return ProducerStateTable.markerOf(batch);
        } catch (CorruptRecordException e) {
            LOG.warn("skipping an offsets-topic control batch that does not decode: {}", e.getMessage());
            return null;
        }
    }
}
