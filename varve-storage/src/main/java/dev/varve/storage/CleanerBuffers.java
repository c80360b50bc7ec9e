package dev.varve.storage;

import org.apache.kafka.common.errors.CorruptRecordException;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.common.utils.internals.BufferSupplier;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;

/**
 * One cleaner worker's I/O buffers: a read buffer that segment files are read into a run of whole
 * batches at a time, a write buffer the filtered batches are built in, and a decompression buffer
 * cache. Both buffers start at {@code log.cleaner.io.buffer.size / threads / 2} bytes; the read buffer
 * grows only when a single batch is larger, and then only to that batch's size, which is checked
 * against the bytes actually in the file first. The write buffer may be replaced by a larger one that
 * Kafka's filter allocated for a batch that grew on recompression.
 *
 * <p>Thread-safety: none; owned by one worker.
 */
final class CleanerBuffers {
    private final int initialBytes;
    private ByteBuffer read;
    private ByteBuffer write;
    private final ByteBuffer header = BatchHeaders.buffer();
    final BufferSupplier decompression = BufferSupplier.create();

    CleanerBuffers(int bytesPerBuffer) {
        if (bytesPerBuffer < 64) {
            throw new IllegalArgumentException("cleaner I/O buffers of " + bytesPerBuffer + " bytes are too small");
        }
        this.initialBytes = bytesPerBuffer;
    }

    /**
     * Reads the whole batches that fit in the read buffer from {@code position} (never past {@code end},
     * a batch boundary of the file), growing the buffer once if the first batch alone is larger.
     *
     * @return the batches read (empty only when {@code position == end})
     * @throws CorruptRecordException when no whole batch starts at {@code position}
     */
    MemoryRecords readBatches(FileChannel channel, int position, int end) throws IOException {
        if (position >= end) {
            return MemoryRecords.EMPTY;
        }
        if (read == null) {
            read = ByteBuffer.allocate(initialBytes);
        }
        MemoryRecords records = readInto(channel, position, end);
        if (records.sizeInBytes() > 0) {
            return records;
        }
        if (!BatchHeaders.read(channel, position, end, header)) {
            throw new CorruptRecordException("no whole batch at position " + position + " (segment end " + end + ")");
        }
        int size = BatchHeaders.size(header); // checked by read(): position + size <= end
        read = ByteBuffer.allocate(size);
        records = readInto(channel, position, end);
        if (records.sizeInBytes() == 0) {
            throw new CorruptRecordException("batch at position " + position + " of " + size + " bytes cannot be read whole");
        }
        return records;
    }

    private MemoryRecords readInto(FileChannel channel, int position, int end) throws IOException {
        read.clear();
        read.limit((int) Math.min(read.capacity(), (long) end - position));
        Utils.readFully(channel, read, position);
        read.flip();
        MemoryRecords chunk = MemoryRecords.readableRecords(read);
        int whole = chunk.validBytes(); // stops before a batch cut by the buffer's end
        read.limit(whole);
        return MemoryRecords.readableRecords(read.slice());
    }

    /** The (cleared) write buffer for the next filtered chunk. */
    ByteBuffer writeBuffer() {
        if (write == null) {
            write = ByteBuffer.allocate(initialBytes);
        }
        write.clear();
        return write;
    }

    /**
     * Keeps a larger output buffer the filter had to allocate, up to four times the initial size, so
     * the next chunk does not allocate again; a larger one (one huge batch) is dropped after use.
     */
    void adoptWriteBuffer(ByteBuffer output) {
        if (output != write && output.capacity() <= 4 * initialBytes) {
            write = output;
        }
    }

    /** Drops a grown read buffer (after a round that met a huge batch). */
    void shrink() {
        if (read != null && read.capacity() > initialBytes) {
            read = null;
        }
    }
}
