package dev.varve.storage;

import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.CorruptRecordException;
import org.apache.kafka.common.record.internal.DefaultRecordBatch;
import org.apache.kafka.common.record.internal.FileLogInputStream.FileChannelRecordBatch;
import org.apache.kafka.common.record.internal.FileRecords;
import org.apache.kafka.common.record.internal.RecordBatch;
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
 */
final class SegmentRecovery {
    private static final Logger LOG = LoggerFactory.getLogger(SegmentRecovery.class);
    private static final int CRC_OFFSET = 17; // baseOffset(8) length(4) partitionLeaderEpoch(4) magic(1)
    private static final int ATTRIBUTES_OFFSET = 21;

    private final ByteBuffer scratch = ByteBuffer.allocateDirect(64 * 1024);
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
