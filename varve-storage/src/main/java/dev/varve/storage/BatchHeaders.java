package dev.varve.storage;

import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.utils.Utils;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;

/**
 * Reads just enough of a v2 batch header to walk a segment: base offset, length, last offset.
 *
 * <pre>
 *   0 baseOffset int64 | 8 length int32 | 12 partitionLeaderEpoch int32 | 16 magic int8 | 17 crc int32
 *   21 attributes int16 | 23 lastOffsetDelta int32 | 27 baseTimestamp int64 | 35 maxTimestamp int64
 *   ...   (the first 43 bytes of the 61-byte header: enough for the read path)
 *   43 producerId int64 | 51 producerEpoch int16 | 53 baseSequence int32 | 57 recordsCount int32
 * </pre>
 *
 * One positional read per batch, where Kafka's {@code FileRecords} search makes two (17 then 61
 * bytes). Used on the read path only over bytes already validated and published by the writer, and
 * (with a {@link #fullBuffer() full} 61-byte buffer) to rebuild producer state from the log.
 */
final class BatchHeaders {
    static final int PREFIX_BYTES = 43;
    private static final int LENGTH_OFFSET = 8;
    private static final int LAST_OFFSET_DELTA_OFFSET = 23;
    private static final int MAX_TIMESTAMP_OFFSET = 35;
    private static final int MIN_BATCH_BYTES = 61;
    /** The whole v2 batch header. */
    static final int FULL_BYTES = 61;
    private static final int ATTRIBUTES_OFFSET = 21;
    private static final int PRODUCER_ID_OFFSET = 43;
    private static final int PRODUCER_EPOCH_OFFSET = 51;
    private static final int BASE_SEQUENCE_OFFSET = 53;
    /** Kafka's attribute bit for control batches (transaction markers). */
    private static final int CONTROL_FLAG = 0x20;
    /** Kafka's attribute bit for transactional batches. */
    private static final int TRANSACTIONAL_FLAG = 0x10;

    private BatchHeaders() {
    }

    static ByteBuffer buffer() {
        return ByteBuffer.allocate(PREFIX_BYTES);
    }

    /** A buffer for the whole header, which the producer fields below need. */
    static ByteBuffer fullBuffer() {
        return ByteBuffer.allocate(FULL_BYTES);
    }

    /**
     * Reads the header prefix of the batch at {@code position}.
     *
     * @return false when no whole batch starts there before {@code end}
     */
    static boolean read(FileChannel channel, int position, int end, ByteBuffer header) {
        if (position + MIN_BATCH_BYTES > end) {
            return false;
        }
        header.clear();
        try {
            Utils.readFully(channel, header, position);
            if (header.hasRemaining()) {
                return false; // the file ended first
            }
        } catch (IOException e) {
            throw new KafkaException("cannot read batch header at position " + position, e);
        }
        int size = size(header);
        return size >= MIN_BATCH_BYTES && (long) position + size <= end;
    }

    static int size(ByteBuffer header) {
        return header.getInt(LENGTH_OFFSET) + 12;
    }

    static long maxTimestamp(ByteBuffer header) {
        return header.getLong(MAX_TIMESTAMP_OFFSET);
    }

    static long baseOffset(ByteBuffer header) {
        return header.getLong(0);
    }

    static long lastOffset(ByteBuffer header) {
        return header.getLong(0) + header.getInt(LAST_OFFSET_DELTA_OFFSET);
    }

    static boolean isControl(ByteBuffer header) {
        return (header.getShort(ATTRIBUTES_OFFSET) & CONTROL_FLAG) != 0;
    }

    static boolean isTransactional(ByteBuffer header) {
        return (header.getShort(ATTRIBUTES_OFFSET) & TRANSACTIONAL_FLAG) != 0;
    }

    static long producerId(ByteBuffer fullHeader) {
        return fullHeader.getLong(PRODUCER_ID_OFFSET);
    }

    static short producerEpoch(ByteBuffer fullHeader) {
        return fullHeader.getShort(PRODUCER_EPOCH_OFFSET);
    }

    static int baseSequence(ByteBuffer fullHeader) {
        return fullHeader.getInt(BASE_SEQUENCE_OFFSET);
    }
}
