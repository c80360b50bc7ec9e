package dev.varve.broker.replication;

import dev.varve.storage.EpochEntry;
import dev.varve.storage.LeaderEpochCache.EpochEndOffset;

import java.util.List;
import java.util.OptionalInt;

/**
 * The follower's side of epoch-based truncation (KIP-101, with KIP-279's fix for leader changes in
 * quick succession): where a replica that becomes a follower cuts its log so that what is left is a
 * prefix of the leader's log. Never blindly at its high watermark: a follower's HW lags the leader's,
 * and cutting there loses records the leader already committed if this replica is elected before it
 * fetches them back (KIP-101's first scenario); and an HW can be above the point where two logs
 * diverged after both crashed (the second).
 *
 * <h2>The loop</h2>
 * <ol>
 *   <li>The follower asks the leader (OffsetForLeaderEpoch, or the {@code LastFetchedEpoch} of a fetch)
 *       for its latest local epoch {@link #requestEpoch}. With no local epoch at all it cannot ask:
 *       {@link #withoutLocalEpochs}.</li>
 *   <li>The leader answers {@code (eL, oL)} ({@link EpochEndOffsets#endOffsetFor}): its largest epoch
 *       {@code eL} at most the one asked, and where that epoch ends on the leader.</li>
 *   <li>{@link #onLeaderAnswer}: the follower looks up its own largest epoch {@code eF <= eL} and its end
 *       {@code oF}.
 *     <ul>
 *       <li>{@code eF == eL}: both logs hold the same records of that epoch (one leader per epoch) up to
 *           {@code min(oF, oL)}, and everything after it on the follower is of later epochs the leader
 *           does not have: truncate to {@code min(oF, oL, LEO)}; done.</li>
 *       <li>{@code eF < eL} (the follower never saw {@code eL}): every local batch from {@code oF} on is
 *           of an epoch in {@code (eL, asked]}, which the leader does not have: truncate to
 *           {@code min(oF, LEO)} and ask again with the new latest local epoch, {@code eF}
 *           ({@link Step#complete()} false). Each round asks for a strictly smaller epoch, so the loop
 *           ends within as many rounds as the follower has epochs.</li>
 *     </ul></li>
 * </ol>
 * A leader answer older than every local epoch counts as the first case with {@code oF} the start of
 * the earliest local epoch (what the follower knows begins there), as in Kafka.
 *
 * <h2>Without epoch information</h2>
 * When the leader answers UNDEFINED offset (it has no epochs) or the follower has none, there is
 * nothing to compare: the follower falls back to its high watermark (the pre-KIP-101 rule, and
 * Kafka's). An answer with an offset but an UNDEFINED epoch (an old leader) truncates to that offset.
 *
 * <h2>Bounds</h2>
 * The truncation offset is always in {@code [0, LEO]}. It is never clamped to the high watermark: after
 * clean elections it is never below the follower's HW anyway (everything below an HW is on every ISR
 * member, and the leader came from the ISR), and when it is below — after an unclean election or the
 * loss of unflushed data on several replicas — clamping would keep records the leader does not have
 * and leave the replicas diverged for good. {@link Step#belowHighWatermark()} flags it so the broker
 * logs a warning, as Kafka does. An offset below the log start offset empties the log
 * ({@code PartitionLog.truncateTo} handles that).
 *
 * <p>Thread-safety: stateless; the caller passes immutable snapshots.
 */
public final class FollowerTruncation {

    /** Why a step truncates where it does. */
    public enum Reason {
        /** Leader and follower both know the leader's answer epoch: cut at the first offset one of them ends it. */
        EPOCH_MATCH,
        /** KIP-279: the follower does not know the leader's answer epoch: cut the later epochs, ask again. */
        INTERMEDIATE,
        /** The leader answered an offset without an epoch: cut at that offset. */
        LEADER_OFFSET_WITHOUT_EPOCH,
        /** The leader knows no epochs: fall back to the follower's high watermark. */
        LEADER_HAS_NO_EPOCHS,
        /** The follower knows no epochs: fall back to its high watermark. */
        NO_LOCAL_EPOCHS
    }

    /**
     * One truncation step.
     *
     * @param truncationOffset   the offset to truncate the log to (the new log end), in {@code [0, LEO]}
     * @param complete           false: truncate, then ask again with {@link #requestEpoch} of the
     *                           truncated log; true: truncate, then start fetching at the new log end
     * @param reason             why
     * @param belowHighWatermark the offset is below the follower's high watermark (log a warning)
     */
    public record Step(long truncationOffset, boolean complete, Reason reason, boolean belowHighWatermark) {
    }

    private FollowerTruncation() {
    }

    /** The epoch to ask the leader about: the follower's latest epoch, or empty if it has none. */
    public static OptionalInt requestEpoch(List<EpochEntry> followerEpochs) {
        return followerEpochs.isEmpty() ? OptionalInt.empty() : OptionalInt.of(followerEpochs.get(followerEpochs.size() - 1).epoch());
    }

    /**
     * The step for a follower without epoch information (an empty epoch cache): truncate to the high
     * watermark. A follower with an empty log has nothing to truncate (the result is then 0, complete).
     */
    public static Step withoutLocalEpochs(long followerLogEndOffset, long followerHighWatermark) {
        checkOffsets(followerLogEndOffset, followerHighWatermark);
        return new Step(Math.min(followerHighWatermark, followerLogEndOffset), true, Reason.NO_LOCAL_EPOCHS, false);
    }

    /**
     * The step after the leader answered {@code leaderAnswer} to the epoch from {@link #requestEpoch}
     * (or sent it as a fetch's diverging epoch).
     *
     * @param followerEpochs        the follower's epoch entries now (snapshot of its epoch cache)
     * @param followerLogEndOffset  the follower's log end offset now
     * @param followerHighWatermark the follower's high watermark now
     * @param leaderAnswer          the leader's {@code (epoch, end offset)} answer
     */
    public static Step onLeaderAnswer(List<EpochEntry> followerEpochs, long followerLogEndOffset, long followerHighWatermark,
                                      EpochEndOffset leaderAnswer) {
        checkOffsets(followerLogEndOffset, followerHighWatermark);
        EpochEndOffsets.checkWellFormed(followerEpochs);
        long leo = followerLogEndOffset;
        if (leaderAnswer.endOffset() == EpochEndOffsets.UNDEFINED_EPOCH_OFFSET) {
            return step(Math.min(followerHighWatermark, leo), true, Reason.LEADER_HAS_NO_EPOCHS, followerHighWatermark);
        }
        if (leaderAnswer.endOffset() < 0) {
            throw new IllegalArgumentException("negative end offset in leader answer " + leaderAnswer);
        }
        if (leaderAnswer.epoch() == EpochEndOffsets.UNDEFINED_EPOCH) {
            return step(Math.min(leaderAnswer.endOffset(), leo), true, Reason.LEADER_OFFSET_WITHOUT_EPOCH, followerHighWatermark);
        }
        if (followerEpochs.isEmpty()) {
            return step(Math.min(followerHighWatermark, leo), true, Reason.NO_LOCAL_EPOCHS, followerHighWatermark);
        }
        EpochEndOffset local = EpochEndOffsets.endOffsetFor(followerEpochs, leaderAnswer.epoch(), leo);
        if (local.endOffset() == EpochEndOffsets.UNDEFINED_EPOCH_OFFSET) {
            // The leader answered an epoch newer than every local one (only a misbehaving leader does:
            // it answers at most the epoch asked). Nothing local contradicts its offset.
            return step(Math.min(leaderAnswer.endOffset(), leo), true, Reason.EPOCH_MATCH, followerHighWatermark);
        }
        if (local.epoch() != leaderAnswer.epoch()) {
            return step(Math.min(local.endOffset(), leo), false, Reason.INTERMEDIATE, followerHighWatermark);
        }
        return step(Math.min(Math.min(local.endOffset(), leaderAnswer.endOffset()), leo), true, Reason.EPOCH_MATCH,
                followerHighWatermark);
    }

    private static Step step(long offset, boolean complete, Reason reason, long highWatermark) {
        return new Step(offset, complete, reason, offset < highWatermark);
    }

    private static void checkOffsets(long logEndOffset, long highWatermark) {
        if (logEndOffset < 0 || highWatermark < 0) {
            throw new IllegalArgumentException("negative offset: logEndOffset=" + logEndOffset + ", highWatermark=" + highWatermark);
        }
    }
}
