package dev.varve.storage;

import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.RecordBatch;

import java.util.OptionalLong;
import java.util.Set;

/**
 * Which records and batches survive a cleaning round: Kafka's retention rules for compacted logs,
 * applied through kafka-clients' {@code MemoryRecords.filterTo} (which decompresses a batch, keeps the
 * chosen records and recompresses them with the batch's own codec, keeping base offset, last offset,
 * producer fields, leader epoch and timestamps; a batch that keeps every record and needs no delete
 * horizon is copied byte for byte).
 *
 * <ul>
 *   <li>A record is dropped when the offset map holds a later offset for its key.</li>
 *   <li>A tombstone (null value) that is its key's latest record is kept, and its batch is stamped with a
 *       delete horizon of now + {@code delete.retention.ms} the first time it is cleaned (KIP-534); a
 *       later round after that horizon drops it.</li>
 *   <li>A record without a key is dropped (Kafka's cleaner does the same; the validator refuses new
 *       ones on compacted topics).</li>
 *   <li>Control batches (transaction markers) are kept whole: Varve keeps no transaction index yet, so it
 *       cannot know when Kafka would drop them.</li>
 *   <li>A batch that an idempotent producer still remembers, and the last batch of the group being
 *       rewritten, are kept even when all their records go, as an empty batch (header only): the first
 *       keeps sequence numbers (and so deduplication) across a reload, the second keeps the cleaned
 *       segment ending exactly where the group ended, which recovery relies on.</li>
 * </ul>
 *
 * <p>Thread-safety: none; one filter serves one group of one round.
 */
final class CompactionFilter extends MemoryRecords.RecordFilter {
    private final KeyOffsetMap map;
    private final Set<Long> retainOffsets;
    private final long groupLastOffset;
    private long recordsDropped;
    private long keylessDropped;
    private long tombstonesDropped;
    private long latestTombstoneHorizonMs = RecordBatch.NO_TIMESTAMP;

    /**
     * @param map             latest offset per key of the round's dirty section (may be empty)
     * @param nowMs           the cleaner's clock: stamps new delete horizons, expires old ones
     * @param retainOffsets   last offsets of batches to keep at least as empty batches
     * @param groupLastOffset last offset of the last batch of the group being rewritten
     */
    CompactionFilter(KeyOffsetMap map, long nowMs, long deleteRetentionMs, Set<Long> retainOffsets, long groupLastOffset) {
        // Clamped so that now + delete.retention.ms (the horizon written into batches) cannot overflow.
        super(nowMs, Math.min(deleteRetentionMs, Long.MAX_VALUE - Math.max(0, nowMs)));
        this.map = map;
        this.retainOffsets = retainOffsets;
        this.groupLastOffset = groupLastOffset;
    }

    @Override
    protected BatchRetentionResult checkBatchRetention(RecordBatch batch) {
        // Never rewrite a batch that rotted on disk: the copy would carry a fresh, valid CRC over the
        // damaged records. The round fails instead (the files stay as they are) and the log is reported.
        batch.ensureValid();
        boolean keepHeader = batch.lastOffset() == groupLastOffset
                || (batch.hasProducerId() && retainOffsets.contains(batch.lastOffset()));
        return new BatchRetentionResult(keepHeader ? BatchRetention.RETAIN_EMPTY : BatchRetention.DELETE_EMPTY, false);
    }

    @Override
    protected boolean shouldRetainRecord(RecordBatch batch, Record record) {
        if (batch.isControlBatch()) {
            return true;
        }
        if (!record.hasKey()) {
            keylessDropped++;
            recordsDropped++;
            return false;
        }
        long latest = map.get(record.key());
        if (latest > record.offset()) {
            recordsDropped++;
            return false;
        }
        if (!record.hasValue()) {
            OptionalLong horizon = batch.deleteHorizonMs();
            if (horizon.isPresent() && horizon.getAsLong() <= currentTime) {
                tombstonesDropped++;
                recordsDropped++;
                return false;
            }
            long h = horizon.isPresent() ? horizon.getAsLong() : currentTime + deleteRetentionMs;
            latestTombstoneHorizonMs = Math.max(latestTombstoneHorizonMs, h);
        }
        return true;
    }

    long recordsDropped() {
        return recordsDropped;
    }

    long keylessDropped() {
        return keylessDropped;
    }

    long tombstonesDropped() {
        return tombstonesDropped;
    }

    /** The latest delete horizon of a tombstone kept, or NO_TIMESTAMP when none was kept. */
    long latestTombstoneHorizonMs() {
        return latestTombstoneHorizonMs;
    }
}
