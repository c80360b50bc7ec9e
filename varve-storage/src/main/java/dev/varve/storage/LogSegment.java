package dev.varve.storage;

import dev.varve.storage.index.OffsetIndex;
import dev.varve.storage.index.OffsetPosition;
import dev.varve.storage.index.TimeIndex;
import dev.varve.storage.index.TransactionIndex;
import dev.varve.storage.index.TimestampOffset;
import org.apache.kafka.common.record.internal.FileLogInputStream.FileChannelRecordBatch;
import org.apache.kafka.common.record.internal.FileRecords;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.utils.internals.BufferSupplier;
import org.apache.kafka.common.utils.internals.CloseableIterator;

import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.util.Optional;

/**
 * One segment of a partition log: a {@code .log} file of Kafka v2 record batches, byte for byte as
 * they travel on the wire, with its sparse {@code .index} and {@code .timeindex}.
 *
 * <pre>
 *   00000000000000000100.log        | batch 100-115 | batch 116-130 | batch 131-131 | ...
 *   00000000000000000100.index      (130-100, pos of batch 116-130) ...   one entry per index.interval.bytes
 *   00000000000000000100.timeindex  (max ts so far, offset where reached) ...
 * </pre>
 *
 * Thread-safety: one writer (the owning log, under its lock) appends, truncates and rolls; readers
 * call {@link #read}, {@link #translateOffset} and {@link #findOffsetByTimestamp} concurrently. Bytes
 * become visible to readers only after the file size is published by {@link FileRecords#append}.
 */
public final class LogSegment {
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(LogSegment.class);
    private final long baseOffset;
    private final FileRecords log;
    private final OffsetIndex offsetIndex;
    private final TimeIndex timeIndex;
    private final TransactionIndex txnIndex;
    private final int indexIntervalBytes;
    private final long createdMs;
    /** How much earlier than its age limit this segment rolls ({@code segment.jitter.ms}, drawn when opened). */
    private final long rollJitterMs;

    // Writer state (guarded by the owning log's lock), published via volatile for readers.
    private int bytesSinceLastIndexEntry;
    private volatile long maxTimestampSoFar = Long.MIN_VALUE; // MIN_VALUE: not loaded yet
    private volatile long offsetOfMaxTimestampSoFar;
    private volatile long firstBatchTimestamp = Long.MIN_VALUE; // MIN_VALUE: not loaded yet

    private LogSegment(long baseOffset, FileRecords log, OffsetIndex offsetIndex, TimeIndex timeIndex, TransactionIndex txnIndex,
                       int indexIntervalBytes, long createdMs, long rollJitterMs) {
        this.txnIndex = txnIndex;
        this.rollJitterMs = rollJitterMs;
        this.baseOffset = baseOffset;
        this.log = log;
        this.offsetIndex = offsetIndex;
        this.timeIndex = timeIndex;
        this.indexIntervalBytes = indexIntervalBytes;
        this.createdMs = createdMs;
    }

    /** Opens (creating if absent) the segment with this base offset in {@code dir}. */
    public static LogSegment open(File dir, long baseOffset, LogConfig config, long nowMs) throws IOException {
        return open(dir, baseOffset, config, nowMs, "");
    }

    /**
     * Opens (creating if absent) the segment whose three files carry {@code fileSuffix} after their
     * usual names ({@code .cleaned} while the cleaner writes a replacement, {@code .swap} while one is
     * being swapped in).
     */
    public static LogSegment open(File dir, long baseOffset, LogConfig config, long nowMs, String fileSuffix) throws IOException {
        File logFile = withSuffix(LogFileNames.logFile(dir, baseOffset), fileSuffix);
        if (!logFile.exists()) {
            DiskFaults.check(DiskFaults.Op.CREATE, logFile.toPath());
        }
        FileRecords records = FileRecords.open(logFile);
        try {
            OffsetIndex offsetIndex = new OffsetIndex(withSuffix(LogFileNames.offsetIndexFile(dir, baseOffset), fileSuffix),
                    baseOffset, config.segmentIndexBytes());
            TimeIndex timeIndex = new TimeIndex(withSuffix(LogFileNames.timeIndexFile(dir, baseOffset), fileSuffix),
                    baseOffset, config.segmentIndexBytes());
            TransactionIndex txnIndex = new TransactionIndex(baseOffset,
                    withSuffix(LogFileNames.txnIndexFile(dir, baseOffset), fileSuffix));
            return new LogSegment(baseOffset, records, offsetIndex, timeIndex, txnIndex, config.indexIntervalBytes(), nowMs,
                    config.randomSegmentJitterMs());
        } catch (IOException | RuntimeException e) {
            records.close();
            throw e;
        }
    }

    private static File withSuffix(File file, String suffix) {
        return suffix.isEmpty() ? file : new File(file.getParentFile(), file.getName() + suffix);
    }

    public long baseOffset() {
        return baseOffset;
    }

    /** How much earlier than {@code segment.ms} this segment rolls (0 without {@code segment.jitter.ms}). */
    public long rollJitterMs() {
        return rollJitterMs;
    }

    public int size() {
        return log.sizeInBytes();
    }

    public FileRecords log() {
        return log;
    }

    public OffsetIndex offsetIndex() {
        return offsetIndex;
    }

    /** The segment's aborted-transaction index (its file exists once an abort marker is in the segment). */
    public TransactionIndex txnIndex() {
        return txnIndex;
    }

    public TimeIndex timeIndex() {
        return timeIndex;
    }

    /**
     * Appends batches whose offsets are already assigned (all above this segment's last offset),
     * then indexes them.
     */
    public void append(MemoryRecords records) throws IOException {
        if (records.sizeInBytes() == 0) {
            return;
        }
        ensureTimestampsLoaded();
        int position = log.sizeInBytes();
        DiskFaults.check(DiskFaults.Op.SEGMENT_WRITE, log.file().toPath());
        int failAfter = DiskFaults.failAfter(log.file().toPath(), records.sizeInBytes());
        if (failAfter >= 0) {
            // an injected EIO part-way: some of the bytes reach the file, as with a real failing write
            java.nio.ByteBuffer part = records.buffer().duplicate();
            part.limit(part.position() + Math.min(failAfter, records.sizeInBytes()));
            while (part.hasRemaining()) {
                log.channel().write(part); // at the channel's position, which moves, as write(2) does
            }
            throw new IOException("injected EIO after " + failAfter + " of " + records.sizeInBytes() + " bytes");
        }
        log.append(records);
        for (MutableRecordBatch batch : records.batches()) {
            indexBatch(batch, position);
            position += batch.sizeInBytes();
        }
    }

    private void indexBatch(RecordBatch batch, int position) {
        if (position == 0) {
            firstBatchTimestamp = batch.maxTimestamp();
        }
        if (batch.maxTimestamp() > maxTimestampSoFar) {
            maxTimestampSoFar = batch.maxTimestamp();
            offsetOfMaxTimestampSoFar = batch.lastOffset();
        }
        // A multi-batch append may meet a full index: the entry is skipped (a sparser index is still
        // correct) and the next append rolls.
        if (bytesSinceLastIndexEntry > indexIntervalBytes && !offsetIndex.isFull() && !timeIndex.isFull()) {
            offsetIndex.append(batch.lastOffset(), position);
            timeIndex.maybeAppend(maxTimestampSoFar, offsetOfMaxTimestampSoFar, false);
            bytesSinceLastIndexEntry = 0;
        }
        bytesSinceLastIndexEntry += batch.sizeInBytes();
    }

    /** Loads the largest timestamp from the time index (lazily, so opening a segment maps nothing). */
    private void ensureTimestampsLoaded() {
        if (maxTimestampSoFar == Long.MIN_VALUE) {
            TimestampOffset last = timeIndex.lastEntry();
            offsetOfMaxTimestampSoFar = last.offset();
            maxTimestampSoFar = last.timestamp();
        }
    }

    /** The largest record timestamp in the segment, or NO_TIMESTAMP. */
    public long maxTimestampSoFar() {
        ensureTimestampsLoaded();
        return maxTimestampSoFar;
    }

    /** The offset where {@link #maxTimestampSoFar()} was first reached. */
    public long offsetOfMaxTimestampSoFar() {
        ensureTimestampsLoaded();
        return offsetOfMaxTimestampSoFar;
    }

    /** The timestamp retention compares with: the newest record's, else the file's modification time. */
    public long largestTimestamp() throws IOException {
        long max = maxTimestampSoFar();
        return max >= 0 ? max : lastModifiedMs();
    }

    public long lastModifiedMs() throws IOException {
        return Files.getLastModifiedTime(log.file().toPath()).toMillis();
    }

    /**
     * How long this segment has been filling, for {@code segment.ms}, as Kafka measures it: from the
     * first batch's timestamp to the incoming batch's, or (when records carry no timestamps) from the
     * segment's creation on the broker clock.
     */
    public long timeWaitedForRollMs(long incomingMaxTimestamp, long nowMs) {
        if (firstBatchTimestamp == Long.MIN_VALUE) {
            Optional<FileChannelRecordBatch> first = firstBatch();
            firstBatchTimestamp = first.map(RecordBatch::maxTimestamp).orElse(RecordBatch.NO_TIMESTAMP);
        }
        if (firstBatchTimestamp >= 0 && incomingMaxTimestamp >= 0) {
            return incomingMaxTimestamp - firstBatchTimestamp;
        }
        return nowMs - createdMs;
    }

    /**
     * The first batch's maximum timestamp (Kafka's "first batch timestamp", used by
     * {@code max.compaction.lag.ms}), or NO_TIMESTAMP when the segment is empty.
     */
    public long firstBatchTimestamp() {
        if (firstBatchTimestamp == Long.MIN_VALUE) {
            firstBatchTimestamp = firstBatch().map(RecordBatch::maxTimestamp).orElse(RecordBatch.NO_TIMESTAMP);
        }
        return firstBatchTimestamp;
    }

    private Optional<FileChannelRecordBatch> firstBatch() {
        var it = log.batches().iterator();
        return it.hasNext() ? Optional.of(it.next()) : Optional.empty();
    }

    /**
     * Whether the next append of {@code bytes} bytes ending at {@code lastOffset}, newest timestamp
     * {@code maxTimestamp}, must go to a new
     * segment: size, age, a full index, or an offset too far from the base for the index.
     */
    public boolean shouldRoll(LogConfig config, int bytes, long lastOffset, long maxTimestamp, long nowMs) {
        if (size() == 0) {
            return false;
        }
        return size() > config.segmentBytes() - bytes
                || timeWaitedForRollMs(maxTimestamp, nowMs) > config.effectiveSegmentMs() - rollJitterMs
                || offsetIndex.isFull()
                || timeIndex.isFull()
                || !offsetIndex.canAppendOffset(lastOffset);
    }

    /** Where a batch starts, and its size when it was read (-1 when only its position is known). */
    public record BatchPosition(int position, int size) {
    }

    /**
     * The first batch whose last offset is at least {@code offset}; null when there is none.
     *
     * <p>The offset index gives the indexed batch at or before the offset (its last offset is in the
     * entry) and the next indexed batch; only the headers between them are read, one positional read
     * of {@value BatchHeaders#PREFIX_BYTES} bytes each. With Kafka's default index interval and
     * batches of a few KiB this is at most one read.
     */
    public BatchPosition translateOffset(long offset) {
        OffsetPosition[] around = offsetIndex.bracket(offset);
        int end = log.sizeInBytes();
        BatchPosition found = search(offset, around[0], around[1], end);
        if (found == INDEX_MISMATCH) {
            // The index disagrees with the log: never trust it for this lookup.
            LOG.warn("offset index {} entry {} does not match the log; scanning from the start",
                    offsetIndex.file(), around[0]);
            return search(offset, null, null, end);
        }
        return found;
    }

    /** {@link #search}'s answer when the floor entry does not point at a batch ending at its offset. */
    private static final BatchPosition INDEX_MISMATCH = new BatchPosition(-1, -1);

    /**
     * Walks batch headers from the floor entry's batch (or the segment start) to the first batch whose
     * last offset is at least {@code offset}. The floor entry is checked against the header it points
     * at; the ceiling entry's batch, reached from a header that was read, needs no read of its own.
     *
     * @return the batch, null when there is none, or {@link #INDEX_MISMATCH}
     */
    private BatchPosition search(long offset, OffsetPosition floor, OffsetPosition ceiling, int end) {
        int position = floor == null ? 0 : floor.position();
        boolean atFloor = floor != null;
        ByteBuffer header = BatchHeaders.buffer();
        while (atFloor || position < end) {
            if (!atFloor && ceiling != null && position == ceiling.position()) {
                return new BatchPosition(position, -1); // its last offset (in the entry) is above the offset
            }
            boolean read = BatchHeaders.read(log.channel(), position, end, header);
            if (atFloor && (!read || BatchHeaders.lastOffset(header) != floor.offset())) {
                return INDEX_MISMATCH;
            }
            if (!read) {
                return null;
            }
            int size = BatchHeaders.size(header);
            if (BatchHeaders.lastOffset(header) >= offset) {
                return new BatchPosition(position, size);
            }
            atFloor = false;
            position += size;
        }
        return null;
    }

    /**
     * Whether the last entries of both indexes agree with the log, for a segment below the recovery
     * point after an unclean stop: the offset index's last entry points at a batch ending at its
     * offset; the time index's last entry (the segment's largest timestamp, written on roll) names an
     * offset inside the segment and is not older than the last batch. Reads only the headers after
     * the last indexed batch.
     */
    public boolean lastIndexEntriesMatchLog() {
        int end = log.sizeInBytes();
        ByteBuffer header = BatchHeaders.buffer();
        int position = 0;
        if (offsetIndex.entries() > 0) {
            OffsetPosition last = offsetIndex.lastEntry();
            if (!BatchHeaders.read(log.channel(), last.position(), end, header)
                    || BatchHeaders.lastOffset(header) != last.offset()) {
                return false;
            }
            position = last.position();
        }
        long nextOffset = baseOffset;
        long lastBatchMaxTimestamp = RecordBatch.NO_TIMESTAMP;
        while (BatchHeaders.read(log.channel(), position, end, header)) {
            nextOffset = BatchHeaders.lastOffset(header) + 1;
            lastBatchMaxTimestamp = BatchHeaders.maxTimestamp(header);
            position += BatchHeaders.size(header);
        }
        if (position != end) {
            return false;
        }
        if (timeIndex.entries() == 0) {
            return lastBatchMaxTimestamp < 0;
        }
        TimestampOffset last = timeIndex.lastEntry();
        return last.offset() < nextOffset && last.timestamp() >= lastBatchMaxTimestamp;
    }

    private int sizeOfBatchAt(int position) {
        ByteBuffer header = BatchHeaders.buffer();
        if (!BatchHeaders.read(log.channel(), position, log.sizeInBytes(), header)) {
            throw new org.apache.kafka.common.errors.CorruptRecordException("no whole batch at position " + position + " of " + log.file());
        }
        return BatchHeaders.size(header);
    }

    /**
     * Reads whole batches from the one containing {@code startOffset}.
     *
     * @param maxSize      bytes wanted; the result never splits a batch
     * @param maxPosition  file position not to read past (a batch boundary: the log end or the upper bound)
     * @param minOneBatch  return the first batch even if it is larger than maxSize
     * @return null when no batch in this segment reaches startOffset
     */
    public LogSlice read(long startOffset, int maxSize, int maxPosition, boolean minOneBatch) {
        BatchPosition start = translateOffset(startOffset);
        if (start == null) {
            return null;
        }
        int from = start.position();
        if (from >= maxPosition) {
            return new LogSlice(startOffset, log.slice(from, 0));
        }
        long limit = Math.min((long) maxPosition, (long) from + Math.max(0, maxSize));
        int end = endOfWholeBatches(from, (int) limit, maxPosition);
        if (end == from && minOneBatch) {
            end = from + (start.size() >= 0 ? start.size() : sizeOfBatchAt(from));
        }
        return new LogSlice(startOffset, log.slice(from, end - from));
    }

    /**
     * A batch boundary at most {@code limit} and at least {@code from}: the last indexed batch start
     * at or below the limit when there is one past {@code from} (no read at all; the slice may be up
     * to one index interval shorter than the limit allows), else the end of the last whole batch
     * found by reading headers forward from {@code from}.
     */
    private int endOfWholeBatches(int from, int limit, int maxPosition) {
        if (limit == maxPosition) {
            return limit; // maxPosition is always a batch boundary
        }
        int indexed = offsetIndex.lookupByPosition(limit).position();
        if (indexed > from) {
            return indexed;
        }
        int end = from;
        ByteBuffer header = BatchHeaders.buffer();
        while (BatchHeaders.read(log.channel(), end, limit, header)) {
            int batchEnd = end + BatchHeaders.size(header);
            if (batchEnd > limit) {
                break;
            }
            end = batchEnd;
        }
        return end;
    }

    /**
     * The first record with timestamp at least {@code timestamp} and offset at least
     * {@code startingOffset}, with its batch's leader epoch.
     */
    public Optional<FileRecords.TimestampAndOffset> findOffsetByTimestamp(long timestamp, long startingOffset) {
        TimestampOffset entry = timeIndex.lookup(timestamp);
        int position = offsetIndex.lookup(Math.max(entry.offset(), startingOffset)).position();
        for (FileChannelRecordBatch batch : log.batchesFrom(position)) {
            if (batch.maxTimestamp() < timestamp || batch.lastOffset() < startingOffset) {
                continue;
            }
            try (CloseableIterator<Record> records = batch.streamingIterator(BufferSupplier.NO_CACHING)) {
                while (records.hasNext()) {
                    Record record = records.next();
                    if (record.timestamp() >= timestamp && record.offset() >= startingOffset) {
                        Optional<Integer> epoch = batch.partitionLeaderEpoch() == RecordBatch.NO_PARTITION_LEADER_EPOCH
                                ? Optional.empty() : Optional.of(batch.partitionLeaderEpoch());
                        return Optional.of(new FileRecords.TimestampAndOffset(record.timestamp(), record.offset(), epoch));
                    }
                }
            }
        }
        return Optional.empty();
    }

    /** The offset after the last batch, or the base offset when empty. */
    public long readNextOffset() {
        int from = offsetIndex.lookup(Long.MAX_VALUE).position();
        long next = baseOffset;
        for (FileChannelRecordBatch batch : log.batchesFrom(from)) {
            next = batch.nextOffset();
        }
        return next;
    }

    /**
     * Removes every batch from the one containing {@code offset} on.
     *
     * @return bytes removed
     */
    public int truncateTo(long offset) throws IOException {
        BatchPosition mapping = translateOffset(offset);
        if (mapping == null) {
            return 0;
        }
        DiskFaults.check(DiskFaults.Op.TRUNCATE, log.file().toPath());
        offsetIndex.truncateTo(offset);
        timeIndex.truncateTo(offset);
        txnIndex.truncateTo(offset);
        int removed = log.truncateTo(mapping.position());
        recomputeWriterState(mapping.position());
        return removed;
    }

    /**
     * Undoes a failed {@link #append}: cuts the file back to {@code position} (where the append began,
     * below {@code nextOffset}) — including bytes of a partial write that the published size does not
     * count, which would otherwise sit under the next append — and drops index entries from the
     * failed batches.
     */
    void abortAppend(int position, long nextOffset) throws IOException {
        DiskFaults.check(DiskFaults.Op.TRUNCATE, log.file().toPath());
        offsetIndex.truncateTo(nextOffset);
        timeIndex.truncateTo(nextOffset);
        txnIndex.truncateTo(nextOffset);
        log.truncateTo(position); // FileChannel.truncate also moves the write position back
        recomputeWriterState(position);
    }

    private void recomputeWriterState(int position) throws IOException {
        bytesSinceLastIndexEntry = position - offsetIndex.lastEntry().position();
        TimestampOffset last = timeIndex.lastEntry();
        maxTimestampSoFar = last.timestamp();
        offsetOfMaxTimestampSoFar = last.offset();
        int scanFrom = offsetIndex.lastEntry().position();
        for (FileChannelRecordBatch batch : log.batchesFrom(scanFrom)) {
            if (batch.maxTimestamp() > maxTimestampSoFar) {
                maxTimestampSoFar = batch.maxTimestamp();
                offsetOfMaxTimestampSoFar = batch.lastOffset();
            }
        }
        if (log.sizeInBytes() == 0) {
            firstBatchTimestamp = Long.MIN_VALUE;
            bytesSinceLastIndexEntry = 0;
        }
    }

    /** Called by recovery: resets the indexes and re-indexes one valid batch at a time. */
    void resetIndexes() {
        offsetIndex.reset();
        timeIndex.reset();
        bytesSinceLastIndexEntry = 0;
        maxTimestampSoFar = RecordBatch.NO_TIMESTAMP;
        offsetOfMaxTimestampSoFar = baseOffset;
        firstBatchTimestamp = Long.MIN_VALUE;
    }

    /** Called by recovery for each valid batch, in order. */
    void indexRecoveredBatch(FileChannelRecordBatch batch) {
        indexBatch(batch, batch.position());
    }

    /** Called once this segment is no longer the active one: final time-index entry, trimmed indexes. */
    public void onBecomeInactive() throws IOException {
        ensureTimestampsLoaded();
        timeIndex.maybeAppend(maxTimestampSoFar, offsetOfMaxTimestampSoFar, true);
        offsetIndex.trimToValidSize();
        timeIndex.trimToValidSize();
        log.trim();
    }

    public void flush() throws IOException {
        DiskFaults.check(DiskFaults.Op.FSYNC, log.file().toPath());
        log.flush();
        offsetIndex.flush();
        timeIndex.flush();
        txnIndex.flush();
    }

    /**
     * Points the segment's files at their new paths after the partition directory was renamed (a
     * moved replica, or the old copy renamed for deletion); open channels and mappings stay valid.
     */
    void updateParentDir(File parentDir) {
        log.updateParentDir(parentDir);
        offsetIndex.updateParentDir(parentDir);
        timeIndex.updateParentDir(parentDir);
        txnIndex.updateParentDir(parentDir);
    }

    /** Renames all three files by swapping {@code oldSuffix} (possibly "") for {@code newSuffix}. */
    public void changeFileSuffixes(String oldSuffix, String newSuffix) throws IOException {
        changeFileSuffixes(oldSuffix, newSuffix, false, () -> { });
    }

    /**
     * Renames all three files one by one, calling {@code beforeEachRename} before each (the cleaner's
     * crash-injection point). With {@code logLast} the two indexes go first, so that the {@code .log}
     * rename is the one that commits the change.
     */
    void changeFileSuffixes(String oldSuffix, String newSuffix, boolean logLast, Runnable beforeEachRename) throws IOException {
        if (!logLast) {
            beforeEachRename.run();
            DiskFaults.check(DiskFaults.Op.RENAME, log.file().toPath());
            log.renameTo(swapSuffix(log.file(), oldSuffix, newSuffix));
        }
        beforeEachRename.run();
        offsetIndex.renameTo(swapSuffix(offsetIndex.file(), oldSuffix, newSuffix));
        beforeEachRename.run();
        timeIndex.renameTo(swapSuffix(timeIndex.file(), oldSuffix, newSuffix));
        txnIndex.renameTo(swapSuffix(txnIndex.file(), oldSuffix, newSuffix));
        if (logLast) {
            beforeEachRename.run();
            DiskFaults.check(DiskFaults.Op.RENAME, log.file().toPath());
            log.renameTo(swapSuffix(log.file(), oldSuffix, newSuffix));
        }
    }

    private static File swapSuffix(File file, String oldSuffix, String newSuffix) {
        String name = file.getName();
        if (!name.endsWith(oldSuffix)) {
            throw new IllegalArgumentException(file + " does not end with " + oldSuffix);
        }
        return new File(file.getParentFile(), name.substring(0, name.length() - oldSuffix.length()) + newSuffix);
    }

    /** Releases file handles and mappings, trimming the indexes first (clean close). */
    public void close() throws IOException {
        // Timestamps are loaded only once the segment is written to (or recovered); otherwise its
        // time index is already final and need not be mapped just to be checked.
        if (maxTimestampSoFar != Long.MIN_VALUE && log.channel().isOpen()) {
            timeIndex.maybeAppend(maxTimestampSoFar, offsetOfMaxTimestampSoFar, true);
        }
        offsetIndex.close();
        timeIndex.close();
        log.close();
    }

    /** Closes and deletes all three files. */
    public void deleteIfExists() throws IOException {
        offsetIndex.deleteIfExists();
        timeIndex.deleteIfExists();
        txnIndex.deleteIfExists();
        log.close();
        log.deleteIfExists();
    }

    @Override
    public String toString() {
        return "LogSegment(baseOffset=" + baseOffset + ", size=" + size() + ")";
    }
}
