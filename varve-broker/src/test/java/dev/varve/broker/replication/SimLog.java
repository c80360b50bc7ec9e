package dev.varve.broker.replication;

import dev.varve.storage.EpochEntry;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * One replica's partition log and the disk under it, in memory: records grouped in batches (as the
 * leader wrote them; followers copy batches whole), the leader-epoch cache, the high watermark, the
 * flushed prefix (recovery point) and the high-watermark checkpoint.
 *
 * <p>It mirrors {@code PartitionLog}: {@link #truncateTo} removes a batch that holds the offset whole
 * and cuts the epoch cache at the new log end even when no record is removed; an append must start at
 * the log end.
 *
 * <p>Disk faults ({@link #recoverAfterCrash}):
 * <ul>
 *   <li>a process crash ({@code kill -9}) keeps every write (the page cache survives);</li>
 *   <li>a power failure keeps the flushed prefix and a random prefix of what was written after it,
 *       which may end inside a batch (a torn last batch). Recovery, like {@code SegmentRecovery},
 *       keeps whole batches only and cuts the torn one.</li>
 * </ul>
 * The epoch cache is written through (Kafka checkpoints it on every change), so after recovery it is
 * only cut at the recovered log end; the high watermark restarts from its last checkpoint (written at
 * each flush), capped at the log end.
 */
final class SimLog implements ReplicaLog {
    /** One record. Batches are recognised by their bounds: every record of a batch carries them. */
    record Rec(long offset, int epoch, long value, long batchBase, long batchEnd) {
    }

    /** What a crash did to the log. */
    record Recovery(long logEndBefore, long flushedOffset, long survivingRecords, long logEndAfter, boolean tornBatchCut) {
    }

    final List<Rec> records = new ArrayList<>();
    final List<EpochEntry> epochs = new ArrayList<>();
    long highWatermark;
    long flushedOffset;
    long highWatermarkCheckpoint;
    /** Offsets below this are known to equal the committed log (the invariant checker's cache). */
    long verifiedPrefix;

    long leo() {
        return records.size();
    }

    // ---------------------------------------------------------------- ReplicaLog (what the shared replica code sees)

    /** Log start offsets are not modelled: always 0 (retention and DeleteRecords are not simulated). */
    @Override
    public long logStartOffset() {
        return 0;
    }

    @Override
    public long logEndOffset() {
        return leo();
    }

    @Override
    public long highWatermark() {
        return highWatermark;
    }

    /** PartitionLog.updateHighWatermark: clamped to [log start, log end]. */
    @Override
    public void updateHighWatermark(long offset) {
        highWatermark = Math.max(0, Math.min(offset, leo()));
    }

    @Override
    public int latestEpoch() {
        return latestEpochOrUndefined();
    }

    @Override
    public List<EpochEntry> epochEntries() {
        return epochSnapshot();
    }

    @Override
    public void truncateFullyAndStartAt(long offset) {
        throw new ReplicationSimulation.InvariantViolation("log start offsets are not modelled: restart at " + offset + " on " + this);
    }

    @Override
    public void deleteRecordsBefore(long offset) {
        throw new ReplicationSimulation.InvariantViolation("log start offsets are not modelled: delete before " + offset + " on " + this);
    }

    int latestEpochOrUndefined() {
        return epochs.isEmpty() ? EpochEndOffsets.UNDEFINED_EPOCH : epochs.get(epochs.size() - 1).epoch();
    }

    List<EpochEntry> epochSnapshot() {
        return List.copyOf(epochs);
    }

    /** LeaderEpochCache.assign: a new latest epoch; entries at or after its start are replaced. */
    @Override
    public void assignEpoch(int epoch, long startOffset) {
        if (!epochs.isEmpty() && epoch <= epochs.get(epochs.size() - 1).epoch()) {
            return;
        }
        epochs.removeIf(e -> e.startOffset() >= startOffset);
        epochs.add(new EpochEntry(epoch, startOffset));
    }

    /** Appends one whole batch at the log end. */
    void appendBatch(List<Rec> batch) {
        for (Rec rec : batch) {
            if (rec.offset() != leo()) {
                throw new ReplicationSimulation.InvariantViolation("append of " + rec + " at log end " + leo());
            }
            records.add(rec);
            assignEpoch(rec.epoch(), rec.offset());
        }
    }

    /** PartitionLog.truncateTo: the batch holding {@code offset} goes whole; the epoch cache is cut at the new end. */
    @Override
    public void truncateTo(long offset) {
        if (offset < leo()) {
            long cut = records.get((int) offset).batchBase();
            records.subList((int) cut, records.size()).clear();
        }
        epochs.removeIf(e -> e.startOffset() >= leo());
        highWatermark = Math.min(highWatermark, leo());
        flushedOffset = Math.min(flushedOffset, leo());
        verifiedPrefix = Math.min(verifiedPrefix, leo());
    }

    void flush() {
        flushedOffset = leo();
        highWatermarkCheckpoint = highWatermark;
    }

    /**
     * The log as a restarted broker finds it. {@code powerFailure}: only the flushed prefix is certain,
     * a random number of later records reached the disk, the last of them possibly a torn batch.
     */
    Recovery recoverAfterCrash(boolean powerFailure, Random random) {
        long before = leo();
        long flushedBefore = flushedOffset;
        long surviving = before;
        if (powerFailure && flushedOffset < before) {
            surviving = flushedOffset + random.nextInt((int) (before - flushedOffset) + 1);
        }
        // Recovery: scan from the recovery point, keep whole batches, cut a torn one.
        long end = flushedOffset;
        while (end < surviving) {
            Rec first = records.get((int) end);
            if (first.batchBase() != end) {
                throw new ReplicationSimulation.InvariantViolation("batch boundary expected at " + end + ": " + first);
            }
            if (first.batchEnd() > surviving) {
                break; // torn: the batch's bytes did not all reach the disk
            }
            end = first.batchEnd();
        }
        boolean torn = end < surviving;
        records.subList((int) end, records.size()).clear();
        long recovered = end;
        epochs.removeIf(e -> e.startOffset() >= recovered);
        for (long o = flushedOffset; o < end; o++) {
            assignEpoch(records.get((int) o).epoch(), o); // segment recovery re-reads the batches' epochs
        }
        highWatermark = Math.min(highWatermarkCheckpoint, end);
        flushedOffset = end; // recovery flushes what it validated
        verifiedPrefix = Math.min(verifiedPrefix, end);
        return new Recovery(before, flushedBefore, surviving, end, torn);
    }

    /** Whole batches from {@code fetchOffset}, at most {@code maxBatches}. */
    List<Rec> batchesFrom(long fetchOffset, int maxBatches) {
        List<Rec> out = new ArrayList<>();
        long o = fetchOffset;
        for (int b = 0; b < maxBatches && o < leo(); b++) {
            Rec first = records.get((int) o);
            if (first.batchBase() != o) {
                throw new ReplicationSimulation.InvariantViolation("fetch at " + fetchOffset + " starts inside batch " + first);
            }
            for (long i = o; i < first.batchEnd(); i++) {
                out.add(records.get((int) i));
            }
            o = first.batchEnd();
        }
        return out;
    }

    @Override
    public String toString() {
        return "leo=" + leo() + " hw=" + highWatermark + " flushed=" + flushedOffset + " epochs=" + epochs;
    }
}
