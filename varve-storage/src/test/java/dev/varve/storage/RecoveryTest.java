package dev.varve.storage;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.TopicConfig;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** Unclean shutdowns: torn tails, garbage, lost or corrupt indexes and checkpoints. */
class RecoveryTest {
    private static final long T0 = 1_700_000_000_000L;
    private static final TopicPartition TP = new TopicPartition("t", 0);

    @TempDir
    File tmp;
    private final MockTime time = new MockTime(T0);
    private final ManualScheduler scheduler = new ManualScheduler(time);
    private final List<PartitionLog> opened = new ArrayList<>();
    private File dir;

    private final LogConfig config = LogConfig.fromMap(Map.of(
            TopicConfig.SEGMENT_BYTES_CONFIG, 2048, TopicConfig.INDEX_INTERVAL_BYTES_CONFIG, 100));

    @AfterEach
    void closeAll() throws IOException {
        for (PartitionLog log : opened) {
            log.close();
        }
    }

    /** Writes {@code n} single-record batches "v0".."v{n-1}" and closes without flushing the marker logic. */
    private PartitionLog write(int n) throws IOException {
        dir = new File(tmp, "t-0");
        PartitionLog log = PartitionLog.open(dir, TP, config, time, scheduler);
        for (int i = 0; i < n; i++) {
            log.appendAsLeader(TestRecords.batch(T0 + i, "v" + i), i / 20);
        }
        return log;
    }

    private PartitionLog reopenUnclean(long recoveryPoint) throws IOException {
        PartitionLog log = PartitionLog.open(dir, TP, config, time, scheduler, 0, recoveryPoint, 0, false);
        opened.add(log);
        return log;
    }

    private static List<String> values(PartitionLog log) {
        List<String> out = new ArrayList<>();
        long next = log.logStartOffset();
        while (next < log.logEndOffset()) {
            LogSlice slice = log.read(next, 4096, log.logEndOffset(), true);
            List<TestRecords.Rec> recs = TestRecords.read(slice.records());
            for (TestRecords.Rec r : recs) {
                assertThat(r.offset()).isEqualTo(next);
                out.add(r.value());
                next++;
            }
        }
        return out;
    }

    private static List<String> expected(int n) {
        return java.util.stream.IntStream.range(0, n).mapToObj(i -> "v" + i).toList();
    }

    private File activeLogFile(PartitionLog log) {
        List<Long> bases = log.segmentBaseOffsets();
        return LogFileNames.logFile(dir, bases.get(bases.size() - 1));
    }

    @Test
    void tornLastBatchIsCutAndEverythingBeforeItKept() throws IOException {
        PartitionLog log = write(50);
        File active = activeLogFile(log);
        log.close();
        long len = active.length();
        try (RandomAccessFile raf = new RandomAccessFile(active, "rw")) {
            raf.setLength(len - 5); // the last batch loses its last bytes
        }
        PartitionLog recovered = reopenUnclean(0);
        assertThat(recovered.logEndOffset()).isEqualTo(49);
        assertThat(values(recovered)).isEqualTo(expected(49));
        recovered.appendAsLeader(TestRecords.batch(T0, "v49"), 2);
        assertThat(values(recovered)).isEqualTo(expected(50));
    }

    @Test
    void garbageAfterTheLastBatchIsCut() throws IOException {
        PartitionLog log = write(50);
        File active = activeLogFile(log);
        log.close();
        try (RandomAccessFile raf = new RandomAccessFile(active, "rw")) {
            raf.seek(raf.length());
            byte[] junk = new byte[300];
            new java.util.Random(42).nextBytes(junk);
            raf.write(junk);
        }
        PartitionLog recovered = reopenUnclean(0);
        assertThat(values(recovered)).isEqualTo(expected(50));
        assertThat(active.length()).isEqualTo(recovered.segments().active().size());
    }

    @Test
    void badCrcInTheActiveSegmentCutsFromThatBatch() throws IOException {
        PartitionLog log = write(50);
        File active = activeLogFile(log);
        long activeBase = log.segmentBaseOffsets().get(log.numberOfSegments() - 1);
        log.close();
        try (RandomAccessFile raf = new RandomAccessFile(active, "rw")) {
            raf.seek(raf.length() - 3);
            raf.write(0x42 ^ raf.read());
        }
        PartitionLog recovered = reopenUnclean(0);
        assertThat(recovered.logEndOffset()).isEqualTo(49);
        assertThat(values(recovered)).isEqualTo(expected(49));
        assertThat(recovered.segmentBaseOffsets()).contains(activeBase);
    }

    @Test
    void corruptionInAnEarlierUnflushedSegmentRemovesTheSegmentsAfterIt() throws IOException {
        PartitionLog log = write(100);
        List<Long> bases = log.segmentBaseOffsets();
        assertThat(bases.size()).isGreaterThan(3);
        long corruptBase = bases.get(1);
        log.close();
        File victim = LogFileNames.logFile(dir, corruptBase);
        try (RandomAccessFile raf = new RandomAccessFile(victim, "rw")) {
            raf.seek(raf.length() - 2);
            raf.write(0x11 ^ raf.read());
        }
        PartitionLog recovered = reopenUnclean(0);
        long end = recovered.logEndOffset();
        assertThat(end).isLessThan(bases.get(2));
        assertThat(values(recovered)).isEqualTo(expected((int) end));
        assertThat(recovered.segmentBaseOffsets()).containsExactlyElementsOf(bases.subList(0, 2));
    }

    @Test
    void flushedDataBelowTheRecoveryPointSurvivesTailDamage() throws IOException {
        PartitionLog log = write(30);
        log.flush();
        long flushedEnd = log.recoveryPoint();
        File active = activeLogFile(log);
        long flushedSize = active.length();
        for (int i = 30; i < 40; i++) {
            log.appendAsLeader(TestRecords.batch(T0, "v" + i), 1);
        }
        log.close();
        // Lose the un-fsynced tail of the active segment (a power failure).
        try (RandomAccessFile raf = new RandomAccessFile(activeLogFile(log), "rw")) {
            if (activeLogFile(log).equals(active)) {
                raf.setLength(flushedSize + 17);
            } else {
                raf.setLength(3);
            }
        }
        PartitionLog recovered = reopenUnclean(flushedEnd);
        assertThat(recovered.logEndOffset()).isGreaterThanOrEqualTo(flushedEnd);
        assertThat(values(recovered)).isEqualTo(expected((int) recovered.logEndOffset()));
    }

    @Test
    void missingAndCorruptIndexesAreRebuilt() throws IOException {
        PartitionLog log = write(100);
        List<Long> bases = log.segmentBaseOffsets();
        log.close();
        Files.delete(LogFileNames.offsetIndexFile(dir, bases.get(0)).toPath());
        Files.write(LogFileNames.timeIndexFile(dir, bases.get(1)).toPath(), new byte[]{1, 2, 3, 4, 5});
        try (RandomAccessFile raf = new RandomAccessFile(LogFileNames.offsetIndexFile(dir, bases.get(2)), "rw")) {
            raf.setLength(raf.length() + 64); // zeros after the real entries, as after a crash
        }
        PartitionLog recovered = PartitionLog.open(dir, TP, config, time, scheduler, 0, 100, 0, false);
        opened.add(recovered);
        assertThat(values(recovered)).isEqualTo(expected(100));
        for (long base : bases) {
            LogSegment s = recovered.segments().floor(base);
            s.offsetIndex().fullCheck();
            s.timeIndex().fullCheck();
            assertThat(recovered.read(base + 3, 10, 100, true).records().batches().iterator().next().baseOffset()).isEqualTo(base + 3);
        }
        assertThat(recovered.offsetForTimestamp(T0 + 57, 100).map(t -> t.offset)).contains(57L);
    }

    @Test
    void corruptLeaderEpochCheckpointIsRebuiltFromTheBatches() throws IOException {
        PartitionLog log = write(60);
        log.close();
        Files.writeString(new File(dir, LogFileNames.LEADER_EPOCH_CHECKPOINT).toPath(), "0\n7\ngarbage\n");
        PartitionLog recovered = reopenUnclean(60);
        assertThat(recovered.epochCache().entries())
                .containsExactly(new EpochEntry(0, 0), new EpochEntry(1, 20), new EpochEntry(2, 40));
    }

    @Test
    void strayFilesAreIgnoredOrRemoved() throws IOException {
        PartitionLog log = write(10);
        log.close();
        Files.writeString(new File(dir, "not-a-segment.log").toPath(), "hello");
        Files.write(new File(dir, "00000000000000000999.index").toPath(), new byte[16]);
        Files.write(new File(dir, "00000000000000000000.log.deleted").toPath(), new byte[16]);
        PartitionLog recovered = reopenUnclean(0);
        assertThat(values(recovered)).isEqualTo(expected(10));
        assertThat(new File(dir, "00000000000000000999.index")).doesNotExist();
        assertThat(new File(dir, "00000000000000000000.log.deleted")).doesNotExist();
    }

    @Test
    void aWhollyGarbageSegmentFileDoesNotCrashTheLoad() throws IOException {
        dir = new File(tmp, "t-0");
        Files.createDirectories(dir.toPath());
        byte[] junk = new byte[10_000];
        new java.util.Random(7).nextBytes(junk);
        Files.write(LogFileNames.logFile(dir, 0).toPath(), junk);
        PartitionLog recovered = reopenUnclean(0);
        assertThat(recovered.logEndOffset()).isZero();
        recovered.appendAsLeader(TestRecords.batch(T0, "fresh"), 0);
        assertThat(values(recovered)).containsExactly("fresh");
    }
}
