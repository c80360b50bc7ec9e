package dev.varve.storage;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.record.internal.FileLogInputStream.FileChannelRecordBatch;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.SimpleRecord;

import java.io.File;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalLong;

/** Keyed batches, whole-log reads that tolerate compaction gaps, and a cleaner over one log, for tests. */
final class CompactionSupport {
    private CompactionSupport() {
    }

    /** A compacted topic's config with tiny segments and an eager cleaner (ratio 0, no lag). */
    static LogConfig compacted(int segmentBytes, long deleteRetentionMs) {
        Map<String, Object> m = new HashMap<>();
        m.put(TopicConfig.CLEANUP_POLICY_CONFIG, "compact");
        m.put(TopicConfig.SEGMENT_BYTES_CONFIG, segmentBytes);
        m.put(TopicConfig.SEGMENT_INDEX_BYTES_CONFIG, 4096);
        m.put(TopicConfig.INDEX_INTERVAL_BYTES_CONFIG, 128);
        m.put(TopicConfig.MIN_CLEANABLE_DIRTY_RATIO_CONFIG, 0.0);
        m.put(TopicConfig.DELETE_RETENTION_MS_CONFIG, deleteRetentionMs);
        m.put(TopicConfig.FILE_DELETE_DELAY_MS_CONFIG, 0L);
        m.put(TopicConfig.MESSAGE_TIMESTAMP_BEFORE_MAX_MS_CONFIG, Long.MAX_VALUE);
        m.put(TopicConfig.MESSAGE_TIMESTAMP_AFTER_MAX_MS_CONFIG, Long.MAX_VALUE);
        return LogConfig.fromMap(m);
    }

    /** A cleaner config with a map of {@code dedupeBytes}. */
    static CleanerConfig cleanerConfig(long dedupeBytes) {
        return new CleanerConfig(true, 1, dedupeBytes, 4096, 0.9, 1000);
    }

    /** A cleaner manager over exactly these logs, all in {@code logDir}. */
    static LogCleanerManager manager(CleanerConfig config, File logDir, MockTime time, List<PartitionLog> logs,
                                     SegmentSwap.Hook hook) {
        return new LogCleanerManager(config, List.of(logDir), time, () -> logs, hook);
    }

    /** One record to write: key, value (null = tombstone), timestamp, one optional header. */
    record KV(String key, String value, long timestamp, String header) {
    }

    static MemoryRecords batch(Compression compression, List<KV> records) {
        SimpleRecord[] out = new SimpleRecord[records.size()];
        for (int i = 0; i < out.length; i++) {
            KV kv = records.get(i);
            Header[] headers = kv.header() == null ? new Header[0]
                    : new Header[]{new RecordHeader("h", kv.header().getBytes(StandardCharsets.UTF_8))};
            out[i] = new SimpleRecord(kv.timestamp(), bytes(kv.key()), bytes(kv.value()), headers);
        }
        return MemoryRecords.withRecords(compression, out);
    }

    static MemoryRecords batch(long timestamp, String... keyValues) {
        List<KV> kvs = new ArrayList<>();
        for (int i = 0; i < keyValues.length; i += 2) {
            kvs.add(new KV(keyValues[i], keyValues[i + 1], timestamp, null));
        }
        return batch(Compression.NONE, kvs);
    }

    static byte[] bytes(String s) {
        return s == null ? null : s.getBytes(StandardCharsets.UTF_8);
    }

    static String string(ByteBuffer b) {
        return b == null ? null : StandardCharsets.UTF_8.decode(b.duplicate()).toString();
    }

    /** A record as read back. */
    record Read(long offset, String key, String value, long timestamp, String header, OptionalLong deleteHorizonMs) {
        boolean sameRecord(Read o) {
            return offset == o.offset && Objects.equals(key, o.key) && Objects.equals(value, o.value)
                    && timestamp == o.timestamp && Objects.equals(header, o.header);
        }
    }

    /** A batch as read back: its offset range and records. */
    record ReadBatch(long base, long last, List<Read> records) {
    }

    /** Every batch from the log start to the log end, following gaps; checks each batch's CRC. */
    static List<ReadBatch> readAllBatches(PartitionLog log) {
        List<ReadBatch> out = new ArrayList<>();
        long next = log.logStartOffset();
        long end = log.logEndOffset();
        int guard = 0;
        while (next < end) {
            if (++guard > 1_000_000) {
                throw new AssertionError("read does not terminate at " + next);
            }
            LogSlice slice = log.read(next, 64 * 1024, end, true);
            List<ReadBatch> batches = new ArrayList<>();
            for (FileChannelRecordBatch b : slice.records().batches()) {
                b.ensureValid();
                List<Read> records = new ArrayList<>();
                for (Record r : b) {
                    Header[] hs = r.headers();
                    String header = hs.length == 0 ? null : new String(hs[0].value(), StandardCharsets.UTF_8);
                    records.add(new Read(r.offset(), string(r.key()), string(r.value()), r.timestamp(), header,
                            b.deleteHorizonMs()));
                }
                batches.add(new ReadBatch(b.baseOffset(), b.lastOffset(), records));
            }
            if (batches.isEmpty()) {
                throw new AssertionError("read(" + next + ") below the log end " + end + " returned nothing: " + log);
            }
            if (batches.get(0).last() < next) {
                throw new AssertionError("read(" + next + ") starts with batch " + batches.get(0).base() + "-" + batches.get(0).last());
            }
            out.addAll(batches);
            next = batches.get(batches.size() - 1).last() + 1;
        }
        return out;
    }

    /** Every record of every batch, in order, from offset {@code from}. */
    static List<Read> readAll(PartitionLog log) {
        List<Read> out = new ArrayList<>();
        for (ReadBatch b : readAllBatches(log)) {
            for (Read r : b.records()) {
                if (r.offset() >= log.logStartOffset()) {
                    out.add(r);
                }
            }
        }
        return out;
    }

    /** Batches overlap-free and increasing, records strictly increasing and inside their batch. */
    static void checkOffsets(List<ReadBatch> batches) {
        long previous = -1;
        long previousBatchLast = -1;
        for (ReadBatch b : batches) {
            if (b.base() <= previousBatchLast || b.last() < b.base()) {
                throw new AssertionError("batch " + b.base() + "-" + b.last() + " after one ending at " + previousBatchLast);
            }
            for (Read r : b.records()) {
                if (r.offset() <= previous || r.offset() < b.base() || r.offset() > b.last()) {
                    throw new AssertionError("record offset " + r.offset() + " after " + previous + " in batch " + b.base() + "-" + b.last());
                }
                previous = r.offset();
            }
            previousBatchLast = b.last();
        }
    }

    /** The latest record per key (by offset) among {@code records}. */
    static Map<String, Read> latestPerKey(List<Read> records) {
        Map<String, Read> latest = new HashMap<>();
        for (Read r : records) {
            latest.put(r.key(), r);
        }
        return latest;
    }

    /** The segments' offset ranges must not overlap: each ends at or before the next one's base. */
    static void checkSegmentsDisjoint(PartitionLog log) {
        List<LogSegment> segs = new ArrayList<>(log.segments().all());
        for (int i = 0; i + 1 < segs.size(); i++) {
            long end = segs.get(i).readNextOffset();
            if (end > segs.get(i + 1).baseOffset()) {
                throw new AssertionError("segment " + segs.get(i).baseOffset() + " ends at " + end
                        + ", past the next segment's base " + segs.get(i + 1).baseOffset());
            }
        }
    }

    static TopicPartition tp(String topic) {
        return new TopicPartition(topic, 0);
    }

    static String describe(List<Read> records) {
        return Arrays.toString(records.stream().map(r -> r.offset() + ":" + r.key() + "=" + r.value()).toArray());
    }
}
