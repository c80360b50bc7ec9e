package dev.varve.storage;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.KafkaStorageException;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.FileLogInputStream.FileChannelRecordBatch;
import org.apache.kafka.common.record.internal.FileRecords;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * A log directory on a 1 MiB tmpfs that fills up: the append that does not fit fails with
 * {@link KafkaStorageException} (KAFKA_STORAGE_ERROR on the wire), the partial write is cut back so
 * every earlier batch reads back intact, the directory is reported failed, and once space returns
 * appends continue at the right offset; a clean restart finds nothing to repair. Skipped where tmpfs
 * cannot be mounted (not root, no mount(8)).
 */
class DiskFullTest {
    private static final long T0 = 1_700_000_000_000L;
    private static final TopicPartition TP = new TopicPartition("full", 0);

    @TempDir
    File tmp;
    private File mount;
    private boolean mounted;
    private final MockTime time = new MockTime(T0);
    private final ManualScheduler scheduler = new ManualScheduler(time);

    @BeforeEach
    void mountTinyTmpfs() throws Exception {
        mount = new File(tmp, "tiny");
        Files.createDirectories(mount.toPath());
        mounted = run("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", mount.getAbsolutePath());
        Assumptions.assumeTrue(dev.varve.storage.testing.Capabilities.require(mounted, "a tmpfs mount (needs root)"),
                "cannot mount a tmpfs here (needs root)");
    }

    @AfterEach
    void unmount() throws Exception {
        if (mounted) {
            run("umount", "-l", mount.getAbsolutePath());
        }
    }

    private static boolean run(String... command) {
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
            return p.waitFor(20, TimeUnit.SECONDS) && p.exitValue() == 0;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    private static String value(int i) {
        return i + ":" + "x".repeat(3000 + (i * 97) % 2000);
    }

    private static List<String> readAll(PartitionLog log) {
        List<String> out = new ArrayList<>();
        long next = log.logStartOffset();
        while (next < log.logEndOffset()) {
            LogSlice slice = log.read(next, 1 << 16, log.logEndOffset(), true);
            for (RecordBatch b : slice.records().batches()) {
                assertThat(b.isValid()).isTrue();
            }
            for (TestRecords.Rec r : TestRecords.read(slice.records())) {
                assertThat(r.offset()).isEqualTo(next);
                out.add(r.value());
                next++;
            }
        }
        return out;
    }

    @Test
    void aFullDiskFailsTheAppendWithAStorageErrorDamagesNothingAndRecoversWhenSpaceReturns() throws Exception {
        File filler = new File(mount, "filler");
        Files.write(filler.toPath(), new byte[300 * 1024]); // freed later: "space returns"
        File logDir = new File(mount, "data");
        LogConfig config = LogConfig.fromMap(Map.of(TopicConfig.SEGMENT_BYTES_CONFIG, 128 * 1024,
                TopicConfig.INDEX_INTERVAL_BYTES_CONFIG, 4096));
        LogManager manager = new LogManager(LogManagerConfig.defaults(List.of(logDir)), topic -> config, time, scheduler);
        manager.startup();
        List<Runnable> told = new ArrayList<>();
        manager.addStorageFailureListener(() -> told.add(() -> { }));
        PartitionLog log = manager.getOrCreateLog(TP);

        List<String> acked = new ArrayList<>();
        Throwable failure = null;
        for (int i = 0; i < 1_000 && failure == null; i++) {
            String v = value(i);
            try {
                log.appendAsLeader(TestRecords.batch(T0 + i, v), 0);
                acked.add(v);
            } catch (RuntimeException e) {
                failure = e;
            }
        }
        assertThat(failure).as("the disk fills up").isInstanceOf(KafkaStorageException.class);
        assertThat(Errors.forException(failure)).isEqualTo(Errors.KAFKA_STORAGE_ERROR);
        assertThat(acked.size()).isGreaterThan(50);
        assertThat(manager.failedLogDirs()).containsExactly(logDir.getAbsolutePath());
        assertThat(told).hasSize(1);

        // Nothing already written is damaged: the log ends after the last acknowledged batch, byte-exact.
        assertThat(log.logEndOffset()).isEqualTo(acked.size());
        assertThat(readAll(log)).isEqualTo(acked);
        long published = log.size();
        long onDisk = 0;
        for (File f : new File(logDir, "full-0").listFiles((d, name) -> name.endsWith(".log"))) {
            onDisk += f.length();
            try (FileRecords records = FileRecords.open(f, false)) {
                int end = 0;
                for (FileChannelRecordBatch b : records.batches()) {
                    b.ensureValid();
                    end = b.position() + b.sizeInBytes();
                }
                assertThat(end).as("%s holds whole batches only", f).isEqualTo((int) f.length());
            }
        }
        assertThat(onDisk).isEqualTo(published);

        // Still full: a retry fails the same way and changes nothing.
        Throwable again = catchThrowable(() -> log.appendAsLeader(TestRecords.batch(T0, value(9_999)), 0));
        assertThat(again).isInstanceOf(KafkaStorageException.class);
        assertThat(readAll(log)).isEqualTo(acked);

        // Space returns: the next append lands at the next offset and everything reads back.
        Files.delete(filler.toPath());
        String next = value(acked.size());
        assertThat(log.appendAsLeader(TestRecords.batch(T0, next), 0).firstOffset()).isEqualTo(acked.size());
        acked.add(next);
        for (int i = 0; i < 5; i++) {
            String v = value(acked.size());
            log.appendAsLeader(TestRecords.batch(T0, v), 0);
            acked.add(v);
        }
        assertThat(readAll(log)).isEqualTo(acked);
        manager.close();

        LogManager reopened = new LogManager(LogManagerConfig.defaults(List.of(logDir)), topic -> config, time, scheduler);
        reopened.startup();
        try {
            assertThat(reopened.damagedAtLoad()).isEmpty();
            assertThat(reopened.failedLogDirs()).isEmpty();
            assertThat(readAll(reopened.getLog(TP).orElseThrow())).isEqualTo(acked);
        } finally {
            reopened.close();
        }
    }
}
