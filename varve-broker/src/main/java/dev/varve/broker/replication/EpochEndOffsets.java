package dev.varve.broker.replication;

import dev.varve.storage.EpochEntry;
import dev.varve.storage.LeaderEpochCache;
import dev.varve.storage.LeaderEpochCache.EpochEndOffset;
import org.apache.kafka.common.errors.OffsetOutOfRangeException;

import java.util.List;
import java.util.Optional;

/**
 * The leader's side of epoch-based truncation: OffsetForLeaderEpoch answers and the diverging-epoch
 * check of a follower's fetch, computed from an epoch list (a snapshot of the log's
 * {@link LeaderEpochCache#entries()}) and the log end offset. Pure static functions.
 *
 * <p>The epoch list is {@code (epoch, startOffset)} entries with strictly increasing epochs and
 * non-decreasing start offsets; an epoch ends where the next one starts, the latest one at the log
 * end. The answers are exactly {@link LeaderEpochCache#endOffsetFor} (and Kafka's
 * {@code LeaderEpochFileCache.endOffsetFor}):
 * <table>
 *   <caption>endOffsetFor(requested)</caption>
 *   <tr><th>case</th><th>answer (epoch, end offset)</th></tr>
 *   <tr><td>requested is UNDEFINED (-1), or no epochs</td><td>(UNDEFINED, UNDEFINED)</td></tr>
 *   <tr><td>requested is the latest epoch</td><td>(requested, log end offset)</td></tr>
 *   <tr><td>some epoch &le; requested exists and a later one too</td>
 *       <td>(largest epoch &le; requested, start offset of the next epoch)</td></tr>
 *   <tr><td>requested is older than every epoch</td><td>(requested, start offset of the earliest epoch)</td></tr>
 *   <tr><td>requested is newer than every epoch (but not the latest)</td><td>(UNDEFINED, UNDEFINED)</td></tr>
 * </table>
 * The "older than every epoch" row is not UNDEFINED, on purpose (as in Kafka): this leader knows nothing
 * of that epoch, typically because retention removed it; the earliest start offset is where its own
 * knowledge begins, so a follower truncates to at most that offset and keeps only what lies below
 * the leader's history (see {@link FollowerTruncation}). "Newer than every epoch" only happens to a
 * stale leader and is normally stopped earlier by {@link EpochFencing}.
 *
 * <p>Thread-safety: stateless; the caller passes an immutable snapshot. Take the epoch entries before
 * the log end offset: an append in between then only makes the log end larger, which is harmless.
 */
public final class EpochEndOffsets {
    public static final int UNDEFINED_EPOCH = LeaderEpochCache.UNDEFINED_EPOCH;
    public static final long UNDEFINED_EPOCH_OFFSET = LeaderEpochCache.UNDEFINED_EPOCH_OFFSET;

    private static final EpochEndOffset UNDEFINED = new EpochEndOffset(UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET);

    private EpochEndOffsets() {
    }

    /** The OffsetForLeaderEpoch answer for {@code requestedEpoch}: see the class comment. */
    public static EpochEndOffset endOffsetFor(List<EpochEntry> epochs, int requestedEpoch, long logEndOffset) {
        checkWellFormed(epochs);
        if (requestedEpoch == UNDEFINED_EPOCH || epochs.isEmpty()) {
            return UNDEFINED;
        }
        EpochEntry latest = epochs.get(epochs.size() - 1);
        if (latest.epoch() == requestedEpoch) {
            return new EpochEndOffset(requestedEpoch, logEndOffset);
        }
        EpochEntry floor = null;
        for (EpochEntry e : epochs) {
            if (e.epoch() > requestedEpoch) {
                return new EpochEndOffset(floor == null ? requestedEpoch : floor.epoch(), e.startOffset());
            }
            floor = e;
        }
        return UNDEFINED;
    }

    /**
     * The fetch-time divergence check (Fetch v12+, a follower's {@code LastFetchedEpoch}): whether the
     * follower's log up to {@code fetchOffset}, whose last batch has epoch {@code lastFetchedEpoch},
     * diverges from this leader's log. When it does, the answer is the diverging epoch to send back
     * (Kafka's {@code DivergingEpoch}: the largest leader epoch &le; {@code lastFetchedEpoch} and its
     * end offset); the follower treats it exactly like an OffsetForLeaderEpoch answer
     * ({@link FollowerTruncation#onLeaderAnswer}) and the leader must not record the fetch offset.
     *
     * <p>Diverging means: the leader's epoch is older than {@code lastFetchedEpoch} (the follower has
     * batches of an epoch this leader never saw) or that epoch ends on the leader before
     * {@code fetchOffset}. Without a last fetched epoch ({@code -1}: a follower with no epoch
     * information) nothing can be checked and the answer is empty.
     *
     * @throws OffsetOutOfRangeException the leader has no epoch at or below {@code lastFetchedEpoch}, or
     *                                   the fetch offset is beyond the leader's log end without divergence
     */
    public static Optional<EpochEndOffset> divergingEpoch(List<EpochEntry> epochs, long logEndOffset,
                                                          int lastFetchedEpoch, long fetchOffset) {
        if (lastFetchedEpoch == UNDEFINED_EPOCH) {
            checkFetchOffset(fetchOffset, logEndOffset);
            return Optional.empty();
        }
        EpochEndOffset answer = endOffsetFor(epochs, lastFetchedEpoch, logEndOffset);
        if (answer.epoch() == UNDEFINED_EPOCH || answer.endOffset() == UNDEFINED_EPOCH_OFFSET) {
            throw new OffsetOutOfRangeException("no end offset known for last fetched epoch " + lastFetchedEpoch);
        }
        if (answer.epoch() < lastFetchedEpoch || answer.endOffset() < fetchOffset) {
            return Optional.of(answer);
        }
        checkFetchOffset(fetchOffset, logEndOffset);
        return Optional.empty();
    }

    /**
     * {@link #divergingEpoch(List, long, int, long)}, asking for the epoch list only when it is needed: a
     * follower without epochs has nothing to compare, and one at the leader's latest epoch
     * ({@code latestEpoch}, -1 when none; its end is the log end) diverges only past the log end. Same
     * answers; idle followers of thousands of partitions ask twice a second each, almost all in step.
     */
    public static Optional<EpochEndOffset> divergingEpoch(int latestEpoch, java.util.function.Supplier<List<EpochEntry>> epochs,
                                                          long logEndOffset, int lastFetchedEpoch, long fetchOffset) {
        if (lastFetchedEpoch == UNDEFINED_EPOCH) {
            return divergingEpoch(List.of(), logEndOffset, lastFetchedEpoch, fetchOffset);
        }
        if (lastFetchedEpoch == latestEpoch) {
            if (fetchOffset > logEndOffset) {
                return Optional.of(new EpochEndOffset(latestEpoch, logEndOffset));
            }
            checkFetchOffset(fetchOffset, logEndOffset);
            return Optional.empty();
        }
        return divergingEpoch(epochs.get(), logEndOffset, lastFetchedEpoch, fetchOffset);
    }

    private static void checkFetchOffset(long fetchOffset, long logEndOffset) {
        if (fetchOffset < 0 || fetchOffset > logEndOffset) {
            throw new OffsetOutOfRangeException("fetch offset " + fetchOffset + " is outside [0, " + logEndOffset + "]");
        }
    }

    static void checkWellFormed(List<EpochEntry> epochs) {
        for (int i = 0; i < epochs.size(); i++) {
            EpochEntry e = epochs.get(i);
            if (e.epoch() < 0 || e.startOffset() < 0) {
                throw new IllegalArgumentException("bad epoch entry " + e);
            }
            if (i > 0 && (e.epoch() <= epochs.get(i - 1).epoch() || e.startOffset() < epochs.get(i - 1).startOffset())) {
                throw new IllegalArgumentException("epochs not increasing at " + i + ": " + epochs);
            }
        }
    }
}
