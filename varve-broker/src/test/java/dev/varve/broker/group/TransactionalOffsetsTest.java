package dev.varve.broker.group;

import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.clients.consumer.internals.ConsumerProtocol;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.KafkaStorageException;
import org.apache.kafka.common.message.JoinGroupRequestData;
import org.apache.kafka.common.message.JoinGroupResponseData;
import org.apache.kafka.common.message.SyncGroupRequestData;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.utils.Utils;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Transactional offset commits against an in-memory offsets topic that keeps batches and markers in
 * log order (two partitions: groups named "p1-..." live in partition 1), so a replay of it can be
 * compared with the state the live path built.
 */
class TransactionalOffsetsTest {
    private static final TopicPartition TP = new TopicPartition("t", 0);
    private static final TopicPartition TP1 = new TopicPartition("t", 1);

    /** One entry of the fake offsets topic: a record (producer -1 outside transactions) or a marker. */
    private record Entry(int partition, long offset, long producerId, ByteBuffer key, ByteBuffer value,
                         Boolean markerCommits) {
    }

    private final ManualGroupTimer timer = new ManualGroupTimer();
    private final List<Entry> log = new ArrayList<>();
    private RuntimeException storeFailure;
    /** When not null, writes wait here to be committed until the test completes them. */
    private List<CompletableFuture<Void>> uncommitted;

    private final GroupStore store = new GroupStore() {
        @Override
        public Write append(String groupId, List<SimpleRecord> records) {
            return write(groupId, RecordBatch.NO_PRODUCER_ID, records);
        }

        @Override
        public Write appendTransactional(String groupId, long producerId, short producerEpoch, List<SimpleRecord> records) {
            return write(groupId, producerId, records);
        }

        @Override
        public int partitionFor(String groupId) {
            return partitionOf(groupId);
        }
    };

    private final GroupCoordinator coordinator = newCoordinator();
    private final GroupOffsets offsets = new GroupOffsets(coordinator);
    private final TransactionalOffsets txn = offsets.transactional();

    private static int partitionOf(String groupId) {
        return groupId.startsWith("p1-") ? 1 : 0;
    }

    /** Kafka's defaults, without the initial rebalance delay. */
    private static final GroupConfig CONFIG;

    static {
        GroupConfig c = GroupConfig.defaults();
        CONFIG = new GroupConfig(c.offsetsTopicNumPartitions(), c.offsetsTopicSegmentBytes(), 0, c.minSessionTimeoutMs(),
                c.maxSessionTimeoutMs(), c.maxSize(), c.offsetsRetentionMs(), c.offsetsRetentionCheckIntervalMs(),
                c.offsetMetadataMaxBytes());
    }

    private GroupCoordinator newCoordinator() {
        return new GroupCoordinator(CONFIG, timer, timer, store, Runnable::run);
    }

    private GroupStore.Write write(String groupId, long producerId, List<SimpleRecord> records) {
        if (storeFailure != null) {
            throw storeFailure;
        }
        for (SimpleRecord r : records) {
            log.add(new Entry(partitionOf(groupId), log.size(), producerId, r.key(), r.value(), null));
        }
        long last = log.size() - 1;
        if (uncommitted == null) {
            return GroupStore.Write.committedAt(last);
        }
        CompletableFuture<Void> committed = new CompletableFuture<>();
        uncommitted.add(committed);
        return new GroupStore.Write(last, committed);
    }

    /** Writes the producer's marker to a partition, then ends its transaction there (the WriteTxnMarkers path). */
    private void marker(int partition, long producerId, boolean commit) {
        long offset = log.size();
        log.add(new Entry(partition, offset, producerId, null, null, commit));
        txn.completeTransaction(partition, producerId, commit, offset);
    }

    /** A new coordinator that replays the fake log, partition by partition. */
    private GroupOffsets replayed() {
        GroupOffsets restored = new GroupOffsets(newCoordinator());
        for (int p = 0; p < 2; p++) {
            for (Entry e : log) {
                if (e.partition() != p) {
                    continue;
                }
                if (e.markerCommits() != null) {
                    restored.replayEndTransaction(p, e.producerId(), e.markerCommits(), e.offset());
                } else {
                    restored.replay(e.offset(), e.producerId(), e.key(), e.value());
                }
            }
        }
        restored.completeLoad();
        return restored;
    }

    private Map<TopicPartition, Errors> txnCommit(String groupId, long producerId, Map<TopicPartition, Long> committed) {
        return txnCommit(groupId, producerId, -1, "", null, committed);
    }

    private Map<TopicPartition, Errors> txnCommit(String groupId, long producerId, int generation, String memberId,
                                                  String instanceId, Map<TopicPartition, Long> committed) {
        Map<TopicPartition, GroupRecords.OffsetValue> values = new LinkedHashMap<>();
        committed.forEach((tp, o) -> values.put(tp, offset(o)));
        return txn.commitTransactional(groupId, producerId, (short) 0, generation, memberId, instanceId, values).join();
    }

    private static GroupRecords.OffsetValue offset(long o) {
        return new GroupRecords.OffsetValue(o, -1, "meta", 0);
    }

    private Long committed(GroupOffsets o, String groupId, TopicPartition tp) {
        GroupRecords.OffsetValue v = o.fetch(groupId, List.of(tp)).get(tp);
        return v == null ? null : v.offset();
    }

    private Set<TopicPartition> unstable(GroupOffsets o, String groupId, TopicPartition... tps) {
        return o.fetch(groupId, List.of(tps), true).unstable();
    }

    // ---------------------------------------------------------------- commit and abort

    @Test
    void pendingOffsetsAreInvisibleUntilTheCommitMarkerThenCommitted() {
        assertThat(txnCommit("eos", 7, Map.of(TP, 5L))).containsEntry(TP, Errors.NONE);
        assertThat(log).hasSize(1);
        assertThat(log.get(0).producerId()).isEqualTo(7);
        assertThat(committed(offsets, "eos", TP)).isNull();
        assertThat(offsets.fetch("eos", null)).isEmpty();
        assertThat(unstable(offsets, "eos", TP, TP1)).containsExactly(TP);
        assertThat(offsets.fetch("eos", List.of(TP), false).unstable()).isEmpty(); // only asked for with require_stable
        assertThat(txn.pending("eos")).containsEntry(7L, Set.of(TP));

        marker(0, 7, true);
        assertThat(committed(offsets, "eos", TP)).isEqualTo(5);
        assertThat(unstable(offsets, "eos", TP)).isEmpty();
        assertThat(txn.pending("eos")).isEmpty();
    }

    @Test
    void anAbortDropsThePendingOffsetsAndKeepsTheCommittedOne() {
        assertThat(offsets.commit("eos", -1, "", null, Map.of(TP, offset(3))).join()).isEqualTo(Errors.NONE);
        txnCommit("eos", 7, Map.of(TP, 5L, TP1, 6L));
        marker(0, 7, false);
        assertThat(committed(offsets, "eos", TP)).isEqualTo(3);
        assertThat(committed(offsets, "eos", TP1)).isNull();
        assertThat(unstable(offsets, "eos", TP, TP1)).isEmpty();
        // a later marker of the same producer finds nothing left to apply
        marker(0, 7, true);
        assertThat(committed(offsets, "eos", TP)).isEqualTo(3);
    }

    @Test
    void aMarkerEndsOnlyItsProducersOffsetsInItsOwnPartition() {
        txnCommit("eos", 7, Map.of(TP, 5L));
        txnCommit("eos", 8, Map.of(TP1, 9L));
        txnCommit("p1-eos", 7, Map.of(TP, 50L));
        marker(0, 7, true);
        assertThat(committed(offsets, "eos", TP)).isEqualTo(5);
        assertThat(committed(offsets, "eos", TP1)).isNull(); // producer 8 still open
        assertThat(committed(offsets, "p1-eos", TP)).isNull(); // partition 1 has no marker yet
        marker(1, 7, true);
        assertThat(committed(offsets, "p1-eos", TP)).isEqualTo(50);
    }

    @Test
    void logOrderDecidesBetweenATransactionalAndAPlainCommit() {
        // pending written first, plain commit later: the plain one is newer and stays
        txnCommit("a", 7, Map.of(TP, 5L));
        offsets.commit("a", -1, "", null, Map.of(TP, offset(9))).join();
        assertThat(committed(offsets, "a", TP)).isEqualTo(9);
        marker(0, 7, true);
        assertThat(committed(offsets, "a", TP)).isEqualTo(9);

        // plain commit first, pending later: the transaction's offset replaces it on commit
        offsets.commit("b", -1, "", null, Map.of(TP, offset(9))).join();
        txnCommit("b", 8, Map.of(TP, 5L));
        assertThat(committed(offsets, "b", TP)).isEqualTo(9);
        marker(0, 8, true);
        assertThat(committed(offsets, "b", TP)).isEqualTo(5);
    }

    @Test
    void aPendingOffsetWrittenAfterTheMarkerBelongsToTheNextTransaction() {
        txnCommit("eos", 7, Map.of(TP, 5L));
        long markerOffset = log.size();
        log.add(new Entry(0, markerOffset, 7, null, null, true));
        txnCommit("eos", 7, Map.of(TP1, 6L)); // the next transaction, before the first's marker was applied
        txn.completeTransaction(0, 7, true, markerOffset);
        assertThat(committed(offsets, "eos", TP)).isEqualTo(5);
        assertThat(committed(offsets, "eos", TP1)).isNull();
        assertThat(txn.pending("eos")).containsEntry(7L, Set.of(TP1));
        assertState(replayed());
    }

    // ---------------------------------------------------------------- replay

    @Test
    void replayingCommittedAbortedAndOpenTransactionsGivesTheLiveState() {
        offsets.commit("g1", -1, "", null, Map.of(TP, offset(1))).join();
        txnCommit("g1", 1, Map.of(TP, 10L, TP1, 11L));
        txnCommit("g2", 2, Map.of(TP, 20L));
        offsets.commit("g2", -1, "", null, Map.of(TP1, offset(2))).join();
        txnCommit("p1-g3", 3, Map.of(TP, 30L));
        txnCommit("g4", 4, Map.of(TP, 40L)); // stays open
        txnCommit("g5", 5, Map.of(TP, 50L)); // plain commit after it wins
        offsets.commit("g5", -1, "", null, Map.of(TP, offset(55))).join();
        marker(0, 1, true);
        marker(0, 2, false);
        marker(1, 3, true);
        marker(0, 5, true);
        // tombstones of OffsetDelete also end what a transaction had pending for the partition
        txnCommit("g6", 6, Map.of(TP, 60L, TP1, 61L));
        assertThat(offsets.deleteOffsets("g6", List.of(TP)).join().groupError()).isEqualTo(Errors.NONE);
        marker(0, 6, true);

        assertThat(committed(offsets, "g1", TP)).isEqualTo(10);
        assertThat(committed(offsets, "g1", TP1)).isEqualTo(11);
        assertThat(committed(offsets, "g2", TP)).isNull();
        assertThat(committed(offsets, "g2", TP1)).isEqualTo(2);
        assertThat(committed(offsets, "p1-g3", TP)).isEqualTo(30);
        assertThat(committed(offsets, "g4", TP)).isNull();
        assertThat(unstable(offsets, "g4", TP)).containsExactly(TP);
        assertThat(committed(offsets, "g5", TP)).isEqualTo(55);
        assertThat(committed(offsets, "g6", TP)).isNull();
        assertThat(committed(offsets, "g6", TP1)).isEqualTo(61);

        GroupOffsets restored = replayed();
        assertState(restored);

        // the open transaction ends the same way on both
        marker(0, 4, true);
        restored.replayEndTransaction(0, 4, true, log.size() - 1);
        assertThat(committed(offsets, "g4", TP)).isEqualTo(40);
        assertState(restored);
    }

    /** Every group's committed offsets, pending offsets and unstable partitions match the live coordinator's. */
    private void assertState(GroupOffsets restored) {
        for (String g : List.of("eos", "g1", "g2", "p1-g3", "g4", "g5", "g6")) {
            assertThat(sorted(restored.fetch(g, null, true).committed()))
                    .as(g).isEqualTo(sorted(offsets.fetch(g, null, true).committed()));
            assertThat(restored.transactional().pending(g)).as(g).isEqualTo(txn.pending(g));
            assertThat(unstable(restored, g, TP, TP1)).as(g).isEqualTo(unstable(offsets, g, TP, TP1));
        }
    }

    private static Map<String, GroupRecords.OffsetValue> sorted(Map<TopicPartition, GroupRecords.OffsetValue> offsets) {
        Map<String, GroupRecords.OffsetValue> out = new TreeMap<>();
        offsets.forEach((tp, v) -> out.put(tp.toString(), v));
        return out;
    }

    // ---------------------------------------------------------------- writes

    @Test
    void pendingOffsetsCountFromTheLocalAppendSoAMarkerBeforeReplicationStillEndsThem() {
        uncommitted = new ArrayList<>();
        CompletableFuture<Map<TopicPartition, Errors>> answer = txn.commitTransactional("eos", 7, (short) 0, -1, "", null,
                Map.of(TP, offset(5)));
        assertThat(answer).isNotDone(); // answered once committed
        assertThat(unstable(offsets, "eos", TP)).containsExactly(TP);
        marker(0, 7, false); // the producer gave up and aborted while the batch replicated
        uncommitted.forEach(f -> f.complete(null));
        assertThat(answer.join()).containsEntry(TP, Errors.NONE);
        assertThat(unstable(offsets, "eos", TP)).isEmpty();
        assertThat(committed(offsets, "eos", TP)).isNull();
    }

    @Test
    void aWriteThatFailsLeavesNothingPending() {
        uncommitted = new ArrayList<>();
        CompletableFuture<Map<TopicPartition, Errors>> answer = txn.commitTransactional("eos", 7, (short) 0, -1, "", null,
                Map.of(TP, offset(5)));
        uncommitted.forEach(f -> f.completeExceptionally(new org.apache.kafka.common.errors.NotEnoughReplicasException("isr")));
        assertThat(answer.join()).containsEntry(TP, Errors.COORDINATOR_NOT_AVAILABLE);
        assertThat(unstable(offsets, "eos", TP)).isEmpty();
        assertThat(txn.pending("eos")).isEmpty();

        uncommitted = null;
        storeFailure = new InvalidProducerEpochException("epoch 0 is older than 3");
        assertThat(txnCommit("eos", 7, Map.of(TP, 5L))).containsEntry(TP, Errors.INVALID_PRODUCER_EPOCH);
        storeFailure = new KafkaStorageException("disk gone");
        assertThat(txnCommit("eos", 7, Map.of(TP, 5L))).containsEntry(TP, Errors.COORDINATOR_NOT_AVAILABLE);
        assertThat(txn.pending("eos")).isEmpty();
    }

    // ---------------------------------------------------------------- validation

    @Test
    void badInputGetsKafkasErrorCodes() {
        assertThat(txnCommit("", 7, Map.of(TP, 1L))).containsEntry(TP, Errors.INVALID_GROUP_ID);
        assertThat(txnCommit("nope", 7, 3, "m", null, Map.of(TP, 1L))).containsEntry(TP, Errors.ILLEGAL_GENERATION);
        assertThat(txnCommit("eos", -1, Map.of(TP, 1L))).containsEntry(TP, Errors.INVALID_PRODUCER_ID_MAPPING);
        assertThat(txn.commitTransactional("eos", 7, (short) -1, -1, "", null, Map.of(TP, offset(1))).join())
                .containsEntry(TP, Errors.INVALID_PRODUCER_EPOCH);
        String tooLong = "x".repeat(CONFIG.offsetMetadataMaxBytes() + 1);
        assertThat(txn.commitTransactional("eos", 7, (short) 0, -1, "", null,
                Map.of(TP, new GroupRecords.OffsetValue(1, -1, tooLong, 0), TP1, offset(2))).join())
                .containsEntry(TP, Errors.OFFSET_METADATA_TOO_LARGE).containsEntry(TP1, Errors.NONE);
        assertThat(txn.pending("eos")).containsEntry(7L, Set.of(TP1));
        assertThat(log).hasSize(1); // nothing written for the refused requests
    }

    @Test
    void aMemberOfAGroupIsCheckedLikeAnOffsetCommitButNotForRebalances() {
        JoinGroupResponseData a = joinAndSync("m", "static-a");
        int gen = a.generationId();
        assertThat(txnCommit("m", 7, gen, a.memberId(), "static-a", Map.of(TP, 1L))).containsEntry(TP, Errors.NONE);
        assertThat(txnCommit("m", 7, gen + 1, a.memberId(), "static-a", Map.of(TP, 1L)))
                .containsEntry(TP, Errors.ILLEGAL_GENERATION);
        assertThat(txnCommit("m", 7, gen, "someone", null, Map.of(TP, 1L))).containsEntry(TP, Errors.UNKNOWN_MEMBER_ID);
        assertThat(txnCommit("m", 7, gen, "someone", "static-a", Map.of(TP, 1L))).containsEntry(TP, Errors.FENCED_INSTANCE_ID);
        assertThat(txnCommit("m", 7, gen, a.memberId(), "other", Map.of(TP, 1L))).containsEntry(TP, Errors.UNKNOWN_MEMBER_ID);
        // versions before 3 name no member: accepted even though the group has members
        assertThat(txnCommit("m", 7, Map.of(TP, 1L))).containsEntry(TP, Errors.NONE);
        // a rebalance in progress does not refuse a transactional commit (OffsetCommit's REBALANCE_IN_PROGRESS)
        coordinator.joinGroup(joinRequest("m", "", "static-b"), (short) 9, "c", "h");
        assertThat(offsets.describe("m").groupState()).isEqualTo("PreparingRebalance");
        assertThat(txnCommit("m", 7, gen, a.memberId(), "static-a", Map.of(TP, 1L))).containsEntry(TP, Errors.NONE);
    }

    // ---------------------------------------------------------------- deletion, unload, retention

    @Test
    void deletingOrUnloadingAGroupDropsItsPendingOffsets() {
        txnCommit("gone", 7, Map.of(TP, 5L));
        assertThat(offsets.deleteGroups(List.of("gone")).join()).containsEntry("gone", Errors.NONE);
        assertThat(txn.pending("gone")).isEmpty();
        marker(0, 7, true);
        assertThat(committed(offsets, "gone", TP)).isNull();
        assertThat(committed(replayed(), "gone", TP)).isNull(); // its tombstone came before the marker

        txnCommit("p1-moved", 8, Map.of(TP, 5L));
        txnCommit("kept", 8, Map.of(TP, 6L));
        assertThat(offsets.unload(g -> partitionOf(g) == 1)).isEqualTo(1);
        marker(1, 8, true);
        marker(0, 8, true);
        assertThat(committed(offsets, "p1-moved", TP)).isNull();
        assertThat(committed(offsets, "kept", TP)).isEqualTo(6);
    }

    @Test
    void retentionKeepsAGroupWithAnOpenTransaction() {
        txnCommit("eos", 7, Map.of(TP, 5L));
        timer.advance(CONFIG.offsetsRetentionMs() + 1);
        offsets.expireOffsets();
        assertThat(offsets.list(List.of(), List.of())).extracting(l -> l.groupId()).contains("eos");
        marker(0, 7, true);
        assertThat(committed(offsets, "eos", TP)).isEqualTo(5);
    }

    // ---------------------------------------------------------------- membership helpers

    private static JoinGroupRequestData joinRequest(String groupId, String memberId, String instanceId) {
        JoinGroupRequestData.JoinGroupRequestProtocolCollection protocols = new JoinGroupRequestData.JoinGroupRequestProtocolCollection();
        protocols.add(new JoinGroupRequestData.JoinGroupRequestProtocol().setName("range").setMetadata(Utils.toArray(
                ConsumerProtocol.serializeSubscription(new ConsumerPartitionAssignor.Subscription(List.of("t"))))));
        return new JoinGroupRequestData().setGroupId(groupId).setMemberId(memberId).setGroupInstanceId(instanceId)
                .setSessionTimeoutMs(10_000).setRebalanceTimeoutMs(30_000).setProtocolType("consumer")
                .setProtocols(protocols);
    }

    /** A static member joins an empty group and gets its assignment: the group is Stable. */
    private JoinGroupResponseData joinAndSync(String groupId, String instanceId) {
        JoinGroupResponseData joined = coordinator.joinGroup(joinRequest(groupId, "", instanceId), (short) 9, "c", "h").join();
        assertThat(Errors.forCode(joined.errorCode())).isEqualTo(Errors.NONE);
        coordinator.syncGroup(new SyncGroupRequestData().setGroupId(groupId).setMemberId(joined.memberId())
                .setGroupInstanceId(instanceId).setGenerationId(joined.generationId()).setProtocolType("consumer")
                .setProtocolName("range")).join();
        assertThat(offsets.describe(groupId).groupState()).isEqualTo("Stable");
        return joined;
    }
}
