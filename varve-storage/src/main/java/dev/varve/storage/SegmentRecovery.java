package dev.varve.storage;

import dev.varve.storage.index.CorruptIndexException;
import dev.varve.storage.index.OffsetIndex;
import dev.varve.storage.index.OffsetPosition;
import dev.varve.storage.index.TimeIndex;
import dev.varve.storage.index.TimestampOffset;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.CorruptRecordException;
import org.apache.kafka.common.record.internal.DefaultRecordBatch;
import org.apache.kafka.common.record.internal.FileLogInputStream.FileChannelRecordBatch;
import org.apache.kafka.common.record.internal.FileRecords;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.record.internal.Records;
import org.apache.kafka.common.utils.Utils;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.util.function.Consumer;
import java.util.zip.CRC32C;

/**
 * Rebuilds a segment's indexes from its log file and cuts the file after the last valid batch.
 *
 * <p>A batch is valid when its framing fits in the file, its magic is 2, its offsets increase from
 * the previous batch and fit the segment, and its CRC32C matches. The CRC is computed by streaming
 * the file through a fixed 64 KiB buffer, so a corrupt length field can never make recovery
 * allocate more than that.
 *
 * <p>{@link #verify} makes the same checks without changing anything, and also checks every entry
 * of both indexes against the batches (used at start-up for segments below the recovery point). It
 * reads the segment in sequential runs of 1 MiB and checks the whole batches of each run in memory
 * (one read per MiB instead of several per batch); a batch larger than that is streamed.
 */
final class SegmentRecovery {
    private static final Logger LOG = LoggerFactory.getLogger(SegmentRecovery.class);
    private static final int CRC_OFFSET = 17; // baseOffset(8) length(4) partitionLeaderEpoch(4) magic(1)
    private static final int ATTRIBUTES_OFFSET = 21;

    private static final int LENGTH_OFFSET = 8;
    private static final int MAGIC_OFFSET = 16;
    private static final int LAST_OFFSET_DELTA_OFFSET = 23;
    private static final int MAX_TIMESTAMP_OFFSET = 35;
    /** {@link #verify} reads segments in runs of this many bytes (whole batches checked in memory). */
    private static final int SCAN_BYTES = 1 << 20;

    private final ByteBuffer scratch = ByteBuffer.allocateDirect(64 * 1024);
    private ByteBuffer scan; // allocated by the first verify
    private final ByteBuffer crcField = ByteBuffer.allocate(4);

    /**
     * Recovers {@code segment}, reporting each valid batch to {@code onBatch}.
     *
     * @return bytes cut from the end of the file
     */
    int recover(LogSegment segment, Consumer<RecordBatch> onBatch) throws IOException {
        segment.resetIndexes();
        FileRecords log = segment.log();
        int validBytes = 0;
        long previousLastOffset = segment.baseOffset() - 1;
        String problem = null;
        try {
            for (FileChannelRecordBatch batch : log.batches()) {
                problem = check(segment, batch, previousLastOffset);
                if (problem != null) {
                    break;
                }
                segment.indexRecoveredBatch(batch);
                onBatch.accept(batch);
                previousLastOffset = batch.lastOffset();
                validBytes = batch.position() + batch.sizeInBytes();
            }
        } catch (CorruptRecordException e) {
            problem = e.getMessage();
        } catch (KafkaException e) {
            if (e.getCause() instanceof IOException io) {
                throw io;
            }
            problem = e.toString();
        }
        int cut = log.sizeInBytes() - validBytes;
        if (cut > 0) {
            LOG.warn("Truncating {} bytes of {} after position {} ({})", cut, log.file(), validBytes,
                    problem == null ? "incomplete batch at the end" : problem);
            log.truncateTo(validBytes);
            segment.offsetIndex().truncateToPosition(validBytes);
        }
        return cut;
    }

    /**
     * Checks a segment without changing it: every batch as {@link #recover} would keep it (framing,
     * magic, CRC, offsets), no bytes after the last whole batch, and every index entry naming a real
     * batch: an offset-index entry points at the start of a batch and holds that batch's last
     * offset; a time-index entry holds the last offset of the batch where the segment's running
     * maximum timestamp first reached the entry's timestamp, and the last one holds the segment's
     * largest timestamp (written on roll and on a clean close). Maps the indexes only while it runs.
     *
     * @return null when the segment is sound, else what is wrong (then {@link #recover} repairs it)
     */
    String verify(LogSegment segment) throws IOException {
        OffsetIndex offsetIndex = segment.offsetIndex();
        TimeIndex timeIndex = segment.timeIndex();
        FileRecords log = segment.log();
        try {
            if (segment.size() > 0 && (offsetIndex.wasMissing() || timeIndex.wasMissing())) {
                return "an index is missing";
            }
            offsetIndex.fullCheck();
            timeIndex.fullCheck();
            int offsetEntries = offsetIndex.entries();
            int timeEntries = timeIndex.entries();
            int nextOffsetSlot = 0;
            int nextTimeSlot = 0;
            OffsetPosition offsetEntry = offsetEntries > 0 ? offsetIndex.entry(0) : null;
            TimestampOffset timeEntry = timeEntries > 0 ? timeIndex.entry(0) : null;
            long previousLastOffset = segment.baseOffset() - 1;
            long runningMaxTimestamp = RecordBatch.NO_TIMESTAMP;
            FileChannel channel = log.channel();
            int end = log.sizeInBytes();
            ByteBuffer buffer = scanBuffer();
            int bufferStart = 0;
            buffer.limit(0);
            int position = 0;
            while (position < end) {
                if (end - position < DefaultRecordBatch.RECORD_BATCH_OVERHEAD) {
                    return (end - position) + " bytes after the last whole batch";
                }
                int at = position - bufferStart;
                if (buffer.limit() - at < DefaultRecordBatch.RECORD_BATCH_OVERHEAD) {
                    bufferStart = position;
                    fill(channel, buffer, position, end);
                    at = 0;
                }
                int size = buffer.getInt(at + LENGTH_OFFSET) + Records.LOG_OVERHEAD;
                if (size < DefaultRecordBatch.RECORD_BATCH_OVERHEAD) {
                    return "batch at position " + position + " is too short";
                }
                if ((long) position + size > end) {
                    return (end - position) + " bytes after the last whole batch (a batch of " + size + " bytes)";
                }
                if (buffer.get(at + MAGIC_OFFSET) != RecordBatch.MAGIC_VALUE_V2) {
                    return "batch at position " + position + " has magic " + buffer.get(at + MAGIC_OFFSET);
                }
                if (size > buffer.limit() - at && size <= buffer.capacity()) {
                    bufferStart = position;
                    fill(channel, buffer, position, end);
                    at = 0;
                }
                long baseOffset = buffer.getLong(at);
                long lastOffset = baseOffset + buffer.getInt(at + LAST_OFFSET_DELTA_OFFSET);
                long maxTimestamp = buffer.getLong(at + MAX_TIMESTAMP_OFFSET);
                boolean crcOk;
                if (size <= buffer.limit() - at) {
                    CRC32C crc = new CRC32C();
                    crc.update(buffer.duplicate().limit(at + size).position(at + ATTRIBUTES_OFFSET));
                    crcOk = crc.getValue() == Integer.toUnsignedLong(buffer.getInt(at + CRC_OFFSET));
                } else {
                    crcOk = crcMatches(channel, position, size); // larger than the scan buffer: streamed
                }
                if (!crcOk) {
                    return "batch at position " + position + " fails its CRC check";
                }
                if (baseOffset <= previousLastOffset || lastOffset < baseOffset || !offsetIndex.canAppendOffset(lastOffset)) {
                    return "batch at position " + position + " has offsets " + baseOffset + "-" + lastOffset
                            + " after " + previousLastOffset;
                }
                if (offsetEntry != null && offsetEntry.position() < position) {
                    return "offset index entry " + offsetEntry + " does not point at the start of a batch";
                }
                if (offsetEntry != null && offsetEntry.position() == position) {
                    if (offsetEntry.offset() != lastOffset) {
                        return "offset index entry " + offsetEntry + " does not match batch " + baseOffset + "-" + lastOffset;
                    }
                    nextOffsetSlot++;
                    offsetEntry = nextOffsetSlot < offsetEntries ? offsetIndex.entry(nextOffsetSlot) : null;
                }
                boolean newMaximum = maxTimestamp > runningMaxTimestamp;
                runningMaxTimestamp = Math.max(runningMaxTimestamp, maxTimestamp);
                if (timeEntry != null && timeEntry.offset() < lastOffset) {
                    return "time index entry " + timeEntry + " does not name the last offset of a batch";
                }
                if (timeEntry != null && timeEntry.offset() == lastOffset) {
                    if (!newMaximum || timeEntry.timestamp() != maxTimestamp) {
                        return "time index entry " + timeEntry + " does not match batch " + baseOffset + "-" + lastOffset
                                + " (max timestamp " + maxTimestamp + ")";
                    }
                    nextTimeSlot++;
                    timeEntry = nextTimeSlot < timeEntries ? timeIndex.entry(nextTimeSlot) : null;
                }
                previousLastOffset = lastOffset;
                position += size;
            }
            if (offsetEntry != null) {
                return "offset index entry " + offsetEntry + " lies past the last batch";
            }
            if (timeEntry != null) {
                return "time index entry " + timeEntry + " lies past the last batch";
            }
            // Written on roll and on a clean close: without it, lookups by time would skip the segment.
            if (runningMaxTimestamp != RecordBatch.NO_TIMESTAMP
                    && (timeEntries == 0 || timeIndex.entry(timeEntries - 1).timestamp() != runningMaxTimestamp)) {
                return "the time index does not end with the segment's largest timestamp " + runningMaxTimestamp;
            }
            return null;
        } catch (CorruptIndexException | CorruptRecordException e) {
            return e.getMessage();
        } catch (KafkaException e) {
            if (e.getCause() instanceof IOException io) {
                throw io;
            }
            return e.toString();
        } finally {
            offsetIndex.closeMapping();
            timeIndex.closeMapping();
        }
    }

    private ByteBuffer scanBuffer() {
        if (scan == null) {
            scan = ByteBuffer.allocateDirect(SCAN_BYTES);
        }
        return scan;
    }

    /** Reads from {@code position} as much of the file (up to {@code end}) as fits; the buffer is then [0, bytes read). */
    private static void fill(FileChannel channel, ByteBuffer buffer, int position, int end) throws IOException {
        buffer.clear();
        buffer.limit((int) Math.min(buffer.capacity(), (long) end - position));
        readFully(channel, buffer, position);
        buffer.flip();
    }

    private String check(LogSegment segment, FileChannelRecordBatch batch, long previousLastOffset) throws IOException {
        if (batch.magic() != RecordBatch.MAGIC_VALUE_V2) {
            return "batch at position " + batch.position() + " has magic " + batch.magic();
        }
        if (batch.sizeInBytes() < DefaultRecordBatch.RECORD_BATCH_OVERHEAD) {
            return "batch at position " + batch.position() + " is too short";
        }
        if (!crcMatches(segment.log().channel(), batch.position(), batch.sizeInBytes())) {
            return "batch at position " + batch.position() + " fails its CRC check";
        }
        long base = batch.baseOffset();
        long last = batch.lastOffset();
        if (base <= previousLastOffset || last < base || !segment.offsetIndex().canAppendOffset(last)) {
            return "batch at position " + batch.position() + " has offsets " + base + "-" + last
                    + " after " + previousLastOffset;
        }
        return null;
    }

    /** Whether the stored CRC32C of the batch at {@code position} matches its bytes. */
    boolean crcMatches(FileChannel channel, int position, int size) throws IOException {
        crcField.clear();
        readFully(channel, crcField, position + CRC_OFFSET);
        long stored = Integer.toUnsignedLong(crcField.getInt(0));
        CRC32C crc = new CRC32C();
        long pos = (long) position + ATTRIBUTES_OFFSET;
        long end = (long) position + size;
        while (pos < end) {
            scratch.clear();
            scratch.limit((int) Math.min(scratch.capacity(), end - pos));
            readFully(channel, scratch, pos);
            scratch.flip();
            crc.update(scratch);
            pos += scratch.limit();
        }
        return crc.getValue() == stored;
    }

    private static void readFully(FileChannel channel, ByteBuffer buffer, long position) throws IOException {
        Utils.readFully(channel, buffer, position);
        if (buffer.hasRemaining()) {
            throw new CorruptRecordException("unexpected end of file before position " + (position + buffer.limit()));
        }
    }
}
