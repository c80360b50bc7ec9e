package dev.varve.storage;

import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MemoryRecordsBuilder;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.record.internal.Records;
import org.apache.kafka.common.record.internal.SimpleRecord;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/** Builds producer-style batches and reads records back, for tests. */
public final class TestRecords {
    private TestRecords() {
    }

    /** One batch of records with the given values (UTF-8), base offset 0 as a producer sends it. */
    public static MemoryRecords batch(long timestamp, String... values) {
        return batch(Compression.NONE, timestamp, values);
    }

    public static MemoryRecords batch(Compression compression, long timestamp, String... values) {
        SimpleRecord[] records = new SimpleRecord[values.length];
        for (int i = 0; i < values.length; i++) {
            records[i] = new SimpleRecord(timestamp, ("k" + i).getBytes(StandardCharsets.UTF_8),
                    values[i].getBytes(StandardCharsets.UTF_8));
        }
        return MemoryRecords.withRecords(compression, records);
    }

    /**
     * An idempotent producer's batch of {@code count} records "seq-N" (N the record's sequence),
     * base offset 0 as the producer sends it. Each call builds a fresh buffer, as a retry resends
     * the same batch.
     */
    public static MemoryRecords idempotent(long producerId, short epoch, int baseSequence, int count, long timestamp) {
        return MemoryRecords.withIdempotentRecords(Compression.NONE, producerId, epoch, baseSequence,
                producerRecords("p", producerId, epoch, baseSequence, count, timestamp));
    }

    /** A transactional batch of {@code count} records (base offset 0). */
    public static MemoryRecords transactional(long producerId, short epoch, int baseSequence, int count, long timestamp) {
        return MemoryRecords.withTransactionalRecords(Compression.NONE, producerId, epoch, baseSequence,
                producerRecords("t", producerId, epoch, baseSequence, count, timestamp));
    }

    /** Records whose values name their producer, epoch and sequence ({@code <prefix><pid>-e<epoch>-s<seq>}). */
    private static SimpleRecord[] producerRecords(String prefix, long producerId, short epoch, int baseSequence, int count,
                                                  long timestamp) {
        SimpleRecord[] records = new SimpleRecord[count];
        for (int i = 0; i < count; i++) {
            int seq = org.apache.kafka.common.record.internal.DefaultRecordBatch.incrementSequence(baseSequence, i);
            records[i] = new SimpleRecord(timestamp, null, (prefix + producerId + "-e" + epoch + "-s" + seq).getBytes(StandardCharsets.UTF_8));
        }
        return records;
    }

    /** A COMMIT or ABORT marker at {@code offset}. */
    public static MemoryRecords marker(long offset, long producerId, short epoch, int coordinatorEpoch, boolean commit, long timestamp) {
        return MemoryRecords.withEndTransactionMarker(offset, timestamp, 0, producerId, epoch,
                new org.apache.kafka.common.record.internal.EndTransactionMarker(commit
                        ? org.apache.kafka.common.record.internal.ControlRecordType.COMMIT
                        : org.apache.kafka.common.record.internal.ControlRecordType.ABORT, coordinatorEpoch));
    }

    public static MemoryRecords sized(int count, int valueSize, long timestamp) {
        ByteBuffer buffer = ByteBuffer.allocate(count * (valueSize + 64) + 128);
        MemoryRecordsBuilder builder = MemoryRecords.builder(buffer, Compression.NONE, TimestampType.CREATE_TIME, 0L);
        byte[] value = new byte[valueSize];
        for (int i = 0; i < count; i++) {
            value[i % valueSize] = (byte) i;
            builder.append(timestamp, null, value);
        }
        return builder.build();
    }

    /** Several batches in one buffer, as one produce request carries them. */
    public static MemoryRecords concat(MemoryRecords... parts) {
        int size = 0;
        for (MemoryRecords p : parts) {
            size += p.sizeInBytes();
        }
        ByteBuffer buffer = ByteBuffer.allocate(size);
        for (MemoryRecords p : parts) {
            buffer.put(p.buffer().duplicate());
        }
        buffer.flip();
        return MemoryRecords.readableRecords(buffer);
    }

    /** An offset and the UTF-8 value of a record. */
    public record Rec(long offset, String value, long timestamp) {
    }

    /** Every record of every batch in {@code records}. */
    public static List<Rec> read(Records records) {
        List<Rec> out = new ArrayList<>();
        for (RecordBatch batch : records.batches()) {
            batch.ensureValid();
            for (Record r : batch) {
                String v = r.hasValue() ? StandardCharsets.UTF_8.decode(r.value()).toString() : null;
                out.add(new Rec(r.offset(), v, r.timestamp()));
            }
        }
        return out;
    }

    public static List<String> values(Records records) {
        return read(records).stream().map(Rec::value).toList();
    }
}
