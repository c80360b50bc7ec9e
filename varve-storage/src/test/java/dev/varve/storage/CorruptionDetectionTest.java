package dev.varve.storage;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.record.internal.FileLogInputStream.FileChannelRecordBatch;
import org.apache.kafka.common.record.internal.FileRecords;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Corruption at rest, below the recovery point: bytes flipped in the middle of flushed segments, a
 * flushed segment cut mid-batch, garbage or wrong index and time-index entries, corrupt checkpoint
 * files. Each case states exactly what the load keeps: the valid prefix up to the first damaged batch,
 * nothing after it, nothing corrupt ever read, and data that is intact is never lost to a bad index
 * or checkpoint.
 */
class CorruptionDetectionTest {
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

    /** {@code n} single-record batches "v0".., flushed and closed cleanly. */
    private List<Long> writeFlushedAndClose(int n) throws IOException {
        dir = new File(tmp, "t-0");
        PartitionLog log = PartitionLog.open(dir, TP, config, time, scheduler);
        for (int i = 0; i < n; i++) {
            log.appendAsLeader(TestRecords.batch(T0 + i, "v" + i), i / 20);
        }
        log.flush();
        assertThat(log.recoveryPoint()).isEqualTo(n);
        List<Long> bases = log.segmentBaseOffsets();
        log.close();
        return bases;
    }

    private PartitionLog reopen(boolean clean, long recoveryPoint, boolean verifyAll) throws IOException {
        PartitionLog log = PartitionLog.open(dir, TP, config, time, scheduler, 0, recoveryPoint, 0, clean, verifyAll);
        opened.add(log);
        return log;
    }

    /** Reads the whole log batch by batch, checking every batch's CRC and offsets. */
    private static List<String> values(PartitionLog log) {
        List<String> out = new ArrayList<>();
        long next = log.logStartOffset();
        while (next < log.logEndOffset()) {
            LogSlice slice = log.read(next, 4096, log.logEndOffset(), true);
            for (RecordBatch b : slice.records().batches()) {
                assertThat(b.isValid()).as("batch %d-%d is valid", b.baseOffset(), b.lastOffset()).isTrue();
            }
            for (TestRecords.Rec r : TestRecords.read(slice.records())) {
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

    private record BatchAt(long baseOffset, int position, int size) {
    }

    private static List<BatchAt> batchesOf(File logFile) throws IOException {
        List<BatchAt> out = new ArrayList<>();
        try (FileRecords records = FileRecords.open(logFile)) {
            for (FileChannelRecordBatch b : records.batches()) {
                out.add(new BatchAt(b.baseOffset(), b.position(), b.sizeInBytes()));
            }
        }
        return out;
    }

    private static void xorByte(File file, long position, int mask) throws IOException {
        try (RandomAccessFile raf = new RandomAccessFile(file, "rw")) {
            raf.seek(position);
            int b = raf.read();
            raf.seek(position);
            raf.write(b ^ mask);
        }
    }

    @Test
    void aFlippedByteInTheMiddleOfAFlushedSegmentCutsFromThatBatchAfterACleanShutdown() throws IOException {
        List<Long> bases = writeFlushedAndClose(100);
        assertThat(bases.size()).isGreaterThan(3);
        File victim = LogFileNames.logFile(dir, bases.get(1));
        List<BatchAt> batches = batchesOf(victim);
        BatchAt middle = batches.get(batches.size() / 2);
        xorByte(victim, middle.position() + middle.size() - 3, 0x5a); // inside a record's value

        PartitionLog log = reopen(true, 100, true);
        assertThat(log.damagedAtLoad()).isTrue();
        assertThat(log.logEndOffset()).isEqualTo(middle.baseOffset());
        assertThat(values(log)).isEqualTo(expected((int) middle.baseOffset()));
        assertThat(log.segmentBaseOffsets()).containsExactlyElementsOf(bases.subList(0, 2));
        assertThat(victim.length()).isEqualTo(middle.position());
        for (long later : bases.subList(2, bases.size())) {
            assertThat(LogFileNames.logFile(dir, later)).doesNotExist();
        }
        assertThat(log.recoveryPoint()).isEqualTo(middle.baseOffset());
        // The replica then fetches the rest again: appends continue at the cut.
        assertThat(log.appendAsLeader(TestRecords.batch(T0, "again"), 9).firstOffset()).isEqualTo(middle.baseOffset());
    }

    @Test
    void corruptionBelowTheRecoveryPointIsFoundAfterAnUncleanShutdown() throws IOException {
        List<Long> bases = writeFlushedAndClose(100);
        File victim = LogFileNames.logFile(dir, bases.get(0));
        List<BatchAt> batches = batchesOf(victim);
        BatchAt third = batches.get(2);
        xorByte(victim, third.position() + 17, 0x01); // the stored CRC itself

        PartitionLog log = reopen(false, 100, true);
        assertThat(log.damagedAtLoad()).isTrue();
        assertThat(log.logEndOffset()).isEqualTo(third.baseOffset());
        assertThat(values(log)).isEqualTo(expected((int) third.baseOffset()));
        assertThat(log.segmentBaseOffsets()).containsExactly(bases.get(0));
    }

    @Test
    void withoutFullVerificationACleanShutdownTrustsFlushedSegments() throws IOException {
        // log.startup.verify=unflushed (Kafka's behaviour): documents what the default buys.
        List<Long> bases = writeFlushedAndClose(100);
        File victim = LogFileNames.logFile(dir, bases.get(1));
        BatchAt middle = batchesOf(victim).get(3);
        xorByte(victim, middle.position() + middle.size() - 3, 0x5a);

        PartitionLog log = reopen(true, 100, false);
        assertThat(log.damagedAtLoad()).isFalse();
        assertThat(log.logEndOffset()).isEqualTo(100);
    }

    @Test
    void aFlushedSegmentCutMidBatchKeepsItsWholeBatchesAndDropsTheSegmentsAfterIt() throws IOException {
        List<Long> bases = writeFlushedAndClose(100);
        File victim = LogFileNames.logFile(dir, bases.get(1));
        List<BatchAt> batches = batchesOf(victim);
        BatchAt torn = batches.get(4);
        try (RandomAccessFile raf = new RandomAccessFile(victim, "rw")) {
            raf.setLength(torn.position() + torn.size() / 2);
        }

        PartitionLog log = reopen(true, 100, true);
        assertThat(log.damagedAtLoad()).isTrue();
        assertThat(log.logEndOffset()).isEqualTo(torn.baseOffset());
        assertThat(values(log)).isEqualTo(expected((int) torn.baseOffset()));
        assertThat(log.segmentBaseOffsets()).containsExactlyElementsOf(bases.subList(0, 2));
    }

    @Test
    void aFlushedSegmentCutAtABatchBoundaryLeavesNoHole() throws IOException {
        List<Long> bases = writeFlushedAndClose(100);
        File victim = LogFileNames.logFile(dir, bases.get(1));
        BatchAt cutAt = batchesOf(victim).get(2);
        try (RandomAccessFile raf = new RandomAccessFile(victim, "rw")) {
            raf.setLength(cutAt.position());
        }
        PartitionLog log = reopen(true, 100, true);
        assertThat(log.damagedAtLoad()).isTrue();
        assertThat(log.logEndOffset()).isEqualTo(cutAt.baseOffset());
        assertThat(values(log)).isEqualTo(expected((int) cutAt.baseOffset()));
    }

    @Test
    void garbageIndexesOfFlushedSegmentsAreRebuiltExactlyAndLoseNothing() throws IOException {
        List<Long> bases = writeFlushedAndClose(100);
        long base = bases.get(1);
        File index = LogFileNames.offsetIndexFile(dir, base);
        File timeIndex = LogFileNames.timeIndexFile(dir, base);
        byte[] indexBefore = Files.readAllBytes(index.toPath());
        byte[] timeIndexBefore = Files.readAllBytes(timeIndex.toPath());
        assertThat(indexBefore.length).isGreaterThan(16);
        byte[] junk = new byte[indexBefore.length];
        new Random(3).nextBytes(junk);
        Files.write(index.toPath(), junk);
        byte[] timeJunk = new byte[timeIndexBefore.length];
        new Random(4).nextBytes(timeJunk);
        Files.write(timeIndex.toPath(), timeJunk);

        PartitionLog log = reopen(true, 100, true);
        assertThat(log.damagedAtLoad()).isFalse();
        assertThat(values(log)).isEqualTo(expected(100));
        assertThat(log.segmentBaseOffsets()).containsExactlyElementsOf(bases);
        assertThat(Files.readAllBytes(index.toPath())).isEqualTo(indexBefore);
        assertThat(Files.readAllBytes(timeIndex.toPath())).isEqualTo(timeIndexBefore);
        for (int i = 0; i < 100; i += 7) {
            assertThat(log.offsetForTimestamp(T0 + i, 100).map(t -> t.offset)).contains((long) i);
        }
    }

    @Test
    void plausibleButWrongIndexEntriesAreFound() throws IOException {
        // Entries still in order (so the old sanity check passes) but pointing at the wrong batches.
        List<Long> bases = writeFlushedAndClose(100);
        long base = bases.get(1);
        File index = LogFileNames.offsetIndexFile(dir, base);
        File timeIndex = LogFileNames.timeIndexFile(dir, base);
        byte[] indexBefore = Files.readAllBytes(index.toPath());
        byte[] timeIndexBefore = Files.readAllBytes(timeIndex.toPath());
        ByteBuffer entries = ByteBuffer.wrap(Files.readAllBytes(index.toPath()));
        entries.putInt(4, entries.getInt(4) + 1); // first entry's position: one byte into a batch
        Files.write(index.toPath(), entries.array());
        ByteBuffer times = ByteBuffer.wrap(Files.readAllBytes(timeIndex.toPath()));
        times.putLong(0, times.getLong(0) - 1); // first entry's timestamp: still ordered, but wrong
        Files.write(timeIndex.toPath(), times.array());

        PartitionLog log = reopen(true, 100, true);
        assertThat(Files.readAllBytes(index.toPath())).isEqualTo(indexBefore);
        assertThat(Files.readAllBytes(timeIndex.toPath())).isEqualTo(timeIndexBefore);
        assertThat(values(log)).isEqualTo(expected(100));
    }

    @Test
    void missingOrEmptiedIndexesAreRebuilt() throws IOException {
        List<Long> bases = writeFlushedAndClose(100);
        byte[] indexBefore = Files.readAllBytes(LogFileNames.offsetIndexFile(dir, bases.get(0)).toPath());
        Files.delete(LogFileNames.offsetIndexFile(dir, bases.get(0)).toPath());
        Files.write(LogFileNames.timeIndexFile(dir, bases.get(2)).toPath(), new byte[0]);
        PartitionLog log = reopen(true, 100, true);
        assertThat(Files.readAllBytes(LogFileNames.offsetIndexFile(dir, bases.get(0)).toPath())).isEqualTo(indexBefore);
        assertThat(values(log)).isEqualTo(expected(100));
        long firstOfThird = bases.get(2);
        assertThat(log.offsetForTimestamp(T0 + firstOfThird + 1, 100).map(t -> t.offset)).contains(firstOfThird + 1);
    }

    @Test
    void corruptCheckpointFilesNeverCrashTheLoadOrLoseValidData() throws IOException {
        File data = new File(tmp, "data");
        LogManager m = new LogManager(LogManagerConfig.defaults(List.of(data)), topic -> config, time, scheduler);
        m.startup();
        PartitionLog log = m.getOrCreateLog(TP);
        for (int i = 0; i < 100; i++) {
            log.appendAsLeader(TestRecords.batch(T0 + i, "v" + i), i / 20);
        }
        log.updateHighWatermark(100);
        m.close();
        File partition = new File(data, "t-0");
        Files.writeString(new File(data, LogFileNames.RECOVERY_POINT_CHECKPOINT).toPath(), "0\n1\nt 0 notanumber\n");
        Files.write(new File(data, LogFileNames.LOG_START_OFFSET_CHECKPOINT).toPath(), new byte[]{(byte) 0xff, 0, 1});
        Files.writeString(new File(data, LogFileNames.HIGH_WATERMARK_CHECKPOINT).toPath(), "0\n5\nt 0 100\n");
        Files.writeString(new File(partition, LogFileNames.LEADER_EPOCH_CHECKPOINT).toPath(), "0\n2\n0 0\n");
        File[] snapshots = partition.listFiles((d, name) -> name.endsWith(".snapshot"));
        assertThat(snapshots).isNotEmpty();
        for (File s : snapshots) {
            Files.write(s.toPath(), new byte[]{1, 2, 3, 4, 5, 6, 7, 8, 9});
        }

        LogManager again = new LogManager(LogManagerConfig.defaults(List.of(data)), topic -> config, time, scheduler);
        again.startup();
        try {
            assertThat(again.offlinePartitions()).isEmpty();
            assertThat(again.damagedAtLoad()).isEmpty();
            PartitionLog reloaded = again.getLog(TP).orElseThrow();
            assertThat(values(reloaded)).isEqualTo(expected(100));
            assertThat(reloaded.logStartOffset()).isZero();
            assertThat(reloaded.epochCache().entries()).containsExactly(new EpochEntry(0, 0), new EpochEntry(1, 20),
                    new EpochEntry(2, 40), new EpochEntry(3, 60), new EpochEntry(4, 80));
            assertThat(reloaded.appendAsLeader(TestRecords.batch(T0, "v100"), 5).firstOffset()).isEqualTo(100);
        } finally {
            again.close();
        }
    }

    @Test
    void theLogManagerReportsPartitionsThatLostFlushedData() throws IOException {
        File data = new File(tmp, "data");
        LogManager m = new LogManager(LogManagerConfig.defaults(List.of(data)), topic -> config, time, scheduler);
        m.startup();
        TopicPartition other = new TopicPartition("t", 1);
        for (TopicPartition tp : List.of(TP, other)) {
            PartitionLog log = m.getOrCreateLog(tp);
            for (int i = 0; i < 60; i++) {
                log.appendAsLeader(TestRecords.batch(T0 + i, "v" + i), 0);
            }
        }
        m.close();
        File victim = LogFileNames.logFile(new File(data, "t-0"), 0);
        BatchAt b = batchesOf(victim).get(5);
        xorByte(victim, b.position() + b.size() - 1, 0x80);

        LogManager again = new LogManager(LogManagerConfig.defaults(List.of(data)), topic -> config, time, scheduler);
        again.startup();
        try {
            assertThat(again.damagedAtLoad()).containsExactly(TP);
            assertThat(again.getLog(TP).orElseThrow().logEndOffset()).isEqualTo(b.baseOffset());
            assertThat(again.getLog(other).orElseThrow().logEndOffset()).isEqualTo(60);
        } finally {
            again.close();
        }
    }
}
