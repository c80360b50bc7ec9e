package dev.varve.storage;

import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.RecordBatch;

import java.util.Map;
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
 *   <li>The records of an aborted transaction are dropped ({@link CleanedTransactions} tells).</li>
 *   <li>A transaction marker (control batch) is kept whole while its transaction may have data before
 *       it. Once the transaction is empty, the marker's batch is stamped with a delete horizon the way a
 *       tombstone's is, and a later round after that horizon drops the marker (Kafka's rule). Control
 *       batches of other types are kept.</li>
 *   <li>A batch that an idempotent producer still remembers, the last control batch of a producer the
 *       partition remembers no data batch of (Kafka keeps it for the producer's epoch), and the last batch
 *       of the group being rewritten are kept even when all their records go, as an empty batch (header
 *       only): the first two keep sequence numbers and epochs (and so deduplication and fencing) across a
 *       reload, the last keeps the cleaned segment ending exactly where the group ended, which recovery
 *       relies on.</li>
 * </ul>
 *
 * <p>Thread-safety: none; one filter serves one group of one round.
 */
final class CompactionFilter extends MemoryRecords.RecordFilter {
    private final KeyOffsetMap map;
    private final Set<Long> retainOffsets;
    private final Map<Long, Short> markerOnlyProducers;
    private final CleanedTransactions transactions;
    private final long groupLastOffset;
    /** The current batch's records all go (an aborted transaction's, or a marker past its horizon). */
    private boolean dropBatchRecords;
    /** The current batch is a marker of an empty transaction that stays for now (it gets a horizon). */
    private boolean markerOfEmptyTxn;
    private long recordsDropped;
    private long keylessDropped;
    private long tombstonesDropped;
    private long abortedDropped;
    private long markersDropped;
    private long latestDeleteHorizonMs = RecordBatch.NO_TIMESTAMP;

    /**
     * @param map                 latest offset per key of the round's dirty section (may be empty)
     * @param nowMs               the cleaner's clock: stamps new delete horizons, expires old ones
     * @param retainOffsets       last offsets of batches to keep at least as empty batches
     * @param markerOnlyProducers producers the partition remembers no data batch of, with their epoch:
     *                            their control batches of that epoch are kept at least as empty batches
     * @param transactions        the round's transaction state, fed every batch in log order
     * @param groupLastOffset     last offset of the last batch of the group being rewritten
     */
    CompactionFilter(KeyOffsetMap map, long nowMs, long deleteRetentionMs, Set<Long> retainOffsets,
                     Map<Long, Short> markerOnlyProducers, CleanedTransactions transactions, long groupLastOffset) {
        // Clamped so that now + delete.retention.ms (the horizon written into batches) cannot overflow.
        super(nowMs, Math.min(deleteRetentionMs, Long.MAX_VALUE - Math.max(0, nowMs)));
        this.map = map;
        this.retainOffsets = retainOffsets;
        this.markerOnlyProducers = markerOnlyProducers;
        this.transactions = transactions;
        this.groupLastOffset = groupLastOffset;
    }

    @Override
    protected BatchRetentionResult checkBatchRetention(RecordBatch batch) {
        // Never rewrite a batch that rotted on disk: the copy would carry a fresh, valid CRC over the
        // damaged records. The round fails instead (the files stay as they are) and the log is reported.
        batch.ensureValid();
        boolean control = batch.isControlBatch();
        // every batch goes through the transaction state, in log order, whatever is decided below
        boolean txnEmptyOrAborted = control ? transactions.onControlBatch(batch) : transactions.onDataBatch(batch);
        if (control) {
            OptionalLong horizon = batch.deleteHorizonMs();
            dropBatchRecords = txnEmptyOrAborted && horizon.isPresent() && horizon.getAsLong() <= currentTime;
            markerOfEmptyTxn = txnEmptyOrAborted && !dropBatchRecords;
        } else {
            dropBatchRecords = txnEmptyOrAborted;
            markerOfEmptyTxn = false;
        }
        Integer count = batch.countOrNull();
        if (dropBatchRecords && count != null && count > 0) {
            recordsDropped += count;
            if (control) {
                markersDropped++;
            } else {
                abortedDropped += count;
            }
        }
        boolean keepHeader = batch.lastOffset() == groupLastOffset || lastOfRememberedProducer(batch);
        BatchRetention retention = keepHeader ? BatchRetention.RETAIN_EMPTY
                : dropBatchRecords ? BatchRetention.DELETE : BatchRetention.DELETE_EMPTY;
        // the second field asks filterTo to stamp a delete horizon on a marker of an empty transaction
        return new BatchRetentionResult(retention, control && txnEmptyOrAborted);
    }

    private boolean lastOfRememberedProducer(RecordBatch batch) {
        if (!batch.hasProducerId()) {
            return false;
        }
        if (retainOffsets.contains(batch.lastOffset())) {
            return true;
        }
        Short epoch = markerOnlyProducers.get(batch.producerId());
        return batch.isControlBatch() && epoch != null && epoch == batch.producerEpoch();
    }

    @Override
    protected boolean shouldRetainRecord(RecordBatch batch, Record record) {
        if (dropBatchRecords) {
            return false;
        }
        if (batch.isControlBatch()) {
            if (markerOfEmptyTxn) {
                OptionalLong horizon = batch.deleteHorizonMs();
                noteHorizon(horizon.isPresent() ? horizon.getAsLong() : currentTime + deleteRetentionMs);
            }
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
            noteHorizon(horizon.isPresent() ? horizon.getAsLong() : currentTime + deleteRetentionMs);
        }
        return true;
    }

    private void noteHorizon(long horizonMs) {
        latestDeleteHorizonMs = Math.max(latestDeleteHorizonMs, horizonMs);
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

    /** Records of aborted transactions dropped. */
    long abortedDropped() {
        return abortedDropped;
    }

    /** Transaction markers dropped (their delete horizon had passed). */
    long markersDropped() {
        return markersDropped;
    }

    /**
     * The latest delete horizon of a tombstone or a marker kept with one (or stamped with one now), or
     * NO_TIMESTAMP when none was kept: a round after it has something to drop.
     */
    long latestDeleteHorizonMs() {
        return latestDeleteHorizonMs;
    }
}
