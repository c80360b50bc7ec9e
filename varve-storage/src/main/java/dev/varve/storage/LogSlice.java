package dev.varve.storage;

import org.apache.kafka.common.record.internal.FileRecords;

/**
 * The result of a read: whole batches as a slice of a segment file (channel, position, length),
 * ready to be sent with sendfile. Batches before {@code fetchOffset} inside the first batch are the
 * client's to skip, as in Kafka.
 *
 * @param fetchOffset the offset asked for
 * @param records     the file slice; zero length when nothing is readable yet
 */
public record LogSlice(long fetchOffset, FileRecords records) {
    public int sizeInBytes() {
        return records.sizeInBytes();
    }

    public boolean isEmpty() {
        return records.sizeInBytes() == 0;
    }
}
