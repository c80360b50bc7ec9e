package dev.varve.broker;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.FetchRequestData;
import org.apache.kafka.common.message.FetchResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.utils.Time;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.function.Function;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The session cache on its own (the wire behaviour is {@link FetchSessionsWireTest}'s): which partitions an
 * incremental answer carries, and the injectable ids and eviction time the replication simulation uses.
 */
class FetchSessionsTest {
    private static final short VERSION = ApiKeys.FETCH.latestVersion();
    private static final Uuid TOPIC = new Uuid(7, 7);
    private final ManualTime time = new ManualTime(1_000);

    private static FetchRequestData request(int sessionId, int epoch, int... partitions) {
        FetchRequestData.FetchTopic t = new FetchRequestData.FetchTopic().setTopicId(TOPIC);
        for (int p : partitions) {
            t.partitions().add(new FetchRequestData.FetchPartition().setPartition(p).setFetchOffset(10).setCurrentLeaderEpoch(3));
        }
        FetchRequestData r = new FetchRequestData().setSessionId(sessionId).setSessionEpoch(epoch).setReplicaId(1);
        if (partitions.length > 0) {
            r.topics().add(t);
        }
        return r;
    }

    /** A full answer for every partition of the context, each as {@code answer} makes it. */
    private static FetchResponseData answer(FetchSessions.Context context, Function<Integer, FetchResponseData.PartitionData> answer) {
        FetchResponseData full = new FetchResponseData();
        for (FetchRequestData.FetchTopic t : context.topics()) {
            FetchResponseData.FetchableTopicResponse tr = new FetchResponseData.FetchableTopicResponse().setTopicId(t.topicId());
            for (FetchRequestData.FetchPartition p : t.partitions()) {
                tr.partitions().add(answer.apply(p.partition()).setPartitionIndex(p.partition()));
            }
            full.responses().add(tr);
        }
        return context.finish(full);
    }

    private static FetchResponseData.PartitionData hw(long highWatermark) {
        return new FetchResponseData.PartitionData().setHighWatermark(highWatermark).setLastStableOffset(highWatermark)
                .setLogStartOffset(0).setRecords(MemoryRecords.EMPTY);
    }

    private static List<Integer> answered(FetchResponseData r) {
        List<Integer> out = new ArrayList<>();
        r.responses().forEach(t -> t.partitions().forEach(p -> out.add(p.partitionIndex())));
        return out;
    }

    @Test
    void anIncrementalAnswerCarriesOnlyPartitionsWithNews() {
        FetchSessions sessions = new FetchSessions(10, time);
        FetchResponseData first = answer(sessions.newContext(request(0, 0, 0, 1), VERSION, true), p -> hw(20));
        assertThat(answered(first)).containsExactly(0, 1);
        int id = first.sessionId();
        FetchResponseData second = answer(sessions.newContext(request(id, 1), VERSION, true), p -> hw(p == 1 ? 25 : 20));
        assertThat(answered(second)).containsExactly(1);
        assertThat(sessions.incrementalFetches()).isEqualTo(1);
        assertThat(sessions.omittedPartitions()).isEqualTo(1);
    }

    /**
     * A follower does not take the high watermark of a diverging-epoch answer (it truncates first), so the
     * session must not count it as sent: the next answer carries the partition again, high watermark
     * unchanged or not. Found by the replication simulation: a follower restarted from an old HW
     * checkpoint, truncated on its first fetch of an idle partition and never learned the HW.
     */
    @Test
    void theHighWatermarkOfADivergingAnswerIsSentAgain() {
        FetchSessions sessions = new FetchSessions(10, time);
        int id = answer(sessions.newContext(request(0, 0, 0, 1), VERSION, true), p -> hw(20)).sessionId();
        FetchResponseData diverging = answer(sessions.newContext(request(id, 1), VERSION, true), p -> p == 0
                ? hw(20).setDivergingEpoch(new FetchResponseData.EpochEndOffset().setEpoch(2).setEndOffset(8)) : hw(20));
        assertThat(answered(diverging)).containsExactly(0);
        // the follower truncated to 8 and fetches from there; the leader's HW is still 20, nothing else is new
        FetchResponseData after = answer(sessions.newContext(request(id, 2, 0), VERSION, true), p -> hw(20));
        assertThat(answered(after)).containsExactly(0);
        assertThat(after.responses().get(0).partitions().get(0).highWatermark()).isEqualTo(20);
        // now it was sent: left out again until something changes
        assertThat(answered(answer(sessions.newContext(request(id, 3), VERSION, true), p -> hw(20)))).isEmpty();
    }

    /**
     * A follower that re-adds a partition for a new leader epoch (same leader) ignores the answer it had
     * in flight for the old epoch: the high watermark that answer carried must come again, or an idle
     * partition's follower keeps an old one (noticed while building the multi-partition simulation).
     */
    @Test
    void aPartitionFetchedForANewLeaderEpochGetsItsHighWatermarkAgain() {
        FetchSessions sessions = new FetchSessions(10, time);
        int id = answer(sessions.newContext(request(0, 0, 0, 1), VERSION, true), p -> hw(20)).sessionId();
        assertThat(answered(answer(sessions.newContext(request(id, 1), VERSION, true), p -> hw(20)))).isEmpty();
        FetchRequestData reAdded = request(id, 2, 0);
        reAdded.topics().get(0).partitions().get(0).setCurrentLeaderEpoch(4);
        FetchResponseData after = answer(sessions.newContext(reAdded, VERSION, true), p -> hw(20));
        assertThat(answered(after)).containsExactly(0);
        assertThat(after.responses().get(0).partitions().get(0).highWatermark()).isEqualTo(20);
        // the same epoch again: nothing new, left out
        FetchRequestData same = request(id, 3, 0);
        same.topics().get(0).partitions().get(0).setCurrentLeaderEpoch(4);
        assertThat(answered(answer(sessions.newContext(same, VERSION, true), p -> hw(20)))).isEmpty();
    }

    @Test
    void sessionIdsComeFromTheGivenSourceAndTheEvictionTimeIsTheGivenOne() {
        int[] next = {0, -5, 42, 42, 43, 44}; // non-positive and taken ids are drawn again
        int[] drawn = {0};
        FetchSessions sessions = new FetchSessions(2, time, 50, () -> next[drawn[0]++]);
        assertThat(answer(sessions.newContext(request(0, 0, 0), VERSION, true), p -> hw(1)).sessionId()).isEqualTo(42);
        time.sleep(10);
        assertThat(answer(sessions.newContext(request(0, 0, 1), VERSION, true), p -> hw(1)).sessionId()).isEqualTo(43);
        // both slots taken, neither session idle for longer than 50 ms: a third client goes without
        assertThat(answer(sessions.newContext(request(0, 0, 2), VERSION, true), p -> hw(1)).sessionId()).isZero();
        time.sleep(45); // 42 idle for 55 ms, 43 for 45
        assertThat(answer(sessions.newContext(request(0, 0, 2), VERSION, true), p -> hw(1)).sessionId()).isEqualTo(44);
        assertThat(sessions.evicted()).isEqualTo(1);
        assertThat(sessions.newContext(request(42, 1), VERSION, true).error()).isEqualTo(Errors.FETCH_SESSION_ID_NOT_FOUND);
        assertThat(sessions.newContext(request(43, 1), VERSION, true).error()).isEqualTo(Errors.NONE);
    }
}
