package dev.varve.broker.replication;

import dev.varve.storage.EpochEntry;
import dev.varve.storage.LeaderEpochCache.EpochEndOffset;
import org.apache.kafka.common.errors.OffsetOutOfRangeException;
import org.apache.kafka.common.protocol.Errors;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * {@link EpochEndOffsets}, {@link FollowerTruncation} and {@link EpochFencing}, including the classic
 * KIP-101 and KIP-279 scenarios written out with in-memory logs of {@code (offset, epoch, value)}.
 */
class EpochTruncationTest {

    /** A tiny in-memory replica log: one record per batch; epochs kept like the storage epoch cache. */
    static final class Log {
        final List<String> values = new ArrayList<>();
        final List<Integer> recordEpochs = new ArrayList<>();
        final List<EpochEntry> epochs = new ArrayList<>();
        long highWatermark;
        long flushed;

        Log append(int epoch, String... vs) {
            for (String v : vs) {
                assign(epoch, values.size());
                values.add(v);
                recordEpochs.add(epoch);
            }
            return this;
        }

        void assign(int epoch, long start) {
            if (!epochs.isEmpty() && epoch <= epochs.get(epochs.size() - 1).epoch()) {
                return;
            }
            epochs.removeIf(e -> e.startOffset() >= start);
            epochs.add(new EpochEntry(epoch, start));
        }

        long leo() {
            return values.size();
        }

        void truncateTo(long offset) {
            while (values.size() > offset) {
                values.remove(values.size() - 1);
                recordEpochs.remove(recordEpochs.size() - 1);
            }
            epochs.removeIf(e -> e.startOffset() >= offset);
            highWatermark = Math.min(highWatermark, leo());
            flushed = Math.min(flushed, leo());
        }

        void crashLosingUnflushed() {
            truncateTo(flushed);
        }

        /** Follower fetch: copy the leader's records from our log end. */
        void fetchFrom(Log leader) {
            for (long o = leo(); o < leader.leo(); o++) {
                append(leader.recordEpochs.get((int) o), leader.values.get((int) o));
            }
        }
    }

    /** Runs the whole truncation loop of a follower against a leader; returns the number of rounds. */
    static int truncateByEpoch(Log follower, Log leader) {
        int rounds = 0;
        while (true) {
            rounds++;
            var epoch = FollowerTruncation.requestEpoch(follower.epochs);
            FollowerTruncation.Step step = epoch.isEmpty()
                    ? FollowerTruncation.withoutLocalEpochs(follower.leo(), follower.highWatermark)
                    : FollowerTruncation.onLeaderAnswer(follower.epochs, follower.leo(), follower.highWatermark,
                    EpochEndOffsets.endOffsetFor(leader.epochs, epoch.getAsInt(), leader.leo()));
            follower.truncateTo(step.truncationOffset());
            if (step.complete()) {
                return rounds;
            }
        }
    }

    // ---------------------------------------------------------------- KIP-101

    /**
     * KIP-101 scenario 1: a follower restarts and, truncating to its high watermark, drops a record the
     * leader has already committed (its own HW lagged by one fetch); the leader dies before it fetches
     * it back, the follower becomes leader: the committed record is lost. Epoch-based truncation keeps it.
     */
    @Test
    void kip101HighWatermarkTruncationWouldLoseACommittedRecord() {
        LeaderAndIsr epoch0 = new LeaderAndIsr(0, 0, 0, List.of(0, 1), Set.of(0, 1));
        LeaderState a = LeaderState.becomeLeader(0, 1, epoch0, 0, 0, 2, 30_000, 0);
        Log logA = new Log();
        Log logB = new Log();

        logA.append(0, "m1", "m2");
        a.onLeaderAppend(2, 0);
        a.onFollowerFetch(1, 0, 0);
        logB.fetchFrom(logA);
        logB.highWatermark = Math.min(a.highWatermark(), logB.leo()); // 0
        a.onFollowerFetch(1, 2, 1); // B has both: A commits them and acks the producer
        assertThat(a.highWatermark()).isEqualTo(2);
        assertThat(a.ackStatus(2)).isEqualTo(AckStatus.DONE);
        // ...but B restarts before the response carrying HW 2 arrives: B's HW is still 0.
        assertThat(logB.highWatermark).isZero();

        // Pre-KIP-101: B truncates to its HW and would then be elected with m1 and m2 gone.
        Log naiveB = copy(logB);
        naiveB.truncateTo(naiveB.highWatermark);
        assertThat(naiveB.values).doesNotContain("m2");

        // KIP-101: B asks A where epoch 0 ends and keeps everything.
        FollowerTruncation.Step step = FollowerTruncation.onLeaderAnswer(logB.epochs, logB.leo(), logB.highWatermark,
                EpochEndOffsets.endOffsetFor(logA.epochs, 0, logA.leo()));
        assertThat(step).isEqualTo(new FollowerTruncation.Step(2, true, FollowerTruncation.Reason.EPOCH_MATCH, false));
        logB.truncateTo(step.truncationOffset());
        // A dies; B is elected (it is in the ISR) and still has the committed records.
        assertThat(logB.values).containsExactly("m1", "m2");
    }

    /**
     * KIP-101 scenario 2: both replicas crash and lose unflushed data; B comes back first, is elected
     * and writes a new record at an offset A still holds a different record for. Truncating to its HW,
     * A would keep its stale record: the replicas diverge for good. By epoch, A cuts exactly there.
     */
    @Test
    void kip101ReplicasDivergeAfterBothCrashUnlessTruncatedByEpoch() {
        Log logA = new Log().append(0, "m1", "m2");
        Log logB = new Log();
        logB.fetchFrom(logA);
        logA.highWatermark = 2;
        logB.highWatermark = 2;
        logA.flushed = 2; // A's page cache made it to disk...
        logB.flushed = 1; // ...B's only partly: the power fails on both
        logA.crashLosingUnflushed();
        logB.crashLosingUnflushed();
        assertThat(logB.values).containsExactly("m1");

        // B restarts first and is elected (epoch 1; an unclean choice the old controller made), then writes m3.
        logB.assign(1, logB.leo());
        logB.append(1, "m3");
        assertThat(logB.epochs).containsExactly(new EpochEntry(0, 0), new EpochEntry(1, 1));

        // Pre-KIP-101: A truncates to its HW (2): nothing goes, A keeps m2 where B has m3.
        Log naiveA = copy(logA);
        naiveA.truncateTo(naiveA.highWatermark);
        naiveA.fetchFrom(logB);
        assertThat(naiveA.values).containsExactly("m1", "m2");
        assertThat(logB.values).containsExactly("m1", "m3");

        // KIP-101: A asks where epoch 0 ends on B (1) and truncates there, below its own HW.
        FollowerTruncation.Step step = FollowerTruncation.onLeaderAnswer(logA.epochs, logA.leo(), logA.highWatermark,
                EpochEndOffsets.endOffsetFor(logB.epochs, 0, logB.leo()));
        assertThat(step).isEqualTo(new FollowerTruncation.Step(1, true, FollowerTruncation.Reason.EPOCH_MATCH, true));
        logA.truncateTo(step.truncationOffset());
        logA.fetchFrom(logB);
        assertThat(logA.values).isEqualTo(logB.values);
    }

    /**
     * KIP-279: after leader changes in quick succession the follower does not know the epoch the
     * leader answers with. KIP-101 alone would truncate to the leader's offset and keep records of an
     * epoch the leader never had; the loop cuts by the follower's own epoch and asks again.
     */
    @Test
    void kip279MultipleRoundsWhenTheFollowerDoesNotKnowTheLeadersEpoch() {
        // Common history in epoch 0, then the two replicas led different epochs.
        Log leader = new Log().append(0, "a", "b", "c", "d", "e").append(2, "L5", "L6").append(4, "L7", "L8", "L9", "L10", "L11");
        Log follower = new Log().append(0, "a", "b", "c", "d", "e").append(1, "F5", "F6", "F7").append(3, "F8", "F9");
        follower.highWatermark = 5;

        // Round 1: asks for 3; the leader's largest epoch <= 3 is 2, ending at 7. The follower never
        // saw epoch 2: it cuts its epochs above 1 (at 8) and asks again.
        EpochEndOffset answer1 = EpochEndOffsets.endOffsetFor(leader.epochs, 3, leader.leo());
        assertThat(answer1).isEqualTo(new EpochEndOffset(2, 7));
        FollowerTruncation.Step step1 = FollowerTruncation.onLeaderAnswer(follower.epochs, follower.leo(), follower.highWatermark, answer1);
        assertThat(step1).isEqualTo(new FollowerTruncation.Step(8, false, FollowerTruncation.Reason.INTERMEDIATE, false));
        follower.truncateTo(step1.truncationOffset());
        // (KIP-101 without the loop would stop at min(7, 10) = 7, keeping F5 and F6 where the leader has L5, L6.)

        // Round 2: asks for 1; the leader answers epoch 0 ending at 5; both know epoch 0: cut at 5.
        assertThat(FollowerTruncation.requestEpoch(follower.epochs)).hasValue(1);
        EpochEndOffset answer2 = EpochEndOffsets.endOffsetFor(leader.epochs, 1, leader.leo());
        assertThat(answer2).isEqualTo(new EpochEndOffset(0, 5));
        FollowerTruncation.Step step2 = FollowerTruncation.onLeaderAnswer(follower.epochs, follower.leo(), follower.highWatermark, answer2);
        assertThat(step2).isEqualTo(new FollowerTruncation.Step(5, true, FollowerTruncation.Reason.EPOCH_MATCH, false));
        follower.truncateTo(step2.truncationOffset());
        follower.fetchFrom(leader);
        assertThat(follower.values).isEqualTo(leader.values);
    }

    @Test
    void withoutEpochInformationTheFollowerFallsBackToItsHighWatermark() {
        Log follower = new Log().append(0, "a", "b", "c");
        follower.highWatermark = 2;
        assertThat(FollowerTruncation.onLeaderAnswer(follower.epochs, 3, 2, new EpochEndOffset(-1, -1)))
                .isEqualTo(new FollowerTruncation.Step(2, true, FollowerTruncation.Reason.LEADER_HAS_NO_EPOCHS, false));
        assertThat(FollowerTruncation.withoutLocalEpochs(3, 2))
                .isEqualTo(new FollowerTruncation.Step(2, true, FollowerTruncation.Reason.NO_LOCAL_EPOCHS, false));
        assertThat(FollowerTruncation.onLeaderAnswer(List.of(), 3, 2, new EpochEndOffset(4, 10)).reason())
                .isEqualTo(FollowerTruncation.Reason.NO_LOCAL_EPOCHS);
        assertThat(FollowerTruncation.onLeaderAnswer(follower.epochs, 3, 2, new EpochEndOffset(-1, 1)))
                .isEqualTo(new FollowerTruncation.Step(1, true, FollowerTruncation.Reason.LEADER_OFFSET_WITHOUT_EPOCH, true));
        assertThat(FollowerTruncation.requestEpoch(List.of())).isEmpty();
    }

    @Test
    void theTruncationOffsetNeverExceedsTheFollowersLogEnd() {
        Log follower = new Log().append(3, "a", "b");
        FollowerTruncation.Step step = FollowerTruncation.onLeaderAnswer(follower.epochs, 2, 0, new EpochEndOffset(3, 50));
        assertThat(step.truncationOffset()).isEqualTo(2);
    }

    // ---------------------------------------------------------------- leader-side answers

    @Test
    void endOffsetForFollowsTheEpochCacheRules() {
        List<EpochEntry> epochs = List.of(new EpochEntry(2, 10), new EpochEntry(4, 20), new EpochEntry(7, 35));
        assertThat(EpochEndOffsets.endOffsetFor(epochs, 7, 40)).isEqualTo(new EpochEndOffset(7, 40)); // latest: log end
        assertThat(EpochEndOffsets.endOffsetFor(epochs, 4, 40)).isEqualTo(new EpochEndOffset(4, 35));
        assertThat(EpochEndOffsets.endOffsetFor(epochs, 5, 40)).isEqualTo(new EpochEndOffset(4, 35)); // largest <= 5
        assertThat(EpochEndOffsets.endOffsetFor(epochs, 1, 40)).isEqualTo(new EpochEndOffset(1, 10)); // older than all
        assertThat(EpochEndOffsets.endOffsetFor(epochs, 9, 40)).isEqualTo(new EpochEndOffset(-1, -1)); // newer than all
        assertThat(EpochEndOffsets.endOffsetFor(epochs, -1, 40)).isEqualTo(new EpochEndOffset(-1, -1));
        assertThat(EpochEndOffsets.endOffsetFor(List.of(), 3, 40)).isEqualTo(new EpochEndOffset(-1, -1));
        assertThatThrownBy(() -> EpochEndOffsets.endOffsetFor(List.of(new EpochEntry(3, 0), new EpochEntry(2, 5)), 3, 9))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void aFetchDivergesWhenItsLastEpochEndsEarlierOnTheLeaderOrIsUnknownThere() {
        List<EpochEntry> leader = List.of(new EpochEntry(0, 0), new EpochEntry(2, 5), new EpochEntry(4, 7));
        // In step: last fetched epoch 4 at offset 9, epoch 2 ending at 7 exactly.
        assertThat(EpochEndOffsets.divergingEpoch(leader, 12, 4, 9)).isEmpty();
        assertThat(EpochEndOffsets.divergingEpoch(leader, 12, 2, 7)).isEmpty();
        assertThat(EpochEndOffsets.divergingEpoch(leader, 12, -1, 3)).isEmpty();
        // Epoch 2 ends at 7 on the leader; the follower has epoch-2 batches up to 8.
        assertThat(EpochEndOffsets.divergingEpoch(leader, 12, 2, 8)).contains(new EpochEndOffset(2, 7));
        // The follower's last epoch 3 never existed on the leader.
        assertThat(EpochEndOffsets.divergingEpoch(leader, 12, 3, 6)).contains(new EpochEndOffset(2, 7));
        // Epoch 4 ends at the leader's log end (12): a follower claiming more of it truncates to 12.
        assertThat(EpochEndOffsets.divergingEpoch(leader, 12, 4, 13)).contains(new EpochEndOffset(4, 12));
        assertThatThrownBy(() -> EpochEndOffsets.divergingEpoch(leader, 12, -1, 13)).isInstanceOf(OffsetOutOfRangeException.class);
        assertThatThrownBy(() -> EpochEndOffsets.divergingEpoch(leader, 12, 6, 13)).isInstanceOf(OffsetOutOfRangeException.class);
    }

    @Test
    void staleLeadersAndFollowersAreFencedByEpoch() {
        assertThat(EpochFencing.validate(5, 5)).isEqualTo(Errors.NONE);
        assertThat(EpochFencing.validate(-1, 5)).isEqualTo(Errors.NONE);
        assertThat(EpochFencing.validate(4, 5)).isEqualTo(Errors.FENCED_LEADER_EPOCH);
        assertThat(EpochFencing.validate(6, 5)).isEqualTo(Errors.UNKNOWN_LEADER_EPOCH);
    }

    private static Log copy(Log log) {
        Log c = new Log();
        for (int i = 0; i < log.values.size(); i++) {
            c.append(log.recordEpochs.get(i), log.values.get(i));
        }
        c.epochs.clear();
        c.epochs.addAll(log.epochs);
        c.highWatermark = log.highWatermark;
        c.flushed = log.flushed;
        return c;
    }

    /** The leader's fast path for a follower at its latest epoch answers exactly what the full check answers. */
    @Test
    void theLatestEpochFastPathAgreesWithTheFullDivergenceCheck() {
        java.util.Random random = new java.util.Random(42);
        for (int run = 0; run < 2_000; run++) {
            List<EpochEntry> epochs = new ArrayList<>();
            long start = random.nextInt(5);
            int epoch = random.nextInt(3);
            for (int e = 0; e < 1 + random.nextInt(4); e++) {
                epochs.add(new EpochEntry(epoch, start));
                epoch += 1 + random.nextInt(3);
                start += random.nextInt(10);
            }
            long leo = start + random.nextInt(10);
            int latest = epochs.get(epochs.size() - 1).epoch();
            long fetchOffset = random.nextInt((int) leo + 5) - (random.nextInt(20) == 0 ? 1 : 0);
            Object full;
            Object fast;
            try {
                full = EpochEndOffsets.divergingEpoch(epochs, leo, latest, fetchOffset);
            } catch (OffsetOutOfRangeException e) {
                full = "out of range";
            }
            try {
                fast = EpochEndOffsets.divergingEpoch(latest, () -> {
                    throw new AssertionError("the epoch list was asked for a follower at the latest epoch");
                }, leo, latest, fetchOffset);
            } catch (OffsetOutOfRangeException e) {
                fast = "out of range";
            }
            assertThat(fast).as("epochs %s, leo %d, fetch %d", epochs, leo, fetchOffset).isEqualTo(full);
        }
    }
}
