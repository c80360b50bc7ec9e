package dev.varve.tests;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.record.TimestampType;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

/**
 * A deterministic stream of records, so that millions of them can be produced and checked without
 * keeping any in memory: record {@code i} is computed from {@code (seed, i)} alone.
 *
 * <p>Record {@code i} goes to partition {@code i % partitions}; on a fresh topic written only through
 * this fixture, in order, it therefore lands at offset {@code i / partitions}, and the record at
 * {@code (partition, offset)} is {@code offset * partitions + partition}. Timestamps grow by
 * {@link #TIMESTAMP_STEP_MS} per record, so every partition's timestamps are strictly increasing and
 * a gap separates neighbours (lookups by timestamp have a unique right answer).
 *
 * <p>The records mix what breaks naive implementations: null and empty keys, null values, values
 * from empty to tens of KiB (some larger than a producer batch), compressible and random bytes,
 * zero to three headers with repeated, empty and null-valued entries.
 */
final class RecordFixture {
    static final long TIMESTAMP_STEP_MS = 2;

    final String topic;
    final int partitions;
    private final long seed;
    private final long baseTimestampMs;

    /** One record, as produced. */
    record Spec(long index, int partition, byte[] key, byte[] value, List<Header> headers, long timestampMs) {
    }

    RecordFixture(String topic, int partitions, long seed, long baseTimestampMs) {
        this.topic = topic;
        this.partitions = partitions;
        this.seed = seed;
        this.baseTimestampMs = baseTimestampMs;
    }

    Spec spec(long i) {
        Random r = new Random(seed * 0x9E3779B97F4A7C15L + i);
        byte[] key;
        if (i % 7 == 0) {
            key = null;
        } else if (i % 11 == 0) {
            key = new byte[0];
        } else {
            key = ("key-" + i + "-" + r.nextInt(1000)).getBytes(StandardCharsets.UTF_8);
        }
        byte[] value;
        if (i % 13 == 5) {
            value = null;
        } else {
            int length = i % 997 == 3 ? 8_000 + r.nextInt(24_000) : r.nextInt(300);
            value = new byte[length];
            for (int j = 0; j < length; j++) {
                // Three quarters text (compresses), one quarter random (does not).
                value[j] = j % 4 == 0 ? (byte) r.nextInt() : (byte) ('a' + (i + j) % 26);
            }
        }
        List<Header> headers = new ArrayList<>();
        int headerCount = (int) (i % 4);
        for (int h = 0; h < headerCount; h++) {
            String name = h == 1 ? "" : "h" + (i % 2); // repeated and empty names
            byte[] hv = h == 2 ? null : new byte[r.nextInt(16)];
            if (hv != null) {
                r.nextBytes(hv);
            }
            headers.add(new RecordHeader(name, hv));
        }
        return new Spec(i, partitionOf(i), key, value, headers, timestampOf(i));
    }

    int partitionOf(long i) {
        return (int) (i % partitions);
    }

    long offsetOf(long i) {
        return i / partitions;
    }

    long indexAt(int partition, long offset) {
        return offset * partitions + partition;
    }

    long timestampOf(long i) {
        return baseTimestampMs + i * TIMESTAMP_STEP_MS;
    }

    TopicPartition tp(int partition) {
        return new TopicPartition(topic, partition);
    }

    List<TopicPartition> allPartitions() {
        List<TopicPartition> out = new ArrayList<>();
        for (int p = 0; p < partitions; p++) {
            out.add(tp(p));
        }
        return out;
    }

    /** The end offset of each partition once records {@code [0, count)} are written. */
    long endOffset(int partition, long count) {
        return count / partitions + (partition < count % partitions ? 1 : 0);
    }

    ProducerRecord<byte[], byte[]> producerRecord(long i) {
        Spec s = spec(i);
        return new ProducerRecord<>(topic, s.partition(), s.timestampMs(), s.key(), s.value(), s.headers());
    }

    /** Checks a consumed record against the record that belongs at its partition and offset. */
    void verify(ConsumerRecord<byte[], byte[]> got) {
        long i = indexAt(got.partition(), got.offset());
        Spec want = spec(i);
        String where = topic + "-" + got.partition() + "@" + got.offset() + " (record " + i + ")";
        check(got.topic().equals(topic), where, "topic", topic, got.topic());
        check(Arrays.equals(want.key(), got.key()), where, "key", show(want.key()), show(got.key()));
        check(Arrays.equals(want.value(), got.value()), where, "value", show(want.value()), show(got.value()));
        check(got.timestamp() == want.timestampMs(), where, "timestamp", want.timestampMs(), got.timestamp());
        check(got.timestampType() == TimestampType.CREATE_TIME, where, "timestamp type", TimestampType.CREATE_TIME,
                got.timestampType());
        Header[] gotHeaders = got.headers().toArray();
        check(gotHeaders.length == want.headers().size(), where, "header count", want.headers().size(),
                gotHeaders.length);
        for (int h = 0; h < gotHeaders.length; h++) {
            Header w = want.headers().get(h);
            Header g = gotHeaders[h];
            check(w.key().equals(g.key()) && Arrays.equals(w.value(), g.value()), where, "header " + h,
                    w.key() + "=" + show(w.value()), g.key() + "=" + show(g.value()));
        }
    }

    private static void check(boolean ok, String where, String what, Object want, Object got) {
        if (!ok) {
            throw new AssertionError(where + ": " + what + " differs: expected " + want + " but got " + got);
        }
    }

    private static String show(byte[] b) {
        if (b == null) {
            return "null";
        }
        return b.length + " bytes " + (b.length <= 24 ? Arrays.toString(b) : Arrays.toString(Arrays.copyOf(b, 24)) + "...");
    }
}
