package dev.varve.storage.index;

import org.apache.kafka.common.record.internal.RecordBatch;

import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;

/**
 * Maps timestamps to offsets in one segment, in Kafka's {@code .timeindex} format.
 *
 * <pre>
 *   entry (12 bytes): | timestamp (int64) | relative offset (int32) |
 * </pre>
 *
 * An entry (t, o) says: the largest timestamp among records up to offset o is t, and o is where it
 * was first reached. Entries are appended only when the maximum grows, so both fields are strictly
 * increasing. One slot is kept free so the final entry can always be written when the segment rolls.
 */
public final class TimeIndex extends AbstractIndex {
    public static final int ENTRY_SIZE = 12;

    public TimeIndex(File file, long baseOffset, int maxIndexSizeBytes) throws IOException {
        super(file, baseOffset, maxIndexSizeBytes, ENTRY_SIZE);
    }

    private static long timestampAt(ByteBuffer buffer, int slot) {
        return buffer.getLong(slot * ENTRY_SIZE);
    }

    private static long relOffsetAt(ByteBuffer buffer, int slot) {
        return buffer.getInt(slot * ENTRY_SIZE + 8);
    }

    /** Full for rolling purposes: one slot stays free for the entry written on roll. */
    @Override
    public boolean isFull() {
        return entries() >= maxEntries() - 1;
    }

    public synchronized TimestampOffset entry(int slot) {
        ByteBuffer view = view();
        return new TimestampOffset(timestampAt(view, slot), baseOffset + relOffsetAt(view, slot));
    }

    /** The last entry, or (NO_TIMESTAMP, baseOffset) when there is none. */
    public synchronized TimestampOffset lastEntry() {
        int n = entries();
        return n == 0 ? new TimestampOffset(RecordBatch.NO_TIMESTAMP, baseOffset) : entry(n - 1);
    }

    /** The largest entry with timestamp at most {@code target}; (NO_TIMESTAMP, baseOffset) when none. */
    public synchronized TimestampOffset lookup(long target) {
        int slot = largestLowerBoundSlot(target, TimeIndex::timestampAt);
        return slot < 0 ? new TimestampOffset(RecordBatch.NO_TIMESTAMP, baseOffset) : entry(slot);
    }

    /**
     * Appends (timestamp, offset) when the timestamp is larger than the last entry's; otherwise does
     * nothing. {@code force} also uses the reserved last slot (on roll).
     */
    public synchronized void maybeAppend(long timestamp, long offset, boolean force) {
        if (timestamp == RecordBatch.NO_TIMESTAMP) {
            return;
        }
        int n = entries();
        if (n > 0) {
            TimestampOffset last = entry(n - 1);
            if (timestamp <= last.timestamp()) {
                return;
            }
            if (offset < last.offset()) {
                throw new IllegalArgumentException("time index entry (" + timestamp + ", " + offset
                        + ") has an offset before the last entry " + last + " in " + file());
            }
        }
        if (!force && isFull()) {
            throw new IllegalStateException("time index " + file() + " is full");
        }
        int relative = relativeOffset(offset);
        appendEntry(buffer -> {
            buffer.putLong(timestamp);
            buffer.putInt(relative);
        });
    }

    /** Removes entries whose offset is at least {@code offset}. */
    public synchronized void truncateTo(long offset) {
        long relative = offset - baseOffset;
        int n = entries();
        ByteBuffer view = n == 0 ? null : view();
        int keep = n;
        while (keep > 0 && relOffsetAt(view, keep - 1) >= relative) {
            keep--;
        }
        truncateToEntries(keep);
    }

    @Override
    protected void verifyEntries(ByteBuffer view, int fromSlot, int n) {
        long prevTs = Long.MIN_VALUE;
        long prevRel = -1;
        for (int slot = fromSlot; slot < n; slot++) {
            long ts = timestampAt(view, slot);
            long rel = relOffsetAt(view, slot);
            boolean checked = slot > fromSlot || fromSlot == 0;
            if (rel < 0 || (checked && (ts <= prevTs || rel < prevRel))) {
                throw new CorruptIndexException("time index " + file() + " entry " + slot + " (" + ts + ", " + rel
                        + ") is not after (" + prevTs + ", " + prevRel + ")");
            }
            prevTs = ts;
            prevRel = rel;
        }
    }
}
