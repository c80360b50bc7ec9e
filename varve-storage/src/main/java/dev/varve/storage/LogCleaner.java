package dev.varve.storage;

import dev.varve.storage.PartitionLog.SegmentRef;
import dev.varve.storage.checkpoint.CheckpointFile;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.common.utils.internals.CloseableIterator;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;

/**
 * One cleaner worker: compacts one log per {@link #clean} call (one "round"), Kafka's algorithm.
 *
 * <pre>
 *   segments:  [ clean ........ ][ dirty ............... ][ uncleanable ][ active ]
 *                                ^ firstDirty             ^ firstUncleanable
 *   1. map:    key hash -> latest offset over the dirty section, aborted transactions' records left
 *              out (stops early when the map is full: endOffset = the first offset not mapped)
 *   2. rewrite every segment below endOffset, in groups of consecutive segments of at most
 *              segment.bytes together, each group into one new segment keeping only each key's latest
 *              record (CompactionFilter); offsets are kept, so the new segment has gaps. Aborted
 *              transactions' records go; markers go a round after their transaction is empty and their
 *              delete horizon has passed (CleanedTransactions, whose state runs across the groups)
 *   3. swap each group's new segment in (SegmentSwap), under the log's lock for a moment
 * </pre>
 *
 * <p>Nothing is read or written under the log's lock: the segments below the active one never change
 * except by truncation, retention or DeleteRecords, and the swap checks under the lock that every
 * segment the round depends on is still there with its size, or gives up that round (no harm: the
 * next round starts again from the same dirty offset). Before the first swap the dirty segments are
 * fsynced, so a record is never dropped from disk in favour of a newer one that a power failure could
 * still lose.
 *
 * <p>Memory: the map ({@code log.cleaner.dedupe.buffer.size / threads}) is allocated at the first round
 * and reused; I/O buffers likewise ({@link CleanerBuffers}).
 *
 * <p>Thread-safety: none; one scheduler task owns a worker. Different workers clean different logs
 * (the {@link LogCleanerManager} never hands one log to two workers).
 */
final class LogCleaner {
    private static final Logger LOG = LoggerFactory.getLogger(LogCleaner.class);

    /** Thrown inside a round when the manager asks it to stop (log deleted, shutdown). */
    static final class AbortedException extends RuntimeException {
        AbortedException(String message) {
            super(message, null, false, false);
        }
    }

    /**
     * What a round did.
     *
     * @param endOffset              the first offset not covered by the map: the next round's dirty offset
     * @param completed              every group was swapped in (false: the log changed under the round)
     * @param mapBytesRead           bytes of dirty segments read to build the map
     * @param bytesRead              bytes of segments rewritten (the round's input)
     * @param bytesWritten           bytes of the segments written in their place
     * @param abortedDropped         records of aborted transactions dropped
     * @param markersDropped         transaction markers dropped (past their delete horizon)
     * @param latestDeleteHorizonMs  latest delete horizon of a tombstone or marker kept, or NO_TIMESTAMP
     */
    record Result(TopicPartition topicPartition, long firstDirtyOffset, long endOffset, boolean completed, int groups,
                  long mapBytesRead, long bytesRead, long bytesWritten, long recordsRead, long recordsRetained,
                  long tombstonesDropped, long keylessDropped, long abortedDropped, long markersDropped,
                  long latestDeleteHorizonMs, long elapsedNanos) {
    }

    private final CleanerConfig config;
    private final Time time;
    private final SegmentSwap.Hook hook;
    private final CleanerBuffers buffers;
    private KeyOffsetMap map;

    LogCleaner(CleanerConfig config, Time time, SegmentSwap.Hook hook) {
        this.config = config;
        this.time = time;
        this.hook = hook;
        this.buffers = new CleanerBuffers(config.ioBytesPerBufferPerThread());
    }

    private KeyOffsetMap map() {
        if (map == null) {
            long heap = Runtime.getRuntime().maxMemory();
            int bytes = config.dedupeBytesPerThread();
            if (heap != Long.MAX_VALUE && bytes > heap / 2) {
                // Check before allocating: a map larger than half the heap would starve the broker.
                LOG.warn("log.cleaner.dedupe.buffer.size share of {} bytes is more than half the heap ({} bytes); using {}",
                        bytes, heap, heap / 4);
                bytes = (int) Math.min(bytes, heap / 4);
            }
            map = new KeyOffsetMap(Math.max(bytes, 2 * KeyOffsetMap.SLOT_BYTES), config.loadFactor());
        }
        return map;
    }

    /** Keys one round can map at most. */
    int mapCapacity() {
        return map().maxEntries();
    }

    /**
     * Cleans {@code log} from {@code firstDirty} (inclusive) to {@code firstUncleanable} (exclusive, a
     * segment base offset not above the active segment's). With an empty dirty section the round only
     * rewrites the clean section (to drop expired tombstones).
     */
    Result clean(PartitionLog log, PartitionLog.CleaningView view, long firstDirty, long firstUncleanable,
                 BooleanSupplier abort) throws IOException {
        long startNanos = time.nanoseconds();
        long nowMs = time.milliseconds();
        List<SegmentRef> segs = view.segments();
        KeyOffsetMap offsets = map();
        long[] mapBytes = new long[1];
        long endOffset;
        CleanedTransactions transactions;
        try {
            transactions = CleanedTransactions.of(segs);
            if (firstUncleanable <= firstDirty) {
                // no dirty section (a round for expired tombstones and markers alone): the map must be empty,
                // not the previous round's, which may be another log's
                offsets.clear();
                endOffset = firstDirty;
            } else {
                endOffset = buildMap(segs, firstDirty, firstUncleanable, transactions, abort, mapBytes);
            }
        } catch (IOException | RuntimeException e) {
            if (e instanceof AbortedException || log.stillHolds(segs)) {
                throw e;
            }
            LOG.info("{}: the log changed while its offset map was built ({}); skipping this round",
                    log.topicPartition(), e.toString());
            return new Result(log.topicPartition(), firstDirty, firstDirty, false, 0, mapBytes[0], 0, 0, 0, 0, 0, 0, 0, 0,
                    RecordBatch.NO_TIMESTAMP, time.nanoseconds() - startNanos);
        }
        if (firstUncleanable > firstDirty && endOffset <= firstDirty) {
            throw new IllegalStateException("log.cleaner.dedupe.buffer.size is too small to clean " + log.topicPartition()
                    + ": the map holds " + offsets.maxEntries() + " keys, fewer than the batch at offset " + firstDirty);
        }
        long activeBase = segs.get(segs.size() - 1).segment().baseOffset();
        List<SegmentRef> toClean = new ArrayList<>();
        for (SegmentRef ref : segs) {
            if (ref.segment().baseOffset() >= endOffset || ref.segment().baseOffset() >= activeBase) {
                break;
            }
            toClean.add(ref);
        }
        List<List<SegmentRef>> groups = group(toClean, segs, view.config().segmentBytes());
        Stats stats = new Stats();
        boolean completed = true;
        int done = 0;
        try {
            syncDirtySegments(log, segs, firstDirty, endOffset);
            for (List<SegmentRef> group : groups) {
                if (!cleanGroup(log, view, group, segs, endOffset, nowMs, transactions, abort, stats)) {
                    completed = false;
                    LOG.info("{}: the log changed during cleaning; this round stops after {} of {} groups",
                            log.topicPartition(), done, groups.size());
                    break;
                }
                done++;
            }
        } catch (IOException | RuntimeException e) {
            if (e instanceof AbortedException || log.stillHolds(segs)) {
                throw e;
            }
            // A segment was truncated or deleted while being read: the round is moot, not broken.
            LOG.info("{}: the log changed during cleaning ({}); this round stops after {} of {} groups",
                    log.topicPartition(), e.toString(), done, groups.size());
            completed = false;
        }
        buffers.shrink();
        return new Result(log.topicPartition(), firstDirty, endOffset, completed, groups.size(), mapBytes[0],
                stats.bytesRead, stats.bytesWritten, stats.recordsRead, stats.recordsRetained, stats.tombstonesDropped,
                stats.keylessDropped, stats.abortedDropped, stats.markersDropped, stats.horizon,
                time.nanoseconds() - startNanos);
    }

    private static final class Stats {
        long bytesRead;
        long bytesWritten;
        long recordsRead;
        long recordsRetained;
        long tombstonesDropped;
        long keylessDropped;
        long abortedDropped;
        long markersDropped;
        long horizon = RecordBatch.NO_TIMESTAMP;
    }

    /**
     * Puts every keyed record of [firstDirty, upper) into the map, batch by batch, until the map would
     * pass its load factor.
     *
     * @return the first offset not mapped ({@code upper} when everything fit)
     */
    private long buildMap(List<SegmentRef> segs, long firstDirty, long upper, CleanedTransactions transactions,
                          BooleanSupplier abort, long[] bytesRead) throws IOException {
        KeyOffsetMap offsets = map();
        offsets.clear();
        for (int i = 0; i < segs.size(); i++) {
            LogSegment s = segs.get(i).segment();
            long next = i + 1 < segs.size() ? segs.get(i + 1).segment().baseOffset() : Long.MAX_VALUE;
            if (next <= firstDirty) {
                continue;
            }
            if (s.baseOffset() >= upper) {
                break;
            }
            int end = segs.get(i).size();
            int position = 0;
            if (firstDirty > s.baseOffset()) {
                LogSegment.BatchPosition start = s.translateOffset(firstDirty);
                if (start == null) {
                    continue;
                }
                position = start.position();
            }
            while (position < end) {
                checkAbort(abort);
                MemoryRecords chunk = buffers.readBatches(s.log().channel(), position, end);
                for (MutableRecordBatch batch : chunk.batches()) {
                    // an aborted transaction's records never make a key's latest value: mapping them would
                    // drop the committed record they were meant to replace (Kafka skips them too)
                    if (batch.lastOffset() >= firstDirty && !batch.isControlBatch()
                            && !(batch.isTransactional() && transactions.isAborted(batch.producerId(), batch.baseOffset()))) {
                        Integer count = batch.countOrNull();
                        if (count != null && offsets.size() + count > offsets.maxEntries()) {
                            return Math.max(batch.baseOffset(), firstDirty);
                        }
                        try (CloseableIterator<Record> records = batch.streamingIterator(buffers.decompression)) {
                            while (records.hasNext()) {
                                Record r = records.next();
                                if (r.offset() >= firstDirty && r.hasKey()) {
                                    offsets.put(r.key(), r.offset());
                                }
                            }
                        }
                    }
                    bytesRead[0] += batch.sizeInBytes();
                }
                position += chunk.sizeInBytes();
            }
        }
        return upper;
    }

    /**
     * Fsyncs the segments whose records the map points at (they justify dropping older records from
     * the rewritten segments) and the directory, outside the log's lock.
     */
    private static void syncDirtySegments(PartitionLog log, List<SegmentRef> segs, long firstDirty, long endOffset)
            throws IOException {
        if (endOffset <= firstDirty) {
            return;
        }
        for (int i = 0; i < segs.size(); i++) {
            LogSegment s = segs.get(i).segment();
            long next = i + 1 < segs.size() ? segs.get(i + 1).segment().baseOffset() : Long.MAX_VALUE;
            if (next > firstDirty && s.baseOffset() < endOffset) {
                s.flush();
            }
        }
        CheckpointFile.fsyncDirectory(log.dir().toPath());
    }

    /**
     * Consecutive segments whose sizes add up to at most {@code segment.bytes} (a larger segment goes
     * alone) and whose offsets fit one index (last offset minus base at most Integer.MAX_VALUE).
     */
    static List<List<SegmentRef>> group(List<SegmentRef> toClean, List<SegmentRef> all, int maxBytes) {
        List<List<SegmentRef>> groups = new ArrayList<>();
        List<SegmentRef> current = new ArrayList<>();
        long bytes = 0;
        for (SegmentRef ref : toClean) {
            long last = nextBase(all, ref.segment().baseOffset()) - 1;
            boolean fits = !current.isEmpty() && bytes + ref.size() <= maxBytes
                    && last - current.get(0).segment().baseOffset() <= Integer.MAX_VALUE;
            if (!current.isEmpty() && !fits) {
                groups.add(current);
                current = new ArrayList<>();
                bytes = 0;
            }
            current.add(ref);
            bytes += ref.size();
        }
        if (!current.isEmpty()) {
            groups.add(current);
        }
        return groups;
    }

    private static long nextBase(List<SegmentRef> all, long base) {
        for (SegmentRef ref : all) {
            if (ref.segment().baseOffset() > base) {
                return ref.segment().baseOffset();
            }
        }
        return Long.MAX_VALUE;
    }

    /** Writes one group's compacted segment and swaps it in; false when the log changed meanwhile. */
    private boolean cleanGroup(PartitionLog log, PartitionLog.CleaningView view, List<SegmentRef> group,
                               List<SegmentRef> all, long endOffset, long nowMs, CleanedTransactions transactions,
                               BooleanSupplier abort, Stats stats) throws IOException {
        LogSegment last = group.get(group.size() - 1).segment();
        long groupLastOffset = last.readNextOffset() - 1;
        CompactionFilter filter = new CompactionFilter(map(), nowMs, view.config().deleteRetentionMs(),
                view.retainOffsets(), view.markerOnlyProducers(), transactions, groupLastOffset);
        long base = group.get(0).segment().baseOffset();
        File dir = log.dir();
        deleteStaleCleanedFiles(dir, base);
        LogSegment cleaned = LogSegment.open(dir, base, view.config(), nowMs, LogFileNames.CLEANED_SUFFIX);
        boolean swapped;
        try {
            // the aborted transactions whose markers are in the group and that still have data get their
            // index entries in the cleaned segment as the filter reads the markers
            transactions.writeIndexTo(cleaned.txnIndex());
            for (SegmentRef ref : group) {
                copyFiltered(ref, cleaned, filter, abort, stats);
            }
            cleaned.onBecomeInactive();
            cleaned.flush();
            List<LogSegment> replaced = group.stream().map(SegmentRef::segment).toList();
            List<SegmentRef> unchanged = all.stream()
                    .filter(r -> r.segment().baseOffset() >= base && r.segment().baseOffset() < Math.max(endOffset, last.baseOffset() + 1))
                    .toList();
            swapped = log.replaceSegments(cleaned, replaced, unchanged, hook);
        } catch (IOException | RuntimeException e) {
            // Errors (and a simulated crash) leave the files as they are, as a crash would.
            deleteIfStillCleaned(cleaned);
            throw e;
        }
        if (!swapped) {
            deleteIfStillCleaned(cleaned);
        } else {
            stats.tombstonesDropped += filter.tombstonesDropped();
            stats.keylessDropped += filter.keylessDropped();
            stats.abortedDropped += filter.abortedDropped();
            stats.markersDropped += filter.markersDropped();
            stats.horizon = Math.max(stats.horizon, filter.latestDeleteHorizonMs());
        }
        return swapped;
    }

    private void copyFiltered(SegmentRef ref, LogSegment cleaned, CompactionFilter filter, BooleanSupplier abort,
                              Stats stats) throws IOException {
        LogSegment source = ref.segment();
        int position = 0;
        int end = ref.size();
        while (position < end) {
            checkAbort(abort);
            MemoryRecords chunk = buffers.readBatches(source.log().channel(), position, end);
            MemoryRecords.FilterResult result = chunk.filterTo(filter, buffers.writeBuffer(), buffers.decompression,
                    Integer.MAX_VALUE - 8);
            if (result.bytesRead() <= 0) {
                throw new IllegalStateException("cleaning " + source + " made no progress at position " + position);
            }
            position += result.bytesRead();
            ByteBuffer out = result.outputBuffer();
            out.flip();
            int written = out.remaining();
            if (written > 0) {
                cleaned.append(MemoryRecords.readableRecords(out));
            }
            buffers.adoptWriteBuffer(out);
            stats.bytesRead += result.bytesRead();
            stats.bytesWritten += written;
            stats.recordsRead += result.messagesRead();
            stats.recordsRetained += result.messagesRetained();
        }
    }

    private static void checkAbort(BooleanSupplier abort) {
        if (abort.getAsBoolean()) {
            throw new AbortedException("cleaning aborted");
        }
    }

    private static void deleteStaleCleanedFiles(File dir, long base) throws IOException {
        for (File f : List.of(LogFileNames.logFile(dir, base), LogFileNames.offsetIndexFile(dir, base),
                LogFileNames.timeIndexFile(dir, base), LogFileNames.txnIndexFile(dir, base))) {
            Files.deleteIfExists(new File(dir, f.getName() + LogFileNames.CLEANED_SUFFIX).toPath());
        }
    }

    /**
     * Deletes an unused replacement, but only while its files still carry {@code .cleaned}: once a swap
     * has renamed them, they may be the only copy of the group's data (start-up completes the swap).
     */
    private static void deleteIfStillCleaned(LogSegment cleaned) {
        if (!cleaned.log().file().getName().endsWith(LogFileNames.CLEANED_SUFFIX)) {
            LOG.error("{}: a segment swap failed part-way; the next start-up completes it", cleaned);
            return;
        }
        try {
            cleaned.deleteIfExists();
        } catch (IOException | RuntimeException e) {
            LOG.warn("cannot delete the unused cleaned segment {}; the next start-up removes it", cleaned, e);
        }
    }
}
