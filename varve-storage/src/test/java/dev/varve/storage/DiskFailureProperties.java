package dev.varve.storage;

import dev.varve.storage.LogPropertySupport.QuietLogs;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.ShrinkingMode;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;
import net.jqwik.api.statistics.Statistics;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.KafkaStorageException;
import org.apache.kafka.common.record.internal.MemoryRecords;

import java.io.File;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every disk mutation failing, one at a time, the ways real disks fail: a random history of appends,
 * rolls, follower truncations, flushes, DeleteRecords and restarts runs over a fault-injecting layer
 * ({@link DiskFaults}) that fails a chosen operation (a segment write — before it starts or with EIO
 * part-way —, an ftruncate, an fsync of a segment, index, checkpoint or directory, a file creation
 * such as a checkpoint's {@code .tmp} when inodes run out, a rename) with ENOSPC or EIO. After every
 * step, checked against a model of what was acknowledged:
 * <ul>
 *   <li>every failure reaches the log directory's failure channel ({@link PartitionLog#onStorageFailure})
 *       and surfaces as {@link KafkaStorageException} (KAFKA_STORAGE_ERROR), never as anything else;</li>
 *   <li>a log that stays online reads back exactly the model: a failed append appended nothing (no
 *       orphan bytes, no reused offsets), a failed checkpoint or fsync changed nothing in memory; the
 *       recovery point and high watermark never exceed the log end;</li>
 *   <li>a log the failure took offline refuses reads and writes, and once reopened from disk (after an
 *       unclean shutdown) holds a prefix of what it held before the failed step, no shorter than what
 *       that step would have left;</li>
 *   <li>after every reopen, segments are contiguous (each ends where the next begins) and the log is
 *       the model.</li>
 * </ul>
 * Seeds are new on every run (jqwik prints the failing one).
 */
class DiskFailureProperties {
    private static final TopicPartition TP = new TopicPartition("faults", 0);
    private static QuietLogs quiet;

    @BeforeContainer
    static void quietLogs() {
        quiet = new QuietLogs();
    }

    @AfterContainer
    static void cleanUp() {
        quiet.close();
        LogPropertySupport.deleteTempRoot();
    }

    /**
     * Fails the n-th disk operation (of one kind, or of any kind) from now; once, or, when
     * {@code sticky}, every operation after it too until the step ends (a disk that died or stays
     * full: the undo of a failed write fails as well).
     */
    static final class OneFault implements DiskFaults.Injector {
        final DiskFaults.Op kind; // null: any operation
        final boolean partialWrite;
        final boolean sticky;
        final Random random;
        int countdown;
        DiskFaults.Op fired;

        OneFault(DiskFaults.Op kind, int countdown, boolean partialWrite, boolean sticky, Random random) {
            this.kind = kind;
            this.countdown = countdown;
            this.partialWrite = partialWrite;
            this.sticky = sticky;
            this.random = random;
        }

        @Override
        public void before(DiskFaults.Op op, Path file) throws IOException {
            if (fired != null && sticky) {
                throw new IOException("Input/output error (the disk stays failed)");
            }
            if (fired != null || (kind != null && op != kind) || (partialWrite && op == DiskFaults.Op.SEGMENT_WRITE)) {
                return;
            }
            if (countdown-- == 0) {
                fired = op;
                throw new IOException(random.nextBoolean() ? "No space left on device" : "Input/output error");
            }
        }

        @Override
        public int failAfter(Path file, int bytes) {
            if (fired != null || !partialWrite || countdown-- != 0) {
                return -1;
            }
            fired = DiskFaults.Op.SEGMENT_WRITE;
            return random.nextInt(bytes);
        }
    }

    @Property(tries = 150, shrinking = ShrinkingMode.OFF)
    void everyDiskFailureIsReportedAndLeavesTheLogConsistent(@ForAll long seed) throws Exception {
        Random random = new Random(seed);
        File dir = LogPropertySupport.newTempDir("faults").resolve(TP.topic() + "-" + TP.partition()).toFile();
        MockTime time = new MockTime(LogPropertySupport.T0);
        ManualScheduler scheduler = new ManualScheduler(time);
        LogConfig config = LogConfig.fromMap(Map.of(
                TopicConfig.SEGMENT_BYTES_CONFIG, 600 + random.nextInt(1500),
                TopicConfig.SEGMENT_INDEX_BYTES_CONFIG, 1024,
                TopicConfig.INDEX_INTERVAL_BYTES_CONFIG, 64,
                TopicConfig.FILE_DELETE_DELAY_MS_CONFIG, 0L));
        List<String> model = new ArrayList<>(); // value of each offset from 0; below logStart nothing is read
        AtomicInteger reported = new AtomicInteger();
        AtomicInteger lowered = new AtomicInteger();
        PartitionLog log = open(dir, config, time, scheduler, reported, lowered, 0, 0, 0, true);
        int epoch = 0;
        int value = 0;
        List<String> history = new ArrayList<>();
        try {
        for (int step = 0; step < 60; step++) {
            OneFault fault = null;
            if (random.nextInt(3) == 0) {
                DiskFaults.Op[] ops = DiskFaults.Op.values();
                DiskFaults.Op kind = random.nextInt(4) == 0 ? null : ops[random.nextInt(ops.length)];
                boolean partial = kind == DiskFaults.Op.SEGMENT_WRITE && random.nextBoolean();
                fault = new OneFault(kind, random.nextInt(3), partial, random.nextInt(3) == 0, random);
            }
            List<String> before = List.copyOf(model);
            long minimumAfter = model.size(); // the shortest log the step may leave if it fails part-way
            long recoveryBound = Long.MAX_VALUE; // what the recovery point may be at most if the step fails
            int reportsBefore = reported.get();
            KafkaStorageException failure = null;
            int action = random.nextInt(100);
            try (DiskFaults.Installed ignored = fault == null ? DiskFaults.install(DiskFaults.NONE) : DiskFaults.install(fault)) {
                if (action < 50) {
                    if (random.nextInt(8) == 0) {
                        epoch++;
                    }
                    int n = 1 + random.nextInt(3);
                    String[] values = new String[n];
                    for (int i = 0; i < n; i++) {
                        values[i] = "v" + (value++) + "-" + "x".repeat(random.nextInt(60));
                    }
                    minimumAfter = model.size();
                    MemoryRecords records = TestRecords.batch(time.milliseconds(), values);
                    log.appendAsLeader(records, epoch);
                    model.addAll(List.of(values));
                    log.updateHighWatermark(log.logEndOffset());
                } else if (action < 65) {
                    long start = log.logStartOffset();
                    long to = start + random.nextInt((int) (model.size() - start) + 1);
                    minimumAfter = Math.max(start, batchBaseOf(log, to));
                    recoveryBound = to; // clamped before anything can fail
                    log.truncateTo(to);
                    truncateModel(model, log.logEndOffset());
                } else if (action < 78) {
                    minimumAfter = model.size();
                    log.flush();
                } else if (action < 85) {
                    minimumAfter = model.size();
                    log.roll();
                } else if (action < 92) {
                    long to = log.logStartOffset() + random.nextInt((int) (log.highWatermark() - log.logStartOffset()) + 1);
                    minimumAfter = model.size();
                    log.deleteRecordsBefore(to);
                } else {
                    // a restart: clean (checkpoints as the log manager would write them) or unclean
                    minimumAfter = model.size();
                    boolean clean = random.nextBoolean();
                    long start = log.logStartOffset();
                    long recovery = log.recoveryPoint();
                    long hw = log.highWatermark();
                    if (clean) {
                        log.flush();
                        try {
                            log.close();
                        } catch (IOException e) {
                            clean = false; // no clean-shutdown marker: the next start recovers
                        }
                    }
                    DiskFaults.install(DiskFaults.NONE);
                    log = open(dir, config, time, scheduler, reported, lowered, start, clean ? log.logEndOffset() : recovery,
                            hw, clean);
                    assertMatches(log, model);
                }
            } catch (KafkaStorageException e) {
                failure = e;
            }
            scheduler.runDue();
            if (failure != null) {
                Statistics.label("failed step").collect(fault.fired + (fault.sticky ? " sticky" : "") + (log.isOffline() ? " offline" : ""));
                assertThat(fault).as("a failure without an injected fault: %s", failure).isNotNull();
                assertThat(fault.fired).as("failure %s", failure).isNotNull();
                assertThat(reported.get()).as("the failure reached the failure channel: %s", failure).isGreaterThan(reportsBefore);
            }
            if (log.isOffline()) {
                long lengthBefore = before.size();
                assertThat(failure).isNotNull();
                assertRefusesEverything(log);
                long start = log.logStartOffset();
                long hw = log.highWatermark();
                long recovery = log.recoveryPoint();
                assertThat(recovery).isLessThanOrEqualTo(lengthBefore).isLessThanOrEqualTo(recoveryBound);
                try {
                    log.close();
                } catch (IOException ignored) {
                    // the process dies with the failed log; closing only releases its files here
                }
                log = open(dir, config, time, scheduler, reported, lowered, start, recovery, hw, false);
                long recovered = log.logEndOffset();
                assertThat(recovered).as("recovered log end after the failed step").isBetween(minimumAfter, lengthBefore);
                model = new ArrayList<>(before.subList(0, (int) recovered));
                assertMatches(log, model);
            } else {
                assertMatches(log, model);
            }
            assertThat(log.recoveryPoint()).isLessThanOrEqualTo(log.logEndOffset());
            assertThat(log.highWatermark()).isLessThanOrEqualTo(log.logEndOffset());
            history.add("step " + step + " action " + action + (fault == null ? "" : " fault " + fault.kind + "/" + fault.fired
                    + (fault.partialWrite ? " partial" : "") + (fault.sticky ? " sticky" : "")) + (failure == null ? "" : " FAILED " + failure.getMessage())
                    + " -> " + log + " rp=" + log.recoveryPoint() + " segs=" + log.segmentBaseOffsets());
        }
        } catch (AssertionError | RuntimeException e) {
            throw new AssertionError(String.join("\n", history), e);
        }
        log.close();
    }

    private static PartitionLog open(File dir, LogConfig config, MockTime time, ManualScheduler scheduler, AtomicInteger reported,
                                     AtomicInteger lowered, long start, long recovery, long hw, boolean clean) throws IOException {
        PartitionLog log = PartitionLog.open(dir, TP, config, time, scheduler, start, recovery, hw, clean, true);
        log.onStorageFailure(e -> reported.incrementAndGet());
        log.onRecoveryPointLowered(lowered::incrementAndGet);
        assertContiguous(log);
        return log;
    }

    /** The base offset of the batch holding {@code offset} (what a truncation to it keeps), or the log end. */
    private static long batchBaseOf(PartitionLog log, long offset) {
        if (offset >= log.logEndOffset()) {
            return log.logEndOffset();
        }
        LogSlice slice = log.read(offset, 1, log.logEndOffset(), true);
        return slice.records().batches().iterator().next().baseOffset();
    }

    private static void truncateModel(List<String> model, long end) {
        while (model.size() > end) {
            model.remove(model.size() - 1);
        }
    }

    private static void assertMatches(PartitionLog log, List<String> model) {
        assertThat(log.logEndOffset()).as("log end").isEqualTo(model.size());
        List<TestRecords.Rec> read = new ArrayList<>();
        long offset = log.logStartOffset();
        while (offset < log.logEndOffset()) {
            LogSlice slice = log.read(offset, 4096, log.logEndOffset(), true);
            List<TestRecords.Rec> part = TestRecords.read(slice.records());
            assertThat(part).isNotEmpty();
            read.addAll(part);
            offset = part.get(part.size() - 1).offset() + 1;
        }
        long expectOffset = -1;
        for (TestRecords.Rec r : read) {
            if (r.offset() < log.logStartOffset()) {
                continue; // a batch that straddles the log start
            }
            assertThat(r.offset()).as("offsets are contiguous, never reused").isEqualTo(expectOffset < 0 ? r.offset() : expectOffset);
            assertThat(r.value()).as("value at %d", r.offset()).isEqualTo(model.get((int) r.offset()));
            expectOffset = r.offset() + 1;
        }
        if (expectOffset >= 0) {
            assertThat(expectOffset).isEqualTo(model.size());
        }
    }

    /**
     * Each segment ends exactly where the next begins (no hole, no overlap), from the log start on
     * (segments wholly below it, such as the leftover of a deletion whose rename failed, are never
     * read again and go with the next retention pass).
     */
    private static void assertContiguous(PartitionLog log) {
        List<LogSegment> all = new ArrayList<>(log.segments().all());
        for (int i = 0; i + 1 < all.size(); i++) {
            if (all.get(i + 1).baseOffset() <= log.logStartOffset()) {
                continue;
            }
            assertThat(all.get(i).readNextOffset()).as("end of %s", all.get(i)).isEqualTo(all.get(i + 1).baseOffset());
        }
    }

    private static void assertRefusesEverything(PartitionLog log) {
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> log.appendAsLeader(TestRecords.batch(0, "after"), 0))
                .isInstanceOf(KafkaStorageException.class);
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> log.read(log.logStartOffset(), 100, Long.MAX_VALUE, true))
                .isInstanceOf(KafkaStorageException.class);
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> log.truncateTo(0)).isInstanceOf(KafkaStorageException.class);
    }
}
