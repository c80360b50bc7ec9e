package dev.varve.storage;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.TopicConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

class LogManagerTest {
    private static final long T0 = 1_700_000_000_000L;

    @TempDir
    File tmp;
    private final MockTime time = new MockTime(T0);
    private final ManualScheduler scheduler = new ManualScheduler(time);
    private final LogConfig config = LogConfig.fromMap(Map.of(TopicConfig.SEGMENT_BYTES_CONFIG, 1024));

    private LogManager manager(File... dirs) throws IOException {
        LogManager m = new LogManager(LogManagerConfig.defaults(List.of(dirs)), topic -> config, time, scheduler);
        m.startup();
        return m;
    }

    private static void fill(PartitionLog log, int n) {
        for (int i = 0; i < n; i++) {
            log.appendAsLeader(TestRecords.batch(T0 + i, "v" + i), 0);
        }
        log.updateHighWatermark(log.logEndOffset());
    }

    @Test
    void cleanShutdownWritesMarkerAndCheckpointsThenRestartsWithoutRecovery() throws IOException {
        File d = new File(tmp, "data");
        LogManager m = manager(d);
        TopicPartition tp = new TopicPartition("orders", 2);
        fill(m.getOrCreateLog(tp), 40);
        assertThat(new File(d, "orders-2")).isDirectory();
        m.close();
        assertThat(new File(d, LogFileNames.CLEAN_SHUTDOWN_MARKER)).exists();
        assertThat(Files.readAllLines(new File(d, LogFileNames.RECOVERY_POINT_CHECKPOINT).toPath()))
                .containsExactly("0", "1", "orders 2 40");
        assertThat(Files.readAllLines(new File(d, LogFileNames.HIGH_WATERMARK_CHECKPOINT).toPath()))
                .containsExactly("0", "1", "orders 2 40");

        LogManager again = manager(d);
        assertThat(new File(d, LogFileNames.CLEAN_SHUTDOWN_MARKER)).doesNotExist(); // a crash from now on is unclean
        PartitionLog log = again.getLog(tp).orElseThrow();
        assertThat(log.logEndOffset()).isEqualTo(40);
        assertThat(log.highWatermark()).isEqualTo(40);
        assertThat(log.recoveryPoint()).isEqualTo(40);
        again.close();
    }

    /** Start-up loads a directory's partitions on several threads (num.recovery.threads.per.data.dir); none is lost or mixed up. */
    @Test
    void partitionsLoadInParallelAfterAnUncleanShutdown() throws Exception {
        File d = new File(tmp, "data");
        LogManager m = manager(d);
        for (int p = 0; p < 300; p++) {
            fill(m.getOrCreateLog(new TopicPartition("t", p)), 1 + p % 7);
        }
        // crash: no close, no marker; load again with three threads (this one and two of the scheduler's)
        try (ExecutorScheduler threads = new ExecutorScheduler(2, "test-recovery")) {
            LogManager again = new LogManager(LogManagerConfig.defaults(List.of(d)).withRecoveryThreadsPerDataDir(3),
                    topic -> config, time, threads);
            again.startup();
            assertThat(again.allLogs()).hasSize(300);
            for (int p = 0; p < 300; p++) {
                PartitionLog log = again.getLog(new TopicPartition("t", p)).orElseThrow();
                assertThat(log.logEndOffset()).as("t-%d", p).isEqualTo(1 + p % 7);
                assertThat(log.topicPartition()).isEqualTo(new TopicPartition("t", p));
            }
            assertThat(again.offlinePartitions()).isEmpty();
            again.close();
        }
        for (PartitionLog log : m.allLogs()) {
            log.close();
        }
    }

    @Test
    void deleteRecordsIsDurableAcrossAnUncleanRestart() throws IOException {
        File d = new File(tmp, "data");
        LogManager m = manager(d);
        TopicPartition tp = new TopicPartition("t", 0);
        fill(m.getOrCreateLog(tp), 50);
        assertThat(m.deleteRecordsBefore(tp, 33)).isEqualTo(33);
        // Crash: no close, no marker. The log start offset checkpoint was written synchronously.
        LogManager again = manager(d);
        assertThat(again.getLog(tp).orElseThrow().logStartOffset()).isEqualTo(33);
        again.close();
        m.getLog(tp).orElseThrow().close();
    }

    @Test
    void retentionRunsOnTheScheduler() throws IOException {
        File d = new File(tmp, "data");
        LogManager m = new LogManager(LogManagerConfig.defaults(List.of(d)),
                topic -> config.with(TopicConfig.RETENTION_MS_CONFIG, 1000L), time, scheduler);
        m.startup();
        PartitionLog log = m.getOrCreateLog(new TopicPartition("t", 0));
        fill(log, 40);
        int before = log.numberOfSegments();
        assertThat(before).isGreaterThan(1);
        scheduler.tick(300_000); // log.retention.check.interval.ms
        assertThat(log.numberOfSegments()).isEqualTo(1);
        assertThat(log.logStartOffset()).isEqualTo(40);
        m.close();
    }

    @Test
    void newPartitionsSpreadOverLogDirectories() throws IOException {
        File a = new File(tmp, "a");
        File b = new File(tmp, "b");
        LogManager m = manager(a, b);
        for (int p = 0; p < 4; p++) {
            m.getOrCreateLog(new TopicPartition("t", p));
        }
        assertThat(a.list((dir, name) -> name.startsWith("t-"))).hasSize(2);
        assertThat(b.list((dir, name) -> name.startsWith("t-"))).hasSize(2);
        m.close();
        LogManager again = manager(a, b);
        assertThat(again.allLogs()).hasSize(4);
        again.close();
    }

    @Test
    void deletedPartitionIsRenamedAtOnceAndNeverReloaded() throws IOException {
        File d = new File(tmp, "data");
        LogManager m = manager(d);
        TopicPartition tp = new TopicPartition("gone", 0);
        fill(m.getOrCreateLog(tp), 5);
        m.deleteLog(tp);
        assertThat(new File(d, "gone-0")).doesNotExist();
        assertThat(d.list((dir, name) -> name.startsWith("gone-0.") && name.endsWith("-delete"))).hasSize(1);
        assertThat(m.getLog(tp)).isEmpty();
        m.close();
        LogManager again = manager(d);
        assertThat(again.getLog(tp)).isEmpty();
        assertThat(d.list((dir, name) -> name.endsWith("-delete"))).isEmpty();
        again.close();
    }

    @Test
    void anUnloadablePartitionIsOfflineAndTheOthersLoad() throws IOException {
        File d = new File(tmp, "data");
        LogManager m = manager(d);
        fill(m.getOrCreateLog(new TopicPartition("good", 0)), 5);
        fill(m.getOrCreateLog(new TopicPartition("bad", 0)), 5);
        m.close();
        File badDir = new File(d, "bad-0");
        // Make the partition directory unreadable as a directory: replace it with a file of that name.
        for (File f : badDir.listFiles()) {
            Files.delete(f.toPath());
        }
        Files.delete(badDir.toPath());
        Files.createDirectories(badDir.toPath());
        new File(badDir, "00000000000000000000.log").mkdir(); // a directory where a segment file should be
        LogManager again = manager(d);
        assertThat(again.getLog(new TopicPartition("good", 0)).orElseThrow().logEndOffset()).isEqualTo(5);
        assertThat(again.offlinePartitions()).containsExactly(new TopicPartition("bad", 0));
        again.close();
    }

    @Test
    void corruptCheckpointFilesMeanFullRecoveryNotACrash() throws IOException {
        File d = new File(tmp, "data");
        LogManager m = manager(d);
        TopicPartition tp = new TopicPartition("t", 0);
        fill(m.getOrCreateLog(tp), 30);
        m.close();
        Files.writeString(new File(d, LogFileNames.RECOVERY_POINT_CHECKPOINT).toPath(), "0\n1\nt 0 notanumber\n");
        Files.delete(new File(d, LogFileNames.CLEAN_SHUTDOWN_MARKER).toPath());
        LogManager again = manager(d);
        assertThat(again.getLog(tp).orElseThrow().logEndOffset()).isEqualTo(30);
        again.close();
    }

    @Test
    void thousandsOfPartitionsLoadWithoutMappingTheirIndexes() throws IOException {
        java.nio.file.Path maps = java.nio.file.Path.of("/proc/self/maps");
        org.junit.jupiter.api.Assumptions.assumeTrue(dev.varve.storage.testing.Capabilities.require(Files.isReadable(maps),
                "/proc/self/maps"), "needs /proc/self/maps");
        File d = new File(tmp, "data");
        LogManager m = manager(d);
        int partitions = 1000;
        for (int p = 0; p < partitions; p++) {
            PartitionLog log = m.getOrCreateLog(new TopicPartition("many", p));
            log.appendAsLeader(TestRecords.batch(T0, "v" + p), -1);
        }
        m.close();
        LogManager again = manager(d);
        assertThat(again.allLogs()).hasSize(partitions);
        long mappedIndexes = Files.readAllLines(maps).stream()
                .filter(l -> l.endsWith(".index") || l.endsWith(".timeindex")).count();
        assertThat(mappedIndexes).as("index files mapped after loading %d partitions", partitions).isZero();
        assertThat(again.getLog(new TopicPartition("many", partitions - 1)).orElseThrow().read(0, 1000, 1, true).records().sizeInBytes())
                .isPositive();
        again.close();
    }
}
