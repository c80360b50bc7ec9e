package dev.varve.broker.replication;

import org.apache.kafka.common.errors.NotLeaderOrFollowerException;
import org.apache.kafka.common.errors.OffsetOutOfRangeException;
import org.apache.kafka.common.protocol.Errors;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

/**
 * The replication state of one partition on its leader, for one leader epoch: the followers' fetch
 * positions, the ISR and the ISR change in flight, and the high watermark derived from them. Pure: it
 * is driven by events ({@link #onLeaderAppend}, {@link #onFollowerFetch}, AlterPartition answers,
 * metadata changes) and a clock passed in as {@code nowMs}; it does no I/O and keeps no threads.
 *
 * <h2>High watermark</h2>
 * <pre>
 *   HW = min(leader LEO, LEO of every follower in the maximal ISR,
 *            LEO of every eligible follower that is caught up but not in the ISR yet)
 * </pre>
 * and it only ever moves forward ({@link #highWatermark()} never decreases for one instance). It does
 * not move at all while the <em>committed</em> ISR is smaller than {@code min.insync.replicas}
 * (capped at the replication factor), as in Kafka 4.x (KIP-966): a record is only ever exposed to
 * consumers once {@code min.insync.replicas} replicas hold it. A follower's LEO is the offset of its
 * last fetch (what it had when it asked), so records in a fetch response count from the next fetch.
 * A follower that has not fetched in this leader epoch has an unknown LEO and holds the HW where it
 * is, never below it.
 *
 * <h2>ISR and the maximal ISR (KIP-497)</h2>
 * The ISR changes only through the controller: {@link #isrShrinkProposal} and
 * {@link #isrExpandProposal} return an AlterPartition proposal and mark it in flight; while one is in
 * flight no other is made. Until the controller answers, the HW and {@code acks=all} use the
 * <em>maximal</em> ISR: the committed ISR plus a joining replica (an expansion in flight already holds
 * the HW back for it), but never minus a leaving one (a shrink only takes effect once committed), so a
 * failed or lost AlterPartition can never have let the HW pass a replica that is still in the ISR.
 * {@code checkEnoughReplicas} (before an append) uses the committed ISR, as Kafka does.
 *
 * <h2>Caught up and lagging (Kafka semantics)</h2>
 * A follower is caught up at a fetch if its fetch offset reaches the leader's LEO at that moment, or
 * reaches the leader's LEO as of its previous fetch (then it was caught up at the time of that
 * previous fetch). It is out of sync when it is not at the leader's LEO and was last caught up more
 * than {@code replica.lag.time.max.ms} ago: that covers stuck followers (no fetches) and slow ones
 * (fetching but never reaching the end). When this leader epoch starts, ISR members count as caught
 * up "now" (a grace period to fetch), others as never.
 *
 * <p>A replica may rejoin the ISR once its LEO is at least the HW and at least the start offset of
 * this leader epoch (so it has truncated against this leader's log and holds everything committed).
 *
 * <h2>Usage by the broker</h2>
 * <ul>
 *   <li>becoming leader: assign the epoch in the log's epoch cache at the log end, then
 *       {@link #becomeLeader}; answer pending {@code acks=all} requests of an older instance with
 *       NOT_LEADER_OR_FOLLOWER;</li>
 *   <li>produce: {@link #checkEnoughReplicas()} before appending with {@code acks=all}, then
 *       {@link #onLeaderAppend} with the new log end; complete delayed produces with
 *       {@link #ackStatus(long)} (REQUEST_TIMED_OUT when the purgatory times them out);</li>
 *   <li>follower fetch: validate the epoch ({@link EpochFencing}) and the fetch position
 *       ({@link EpochEndOffsets#divergingEpoch}); if not diverging, {@link #onFollowerFetch}, then
 *       {@link #isrExpandProposal}; answer with {@link #highWatermark()} and copy it into the log;</li>
 *   <li>periodically (Kafka: every {@code replica.lag.time.max.ms / 2}): {@link #isrShrinkProposal};</li>
 *   <li>AlterPartition answers: {@link #onIsrCommitted} / {@link #onIsrRejected}; a newer partition
 *       epoch for the same leader epoch from the metadata image: {@link #onPartitionStateChange}.</li>
 * </ul>
 * Whenever a method returns {@code true} ("the HW moved"), the broker writes the new HW into the
 * partition log and completes delayed produce and fetch requests.
 *
 * <p>Thread-safety: not thread-safe. The broker calls it under the partition's lock (or from the
 * partition's serial executor); every method is O(replicas).
 */
public final class LeaderState {
    /** An offset not known yet (a follower that has not fetched in this leader epoch). */
    public static final long UNKNOWN_OFFSET = -1L;
    /** A time that has not happened (never fetched, never caught up). */
    public static final long NEVER_MS = Long.MIN_VALUE;

    /** What to do after the controller refused an AlterPartition ({@link #onIsrRejected}). */
    public enum RejectionOutcome {
        /** The answer belongs to a proposal that is no longer in flight: nothing changed. */
        IGNORED_STALE,
        /** The controller says the change was not applied: back to the committed ISR, new proposals allowed. */
        REVERTED,
        /**
         * This leader's view is stale (fenced leader epoch, stale partition epoch, unknown partition):
         * the proposal stays in flight, so no other is made, until {@link #onPartitionStateChange} or
         * a new leader epoch replaces this state.
         */
        AWAIT_METADATA,
        /** A transient error: send the same proposal again. */
        RETRY
    }

    private final int localReplicaId;
    private final long localBrokerEpoch;
    private final int leaderEpoch;
    private final long leaderEpochStartOffset;
    private final long replicaLagTimeMaxMs;

    private int partitionEpoch;
    private List<Integer> replicas;
    private Set<Integer> committedIsr;
    /**
     * committedIsr's ids in an array: every follower fetch asks whether its replica is in the ISR, and on a
     * broker following thousands of partitions the set's boxed nodes cost a cache miss each.
     */
    private int[] committedIsrIds;
    /** The AlterPartition in flight, or null. */
    private IsrChangeProposal inFlight;
    /** committedIsr, plus a replica joining through {@link #inFlight}. */
    private Set<Integer> maximalIsr;
    private final Map<Integer, FollowerState> followers = new LinkedHashMap<>();
    private Set<Integer> ineligibleReplicas = Set.of();
    private int minInsyncReplicas;

    private long logEndOffset;
    private long highWatermark;

    private LeaderState(int localReplicaId, long localBrokerEpoch, LeaderAndIsr state, long logEndOffset, long highWatermark,
                        int minInsyncReplicas, long replicaLagTimeMaxMs) {
        this.localReplicaId = localReplicaId;
        this.localBrokerEpoch = localBrokerEpoch;
        this.leaderEpoch = state.leaderEpoch();
        this.partitionEpoch = state.partitionEpoch();
        this.leaderEpochStartOffset = logEndOffset;
        this.logEndOffset = logEndOffset;
        this.highWatermark = highWatermark;
        this.minInsyncReplicas = minInsyncReplicas;
        this.replicaLagTimeMaxMs = replicaLagTimeMaxMs;
        this.replicas = state.replicas();
        this.committedIsr = state.isr();
        this.committedIsrIds = ids(committedIsr);
        this.maximalIsr = committedIsr;
    }

    /**
     * The state of a replica that has just become leader of a partition in a new leader epoch.
     *
     * @param localReplicaId      this broker's id; must be {@code state.leaderId()}
     * @param localBrokerEpoch    this broker's epoch (sent with the leader's own ISR entry; -1 if unknown)
     * @param state               the committed leadership from the metadata image
     * @param logEndOffset        the local log end offset now; it is also the start offset of this leader
     *                            epoch, which the caller assigns in the log's epoch cache
     * @param highWatermark       the local log's high watermark (the last one learned as a follower); the
     *                            leader starts from it and moves it on as followers fetch
     * @param minInsyncReplicas   the topic's {@code min.insync.replicas}
     * @param replicaLagTimeMaxMs the broker's {@code replica.lag.time.max.ms}
     * @param nowMs               the current time
     */
    public static LeaderState becomeLeader(int localReplicaId, long localBrokerEpoch, LeaderAndIsr state, long logEndOffset,
                                           long highWatermark, int minInsyncReplicas, long replicaLagTimeMaxMs, long nowMs) {
        if (state.leaderId() != localReplicaId) {
            throw new IllegalArgumentException("broker " + localReplicaId + " is not the leader in " + state);
        }
        if (highWatermark < 0 || highWatermark > logEndOffset) {
            throw new IllegalArgumentException("high watermark " + highWatermark + " outside [0, " + logEndOffset + "]");
        }
        if (minInsyncReplicas < 1 || replicaLagTimeMaxMs < 0) {
            throw new IllegalArgumentException("min.insync.replicas=" + minInsyncReplicas + ", replica.lag.time.max.ms=" + replicaLagTimeMaxMs);
        }
        LeaderState leader = new LeaderState(localReplicaId, localBrokerEpoch, state, logEndOffset, highWatermark,
                minInsyncReplicas, replicaLagTimeMaxMs);
        for (int replica : state.replicas()) {
            if (replica != localReplicaId) {
                FollowerState follower = new FollowerState();
                if (state.isr().contains(replica)) {
                    follower.lastCaughtUpTimeMs = nowMs; // a grace period to fetch from the new leader
                }
                leader.followers.put(replica, follower);
            }
        }
        leader.maybeIncrementHighWatermark(nowMs);
        return leader;
    }

    // ---------------------------------------------------------------- events

    /**
     * The leader appended to its log.
     *
     * @param newLogEndOffset the leader's log end offset after the append (never smaller than before:
     *                        a leader does not truncate its log)
     * @return whether the high watermark moved (possible when the ISR is the leader alone)
     */
    public boolean onLeaderAppend(long newLogEndOffset, long nowMs) {
        if (newLogEndOffset < logEndOffset) {
            throw new IllegalArgumentException("leader log end went back from " + logEndOffset + " to " + newLogEndOffset);
        }
        logEndOffset = newLogEndOffset;
        return maybeIncrementHighWatermark(nowMs);
    }

    /** Same as {@link #onFollowerFetch(int, long, long, long)} with an unknown broker epoch. */
    public boolean onFollowerFetch(int replicaId, long fetchOffset, long nowMs) {
        return onFollowerFetch(replicaId, fetchOffset, -1L, nowMs);
    }

    /**
     * A follower fetched at {@code fetchOffset}: it has every record below it. Call it only after the
     * fetch passed the epoch checks and was found not to diverge from this log
     * ({@link EpochEndOffsets#divergingEpoch}); a diverging follower's offset means nothing here.
     *
     * @param replicaId   the follower's broker id (the request's replica id)
     * @param fetchOffset the fetch offset, i.e. the follower's log end offset
     * @param brokerEpoch the follower's broker epoch from the request (KIP-903), {@code -1} if absent
     * @return whether the high watermark moved
     * @throws NotLeaderOrFollowerException {@code replicaId} is not a follower of this partition
     * @throws OffsetOutOfRangeException    {@code fetchOffset} is negative or beyond the leader's log end
     */
    public boolean onFollowerFetch(int replicaId, long fetchOffset, long brokerEpoch, long nowMs) {
        return onFollowerFetch(replicaId, fetchOffset, brokerEpoch, nowMs, NEVER_MS);
    }

    /**
     * As {@link #onFollowerFetch(int, long, long, long)}, for a fetch the leader held without reading it
     * since {@code caughtUpAtMs}: the follower was then at this leader's log end (its session unchanged
     * since a read that found it there, and nothing appended since), which counts as caught up at that
     * time ({@link #NEVER_MS} for none).
     */
    public boolean onFollowerFetch(int replicaId, long fetchOffset, long brokerEpoch, long nowMs, long caughtUpAtMs) {
        FollowerState follower = followers.get(replicaId);
        if (follower == null) {
            throw new NotLeaderOrFollowerException("broker " + replicaId + " is not a follower of this partition (replicas "
                    + replicas + ", leader " + localReplicaId + ")");
        }
        if (fetchOffset < 0 || fetchOffset > logEndOffset) {
            throw new OffsetOutOfRangeException("fetch offset " + fetchOffset + " of follower " + replicaId
                    + " is outside [0, " + logEndOffset + "]");
        }
        if (caughtUpAtMs != NEVER_MS) {
            follower.lastCaughtUpTimeMs = Math.max(follower.lastCaughtUpTimeMs, Math.min(caughtUpAtMs, nowMs));
        }
        follower.onFetch(fetchOffset, logEndOffset, brokerEpoch, nowMs);
        return maybeIncrementHighWatermark(nowMs);
    }

    /**
     * Proposes removing the ISR followers that are out of sync at {@code nowMs} (see the class
     * comment), if no ISR change is in flight. The returned proposal is in flight from now on: the
     * caller sends it to the controller. The HW ignores the leaving replicas only once the shrink
     * is committed. Kafka shrinks even below {@code min.insync.replicas}; so does this.
     */
    public Optional<IsrChangeProposal> isrShrinkProposal(long nowMs) {
        if (inFlight != null) {
            return Optional.empty();
        }
        Set<Integer> outOfSync = outOfSyncReplicas(nowMs);
        if (outOfSync.isEmpty()) {
            return Optional.empty();
        }
        Set<Integer> newIsr = new TreeSet<>(committedIsr);
        newIsr.removeAll(outOfSync);
        inFlight = proposal(IsrChangeProposal.Kind.SHRINK, newIsr, outOfSync);
        maximalIsr = committedIsr; // a shrink holds nothing back before it is committed, and releases nothing either
        return Optional.of(inFlight);
    }

    /**
     * Proposes adding {@code replicaId} to the ISR if it may rejoin: it is an eligible follower outside
     * the committed ISR, no ISR change is in flight, and its LEO is at least the HW and at least
     * the start offset of this leader epoch. The returned proposal is in flight from now on, and the
     * HW already waits for the joining replica (maximal ISR).
     */
    public Optional<IsrChangeProposal> isrExpandProposal(int replicaId) {
        if (inFlight != null || inCommittedIsr(replicaId) || ineligibleReplicas.contains(replicaId)) {
            return Optional.empty();
        }
        FollowerState follower = followers.get(replicaId);
        if (follower == null || !mayJoinIsr(follower)) {
            return Optional.empty();
        }
        Set<Integer> newIsr = new TreeSet<>(committedIsr);
        newIsr.add(replicaId);
        inFlight = proposal(IsrChangeProposal.Kind.EXPAND, newIsr, Set.of(replicaId));
        maximalIsr = Collections.unmodifiableSet(newIsr);
        return Optional.of(inFlight);
    }

    /**
     * The controller committed {@code proposal}; {@code committed} is the state it answered with (its
     * ISR may differ from the proposal's: the controller's word wins). Ignored (returns false) when the
     * proposal is no longer in flight, the answer carries another leader epoch, or a partition epoch
     * older than the one known.
     *
     * @return whether the high watermark moved (a committed shrink may release it)
     */
    public boolean onIsrCommitted(IsrChangeProposal proposal, LeaderAndIsr committed, long nowMs) {
        if (proposal != inFlight || committed.leaderEpoch() != leaderEpoch || committed.leaderId() != localReplicaId
                || committed.partitionEpoch() < partitionEpoch) {
            return false;
        }
        adopt(committed, nowMs);
        return maybeIncrementHighWatermark(nowMs);
    }

    /**
     * The controller refused {@code proposal} with {@code error} (an AlterPartition partition error, or
     * the request's error). Follows Kafka's handling: OPERATION_NOT_ATTEMPTED and INELIGIBLE_REPLICA
     * mean the controller did not apply it and our partition epoch is current, so the committed ISR is
     * restored; FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION, UNKNOWN_TOPIC_OR_PARTITION,
     * UNKNOWN_TOPIC_ID, NEW_LEADER_ELECTED and INVALID_REQUEST mean our view is stale, so the proposal
     * stays in flight until new metadata arrives; anything else is retried.
     */
    public RejectionOutcome onIsrRejected(IsrChangeProposal proposal, Errors error) {
        if (proposal != inFlight) {
            return RejectionOutcome.IGNORED_STALE;
        }
        switch (error) {
            case OPERATION_NOT_ATTEMPTED, INELIGIBLE_REPLICA -> {
                inFlight = null;
                maximalIsr = committedIsr;
                return RejectionOutcome.REVERTED;
            }
            case FENCED_LEADER_EPOCH, INVALID_UPDATE_VERSION, UNKNOWN_TOPIC_OR_PARTITION, UNKNOWN_TOPIC_ID,
                 NEW_LEADER_ELECTED, INVALID_REQUEST -> {
                return RejectionOutcome.AWAIT_METADATA;
            }
            case NONE -> throw new IllegalArgumentException("NONE is not a rejection");
            default -> {
                return RejectionOutcome.RETRY;
            }
        }
    }

    /**
     * The metadata image shows a newer partition epoch for this leader epoch (the controller changed
     * the ISR or the replicas itself, e.g. it removed a fenced broker, or the answer to our
     * AlterPartition arrived through the metadata first). Adopts it and drops any proposal in flight.
     * Ignored (false) when the partition epoch is not newer than the one known.
     *
     * @return whether the high watermark moved
     * @throws IllegalArgumentException the state is for another leader or leader epoch: that is a
     *                                  leadership change, which replaces this object
     */
    public boolean onPartitionStateChange(LeaderAndIsr state, long nowMs) {
        if (state.leaderEpoch() != leaderEpoch || state.leaderId() != localReplicaId) {
            throw new IllegalArgumentException("leadership changed to " + state + ": build a new state");
        }
        if (state.partitionEpoch() <= partitionEpoch) {
            return false;
        }
        adopt(state, nowMs);
        return maybeIncrementHighWatermark(nowMs);
    }

    /**
     * Sets the topic's {@code min.insync.replicas} (a dynamic config).
     *
     * @return whether the high watermark moved (lowering it may release the HW)
     */
    public boolean setMinInsyncReplicas(int minInsyncReplicas, long nowMs) {
        if (minInsyncReplicas < 1) {
            throw new IllegalArgumentException("min.insync.replicas must be at least 1: " + minInsyncReplicas);
        }
        this.minInsyncReplicas = minInsyncReplicas;
        return maybeIncrementHighWatermark(nowMs);
    }

    /**
     * Replicas that must not join the ISR (fenced or shutting-down brokers, from the metadata image;
     * Kafka's {@code isReplicaIsrEligible}). The HW does not wait for them to join either.
     */
    public void setIneligibleReplicas(Set<Integer> replicaIds) {
        for (int replica : replicaIds) {
            if (!ineligibleReplicas.contains(replica) && followers.containsKey(replica)) {
                // What it fetched before its broker was fenced says nothing about it once it is back (a
                // restarted broker): like Kafka's broker-epoch check, it counts again only from its next
                // fetches, so the HW never waits for a stale position of a replica outside the ISR.
                followers.put(replica, new FollowerState());
            }
        }
        this.ineligibleReplicas = Set.copyOf(replicaIds);
    }

    // ---------------------------------------------------------------- produce

    /**
     * The check before appending an {@code acks=all} batch: NOT_ENOUGH_REPLICAS when the committed ISR
     * is smaller than {@code min.insync.replicas} (capped at the replication factor), else NONE.
     */
    public Errors checkEnoughReplicas() {
        return committedIsr.size() < effectiveMinIsr() ? Errors.NOT_ENOUGH_REPLICAS : Errors.NONE;
    }

    /**
     * Where an {@code acks=all} request whose last batch ends at {@code requiredOffset} (last offset + 1)
     * stands: pending until the HW reaches it; then done, or NOT_ENOUGH_REPLICAS_AFTER_APPEND if the
     * maximal ISR is now smaller than {@code min.insync.replicas}.
     */
    public AckStatus ackStatus(long requiredOffset) {
        if (highWatermark < requiredOffset) {
            return AckStatus.PENDING;
        }
        return maximalIsr.size() >= effectiveMinIsr() ? AckStatus.DONE : AckStatus.NOT_ENOUGH_REPLICAS_AFTER_APPEND;
    }

    // ---------------------------------------------------------------- queries

    /** The high watermark: every record below it is on every member of the maximal ISR. Never decreases. */
    public long highWatermark() {
        return highWatermark;
    }

    public long logEndOffset() {
        return logEndOffset;
    }

    /** The leader's log end offset when this leader epoch began: the epoch's first offset. */
    public long leaderEpochStartOffset() {
        return leaderEpochStartOffset;
    }

    public int leaderEpoch() {
        return leaderEpoch;
    }

    public int partitionEpoch() {
        return partitionEpoch;
    }

    public int localReplicaId() {
        return localReplicaId;
    }

    public List<Integer> replicas() {
        return replicas;
    }

    /** The ISR as committed by the controller. */
    public Set<Integer> isr() {
        return committedIsr;
    }

    /** The committed ISR plus a replica whose joining is in flight: what the HW and acks=all wait for. */
    public Set<Integer> maximalIsr() {
        return maximalIsr;
    }

    /** The AlterPartition proposal in flight, if any. */
    public Optional<IsrChangeProposal> inFlightIsrChange() {
        return Optional.ofNullable(inFlight);
    }

    public int minInsyncReplicas() {
        return minInsyncReplicas;
    }

    /** Whether the committed ISR is smaller than {@code min.insync.replicas} (the HW is then frozen). */
    public boolean isUnderMinIsr() {
        return committedIsr.size() < effectiveMinIsr();
    }

    /** The committed ISR followers that are out of sync at {@code nowMs} (see the class comment). */
    public Set<Integer> outOfSyncReplicas(long nowMs) {
        Set<Integer> out = new TreeSet<>();
        for (int replica : committedIsr) {
            if (replica != localReplicaId && !isCaughtUp(followers.get(replica), nowMs)) {
                out.add(replica);
            }
        }
        return out;
    }

    /**
     * A follower stated its log start offset in a fetch (it moves when the follower applies the
     * leader's, after DeleteRecords or retention). Ignored for a broker that is not a follower.
     */
    public void onFollowerLogStartOffset(int replicaId, long logStartOffset) {
        FollowerState f = followers.get(replicaId);
        if (f != null && logStartOffset >= 0) {
            f.logStartOffset = logStartOffset;
        }
    }

    /**
     * The low watermark: the smallest log start offset of this leader ({@code localLogStartOffset})
     * and of every follower on a live broker (fenced and shutting-down ones are not waited for, as
     * Kafka's {@code lowWatermarkIfLeader} counts live replicas only); {@link #UNKNOWN_OFFSET} while
     * such a follower has not stated one yet. DeleteRecords is answered once it reaches the request's
     * offset: by then no replica that may lead next still holds the deleted records.
     */
    public long lowWatermark(long localLogStartOffset) {
        long low = localLogStartOffset;
        for (Map.Entry<Integer, FollowerState> e : followers.entrySet()) {
            if (ineligibleReplicas.contains(e.getKey())) {
                continue;
            }
            long start = e.getValue().logStartOffset;
            if (start == UNKNOWN_OFFSET) {
                return UNKNOWN_OFFSET;
            }
            low = Math.min(low, start);
        }
        return low;
    }

    /** Follower {@code replicaId}'s log start offset as its fetches reported it; UNKNOWN_OFFSET (-1) if not known. */
    public long followerLogStartOffset(int replicaId) {
        FollowerState f = followers.get(replicaId);
        return f == null ? UNKNOWN_OFFSET : f.logStartOffset;
    }

    /** What this leader knows about follower {@code replicaId}, if it is one. */
    public Optional<ReplicaView> replicaView(int replicaId) {
        FollowerState f = followers.get(replicaId);
        return f == null ? Optional.empty() : Optional.of(new ReplicaView(replicaId, f.logEndOffset, f.lastFetchTimeMs,
                f.lastFetchLeaderEndOffset, f.lastCaughtUpTimeMs, f.brokerEpoch));
    }

    @Override
    public String toString() {
        return "LeaderState(leader=" + localReplicaId + ", leaderEpoch=" + leaderEpoch + ", partitionEpoch=" + partitionEpoch
                + ", isr=" + committedIsr + ", maximalIsr=" + maximalIsr + ", inFlight=" + (inFlight != null)
                + ", leo=" + logEndOffset + ", hw=" + highWatermark + ")";
    }

    // ---------------------------------------------------------------- internals

    private int effectiveMinIsr() {
        return Math.min(minInsyncReplicas, replicas.size());
    }

    private boolean isCaughtUp(FollowerState follower, long nowMs) {
        if (follower == null) {
            return false;
        }
        return follower.logEndOffset == logEndOffset
                || (follower.lastCaughtUpTimeMs != NEVER_MS && nowMs - follower.lastCaughtUpTimeMs <= replicaLagTimeMaxMs);
    }

    private boolean mayJoinIsr(FollowerState follower) {
        return follower.logEndOffset != UNKNOWN_OFFSET
                && follower.logEndOffset >= highWatermark
                && follower.logEndOffset >= leaderEpochStartOffset;
    }

    private boolean maybeIncrementHighWatermark(long nowMs) {
        if (highWatermark == logEndOffset || isUnderMinIsr()) {
            return false; // nothing above the HW (an idle partition: most of them), or too few in sync
        }
        long candidate = logEndOffset;
        for (Map.Entry<Integer, FollowerState> e : followers.entrySet()) {
            int replica = e.getKey();
            FollowerState follower = e.getValue();
            boolean counts = maximalIsr.contains(replica)
                    // Kafka's shouldWaitForReplicaToJoinIsr: without it a follower that keeps up but is
                    // always a little behind a busy leader alone in the ISR could never reach the HW.
                    || (!ineligibleReplicas.contains(replica) && isCaughtUp(follower, nowMs));
            if (counts) {
                candidate = Math.min(candidate, follower.logEndOffset); // UNKNOWN_OFFSET holds it where it is
            }
        }
        if (candidate > highWatermark) {
            highWatermark = candidate;
            return true;
        }
        return false;
    }

    private IsrChangeProposal proposal(IsrChangeProposal.Kind kind, Set<Integer> newIsr, Set<Integer> changed) {
        List<IsrChangeProposal.IsrMember> members = new ArrayList<>();
        for (int replica : newIsr) {
            long brokerEpoch = replica == localReplicaId ? localBrokerEpoch : followers.get(replica).brokerEpoch;
            members.add(new IsrChangeProposal.IsrMember(replica, brokerEpoch));
        }
        return new IsrChangeProposal(kind, localReplicaId, leaderEpoch, partitionEpoch, members, changed);
    }

    private void adopt(LeaderAndIsr state, long nowMs) {
        Set<Integer> previousMaximal = maximalIsr;
        partitionEpoch = state.partitionEpoch();
        replicas = state.replicas();
        committedIsr = state.isr();
        committedIsrIds = ids(committedIsr);
        maximalIsr = committedIsr;
        inFlight = null;
        followers.keySet().retainAll(replicas);
        for (int replica : replicas) {
            if (replica == localReplicaId) {
                continue;
            }
            FollowerState follower = followers.computeIfAbsent(replica, r -> new FollowerState());
            if (committedIsr.contains(replica) && !previousMaximal.contains(replica)) {
                // Put into the ISR by the controller: the same grace period as at election.
                follower.lastCaughtUpTimeMs = Math.max(follower.lastCaughtUpTimeMs, nowMs);
            }
        }
    }

    /** What the leader knows about one follower in this leader epoch. Mutable; owned by its LeaderState. */
    /**
     * Whether {@code replicaId} is in the committed ISR with no ISR change in flight: nothing its fetches
     * could propose now (a fetch that might expand the ISR must not be skipped).
     */
    public boolean isSettledIsrMember(int replicaId) {
        return inFlight == null && inCommittedIsr(replicaId);
    }

    private boolean inCommittedIsr(int replicaId) {
        for (int id : committedIsrIds) {
            if (id == replicaId) {
                return true;
            }
        }
        return false;
    }

    private static int[] ids(Set<Integer> replicas) {
        return replicas.stream().mapToInt(Integer::intValue).toArray();
    }

    private static final class FollowerState {
        long logEndOffset = UNKNOWN_OFFSET;
        long lastFetchLeaderEndOffset = UNKNOWN_OFFSET;
        long lastFetchTimeMs = NEVER_MS;
        long lastCaughtUpTimeMs = NEVER_MS;
        long brokerEpoch = -1L;
        /** The follower's log start offset, as its last fetch stated it; unknown before its first fetch. */
        long logStartOffset = UNKNOWN_OFFSET;

        void onFetch(long fetchOffset, long leaderEndOffset, long brokerEpoch, long nowMs) {
            if (fetchOffset >= leaderEndOffset) {
                lastCaughtUpTimeMs = Math.max(lastCaughtUpTimeMs, nowMs);
            } else if (lastFetchLeaderEndOffset != UNKNOWN_OFFSET && fetchOffset >= lastFetchLeaderEndOffset) {
                // It now has everything the leader had at its previous fetch: it was caught up then.
                lastCaughtUpTimeMs = Math.max(lastCaughtUpTimeMs, lastFetchTimeMs);
            }
            this.logEndOffset = fetchOffset;
            this.lastFetchLeaderEndOffset = leaderEndOffset;
            this.lastFetchTimeMs = nowMs;
            this.brokerEpoch = brokerEpoch;
        }
    }
}
