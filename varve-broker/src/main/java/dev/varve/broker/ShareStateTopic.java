package dev.varve.broker;

import dev.varve.broker.share.SharePartition;
import dev.varve.broker.share.SharePartitionKey;
import dev.varve.broker.share.ShareStatePersister;
import dev.varve.broker.share.ShareStateRecords;
import dev.varve.storage.AppendOrigin;
import dev.varve.storage.PartitionLog;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.errors.CoordinatorNotAvailableException;
import org.apache.kafka.common.internals.Topic;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.common.utils.Utils;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The internal compacted topic {@code __share_group_state} as a {@link ShareStatePersister}: each
 * share-partition's state is a ShareSnapshot record (Kafka's key and value, Kafka's generated codec) in
 * partition {@code abs(hash("group:topicId:partition")) % share.coordinator.state.topic.num.partitions},
 * the whole state at each write. Why whole snapshots and no ShareUpdate deltas: compaction keeps one record
 * per key, and every ShareUpdate of a share-partition has the same key, so a stream of deltas survives
 * compaction only if each one carries everything since the last snapshot; a snapshot is small anyway (the
 * state is at most {@code group.share.partition.max.record.locks} offsets, written as ranges). A write
 * returns once it is committed (a single node's local append); state is replayed from the topic at start-up.
 * Created on first use (cleanup.policy=compact), refused to clients like every internal topic.
 */
public final class ShareStateTopic implements ShareStatePersister {
    private static final Logger LOG = LoggerFactory.getLogger(ShareStateTopic.class);
    public static final String NAME = Topic.SHARE_GROUP_STATE_TOPIC_NAME;
    private static final long COMMIT_TIMEOUT_MS = 5_000;

    private final BrokerContext broker;
    private final int partitions;
    private final int segmentBytes;
    private final InternalTopicCreation creation;
    private final Time time;
    private final Map<SharePartitionKey, Integer> snapshotEpochs = new ConcurrentHashMap<>();

    public ShareStateTopic(BrokerContext broker, int numPartitions, int segmentBytes, Time time) {
        this.broker = broker;
        this.partitions = broker.topics().get(NAME).map(TopicRegistry.TopicInfo::partitions).orElse(numPartitions);
        this.segmentBytes = segmentBytes;
        this.creation = new InternalTopicCreation(broker, NAME);
        this.time = time;
    }

    /** The state-topic partition of a share-partition (Kafka's choice: the hash of its coordinator key). */
    public int partitionFor(SharePartitionKey key) {
        return Utils.abs(key.coordinatorKey().hashCode()) % partitions;
    }

    @Override
    public void write(SharePartitionKey key, SharePartition.Snapshot snapshot) {
        int epoch = snapshotEpochs.merge(key, 1, Integer::sum);
        append(key, new SimpleRecord(time.milliseconds(), ShareStateRecords.snapshotKey(key),
                ShareStateRecords.snapshotValue(snapshot, epoch, time.milliseconds())));
    }

    @Override
    public void delete(SharePartitionKey key) {
        snapshotEpochs.remove(key);
        if (broker.topics().get(NAME).isEmpty()) {
            return; // nothing was ever written
        }
        append(key, new SimpleRecord(time.milliseconds(), ShareStateRecords.snapshotKey(key), null));
    }

    private void append(SharePartitionKey key, SimpleRecord record) {
        boolean exists = creation.ensureExists(partitions,
                (short) broker.config().intValue(BrokerConfig.OFFSETS_TOPIC_REPLICATION_FACTOR),
                Map.of("cleanup.policy", "compact", "segment.bytes", Integer.toString(segmentBytes),
                        "compression.type", "producer"));
        if (!exists) {
            throw new CoordinatorNotAvailableException(NAME + " is being created");
        }
        TopicPartition tp = new TopicPartition(NAME, partitionFor(key));
        ReplicaManager.LeaderAppend appended = broker.replicaManager().appendAsLeader(tp,
                MemoryRecords.withRecords(Compression.NONE, record), true, AppendOrigin.CLIENT);
        CompletableFuture<Errors> acked = broker.replicaManager().awaitAck(tp, appended, COMMIT_TIMEOUT_MS);
        // a single node's append is committed at once (the share data path is offered only there)
        Errors error = acked.getNow(Errors.REQUEST_TIMED_OUT);
        if (error != Errors.NONE) {
            throw error.exception("the share-state write to " + tp + " was not committed: " + error);
        }
    }

    @Override
    public Map<SharePartitionKey, SharePartition.Snapshot> load() {
        Map<SharePartitionKey, SharePartition.Snapshot> state = new HashMap<>();
        Optional<TopicRegistry.TopicInfo> topic = broker.topics().get(NAME);
        if (topic.isEmpty()) {
            return state;
        }
        long records = 0;
        for (int p = 0; p < topic.get().partitions(); p++) {
            PartitionLog log = broker.replicaManager().log(new TopicPartition(NAME, p));
            long[] count = {0};
            InternalTopicReplay.replay(log, log.highWatermark(), (batch, from) -> {
                if (batch.isControlBatch()) {
                    return;
                }
                for (Record r : batch) {
                    if (r.offset() < from) {
                        continue;
                    }
                    count[0]++;
                    try {
                        ShareStateRecords.Decoded d = ShareStateRecords.decode(r.key(), r.hasValue() ? r.value() : null);
                        if (d == null) {
                            continue;
                        }
                        if (d.value() == null) {
                            if (d.snapshot()) {
                                state.remove(d.key());
                                snapshotEpochs.remove(d.key());
                            }
                        } else if (d.snapshot()) {
                            state.put(d.key(), d.value());
                            snapshotEpochs.put(d.key(), d.snapshotEpoch());
                        } else {
                            SharePartition.Snapshot base = state.get(d.key());
                            state.put(d.key(), base == null ? d.value() : ShareStateRecords.merge(base, d.value()));
                        }
                    } catch (RuntimeException e) {
                        LOG.warn("skipping a {} record at offset {} that does not decode: {}", NAME, r.offset(), e.toString());
                    }
                }
            });
            records += count[0];
        }
        LOG.info("replayed {} record(s) of {}: {} share-partition(s)", records, NAME, state.size());
        return state;
    }
}
