package dev.varve.storage;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.OutOfOrderSequenceException;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Idempotent producers through {@link PartitionLog}: deduplication, refusals, and state across restarts. */
class IdempotentAppendTest {
    private static final long T0 = 1_700_000_000_000L;
    private static final TopicPartition TP = new TopicPartition("orders", 0);
    private static final long PID = 4242L;

    @TempDir
    File tmp;
    private final MockTime time = new MockTime(T0);
    private final ManualScheduler scheduler = new ManualScheduler(time);
    private final List<PartitionLog> opened = new ArrayList<>();
    private File dir;

    private LogConfig small() {
        return LogConfig.fromMap(Map.of(TopicConfig.SEGMENT_BYTES_CONFIG, 300,
                TopicConfig.FILE_DELETE_DELAY_MS_CONFIG, 1000L, TopicConfig.RETENTION_MS_CONFIG, -1L));
    }

    private PartitionLog open(LogConfig config) throws IOException {
        dir = new File(tmp, "orders-0");
        PartitionLog log = PartitionLog.open(dir, TP, config, time, scheduler);
        opened.add(log);
        return log;
    }

    /** Reopens after a crash: the old instance is abandoned (never closed), recovery point 0. */
    private PartitionLog reopenUnclean(LogConfig config) throws IOException {
        opened.clear();
        PartitionLog log = PartitionLog.open(dir, TP, config, time, scheduler, 0, 0, 0, false);
        opened.add(log);
        return log;
    }

    private PartitionLog reopenClean(PartitionLog log) throws IOException {
        long start = log.logStartOffset();
        long rp = log.recoveryPoint();
        long hw = log.highWatermark();
        log.flush();
        log.close();
        PartitionLog reopened = PartitionLog.open(dir, TP, log.config(), time, scheduler, start, rp, hw, true);
        opened.add(reopened);
        return reopened;
    }

    @AfterEach
    void closeAll() throws IOException {
        for (PartitionLog log : opened) {
            log.close();
        }
    }

    private static MemoryRecords batch(int epoch, int seq, int count) {
        return TestRecords.idempotent(PID, (short) epoch, seq, count, T0);
    }

    private static List<String> values(PartitionLog log) {
        List<String> out = new ArrayList<>();
        long next = log.logStartOffset();
        while (next < log.logEndOffset()) {
            List<TestRecords.Rec> recs = TestRecords.read(log.read(next, 1 << 20, log.logEndOffset(), true).records());
            recs.stream().filter(r -> r.offset() >= log.logStartOffset()).forEach(r -> out.add(r.value()));
            next = recs.get(recs.size() - 1).offset() + 1;
        }
        return out;
    }

    private static List<String> expected(int epoch, int fromSeq, int toSeqExclusive) {
        List<String> out = new ArrayList<>();
        for (int s = fromSeq; s < toSeqExclusive; s++) {
            out.add("p" + PID + "-e" + epoch + "-s" + s);
        }
        return out;
    }

    /** Appends batches seq [0, 2), [2, 4), ... in epoch 0; returns their append infos. */
    private static List<LogAppendInfo> produce(PartitionLog log, int batches) {
        List<LogAppendInfo> infos = new ArrayList<>();
        for (int i = 0; i < batches; i++) {
            infos.add(log.appendAsLeader(batch(0, 2 * i, 2), 0));
        }
        return infos;
    }

    private static void assertAllDuplicates(PartitionLog log, List<LogAppendInfo> originals, int fromBatch) {
        long end = log.logEndOffset();
        for (int i = fromBatch; i < originals.size(); i++) {
            LogAppendInfo retry = log.appendAsLeader(batch(0, 2 * i, 2), 0);
            assertThat(retry.duplicate()).as("retry of batch %d", i).isTrue();
            assertThat(retry.firstOffset()).isEqualTo(originals.get(i).firstOffset());
            assertThat(retry.lastOffset()).isEqualTo(originals.get(i).lastOffset());
        }
        assertThat(log.logEndOffset()).isEqualTo(end);
    }

    @Test
    void aRetriedBatchGetsItsOriginalOffsetsAndIsNotAppendedAgain() throws IOException {
        PartitionLog log = open(LogConfig.DEFAULT);
        log.appendAsLeader(TestRecords.batch(T0, "plain"), 0);
        LogAppendInfo first = log.appendAsLeader(batch(0, 0, 3), 0);
        assertThat(first.duplicate()).isFalse();
        assertThat(first.firstOffset()).isEqualTo(1);
        long size = log.size();

        LogAppendInfo retry = log.appendAsLeader(batch(0, 0, 3), 0);
        assertThat(retry.duplicate()).isTrue();
        assertThat(retry.firstOffset()).isEqualTo(1);
        assertThat(retry.lastOffset()).isEqualTo(3);
        assertThat(retry.numRecords()).isZero();
        assertThat(retry.logAppendTimeMs()).isEqualTo(RecordBatch.NO_TIMESTAMP);
        assertThat(log.logEndOffset()).isEqualTo(4);
        assertThat(log.size()).isEqualTo(size);
        assertThat(values(log)).containsExactly("plain", "p4242-e0-s0", "p4242-e0-s1", "p4242-e0-s2");
    }

    @Test
    void aDuplicateOnALogAppendTimeTopicCarriesTheOriginalAppendTime() throws IOException {
        PartitionLog log = open(LogConfig.DEFAULT.with(TopicConfig.MESSAGE_TIMESTAMP_TYPE_CONFIG, "LogAppendTime"));
        LogAppendInfo first = log.appendAsLeader(batch(0, 0, 1), 0);
        time.advance(5000);
        LogAppendInfo retry = log.appendAsLeader(batch(0, 0, 1), 0);
        assertThat(retry.duplicate()).isTrue();
        assertThat(retry.logAppendTimeMs()).isEqualTo(first.logAppendTimeMs()).isEqualTo(T0);
    }

    @Test
    void aGapIsRefusedAndNothingIsAppended() throws IOException {
        PartitionLog log = open(LogConfig.DEFAULT);
        log.appendAsLeader(batch(0, 0, 2), 0);
        long size = log.size();
        assertThatThrownBy(() -> log.appendAsLeader(batch(0, 3, 1), 0)).isInstanceOf(OutOfOrderSequenceException.class);
        assertThat(log.logEndOffset()).isEqualTo(2);
        assertThat(log.size()).isEqualTo(size);
        assertThat(log.appendAsLeader(batch(0, 2, 1), 0).firstOffset()).isEqualTo(2);
    }

    @Test
    void aStaleEpochIsRefusedAndANewEpochMustStartAtZero() throws IOException {
        PartitionLog log = open(LogConfig.DEFAULT);
        log.appendAsLeader(batch(1, 0, 2), 0);
        assertThatThrownBy(() -> log.appendAsLeader(batch(0, 2, 1), 0)).isInstanceOf(InvalidProducerEpochException.class);
        assertThatThrownBy(() -> log.appendAsLeader(batch(2, 2, 1), 0)).isInstanceOf(OutOfOrderSequenceException.class);
        assertThat(log.logEndOffset()).isEqualTo(2);
        assertThat(log.appendAsLeader(batch(2, 0, 1), 0).duplicate()).isFalse();
        assertThat(log.producerState(PID)).get().satisfies(e -> {
            assertThat(e.producerEpoch()).isEqualTo((short) 2);
            assertThat(e.lastSeq()).isZero();
        });
        assertThat(values(log)).containsExactly("p4242-e1-s0", "p4242-e1-s1", "p4242-e2-s0");
    }

    @Test
    void sequencesWrapAround() throws IOException {
        PartitionLog log = open(LogConfig.DEFAULT);
        log.appendAsLeader(TestRecords.batch(T0, "plain"), 0); // a never-written log would refuse a first sequence above 0
        log.appendAsLeader(batch(0, Integer.MAX_VALUE - 1, 2), 0);
        assertThatThrownBy(() -> log.appendAsLeader(batch(0, 1, 1), 0)).isInstanceOf(OutOfOrderSequenceException.class);
        log.appendAsLeader(batch(0, 0, 2), 0);
        assertThat(log.appendAsLeader(batch(0, Integer.MAX_VALUE - 1, 2), 0).duplicate()).isTrue();
        assertThat(log.appendAsLeader(batch(0, 2, 1), 0).firstOffset()).isEqualTo(5);
    }

    /** KAFKA-15591 (Kafka 4.5): see ProducerStateTable; a log emptied by DeleteRecords is not "never written". */
    @Test
    void aLogThatNeverHeldARecordTakesAProducersFirstBatchAtSequenceZeroOnly() throws IOException {
        PartitionLog log = open(LogConfig.DEFAULT);
        assertThatThrownBy(() -> log.appendAsLeader(batch(0, 3, 2), 0)).isInstanceOf(OutOfOrderSequenceException.class);
        assertThat(log.logEndOffset()).isZero();
        assertThat(log.producerState(PID)).isEmpty();
        log.appendAsLeader(batch(0, 0, 3), 0);
        log.appendAsLeader(batch(0, 3, 2), 0);
        assertThat(values(log)).isEqualTo(expected(0, 0, 5));

        log.updateHighWatermark(5);
        log.deleteRecordsBefore(5);
        assertThat(log.logStartOffset()).isEqualTo(log.logEndOffset());
        MemoryRecords otherProducer = TestRecords.idempotent(7L, (short) 0, 40, 1, T0);
        assertThat(log.appendAsLeader(otherProducer, 0).firstOffset()).isEqualTo(5);
    }

    @Test
    void theSixthBatchInFlightPushesTheOldestOutOfTheWindow() throws IOException {
        PartitionLog log = open(LogConfig.DEFAULT);
        List<LogAppendInfo> infos = produce(log, 6);
        assertThatThrownBy(() -> log.appendAsLeader(batch(0, 0, 2), 0)).isInstanceOf(OutOfOrderSequenceException.class);
        assertAllDuplicates(log, infos, 1);
        assertThat(log.logEndOffset()).isEqualTo(12);
    }

    @Test
    void aRequestMixingNewBatchesWithADuplicateAppendsNothing() throws IOException {
        PartitionLog log = open(LogConfig.DEFAULT);
        log.appendAsLeader(batch(0, 0, 2), 0);
        MemoryRecords mixed = TestRecords.concat(TestRecords.idempotent(7L, (short) 0, 0, 1, T0), batch(0, 0, 2));
        LogAppendInfo info = log.appendAsLeader(mixed, 0);
        assertThat(info.duplicate()).isTrue();
        assertThat(info.firstOffset()).isZero();
        assertThat(log.logEndOffset()).isEqualTo(2);
        assertThat(log.producerState(7L)).isEmpty();
    }

    @Test
    void severalBatchesOfOneProducerInOneRequest() throws IOException {
        PartitionLog log = open(LogConfig.DEFAULT);
        LogAppendInfo info = log.appendAsLeader(TestRecords.concat(batch(0, 0, 2), batch(0, 2, 3)), 0);
        assertThat(info.lastOffset()).isEqualTo(4);
        assertThat(log.producerState(PID).get().batches()).hasSize(2);
        assertThatThrownBy(() -> log.appendAsLeader(TestRecords.concat(batch(0, 5, 1), batch(0, 7, 1)), 0))
                .isInstanceOf(OutOfOrderSequenceException.class);
        assertThat(log.logEndOffset()).isEqualTo(5);
    }

    @Test
    void followersApplyTheLeadersBatchesWithoutChecks() throws IOException {
        PartitionLog log = open(LogConfig.DEFAULT);
        MemoryRecords replicated = batch(3, 10, 2);
        replicated.batches().iterator().next().setLastOffset(1);
        log.appendAsFollower(replicated);
        MemoryRecords older = batch(1, 50, 1); // an older epoch and a gap: the leader's decision stands
        older.batches().iterator().next().setLastOffset(2);
        log.appendAsFollower(older);
        assertThat(log.producerState(PID).get().producerEpoch()).isEqualTo((short) 1);
        // Once leader, the same state deduplicates.
        LogAppendInfo retry = log.appendAsLeader(batch(1, 50, 1), 0);
        assertThat(retry.duplicate()).isTrue();
        assertThat(retry.firstOffset()).isEqualTo(2);
    }

    @Test
    void deduplicationSurvivesACleanRestart() throws IOException {
        PartitionLog log = open(small());
        List<LogAppendInfo> infos = produce(log, 12);
        assertThat(log.numberOfSegments()).isGreaterThan(2);
        PartitionLog reopened = reopenClean(log);
        // The close wrote a snapshot at the log end: nothing to replay, all five batches remembered.
        assertThat(reopened.producerSnapshotOffsets()).contains(24L);
        assertThat(reopened.producerState(PID).get().batches()).hasSize(5);
        assertAllDuplicates(reopened, infos, 7);
        assertThatThrownBy(() -> reopened.appendAsLeader(batch(0, 12, 2), 0)).isInstanceOf(OutOfOrderSequenceException.class);
        assertThat(reopened.appendAsLeader(batch(0, 24, 1), 0).firstOffset()).isEqualTo(24);
    }

    @Test
    void deduplicationSurvivesACrash() throws IOException {
        LogConfig config = small();
        PartitionLog log = open(config);
        List<LogAppendInfo> infos = produce(log, 12);
        List<Long> rollSnapshots = log.producerSnapshotOffsets();
        assertThat(rollSnapshots).isNotEmpty().doesNotContain(24L);
        // Abandoned without close: the state comes from the last roll snapshot plus the log after it.
        PartitionLog crashed = reopenUnclean(config);
        assertThat(crashed.logEndOffset()).isEqualTo(24);
        assertThat(crashed.producerState(PID)).isEqualTo(log.producerState(PID));
        assertAllDuplicates(crashed, infos, 7);

        // Without any snapshot, from the whole log.
        for (long offset : crashed.producerSnapshotOffsets()) {
            java.nio.file.Files.delete(LogFileNames.producerSnapshotFile(dir, offset).toPath());
        }
        PartitionLog again = reopenUnclean(config);
        assertThat(again.producerState(PID)).isEqualTo(log.producerState(PID));
        assertAllDuplicates(again, infos, 7);
    }

    @Test
    void aCorruptSnapshotIsDeletedAndTheStateRebuilt() throws IOException {
        PartitionLog log = open(small());
        List<LogAppendInfo> infos = produce(log, 12);
        log.flush();
        log.close();
        List<Long> snapshots = log.producerSnapshotOffsets();
        long latest = snapshots.get(snapshots.size() - 1);
        assertThat(latest).isEqualTo(24);
        try (RandomAccessFile f = new RandomAccessFile(LogFileNames.producerSnapshotFile(dir, latest), "rw")) {
            f.seek(20);
            f.write(0x55);
        }
        PartitionLog reopened = PartitionLog.open(dir, TP, small(), time, scheduler, 0, log.recoveryPoint(), 0, true);
        opened.add(reopened);
        assertThat(LogFileNames.producerSnapshotFile(dir, latest)).doesNotExist();
        assertThat(reopened.producerState(PID)).isEqualTo(log.producerState(PID));
        assertAllDuplicates(reopened, infos, 7);

        // Garbage in every snapshot: rebuilt from the first segment.
        reopened.close();
        for (long offset : reopened.producerSnapshotOffsets()) {
            java.nio.file.Files.write(LogFileNames.producerSnapshotFile(dir, offset).toPath(), new byte[]{1, 2, 3});
        }
        PartitionLog rebuilt = PartitionLog.open(dir, TP, small(), time, scheduler, 0, log.recoveryPoint(), 0, true);
        opened.add(rebuilt);
        assertThat(rebuilt.producerState(PID)).isEqualTo(log.producerState(PID));
    }

    @Test
    void truncationRollsTheStateBack() throws IOException {
        PartitionLog log = open(small());
        produce(log, 12); // batch i holds offsets 2i, 2i+1
        List<Long> before = log.producerSnapshotOffsets();
        assertThat(log.truncateTo(17)).isTrue(); // removes the batch 16-17 and everything after
        assertThat(log.logEndOffset()).isEqualTo(16);
        assertThat(log.producerSnapshotOffsets()).allMatch(o -> o <= 16)
                .containsExactlyElementsOf(before.stream().filter(o -> o <= 16).toList());
        assertThat(log.producerState(PID).get().lastSeq()).isEqualTo(15);
        // The truncated batch is new again (the new leader never had it); an older one is still a duplicate.
        assertThat(log.appendAsLeader(batch(0, 14, 2), 0).duplicate()).isTrue();
        LogAppendInfo again = log.appendAsLeader(batch(0, 16, 2), 0);
        assertThat(again.duplicate()).isFalse();
        assertThat(again.firstOffset()).isEqualTo(16);

        // The same state after a crash.
        PartitionLog crashed = reopenUnclean(small());
        assertThat(crashed.producerState(PID)).isEqualTo(log.producerState(PID));

        crashed.truncateFullyAndStartAt(100);
        assertThat(crashed.activeProducers()).isEmpty();
        assertThat(crashed.producerSnapshotOffsets()).isEmpty();
        assertThat(crashed.appendAsLeader(batch(0, 16, 2), 0).firstOffset()).isEqualTo(100);
    }

    @Test
    void snapshotsAreTakenAtRollsAndDeletedWithTheirSegments() throws IOException {
        PartitionLog log = open(small());
        produce(log, 12);
        List<Long> segmentsAfterFirst = log.segmentBaseOffsets().subList(1, log.numberOfSegments());
        assertThat(log.producerSnapshotOffsets()).containsExactlyElementsOf(segmentsAfterFirst);
        assertThat(LogFileNames.producerSnapshotFile(dir, segmentsAfterFirst.get(0))).exists();

        log.updateHighWatermark(log.logEndOffset());
        long second = log.segmentBaseOffsets().get(2);
        log.deleteRecordsBefore(second);
        assertThat(log.producerSnapshotOffsets()).allMatch(o -> o >= second).contains(second);
        // The producer outlives its deleted batches (until it expires).
        assertThat(log.producerState(PID).get().batches()).hasSize(5);
    }

    @Test
    void theRecoveryPointPrunesOldSnapshots() throws IOException {
        PartitionLog log = open(small());
        produce(log, 20);
        int before = log.producerSnapshotOffsets().size();
        assertThat(before).isGreaterThan(3);
        log.flush();
        List<Long> bases = log.segmentBaseOffsets();
        assertThat(log.producerSnapshotOffsets()).containsExactly(bases.get(bases.size() - 2), bases.get(bases.size() - 1));
    }

    @Test
    void idleProducersExpireOnTheLogManagersSchedule() throws IOException {
        File logDir = new File(tmp, "data");
        LogManagerConfig managerConfig = LogManagerConfig.defaults(List.of(logDir))
                .withProducerIdExpiration(60_000L, 10_000L);
        LogManager manager = new LogManager(managerConfig, topic -> LogConfig.DEFAULT, time, scheduler);
        manager.startup();
        try {
            PartitionLog log = manager.getOrCreateLog(TP);
            log.appendAsLeader(batch(0, 0, 1), 0);
            scheduler.tick(50_000);
            assertThat(log.producerState(PID)).isPresent();
            scheduler.tick(10_000);
            assertThat(log.producerState(PID)).isEmpty();
            // Forgotten: the producer's next batch is accepted at any sequence.
            assertThat(log.appendAsLeader(batch(0, 5, 1), 0).duplicate()).isFalse();
            assertThat(log.logEndOffset()).isEqualTo(2);
        } finally {
            manager.close();
        }
        // An expired producer in a snapshot is dropped at load, as Kafka does.
        time.advance(120_000);
        LogManager restarted = new LogManager(managerConfig, topic -> LogConfig.DEFAULT, time, scheduler);
        restarted.startup();
        try {
            assertThat(restarted.getLog(TP).orElseThrow().activeProducers()).isEmpty();
        } finally {
            restarted.close();
        }
    }
}
