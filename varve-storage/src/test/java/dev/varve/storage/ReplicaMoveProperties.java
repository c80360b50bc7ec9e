package dev.varve.storage;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.SimpleRecord;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Random histories of a replica that moves between three log directories while it takes appends,
 * is truncated (a follower), emptied and restarted at a later offset (a follower whose leader's log
 * start passed it), loses its prefix to DeleteRecords and retention, rolls, is redirected to another
 * directory, and whose process restarts — cleanly, by a crash between two operations, or by a crash
 * before a chosen step of a swap. After every operation the log holds exactly the records of the
 * model, and exactly one directory named {@code orders-0} exists (the log's own); at the end the move
 * completes, and a crash right after it changes nothing.
 */
class ReplicaMoveProperties {
    private static final TopicPartition TP = new TopicPartition("orders", 0);
    private static final long T0 = 1_700_000_000_000L;
    private static LogPropertySupport.QuietLogs quiet;

    @BeforeContainer
    static void quietLogs() {
        quiet = new LogPropertySupport.QuietLogs();
    }

    @AfterContainer
    static void restoreLogs() {
        quiet.close();
        LogPropertySupport.deleteTempRoot();
    }

    sealed interface Op permits Append, Truncate, StartLater, DeleteRecords, Retention, Roll, Step, Move, Restart, CrashInSwap {
    }

    /** {@code batches} leader batches of {@code records} records each (values of {@code size} bytes). */
    record Append(int batches, int records, int size) implements Op {
    }

    /** A follower's truncation {@code back} offsets below the log end; later appends are in a new epoch. */
    record Truncate(int back) implements Op {
    }

    /** A follower emptied and restarted {@code ahead} offsets past its log end (its leader's log start moved on). */
    record StartLater(int ahead) implements Op {
    }

    /** DeleteRecords at a point between the log start and the high watermark. */
    record DeleteRecords(int pick) implements Op {
    }

    /** Retention by size: keep at most {@code keepBytes} of closed segments. */
    record Retention(int keepBytes) implements Op {
    }

    record Roll() implements Op {
    }

    /** One pass of the mover copying up to {@code bytes}. */
    record Step(int bytes) implements Op {
    }

    /** AlterReplicaLogDirs to directory {@code dir} (0-2). */
    record Move(int dir) implements Op {
    }

    /** The process stops, cleanly or by a crash (no close, no clean-shutdown marker), and starts again. */
    record Restart(boolean clean) implements Op {
    }

    /** The next swap crashes before {@code step}; the process starts again. */
    record CrashInSwap(ReplicaMove.SwapStep step) implements Op {
    }

    @Provide
    Arbitrary<List<Op>> histories() {
        Arbitrary<Op> op = Arbitraries.frequencyOf(
                net.jqwik.api.Tuple.of(10, Combinators.combine(Arbitraries.integers().between(1, 6),
                        Arbitraries.integers().between(1, 4), Arbitraries.integers().between(1, 200)).as(Append::new)),
                net.jqwik.api.Tuple.of(3, Arbitraries.integers().between(0, 30).map(Truncate::new)),
                net.jqwik.api.Tuple.of(1, Arbitraries.integers().between(0, 20).map(StartLater::new)),
                net.jqwik.api.Tuple.of(2, Arbitraries.integers().between(0, 1000).map(DeleteRecords::new)),
                net.jqwik.api.Tuple.of(1, Arbitraries.integers().between(0, 6000).map(Retention::new)),
                net.jqwik.api.Tuple.of(1, Arbitraries.just(new Roll())),
                net.jqwik.api.Tuple.of(10, Arbitraries.integers().between(1, 3000).map(Step::new)),
                net.jqwik.api.Tuple.of(3, Arbitraries.integers().between(0, 2).map(Move::new)),
                net.jqwik.api.Tuple.of(1, Arbitraries.of(true, false).map(Restart::new)),
                net.jqwik.api.Tuple.of(1, Arbitraries.of(ReplicaMove.SwapStep.class).map(CrashInSwap::new)));
        return op.list().ofMinSize(5).ofMaxSize(40);
    }

    /** The history under test: the directories, the manager and log of the current process, and the model. */
    private static final class World {
        final File[] dirs = new File[3];
        final MockTime time = new MockTime(T0);
        final AtomicReference<ReplicaMove.SwapStep> crashAt = new AtomicReference<>();
        final LogConfig config = LogConfig.fromMap(Map.of(TopicConfig.SEGMENT_BYTES_CONFIG, 1024,
                TopicConfig.FILE_DELETE_DELAY_MS_CONFIG, 0L, TopicConfig.RETENTION_MS_CONFIG, -1L));
        volatile LogConfig current = config;
        ManualScheduler scheduler;
        LogManager manager;
        PartitionLog log;
        /** "offset:value" of every record the log must hold, in offset order. */
        final List<String> model = new ArrayList<>();
        int epoch;
        int values;
        int target = -1;
        final List<String> history = new ArrayList<>();

        World() throws IOException {
            File root = LogPropertySupport.newTempDir("move").toFile();
            for (int i = 0; i < 3; i++) {
                dirs[i] = new File(root, "d" + i);
            }
            start();
            log = manager.getOrCreateLog(TP);
        }

        void start() throws IOException {
            scheduler = new ManualScheduler(time);
            manager = new LogManager(LogManagerConfig.defaults(List.of(dirs)), topic -> current, time, scheduler,
                    SegmentSwap.Hook.NONE, step -> {
                        if (step == crashAt.get()) {
                            crashAt.set(null);
                            throw new ReplicaMoveTest.SimulatedCrash(step.name());
                        }
                    });
            manager.startup();
            log = manager.getLog(TP).orElse(null);
        }

        /** Drops model records the log no longer holds at its ends (truncations and log starts decided by the log). */
        void trimModel() {
            long start = log.logStartOffset();
            long end = log.logEndOffset();
            model.removeIf(s -> {
                long offset = Long.parseLong(s.substring(0, s.indexOf(':')));
                return offset < start || offset >= end;
            });
        }

        void apply(Op op) throws IOException {
            history.add(op.toString());
            if (op instanceof Append a) {
                for (int i = 0; i < a.batches(); i++) {
                    SimpleRecord[] records = new SimpleRecord[a.records()];
                    long base = log.logEndOffset();
                    for (int r = 0; r < records.length; r++) {
                        String value = "v" + (values++) + "-" + "x".repeat(a.size());
                        records[r] = new SimpleRecord(T0, null, value.getBytes(StandardCharsets.UTF_8));
                        model.add((base + r) + ":" + value);
                    }
                    log.appendAsLeader(MemoryRecords.withRecords(org.apache.kafka.common.compress.Compression.NONE,
                            records), epoch);
                }
                log.maybeIncrementHighWatermark(log.logEndOffset());
            } else if (op instanceof Truncate t) {
                log.truncateTo(Math.max(log.logStartOffset(), log.logEndOffset() - t.back()));
                epoch++;
                trimModel();
            } else if (op instanceof StartLater s) {
                log.truncateFullyAndStartAt(log.logEndOffset() + s.ahead());
                epoch++;
                model.clear();
            } else if (op instanceof DeleteRecords d) {
                long start = log.logStartOffset();
                long span = log.highWatermark() - start;
                manager.deleteRecordsBefore(TP, start + (span <= 0 ? 0 : d.pick() % (span + 1)));
                trimModel();
            } else if (op instanceof Retention r) {
                current = config.with(TopicConfig.RETENTION_BYTES_CONFIG, (long) r.keepBytes());
                log.updateConfig(current);
                manager.cleanupLogs();
                current = config;
                log.updateConfig(config);
                trimModel();
            } else if (op instanceof Roll) {
                log.roll();
            } else if (op instanceof Step s) {
                manager.stepMoves(s.bytes());
            } else if (op instanceof Move mv) {
                manager.alterLogDir(TP, dirs[mv.dir()]);
                target = mv.dir();
            } else if (op instanceof Restart r) {
                if (r.clean()) {
                    manager.close();
                }
                start();
            } else if (op instanceof CrashInSwap c) {
                crashAt.set(c.step());
                try {
                    while (manager.movingTo(TP).isPresent()) {
                        manager.stepMoves(1 << 20);
                    }
                    crashAt.set(null); // no move to swap: nothing crashed
                } catch (ReplicaMoveTest.SimulatedCrash crash) {
                    start();
                }
            }
        }

        void check(String when) {
            assertThat(ReplicaMoveTest.contents(log)).as("%s after %s", when, history).isEqualTo(model);
            int found = 0;
            for (File d : dirs) {
                File f = new File(d, "orders-0");
                if (f.exists()) {
                    found++;
                    assertThat(f).as("%s after %s", when, history).isEqualTo(log.dir());
                }
            }
            assertThat(found).as("directories named orders-0 %s after %s", when, history).isEqualTo(1);
        }
    }

    @Property(tries = 30)
    void aMovingReplicaAlwaysHoldsExactlyItsRecordsInExactlyOneDirectory(@ForAll("histories") List<Op> ops) throws IOException {
        World w = new World();
        try {
            for (Op op : ops) {
                w.apply(op);
                w.check("during the history");
            }
            // the last move requested completes (or the replica is where it was asked to be)
            while (w.manager.movingTo(TP).isPresent()) {
                w.manager.stepMoves(1 << 20);
            }
            if (w.target >= 0) {
                assertThat(w.log.dir().getParentFile()).as("after %s", w.history).isEqualTo(w.dirs[w.target]);
            }
            w.check("after the move");
            w.start(); // a crash right after
            w.check("after a crash");
            w.manager.close();
            w.start();
            w.check("after a clean restart");
            w.manager.close();
        } catch (RuntimeException | AssertionError e) {
            throw new AssertionError("history " + w.history + ": " + e, e);
        }
    }
}
