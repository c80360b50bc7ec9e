package dev.varve.storage.index;

import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * Maps offsets to file positions in one segment, in Kafka's {@code .index} format.
 *
 * <pre>
 *   entry (8 bytes): | relative offset (int32) | position (int32) |
 * </pre>
 *
 * An entry maps the last offset of a batch to the position where that batch starts. Entries are
 * strictly increasing in both fields, so the index can be searched by offset (to start a read) and
 * by position (to end a read on a batch boundary). The first batch of a segment is never indexed:
 * lookups below the first entry start at position 0, so an entry at position 0 is never valid.
 */
public final class OffsetIndex extends AbstractIndex {
    public static final int ENTRY_SIZE = 8;

    public OffsetIndex(File file, long baseOffset, int maxIndexSizeBytes) throws IOException {
        super(file, baseOffset, maxIndexSizeBytes, ENTRY_SIZE);
    }

    private static long relOffsetAt(ByteBuffer buffer, int slot) {
        return buffer.getInt(slot * ENTRY_SIZE);
    }

    private static long positionAt(ByteBuffer buffer, int slot) {
        return buffer.getInt(slot * ENTRY_SIZE + 4);
    }

    public synchronized OffsetPosition entry(int slot) {
        ByteBuffer view = view();
        return new OffsetPosition(baseOffset + relOffsetAt(view, slot), (int) positionAt(view, slot));
    }

    /** The last entry, or (baseOffset, 0) when there is none. */
    public synchronized OffsetPosition lastEntry() {
        int n = entries();
        return n == 0 ? new OffsetPosition(baseOffset, 0) : entry(n - 1);
    }

    /**
     * The largest entry whose offset is at most {@code targetOffset}; (baseOffset, 0) when none is,
     * i.e. a scan for the target starts there.
     */
    public synchronized OffsetPosition lookup(long targetOffset) {
        long relative = targetOffset - baseOffset;
        int slot = largestLowerBoundSlot(relative, OffsetIndex::relOffsetAt);
        return slot < 0 ? new OffsetPosition(baseOffset, 0) : entry(slot);
    }

    /**
     * The entries around {@code targetOffset}: the largest at most it (null when none is) and the
     * next one (null when there is none). Lets a search stop at the next indexed batch without
     * reading its header.
     */
    public synchronized OffsetPosition[] bracket(long targetOffset) {
        int slot = largestLowerBoundSlot(targetOffset - baseOffset, OffsetIndex::relOffsetAt);
        OffsetPosition floor = slot < 0 ? null : entry(slot);
        OffsetPosition ceiling = slot + 1 < entries() ? entry(slot + 1) : null;
        return new OffsetPosition[]{floor, ceiling};
    }

    /** The largest entry whose position is at most {@code position}; (baseOffset, 0) when none is. */
    public synchronized OffsetPosition lookupByPosition(int position) {
        int slot = largestLowerBoundSlot(position, OffsetIndex::positionAt);
        return slot < 0 ? new OffsetPosition(baseOffset, 0) : entry(slot);
    }

    /** Appends (offset, position); both must be larger than the last entry's. */
    public synchronized void append(long offset, int position) {
        int relative = relativeOffset(offset);
        int n = entries();
        if (n > 0) {
            OffsetPosition last = entry(n - 1);
            if (offset <= last.offset() || position <= last.position()) {
                throw new IllegalArgumentException("index entry (" + offset + ", " + position
                        + ") is not after the last entry " + last + " in " + file());
            }
        } else if (position <= 0) {
            throw new IllegalArgumentException("the first batch of a segment is never indexed");
        }
        appendEntry(buffer -> {
            buffer.putInt(relative);
            buffer.putInt(position);
        });
    }

    /** Removes entries whose offset is at least {@code offset}. */
    public synchronized void truncateTo(long offset) {
        long relative = offset - baseOffset;
        int slot = largestLowerBoundSlot(relative, OffsetIndex::relOffsetAt);
        // keep entries strictly below the offset
        int keep = slot < 0 ? 0 : (relOffsetAt(view(), slot) == relative ? slot : slot + 1);
        truncateToEntries(keep);
    }

    /** Removes entries whose position is at least {@code position}. */
    public synchronized void truncateToPosition(int position) {
        int slot = largestLowerBoundSlot(position, OffsetIndex::positionAt);
        int keep = slot < 0 ? 0 : (positionAt(view(), slot) == position ? slot : slot + 1);
        truncateToEntries(keep);
    }

    @Override
    protected void verifyEntries(ByteBuffer view, int fromSlot, int n) {
        // Slot fromSlot is compared with its successor only; slot 0 also with the minimum (0, 0):
        // the first batch is never indexed, so no entry has position 0.
        long prevOffset = -1;
        long prevPosition = 0;
        for (int slot = fromSlot; slot < n; slot++) {
            long rel = relOffsetAt(view, slot);
            long pos = positionAt(view, slot);
            boolean checked = slot > fromSlot || fromSlot == 0;
            if (checked && (rel <= prevOffset || pos <= prevPosition)) {
                throw new CorruptIndexException("offset index " + file() + " entry " + slot + " (" + rel + ", " + pos
                        + ") is not after (" + prevOffset + ", " + prevPosition + ")");
            }
            prevOffset = rel;
            prevPosition = pos;
        }
    }
}
