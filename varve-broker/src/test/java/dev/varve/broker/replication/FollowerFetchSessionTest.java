package dev.varve.broker.replication;

import dev.varve.broker.FetchSessions;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.FetchRequestData;
import org.apache.kafka.common.message.FetchResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.requests.FetchMetadata;
import org.apache.kafka.common.requests.FetchRequest;
import dev.varve.broker.ManualTime;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The follower's fetch session against the leader's real session cache ({@link FetchSessions}), over the
 * Fetch wire objects: a full fetch opens the session, idle fetches name no partition, a moved position or
 * a dropped partition is all a request carries, and every refusal or lost answer makes the next fetch full.
 */
class FollowerFetchSessionTest {
    private static final short VERSION = ApiKeys.FETCH.latestVersion();
    private static final Uuid TOPIC = Uuid.randomUuid();
    private static final int PARTITIONS = 1_000;

    private final ManualTime time = new ManualTime(1_000);
    private final FetchSessions leader = new FetchSessions(10, time);
    private final FollowerFetchSession<Object> follower = new FollowerFetchSession<>();
    /** The follower's fetch state objects and positions, per partition. */
    private final Object[] states = new Object[PARTITIONS];
    private final long[] offsets = new long[PARTITIONS];

    FollowerFetchSessionTest() {
        for (int p = 0; p < PARTITIONS; p++) {
            states[p] = new Object();
        }
    }

    private static TopicPartition tp(int p) {
        return new TopicPartition("t", p);
    }

    /** Builds the next fetch over the partitions not in {@code skipped}. */
    private FollowerFetchSession.Request<Object> build(int... skipped) {
        follower.begin();
        java.util.Set<Integer> skip = new java.util.HashSet<>();
        for (int s : skipped) {
            skip.add(s);
        }
        for (int p = 0; p < PARTITIONS; p++) {
            if (!skip.contains(p)) {
                follower.add(states[p], tp(p), TOPIC, offsets[p], 0, 5, 4, 1 << 20);
            }
        }
        return follower.build();
    }

    private static FetchRequestData wire(FollowerFetchSession.Request<Object> r) {
        return new FetchRequest.Builder((short) 13, VERSION, 2, 7, 500, 1, r.toSend()).removed(r.toForget())
                .metadata(r.metadata()).build(VERSION).data();
    }

    /** The leader's answer to {@code request}: every partition of its session at {@code hw}, as its fetch path reads them. */
    private FetchResponseData leaderAnswers(FetchRequestData request, Map<Integer, Long> hwByPartition) {
        FetchSessions.Context ctx = leader.newContext(request, VERSION, true);
        if (ctx.error() != Errors.NONE) {
            return ctx.finish(null);
        }
        FetchResponseData full = new FetchResponseData();
        for (FetchRequestData.FetchTopic t : ctx.topics()) {
            FetchResponseData.FetchableTopicResponse tr = new FetchResponseData.FetchableTopicResponse().setTopicId(t.topicId());
            for (FetchRequestData.FetchPartition p : t.partitions()) {
                long hw = hwByPartition.getOrDefault(p.partition(), 0L);
                tr.partitions().add(new FetchResponseData.PartitionData().setPartitionIndex(p.partition())
                        .setHighWatermark(hw).setLastStableOffset(hw).setLogStartOffset(0).setRecords(MemoryRecords.EMPTY));
            }
            full.responses().add(tr);
        }
        return ctx.finish(full);
    }

    private static List<Integer> answered(FetchResponseData r) {
        List<Integer> out = new ArrayList<>();
        r.responses().forEach(t -> t.partitions().forEach(p -> out.add(p.partitionIndex())));
        return out;
    }

    private FollowerFetchSession.Request<Object> openSession() {
        FollowerFetchSession.Request<Object> first = build();
        assertThat(first.isFull()).isTrue();
        assertThat(first.toSend()).hasSize(PARTITIONS);
        FetchResponseData answer = leaderAnswers(wire(first), Map.of());
        assertThat(answered(answer)).hasSize(PARTITIONS);
        assertThat(follower.handleResponse(answer)).isTrue();
        assertThat(follower.sessionId()).isEqualTo(answer.sessionId()).isPositive();
        return first;
    }

    @Test
    void idleFetchesNameNoPartitionAndChangesCarryOnlyWhatMoved() {
        openSession();
        for (int round = 1; round <= 3; round++) {
            FollowerFetchSession.Request<Object> idle = build();
            assertThat(idle.isFull()).isFalse();
            assertThat(idle.metadata().epoch()).isEqualTo(round);
            assertThat(idle.toSend()).as("an idle fetch carries no partition").isEmpty();
            assertThat(idle.toForget()).isEmpty();
            assertThat(idle.partitions()).as("yet it fetches them all").hasSize(PARTITIONS);
            FetchResponseData answer = leaderAnswers(wire(idle), Map.of());
            assertThat(answer.errorCode()).isZero();
            assertThat(answered(answer)).isEmpty();
            assertThat(follower.handleResponse(answer)).isTrue();
        }

        // three partitions got records; two back off (left out): the request says exactly that
        offsets[10] = 5;
        offsets[500] = 1;
        offsets[999] = 42;
        FollowerFetchSession.Request<Object> moved = build(7, 8);
        assertThat(moved.toSend().keySet()).containsExactly(tp(10), tp(500), tp(999));
        assertThat(moved.toSend().get(tp(999)).fetchOffset).isEqualTo(42);
        assertThat(moved.toForget()).containsExactlyInAnyOrder(new TopicIdPartition(TOPIC, tp(7)), new TopicIdPartition(TOPIC, tp(8)));
        assertThat(moved.partitions()).hasSize(PARTITIONS - 2);
        // the leader's HW moved on two partitions: only those are answered, and each is matched to its fetch
        FetchResponseData answer = leaderAnswers(wire(moved), Map.of(10, 5L, 3, 9L));
        assertThat(answered(answer)).containsExactlyInAnyOrder(3, 10);
        assertThat(follower.handleResponse(answer)).isTrue();
        assertThat(follower.sentFor(TOPIC, 10).fetchOffset()).isEqualTo(5);
        assertThat(follower.sentFor(TOPIC, 10).state()).isSameAs(states[10]);
        assertThat(follower.sentFor(TOPIC, 7)).as("forgotten").isNull();

        // the backed-off partitions come back: sent again, as new ones
        FollowerFetchSession.Request<Object> back = build();
        assertThat(back.toSend().keySet()).containsExactly(tp(7), tp(8));
        assertThat(follower.handleResponse(leaderAnswers(wire(back), Map.of(10, 5L, 3, 9L)))).isTrue();

        // a partition re-added (a new fetch state object for the same position) is sent again
        states[20] = new Object();
        FollowerFetchSession.Request<Object> readded = build();
        assertThat(readded.toSend().keySet()).containsExactly(tp(20));
        assertThat(follower.handleResponse(leaderAnswers(wire(readded), Map.of(10, 5L, 3, 9L)))).isTrue();
        assertThat(follower.sentFor(TOPIC, 20).state()).isSameAs(states[20]);
    }

    @Test
    void aFetchWithNothingDueLeavesTheSessionForTheNextOne() {
        openSession();
        follower.begin();
        assertThat(follower.build()).as("no partition added").isNull();
        FollowerFetchSession.Request<Object> next = build(1);
        assertThat(next.isFull()).isFalse();
        assertThat(next.metadata().epoch()).as("the unsent fetch used no epoch").isEqualTo(1);
        assertThat(next.toForget()).containsExactly(new TopicIdPartition(TOPIC, tp(1)));
        assertThat(follower.handleResponse(leaderAnswers(wire(next), Map.of()))).isTrue();
    }

    @Test
    void everyRefusalOrLostAnswerMakesTheNextFetchFull() {
        openSession();
        int id = follower.sessionId();

        // a lost answer (the leader may have taken the request, and moved its session on): the next fetch
        // closes the session and opens a new one
        build();
        follower.handleError();
        FollowerFetchSession.Request<Object> reopen = build();
        assertThat(reopen.isFull()).isTrue();
        assertThat(reopen.metadata().sessionId()).isEqualTo(id);
        assertThat(reopen.toSend()).hasSize(PARTITIONS);
        FetchResponseData answer = leaderAnswers(wire(reopen), Map.of());
        assertThat(follower.handleResponse(answer)).isTrue();
        assertThat(follower.sessionId()).isNotEqualTo(id).isEqualTo(answer.sessionId());

        // the leader lost the session (restarted, evicted)
        assertThat(follower.handleResponse(new FetchResponseData().setErrorCode(Errors.FETCH_SESSION_ID_NOT_FOUND.code()))).isFalse();
        assertThat(follower.sessionId()).isZero();
        assertThat(follower.nextEpoch()).isEqualTo(FetchMetadata.INITIAL_EPOCH);
        assertThat(follower.handleResponse(leaderAnswers(wire(build()), Map.of()))).isTrue();

        // out of step: a request at the wrong epoch is refused by the leader, and the follower recovers
        int open = follower.sessionId();
        FetchRequestData stale = wire(build());
        stale.setSessionEpoch(stale.sessionEpoch() + 5);
        FetchResponseData refused = leaderAnswers(stale, Map.of());
        assertThat(Errors.forCode(refused.errorCode())).isEqualTo(Errors.INVALID_FETCH_SESSION_EPOCH);
        assertThat(follower.handleResponse(refused)).isFalse();
        FollowerFetchSession.Request<Object> full = build();
        assertThat(full.isFull()).isTrue();
        assertThat(full.metadata().sessionId()).as("closes the old session").isEqualTo(open);
        assertThat(follower.handleResponse(leaderAnswers(wire(full), Map.of()))).isTrue();

        // an answer naming a partition outside the session does not fit: the next fetch is full
        build();
        FetchResponseData foreign = new FetchResponseData().setSessionId(follower.sessionId());
        foreign.responses().add(new FetchResponseData.FetchableTopicResponse().setTopicId(Uuid.randomUuid())
                .setPartitions(List.of(new FetchResponseData.PartitionData().setPartitionIndex(0))));
        assertThat(follower.handleResponse(foreign)).isFalse();
        assertThat(build().isFull()).isTrue();
    }

    @Test
    void aLeaderWithoutASlotIsFetchedInFullEveryTime() {
        FetchSessions noSlots = new FetchSessions(0, time);
        for (int round = 0; round < 3; round++) {
            FollowerFetchSession.Request<Object> r = build();
            assertThat(r.isFull()).isTrue();
            FetchSessions.Context ctx = noSlots.newContext(wire(r), VERSION, true);
            FetchResponseData answer = ctx.finish(new FetchResponseData());
            assertThat(answer.sessionId()).isZero();
            assertThat(follower.handleResponse(answer)).isTrue();
            assertThat(follower.nextEpoch()).isEqualTo(FetchMetadata.INITIAL_EPOCH);
        }
    }

    @Test
    void aPartitionWithoutATopicIdOrAddedTwiceIsRefused() {
        follower.begin();
        assertThatThrownBy(() -> follower.add(states[0], tp(0), Uuid.ZERO_UUID, 0, 0, 1, -1, 100))
                .isInstanceOf(IllegalArgumentException.class);
        follower.add(states[0], tp(0), TOPIC, 0, 0, 1, -1, 100);
        assertThatThrownBy(() -> follower.add(states[0], tp(0), TOPIC, 0, 0, 1, -1, 100))
                .isInstanceOf(IllegalArgumentException.class);
        Map<Integer, Long> none = new HashMap<>();
        assertThat(follower.handleResponse(leaderAnswers(wire(follower.build()), none))).isTrue();
    }
}
