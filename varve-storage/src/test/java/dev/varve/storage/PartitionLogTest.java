package dev.varve.storage;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.CorruptRecordException;
import org.apache.kafka.common.errors.OffsetOutOfRangeException;
import org.apache.kafka.common.record.internal.FileRecords;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class PartitionLogTest {
    private static final long T0 = 1_700_000_000_000L;
    private static final TopicPartition TP = new TopicPartition("orders", 0);

    @TempDir
    File tmp;
    private final MockTime time = new MockTime(T0);
    private final ManualScheduler scheduler = new ManualScheduler(time);
    private final List<PartitionLog> opened = new ArrayList<>();

    private LogConfig small() {
        return LogConfig.fromMap(Map.of(
                TopicConfig.SEGMENT_BYTES_CONFIG, 1024,
                TopicConfig.INDEX_INTERVAL_BYTES_CONFIG, 128,
                TopicConfig.FILE_DELETE_DELAY_MS_CONFIG, 1000L));
    }

    private PartitionLog open(LogConfig config) throws IOException {
        PartitionLog log = PartitionLog.open(new File(tmp, "orders-0"), TP, config, time, scheduler);
        opened.add(log);
        return log;
    }

    @AfterEach
    void closeAll() throws IOException {
        for (PartitionLog log : opened) {
            log.close();
        }
    }

    private static List<TestRecords.Rec> readAll(PartitionLog log, long from, long upTo) {
        List<TestRecords.Rec> out = new ArrayList<>();
        long next = from;
        while (next < upTo) {
            LogSlice slice = log.read(next, 300, upTo, true);
            List<TestRecords.Rec> recs = TestRecords.read(slice.records());
            assertThat(recs).as("progress from %d", next).isNotEmpty();
            for (TestRecords.Rec r : recs) {
                if (r.offset() >= next) {
                    out.add(r);
                }
            }
            next = recs.get(recs.size() - 1).offset() + 1;
        }
        return out;
    }

    @Test
    void appendedBytesReadBackIdenticallyAcrossSegments() throws IOException {
        PartitionLog log = open(small());
        List<byte[]> written = new ArrayList<>();
        for (int i = 0; i < 50; i++) {
            MemoryRecords batch = TestRecords.batch(T0 + i, "value-" + i, "second-" + i);
            log.appendAsLeader(batch, 3);
            byte[] bytes = new byte[batch.sizeInBytes()];
            batch.buffer().duplicate().get(bytes);
            written.add(bytes);
        }
        assertThat(log.logEndOffset()).isEqualTo(100);
        assertThat(log.numberOfSegments()).isGreaterThan(3);
        // The files hold exactly the batches as assigned, in order: disk bytes == wire bytes.
        ByteBuffer all = ByteBuffer.allocate(written.stream().mapToInt(b -> b.length).sum());
        for (long base : log.segmentBaseOffsets()) {
            all.put(java.nio.file.Files.readAllBytes(LogFileNames.logFile(log.dir(), base).toPath()));
        }
        ByteBuffer expected = ByteBuffer.allocate(all.capacity());
        written.forEach(expected::put);
        assertThat(all.array()).isEqualTo(expected.array());
        assertThat(readAll(log, 0, 100)).extracting(TestRecords.Rec::offset)
                .containsExactlyElementsOf(java.util.stream.LongStream.range(0, 100).boxed().toList());
    }

    @Test
    void segmentsAreNamedByBaseOffsetWithBothIndexes() throws IOException {
        PartitionLog log = open(small());
        for (int i = 0; i < 30; i++) {
            log.appendAsLeader(TestRecords.sized(1, 100, T0), 0);
        }
        for (long base : log.segmentBaseOffsets()) {
            assertThat(LogFileNames.logFile(log.dir(), base)).exists();
            assertThat(LogFileNames.offsetIndexFile(log.dir(), base)).exists();
            assertThat(LogFileNames.timeIndexFile(log.dir(), base)).exists();
        }
        assertThat(new File(log.dir(), "00000000000000000000.log")).exists();
    }

    @Test
    void readNeverSplitsABatchButReturnsOneWholeBatchWhenTooSmall() throws IOException {
        PartitionLog log = open(LogConfig.DEFAULT);
        for (int i = 0; i < 10; i++) {
            log.appendAsLeader(TestRecords.sized(5, 100, T0), 0); // each batch ~600 bytes
        }
        LogSlice one = log.read(0, 10, log.logEndOffset(), true);
        assertThat(one.records().batches()).hasSize(1);
        assertThat(TestRecords.read(one.records())).hasSize(5);
        LogSlice none = log.read(0, 10, log.logEndOffset(), false);
        assertThat(none.isEmpty()).isTrue();
        int batchSize = one.sizeInBytes();
        LogSlice three = log.read(0, batchSize * 3 + batchSize / 2, log.logEndOffset(), false);
        assertThat(three.sizeInBytes()).isEqualTo(batchSize * 3);
        // Reading from the middle of a batch starts at that batch.
        LogSlice mid = log.read(7, batchSize, log.logEndOffset(), true);
        assertThat(TestRecords.read(mid.records()).get(0).offset()).isEqualTo(5);
    }

    @Test
    void readsStopAtTheUpperBound() throws IOException {
        PartitionLog log = open(small());
        for (int i = 0; i < 20; i++) {
            log.appendAsLeader(TestRecords.batch(T0, "a" + i, "b" + i), 0);
        }
        log.updateHighWatermark(10);
        assertThat(log.highWatermark()).isEqualTo(10);
        List<TestRecords.Rec> visible = readAll(log, 0, log.highWatermark());
        assertThat(visible).extracting(TestRecords.Rec::offset).allMatch(o -> o < 10);
        LogSlice big = log.read(0, Integer.MAX_VALUE, 10, true);
        assertThat(TestRecords.read(big.records())).extracting(TestRecords.Rec::offset).allMatch(o -> o < 10);
        assertThat(log.read(10, 1000, 10, true).isEmpty()).isTrue();
        // An upper bound inside a batch excludes that batch.
        assertThat(TestRecords.read(log.read(0, Integer.MAX_VALUE, 11, true).records()))
                .extracting(TestRecords.Rec::offset).allMatch(o -> o < 10);
    }

    @Test
    void readOutsideTheLogIsOutOfRange() throws IOException {
        PartitionLog log = open(small());
        log.appendAsLeader(TestRecords.batch(T0, "a"), 0);
        assertThatThrownBy(() -> log.read(2, 100, 2, true)).isInstanceOf(OffsetOutOfRangeException.class);
        assertThat(log.read(1, 100, 1, true).isEmpty()).isTrue();
    }

    @Test
    void findsTheFirstOffsetAtOrAfterATimestamp() throws IOException {
        PartitionLog log = open(small());
        for (int i = 0; i < 40; i++) {
            log.appendAsLeader(TestRecords.batch(T0 + i * 10L, "v" + i), 0);
        }
        long end = log.logEndOffset();
        assertThat(log.offsetForTimestamp(T0 + 105, end).map(t -> t.offset)).contains(11L);
        assertThat(log.offsetForTimestamp(T0 + 110, end).map(t -> t.offset)).contains(11L);
        assertThat(log.offsetForTimestamp(T0 - 1, end).map(t -> t.offset)).contains(0L);
        assertThat(log.offsetForTimestamp(T0 + 10_000, end)).isEmpty();
        assertThat(log.offsetForTimestamp(T0 + 390, 39)).isEmpty(); // above the bound
        FileRecords.TimestampAndOffset max = log.maxTimestampAndOffset(end).orElseThrow();
        assertThat(max.offset).isEqualTo(39);
        assertThat(max.timestamp).isEqualTo(T0 + 390);
    }

    @Test
    void atomicAppendOfAManyBatchRequestWithOneBadBatch() throws IOException {
        PartitionLog log = open(small());
        log.appendAsLeader(TestRecords.batch(T0, "before"), 0);
        MemoryRecords bad = TestRecords.batch(T0, "bad");
        bad.buffer().put(bad.buffer().limit() - 1, (byte) 0x7f);
        MemoryRecords request = TestRecords.concat(TestRecords.batch(T0, "good"), bad);
        long sizeBefore = log.size();
        assertThatThrownBy(() -> log.appendAsLeader(request, 0)).isInstanceOf(CorruptRecordException.class);
        assertThat(log.logEndOffset()).isEqualTo(1);
        assertThat(log.size()).isEqualTo(sizeBefore);
        log.appendAsLeader(TestRecords.batch(T0, "after"), 0);
        assertThat(TestRecords.values(log.read(0, 10_000, 2, true).records())).containsExactly("before", "after");
    }

    @Test
    void deleteRecordsBeforeMovesTheStartAndDropsWholeSegments() throws IOException {
        PartitionLog log = open(small());
        for (int i = 0; i < 40; i++) {
            log.appendAsLeader(TestRecords.sized(2, 100, T0), 0);
        }
        log.updateHighWatermark(log.logEndOffset());
        int segmentsBefore = log.numberOfSegments();
        assertThatThrownBy(() -> log.deleteRecordsBefore(log.logEndOffset() + 1)).isInstanceOf(OffsetOutOfRangeException.class);
        long target = 45;
        assertThat(log.deleteRecordsBefore(target)).isEqualTo(target);
        assertThat(log.logStartOffset()).isEqualTo(target);
        assertThat(log.numberOfSegments()).isLessThan(segmentsBefore);
        assertThat(log.segmentBaseOffsets().get(0)).isLessThanOrEqualTo(target);
        assertThatThrownBy(() -> log.read(target - 1, 100, log.logEndOffset(), true)).isInstanceOf(OffsetOutOfRangeException.class);
        assertThat(TestRecords.read(log.read(target, 100, log.logEndOffset(), true).records()))
                .extracting(TestRecords.Rec::offset).contains(target);
        // Deleted segments are renamed now and removed after file.delete.delay.ms.
        assertThat(deletedFiles(log)).isNotEmpty();
        scheduler.tick(1000);
        assertThat(deletedFiles(log)).isEmpty();
    }

    private static List<String> deletedFiles(PartitionLog log) {
        String[] names = log.dir().list((d, n) -> n.endsWith(LogFileNames.DELETED_SUFFIX));
        return names == null ? List.of() : Arrays.asList(names);
    }

    @Test
    void truncateToRemovesTheTailIncludingWholeBatchesAndLaterSegments() throws IOException {
        PartitionLog log = open(small());
        for (int i = 0; i < 30; i++) {
            log.appendAsLeader(TestRecords.batch(T0 + i, "x" + i, "y" + i), i / 10);
        }
        assertThat(log.epochCache().entries()).extracting(EpochEntry::epoch).containsExactly(0, 1, 2);
        log.updateHighWatermark(60);
        assertThat(log.truncateTo(25)).isTrue(); // inside the batch 24-25: the whole batch goes
        assertThat(log.logEndOffset()).isEqualTo(24);
        assertThat(log.highWatermark()).isEqualTo(24);
        // Epoch 2 began at offset 40, which is gone.
        assertThat(log.epochCache().entries()).containsExactly(new EpochEntry(0, 0), new EpochEntry(1, 20));
        assertThat(log.truncateTo(20)).isTrue();
        assertThat(log.logEndOffset()).isEqualTo(20);
        assertThat(log.epochCache().entries()).containsExactly(new EpochEntry(0, 0));
        assertThat(log.segmentBaseOffsets()).allMatch(b -> b <= 20);
        log.appendAsLeader(TestRecords.batch(T0, "new"), 5);
        assertThat(TestRecords.read(log.read(20, 1000, 21, true).records())).extracting(TestRecords.Rec::value).containsExactly("new");
        assertThat(readAll(log, 0, 21)).hasSize(21);
    }

    @Test
    void truncatingAtTheLogEndDropsAnEpochThatNeverGotARecord() throws IOException {
        PartitionLog log = open(small());
        log.appendAsLeader(TestRecords.batch(T0, "a", "b"), 1);
        // this replica became leader of epoch 2 but appended nothing before losing leadership
        log.epochCache().assign(2, log.logEndOffset());
        assertThat(log.truncateTo(log.logEndOffset() + 5)).isFalse();
        assertThat(log.logEndOffset()).isEqualTo(2);
        assertThat(log.epochCache().entries()).containsExactly(new EpochEntry(1, 0));
    }

    @Test
    void truncateFullyStartsAnEmptyLogAtTheOffset() throws IOException {
        PartitionLog log = open(small());
        for (int i = 0; i < 20; i++) {
            log.appendAsLeader(TestRecords.batch(T0, "v" + i), 0);
        }
        log.truncateFullyAndStartAt(500);
        assertThat(log.logStartOffset()).isEqualTo(500);
        assertThat(log.logEndOffset()).isEqualTo(500);
        assertThat(log.segmentBaseOffsets()).containsExactly(500L);
        LogAppendInfo info = log.appendAsLeader(TestRecords.batch(T0, "first"), 1);
        assertThat(info.firstOffset()).isEqualTo(500);
    }

    @Test
    void retentionByTimeRollsTheActiveSegmentInsteadOfDeletingItInPlace() throws IOException {
        PartitionLog log = open(small().with(TopicConfig.RETENTION_MS_CONFIG, 60_000L));
        for (int i = 0; i < 20; i++) {
            log.appendAsLeader(TestRecords.sized(2, 100, time.milliseconds()), 0);
        }
        log.updateHighWatermark(log.logEndOffset());
        assertThat(log.deleteOldSegments()).isZero();
        time.advance(61_000);
        int before = log.numberOfSegments();
        assertThat(log.deleteOldSegments()).isEqualTo(before);
        assertThat(log.numberOfSegments()).isEqualTo(1);
        assertThat(log.logStartOffset()).isEqualTo(40);
        assertThat(log.logEndOffset()).isEqualTo(40);
        assertThat(log.segmentBaseOffsets()).containsExactly(40L);
    }

    @Test
    void retentionNeverDeletesAboveTheHighWatermark() throws IOException {
        PartitionLog log = open(small().with(TopicConfig.RETENTION_MS_CONFIG, 1L));
        for (int i = 0; i < 20; i++) {
            log.appendAsLeader(TestRecords.sized(2, 100, T0), 0);
        }
        time.advance(10_000);
        assertThat(log.highWatermark()).isZero();
        assertThat(log.deleteOldSegments()).isZero();
        long hw = log.segmentBaseOffsets().get(2);
        log.updateHighWatermark(hw);
        assertThat(log.deleteOldSegments()).isEqualTo(2);
        assertThat(log.logStartOffset()).isEqualTo(hw);
    }

    @Test
    void retentionBySizeAndByRecordCount() throws IOException {
        PartitionLog log = open(small());
        for (int i = 0; i < 40; i++) {
            log.appendAsLeader(TestRecords.sized(2, 100, T0), 0);
        }
        log.updateHighWatermark(log.logEndOffset());
        long total = log.size();
        log.updateConfig(log.config().with(TopicConfig.RETENTION_BYTES_CONFIG, total / 2));
        assertThat(log.deleteOldSegments()).isPositive();
        // Whole segments go: what remains exceeds the limit by less than its oldest segment.
        long oldest = LogFileNames.logFile(log.dir(), log.segmentBaseOffsets().get(0)).length();
        assertThat(log.size()).isGreaterThan(total / 2);
        assertThat(log.size() - oldest).isLessThan(total / 2);
        log.updateConfig(log.config().with(Map.of(TopicConfig.RETENTION_BYTES_CONFIG, -1L, LogConfig.RETENTION_MESSAGES_CONFIG, 10L)));
        log.deleteOldSegments();
        long kept = log.logEndOffset() - log.logStartOffset();
        assertThat(kept).isGreaterThanOrEqualTo(10);
        // Deleting one more segment would leave fewer than 10.
        assertThat(log.numberOfSegments() == 1 || log.logEndOffset() - log.segmentBaseOffsets().get(1) < 10).isTrue();
    }

    @Test
    void rollsOnSegmentMs() throws IOException {
        PartitionLog log = open(LogConfig.DEFAULT.with(TopicConfig.SEGMENT_MS_CONFIG, 1000L));
        log.appendAsLeader(TestRecords.batch(time.milliseconds(), "a"), 0);
        log.appendAsLeader(TestRecords.batch(time.milliseconds(), "b"), 0);
        assertThat(log.numberOfSegments()).isEqualTo(1);
        time.advance(1001);
        log.appendAsLeader(TestRecords.batch(time.milliseconds(), "c"), 0);
        assertThat(log.segmentBaseOffsets()).containsExactly(0L, 2L);
    }

    @Test
    void rollsWhenTheIndexIsFull() throws IOException {
        PartitionLog log = open(LogConfig.fromMap(Map.of(
                TopicConfig.SEGMENT_INDEX_BYTES_CONFIG, 64, TopicConfig.INDEX_INTERVAL_BYTES_CONFIG, 0)));
        for (int i = 0; i < 30; i++) {
            log.appendAsLeader(TestRecords.batch(T0 + i, "v" + i), 0);
        }
        assertThat(log.numberOfSegments()).isGreaterThan(2);
        assertThat(readAll(log, 0, 30)).hasSize(30);
    }

    @Test
    void flushMessagesOneFsyncsBeforeAppendReturns() throws IOException {
        PartitionLog log = open(small().with(TopicConfig.FLUSH_MESSAGES_INTERVAL_CONFIG, 1L));
        for (int i = 0; i < 10; i++) {
            log.appendAsLeader(TestRecords.batch(T0, "v" + i), 0);
            assertThat(log.recoveryPoint()).isEqualTo(log.logEndOffset());
        }
    }

    @Test
    void defaultPolicyDoesNotFsyncButFlushMsDoes() throws IOException {
        PartitionLog log = open(small().with(TopicConfig.FLUSH_MS_CONFIG, 5000L));
        log.appendAsLeader(TestRecords.batch(T0, "v"), 0);
        assertThat(log.recoveryPoint()).isZero();
        log.flushIfDue();
        assertThat(log.recoveryPoint()).isZero();
        time.advance(5000);
        log.flushIfDue();
        assertThat(log.recoveryPoint()).isEqualTo(1);
    }

    @Test
    void cleanReopenKeepsEverything() throws IOException {
        PartitionLog log = open(small());
        for (int i = 0; i < 30; i++) {
            log.appendAsLeader(TestRecords.batch(T0 + i, "v" + i), i / 10);
        }
        log.updateHighWatermark(30);
        log.flush();
        List<Long> bases = log.segmentBaseOffsets();
        log.close();
        opened.remove(log);
        PartitionLog again = PartitionLog.open(log.dir(), TP, small(), time, scheduler, 0, 30, 30, true);
        opened.add(again);
        assertThat(again.logEndOffset()).isEqualTo(30);
        assertThat(again.highWatermark()).isEqualTo(30);
        assertThat(again.segmentBaseOffsets()).isEqualTo(bases);
        assertThat(again.epochCache().entries()).containsExactly(new EpochEntry(0, 0), new EpochEntry(1, 10), new EpochEntry(2, 20));
        assertThat(readAll(again, 0, 30)).extracting(TestRecords.Rec::value)
                .containsExactlyElementsOf(java.util.stream.IntStream.range(0, 30).mapToObj(i -> "v" + i).toList());
        assertThat(again.offsetForTimestamp(T0 + 17, 30).map(t -> t.offset)).contains(17L);
        again.appendAsLeader(TestRecords.batch(T0, "more"), 2);
        assertThat(again.logEndOffset()).isEqualTo(31);
    }

    @Test
    void followerAppendKeepsLeaderOffsetsAndEpochs() throws IOException {
        PartitionLog leader = open(small());
        for (int i = 0; i < 10; i++) {
            leader.appendAsLeader(TestRecords.batch(T0, "v" + i), 4);
        }
        PartitionLog follower = PartitionLog.open(new File(tmp, "orders-1"), new TopicPartition("orders", 1), small(), time, scheduler);
        opened.add(follower);
        LogSlice slice = leader.read(0, Integer.MAX_VALUE, 10, true);
        ByteBuffer copy = ByteBuffer.allocate(slice.sizeInBytes());
        for (RecordBatch b : slice.records().batches()) {
            b.writeTo(copy);
        }
        copy.flip();
        follower.appendAsFollower(MemoryRecords.readableRecords(copy));
        assertThat(follower.logEndOffset()).isEqualTo(10);
        assertThat(follower.epochCache().entries()).containsExactly(new EpochEntry(4, 0));
        assertThat(TestRecords.values(follower.read(0, 100_000, 10, true).records())).hasSize(10);
    }
}
