package dev.varve.broker.replication;

import org.apache.kafka.common.errors.NotLeaderOrFollowerException;
import org.apache.kafka.common.errors.OffsetOutOfRangeException;
import org.apache.kafka.common.protocol.Errors;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** {@link LeaderState} with a fake clock: HW, ISR shrink and expansion, maximal ISR, min.insync.replicas. */
class LeaderStateTest {
    private static final long LAG_MS = 10_000;
    private static final List<Integer> REPLICAS = List.of(1, 2, 3);

    private long nowMs = 1_000_000;

    private LeaderState leader(Set<Integer> isr, long leo, long hw, int minIsr) {
        return LeaderState.becomeLeader(1, 100, new LeaderAndIsr(1, 5, 10, REPLICAS, isr), leo, hw, minIsr, LAG_MS, nowMs);
    }

    @Test
    void highWatermarkIsTheSmallestLogEndOffsetInTheIsr() {
        LeaderState l = leader(Set.of(1, 2, 3), 0, 0, 1);
        assertThat(l.onLeaderAppend(10, nowMs)).isFalse(); // followers' LEOs unknown: HW held
        assertThat(l.onFollowerFetch(2, 5, nowMs)).isFalse(); // 3 still unknown
        assertThat(l.highWatermark()).isZero();
        assertThat(l.onFollowerFetch(3, 7, nowMs)).isTrue();
        assertThat(l.highWatermark()).isEqualTo(5);
        assertThat(l.onFollowerFetch(2, 10, nowMs)).isTrue();
        assertThat(l.highWatermark()).isEqualTo(7);
        assertThat(l.onFollowerFetch(3, 10, nowMs)).isTrue();
        assertThat(l.highWatermark()).isEqualTo(10);
    }

    @Test
    void aFetchHeldUnreadCountsTheFollowerCaughtUpWhenItArrived() {
        LeaderState l = leader(Set.of(1, 2, 3), 10, 10, 1);
        long start = nowMs;
        l.onFollowerFetch(2, 10, start);
        l.onFollowerFetch(3, 10, start);
        // both followers' next fetches arrive at start + 9 s and are held unread (nothing changed); a record is
        // appended at start + 9.5 s and the held fetches are read, still at offset 10
        long heldAt = start + 9_000;
        l.onLeaderAppend(11, start + 9_500);
        l.onFollowerFetch(2, 10, -1L, start + 9_500, heldAt);
        l.onFollowerFetch(3, 10, -1L, start + 9_500, LeaderState.NEVER_MS);
        // at start + 12 s neither has fetched again: 3's last known catch-up is 12 s old, 2's only 3 s
        IsrChangeProposal shrink = l.isrShrinkProposal(start + 12_000).orElseThrow();
        assertThat(shrink.changed()).containsExactly(3);
        // a held time never counts as later than the read itself
        LeaderState m = leader(Set.of(1, 2, 3), 10, 10, 1);
        m.onFollowerFetch(2, 10, -1L, start, start + 50_000);
        m.onFollowerFetch(3, 10, start);
        m.onLeaderAppend(11, start);
        assertThat(m.isrShrinkProposal(start + LAG_MS + 1).orElseThrow().changed()).containsExactlyInAnyOrder(2, 3);
    }

    @Test
    void highWatermarkNeverMovesBackwards() {
        LeaderState l = leader(Set.of(1, 2, 3), 10, 4, 1);
        l.onFollowerFetch(2, 8, nowMs);
        l.onFollowerFetch(3, 8, nowMs);
        assertThat(l.highWatermark()).isEqualTo(8);
        // Follower 2 restarted and lost its tail: it fetches from lower down. The HW stays.
        assertThat(l.onFollowerFetch(2, 3, nowMs)).isFalse();
        assertThat(l.highWatermark()).isEqualTo(8);
        assertThat(l.replicaView(2).orElseThrow().logEndOffset()).isEqualTo(3);
    }

    @Test
    void theLowWatermarkWaitsForEveryLiveFollowersLogStartButNotForAFencedOne() {
        LeaderState l = leader(Set.of(1, 2, 3), 100, 100, 1);
        assertThat(l.lowWatermark(50)).isEqualTo(LeaderState.UNKNOWN_OFFSET); // followers have not said yet
        l.onFollowerLogStartOffset(2, 50);
        l.onFollowerLogStartOffset(3, 0);
        assertThat(l.lowWatermark(50)).isZero(); // 3 still holds the deleted records
        l.onFollowerLogStartOffset(3, 60);
        assertThat(l.lowWatermark(50)).isEqualTo(50); // the leader's own start bounds it too
        l.onFollowerLogStartOffset(2, 10); // a follower that lost its log and fetches from the start again
        assertThat(l.lowWatermark(50)).isEqualTo(10);
        l.setIneligibleReplicas(Set.of(2)); // its broker is fenced: nothing waits for it
        assertThat(l.lowWatermark(50)).isEqualTo(50);
        l.onFollowerLogStartOffset(9, 0); // not a follower: ignored
        assertThat(l.lowWatermark(50)).isEqualTo(50);
    }

    @Test
    void aNewLeaderStartsFromItsOwnHighWatermark() {
        LeaderState l = leader(Set.of(1, 2, 3), 20, 12, 2);
        assertThat(l.highWatermark()).isEqualTo(12);
        assertThat(l.leaderEpochStartOffset()).isEqualTo(20);
        l.onFollowerFetch(2, 20, nowMs);
        assertThat(l.highWatermark()).isEqualTo(12);
        l.onFollowerFetch(3, 15, nowMs);
        assertThat(l.highWatermark()).isEqualTo(15);
    }

    @Test
    void isrShrinksAfterReplicaLagTimeMaxMsAndTheShrinkCountsOnlyOnceCommitted() {
        LeaderState l = leader(Set.of(1, 2, 3), 0, 0, 1);
        l.onLeaderAppend(10, nowMs);
        l.onFollowerFetch(2, 10, nowMs);
        l.onFollowerFetch(3, 4, nowMs); // 3 is stuck from here on
        assertThat(l.highWatermark()).isEqualTo(4);
        long stuckSinceMs = nowMs; // ISR members count as caught up when the epoch began (nowMs)

        nowMs = stuckSinceMs + LAG_MS;
        l.onFollowerFetch(2, 10, nowMs);
        assertThat(l.outOfSyncReplicas(nowMs)).isEmpty();
        assertThat(l.isrShrinkProposal(nowMs)).isEmpty();

        nowMs = stuckSinceMs + LAG_MS + 1;
        l.onFollowerFetch(2, 10, nowMs);
        IsrChangeProposal shrink = l.isrShrinkProposal(nowMs).orElseThrow();
        assertThat(shrink.kind()).isEqualTo(IsrChangeProposal.Kind.SHRINK);
        assertThat(shrink.newIsrIds()).containsExactly(1, 2);
        assertThat(shrink.changed()).containsExactly(3);
        assertThat(shrink.leaderEpoch()).isEqualTo(5);
        assertThat(shrink.partitionEpoch()).isEqualTo(10);
        assertThat(shrink.newIsr()).contains(new IsrChangeProposal.IsrMember(1, 100));
        // In flight: the ISR and the HW still count 3, and no second proposal is made.
        assertThat(l.isr()).containsExactly(1, 2, 3);
        assertThat(l.maximalIsr()).containsExactly(1, 2, 3);
        assertThat(l.highWatermark()).isEqualTo(4);
        assertThat(l.isrShrinkProposal(nowMs + 1)).isEmpty();

        boolean moved = l.onIsrCommitted(shrink, new LeaderAndIsr(1, 5, 11, REPLICAS, Set.of(1, 2)), nowMs);
        assertThat(moved).isTrue();
        assertThat(l.isr()).containsExactly(1, 2);
        assertThat(l.partitionEpoch()).isEqualTo(11);
        assertThat(l.highWatermark()).isEqualTo(10);
    }

    @Test
    void aFollowerThatReachesTheLeadersPreviousEndStaysInSync() {
        LeaderState l = leader(Set.of(1, 2, 3), 0, 0, 1);
        l.onFollowerFetch(3, 0, nowMs);
        long t0 = nowMs;
        // A busy leader: every fetch of 2 reaches what the leader had at 2's previous fetch, never the current end.
        long leo = 0;
        for (int i = 1; i <= 30; i++) {
            long previousLeo = leo;
            leo += 100;
            nowMs = t0 + i * 1_000L;
            l.onLeaderAppend(leo, nowMs);
            l.onFollowerFetch(2, previousLeo, nowMs);
            l.onFollowerFetch(3, 0, nowMs); // 3 fetches but never moves
        }
        ReplicaView two = l.replicaView(2).orElseThrow();
        assertThat(two.lastCaughtUpTimeMs()).isEqualTo(nowMs - 1_000); // caught up as of its previous fetch
        assertThat(l.outOfSyncReplicas(nowMs)).containsExactly(3);
    }

    @Test
    void aLaggingReplicaRejoinsOnceItReachesTheHighWatermarkAndTheEpochStart() {
        LeaderState l = leader(Set.of(1, 2), 50, 50, 1);
        assertThat(l.leaderEpochStartOffset()).isEqualTo(50);
        l.onLeaderAppend(60, nowMs);
        l.onFollowerFetch(2, 60, nowMs);
        assertThat(l.highWatermark()).isEqualTo(60);

        l.onFollowerFetch(3, 40, nowMs);
        assertThat(l.isrExpandProposal(3)).as("below the HW").isEmpty();
        l.onFollowerFetch(3, 59, nowMs);
        assertThat(l.isrExpandProposal(3)).as("still below the HW").isEmpty();
        l.onFollowerFetch(3, 60, nowMs);
        IsrChangeProposal expand = l.isrExpandProposal(3).orElseThrow();
        assertThat(expand.kind()).isEqualTo(IsrChangeProposal.Kind.EXPAND);
        assertThat(expand.newIsrIds()).containsExactly(1, 2, 3);
        assertThat(l.isrExpandProposal(3)).as("one change in flight at a time").isEmpty();
        assertThat(l.isr()).containsExactly(1, 2);
        assertThat(l.maximalIsr()).containsExactly(1, 2, 3);

        l.onIsrCommitted(expand, new LeaderAndIsr(1, 5, 11, REPLICAS, Set.of(1, 2, 3)), nowMs);
        assertThat(l.isr()).containsExactly(1, 2, 3);
        assertThat(l.inFlightIsrChange()).isEmpty();
        assertThat(l.isrExpandProposal(3)).isEmpty();
    }

    @Test
    void aReplicaBelowTheStartOfTheLeaderEpochMayNotRejoinEvenAboveTheHighWatermark() {
        // The new leader's HW (30) lags; its epoch starts at 50. A follower at 40 may still hold records
        // of an older epoch the leader does not have: it must first truncate and fetch past 50.
        LeaderState l = leader(Set.of(1, 2), 50, 30, 1);
        l.onFollowerFetch(3, 40, nowMs);
        assertThat(l.isrExpandProposal(3)).isEmpty();
        l.onFollowerFetch(3, 50, nowMs);
        assertThat(l.isrExpandProposal(3)).isPresent();
    }

    @Test
    void maximalIsrHoldsTheHighWatermarkForAJoiningReplica() {
        LeaderState l = leader(Set.of(1, 2), 10, 10, 1);
        l.onFollowerFetch(2, 10, nowMs);
        l.onFollowerFetch(3, 10, nowMs);
        IsrChangeProposal expand = l.isrExpandProposal(3).orElseThrow();
        l.onLeaderAppend(20, nowMs);
        l.onFollowerFetch(2, 20, nowMs);
        // The expansion is not committed yet, but the HW already waits for 3.
        assertThat(l.highWatermark()).isEqualTo(10);
        l.onFollowerFetch(3, 15, nowMs);
        assertThat(l.highWatermark()).isEqualTo(15);

        // The controller refuses (3's broker restarted): back to the committed ISR; the HW may move on.
        assertThat(l.onIsrRejected(expand, Errors.INELIGIBLE_REPLICA)).isEqualTo(LeaderState.RejectionOutcome.REVERTED);
        assertThat(l.maximalIsr()).containsExactly(1, 2);
        nowMs += LAG_MS + 1; // 3 is no longer caught up, so the HW does not wait for it to join either
        assertThat(l.onFollowerFetch(2, 20, nowMs)).isTrue();
        assertThat(l.highWatermark()).isEqualTo(20);
    }

    @Test
    void theHighWatermarkWaitsForACaughtUpReplicaAboutToJoin() {
        LeaderState l = leader(Set.of(1), 10, 10, 1);
        l.onLeaderAppend(12, nowMs);
        assertThat(l.highWatermark()).isEqualTo(12); // the leader alone: its own appends commit
        l.onFollowerFetch(2, 12, nowMs); // 2 is caught up, not in the ISR
        l.onLeaderAppend(20, nowMs);
        assertThat(l.highWatermark()).as("waits for caught-up 2 so that it can reach the HW and join").isEqualTo(12);
        l.setIneligibleReplicas(Set.of(2)); // e.g. its broker was fenced
        assertThat(l.onLeaderAppend(21, nowMs)).isTrue();
        assertThat(l.highWatermark()).isEqualTo(21);
    }

    @Test
    void aReplicaBackFromBeingFencedDoesNotHoldTheHighWatermarkWithWhatItFetchedBefore() {
        LeaderState l = leader(Set.of(1, 2, 3), 10, 10, 2);
        l.onFollowerFetch(2, 10, nowMs);
        l.onFollowerFetch(3, 10, nowMs); // 3 caught up, then its broker dies
        l.setIneligibleReplicas(Set.of(3));
        l.onPartitionStateChange(new LeaderAndIsr(1, 5, 11, REPLICAS, Set.of(1, 2)), nowMs);
        l.onLeaderAppend(20, nowMs);
        l.onFollowerFetch(2, 20, nowMs);
        assertThat(l.highWatermark()).isEqualTo(20);
        nowMs += 2_000; // well within replica.lag.time.max.ms of 3's last caught-up fetch
        l.setIneligibleReplicas(Set.of()); // 3's broker registered again; it has not fetched yet
        l.onLeaderAppend(30, nowMs);
        l.onFollowerFetch(2, 30, nowMs);
        assertThat(l.highWatermark()).as("the ISR {1, 2} has 30; 3's offset 10 is from before it was fenced")
                .isEqualTo(30);
        assertThat(l.isrExpandProposal(3)).as("nor may it rejoin on that old offset").isEmpty();
        l.onFollowerFetch(3, 30, nowMs);
        assertThat(l.isrExpandProposal(3)).isPresent();
    }

    @Test
    void rejectionsFollowKafkasRules() {
        LeaderState l = leader(Set.of(1, 2, 3), 10, 10, 1);
        nowMs += LAG_MS + 1;
        IsrChangeProposal shrink = l.isrShrinkProposal(nowMs).orElseThrow();
        assertThat(l.onIsrRejected(shrink, Errors.REQUEST_TIMED_OUT)).isEqualTo(LeaderState.RejectionOutcome.RETRY);
        assertThat(l.inFlightIsrChange()).containsSame(shrink);
        assertThat(l.onIsrRejected(shrink, Errors.INVALID_UPDATE_VERSION)).isEqualTo(LeaderState.RejectionOutcome.AWAIT_METADATA);
        assertThat(l.isrShrinkProposal(nowMs)).as("stuck until new metadata").isEmpty();

        // The metadata image brings partition epoch 12, where the controller removed 3 itself.
        assertThat(l.onPartitionStateChange(new LeaderAndIsr(1, 5, 12, REPLICAS, Set.of(1, 2)), nowMs)).isFalse();
        assertThat(l.inFlightIsrChange()).isEmpty();
        assertThat(l.isr()).containsExactly(1, 2);
        // A late answer to the dropped proposal changes nothing.
        assertThat(l.onIsrCommitted(shrink, new LeaderAndIsr(1, 5, 13, REPLICAS, Set.of(1)), nowMs)).isFalse();
        assertThat(l.onIsrRejected(shrink, Errors.OPERATION_NOT_ATTEMPTED)).isEqualTo(LeaderState.RejectionOutcome.IGNORED_STALE);
        assertThat(l.isr()).containsExactly(1, 2);
        assertThat(l.partitionEpoch()).isEqualTo(12);
        // An older or equal partition epoch from the metadata is ignored.
        assertThat(l.onPartitionStateChange(new LeaderAndIsr(1, 5, 12, REPLICAS, Set.of(1, 2, 3)), nowMs)).isFalse();
        assertThat(l.isr()).containsExactly(1, 2);
        assertThatThrownBy(() -> l.onPartitionStateChange(new LeaderAndIsr(1, 6, 13, REPLICAS, Set.of(1)), nowMs))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void anAnswerForAnotherLeaderEpochIsIgnored() {
        LeaderState l = leader(Set.of(1, 2, 3), 10, 10, 1);
        nowMs += LAG_MS + 1;
        IsrChangeProposal shrink = l.isrShrinkProposal(nowMs).orElseThrow();
        assertThat(l.onIsrCommitted(shrink, new LeaderAndIsr(1, 6, 11, REPLICAS, Set.of(1)), nowMs)).isFalse();
        assertThat(l.isr()).containsExactly(1, 2, 3);
        assertThat(l.inFlightIsrChange()).isPresent();
    }

    @Test
    void minInsyncReplicasRefusesAppendsAndFreezesTheHighWatermark() {
        LeaderState l = leader(Set.of(1, 2), 10, 10, 3);
        assertThat(l.checkEnoughReplicas()).isEqualTo(Errors.NOT_ENOUGH_REPLICAS);
        assertThat(l.isUnderMinIsr()).isTrue();
        // acks=1 appends still happen; under min ISR the HW does not move (Kafka 4.x, KIP-966).
        l.onLeaderAppend(15, nowMs);
        assertThat(l.onFollowerFetch(2, 15, nowMs)).isFalse();
        assertThat(l.highWatermark()).isEqualTo(10);
        // Lowering min.insync.replicas releases it.
        assertThat(l.setMinInsyncReplicas(2, nowMs)).isTrue();
        assertThat(l.highWatermark()).isEqualTo(15);
        assertThat(l.checkEnoughReplicas()).isEqualTo(Errors.NONE);
    }

    @Test
    void minInsyncReplicasIsCappedAtTheReplicationFactor() {
        LeaderState l = LeaderState.becomeLeader(1, 1, new LeaderAndIsr(1, 0, 0, List.of(1), Set.of(1)), 0, 0, 2, LAG_MS, nowMs);
        assertThat(l.checkEnoughReplicas()).isEqualTo(Errors.NONE);
        l.onLeaderAppend(3, nowMs);
        assertThat(l.ackStatus(3)).isEqualTo(AckStatus.DONE);
    }

    @Test
    void acksAllCompletesWhenTheIsrHasTheBatchOrFailsAfterAppendWhenTheIsrShrank() {
        LeaderState l = leader(Set.of(1, 2, 3), 0, 0, 2);
        assertThat(l.checkEnoughReplicas()).isEqualTo(Errors.NONE);
        l.onLeaderAppend(5, nowMs); // batch [0, 5): required offset 5
        assertThat(l.ackStatus(5)).isEqualTo(AckStatus.PENDING);
        l.onFollowerFetch(2, 5, nowMs);
        assertThat(l.ackStatus(5)).as("3 has not got it").isEqualTo(AckStatus.PENDING);
        l.onFollowerFetch(3, 5, nowMs);
        assertThat(l.ackStatus(5)).isEqualTo(AckStatus.DONE);
        assertThat(l.ackStatus(5).error()).isEqualTo(Errors.NONE);

        // A second batch is committed, then the ISR shrinks to the leader before the purgatory looks.
        l.onLeaderAppend(8, nowMs);
        l.onFollowerFetch(2, 8, nowMs);
        l.onFollowerFetch(3, 8, nowMs);
        l.onLeaderAppend(9, nowMs); // the followers fall behind from here on
        nowMs += LAG_MS + 1;
        IsrChangeProposal shrink = l.isrShrinkProposal(nowMs).orElseThrow();
        l.onIsrCommitted(shrink, new LeaderAndIsr(1, 5, 11, REPLICAS, Set.of(1)), nowMs);
        assertThat(l.ackStatus(8)).isEqualTo(AckStatus.NOT_ENOUGH_REPLICAS_AFTER_APPEND);
        assertThat(l.ackStatus(8).error()).isEqualTo(Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND);
        assertThat(l.checkEnoughReplicas()).isEqualTo(Errors.NOT_ENOUGH_REPLICAS);
    }

    @Test
    void fetchesFromStrangersAndBeyondTheLogEndAreRefused() {
        LeaderState l = leader(Set.of(1, 2, 3), 10, 10, 1);
        assertThatThrownBy(() -> l.onFollowerFetch(7, 0, nowMs)).isInstanceOf(NotLeaderOrFollowerException.class);
        assertThatThrownBy(() -> l.onFollowerFetch(1, 0, nowMs)).isInstanceOf(NotLeaderOrFollowerException.class);
        assertThatThrownBy(() -> l.onFollowerFetch(2, 11, nowMs)).isInstanceOf(OffsetOutOfRangeException.class);
        assertThatThrownBy(() -> l.onFollowerFetch(2, -1, nowMs)).isInstanceOf(OffsetOutOfRangeException.class);
        assertThatThrownBy(() -> l.onLeaderAppend(9, nowMs)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void brokerEpochsFromFetchesTravelWithTheProposal() {
        LeaderState l = leader(Set.of(1, 2), 10, 10, 1);
        l.onFollowerFetch(2, 10, 7, nowMs);
        l.onFollowerFetch(3, 10, 42, nowMs);
        IsrChangeProposal expand = l.isrExpandProposal(3).orElseThrow();
        assertThat(expand.newIsr()).containsExactly(new IsrChangeProposal.IsrMember(1, 100),
                new IsrChangeProposal.IsrMember(2, 7), new IsrChangeProposal.IsrMember(3, 42));
    }

    @Test
    void controllerChangesForTheSameLeaderEpochKeepFollowerPositions() {
        LeaderState l = leader(Set.of(1, 2, 3), 10, 10, 1);
        l.onLeaderAppend(20, nowMs);
        l.onFollowerFetch(2, 20, nowMs);
        l.onFollowerFetch(3, 12, nowMs);
        assertThat(l.highWatermark()).isEqualTo(12);
        // The controller fenced broker 3 and removed it: the HW is released at once.
        assertThat(l.onPartitionStateChange(new LeaderAndIsr(1, 5, 11, REPLICAS, Set.of(1, 2)), nowMs)).isFalse();
        l.setIneligibleReplicas(Set.of(3));
        assertThat(l.onLeaderAppend(20, nowMs)).isTrue();
        assertThat(l.highWatermark()).isEqualTo(20);
    }
}
