package dev.varve.broker.replication;

import dev.varve.metadata.PartitionState;
import dev.varve.storage.LeaderEpochCache.EpochEndOffset;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.message.AlterPartitionRequestData;
import org.apache.kafka.common.message.AlterPartitionResponseData;
import org.apache.kafka.common.protocol.Errors;

import java.util.HashSet;
import java.util.Optional;
import java.util.Set;

/**
 * One partition's replica on one broker, as a state machine over its {@link ReplicaLog}: the role the
 * metadata gives it (leader or follower, with the leader and epochs it knows), and as leader the
 * {@link LeaderState} (followers' progress, ISR, high watermark). Events in — a partition state from
 * the metadata image, a leader append, a follower's fetch, an AlterPartition answer, a shrink check —
 * and answers out (what to tell the fetcher, which ISR change to send, whether the high watermark
 * moved). The broker ({@code ClusterReplicaManager}) and the replication simulation run this same
 * object; the follower's side of a fetch is {@link FollowerReplica}.
 *
 * <p>Not thread-safe: the broker holds the partition's monitor around every call. Time is passed in.
 */
public final class PartitionReplica {
    public enum Role { LEADER, FOLLOWER }

    /** What applying a partition state did. */
    public enum Transition {
        /** Leader in a new leader epoch: a fresh {@link LeaderState}, the epoch assigned at the log end. */
        BECAME_LEADER,
        /** Follower of a new leader or leader epoch: (re)start fetching from {@link #leaderId()}. */
        BECAME_FOLLOWER,
        /** Same role, leader and leader epoch (the ISR, replicas or partition epoch may have changed). */
        UNCHANGED
    }

    /** What an AlterPartition answer did. */
    public enum IsrAnswer {
        /** Adopted (the ISR and partition epoch are the controller's now). */
        APPLIED,
        /** Not for the state this replica has now (another leader epoch, or another proposal in flight). */
        IGNORED,
        /** Refused; the proposal stays in flight and should be sent again after a back-off ({@link #shouldResend}). */
        RETRY,
        /** Refused for good or until new metadata arrives (reverted, stale, or no longer leader). */
        SETTLED
    }

    /**
     * A follower's fetch as the leader sees it: an error, a divergence (answer only it), or where to read
     * and the high watermark to send; {@code expand} is the ISR expansion to propose, if any.
     */
    public record FollowerFetch(Errors error, Optional<EpochEndOffset> diverging, long highWatermark, long logEndOffset,
                                Optional<IsrChangeProposal> expand, boolean settledIsrMember) {
        static FollowerFetch failed(Errors error) {
            return new FollowerFetch(error, Optional.empty(), -1, -1, Optional.empty(), false);
        }
    }

    private final int localId;
    private final ReplicaLog log;
    private final long replicaLagTimeMaxMs;
    private Role role;
    private int leaderId = -1;
    private int leaderEpoch = -1;
    private int partitionEpoch = -1;
    /** Non-null while leader. */
    private LeaderState leader;

    public PartitionReplica(int localId, ReplicaLog log, long replicaLagTimeMaxMs) {
        this.localId = localId;
        this.log = log;
        this.replicaLagTimeMaxMs = replicaLagTimeMaxMs;
    }

    // ---------------------------------------------------------------- metadata

    /** Whether moving to {@code state} takes this replica off its current fetcher (role, leader or epoch change). */
    public boolean needsFetcherStop(PartitionState state) {
        if (state.leader() == localId) {
            return role != Role.LEADER || leaderEpoch != state.leaderEpoch();
        }
        return role != Role.FOLLOWER || leaderEpoch != state.leaderEpoch() || leaderId != state.leader();
    }

    /**
     * Applies the partition's state from a metadata image. Becoming leader in a new leader epoch assigns
     * that epoch at the log end and starts from the high watermark the log has; a newer partition epoch
     * of the same leadership is adopted (ISR changes the controller made). As follower only the leader
     * and epochs are kept: the caller (re)starts fetching on {@link Transition#BECAME_FOLLOWER}.
     *
     * @param brokerEpoch       this broker's registered epoch (the leader's own ISR member epoch)
     * @param ineligible        brokers that may not join an ISR (fenced, shutting down)
     * @param minInsyncReplicas the topic's {@code min.insync.replicas}
     * @return what changed; call {@link #updateHighWatermark} after it
     */
    public Transition apply(PartitionState state, long brokerEpoch, Set<Integer> ineligible, int minInsyncReplicas, long nowMs) {
        if (state.leader() == localId) {
            LeaderAndIsr lai = new LeaderAndIsr(state.leader(), state.leaderEpoch(), state.partitionEpoch(), state.replicas(),
                    new HashSet<>(state.isr()));
            boolean becoming = needsFetcherStop(state);
            if (becoming) {
                long leo = log.logEndOffset();
                log.assignEpoch(state.leaderEpoch(), leo);
                leader = LeaderState.becomeLeader(localId, brokerEpoch, lai, leo, Math.min(log.highWatermark(), leo),
                        minInsyncReplicas, replicaLagTimeMaxMs, nowMs);
                role = Role.LEADER;
            } else if (state.partitionEpoch() > partitionEpoch) {
                leader.onPartitionStateChange(lai, nowMs);
            }
            refresh(ineligible, minInsyncReplicas, nowMs);
            leaderId = localId;
            leaderEpoch = state.leaderEpoch();
            partitionEpoch = state.partitionEpoch();
            return becoming ? Transition.BECAME_LEADER : Transition.UNCHANGED;
        }
        boolean changed = needsFetcherStop(state);
        if (changed) {
            leader = null;
            role = Role.FOLLOWER;
            leaderId = state.leader();
            leaderEpoch = state.leaderEpoch();
        }
        partitionEpoch = state.partitionEpoch();
        return changed ? Transition.BECAME_FOLLOWER : Transition.UNCHANGED;
    }

    /**
     * A leader whose partition state did not change follows new broker eligibility and
     * {@code min.insync.replicas}; call {@link #updateHighWatermark} after it.
     */
    public void refresh(Set<Integer> ineligible, int minInsyncReplicas, long nowMs) {
        if (leader != null) {
            leader.setIneligibleReplicas(ineligible);
            leader.setMinInsyncReplicas(minInsyncReplicas, nowMs);
        }
    }

    /** The replica is no longer held here (deleted, moved away, broker stopping). */
    public void stop() {
        leader = null;
        role = null;
    }

    /**
     * Copies the leader's high watermark into the log when it moved up; call after every event that can
     * move it. A leader's high watermark never goes back.
     *
     * @return whether it moved (fetches waiting for it may complete)
     */
    public boolean updateHighWatermark() {
        if (leader == null) {
            return false;
        }
        long hw = leader.highWatermark();
        if (hw > log.highWatermark()) {
            log.updateHighWatermark(hw);
            return true;
        }
        return false;
    }

    // ---------------------------------------------------------------- produce

    /** Whether this replica may append now: NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS (acks=all under min ISR) or NONE. */
    public Errors checkAppend(boolean acksAll) {
        if (role != Role.LEADER) {
            return Errors.NOT_LEADER_OR_FOLLOWER;
        }
        if (acksAll && leader.checkEnoughReplicas() != Errors.NONE) {
            return Errors.NOT_ENOUGH_REPLICAS;
        }
        return Errors.NONE;
    }

    /** The caller appended at the log end with {@link #leaderEpoch()}; call {@link #updateHighWatermark} after it. */
    public void onLeaderAppend(long nowMs) {
        leader.onLeaderAppend(log.logEndOffset(), nowMs);
    }

    /**
     * Where an acks=all append made in leader epoch {@code appendEpoch}, ending at {@code requiredOffset},
     * stands. Once this replica leads in another epoch (or not at all) the append may have been truncated
     * away and the offsets reused: {@link AckStatus#NOT_LEADER}, whatever the new high watermark says.
     */
    public AckStatus ackStatus(int appendEpoch, long requiredOffset) {
        if (role != Role.LEADER || leaderEpoch != appendEpoch) {
            return AckStatus.NOT_LEADER;
        }
        return leader.ackStatus(requiredOffset);
    }

    /**
     * Whether a DeleteRecords made as leader in {@code leaderEpoch} up to {@code offset} is done: every
     * live replica's log starts at or after it (NONE), or this broker no longer leads in that epoch
     * (NOT_LEADER); null while it waits.
     */
    public Errors lowWatermarkStatus(int leaderEpoch, long offset) {
        if (role != Role.LEADER || this.leaderEpoch != leaderEpoch) {
            return Errors.NOT_LEADER_OR_FOLLOWER;
        }
        return leader.lowWatermark(log.logStartOffset()) >= offset ? Errors.NONE : null;
    }

    // ---------------------------------------------------------------- follower fetches (leader side)

    /**
     * A follower's fetch: checks leadership and the follower's current leader epoch (KIP-320), answers a
     * divergence when the follower's last fetched epoch ends earlier here, else records the follower's
     * position (which may move the high watermark, and propose an ISR expansion). Call
     * {@link #updateHighWatermark} after it: whether it moved is what wakes waiting fetches and acks.
     */
    public FollowerFetch followerFetch(int replicaId, long replicaBrokerEpoch, int currentLeaderEpoch, long fetchOffset,
                                       int lastFetchedEpoch, long nowMs) {
        return followerFetch(replicaId, replicaBrokerEpoch, currentLeaderEpoch, fetchOffset, lastFetchedEpoch,
                LeaderState.UNKNOWN_OFFSET, nowMs);
    }

    /**
     * As {@link #followerFetch(int, long, int, long, int, long)}, with the log start offset the
     * follower stated ({@link LeaderState#UNKNOWN_OFFSET} if none), which moves the {@link #lowWatermark}.
     */
    public FollowerFetch followerFetch(int replicaId, long replicaBrokerEpoch, int currentLeaderEpoch, long fetchOffset,
                                       int lastFetchedEpoch, long followerLogStartOffset, long nowMs) {
        return followerFetch(replicaId, replicaBrokerEpoch, currentLeaderEpoch, fetchOffset, lastFetchedEpoch,
                followerLogStartOffset, nowMs, LeaderState.NEVER_MS);
    }

    /**
     * As {@link #followerFetch(int, long, int, long, int, long, long)}, for a fetch held unread since
     * {@code caughtUpAtMs} ({@link LeaderState#onFollowerFetch(int, long, long, long, long)}).
     */
    public FollowerFetch followerFetch(int replicaId, long replicaBrokerEpoch, int currentLeaderEpoch, long fetchOffset,
                                       int lastFetchedEpoch, long followerLogStartOffset, long nowMs, long caughtUpAtMs) {
        if (role != Role.LEADER) {
            return FollowerFetch.failed(Errors.NOT_LEADER_OR_FOLLOWER);
        }
        Errors fenced = EpochFencing.validate(currentLeaderEpoch, leaderEpoch);
        if (fenced != Errors.NONE) {
            return FollowerFetch.failed(fenced);
        }
        long leo = log.logEndOffset();
        try {
            Optional<EpochEndOffset> diverging = EpochEndOffsets.divergingEpoch(log.latestEpoch(), log::epochEntries, leo,
                    lastFetchedEpoch, fetchOffset);
            if (diverging.isPresent()) {
                return new FollowerFetch(Errors.NONE, diverging, leader.highWatermark(), leo, Optional.empty(), false);
            }
            leader.onFollowerFetch(replicaId, fetchOffset, replicaBrokerEpoch, nowMs, caughtUpAtMs);
            leader.onFollowerLogStartOffset(replicaId, followerLogStartOffset);
        } catch (ApiException e) {
            return FollowerFetch.failed(Errors.forException(e));
        }
        Optional<IsrChangeProposal> expand = leader.isrExpandProposal(replicaId);
        return new FollowerFetch(Errors.NONE, Optional.empty(), leader.highWatermark(), leo, expand,
                leader.isSettledIsrMember(replicaId));
    }

    // ---------------------------------------------------------------- ISR changes

    /** The ISR shrink to propose now (followers out of sync for longer than the lag time), if any. */
    public Optional<IsrChangeProposal> isrShrinkProposal(long nowMs) {
        return leader == null ? Optional.empty() : leader.isrShrinkProposal(nowMs);
    }

    /**
     * The controller's answer to {@code proposal}: {@code error} is the partition's (or the request's)
     * error, {@code answer} the partition's committed state when NONE. Call {@link #updateHighWatermark}
     * after it (a committed shrink may release the high watermark).
     */
    public IsrAnswer onIsrAnswer(IsrChangeProposal proposal, Errors error, AlterPartitionResponseData.PartitionData answer,
                                 long nowMs) {
        if (leader == null) {
            return IsrAnswer.SETTLED;
        }
        if (error == Errors.NONE) {
            boolean inFlight = shouldResend(proposal);
            try {
                LeaderAndIsr committed = new LeaderAndIsr(answer.leaderId(), answer.leaderEpoch(), answer.partitionEpoch(),
                        leader.replicas(), new HashSet<>(answer.isr()));
                leader.onIsrCommitted(proposal, committed, nowMs);
            } catch (IllegalArgumentException e) {
                return IsrAnswer.IGNORED; // not a state a leader can adopt (e.g. this broker not in it)
            }
            // Follow the leader state, not the answer: it ignores the answer to a proposal it no longer has in
            // flight, and must then get this partition epoch from the metadata image (apply() only passes it on
            // when it is newer than the partition epoch known here).
            partitionEpoch = Math.max(partitionEpoch, leader.partitionEpoch());
            return inFlight && !shouldResend(proposal) ? IsrAnswer.APPLIED : IsrAnswer.IGNORED;
        }
        return leader.onIsrRejected(proposal, error) == LeaderState.RejectionOutcome.RETRY ? IsrAnswer.RETRY : IsrAnswer.SETTLED;
    }

    /** The AlterPartition request entry for {@code proposal} (members with their broker epochs, KIP-903). */
    public static AlterPartitionRequestData.PartitionData alterPartitionData(int partitionIndex, IsrChangeProposal proposal) {
        AlterPartitionRequestData.PartitionData pd = new AlterPartitionRequestData.PartitionData()
                .setPartitionIndex(partitionIndex)
                .setLeaderEpoch(proposal.leaderEpoch())
                .setPartitionEpoch(proposal.partitionEpoch());
        for (IsrChangeProposal.IsrMember m : proposal.newIsr()) {
            pd.newIsrWithEpochs().add(new AlterPartitionRequestData.BrokerState().setBrokerId(m.brokerId())
                    .setBrokerEpoch(m.brokerEpoch()));
        }
        return pd;
    }

    /** Whether a refused {@code proposal} is still the one in flight (a retry of anything else would be stale). */
    public boolean shouldResend(IsrChangeProposal proposal) {
        return leader != null && leader.inFlightIsrChange().orElse(null) == proposal;
    }

    // ---------------------------------------------------------------- queries

    public Role role() {
        return role;
    }

    public boolean isLeader() {
        return role == Role.LEADER;
    }

    public int leaderId() {
        return leaderId;
    }

    public int leaderEpoch() {
        return leaderEpoch;
    }

    public int partitionEpoch() {
        return partitionEpoch;
    }

    /** The leader state while leading, else null. */
    public LeaderState leader() {
        return leader;
    }

    public ReplicaLog log() {
        return log;
    }

    @Override
    public String toString() {
        return role + " leader=" + leaderId + " epoch=" + leaderEpoch + "/" + partitionEpoch + (leader != null ? " " + leader : "");
    }
}
