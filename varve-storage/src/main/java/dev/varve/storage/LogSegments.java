package dev.varve.storage;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentNavigableMap;
import java.util.concurrent.ConcurrentSkipListMap;

/**
 * A partition's segments by base offset. Finding the segment for an offset is a floor search
 * (O(log n)). Readers iterate concurrently with the writer adding or removing segments.
 */
public final class LogSegments {
    private final ConcurrentSkipListMap<Long, LogSegment> segments = new ConcurrentSkipListMap<>();
    /**
     * The last segment, kept beside the map: every fetch asks for it (an empty read answers with a slice
     * of it), and a skip list's last entry is a walk down its index levels, cache misses on an idle broker
     * that answers follower fetches for thousands of partitions.
     */
    private volatile LogSegment active;

    public synchronized void add(LogSegment segment) {
        segments.put(segment.baseOffset(), segment);
        active = last();
    }

    public synchronized void remove(long baseOffset) {
        segments.remove(baseOffset);
        active = last();
    }

    public boolean isEmpty() {
        return segments.isEmpty();
    }

    public int size() {
        return segments.size();
    }

    public LogSegment active() {
        return active;
    }

    private LogSegment last() {
        Map.Entry<Long, LogSegment> e = segments.lastEntry();
        return e == null ? null : e.getValue();
    }

    /** The segment with exactly this base offset, or null. */
    public LogSegment get(long baseOffset) {
        return segments.get(baseOffset);
    }

    public LogSegment first() {
        Map.Entry<Long, LogSegment> e = segments.firstEntry();
        return e == null ? null : e.getValue();
    }

    /** The segment that would hold {@code offset}: the one with the largest base at most it. */
    public LogSegment floor(long offset) {
        Map.Entry<Long, LogSegment> e = segments.floorEntry(offset);
        return e == null ? null : e.getValue();
    }

    /** The segment after the one with base {@code baseOffset}. */
    public LogSegment higher(long baseOffset) {
        Map.Entry<Long, LogSegment> e = segments.higherEntry(baseOffset);
        return e == null ? null : e.getValue();
    }

    /** Segments from the one holding {@code from} (inclusive) up to those starting before {@code to}. */
    public Collection<LogSegment> range(long from, long to) {
        Long start = segments.floorKey(from);
        ConcurrentNavigableMap<Long, LogSegment> view = start == null
                ? segments.headMap(to, false)
                : segments.subMap(start, true, to, false);
        return view.values();
    }

    public Collection<LogSegment> all() {
        return segments.values();
    }

    public List<Long> baseOffsets() {
        return new ArrayList<>(segments.keySet());
    }

    public long sizeInBytes() {
        long total = 0;
        for (LogSegment s : segments.values()) {
            total += s.size();
        }
        return total;
    }

    /** See {@link LogSegment#updateParentDir}. */
    synchronized void updateParentDir(java.io.File parentDir) {
        for (LogSegment s : segments.values()) {
            s.updateParentDir(parentDir);
        }
    }

    /** The base offset of the segment after the one with {@code baseOffset}, or {@code orElse}. */
    public long nextBaseOffset(long baseOffset, long orElse) {
        Long next = segments.higherKey(baseOffset);
        return next == null ? orElse : next;
    }
}
