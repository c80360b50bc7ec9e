package dev.varve.storage;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;
import net.jqwik.api.statistics.Statistics;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.OutOfOrderSequenceException;
import org.apache.kafka.common.record.internal.DefaultRecordBatch;
import org.apache.kafka.common.record.internal.FileLogInputStream.FileChannelRecordBatch;

import java.io.File;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Idempotent producers against a real log, with restarts, crashes and truncations in between.
 * Two producers send new batches, retries of recent (or too old) batches, gaps, stale epochs and
 * epoch bumps, some starting near Integer.MAX_VALUE so sequences wrap. A model keeps the batches the
 * log must hold; from it alone it derives each send's outcome (appended, duplicate with the original
 * offsets, OutOfOrderSequence, InvalidProducerEpoch) and each producer's expected state. After every
 * step the log's batches and its producer state must match the model, whatever mix of roll
 * snapshots, close snapshots, crashes (tails cut at batch boundaries, whole segments lost) and
 * truncations the state was rebuilt from.
 */
class ProducerStateProperties {
    private static final TopicPartition TP = new TopicPartition("idem", 0);
    private static final long T0 = 1_700_000_000_000L;
    private static final int WINDOW = ProducerStateEntry.NUM_BATCHES_TO_RETAIN;

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

    // ------------------------------------------------------------------ operations

    sealed interface Op permits Next, Retry, Gap, Bump, Stale, Roll, Truncate, Restart, Crash {
    }

    /** The producer's next batch of {@code count} records. */
    record Next(int producer, int count) implements Op {
    }

    /** A resend of the producer's {@code back}-th most recent acknowledged batch (1 = the last one). */
    record Retry(int producer, int back) implements Op {
    }

    /** A batch {@code skip} sequences past the next one. */
    record Gap(int producer, int skip) implements Op {
    }

    /** The next epoch, starting at sequence 0 (or, wrongly, at the next sequence). */
    record Bump(int producer, boolean fromZero) implements Op {
    }

    /** A batch in the epoch before the producer's. */
    record Stale(int producer) implements Op {
    }

    record Roll() implements Op {
    }

    /** A follower's truncation to a point picked in [0, log end]. */
    record Truncate(int pick) implements Op {
    }

    /** Flush, close and reopen cleanly. */
    record Restart() implements Op {
    }

    /** Abandon the log, cut its last {@code lostBatches} batches off the files, reopen with full recovery. */
    record Crash(int lostBatches) implements Op {
    }

    @Provide
    Arbitrary<List<Op>> ops() {
        Arbitrary<Integer> producer = Arbitraries.integers().between(0, 1);
        return Arbitraries.<Op>frequencyOf(
                Tuple.of(12, Arbitraries.integers().between(1, 3).flatMap(c -> producer.map(p -> new Next(p, c)))),
                Tuple.of(6, Arbitraries.integers().between(1, 7).flatMap(k -> producer.map(p -> new Retry(p, k)))),
                Tuple.of(1, Arbitraries.integers().between(1, 3).flatMap(s -> producer.map(p -> new Gap(p, s)))),
                Tuple.of(2, Arbitraries.of(true, true, false).flatMap(z -> producer.map(p -> new Bump(p, z)))),
                Tuple.of(1, producer.map(Stale::new)),
                Tuple.of(1, Arbitraries.just(new Roll())),
                Tuple.of(1, Arbitraries.integers().map(Truncate::new)),
                Tuple.of(2, Arbitraries.just(new Restart())),
                Tuple.of(2, Arbitraries.integers().between(0, 4).map(Crash::new))
        ).list().ofMinSize(20).ofMaxSize(80);
    }

    @Provide
    Arbitrary<List<Integer>> firstSequences() {
        return Arbitraries.of(0, 0, Integer.MAX_VALUE - 4).list().ofSize(2);
    }

    // ------------------------------------------------------------------ the property

    @Property(tries = 100)
    void producerStateFollowsTheLogThroughRestartsCrashesAndTruncations(
            @ForAll("ops") List<Op> ops, @ForAll("firstSequences") List<Integer> firstSequences,
            @ForAll("segmentSizes") int segmentBytes) throws IOException {
        Path tmp = LogPropertySupport.newTempDir("varve-idem-prop");
        Harness h = new Harness(tmp.resolve(TP.topic() + "-" + TP.partition()).toFile(), segmentBytes, firstSequences);
        try {
            for (int i = 0; i < ops.size(); i++) {
                Op op = ops.get(i);
                try {
                    h.apply(op);
                    h.check();
                } catch (AssertionError | RuntimeException e) {
                    throw new AssertionError("step " + i + " " + op + " failed on " + h.log + ": " + e.getMessage(), e);
                }
            }
            Statistics.label("outcomes").collect(h.outcomes.keySet().stream().sorted().toList().toString());
            Statistics.label("snapshot loads").collect(h.reopens == 0 ? "0" : h.reopens < 4 ? "1-3" : ">=4");
        } finally {
            if (h.log != null) {
                h.log.close();
            }
            LogPropertySupport.deleteRecursively(tmp);
        }
    }

    @Provide
    Arbitrary<Integer> segmentSizes() {
        return Arbitraries.integers().between(300, 900);
    }

    // ------------------------------------------------------------------ model and harness

    /** A batch the log holds. */
    record MBatch(long pid, short epoch, int firstSeq, int count, long firstOffset, long timestamp) {
        int lastSeq() {
            return DefaultRecordBatch.incrementSequence(firstSeq, count - 1);
        }

        long lastOffset() {
            return firstOffset + count - 1;
        }
    }

    /** What a client believes: its epoch, next sequence and acknowledged batches. */
    static final class Client {
        final long pid;
        short epoch;
        int nextSeq;
        final List<MBatch> acked = new ArrayList<>();

        Client(long pid, int firstSeq) {
            this.pid = pid;
            this.nextSeq = firstSeq;
        }
    }

    /** The state a log holding {@code batches} must report: per producer, epoch and last five batches. */
    static Map<Long, List<MBatch>> expectedWindows(List<MBatch> batches) {
        Map<Long, List<MBatch>> windows = new LinkedHashMap<>();
        for (MBatch b : batches) {
            List<MBatch> w = windows.computeIfAbsent(b.pid(), p -> new ArrayList<>());
            if (!w.isEmpty() && w.get(0).epoch() != b.epoch()) {
                w.clear();
            }
            w.add(b);
            if (w.size() > WINDOW) {
                w.remove(0);
            }
        }
        return windows;
    }

    static final class Harness {
        final File dir;
        final LogConfig config;
        final MockTime time = new MockTime(T0);
        final ManualScheduler scheduler = new ManualScheduler(time);
        final List<Client> clients = new ArrayList<>();
        final List<MBatch> model = new ArrayList<>();
        final Map<String, Integer> outcomes = new HashMap<>();
        PartitionLog log;
        int reopens;

        Harness(File dir, int segmentBytes, List<Integer> firstSequences) throws IOException {
            this.dir = dir;
            this.config = LogConfig.fromMap(Map.of(TopicConfig.SEGMENT_BYTES_CONFIG, segmentBytes,
                    TopicConfig.RETENTION_MS_CONFIG, -1L));
            for (int i = 0; i < firstSequences.size(); i++) {
                clients.add(new Client(1000L + i, firstSequences.get(i)));
            }
            log = PartitionLog.open(dir, TP, config, time, scheduler);
        }

        void apply(Op op) throws IOException {
            time.advance(3);
            if (op instanceof Next n) {
                Client c = clients.get(n.producer());
                send(c, c.epoch, c.nextSeq, n.count());
            } else if (op instanceof Retry r) {
                Client c = clients.get(r.producer());
                if (c.acked.size() >= r.back()) {
                    MBatch b = c.acked.get(c.acked.size() - r.back());
                    send(c, b.epoch(), b.firstSeq(), b.count());
                }
            } else if (op instanceof Gap g) {
                Client c = clients.get(g.producer());
                send(c, c.epoch, DefaultRecordBatch.incrementSequence(c.nextSeq, g.skip()), 1);
            } else if (op instanceof Bump b) {
                Client c = clients.get(b.producer());
                send(c, (short) (c.epoch + 1), b.fromZero() ? 0 : c.nextSeq, 1);
            } else if (op instanceof Stale s) {
                Client c = clients.get(s.producer());
                if (c.epoch > 0) {
                    send(c, (short) (c.epoch - 1), c.nextSeq, 1);
                }
            } else if (op instanceof Roll) {
                log.roll();
            } else if (op instanceof Truncate t) {
                long offset = Math.floorMod((long) t.pick(), log.logEndOffset() + 1);
                log.truncateTo(offset);
                model.removeIf(b -> b.lastOffset() >= offset);
            } else if (op instanceof Restart) {
                long start = log.logStartOffset();
                long recoveryPoint = log.recoveryPoint();
                long hw = log.highWatermark();
                log.flush();
                log.close();
                log = PartitionLog.open(dir, TP, config, time, scheduler, start, recoveryPoint, hw, true);
                reopens++;
            } else if (op instanceof Crash c) {
                crash(c.lostBatches());
            }
        }

        /** Sends one batch and checks the outcome the model predicts. */
        private void send(Client c, short epoch, int firstSeq, int count) {
            String expected = expectedOutcome(c.pid, epoch, firstSeq, count);
            outcomes.merge(expected.split(" ")[0], 1, Integer::sum);
            long endBefore = log.logEndOffset();
            String actual;
            LogAppendInfo info = null;
            try {
                info = log.appendAsLeader(TestRecords.idempotent(c.pid, epoch, firstSeq, count, time.milliseconds()), 0);
                actual = info.duplicate() ? "duplicate " + info.firstOffset() + "-" + info.lastOffset() : "appended";
            } catch (OutOfOrderSequenceException e) {
                actual = "out-of-order";
            } catch (InvalidProducerEpochException e) {
                actual = "stale-epoch";
            }
            assertThat(actual).as("producer %d epoch %d seq %d x%d", c.pid, epoch, firstSeq, count).isEqualTo(expected);
            if (actual.equals("appended")) {
                assertThat(info.firstOffset()).isEqualTo(endBefore);
                MBatch b = new MBatch(c.pid, epoch, firstSeq, count, endBefore, time.milliseconds());
                model.add(b);
                c.acked.add(b);
                c.epoch = epoch;
                c.nextSeq = DefaultRecordBatch.incrementSequence(b.lastSeq(), 1);
            } else {
                assertThat(log.logEndOffset()).isEqualTo(endBefore);
            }
        }

        /** Kafka's rules, evaluated over the batches the log holds. */
        private String expectedOutcome(long pid, short epoch, int firstSeq, int count) {
            List<MBatch> window = expectedWindows(model).get(pid);
            if (window == null) {
                // unknown producer: any sequence, except on a log that has never held a record (or was
                // truncated back to empty), where it starts at 0 (KAFKA-15591)
                return model.isEmpty() && firstSeq != 0 ? "out-of-order" : "appended";
            }
            int lastSeq = DefaultRecordBatch.incrementSequence(firstSeq, count - 1);
            MBatch last = window.get(window.size() - 1);
            for (MBatch b : window) {
                if (b.epoch() == epoch && b.firstSeq() == firstSeq && b.lastSeq() == lastSeq) {
                    return "duplicate " + b.firstOffset() + "-" + b.lastOffset();
                }
            }
            if (epoch < last.epoch()) {
                return "stale-epoch";
            }
            if (epoch > last.epoch()) {
                return firstSeq == 0 ? "appended" : "out-of-order";
            }
            return ProducerStateTable.inSequence(last.lastSeq(), firstSeq) ? "appended" : "out-of-order";
        }

        /** Abandons the log, cuts the files back by {@code lost} batches, reopens with full recovery. */
        private void crash(int lost) throws IOException {
            List<LogSegment> segments = new ArrayList<>(log.segments().all());
            log = null; // abandoned, never closed: no close snapshot
            int keep = Math.max(0, model.size() - lost);
            if (keep < model.size()) {
                long cut = model.get(keep).firstOffset();
                for (LogSegment s : segments) {
                    File logFile = LogFileNames.logFile(dir, s.baseOffset());
                    if (s.baseOffset() >= cut && s.baseOffset() > segments.get(0).baseOffset()) {
                        Files.deleteIfExists(logFile.toPath());
                        Files.deleteIfExists(LogFileNames.offsetIndexFile(dir, s.baseOffset()).toPath());
                        Files.deleteIfExists(LogFileNames.timeIndexFile(dir, s.baseOffset()).toPath());
                    } else {
                        for (FileChannelRecordBatch b : s.log().batches()) {
                            if (b.baseOffset() >= cut) {
                                try (RandomAccessFile f = new RandomAccessFile(logFile, "rw")) {
                                    f.setLength(b.position());
                                }
                                break;
                            }
                        }
                    }
                }
                model.subList(keep, model.size()).clear();
            }
            Statistics.label("crash").collect(lost == 0 ? "nothing lost" : "tail lost");
            log = PartitionLog.open(dir, TP, config, time, scheduler, 0, 0, 0, false);
            reopens++;
        }

        void check() {
            List<MBatch> onDisk = new ArrayList<>();
            for (LogSegment s : log.segments().all()) {
                for (FileChannelRecordBatch b : s.log().batches()) {
                    onDisk.add(new MBatch(b.producerId(), b.producerEpoch(), b.baseSequence(),
                            (int) (b.lastOffset() - b.baseOffset() + 1), b.baseOffset(), b.maxTimestamp()));
                }
            }
            assertThat(onDisk).as("batches in the log").isEqualTo(model);
            Map<Long, List<MBatch>> windows = expectedWindows(model);
            assertThat(log.activeProducers().keySet()).as("producers").isEqualTo(windows.keySet());
            for (Map.Entry<Long, List<MBatch>> e : windows.entrySet()) {
                ProducerStateEntry actual = log.producerState(e.getKey()).orElseThrow();
                List<MBatch> w = e.getValue();
                assertThat(actual.producerEpoch()).as("epoch of %d", e.getKey()).isEqualTo(w.get(0).epoch());
                assertThat(actual.lastTimestamp()).as("last timestamp of %d", e.getKey())
                        .isEqualTo(w.get(w.size() - 1).timestamp());
                assertThat(actual.batches()).as("batches of %d", e.getKey()).hasSameSizeAs(w);
                for (int i = 0; i < w.size(); i++) {
                    ProducerStateEntry.BatchMetadata m = actual.batches().get(i);
                    MBatch b = w.get(i);
                    assertThat(List.of(m.firstSeq(), m.lastSeq(), m.firstOffset(), m.lastOffset(), m.timestamp()))
                            .as("batch %d of producer %d", i, e.getKey())
                            .isEqualTo(List.of(b.firstSeq(), b.lastSeq(), b.firstOffset(), b.lastOffset(), b.timestamp()));
                }
            }
            for (long snapshot : log.producerSnapshotOffsets()) {
                assertThat(snapshot).as("snapshot offsets are within the log").isLessThanOrEqualTo(log.logEndOffset());
            }
        }
    }
}
