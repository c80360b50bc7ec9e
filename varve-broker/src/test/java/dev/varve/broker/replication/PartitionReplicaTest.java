package dev.varve.broker.replication;

import dev.varve.metadata.PartitionState;
import org.apache.kafka.common.message.AlterPartitionResponseData;
import org.apache.kafka.common.protocol.Errors;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The replica state machine the broker and the simulation share ({@link PartitionReplica}), on the
 * simulation's in-memory log: the rules a single history pins down exactly.
 */
class PartitionReplicaTest {
    private static final int ME = 0;
    private static final long LAG_MS = 100;
    private static final long BROKER_EPOCH = 7;

    private final SimLog log = new SimLog();
    private final PartitionReplica replica = new PartitionReplica(ME, log, LAG_MS);
    private long now = 1_000;

    private static PartitionState state(int leader, int leaderEpoch, int partitionEpoch, List<Integer> isr) {
        return new PartitionState(0, List.of(0, 1, 2), isr, List.of(), List.of(), leader, leaderEpoch, partitionEpoch);
    }

    private void append(int count) {
        assertThat(replica.checkAppend(true)).isEqualTo(Errors.NONE);
        long base = log.leo();
        List<SimLog.Rec> batch = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            batch.add(new SimLog.Rec(base + i, replica.leaderEpoch(), base + i, base, base + count));
        }
        log.appendBatch(batch);
        replica.onLeaderAppend(now);
        replica.updateHighWatermark();
    }

    /** Both followers fetch at {@code offset} in the replica's current epoch. */
    private void followersAt(long offset) {
        for (int follower = 1; follower <= 2; follower++) {
            PartitionReplica.FollowerFetch f = replica.followerFetch(follower, BROKER_EPOCH, replica.leaderEpoch(), offset,
                    log.latestEpochOrUndefined(), now);
            assertThat(f.error()).isEqualTo(Errors.NONE);
            replica.updateHighWatermark();
        }
    }

    @Test
    void becomingLeaderAssignsTheEpochAtTheLogEndAndKeepsTheLogsHighWatermark() {
        assertThat(replica.apply(state(ME, 3, 3, List.of(0, 1, 2)), BROKER_EPOCH, Set.of(), 2, now))
                .isEqualTo(PartitionReplica.Transition.BECAME_LEADER);
        append(4);
        followersAt(4);
        assertThat(log.highWatermark).isEqualTo(4);
        assertThat(log.epochs).extracting(e -> e.epoch() + "@" + e.startOffset()).containsExactly("3@0");

        // the same leadership with a newer partition epoch is no transition
        assertThat(replica.apply(state(ME, 3, 4, List.of(0, 1)), BROKER_EPOCH, Set.of(), 2, now))
                .isEqualTo(PartitionReplica.Transition.UNCHANGED);
        assertThat(replica.leader().isr()).containsExactlyInAnyOrder(0, 1);
    }

    /**
     * An acks=all append of leader epoch 1 is truncated away after this broker lost leadership; it leads
     * again in epoch 3, writes other records at the same offsets and its high watermark passes them. The
     * old wait must not be acknowledged: it answers NOT_LEADER_OR_FOLLOWER (the client retries).
     */
    @Test
    void aLaterEpochsHighWatermarkNeverAcknowledgesAnAppendOfAnEarlierEpoch() {
        replica.apply(state(ME, 1, 1, List.of(0, 1, 2)), BROKER_EPOCH, Set.of(), 2, now);
        append(2);
        followersAt(2);
        append(3); // offsets 2..4, epoch 1, on no follower yet
        int appendEpoch = replica.leaderEpoch();
        assertThat(replica.ackStatus(appendEpoch, 5)).isEqualTo(AckStatus.PENDING);

        // broker 1 is elected in epoch 2 with only offsets 0..1; this broker follows and truncates
        assertThat(replica.apply(state(1, 2, 2, List.of(0, 1, 2)), BROKER_EPOCH, Set.of(), 2, now))
                .isEqualTo(PartitionReplica.Transition.BECAME_FOLLOWER);
        FollowerReplica.truncateOnDivergence(log, new dev.varve.storage.LeaderEpochCache.EpochEndOffset(1, 2));
        assertThat(log.leo()).isEqualTo(2);
        log.appendBatch(List.of(new SimLog.Rec(2, 2, 100, 2, 5), new SimLog.Rec(3, 2, 101, 2, 5), new SimLog.Rec(4, 2, 102, 2, 5)));

        // and leads again in epoch 3; the followers have everything, the high watermark passes offset 5
        replica.apply(state(ME, 3, 3, List.of(0, 1, 2)), BROKER_EPOCH, Set.of(), 2, now);
        followersAt(5);
        assertThat(log.highWatermark).isEqualTo(5);
        assertThat(replica.ackStatus(3, 5)).isEqualTo(AckStatus.DONE);
        assertThat(replica.ackStatus(appendEpoch, 5)).isEqualTo(AckStatus.NOT_LEADER);
        assertThat(AckStatus.NOT_LEADER.error()).isEqualTo(Errors.NOT_LEADER_OR_FOLLOWER);
    }

    @Test
    void aRefusedIsrChangeIsResentOnlyWhileItIsStillInFlight() {
        replica.apply(state(ME, 1, 1, List.of(0, 1, 2)), BROKER_EPOCH, Set.of(), 1, now);
        append(1);
        now += LAG_MS * 3; // followers silent: both lag
        IsrChangeProposal shrink = replica.isrShrinkProposal(now).orElseThrow();
        assertThat(replica.onIsrAnswer(shrink, Errors.REQUEST_TIMED_OUT, null, now)).isEqualTo(PartitionReplica.IsrAnswer.RETRY);
        assertThat(replica.shouldResend(shrink)).isTrue();

        // a new leadership replaces the proposal: a retry scheduled before must not send it
        replica.apply(state(ME, 2, 2, List.of(0, 1, 2)), BROKER_EPOCH, Set.of(), 1, now);
        assertThat(replica.shouldResend(shrink)).isFalse();
        // and its late answer is ignored, the new leadership's partition epoch kept
        AlterPartitionResponseData.PartitionData late = new AlterPartitionResponseData.PartitionData()
                .setLeaderId(ME).setLeaderEpoch(1).setPartitionEpoch(2).setIsr(List.of(0));
        assertThat(replica.onIsrAnswer(shrink, Errors.NONE, late, now)).isEqualTo(PartitionReplica.IsrAnswer.IGNORED);
        assertThat(replica.leader().isr()).containsExactlyInAnyOrder(0, 1, 2);
    }

    @Test
    void aCommittedShrinkIsAdoptedAndReleasesTheHighWatermark() {
        replica.apply(state(ME, 1, 1, List.of(0, 1, 2)), BROKER_EPOCH, Set.of(), 1, now);
        append(2);
        now += LAG_MS * 3;
        IsrChangeProposal shrink = replica.isrShrinkProposal(now).orElseThrow();
        AlterPartitionResponseData.PartitionData committed = new AlterPartitionResponseData.PartitionData()
                .setLeaderId(ME).setLeaderEpoch(1).setPartitionEpoch(2).setIsr(List.of(0));
        assertThat(replica.onIsrAnswer(shrink, Errors.NONE, committed, now)).isEqualTo(PartitionReplica.IsrAnswer.APPLIED);
        assertThat(replica.updateHighWatermark()).isTrue();
        assertThat(log.highWatermark).isEqualTo(2);
        assertThat(replica.partitionEpoch()).isEqualTo(2);
    }

    @Test
    void aFollowerWhoseLastEpochEndsEarlierHereGetsTheDivergenceAndNoProgress() {
        log.assignEpoch(1, 0);
        log.appendBatch(List.of(new SimLog.Rec(0, 1, 1, 0, 2), new SimLog.Rec(1, 1, 2, 0, 2)));
        replica.apply(state(ME, 3, 3, List.of(0, 1, 2)), BROKER_EPOCH, Set.of(), 2, now);
        // the follower wrote epoch 2 (a leader this one never saw) from offset 2 to 6
        PartitionReplica.FollowerFetch f = replica.followerFetch(1, BROKER_EPOCH, 3, 6, 2, now);
        assertThat(f.diverging()).hasValueSatisfying(d -> {
            assertThat(d.epoch()).isEqualTo(1);
            assertThat(d.endOffset()).isEqualTo(2);
        });
        assertThat(replica.updateHighWatermark()).as("a diverging follower's offset moves nothing").isFalse();
        assertThat(replica.followerFetch(1, BROKER_EPOCH, 2, 2, 1, now).error()).isEqualTo(Errors.FENCED_LEADER_EPOCH);
        assertThat(replica.followerFetch(1, BROKER_EPOCH, 4, 2, 1, now).error()).isEqualTo(Errors.UNKNOWN_LEADER_EPOCH);
        assertThat(replica.followerFetch(1, BROKER_EPOCH, 3, 2, 1, now).expand()).isEqualTo(Optional.empty());
    }

    @Test
    void outOfRangeFollowsTheLeadersEnd() {
        log.assignEpoch(1, 0);
        log.appendBatch(List.of(new SimLog.Rec(0, 1, 1, 0, 3), new SimLog.Rec(1, 1, 2, 0, 3), new SimLog.Rec(2, 1, 3, 0, 3)));
        assertThat(FollowerReplica.resolveOutOfRange(log, 0, 5)).isEqualTo(FollowerReplica.OutOfRange.RETRY);
        assertThat(FollowerReplica.resolveOutOfRange(log, 0, 0)).isEqualTo(FollowerReplica.OutOfRange.TRUNCATED_TO_LEADER_END);
        assertThat(log.leo()).isZero();
    }
}
