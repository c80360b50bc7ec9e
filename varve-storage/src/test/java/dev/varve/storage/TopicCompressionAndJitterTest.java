package dev.varve.storage;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.CompressionType;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.utils.Utils;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.io.IOException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** {@code compression.type} recompresses on append; {@code segment.jitter.ms} makes segments roll early at random. */
class TopicCompressionAndJitterTest {
    private static final long T0 = 1_700_000_000_000L;
    private static final TopicPartition TP = new TopicPartition("t", 0);

    @TempDir
    File tmp;
    private final MockTime time = new MockTime(T0);
    private final ManualScheduler scheduler = new ManualScheduler(time);
    private final List<PartitionLog> opened = new ArrayList<>();

    private PartitionLog open(Map<String, ?> config) throws IOException {
        PartitionLog log = PartitionLog.open(new File(tmp, "t-0-" + opened.size()), TP, LogConfig.fromMap(config), time, scheduler);
        opened.add(log);
        return log;
    }

    @AfterEach
    void closeAll() throws IOException {
        for (PartitionLog log : opened) {
            log.close();
        }
    }

    /** An idempotent batch of three records with keys, headers and distinct timestamps, in {@code codec}. */
    private static MemoryRecords produced(Compression codec) {
        return MemoryRecords.withIdempotentRecords(RecordBatch.MAGIC_VALUE_V2, 0L, codec, 77L, (short) 3, 0, -1,
                new SimpleRecord(T0, "k1".getBytes(), "v1".getBytes(), new RecordHeader[]{new RecordHeader("h", "x".getBytes())}),
                new SimpleRecord(T0 + 1, null, "v2".getBytes()),
                new SimpleRecord(T0 + 2, "k3".getBytes(), null));
    }

    private static List<RecordBatch> stored(PartitionLog log) {
        List<RecordBatch> out = new ArrayList<>();
        log.read(0, 1 << 20, log.logEndOffset(), true).records().batches().forEach(out::add);
        return out;
    }

    @Test
    void aTopicCodecRecompressesEveryOtherCodecAndKeepsRecordsAndProducerState() throws IOException {
        for (String codec : List.of("zstd", "lz4", "gzip", "snappy", "uncompressed")) {
            PartitionLog log = open(Map.of(TopicConfig.COMPRESSION_TYPE_CONFIG, codec));
            log.appendAsLeader(produced(Compression.NONE), 4);
            log.appendAsLeader(produced(Compression.gzip().build()), 4); // a retry: deduplicated
            MemoryRecords second = MemoryRecords.withIdempotentRecords(RecordBatch.MAGIC_VALUE_V2, 0L,
                    Compression.lz4().build(), 77L, (short) 3, 3, -1, new SimpleRecord(T0 + 3, "k4".getBytes(), "v4".getBytes()));
            log.appendAsLeader(second, 4);
            CompressionType expected = codec.equals("uncompressed") ? CompressionType.NONE : CompressionType.forName(codec);
            List<RecordBatch> batches = stored(log);
            assertThat(batches).as(codec).hasSize(2);
            for (RecordBatch b : batches) {
                assertThat(b.compressionType()).as(codec).isEqualTo(expected);
                assertThat(b.producerId()).isEqualTo(77L);
                assertThat(b.producerEpoch()).isEqualTo((short) 3);
                assertThat(b.partitionLeaderEpoch()).isEqualTo(4);
                b.ensureValid();
            }
            assertThat(batches.get(0).baseSequence()).isZero();
            assertThat(batches.get(1).baseSequence()).isEqualTo(3);
            assertThat(batches.get(0).maxTimestamp()).isEqualTo(T0 + 2);
            List<Record> records = new ArrayList<>();
            batches.forEach(b -> b.forEach(records::add));
            assertThat(records).extracting(Record::offset).containsExactly(0L, 1L, 2L, 3L);
            assertThat(records).extracting(Record::timestamp).containsExactly(T0, T0 + 1, T0 + 2, T0 + 3);
            assertThat(Utils.utf8(records.get(0).key())).isEqualTo("k1");
            assertThat(records.get(0).headers()).hasSize(1);
            assertThat(records.get(0).headers()[0].key()).isEqualTo("h");
            assertThat(records.get(1).hasKey()).isFalse();
            assertThat(records.get(2).hasValue()).isFalse();
            assertThat(Utils.utf8(records.get(3).value())).isEqualTo("v4");
        }
    }

    @Test
    void producerKeepsEachBatchsCodec() throws IOException {
        PartitionLog log = open(Map.of());
        log.appendAsLeader(produced(Compression.gzip().build()), 0);
        log.appendAsLeader(MemoryRecords.withRecords(Compression.NONE, new SimpleRecord(T0, "v".getBytes())), 0);
        assertThat(stored(log)).extracting(RecordBatch::compressionType).containsExactly(CompressionType.GZIP, CompressionType.NONE);
    }

    @Test
    void aBatchThatGrowsPastTheLimitWhenRecompressedIsRefusedAndNothingIsWritten() throws IOException {
        // random bytes compress badly: gzip'd they fit, stored uncompressed they do not
        byte[] value = new byte[4000];
        new java.util.Random(1).nextBytes(value);
        byte[] repetitive = new byte[20_000];
        java.util.Arrays.fill(repetitive, (byte) 'a');
        PartitionLog log = open(Map.of(TopicConfig.COMPRESSION_TYPE_CONFIG, "uncompressed",
                TopicConfig.MAX_MESSAGE_BYTES_CONFIG, 10_000));
        MemoryRecords gzipped = MemoryRecords.withRecords(Compression.gzip().build(), new SimpleRecord(T0, value),
                new SimpleRecord(T0, repetitive));
        assertThat(gzipped.sizeInBytes()).isLessThan(10_000);
        assertThatThrownBy(() -> log.appendAsLeader(gzipped, 0)).isInstanceOf(RecordTooLargeException.class);
        assertThat(log.logEndOffset()).isZero();
    }

    @Test
    void logAppendTimeStillStampsRecompressedBatches() throws IOException {
        PartitionLog log = open(Map.of(TopicConfig.COMPRESSION_TYPE_CONFIG, "zstd",
                TopicConfig.MESSAGE_TIMESTAMP_TYPE_CONFIG, "LogAppendTime"));
        log.appendAsLeader(produced(Compression.NONE), 0);
        RecordBatch b = stored(log).get(0);
        assertThat(b.timestampType()).isEqualTo(TimestampType.LOG_APPEND_TIME);
        assertThat(b.maxTimestamp()).isEqualTo(time.milliseconds());
        assertThat(b.compressionType()).isEqualTo(CompressionType.ZSTD);
    }

    @Test
    void segmentJitterIsDrawnPerSegmentBelowSegmentMsAndRollsItEarly() throws IOException {
        LogConfig config = LogConfig.fromMap(Map.of(TopicConfig.SEGMENT_MS_CONFIG, 1000L,
                TopicConfig.SEGMENT_JITTER_MS_CONFIG, 5000L));
        Set<Long> jitters = new HashSet<>();
        for (int i = 0; i < 200; i++) {
            long j = config.randomSegmentJitterMs();
            assertThat(j).isBetween(0L, 999L); // capped by segment.ms
            jitters.add(j);
        }
        assertThat(jitters.size()).as("distinct jitters of 200 segments").isGreaterThan(50);
        assertThat(LogConfig.fromMap(Map.of()).randomSegmentJitterMs()).isZero();

        PartitionLog log = open(Map.of(TopicConfig.SEGMENT_MS_CONFIG, 1000L, TopicConfig.SEGMENT_JITTER_MS_CONFIG, 1000L));
        log.appendAsLeader(MemoryRecords.withRecords(Compression.NONE, new SimpleRecord(T0, "a".getBytes())), 0);
        long jitter = log.activeSegmentRollJitterMs();
        // one record whose timestamp is just past the jittered limit rolls; one just before does not
        log.appendAsLeader(MemoryRecords.withRecords(Compression.NONE, new SimpleRecord(T0 + 1000 - jitter, "b".getBytes())), 0);
        assertThat(log.numberOfSegments()).isEqualTo(1);
        log.appendAsLeader(MemoryRecords.withRecords(Compression.NONE, new SimpleRecord(T0 + 1001 - jitter, "c".getBytes())), 0);
        assertThat(log.numberOfSegments()).isEqualTo(2);
    }
}
