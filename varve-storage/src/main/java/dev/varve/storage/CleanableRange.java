package dev.varve.storage;

import dev.varve.storage.PartitionLog.SegmentRef;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.List;

/**
 * The part of a compacted log a cleaning round may work on, and how dirty it is (Kafka's
 * {@code LogCleanerManager.cleanableOffsets} and dirty-ratio rules).
 *
 * <pre>
 *   [ clean segments ][ dirty, cleanable segments ][ uncleanable segments ][ active ]
 *   ^ first segment   ^ firstDirty                 ^ firstUncleanable
 * </pre>
 *
 * <ul>
 *   <li>{@code firstDirty}: the checkpointed first dirty offset, or the log start offset when the
 *       checkpoint is missing, below the log start or past the log end (and never above a
 *       truncation point since).</li>
 *   <li>{@code firstUncleanable}: the base offset of the first segment that is the active segment, or
 *       reaches the last stable offset (nothing uncommitted is compacted, nor any transaction that may
 *       still abort: the high watermark, or the first offset of the oldest open transaction), or (only among dirty segments)
 *       holds a record newer than {@code min.compaction.lag.ms}. Always a segment boundary.</li>
 *   <li>dirty ratio: bytes of dirty cleanable segments over those plus the clean segments' bytes.</li>
 *   <li>{@code mustCleanNow}: the oldest dirty batch (first batch timestamp of the first dirty, non-active
 *       segment) is older than {@code max.compaction.lag.ms}.</li>
 * </ul>
 *
 * @param firstDirty       first offset not cleaned yet
 * @param firstUncleanable first offset a round must not reach (a segment base offset)
 * @param cleanBytes       bytes of segments wholly below firstDirty
 * @param dirtyBytes       bytes of segments a round would map
 * @param mustCleanNow     max.compaction.lag.ms has passed for the oldest dirty batch
 */
record CleanableRange(long firstDirty, long firstUncleanable, long cleanBytes, long dirtyBytes, boolean mustCleanNow)
        implements Comparable<CleanableRange> {

    /** The share of cleanable bytes that is dirty, in [0, 1]. */
    double dirtyRatio() {
        long total = cleanBytes + dirtyBytes;
        return total == 0 ? 0 : (double) dirtyBytes / total;
    }

    /** Whether a round should run: dirty bytes, and past max lag or (strictly) above the ratio, as Kafka. */
    boolean isCandidate(double minCleanableRatio) {
        return dirtyBytes > 0 && (mustCleanNow || dirtyRatio() > minCleanableRatio);
    }

    /** Past max lag first, then dirtier first. */
    @Override
    public int compareTo(CleanableRange o) {
        if (mustCleanNow != o.mustCleanNow) {
            return mustCleanNow ? 1 : -1;
        }
        return Double.compare(dirtyRatio(), o.dirtyRatio());
    }

    /**
     * Measures a log.
     *
     * @param checkpoint the checkpointed first dirty offset, or -1 when there is none
     */
    static CleanableRange of(PartitionLog.CleaningView view, long checkpoint, long nowMs) {
        List<SegmentRef> segs = view.segments();
        long firstDirty = checkpoint;
        if (firstDirty < view.logStartOffset() || firstDirty > view.logEndOffset()) {
            firstDirty = view.logStartOffset();
        }
        LogConfig config = view.config();
        int activeIndex = segs.size() - 1;
        long firstUncleanable = segs.get(activeIndex).segment().baseOffset();
        long clean = 0;
        long dirty = 0;
        long oldestDirtyBatchMs = Long.MAX_VALUE;
        for (int i = 0; i < activeIndex; i++) {
            LogSegment s = segs.get(i).segment();
            long next = segs.get(i + 1).segment().baseOffset();
            if (next <= firstDirty) {
                clean += segs.get(i).size();
                continue;
            }
            if (next > view.lastStableOffset()) { // the high watermark, or an open transaction's first offset
                firstUncleanable = s.baseOffset();
                break;
            }
            if (config.minCompactionLagMs() > 0 && largestTimestamp(s) > nowMs - config.minCompactionLagMs()) {
                firstUncleanable = s.baseOffset();
                break;
            }
            long first = s.firstBatchTimestamp();
            if (first > 0) {
                oldestDirtyBatchMs = Math.min(oldestDirtyBatchMs, first);
            }
            dirty += segs.get(i).size();
        }
        firstUncleanable = Math.max(firstUncleanable, firstDirty);
        boolean mustCleanNow = dirty > 0 && oldestDirtyBatchMs != Long.MAX_VALUE
                && nowMs - config.maxCompactionLagMs() > oldestDirtyBatchMs;
        return new CleanableRange(firstDirty, firstUncleanable, clean, dirty, mustCleanNow);
    }

    private static long largestTimestamp(LogSegment s) {
        try {
            return s.largestTimestamp();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
