package dev.varve.storage;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.KafkaStorageException;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Moving a replica between log directories ({@link ReplicaMove} through {@link LogManager#alterLogDir}):
 * the copy follows a replica that keeps taking appends, the swap keeps the same {@link PartitionLog},
 * a crash before any step of the swap leaves exactly one replica holding every record, and a failing
 * destination ends the move with the replica where it was.
 */
class ReplicaMoveTest {
    private static final long T0 = 1_700_000_000_000L;
    private static final TopicPartition TP = new TopicPartition("orders", 0);

    /** A crash of the process at a swap step (an Error, so nothing in the storage engine handles it). */
    static final class SimulatedCrash extends Error {
        SimulatedCrash(String step) {
            super("simulated crash before " + step);
        }
    }

    @TempDir
    File tmp;
    private final MockTime time = new MockTime(T0);
    private ManualScheduler scheduler = new ManualScheduler(time);
    private final LogConfig config = LogConfig.fromMap(Map.of(TopicConfig.SEGMENT_BYTES_CONFIG, 2048,
            TopicConfig.FILE_DELETE_DELAY_MS_CONFIG, 1000L));
    private File a;
    private File b;

    @AfterEach
    void removeFaults() {
        DiskFaults.install(DiskFaults.NONE).close();
    }

    private LogManager manager(ReplicaMove.Hook hook) throws IOException {
        a = new File(tmp, "a");
        b = new File(tmp, "b");
        LogManager m = new LogManager(LogManagerConfig.defaults(List.of(a, b)), topic -> config, time, scheduler,
                SegmentSwap.Hook.NONE, hook);
        m.startup();
        return m;
    }

    /** Appends {@code n} batches of two records in {@code epoch}; committed at once (a single node). */
    private static void fill(PartitionLog log, int n, int epoch) {
        for (int i = 0; i < n; i++) {
            long next = log.logEndOffset();
            log.appendAsLeader(TestRecords.batch(T0 + next, "v" + next, "w" + next), epoch);
            log.maybeIncrementHighWatermark(log.logEndOffset());
        }
    }

    /** Every record from the log start to the log end, as "offset:value". */
    static List<String> contents(PartitionLog log) {
        List<String> out = new ArrayList<>();
        long start = log.logStartOffset();
        long next = start;
        while (next < log.logEndOffset()) {
            LogSlice slice = log.read(next, 64 * 1024, log.logEndOffset(), true);
            if (slice.isEmpty()) {
                break;
            }
            for (RecordBatch batch : slice.records().batches()) {
                for (Record r : batch) {
                    if (r.offset() >= start && r.offset() >= next && !batch.isControlBatch()) {
                        out.add(r.offset() + ":" + (r.value() == null ? "null" : StandardCharsets.UTF_8.decode(r.value())));
                    }
                }
                next = batch.lastOffset() + 1;
            }
        }
        return out;
    }

    private static String[] children(File dir) {
        String[] names = dir.list();
        return names == null ? new String[0] : names;
    }

    @Test
    void aReplicaMovesWhileItKeepsTakingAppendsAndComesBackFromItsNewDirectory() throws IOException {
        LogManager m = manager(ReplicaMove.Hook.NONE);
        PartitionLog log = m.getOrCreateLog(TP);
        assertThat(log.dir().getParentFile()).isEqualTo(a);
        fill(log, 60, 0);
        fill(log, 40, 3);
        // an idempotent producer and an aborted transaction: state the move must carry along
        log.appendAsLeader(TestRecords.idempotent(7, (short) 0, 0, 2, T0), 3);
        log.appendAsLeader(TestRecords.transactional(9, (short) 0, 0, 2, T0), 3);
        log.appendMarkerAsLeader(9, (short) 0, 0, false, 3);
        log.maybeIncrementHighWatermark(log.logEndOffset());
        int segmentsBefore = log.numberOfSegments();
        assertThat(segmentsBefore).isGreaterThan(3);

        assertThat(m.alterLogDir(TP, b)).isEqualTo(LogManager.AlterLogDirResult.MOVING);
        assertThat(m.alterLogDir(TP, b)).isEqualTo(LogManager.AlterLogDirResult.ALREADY_THERE);
        m.stepMoves(3000);
        List<LogManager.FutureReplica> future = m.futureReplicas();
        assertThat(future).hasSize(1);
        assertThat(future.get(0).logDir()).isEqualTo(b);
        assertThat(future.get(0).offsetLag()).isPositive();
        assertThat(future.get(0).sizeInBytes()).isPositive();
        assertThat(Arrays.stream(children(b)).filter(n -> n.startsWith("orders-0.") && n.endsWith("-future"))).hasSize(1);
        // appends keep landing in the old directory while the copy catches up
        for (int i = 0; i < 30 && m.movingTo(TP).isPresent(); i++) {
            fill(log, 3, 4);
            m.stepMoves(2000);
        }
        while (m.movingTo(TP).isPresent()) {
            m.stepMoves(100_000);
        }
        List<String> expected = contents(log);
        assertThat(expected).hasSizeGreaterThan(200);

        assertThat(m.getLog(TP)).containsSame(log); // the same object: every holder keeps working
        assertThat(log.dir()).isEqualTo(new File(b, "orders-0"));
        assertThat(m.futureReplicas()).isEmpty();
        assertThat(new File(a, "orders-0")).doesNotExist();
        assertThat(Arrays.stream(children(a)).filter(n -> n.endsWith("-delete"))).hasSize(1);
        assertThat(new File(log.dir(), LogFileNames.MOVE_COMMITTED_MARKER)).doesNotExist();
        assertThat(Files.readAllLines(new File(b, LogFileNames.LOG_START_OFFSET_CHECKPOINT).toPath())).contains("orders 0 0");
        // it keeps working in its new place: appends, rolls, idempotent duplicates, aborted transactions
        LogAppendInfo dup = log.appendAsLeader(TestRecords.idempotent(7, (short) 0, 0, 2, T0), 4);
        assertThat(dup.duplicate()).isTrue();
        fill(log, 30, 5);
        log.flush();
        assertThat(log.abortedTransactions(0, log.logEndOffset())).hasSize(1);
        List<EpochEntry> epochs = log.epochCache().entries();
        assertThat(epochs.stream().map(EpochEntry::epoch)).containsExactly(0, 3, 4, 5);
        expected = contents(log);
        scheduler.tick(1000); // file.delete.delay.ms: the old files go
        assertThat(Arrays.stream(children(a)).filter(n -> n.startsWith("orders-0"))).isEmpty();
        assertThat(contents(log)).isEqualTo(expected);

        m.close();
        LogManager again = manager(ReplicaMove.Hook.NONE);
        PartitionLog reloaded = again.getLog(TP).orElseThrow();
        assertThat(reloaded.dir()).isEqualTo(new File(b, "orders-0"));
        assertThat(contents(reloaded)).isEqualTo(expected);
        assertThat(reloaded.epochCache().entries()).isEqualTo(epochs);
        assertThat(reloaded.abortedTransactions(0, reloaded.logEndOffset())).hasSize(1);
        assertThat(reloaded.appendAsLeader(TestRecords.idempotent(7, (short) 0, 0, 2, T0), 5).duplicate()).isTrue();
        again.close();
    }

    /**
     * A crash before each step of the swap, then a start on the same directories: the partition is
     * loaded once, from the old directory up to the commit and from the new one after it, with every
     * record it held; nothing of the move is left but a move started over.
     */
    @ParameterizedTest
    @EnumSource(ReplicaMove.SwapStep.class)
    void aCrashBeforeAnySwapStepLeavesExactlyOneReplicaWithEveryRecord(ReplicaMove.SwapStep crashAt) throws IOException {
        AtomicBoolean armed = new AtomicBoolean(true);
        LogManager m = manager(step -> {
            if (step == crashAt && armed.getAndSet(false)) {
                throw new SimulatedCrash(step.name());
            }
        });
        PartitionLog log = m.getOrCreateLog(TP);
        fill(log, 50, 1);
        m.deleteRecordsBefore(TP, 7); // a log start inside a segment must survive the move too
        m.alterLogDir(TP, b);
        m.stepMoves(1000);
        assertThat(m.movingTo(TP)).contains(b);
        fill(log, 10, 2); // appended while the copy is made
        List<String> acknowledged = contents(log);
        assertThatThrownBy(() -> {
            while (m.movingTo(TP).isPresent()) {
                m.stepMoves(100_000);
            }
        }).isInstanceOf(SimulatedCrash.class);

        // the process is gone: a new one starts on the same directories (no close, no clean-shutdown marker)
        scheduler = new ManualScheduler(time);
        LogManager again = manager(ReplicaMove.Hook.NONE);
        PartitionLog reloaded = again.getLog(TP).orElseThrow();
        boolean committed = crashAt.compareTo(ReplicaMove.SwapStep.COMMIT) > 0;
        File expectedDir = committed ? b : a;
        assertThat(reloaded.dir().getParentFile()).isEqualTo(expectedDir);
        assertThat(reloaded.logStartOffset()).isEqualTo(7);
        assertThat(contents(reloaded)).isEqualTo(acknowledged);
        File other = committed ? a : b;
        assertThat(new File(other, "orders-0")).doesNotExist();
        assertThat(new File(reloaded.dir(), LogFileNames.MOVE_COMMITTED_MARKER)).doesNotExist();
        assertThat(Arrays.stream(children(a)).filter(n -> n.endsWith("-future"))).isEmpty();
        if (committed) {
            assertThat(again.movingTo(TP)).isEmpty();
        } else {
            // the unfinished copy was deleted and the move begun again: it completes
            assertThat(again.movingTo(TP)).contains(b);
            while (again.movingTo(TP).isPresent()) {
                again.stepMoves(100_000);
            }
            assertThat(reloaded.dir()).isEqualTo(new File(b, "orders-0"));
            assertThat(contents(reloaded)).isEqualTo(acknowledged);
        }
        fill(reloaded, 5, 3);
        List<String> after = contents(reloaded);
        again.close();
        scheduler = new ManualScheduler(time);
        LogManager third = manager(ReplicaMove.Hook.NONE);
        assertThat(contents(third.getLog(TP).orElseThrow())).isEqualTo(after);
        assertThat(third.getLog(TP).orElseThrow().logStartOffset()).isEqualTo(7);
        third.close();
    }

    /**
     * A producer thread appends without pause while the broker's scheduler threads run the move at full
     * speed: every acknowledged record is in the moved log once and in order, and after a restart; no
     * append waited longer than the swap (printed).
     */
    @Test
    void appendsRacingTheMoverOnAnotherThreadAreAllKept() throws Exception {
        a = new File(tmp, "a");
        b = new File(tmp, "b");
        try (ExecutorScheduler threads = new ExecutorScheduler(2, "test-move")) {
            LogConfig megabyteSegments = config.with(TopicConfig.SEGMENT_BYTES_CONFIG, 1024 * 1024);
            LogManager m = new LogManager(LogManagerConfig.defaults(List.of(a, b)), topic -> megabyteSegments, time, threads);
            m.startup();
            PartitionLog log = m.getOrCreateLog(TP);
            fill(log, 2000, 0);
            List<String> acked = new java.util.concurrent.CopyOnWriteArrayList<>();
            AtomicBoolean stop = new AtomicBoolean();
            java.util.concurrent.atomic.AtomicLong slowestNanos = new java.util.concurrent.atomic.AtomicLong();
            Thread producer = new Thread(() -> {
                for (int i = 0; !stop.get(); i++) {
                    long t0 = System.nanoTime();
                    LogAppendInfo info = log.appendAsLeader(TestRecords.batch(T0, "p" + i), 0);
                    log.maybeIncrementHighWatermark(info.lastOffset() + 1);
                    slowestNanos.accumulateAndGet(System.nanoTime() - t0, Math::max);
                    acked.add(info.firstOffset() + ":p" + i);
                    if (i % 64 == 0) {
                        Thread.yield();
                    }
                }
            }, "test-producer");
            producer.start();
            Thread.sleep(20);
            m.alterLogDir(TP, b);
            long deadline = System.nanoTime() + 20_000_000_000L;
            while (m.movingTo(TP).isPresent() && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
            Thread.sleep(20);
            stop.set(true);
            producer.join();
            assertThat(m.movingTo(TP)).isEmpty();
            assertThat(log.dir().getParentFile()).isEqualTo(b);
            List<String> all = contents(log);
            assertThat(all).hasSize(4000 + acked.size());
            assertThat(all.subList(4000, all.size())).isEqualTo(acked);
            System.out.printf("move racing %d appends: slowest append %.1f ms%n", acked.size(), slowestNanos.get() / 1e6);
            m.close();
            LogManager again = manager(ReplicaMove.Hook.NONE);
            assertThat(contents(again.getLog(TP).orElseThrow())).isEqualTo(all);
            again.close();
        }
    }

    /** Writes to the destination fail (ENOSPC, EIO): the move ends, the replica never noticed, the failure is reported once. */
    @Test
    void aFailingDestinationEndsTheMoveAndTheReplicaStaysWhereItWas() throws IOException {
        LogManager m = manager(ReplicaMove.Hook.NONE);
        AtomicReference<Integer> failures = new AtomicReference<>(0);
        m.addStorageFailureListener(() -> failures.updateAndGet(n -> n + 1));
        PartitionLog log = m.getOrCreateLog(TP);
        fill(log, 40, 0);
        m.alterLogDir(TP, b);
        m.stepMoves(3000);
        String bPath = b.toPath().toString();
        try (DiskFaults.Installed ignored = DiskFaults.install((op, file) -> {
            if (file.toString().startsWith(bPath) && op != DiskFaults.Op.DIRECTORY_FSYNC) {
                throw new IOException("No space left on device (injected)");
            }
        })) {
            m.stepMoves(3000);
        }
        assertThat(m.movingTo(TP)).isEmpty();
        assertThat(m.failedLogDirs()).containsExactly(b.getAbsolutePath());
        assertThat(failures.get()).isEqualTo(1);
        assertThat(log.dir()).isEqualTo(new File(a, "orders-0"));
        assertThat(Arrays.stream(children(b)).filter(n -> n.startsWith("orders-0"))).isEmpty(); // the copy is gone
        fill(log, 5, 0); // still serving
        assertThat(contents(log)).hasSize(90);
        assertThatThrownBy(() -> m.alterLogDir(TP, b)).isInstanceOf(KafkaStorageException.class);
        m.close();
    }

    /** The commit's rename fails: nothing committed, the move ends and the replica stays. */
    @Test
    void aFailedCommitLeavesTheReplicaWhereItWas() throws IOException {
        LogManager m = manager(ReplicaMove.Hook.NONE);
        PartitionLog log = m.getOrCreateLog(TP);
        fill(log, 30, 0);
        m.alterLogDir(TP, b);
        File target = new File(b, "orders-0");
        try (DiskFaults.Installed ignored = DiskFaults.install((op, file) -> {
            if (op == DiskFaults.Op.RENAME && file.equals(target.toPath())) {
                throw new IOException("Input/output error (injected)");
            }
        })) {
            m.stepMoves(1_000_000);
        }
        assertThat(m.movingTo(TP)).isEmpty();
        assertThat(m.failedLogDirs()).containsExactly(b.getAbsolutePath()); // the one disk-failure path
        assertThat(log.dir()).isEqualTo(new File(a, "orders-0"));
        assertThat(log.isOffline()).isFalse();
        fill(log, 5, 0);
        List<String> expected = contents(log);
        m.close();
        LogManager again = manager(ReplicaMove.Hook.NONE);
        assertThat(again.getLog(TP).orElseThrow().dir()).isEqualTo(new File(a, "orders-0"));
        assertThat(contents(again.getLog(TP).orElseThrow())).isEqualTo(expected);
        again.close();
    }

    /**
     * The destination's fsync fails right after the commit's rename: which copy is the replica is now
     * for the next start to decide, so the replica takes no more writes; the start picks the new one.
     */
    @Test
    void aFailureAfterTheCommitTakesTheReplicaOfflineUntilTheNextStartPicksTheNewCopy() throws IOException {
        LogManager m = manager(ReplicaMove.Hook.NONE);
        PartitionLog log = m.getOrCreateLog(TP);
        fill(log, 30, 0);
        List<String> expected = contents(log);
        m.alterLogDir(TP, b);
        AtomicBoolean renamed = new AtomicBoolean();
        File target = new File(b, "orders-0");
        try (DiskFaults.Installed ignored = DiskFaults.install((op, file) -> {
            if (op == DiskFaults.Op.RENAME && file.equals(target.toPath())) {
                renamed.set(true);
            } else if (renamed.get() && op == DiskFaults.Op.DIRECTORY_FSYNC && file.equals(b.toPath())) {
                throw new IOException("Input/output error (injected)");
            }
        })) {
            m.stepMoves(1_000_000);
        }
        assertThat(log.isOffline()).isTrue();
        assertThatThrownBy(() -> fill(log, 1, 0)).isInstanceOf(KafkaStorageException.class);
        assertThat(m.failedLogDirs()).contains(b.getAbsolutePath());
        scheduler = new ManualScheduler(time);
        LogManager again = manager(ReplicaMove.Hook.NONE);
        PartitionLog reloaded = again.getLog(TP).orElseThrow();
        assertThat(reloaded.dir()).isEqualTo(target);
        assertThat(contents(reloaded)).isEqualTo(expected);
        assertThat(new File(a, "orders-0")).doesNotExist();
        again.close();
    }

    /** A follower's truncation, DeleteRecords and retention while the copy is made are mirrored in it. */
    @Test
    void truncationsAndNewLogStartsDuringTheMoveAreMirroredInTheCopy() throws IOException {
        LogManager m = manager(ReplicaMove.Hook.NONE);
        PartitionLog log = m.getOrCreateLog(TP);
        fill(log, 60, 1);
        m.alterLogDir(TP, b);
        m.stepMoves(4000);
        long copied = m.futureReplicas().get(0).offsetLag();
        assertThat(copied).isLessThan(log.logEndOffset());
        // a follower cuts its log below what the copy holds and fetches other batches in a new epoch
        log.truncateTo(20);
        for (int i = 0; i < 10; i++) {
            long next = log.logEndOffset();
            log.appendAsFollower(withOffset(TestRecords.batch(T0, "f" + next, "g" + next), next, 2));
        }
        m.stepMoves(4000);
        log.updateHighWatermark(log.logEndOffset());
        m.deleteRecordsBefore(TP, 25);
        m.stepMoves(500);
        fill(log, 40, 2);
        log.truncateFullyAndStartAt(200); // the leader's log start passed this follower's end
        fill(log, 10, 3);
        while (m.movingTo(TP).isPresent()) {
            m.stepMoves(100_000);
        }
        assertThat(log.dir().getParentFile()).isEqualTo(b);
        assertThat(log.logStartOffset()).isEqualTo(200);
        scheduler.tick(1000); // file.delete.delay.ms: what the copy deleted before the swap goes too
        assertThat(Arrays.stream(children(log.dir())).filter(n -> n.endsWith(LogFileNames.DELETED_SUFFIX))).isEmpty();
        List<String> expected = contents(log);
        assertThat(expected).hasSize(20).allMatch(s -> Long.parseLong(s.split(":")[0]) >= 200);
        m.close();
        LogManager again = manager(ReplicaMove.Hook.NONE);
        assertThat(contents(again.getLog(TP).orElseThrow())).isEqualTo(expected);
        again.close();
    }

    /** A batch as a follower receives it: at {@code offset} in {@code epoch}. */
    static org.apache.kafka.common.record.internal.MemoryRecords withOffset(
            org.apache.kafka.common.record.internal.MemoryRecords records, long offset, int epoch) {
        for (org.apache.kafka.common.record.internal.MutableRecordBatch batch : records.batches()) {
            batch.setLastOffset(offset + batch.lastOffset() - batch.baseOffset());
            batch.setPartitionLeaderEpoch(epoch);
        }
        return records;
    }

    @Test
    void aMoveCanBeRedirectedOrCalledOffAndAMissingLogIsCreatedWhereAsked() throws IOException {
        File c = new File(tmp, "c");
        a = new File(tmp, "a");
        b = new File(tmp, "b");
        LogManager m = new LogManager(LogManagerConfig.defaults(List.of(a, b, c)), topic -> config, time, scheduler);
        m.startup();
        assertThat(m.logDir(b.getAbsolutePath())).contains(b);
        assertThat(m.logDir(b.getAbsolutePath() + "/")).isEmpty();
        assertThat(m.logDir(new File(tmp, "d").getAbsolutePath())).isEmpty();
        assertThat(m.logDir("b")).isEmpty(); // Kafka: absolute paths only

        TopicPartition fresh = new TopicPartition("fresh", 3);
        assertThat(m.alterLogDir(fresh, c)).isEqualTo(LogManager.AlterLogDirResult.NO_LOG);
        assertThat(m.getOrCreateLog(fresh).dir().getParentFile()).isEqualTo(c);

        PartitionLog log = m.getOrCreateLog(TP);
        File home = log.dir().getParentFile();
        fill(log, 30, 0);
        assertThat(m.alterLogDir(TP, home)).isEqualTo(LogManager.AlterLogDirResult.ALREADY_THERE);
        File first = home.equals(a) ? b : a;
        File second = home.equals(c) ? b : c;
        m.alterLogDir(TP, first);
        m.stepMoves(2000);
        m.alterLogDir(TP, second); // redirected: the first copy goes
        assertThat(Arrays.stream(children(first)).filter(n -> n.startsWith("orders-0"))).isEmpty();
        assertThat(m.movingTo(TP)).contains(second);
        assertThat(m.alterLogDir(TP, home)).isEqualTo(LogManager.AlterLogDirResult.ALREADY_THERE); // called off
        assertThat(m.movingTo(TP)).isEmpty();
        assertThat(Arrays.stream(children(second)).filter(n -> n.startsWith("orders-0"))).isEmpty();
        m.alterLogDir(TP, second);
        m.deleteLog(TP); // a deleted partition's move goes with it
        assertThat(m.movingTo(TP)).isEmpty();
        assertThat(Arrays.stream(children(second)).filter(n -> n.startsWith("orders-0"))).isEmpty();
        m.close();
    }

    /** A clean shutdown in the middle of a move keeps the copy's directory; the next start begins the move again. */
    @Test
    void aMoveInterruptedByAShutdownStartsOverAtTheNextStart() throws IOException {
        LogManager m = manager(ReplicaMove.Hook.NONE);
        PartitionLog log = m.getOrCreateLog(TP);
        fill(log, 40, 0);
        List<String> expected = contents(log);
        m.alterLogDir(TP, b);
        m.stepMoves(3000);
        m.close();
        assertThat(Arrays.stream(children(b)).filter(n -> n.endsWith("-future"))).hasSize(1);
        LogManager again = manager(ReplicaMove.Hook.NONE);
        assertThat(again.movingTo(TP)).contains(b);
        assertThat(again.getLog(TP).orElseThrow().dir().getParentFile()).isEqualTo(a);
        scheduler.tick(1); // the mover task runs the move to its end
        assertThat(again.movingTo(TP)).isEmpty();
        assertThat(again.getLog(TP).orElseThrow().dir().getParentFile()).isEqualTo(b);
        assertThat(contents(again.getLog(TP).orElseThrow())).isEqualTo(expected);
        again.close();
    }
}
