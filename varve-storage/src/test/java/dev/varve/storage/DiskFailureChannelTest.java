package dev.varve.storage;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.KafkaStorageException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The storage failure channel, one case per failure path found in review (issue 13): each failure
 * reaches the listener, and what stays in memory is what is on disk.
 */
class DiskFailureChannelTest {
    private static final long T0 = 1_700_000_000_000L;
    private static final TopicPartition TP = new TopicPartition("orders", 0);

    @TempDir
    File tmp;
    private final MockTime time = new MockTime(T0);
    private final ManualScheduler scheduler = new ManualScheduler(time);
    private final LogConfig config = LogConfig.fromMap(Map.of(TopicConfig.SEGMENT_BYTES_CONFIG, 1024,
            TopicConfig.FILE_DELETE_DELAY_MS_CONFIG, 0L));
    private final AtomicInteger reported = new AtomicInteger();

    @AfterEach
    void removeFaults() {
        DiskFaults.install(DiskFaults.NONE).close();
    }

    private PartitionLog open() throws IOException {
        PartitionLog log = PartitionLog.open(new File(tmp, "orders-0"), TP, config, time, scheduler);
        log.onStorageFailure(e -> reported.incrementAndGet());
        return log;
    }

    private static void fill(PartitionLog log, int n, int epoch) {
        for (int i = 0; i < n; i++) {
            log.appendAsLeader(TestRecords.batch(T0 + i, "v" + log.logEndOffset()), epoch);
        }
        log.updateHighWatermark(log.logEndOffset());
    }

    /** Inode exhaustion: the leader-epoch checkpoint's .tmp cannot be created while appends to existing files still work. */
    @Test
    void aLeaderEpochCheckpointThatCannotBeWrittenIsReportedAndRetriedWithoutDuplicatingOffsets() throws IOException {
        PartitionLog log = open();
        fill(log, 5, 1);
        try (DiskFaults.Installed ignored = DiskFaults.install((op, file) -> {
            if (op == DiskFaults.Op.CREATE && file.getFileName().toString().startsWith(LogFileNames.LEADER_EPOCH_CHECKPOINT)) {
                throw new IOException("No space left on device (no free inode)");
            }
        })) {
            fill(log, 3, 2); // a new epoch: the checkpoint is stale now
            assertThatThrownBy(log::flush).isInstanceOf(KafkaStorageException.class);
            assertThat(reported.get()).isEqualTo(1);
            assertThat(log.isOffline()).isFalse();
            assertThat(log.recoveryPoint()).as("nothing claimed durable").isZero();
            fill(log, 2, 2); // appends go on at the right offsets
        }
        assertThat(log.logEndOffset()).isEqualTo(10);
        assertThat(TestRecords.read(log.read(0, 100_000, 10, true).records())).extracting(TestRecords.Rec::offset)
                .containsExactly(0L, 1L, 2L, 3L, 4L, 5L, 6L, 7L, 8L, 9L);
        log.flush(); // the retry succeeds once inodes are back
        assertThat(log.recoveryPoint()).isEqualTo(10);
        assertThat(log.epochCache().entries()).containsExactly(new EpochEntry(1, 0), new EpochEntry(2, 5));
        log.close();
        PartitionLog again = PartitionLog.open(new File(tmp, "orders-0"), TP, config, time, scheduler, 0, 10, 10, false);
        assertThat(again.epochCache().entries()).containsExactly(new EpochEntry(1, 0), new EpochEntry(2, 5));
        again.close();
    }

    /** After a failed fsync the kernel may have dropped the pages: the log stops serving until it is recovered from disk. */
    @Test
    void aFailedFsyncTakesTheLogOfflineUntilItIsReopened() throws IOException {
        PartitionLog log = open();
        fill(log, 6, 0);
        try (DiskFaults.Installed ignored = DiskFaults.install((op, file) -> {
            if (op == DiskFaults.Op.FSYNC && file.getFileName().toString().endsWith(".log")) {
                throw new IOException("Input/output error");
            }
        })) {
            assertThatThrownBy(log::flush).isInstanceOf(KafkaStorageException.class);
        }
        assertThat(reported.get()).isEqualTo(1);
        assertThat(log.isOffline()).isTrue();
        assertThat(log.recoveryPoint()).isZero();
        assertThatThrownBy(() -> log.appendAsLeader(TestRecords.batch(T0, "x"), 0)).isInstanceOf(KafkaStorageException.class);
        assertThatThrownBy(() -> log.read(0, 1000, 6, true)).isInstanceOf(KafkaStorageException.class);
        log.close();
        PartitionLog again = PartitionLog.open(new File(tmp, "orders-0"), TP, config, time, scheduler, 0, 0, 6, false);
        assertThat(again.isOffline()).isFalse();
        assertThat(TestRecords.values(again.read(0, 100_000, 6, true).records()))
                .containsExactly("v0", "v1", "v2", "v3", "v4", "v5");
        again.close();
    }

    /** A truncation that fails part-way never leaves the recovery point or the high watermark above the log end. */
    @Test
    void aFailedTruncationClampsFirstAndTakesTheLogOffline() throws IOException {
        PartitionLog log = open();
        fill(log, 30, 0);
        log.flush();
        assertThat(log.recoveryPoint()).isEqualTo(30);
        AtomicInteger lowered = new AtomicInteger();
        log.onRecoveryPointLowered(lowered::incrementAndGet);
        try (DiskFaults.Installed ignored = DiskFaults.install((op, file) -> {
            if (op == DiskFaults.Op.TRUNCATE) {
                throw new IOException("Input/output error");
            }
        })) {
            assertThatThrownBy(() -> log.truncateTo(12)).isInstanceOf(KafkaStorageException.class);
        }
        assertThat(log.isOffline()).isTrue();
        assertThat(log.recoveryPoint()).isLessThanOrEqualTo(12);
        assertThat(log.highWatermark()).isLessThanOrEqualTo(12);
        assertThat(reported.get()).isEqualTo(1);
    }

    @Test
    void aTruncationBelowTheRecoveryPointIsReportedSoItsCheckpointFollows() throws IOException {
        PartitionLog log = open();
        fill(log, 30, 0);
        AtomicInteger lowered = new AtomicInteger();
        log.onRecoveryPointLowered(lowered::incrementAndGet);
        log.truncateTo(25); // above the recovery point (nothing flushed): nothing to checkpoint
        assertThat(lowered.get()).isZero();
        log.flush();
        log.truncateTo(20);
        assertThat(lowered.get()).isEqualTo(1);
        assertThat(log.recoveryPoint()).isEqualTo(20);
        log.close();
    }

    @Test
    void theLogManagerCheckpointsLoweredRecoveryPointsOncePerDirectory() throws IOException {
        File d = new File(tmp, "data");
        LogManager m = new LogManager(LogManagerConfig.defaults(List.of(d)), topic -> config, time, scheduler);
        m.startup();
        for (int p = 0; p < 3; p++) {
            PartitionLog log = m.getOrCreateLog(new TopicPartition("t", p));
            fill(log, 10, 0);
            log.flush();
        }
        m.checkpointAll();
        File checkpoint = new File(d, LogFileNames.RECOVERY_POINT_CHECKPOINT);
        assertThat(Files.readAllLines(checkpoint.toPath())).contains("t 0 10", "t 1 10", "t 2 10");
        m.getLog(new TopicPartition("t", 0)).orElseThrow().truncateTo(4);
        m.getLog(new TopicPartition("t", 2)).orElseThrow().truncateTo(7);
        long modifiedBefore = checkpoint.lastModified();
        m.checkpointLoweredRecoveryPoints();
        assertThat(Files.readAllLines(checkpoint.toPath())).contains("t 0 4", "t 1 10", "t 2 7");
        checkpoint.setLastModified(modifiedBefore - 10_000);
        m.checkpointLoweredRecoveryPoints(); // nothing lowered since: not written again
        assertThat(checkpoint.lastModified()).isEqualTo(modifiedBefore - 10_000);
        m.close();
    }

    /** A trusted segment (below the recovery point) that overlaps the next one is cut where the next begins. */
    @Test
    void loadingCutsASegmentThatOverlapsTheNextEvenBelowTheRecoveryPoint() throws IOException {
        File dir = new File(tmp, "orders-0");
        PartitionLog log = open();
        fill(log, 10, 0);
        log.roll();
        fill(log, 10, 0);
        log.close();
        // segment 0 holds 0-9, segment 10 holds 10-19. Make segment 0 hold 0-14 too: copy 5 batches of segment 10 after it
        // (what a power failure that undid a truncation's ftruncate leaves, the recovery point not yet lowered).
        File seg0 = LogFileNames.logFile(dir, 0);
        File seg10 = LogFileNames.logFile(dir, 10);
        byte[] next = Files.readAllBytes(seg10.toPath());
        int fiveBatches = 0;
        var batches = org.apache.kafka.common.record.internal.MemoryRecords.readableRecords(java.nio.ByteBuffer.wrap(next)).batches().iterator();
        for (int i = 0; i < 5; i++) {
            fiveBatches += batches.next().sizeInBytes();
        }
        Files.write(seg0.toPath(), java.util.Arrays.copyOf(next, fiveBatches), java.nio.file.StandardOpenOption.APPEND);
        Files.deleteIfExists(LogFileNames.offsetIndexFile(dir, 0).toPath()); // indexes rebuilt, so they look fine
        PartitionLog again = PartitionLog.open(dir, TP, config, time, scheduler, 0, 20, 20, false, false);
        assertThat(again.segmentBaseOffsets()).containsExactly(0L, 10L);
        assertThat(again.segments().get(0L).readNextOffset()).isEqualTo(10);
        assertThat(again.logEndOffset()).isEqualTo(20);
        assertThat(again.damagedAtLoad()).isTrue();
        assertThat(TestRecords.read(again.read(0, 100_000, 20, true).records())).extracting(TestRecords.Rec::offset)
                .containsExactly(0L, 1L, 2L, 3L, 4L, 5L, 6L, 7L, 8L, 9L);
        again.close();
    }
}
