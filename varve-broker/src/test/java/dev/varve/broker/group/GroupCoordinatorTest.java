package dev.varve.broker.group;

import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.clients.consumer.internals.ConsumerProtocol;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.KafkaStorageException;
import org.apache.kafka.common.message.JoinGroupRequestData;
import org.apache.kafka.common.message.JoinGroupResponseData;
import org.apache.kafka.common.message.LeaveGroupRequestData;
import org.apache.kafka.common.message.SyncGroupRequestData;
import org.apache.kafka.common.message.SyncGroupResponseData;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.utils.Utils;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

import static org.assertj.core.api.Assertions.assertThat;

/** The classic rebalance protocol, driven by hand with a fake clock and an in-memory store. */
class GroupCoordinatorTest {
    private static final short V = 9;
    private static final int SESSION_MS = 10_000;
    private static final int REBALANCE_MS = 30_000;

    private final ManualGroupTimer timer = new ManualGroupTimer();
    private final List<SimpleRecord> stored = new ArrayList<>();
    private boolean storeFails;
    /**
     * When not null, writes are appended but wait here to be committed (in-sync followers that have
     * not fetched them yet) until the test completes them; when null they are committed at once.
     */
    private List<CompletableFuture<Void>> uncommitted;
    private final GroupStore store = new GroupStore() {
        @Override
        public Write append(String groupId, List<SimpleRecord> records) {
            if (storeFails) {
                throw new KafkaStorageException("disk gone");
            }
            stored.addAll(records);
            long last = stored.size() - 1;
            if (uncommitted == null) {
                return GroupStore.Write.committedAt(last);
            }
            CompletableFuture<Void> committed = new CompletableFuture<>();
            uncommitted.add(committed);
            return new GroupStore.Write(last, committed);
        }

        @Override
        public Write appendTransactional(String groupId, long producerId, short producerEpoch, List<SimpleRecord> records) {
            throw new UnsupportedOperationException("see TransactionalOffsetsTest");
        }

        @Override
        public int partitionFor(String groupId) {
            return 0;
        }
    };
    private GroupCoordinator coordinator = coordinator(0);
    private GroupOffsets offsets = new GroupOffsets(coordinator);

    private GroupCoordinator coordinator(long initialDelayMs) {
        GroupConfig c = GroupConfig.defaults();
        return new GroupCoordinator(new GroupConfig(c.offsetsTopicNumPartitions(), c.offsetsTopicSegmentBytes(),
                initialDelayMs, c.minSessionTimeoutMs(), c.maxSessionTimeoutMs(), c.maxSize(), 60_000, 1000,
                c.offsetMetadataMaxBytes()), timer, timer, store, Runnable::run);
    }

    private static byte[] subscription(String... topics) {
        return Utils.toArray(ConsumerProtocol.serializeSubscription(new ConsumerPartitionAssignor.Subscription(List.of(topics))));
    }

    private JoinGroupRequestData joinRequest(String memberId, String instanceId, byte[] meta) {
        JoinGroupRequestData.JoinGroupRequestProtocolCollection protocols = new JoinGroupRequestData.JoinGroupRequestProtocolCollection();
        protocols.add(new JoinGroupRequestData.JoinGroupRequestProtocol().setName("range").setMetadata(meta));
        return new JoinGroupRequestData().setGroupId("g").setMemberId(memberId).setGroupInstanceId(instanceId)
                .setSessionTimeoutMs(SESSION_MS).setRebalanceTimeoutMs(REBALANCE_MS).setProtocolType("consumer")
                .setProtocols(protocols);
    }

    private CompletableFuture<JoinGroupResponseData> join(String memberId, String instanceId) {
        return coordinator.joinGroup(joinRequest(memberId, instanceId, subscription("t")), V, "client", "/127.0.0.1");
    }

    /** Two-step join of a dynamic member: returns the (still pending) second join. */
    private CompletableFuture<JoinGroupResponseData> joinNew() {
        JoinGroupResponseData first = join("", null).join();
        assertThat(Errors.forCode(first.errorCode())).isEqualTo(Errors.MEMBER_ID_REQUIRED);
        return join(first.memberId(), null);
    }

    private SyncGroupResponseData sync(JoinGroupResponseData joined, Map<String, byte[]> assignment) {
        return syncAsync(joined, assignment).join();
    }

    private CompletableFuture<SyncGroupResponseData> syncAsync(JoinGroupResponseData joined, Map<String, byte[]> assignment) {
        SyncGroupRequestData req = new SyncGroupRequestData().setGroupId("g").setMemberId(joined.memberId())
                .setGenerationId(joined.generationId()).setProtocolType("consumer").setProtocolName("range");
        assignment.forEach((m, a) -> req.assignments().add(
                new SyncGroupRequestData.SyncGroupRequestAssignment().setMemberId(m).setAssignment(a)));
        return coordinator.syncGroup(req);
    }

    private Errors heartbeat(JoinGroupResponseData joined) {
        return coordinator.heartbeat("g", joined.memberId(), null, joined.generationId());
    }

    @Test
    void twoStepJoinThenTheLoneMemberLeadsAndBecomesStable() {
        JoinGroupResponseData joined = joinNew().join();
        assertThat(Errors.forCode(joined.errorCode())).isEqualTo(Errors.NONE);
        assertThat(joined.generationId()).isEqualTo(1);
        assertThat(joined.leader()).isEqualTo(joined.memberId());
        assertThat(joined.members()).extracting(JoinGroupResponseData.JoinGroupResponseMember::memberId)
                .containsExactly(joined.memberId());
        SyncGroupResponseData synced = sync(joined, Map.of(joined.memberId(), new byte[]{1, 2}));
        assertThat(synced.assignment()).containsExactly(1, 2);
        assertThat(heartbeat(joined)).isEqualTo(Errors.NONE);
        assertThat(offsets.describe("g").groupState()).isEqualTo("Stable");
        assertThat(stored).hasSize(1); // the generation with its assignment
    }

    @Test
    void aSecondMemberTriggersARebalanceThatBothComplete() {
        JoinGroupResponseData a = joinNew().join();
        sync(a, Map.of(a.memberId(), new byte[]{1}));
        CompletableFuture<JoinGroupResponseData> bJoin = joinNew();
        assertThat(bJoin).isNotDone();
        assertThat(heartbeat(a)).isEqualTo(Errors.REBALANCE_IN_PROGRESS);
        JoinGroupResponseData a2 = join(a.memberId(), null).join();
        JoinGroupResponseData b = bJoin.join();
        assertThat(a2.generationId()).isEqualTo(2).isEqualTo(b.generationId());
        assertThat(a2.leader()).isEqualTo(a.memberId());
        assertThat(a2.members()).hasSize(2);
        assertThat(b.members()).isEmpty(); // only the leader sees the members
        CompletableFuture<SyncGroupResponseData> bSync = syncAsync(b, Map.of());
        assertThat(bSync).isNotDone(); // followers wait for the leader's assignment
        sync(a2, Map.of(a.memberId(), new byte[]{1}, b.memberId(), new byte[]{2}));
        assertThat(bSync.join().assignment()).containsExactly(2);
        // the old generation is fenced
        assertThat(heartbeat(a)).isEqualTo(Errors.ILLEGAL_GENERATION);
        assertThat(commit("g", 1, a.memberId(), null, Map.of(new TopicPartition("t", 0), offset(5))))
                .isEqualTo(Errors.ILLEGAL_GENERATION);
        assertThat(commit("g", 2, a.memberId(), null, Map.of(new TopicPartition("t", 0), offset(5))))
                .isEqualTo(Errors.NONE);
    }

    @Test
    void aSilentMemberIsRemovedAfterItsSessionTimeout() {
        JoinGroupResponseData a = joinNew().join();
        sync(a, Map.of());
        CompletableFuture<JoinGroupResponseData> bJoin = joinNew();
        JoinGroupResponseData a2 = join(a.memberId(), null).join();
        JoinGroupResponseData b = bJoin.join();
        sync(a2, Map.of());
        sync(b, Map.of());
        for (int i = 0; i < 5; i++) { // a heartbeats, b stays silent
            timer.advance(SESSION_MS / 3);
            assertThat(heartbeat(a2)).isIn(Errors.NONE, Errors.REBALANCE_IN_PROGRESS);
        }
        assertThat(heartbeat(b)).isEqualTo(Errors.UNKNOWN_MEMBER_ID);
        JoinGroupResponseData a3 = join(a.memberId(), null).join();
        assertThat(a3.generationId()).isEqualTo(3);
        assertThat(a3.members()).hasSize(1);
    }

    @Test
    void membersThatDoNotRejoinWithinTheRebalanceTimeoutAreDropped() {
        JoinGroupResponseData a = joinNew().join();
        sync(a, Map.of());
        CompletableFuture<JoinGroupResponseData> bJoin = joinNew();
        // a never rejoins (but keeps heartbeating, which only tells it to rejoin)
        for (long t = 0; t < REBALANCE_MS; t += 3000) {
            timer.advance(3000);
            heartbeat(a);
        }
        JoinGroupResponseData b = bJoin.join();
        assertThat(b.generationId()).isEqualTo(2);
        assertThat(b.leader()).isEqualTo(b.memberId());
        assertThat(b.members()).hasSize(1);
        assertThat(heartbeat(a)).isEqualTo(Errors.UNKNOWN_MEMBER_ID);
    }

    @Test
    void commitsDuringCompletingRebalanceAreRefusedUntilTheAssignmentArrives() {
        JoinGroupResponseData a = joinNew().join();
        TopicPartition tp = new TopicPartition("t", 0);
        assertThat(commit("g", a.generationId(), a.memberId(), null, Map.of(tp, offset(1))))
                .isEqualTo(Errors.REBALANCE_IN_PROGRESS);
        sync(a, Map.of());
        assertThat(commit("g", a.generationId(), a.memberId(), null, Map.of(tp, offset(1))))
                .isEqualTo(Errors.NONE);
        // a simple (memberless) commit to an active group is refused
        assertThat(commit("g", -1, "", null, Map.of(tp, offset(9)))).isEqualTo(Errors.UNKNOWN_MEMBER_ID);
        assertThat(offsets.fetch("g", List.of(tp)).get(tp).offset()).isEqualTo(1);
    }

    @Test
    void aStaticMemberRejoiningWithTheSameSubscriptionKeepsTheGenerationAndFencesItsOldId() {
        JoinGroupResponseData a = join("", "instance-a").join(); // static members join in one step
        sync(a, Map.of(a.memberId(), new byte[]{7}));
        CompletableFuture<JoinGroupResponseData> bJoin = joinNew();
        JoinGroupResponseData a2 = coordinator.joinGroup(joinRequest(a.memberId(), "instance-a", subscription("t")),
                V, "client", "/127.0.0.1").join();
        JoinGroupResponseData b = bJoin.join();
        sync(a2, Map.of(a.memberId(), new byte[]{7}, b.memberId(), new byte[]{8}));
        sync(b, Map.of());
        // restart the static leader a, without its member id
        // a restarted consumer's metadata differs (owned partitions, generation): still no rebalance
        JoinGroupResponseData restarted = coordinator.joinGroup(joinRequest("", "instance-a", new byte[]{0, 1, 2}),
                V, "client", "/127.0.0.1").join();
        assertThat(Errors.forCode(restarted.errorCode())).isEqualTo(Errors.NONE);
        assertThat(restarted.memberId()).isNotEqualTo(a.memberId());
        assertThat(restarted.generationId()).isEqualTo(2); // no rebalance
        assertThat(restarted.skipAssignment()).isTrue(); // it is the leader: v9 tells it not to reassign
        assertThat(offsets.describe("g").groupState()).isEqualTo("Stable");
        assertThat(coordinator.heartbeat("g", a.memberId(), "instance-a", 2)).isEqualTo(Errors.FENCED_INSTANCE_ID);
        assertThat(coordinator.heartbeat("g", restarted.memberId(), "instance-a", 2)).isEqualTo(Errors.NONE);
        assertThat(sync(restarted, Map.of()).assignment()).containsExactly(7);
    }

    /**
     * librdkafka's 0102_static_group_rebalance: two static members of a client that speaks JoinGroup v5
     * (below v9, no skipAssignment); the leader restarts within its session timeout. Kafka keeps the
     * generation and answers the restarted leader as a follower (the response names the leader before
     * the rejoin), so the other member sees nothing and the restarted one gets its partitions back.
     */
    @Test
    void aStaticLeaderOfAnOldClientRejoiningKeepsTheGenerationAndIsAnsweredAsAFollower() {
        short v5 = 5;
        JoinGroupResponseData a = coordinator.joinGroup(joinRequest("", "instance-a", subscription("t")), v5, "client",
                "/127.0.0.1").join();
        sync(a, Map.of(a.memberId(), new byte[]{7, 8}));
        CompletableFuture<JoinGroupResponseData> bJoin = coordinator.joinGroup(joinRequest("", "instance-b",
                subscription("t")), v5, "client", "/127.0.0.1");
        JoinGroupResponseData a2 = coordinator.joinGroup(joinRequest(a.memberId(), "instance-a", subscription("t")), v5,
                "client", "/127.0.0.1").join();
        JoinGroupResponseData b = bJoin.join();
        assertThat(a2.leader()).isEqualTo(a.memberId());
        sync(a2, Map.of(a.memberId(), new byte[]{7}, b.memberId(), new byte[]{8}));
        assertThat(sync(b, Map.of()).assignment()).containsExactly(8);
        int generation = b.generationId();
        timer.advance(SESSION_MS / 2); // the restart takes a while; b keeps heartbeating
        assertThat(coordinator.heartbeat("g", b.memberId(), "instance-b", generation)).isEqualTo(Errors.NONE);

        // the leader restarts: a new consumer, the same instance id, no member id, new metadata
        CompletableFuture<JoinGroupResponseData> restartedJoin = coordinator.joinGroup(
                joinRequest("", "instance-a", new byte[]{0, 1, 2}), v5, "client", "/127.0.0.1");
        assertThat(restartedJoin).as("answered at once: no rebalance waits for the other member").isDone();
        JoinGroupResponseData restarted = restartedJoin.join();
        assertThat(Errors.forCode(restarted.errorCode())).isEqualTo(Errors.NONE);
        assertThat(restarted.memberId()).isNotEqualTo(a.memberId());
        assertThat(restarted.generationId()).isEqualTo(generation);
        assertThat(restarted.leader()).isEqualTo(a.memberId()); // not its new id: it acts as a follower
        assertThat(restarted.members()).isEmpty();
        assertThat(restarted.skipAssignment()).isFalse();
        assertThat(offsets.describe("g").groupState()).isEqualTo("Stable");
        // the other member sees nothing: no REBALANCE_IN_PROGRESS at its next heartbeat
        assertThat(coordinator.heartbeat("g", b.memberId(), "instance-b", generation)).isEqualTo(Errors.NONE);
        // the restarted member's (follower's, empty) SyncGroup hands it its partitions back
        assertThat(sync(restarted, Map.of()).assignment()).containsExactly(7);
        assertThat(coordinator.heartbeat("g", restarted.memberId(), "instance-a", generation)).isEqualTo(Errors.NONE);
        assertThat(coordinator.heartbeat("g", a.memberId(), "instance-a", generation)).isEqualTo(Errors.FENCED_INSTANCE_ID);
        // the stored generation names the new member id (a restart of the broker restores it)
        GroupRecords.GroupValue storedGroup = GroupRecords.readGroupValue(
                java.nio.ByteBuffer.wrap(Utils.toArray(stored.get(stored.size() - 1).value())));
        assertThat(storedGroup.generationId()).isEqualTo(generation);
        assertThat(storedGroup.members()).extracting(GroupRecords.MemberValue::memberId)
                .containsExactlyInAnyOrder(restarted.memberId(), b.memberId());
    }

    @Test
    void aStaticFollowerOfAnOldClientRejoiningKeepsTheGeneration() {
        short v5 = 5;
        JoinGroupResponseData a = coordinator.joinGroup(joinRequest("", "instance-a", subscription("t")), v5, "client",
                "/127.0.0.1").join();
        sync(a, Map.of(a.memberId(), new byte[]{7, 8}));
        CompletableFuture<JoinGroupResponseData> bJoin = coordinator.joinGroup(joinRequest("", "instance-b",
                subscription("t")), v5, "client", "/127.0.0.1");
        JoinGroupResponseData a2 = coordinator.joinGroup(joinRequest(a.memberId(), "instance-a", subscription("t")), v5,
                "client", "/127.0.0.1").join();
        JoinGroupResponseData b = bJoin.join();
        sync(a2, Map.of(a.memberId(), new byte[]{7}, b.memberId(), new byte[]{8}));
        sync(b, Map.of());
        CompletableFuture<JoinGroupResponseData> restartedJoin = coordinator.joinGroup(
                joinRequest("", "instance-b", subscription("t")), v5, "client", "/127.0.0.1");
        assertThat(restartedJoin).as("answered at once: no rebalance").isDone();
        JoinGroupResponseData restarted = restartedJoin.join();
        assertThat(restarted.generationId()).isEqualTo(b.generationId());
        assertThat(restarted.leader()).isEqualTo(a.memberId());
        assertThat(restarted.members()).isEmpty();
        assertThat(coordinator.heartbeat("g", a.memberId(), "instance-a", b.generationId())).isEqualTo(Errors.NONE);
        assertThat(sync(restarted, Map.of()).assignment()).containsExactly(8);
    }

    @Test
    void aLeaderWhoseJoinResponseWasLostGetsTheMembersAgain() {
        JoinGroupResponseData a = joinNew().join();
        sync(a, Map.of());
        CompletableFuture<JoinGroupResponseData> bJoin = joinNew();
        JoinGroupResponseData a2 = join(a.memberId(), null).join();
        bJoin.join();
        assertThat(a2.members()).hasSize(2);
        // CompletingRebalance: the leader's response was lost and it asks again with the same protocols
        JoinGroupResponseData resent = join(a.memberId(), null).join();
        assertThat(resent.generationId()).isEqualTo(a2.generationId());
        assertThat(resent.leader()).isEqualTo(a.memberId());
        assertThat(resent.members()).hasSize(2);
    }

    @Test
    void aStaticMemberAbsentOnlyForTheRebalanceIsKeptAndTheLeaderMovesToOneThatRejoined() {
        coordinator = new GroupCoordinator(new GroupConfig(5, 1 << 20, 0, 6000, 1_800_000, 100, 60_000, 1000, 4096),
                timer, timer, store, Runnable::run);
        offsets = new GroupOffsets(coordinator);
        JoinGroupRequestData staticReq = joinRequest("", "static-s", subscription("t"))
                .setSessionTimeoutMs(120_000).setRebalanceTimeoutMs(REBALANCE_MS);
        JoinGroupResponseData s = coordinator.joinGroup(staticReq, V, "c", "h").join();
        sync(s, Map.of(s.memberId(), new byte[]{1}));
        CompletableFuture<JoinGroupResponseData> dJoin = joinNew(); // triggers a rebalance; s never rejoins
        timer.advance(REBALANCE_MS + 1);
        JoinGroupResponseData d = dJoin.join();
        assertThat(Errors.forCode(d.errorCode())).isEqualTo(Errors.NONE);
        assertThat(d.leader()).isEqualTo(d.memberId()); // the leader is a member that rejoined
        assertThat(d.members()).extracting(JoinGroupResponseData.JoinGroupResponseMember::groupInstanceId)
                .contains("static-s"); // the absent static member stays in the generation
    }

    @Test
    void membersThatNeverSendSyncGroupAreRemovedAfterTheRebalanceTimeout() {
        JoinGroupResponseData a = joinNew().join();
        sync(a, Map.of());
        CompletableFuture<JoinGroupResponseData> bJoin = joinNew();
        JoinGroupResponseData a2 = join(a.memberId(), null).join();
        JoinGroupResponseData b = bJoin.join();
        CompletableFuture<SyncGroupResponseData> bSync = syncAsync(b, Map.of());
        // the leader a keeps heartbeating but its assignor never finishes: no SyncGroup from it
        for (long t = 0; t <= REBALANCE_MS; t += 3000) {
            timer.advance(3000);
            coordinator.heartbeat("g", a2.memberId(), null, a2.generationId());
            coordinator.heartbeat("g", b.memberId(), null, b.generationId());
        }
        assertThat(Errors.forCode(bSync.join().errorCode())).isEqualTo(Errors.REBALANCE_IN_PROGRESS);
        assertThat(coordinator.heartbeat("g", a2.memberId(), null, a2.generationId())).isEqualTo(Errors.UNKNOWN_MEMBER_ID);
        JoinGroupResponseData b2 = join(b.memberId(), null).join();
        assertThat(b2.leader()).isEqualTo(b.memberId());
        assertThat(b2.members()).hasSize(1);
    }

    @Test
    void theInitialDelayWaitsForMoreMembersAndExtendsWhileTheyArrive() {
        coordinator = coordinator(3000);
        offsets = new GroupOffsets(coordinator);
        CompletableFuture<JoinGroupResponseData> a = joinNew();
        timer.advance(2000);
        CompletableFuture<JoinGroupResponseData> b = joinNew();
        timer.advance(1500); // the first delay ends, but b arrived during it: wait again
        assertThat(a).isNotDone();
        timer.advance(3000);
        assertThat(a.join().generationId()).isEqualTo(1);
        assertThat(b.join().generationId()).isEqualTo(1);
        assertThat(a.join().members().size() + b.join().members().size()).isEqualTo(2);
    }

    @Test
    void aMemberWithAnotherProtocolTypeCannotJoin() {
        JoinGroupResponseData a = joinNew().join();
        JoinGroupRequestData other = joinRequest("", null, new byte[0]).setProtocolType("connect");
        assertThat(Errors.forCode(coordinator.joinGroup(other, V, "c", "h").join().errorCode()))
                .isEqualTo(Errors.INCONSISTENT_GROUP_PROTOCOL);
        assertThat(Errors.forCode(coordinator.joinGroup(joinRequest("", null, new byte[0]).setSessionTimeoutMs(10), V,
                "c", "h").join().errorCode())).isEqualTo(Errors.INVALID_SESSION_TIMEOUT);
        assertThat(a.generationId()).isEqualTo(1);
    }

    @Test
    void groupsAreDeletedOnlyWhenEmptyAndTheirOffsetsGoWithThem() {
        JoinGroupResponseData a = joinNew().join();
        sync(a, Map.of());
        TopicPartition tp = new TopicPartition("t", 0);
        commit("g", a.generationId(), a.memberId(), null, Map.of(tp, offset(42)));
        assertThat(deleteGroups(List.of("g", "nope")))
                .containsEntry("g", Errors.NON_EMPTY_GROUP).containsEntry("nope", Errors.GROUP_ID_NOT_FOUND);
        assertThat(coordinator.leaveGroup("g", List.of(new LeaveGroupRequestData.MemberIdentity().setMemberId(a.memberId()))))
                .extracting(m -> Errors.forCode(m.errorCode())).containsExactly(Errors.NONE);
        assertThat(offsets.describe("g").groupState()).isEqualTo("Empty");
        assertThat(deleteGroups(List.of("g"))).containsEntry("g", Errors.NONE);
        assertThat(offsets.fetch("g", null)).isEmpty();
        assertThat(offsets.list(List.of(), List.of())).isEmpty();
        // tombstones for the offset and the group were written last
        assertThat(stored.subList(stored.size() - 2, stored.size())).allMatch(r -> r.value() == null);
    }

    @Test
    void offsetDeleteRefusesTopicsTheActiveGroupSubscribesTo() {
        JoinGroupResponseData a = joinNew().join();
        sync(a, Map.of());
        TopicPartition subscribed = new TopicPartition("t", 0);
        TopicPartition other = new TopicPartition("old", 0);
        commit("g", a.generationId(), a.memberId(), null, Map.of(subscribed, offset(1), other, offset(2)));
        GroupOffsets.DeleteOffsetsResult r = deleteOffsets("g", List.of(subscribed, other));
        assertThat(r.groupError()).isEqualTo(Errors.NONE);
        assertThat(r.partitions()).containsEntry(subscribed, Errors.GROUP_SUBSCRIBED_TO_TOPIC).containsEntry(other, Errors.NONE);
        assertThat(offsets.fetch("g", null)).containsOnlyKeys(subscribed);
        assertThat(deleteOffsets("missing", List.of(other)).groupError()).isEqualTo(Errors.GROUP_ID_NOT_FOUND);
    }

    @Test
    void offsetsOfAnEmptyGroupExpireAfterRetentionAndTheGroupGoes() {
        TopicPartition tp = new TopicPartition("t", 0);
        assertThat(commit("simple", -1, "", null, Map.of(tp, offset(3)))).isEqualTo(Errors.NONE);
        timer.advance(59_000);
        assertThat(offsets.expireOffsets()).isZero();
        timer.advance(1_000);
        assertThat(offsets.expireOffsets()).isEqualTo(1);
        assertThat(offsets.fetch("simple", null)).isEmpty();
        assertThat(offsets.list(List.of(), List.of())).isEmpty();
    }

    @Test
    void aFailedWriteOfTheAssignmentRestartsTheRebalanceAndTellsEveryone() {
        JoinGroupResponseData a = joinNew().join();
        storeFails = true;
        SyncGroupResponseData s = sync(a, Map.of(a.memberId(), new byte[]{1}));
        assertThat(Errors.forCode(s.errorCode())).isEqualTo(Errors.COORDINATOR_NOT_AVAILABLE);
        assertThat(offsets.describe("g").groupState()).isEqualTo("PreparingRebalance");
        storeFails = false;
        JoinGroupResponseData again = join(a.memberId(), null).join();
        assertThat(again.generationId()).isEqualTo(2);
        assertThat(sync(again, Map.of(a.memberId(), new byte[]{1})).assignment()).containsExactly(1);
    }

    @Test
    void replayingTheStoredRecordsRestoresOffsetsAndMembership() {
        JoinGroupResponseData a = joinNew().join();
        sync(a, Map.of(a.memberId(), new byte[]{5}));
        TopicPartition tp = new TopicPartition("t", 1);
        commit("g", a.generationId(), a.memberId(), null, Map.of(tp, offset(10)));
        commit("g", a.generationId(), a.memberId(), null, Map.of(tp, offset(20)));
        commit("s", -1, "", null, Map.of(tp, offset(7)));
        deleteGroups(List.of("s"));

        GroupCoordinator restarted = coordinator(0);
        GroupOffsets restored = new GroupOffsets(restarted);
        for (int i = 0; i < stored.size(); i++) {
            restored.replay(i, org.apache.kafka.common.record.internal.RecordBatch.NO_PRODUCER_ID, stored.get(i).key(),
                    stored.get(i).value());
        }
        restored.completeLoad();
        assertThat(restored.fetch("g", null).get(tp).offset()).isEqualTo(20);
        assertThat(restored.fetch("s", null)).isEmpty();
        assertThat(restored.describe("g").groupState()).isEqualTo("Stable");
        assertThat(restarted.heartbeat("g", a.memberId(), null, a.generationId())).isEqualTo(Errors.NONE);
        // a restored member that never comes back expires
        timer.advance(SESSION_MS + 1);
        assertThat(restored.describe("g").groupState()).isIn("PreparingRebalance", "Empty");
    }

    // ---------------------------------------------------------------- writes that commit later

    @Test
    void aCommitIsAnsweredAndVisibleOnlyOnceStoredAndAnEarlierWriteCommittingLateDoesNotUndoALaterOne() {
        TopicPartition tp = new TopicPartition("t", 0);
        uncommitted = new ArrayList<>();
        CompletableFuture<Errors> first = offsets.commit("s", -1, "", null, Map.of(tp, offset(10)));
        CompletableFuture<Errors> second = offsets.commit("s", -1, "", null, Map.of(tp, offset(20)));
        assertThat(first).isNotDone();
        assertThat(second).isNotDone();
        assertThat(offsets.fetch("s", null)).isEmpty(); // nothing committed yet: nothing visible
        uncommitted.get(1).complete(null);
        assertThat(second.join()).isEqualTo(Errors.NONE);
        assertThat(offsets.fetch("s", null).get(tp).offset()).isEqualTo(20);
        uncommitted.get(0).complete(null);
        assertThat(first.join()).isEqualTo(Errors.NONE);
        assertThat(offsets.fetch("s", null).get(tp).offset()).isEqualTo(20); // the log's last value, as a replay
    }

    @Test
    void aCommitThatIsNotReplicatedIsAnsweredWithARetriableErrorAndChangesNothing() {
        TopicPartition tp = new TopicPartition("t", 0);
        commit("s", -1, "", null, Map.of(tp, offset(5)));
        uncommitted = new ArrayList<>();
        CompletableFuture<Errors> timedOut = offsets.commit("s", -1, "", null, Map.of(tp, offset(6)));
        CompletableFuture<Errors> moved = offsets.commit("s", -1, "", null, Map.of(tp, offset(7)));
        uncommitted.get(0).completeExceptionally(new org.apache.kafka.common.errors.TimeoutException("no ack"));
        uncommitted.get(1).completeExceptionally(new org.apache.kafka.common.errors.NotLeaderOrFollowerException("moved"));
        assertThat(timedOut.join()).isEqualTo(Errors.COORDINATOR_NOT_AVAILABLE);
        assertThat(moved.join()).isEqualTo(Errors.NOT_COORDINATOR);
        assertThat(offsets.fetch("s", null).get(tp).offset()).isEqualTo(5);
    }

    @Test
    void theGroupStaysCompletingRebalanceUntilItsAssignmentIsStored() {
        JoinGroupResponseData a = joinNew().join();
        uncommitted = new ArrayList<>();
        CompletableFuture<SyncGroupResponseData> s = syncAsync(a, Map.of(a.memberId(), new byte[]{7}));
        assertThat(s).isNotDone();
        assertThat(offsets.describe("g").groupState()).isEqualTo("CompletingRebalance");
        assertThat(commit("g", a.generationId(), a.memberId(), null, Map.of(new TopicPartition("t", 0), offset(1))))
                .isEqualTo(Errors.REBALANCE_IN_PROGRESS);
        uncommitted.get(0).complete(null);
        assertThat(s.join().assignment()).containsExactly(7);
        assertThat(offsets.describe("g").groupState()).isEqualTo("Stable");
    }

    @Test
    void anAssignmentStoredAfterTheRebalanceMovedOnChangesNothing() {
        JoinGroupResponseData a = joinNew().join();
        uncommitted = new ArrayList<>();
        CompletableFuture<SyncGroupResponseData> s = syncAsync(a, Map.of(a.memberId(), new byte[]{7}));
        CompletableFuture<JoinGroupResponseData> b = joinNew(); // a second member: a new rebalance begins
        assertThat(Errors.forCode(s.join().errorCode())).isEqualTo(Errors.REBALANCE_IN_PROGRESS);
        uncommitted.get(0).complete(null); // the old generation's assignment arrives late
        assertThat(offsets.describe("g").groupState()).isEqualTo("PreparingRebalance");
        CompletableFuture<JoinGroupResponseData> aAgain = join(a.memberId(), null);
        assertThat(aAgain.join().generationId()).isEqualTo(2);
        assertThat(b.join().generationId()).isEqualTo(2);
    }

    @Test
    void aGroupBeingDeletedTakesNoChangesAndIsGoneOnceItsTombstonesAreStored() {
        TopicPartition tp = new TopicPartition("t", 0);
        commit("s", -1, "", null, Map.of(tp, offset(3)));
        uncommitted = new ArrayList<>();
        CompletableFuture<Map<String, Errors>> deleted = offsets.deleteGroups(List.of("s"));
        assertThat(deleted).isNotDone();
        // a commit now would land after the tombstones and vanish with the group: it is refused, retriably
        assertThat(offsets.commit("s", -1, "", null, Map.of(tp, offset(4))).join()).isEqualTo(Errors.COORDINATOR_NOT_AVAILABLE);
        assertThat(deleteGroups(List.of("s"))).containsEntry("s", Errors.GROUP_ID_NOT_FOUND);
        uncommitted.get(0).complete(null);
        assertThat(deleted.join()).containsEntry("s", Errors.NONE);
        assertThat(offsets.list(List.of(), List.of())).isEmpty();
        uncommitted = null;
        assertThat(commit("s", -1, "", null, Map.of(tp, offset(4)))).isEqualTo(Errors.NONE); // a new group
        assertThat(offsets.fetch("s", null).get(tp).offset()).isEqualTo(4);
    }

    @Test
    void aDeletionThatIsNotStoredLeavesTheGroupAsItWas() {
        TopicPartition tp = new TopicPartition("t", 0);
        commit("s", -1, "", null, Map.of(tp, offset(3)));
        uncommitted = new ArrayList<>();
        CompletableFuture<Map<String, Errors>> deleted = offsets.deleteGroups(List.of("s"));
        uncommitted.get(0).completeExceptionally(new org.apache.kafka.common.errors.NotEnoughReplicasException("isr"));
        assertThat(deleted.join()).containsEntry("s", Errors.COORDINATOR_NOT_AVAILABLE);
        assertThat(offsets.fetch("s", null).get(tp).offset()).isEqualTo(3);
        uncommitted = null;
        assertThat(commit("s", -1, "", null, Map.of(tp, offset(4)))).isEqualTo(Errors.NONE);
    }

    @Test
    void aWriteCompletedByAnotherThreadIsAppliedOnTheCallbackExecutorNotOnThatThread() throws Exception {
        List<Runnable> queued = new ArrayList<>();
        coordinator = new GroupCoordinator(GroupConfig.defaults(), timer, timer, store, queued::add);
        offsets = new GroupOffsets(coordinator);
        TopicPartition tp = new TopicPartition("t", 0);
        uncommitted = new ArrayList<>();
        CompletableFuture<Errors> c = offsets.commit("s", -1, "", null, Map.of(tp, offset(9)));
        Thread replicator = new Thread(() -> uncommitted.get(0).complete(null)); // e.g. a follower's fetch
        replicator.start();
        replicator.join();
        assertThat(c).isNotDone(); // the completing thread did not run the group's change
        assertThat(queued).hasSize(1);
        queued.get(0).run();
        assertThat(c.join()).isEqualTo(Errors.NONE);
        assertThat(offsets.fetch("s", null).get(tp).offset()).isEqualTo(9);
    }

    private Errors commit(String groupId, int generation, String memberId, String instanceId,
                          Map<TopicPartition, GroupRecords.OffsetValue> o) {
        return offsets.commit(groupId, generation, memberId, instanceId, o).join();
    }

    private Map<String, Errors> deleteGroups(List<String> ids) {
        return offsets.deleteGroups(ids).join();
    }

    private GroupOffsets.DeleteOffsetsResult deleteOffsets(String groupId, List<TopicPartition> partitions) {
        return offsets.deleteOffsets(groupId, partitions).join();
    }

    private static GroupRecords.OffsetValue offset(long o) {
        return new GroupRecords.OffsetValue(o, -1, "", 0);
    }
}
