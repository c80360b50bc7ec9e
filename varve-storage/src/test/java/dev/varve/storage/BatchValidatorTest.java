package dev.varve.storage;

import org.apache.kafka.common.InvalidRecordException;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.CorruptRecordException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.ByteBuffer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class BatchValidatorTest {
    private static final long NOW = 1_700_000_000_000L;
    private final LogConfig config = LogConfig.DEFAULT;

    @ParameterizedTest
    @ValueSource(strings = {"none", "gzip", "snappy", "lz4", "zstd"})
    void assignsConsecutiveOffsetsAndEpochAcrossBatches(String codec) {
        Compression compression = codecOf(codec);
        MemoryRecords records = TestRecords.concat(
                TestRecords.batch(compression, NOW, "a", "b", "c"),
                TestRecords.batch(compression, NOW + 5, "d"));
        LogAppendInfo info = BatchValidator.validateAndAssignOffsets(records, 100, 7, config, NOW);
        assertThat(info.firstOffset()).isEqualTo(100);
        assertThat(info.lastOffset()).isEqualTo(103);
        assertThat(info.numRecords()).isEqualTo(4);
        assertThat(info.maxTimestamp()).isEqualTo(NOW + 5);
        assertThat(info.offsetOfMaxTimestamp()).isEqualTo(103);
        assertThat(TestRecords.read(records)).extracting(TestRecords.Rec::offset).containsExactly(100L, 101L, 102L, 103L);
        for (RecordBatch b : records.batches()) {
            assertThat(b.partitionLeaderEpoch()).isEqualTo(7);
            assertThat(b.isValid()).isTrue();
        }
    }

    static Compression codecOf(String name) {
        return switch (name) {
            case "gzip" -> Compression.gzip().build();
            case "snappy" -> Compression.snappy().build();
            case "lz4" -> Compression.lz4().build();
            case "zstd" -> Compression.zstd().build();
            default -> Compression.NONE;
        };
    }

    @Test
    void rejectsBadCrcAsCorrupt() {
        MemoryRecords records = TestRecords.batch(NOW, "hello", "world");
        ByteBuffer buf = records.buffer();
        int last = buf.limit() - 1;
        buf.put(last, (byte) (buf.get(last) ^ 0x55)); // flip bits inside the last record
        assertThatThrownBy(() -> BatchValidator.validateAndAssignOffsets(records, 0, 0, config, NOW))
                .isInstanceOf(CorruptRecordException.class).hasMessageContaining("CRC");
    }

    @Test
    void rejectsTrailingPartialBatchAsCorrupt() {
        MemoryRecords whole = TestRecords.concat(TestRecords.batch(NOW, "a"), TestRecords.batch(NOW, "b"));
        ByteBuffer cut = whole.buffer().duplicate();
        cut.limit(cut.limit() - 3);
        MemoryRecords records = MemoryRecords.readableRecords(cut.slice());
        assertThatThrownBy(() -> BatchValidator.validateAndAssignOffsets(records, 0, 0, config, NOW))
                .isInstanceOf(CorruptRecordException.class);
    }

    @Test
    void rejectsLengthFieldSmallerThanAHeader() {
        ByteBuffer buf = TestRecords.batch(NOW, "a").buffer().duplicate();
        buf.putInt(8, 3); // batch length field
        assertThatThrownBy(() -> BatchValidator.validateAndAssignOffsets(MemoryRecords.readableRecords(buf), 0, 0, config, NOW))
                .isInstanceOf(CorruptRecordException.class);
    }

    @Test
    void rejectsOversizeBatch() {
        MemoryRecords records = TestRecords.sized(4, 1000, NOW);
        LogConfig small = config.with(TopicConfig.MAX_MESSAGE_BYTES_CONFIG, 1000);
        assertThatThrownBy(() -> BatchValidator.validateAndAssignOffsets(records, 0, 0, small, NOW))
                .isInstanceOf(RecordTooLargeException.class).hasMessageContaining("max.message.bytes");
    }

    @Test
    void rejectsOldMagic() {
        MemoryRecords v1 = MemoryRecords.withRecords(RecordBatch.MAGIC_VALUE_V1, Compression.NONE,
                new SimpleRecord(NOW, "k".getBytes(), "v".getBytes()));
        assertThatThrownBy(() -> BatchValidator.validateAndAssignOffsets(v1, 0, 0, config, NOW))
                .isInstanceOf(InvalidRecordException.class).hasMessageContaining("magic");
    }

    @Test
    void rejectsNonZeroBaseOffsetFromAProducer() {
        MemoryRecords records = MemoryRecords.withRecords(5L, Compression.NONE, new SimpleRecord(NOW, "v".getBytes()));
        assertThatThrownBy(() -> BatchValidator.validateAndAssignOffsets(records, 0, 0, config, NOW))
                .isInstanceOf(InvalidRecordException.class).hasMessageContaining("base offset");
    }

    @Test
    void rejectsRecordCountThatDisagreesWithRecords() {
        MemoryRecords records = TestRecords.batch(NOW, "a", "b", "c");
        ByteBuffer buf = records.buffer();
        // lastOffsetDelta at 23 and record count at 57 both claim 4 records; there are 3. Fix the CRC.
        buf.putInt(23, 3);
        buf.putInt(57, 4);
        MutableRecordBatch batch = records.batches().iterator().next();
        batch.setMaxTimestamp(TimestampType.CREATE_TIME, NOW + 1); // recomputes the CRC
        assertThat(batch.isValid()).isTrue();
        assertThatThrownBy(() -> BatchValidator.validateAndAssignOffsets(records, 0, 0, config, NOW))
                .isInstanceOf(InvalidRecordException.class);
    }

    @Test
    void rejectsTimestampsOutsideConfiguredBounds() {
        LogConfig strict = config.with(TopicConfig.MESSAGE_TIMESTAMP_BEFORE_MAX_MS_CONFIG, 1000L);
        // KIP-467: the records at fault are named by their index in the batch; only timestamps: INVALID_TIMESTAMP
        assertThatThrownBy(() -> BatchValidator.validateAndAssignOffsets(TestRecords.batch(NOW - 5000, "old"), 0, 0, strict, NOW))
                .isInstanceOfSatisfying(RecordsRejectedException.class, e -> {
                    assertThat(e.error()).isEqualTo(org.apache.kafka.common.protocol.Errors.INVALID_TIMESTAMP);
                    assertThat(e.recordErrors()).extracting(RecordsRejectedException.RecordError::batchIndex).containsExactly(0);
                });
        assertThatThrownBy(() -> BatchValidator.validateAndAssignOffsets(
                TestRecords.batch(NOW + 2 * 3_600_000L, "future"), 0, 0, config, NOW))
                .isInstanceOfSatisfying(RecordsRejectedException.class,
                        e -> assertThat(e.recordErrors().get(0).message()).contains("after.max.ms"));
    }

    @Test
    void namesEachRefusedRecordOfABatchByItsIndex() {
        LogConfig compacted = config.with(TopicConfig.CLEANUP_POLICY_CONFIG, "compact");
        MemoryRecords records = MemoryRecords.withRecords(org.apache.kafka.common.compress.Compression.NONE,
                new org.apache.kafka.common.record.internal.SimpleRecord(NOW, "k0".getBytes(), "v".getBytes()),
                new org.apache.kafka.common.record.internal.SimpleRecord(NOW, null, "v".getBytes()),
                new org.apache.kafka.common.record.internal.SimpleRecord(NOW, "k2".getBytes(), "v".getBytes()),
                new org.apache.kafka.common.record.internal.SimpleRecord(NOW - 10L * 365 * 24 * 3_600_000L, null, "v".getBytes()));
        LogConfig strict = compacted.with(TopicConfig.MESSAGE_TIMESTAMP_BEFORE_MAX_MS_CONFIG, 1000L);
        assertThatThrownBy(() -> BatchValidator.validateAndAssignOffsets(records, 0, 0, strict, NOW))
                .isInstanceOfSatisfying(RecordsRejectedException.class, e -> {
                    // one error per record, the missing key first (record 3 also has a bad timestamp)
                    assertThat(e.error()).isEqualTo(org.apache.kafka.common.protocol.Errors.INVALID_RECORD);
                    assertThat(e.recordErrors()).extracting(RecordsRejectedException.RecordError::batchIndex).containsExactly(1, 3);
                    assertThat(e.recordErrors()).allSatisfy(r -> assertThat(r.message()).contains("without key"));
                })
                .isInstanceOf(InvalidRecordException.class);
        // any bad timestamp makes it INVALID_TIMESTAMP, as Kafka's LogValidator reports it
        MemoryRecords mixed = MemoryRecords.withRecords(org.apache.kafka.common.compress.Compression.NONE,
                new org.apache.kafka.common.record.internal.SimpleRecord(NOW, null, "v".getBytes()),
                new org.apache.kafka.common.record.internal.SimpleRecord(NOW - 10L * 365 * 24 * 3_600_000L, "k".getBytes(), "v".getBytes()));
        assertThatThrownBy(() -> BatchValidator.validateAndAssignOffsets(mixed, 0, 0, strict, NOW))
                .isInstanceOfSatisfying(RecordsRejectedException.class, e -> {
                    assertThat(e.error()).isEqualTo(org.apache.kafka.common.protocol.Errors.INVALID_TIMESTAMP);
                    assertThat(e.recordErrors()).extracting(RecordsRejectedException.RecordError::batchIndex).containsExactly(0, 1);
                });
    }

    @Test
    void logAppendTimeStampsTheBrokerClockAndKeepsTheCrcValid() {
        LogConfig lat = config.with(TopicConfig.MESSAGE_TIMESTAMP_TYPE_CONFIG, "LogAppendTime");
        MemoryRecords records = TestRecords.batch(NOW - 10_000, "a", "b");
        LogAppendInfo info = BatchValidator.validateAndAssignOffsets(records, 0, 0, lat, NOW);
        assertThat(info.logAppendTimeMs()).isEqualTo(NOW);
        RecordBatch batch = records.batches().iterator().next();
        assertThat(batch.timestampType()).isEqualTo(TimestampType.LOG_APPEND_TIME);
        assertThat(batch.isValid()).isTrue();
        assertThat(TestRecords.read(records)).extracting(TestRecords.Rec::timestamp).containsOnly(NOW);
    }

    @Test
    void replicatedBatchesMustNotGoBackwards() {
        MemoryRecords records = MemoryRecords.withRecords(10L, Compression.NONE, new SimpleRecord(NOW, "v".getBytes()));
        assertThat(BatchValidator.validateReplicated(records, 10).firstOffset()).isEqualTo(10);
        assertThatThrownBy(() -> BatchValidator.validateReplicated(records, 11))
                .isInstanceOf(InvalidRecordException.class);
    }

    @Test
    void idempotentBatchNeedsASequenceNumber() {
        MemoryRecords ok = MemoryRecords.withIdempotentRecords(Compression.NONE, 42L, (short) 0, 0,
                new SimpleRecord(NOW, "v".getBytes()));
        assertThat(BatchValidator.validateAndAssignOffsets(ok, 0, 0, config, NOW).numRecords()).isEqualTo(1);
        MemoryRecords bad = MemoryRecords.withIdempotentRecords(Compression.NONE, 42L, (short) 0, 0,
                new SimpleRecord(NOW, "v".getBytes()));
        bad.buffer().putInt(53, -1); // baseSequence (Kafka's builder refuses to write a negative one)
        bad.batches().iterator().next().setMaxTimestamp(TimestampType.CREATE_TIME, NOW + 1); // fixes the CRC
        assertThatThrownBy(() -> BatchValidator.validateAndAssignOffsets(bad, 0, 0, config, NOW))
                .isInstanceOf(InvalidRecordException.class).hasMessageContaining("sequence");
    }

    @Test
    void emptyRequestIsANoOp() {
        assertThat(BatchValidator.validateAndAssignOffsets(MemoryRecords.EMPTY, 0, 0, config, NOW)).isEqualTo(LogAppendInfo.EMPTY);
    }
}
