package dev.varve.storage;

import dev.varve.storage.LogPropertySupport.BatchSpec;
import dev.varve.storage.LogPropertySupport.Cfg;
import dev.varve.storage.LogPropertySupport.MBatch;
import dev.varve.storage.LogPropertySupport.MRec;
import dev.varve.storage.LogPropertySupport.RBatch;
import dev.varve.storage.LogPropertySupport.Tuple2;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.statistics.Statistics;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.OffsetOutOfRangeException;
import org.apache.kafka.common.record.internal.FileRecords;
import org.apache.kafka.common.record.internal.MemoryRecords;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Model-based test of {@link PartitionLog}: random sequences of appends, reads, rolls, truncations,
 * DeleteRecords, retention passes, clean reopens and scheduler ticks are applied both to a real log
 * (tiny segments and indexes, so rolls and full indexes happen constantly) and to a list of batches;
 * after every step the log must agree with the model.
 *
 * <p>The model is batch-granular: it keeps every batch physically present from the first segment on
 * (including batches below the log start offset that the first segment still holds), so it can check
 * segment contents, retention decisions and the leader-epoch cache, not just consumer-visible reads.
 *
 * <p>The {@code @Example}s are minimal reproductions of bugs the property found (now fixed), kept as
 * regression tests.
 */
class PartitionLogProperties {
    private static final TopicPartition TP = new TopicPartition("prop", 0);

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

    sealed interface Op permits Append, Read, Roll, Truncate, DeleteBefore, Retention, Reopen, Tick, SetHw, Flush {
    }

    /** Append batches with the current epoch (+ bump); then set the HW: 0 to the log end, 1 unchanged, 2 to hwPick. */
    record Append(List<BatchSpec> batches, int epochBump, int hwMode, int hwPick) implements Op {
        @Override
        public String toString() {
            return "Append(" + batches.size() + " batches, " + batches.stream().mapToInt(b -> b.records().size()).sum()
                    + " records, compression " + batches.stream().map(b -> Integer.toString(b.compression())).toList()
                    + ", epoch+" + epochBump + ", hwMode " + hwMode + ", hwPick " + hwPick + ")";
        }
    }

    /** boundMode: 0 log end, 1 HW, 2 random in [offset, end], 3 Long.MAX_VALUE, 4 out-of-range offset. */
    record Read(int offsetPick, int maxBytes, int boundMode, int boundPick, boolean minOneBatch) implements Op {
    }

    record Roll() implements Op {
    }

    /** belowStart: truncate below the log start offset (a full truncation). */
    record Truncate(int pick, boolean belowStart) implements Op {
    }

    record DeleteBefore(int pick) implements Op {
    }

    /** kind: 0 retention.bytes, 1 retention.messages, 2 retention.ms. */
    record Retention(int kind, int pick, long advanceMs) implements Op {
    }

    /** Close and open again; clean=false recovers everything past the recovery point (with no damage). */
    record Reopen(boolean clean) implements Op {
    }

    record Tick(long ms) implements Op {
    }

    record SetHw(int pick) implements Op {
    }

    record Flush() implements Op {
    }

    @Provide
    Arbitrary<Cfg> configs() {
        return LogPropertySupport.configs();
    }

    @Provide
    Arbitrary<List<Op>> ops() {
        Arbitrary<Integer> picks = Arbitraries.integers().between(0, Integer.MAX_VALUE);
        Arbitrary<Op> append = Combinators.combine(
                LogPropertySupport.batchSpecs(20).list().ofMinSize(1).ofMaxSize(3),
                Arbitraries.<Integer>frequencyOf(Tuple2.of(8, Arbitraries.just(0)), Tuple2.of(2, Arbitraries.integers().between(1, 3))),
                Arbitraries.<Integer>frequencyOf(Tuple2.of(5, Arbitraries.just(0)), Tuple2.of(3, Arbitraries.just(1)), Tuple2.of(2, Arbitraries.just(2))),
                picks).as(Append::new);
        Arbitrary<Op> read = Combinators.combine(
                picks,
                Arbitraries.<Integer>frequencyOf(Tuple2.of(1, Arbitraries.just(0)), Tuple2.of(6, Arbitraries.integers().between(1, 6000)),
                        Tuple2.of(1, Arbitraries.just(Integer.MAX_VALUE))),
                Arbitraries.integers().between(0, 4),
                picks,
                Arbitraries.of(true, false)).as(Read::new);
        Arbitrary<Op> truncate = Combinators.combine(picks,
                Arbitraries.<Boolean>frequencyOf(Tuple2.of(9, Arbitraries.just(false)), Tuple2.of(1, Arbitraries.just(true)))).as(Truncate::new);
        Arbitrary<Op> retention = Combinators.combine(Arbitraries.integers().between(0, 2), picks,
                Arbitraries.longs().between(0, 20_000_000L)).as(Retention::new);
        return Arbitraries.<Op>frequencyOf(
                Tuple2.of(30, append),
                Tuple2.of(12, read),
                Tuple2.of(3, Arbitraries.just(new Roll())),
                Tuple2.of(5, truncate),
                Tuple2.of(4, picks.map(DeleteBefore::new)),
                Tuple2.of(5, retention),
                Tuple2.of(3, Arbitraries.of(true, true, false).map(Reopen::new)),
                Tuple2.of(3, Arbitraries.longs().between(0, 3000).map(Tick::new)),
                Tuple2.of(3, picks.map(SetHw::new)),
                Tuple2.of(1, Arbitraries.just(new Flush()))
        ).list().ofMinSize(30).ofMaxSize(150);
    }

    // ------------------------------------------------------------------ the property

    @Property(tries = 100)
    void logBehavesLikeTheModel(@ForAll("configs") Cfg cfg, @ForAll("ops") List<Op> ops) throws IOException {
        Path tmp = LogPropertySupport.newTempDir("varve-plog-prop");
        Harness h = new Harness(tmp.resolve(TP.topic() + "-" + TP.partition()).toFile(), cfg);
        try {
            h.checkInvariants(-1, null);
            for (int i = 0; i < ops.size(); i++) {
                Op op = ops.get(i);
                try {
                    h.apply(op, i);
                } catch (AssertionError | RuntimeException e) {
                    throw new AssertionError("step " + i + " " + op + " failed on " + h.log + ": " + e.getMessage(), e);
                }
                h.checkInvariants(i, op);
                h.maxSegments = Math.max(h.maxSegments, h.log.numberOfSegments());
            }
            Statistics.label("max segments").collect(h.maxSegments < 5 ? "<5" : h.maxSegments < 20 ? "5-19" : ">=20");
            Statistics.label("segments deleted by retention").collect(h.retentionDeleted == 0 ? "0" : h.retentionDeleted < 5 ? "1-4" : ">=5");
            Statistics.label("truncations that cut").collect(h.truncations == 0 ? "0" : h.truncations < 3 ? "1-2" : ">=3");
        } finally {
            h.closeQuietly();
            LogPropertySupport.deleteRecursively(tmp);
        }
    }

    // ------------------------------------------------------------------ minimal reproductions of bugs the property found

    /**
     * Bug 1: DeleteRecords moved the log start into a batch; truncating to an offset at or after the
     * log start but inside that batch removes the whole batch, leaving the log end (and HW) below the
     * log start offset.
     */
    @Example
    void truncatingInsideTheBatchThatHoldsTheLogStartKeepsStartAtMostEnd() throws IOException {
        Path tmp = LogPropertySupport.newTempDir("varve-plog-example");
        MockTime time = new MockTime(LogPropertySupport.T0);
        try (PartitionLog log = PartitionLog.open(tmp.resolve("prop-0").toFile(), TP, LogConfig.DEFAULT, time,
                new ManualScheduler(time))) {
            log.appendAsLeader(TestRecords.batch(LogPropertySupport.T0, "a", "b", "c", "d", "e"), 0); // offsets 0-4, one batch
            log.updateHighWatermark(5);
            log.deleteRecordsBefore(2);
            log.truncateTo(3);
            assertThat(log.logStartOffset()).as("log start <= log end (end is %d)", log.logEndOffset())
                    .isLessThanOrEqualTo(log.logEndOffset());
        } finally {
            LogPropertySupport.deleteRecursively(tmp);
        }
    }

    /**
     * Bug 2: one append of several batches adds one index entry per batch, but the roll check only
     * asks whether the index is already full; a nearly full index overflows in the middle of the
     * append (IllegalStateException wrapped in KafkaStorageException). Followers append many batches
     * per fetch, so this is the replication path too.
     */
    @Example
    void aMultiBatchAppendNeverOverflowsTheIndexes() throws IOException {
        Path tmp = LogPropertySupport.newTempDir("varve-plog-example");
        MockTime time = new MockTime(LogPropertySupport.T0);
        LogConfig config = LogConfig.fromMap(Map.of(TopicConfig.SEGMENT_INDEX_BYTES_CONFIG, 64,
                TopicConfig.INDEX_INTERVAL_BYTES_CONFIG, 0));
        try (PartitionLog log = PartitionLog.open(tmp.resolve("prop-0").toFile(), TP, config, time, new ManualScheduler(time))) {
            for (int i = 0; i < 4; i++) {
                log.appendAsLeader(TestRecords.batch(LogPropertySupport.T0 + i, "v" + i), 0);
            }
            MemoryRecords three = TestRecords.concat(TestRecords.batch(LogPropertySupport.T0 + 10, "x"),
                    TestRecords.batch(LogPropertySupport.T0 + 11, "y"), TestRecords.batch(LogPropertySupport.T0 + 12, "z"));
            log.appendAsLeader(three, 0);
            assertThat(log.logEndOffset()).isEqualTo(7);
        } finally {
            LogPropertySupport.deleteRecursively(tmp);
        }
    }

    // ------------------------------------------------------------------ harness: log + model

    static final class Harness {
        final File dir;
        final Cfg cfg;
        final LogConfig config;
        final MockTime time = new MockTime(LogPropertySupport.T0);
        final ManualScheduler scheduler = new ManualScheduler(time);
        PartitionLog log;

        /** Every batch physically present, from the first segment's base offset on. */
        final List<MBatch> batches = new ArrayList<>();
        /** The leader-epoch entries as Kafka maintains them (a covering entry survives log-start moves). */
        final List<EpochEntry> epochs = new ArrayList<>();
        long logStart;
        long hw;
        long leo;
        int epoch;
        int maxSegments;
        int retentionDeleted;
        int truncations;

        Harness(File dir, Cfg cfg) throws IOException {
            this.dir = dir;
            this.cfg = cfg;
            this.config = cfg.toLogConfig();
            this.log = PartitionLog.open(dir, TP, config, time, scheduler);
        }

        void closeQuietly() {
            try {
                log.close();
            } catch (IOException | RuntimeException e) {
                // the test has already failed or is done
            }
        }

        static long pickIn(int pick, long lo, long hi) {
            if (hi <= lo) {
                return lo;
            }
            return lo + Math.floorMod((long) pick, hi - lo + 1);
        }

        void apply(Op op, int step) throws IOException {
            if (op instanceof Append a) {
                append(a);
            } else if (op instanceof Read r) {
                read(r);
            } else if (op instanceof Roll) {
                log.roll();
            } else if (op instanceof Truncate t) {
                truncate(t);
            } else if (op instanceof DeleteBefore d) {
                deleteBefore(d);
            } else if (op instanceof Retention r) {
                retention(r);
            } else if (op instanceof Reopen r) {
                reopen(r.clean());
            } else if (op instanceof Tick t) {
                scheduler.tick(t.ms());
            } else if (op instanceof SetHw s) {
                long target = pickIn(s.pick(), logStart, leo);
                hw = target;
                assertThat(log.updateHighWatermark(target)).as("updateHighWatermark").isEqualTo(target);
            } else if (op instanceof Flush) {
                log.flush();
                assertThat(log.recoveryPoint()).as("recovery point after flush").isEqualTo(leo);
            }
        }

        void append(Append a) {
            epoch += a.epochBump();
            appendBatches(a.batches());
            switch (a.hwMode()) {
                case 0 -> hw = leo;
                case 1 -> {
                }
                default -> hw = pickIn(a.hwPick(), logStart, leo);
            }
            if (a.hwMode() != 1) {
                assertThat(log.updateHighWatermark(hw)).isEqualTo(hw);
            }
        }

        void appendBatches(List<BatchSpec> specs) {
            long now = time.milliseconds();
            MemoryRecords records = LogPropertySupport.build(specs, now);
            LogAppendInfo info = log.appendAsLeader(records, epoch);
            int count = specs.stream().mapToInt(b -> b.records().size()).sum();
            assertThat(info.firstOffset()).as("first offset").isEqualTo(leo);
            assertThat(info.lastOffset()).as("last offset").isEqualTo(leo + count - 1);
            assertThat(info.numRecords()).isEqualTo(count);
            List<MBatch> appended = LogPropertySupport.expectedBatches(records, specs, now, cfg.logAppendTime());
            long expectedBase = leo;
            for (MBatch b : appended) {
                assertThat(b.base()).isEqualTo(expectedBase);
                assertThat(b.epoch()).isEqualTo(epoch);
                expectedBase = b.last() + 1;
            }
            batches.addAll(appended);
            if (epochs.isEmpty() || epoch > epochs.get(epochs.size() - 1).epoch()) {
                long start = leo;
                epochs.removeIf(e -> e.startOffset() >= start);
                epochs.add(new EpochEntry(epoch, leo));
            }
            leo += count;
        }

        void read(Read r) {
            if (r.boundMode() == 4) {
                long bad = (r.offsetPick() & 1) == 0 && logStart > 0 ? logStart - 1 - pickIn(r.boundPick(), 0, Math.min(logStart - 1, 5))
                        : leo + 1 + pickIn(r.boundPick(), 0, 5);
                assertThatThrownBy(() -> log.read(bad, r.maxBytes(), Long.MAX_VALUE, r.minOneBatch()))
                        .as("read(%d) outside [%d, %d]", bad, logStart, leo)
                        .isInstanceOf(OffsetOutOfRangeException.class);
                return;
            }
            long offset = pickIn(r.offsetPick(), logStart, leo);
            long bound = switch (r.boundMode()) {
                case 0 -> leo;
                case 1 -> hw;
                case 2 -> pickIn(r.boundPick(), offset, leo);
                default -> Long.MAX_VALUE;
            };
            LogSlice slice = log.read(offset, r.maxBytes(), bound, r.minOneBatch());
            assertThat(slice.fetchOffset()).isEqualTo(offset);
            List<RBatch> got = LogPropertySupport.readBatches(slice.records());
            int gotBytes = got.stream().mapToInt(RBatch::sizeBytes).sum();
            String what = "read(" + offset + ", maxBytes " + r.maxBytes() + ", bound " + bound + ", minOne " + r.minOneBatch() + ")";
            assertThat(gotBytes).as("%s returns whole batches only", what).isEqualTo(slice.sizeInBytes());

            long effectiveBound = Math.min(bound, leo);
            List<MBatch> readable = new ArrayList<>();
            for (MBatch b : batches) {
                if (b.last() >= offset) {
                    if (b.last() >= effectiveBound) {
                        break;
                    }
                    readable.add(b);
                }
            }
            assertThat(got.size()).as("%s returned more batches than are readable (%s)", what, readable).isLessThanOrEqualTo(readable.size());
            for (int i = 0; i < got.size(); i++) {
                String d = LogPropertySupport.diff(readable.get(i), got.get(i));
                assertThat(d).as("%s batch %d", what, i).isNull();
            }
            for (RBatch b : got) {
                for (MRec rec : b.records()) {
                    assertThat(rec.offset()).as("%s: no record at or above the bound", what).isLessThan(effectiveBound);
                }
            }
            if (!readable.isEmpty() && r.minOneBatch()) {
                assertThat(got).as("%s with minOneBatch returns a batch when %s is readable", what, readable.get(0)).isNotEmpty();
            }
            if (!readable.isEmpty() && readable.get(0).sizeBytes() <= r.maxBytes()) {
                assertThat(got).as("%s returns the first batch %s when it fits", what, readable.get(0)).isNotEmpty();
            }
            if (got.size() > 1 || (!r.minOneBatch() && !got.isEmpty())) {
                assertThat(gotBytes).as("%s respects maxBytes", what).isLessThanOrEqualTo(r.maxBytes());
            }
            // Maximal within a segment, up to the index: the next readable batch in the same segment
            // would not fit, or the read ended on an indexed batch start (reads end on the last
            // indexed batch within maxBytes rather than reading headers to find a later boundary).
            if (!got.isEmpty() && got.size() < readable.size()) {
                MBatch next = readable.get(got.size());
                List<Long> bases = log.segmentBaseOffsets();
                if (segmentOf(bases, next.base()) == segmentOf(bases, got.get(got.size() - 1).base())
                        && (long) gotBytes + next.sizeBytes() <= r.maxBytes()) {
                    dev.varve.storage.index.OffsetIndex index = log.segments().floor(next.base()).offsetIndex();
                    boolean nextIsIndexed = false;
                    for (int i = 0; i < index.entries(); i++) {
                        nextIsIndexed |= index.entry(i).offset() == next.last();
                    }
                    assertThat(nextIsIndexed).as("%s stopped before %s although it fits and is not indexed", what, next)
                            .isTrue();
                }
            }
        }

        static long segmentOf(List<Long> bases, long offset) {
            long s = -1;
            for (long b : bases) {
                if (b <= offset) {
                    s = b;
                }
            }
            return s;
        }

        void truncate(Truncate t) {
            long target;
            if (t.belowStart() && logStart > 0) {
                target = pickIn(t.pick(), 0, logStart - 1);
            } else {
                target = pickIn(t.pick(), logStart, leo);
            }
            boolean changed = log.truncateTo(target);
            if (target >= leo) {
                assertThat(changed).as("truncateTo(%d) at/after the end", target).isFalse();
                // nothing is cut, but an epoch starting at the log end (no record carries it, e.g. after
                // DeleteRecords up to the end) is dropped, as Kafka does
                epochs.removeIf(e -> e.startOffset() >= leo);
                return;
            }
            assertThat(changed).as("truncateTo(%d)", target).isTrue();
            truncations++;
            if (target < logStart) {
                batches.clear();
                epochs.clear();
                logStart = target;
                leo = target;
                hw = target;
                return;
            }
            MBatch victim = LogPropertySupport.batchOf(batches, target);
            assertThat(victim).as("model batch holding %d", target).isNotNull();
            if (victim.base() < logStart) {
                // The batch holding the target starts below the log start offset (DeleteRecords cut it):
                // removing it whole leaves nothing readable, so expect what a truncation below the log
                // start does: an empty log starting at the target.
                batches.clear();
                epochs.clear();
                logStart = target;
                leo = target;
                hw = target;
                return;
            }
            batches.removeIf(b -> b.base() >= victim.base());
            leo = victim.base();
            epochs.removeIf(e -> e.startOffset() >= leo);
            hw = Math.min(hw, leo);
        }

        void deleteBefore(DeleteBefore d) {
            long target = pickIn(d.pick(), Math.max(0, logStart - 2), hw);
            long before = logStart;
            long result = log.deleteRecordsBefore(target);
            moveLogStart(Math.max(logStart, target));
            assertThat(result).as("deleteRecordsBefore(%d)", target).isEqualTo(logStart);
            List<Long> bases = log.segmentBaseOffsets();
            assertThat(bases.get(0)).as("first segment base").isLessThanOrEqualTo(logStart);
            if (bases.size() > 1 && target > before) {
                assertThat(bases.get(1)).as("segments wholly below the log start %d are deleted", logStart).isGreaterThan(logStart);
            }
            pruneBelowFirstSegment();
        }

        void moveLogStart(long newStart) {
            logStart = newStart;
            while (epochs.size() > 1 && epochs.get(1).startOffset() <= newStart) {
                epochs.remove(0);
            }
            if (!epochs.isEmpty() && epochs.get(0).startOffset() < newStart) {
                epochs.set(0, new EpochEntry(epochs.get(0).epoch(), newStart));
            }
        }

        /** Drops model batches whose segment is gone; none of them may be visible. */
        void pruneBelowFirstSegment() {
            long firstBase = log.segmentBaseOffsets().get(0);
            for (MBatch b : batches) {
                if (b.base() < firstBase) {
                    assertThat(b.last()).as("%s deleted although the log start is %d", b, logStart).isLessThan(logStart);
                }
            }
            batches.removeIf(b -> b.base() < firstBase);
        }

        void retention(Retention r) {
            LogConfig base = log.config();
            LogConfig cfgPass = switch (r.kind()) {
                case 0 -> base.with(TopicConfig.RETENTION_BYTES_CONFIG, pickIn(r.pick(), 0, log.size() + log.size() / 5 + 1));
                case 1 -> base.with(LogConfig.RETENTION_MESSAGES_CONFIG, pickIn(r.pick(), 0, leo - logStart + 5));
                default -> base.with(TopicConfig.RETENTION_MS_CONFIG, pickIn(r.pick(), 0, 20_000_000L));
            };
            scheduler.tick(r.advanceMs());
            log.updateConfig(cfgPass);

            // The oracle: the spec of retention applied to what the model knows about each segment.
            List<LogSegment> segs = new ArrayList<>(log.segments().all());
            int n = segs.size();
            long total = 0;
            for (LogSegment s : segs) {
                total += s.size();
            }
            long now = time.milliseconds();
            int expected = 0;
            long prefixBytes = 0;
            boolean allOld = true;
            for (int i = 0; i < n; i++) {
                LogSegment s = segs.get(i);
                long next = i + 1 < n ? segs.get(i + 1).baseOffset() : leo;
                boolean emptyActive = i == n - 1 && s.size() == 0;
                if (emptyActive || next > hw) {
                    break;
                }
                long largestTs = largestTimestamp(s.baseOffset(), next, s);
                allOld &= cfgPass.retentionMs() >= 0 && now - largestTs > cfgPass.retentionMs();
                prefixBytes += s.size();
                boolean byStart = next <= logStart;
                boolean byBytes = cfgPass.retentionBytes() >= 0 && total - prefixBytes >= cfgPass.retentionBytes();
                boolean byCount = cfgPass.retentionMessages() >= 0 && leo - next >= cfgPass.retentionMessages();
                if (!(byStart || allOld || byBytes || byCount)) {
                    break;
                }
                expected = i + 1;
            }
            long hwBefore = hw;
            long expectedFirstBase = expected == 0 ? segs.get(0).baseOffset() : expected == n ? leo : segs.get(expected).baseOffset();

            int deleted = log.deleteOldSegments();
            retentionDeleted += deleted;
            log.updateConfig(base);

            assertThat(deleted).as("segments deleted by %s with %s (segments %s)", r, cfgPass, log.segmentBaseOffsets()).isEqualTo(expected);
            assertThat(log.segmentBaseOffsets().get(0)).as("first segment after retention").isEqualTo(expectedFirstBase);
            moveLogStart(Math.max(logStart, expectedFirstBase));
            assertThat(logStart).as("retention deleted above the high watermark").isLessThanOrEqualTo(hwBefore);
            hw = Math.max(hw, logStart);
            pruneBelowFirstSegment();
        }

        long largestTimestamp(long base, long next, LogSegment s) {
            long max = -1;
            for (MBatch b : batches) {
                if (b.base() >= base && b.base() < next) {
                    max = Math.max(max, b.maxTimestamp());
                }
            }
            if (max >= 0) {
                return max;
            }
            try {
                return s.lastModifiedMs();
            } catch (IOException e) {
                throw new AssertionError(e);
            }
        }

        void reopen(boolean clean) throws IOException {
            long start = log.logStartOffset();
            long rp = log.recoveryPoint();
            long hwm = log.highWatermark();
            log.close();
            log = PartitionLog.open(dir, TP, config, time, scheduler, start, rp, hwm, clean);
            // Loading drops epoch entries that start at the log end (as Kafka does), e.g. the entry
            // kept for an empty log after retention removed every segment.
            epochs.removeIf(e -> e.startOffset() >= leo);
            if (clean) {
                assertThat(log.recoveryPoint()).as("recovery point after a clean reopen").isEqualTo(leo);
            }
        }

        // -------------------------------------------------------------- invariants

        void checkInvariants(int step, Op op) {
            String at = "after step " + step + " " + op + ": ";
            assertThat(log.logEndOffset()).as(at + "log end offset").isEqualTo(leo);
            assertThat(log.logStartOffset()).as(at + "log start offset").isEqualTo(logStart);
            assertThat(log.highWatermark()).as(at + "high watermark").isEqualTo(hw);
            assertThat(logStart).as(at + "log start <= HW <= log end").isLessThanOrEqualTo(hw);
            assertThat(hw).as(at + "HW <= log end").isLessThanOrEqualTo(leo);

            checkSegments(at);
            checkFullRead(at, step);
            checkTimestamps(at, step);
            assertThat(log.epochCache().entries()).as(at + "leader epoch cache").isEqualTo(epochs);
            for (MBatch b : batches) {
                if (b.last() >= logStart) {
                    assertThat(log.epochCache().epochForOffset(Math.max(b.base(), logStart)))
                            .as(at + "epochForOffset(%d) of %s", Math.max(b.base(), logStart), b).hasValue(b.epoch());
                }
            }
            checkFiles(at);
        }

        /** Every segment holds exactly the model's batches in its offset range, back to back. */
        void checkSegments(String at) {
            List<LogSegment> segs = new ArrayList<>(log.segments().all());
            assertThat(segs).as(at + "segments").isNotEmpty();
            assertThat(segs.get(0).baseOffset()).as(at + "first segment base <= log start").isLessThanOrEqualTo(logStart);
            LogSegment active = segs.get(segs.size() - 1);
            assertThat(active.baseOffset()).as(at + "active segment base <= log end").isLessThanOrEqualTo(leo);
            int mi = 0;
            for (int i = 0; i < segs.size(); i++) {
                LogSegment s = segs.get(i);
                long next = i + 1 < segs.size() ? segs.get(i + 1).baseOffset() : Long.MAX_VALUE;
                List<RBatch> inFile = LogPropertySupport.readBatches(s.log());
                int covered = inFile.stream().mapToInt(RBatch::sizeBytes).sum();
                assertThat(covered).as(at + "segment %d holds whole batches only", s.baseOffset()).isEqualTo(s.size());
                for (RBatch b : inFile) {
                    assertThat(mi).as(at + "segment %d holds batch %d-%d the model does not have", s.baseOffset(), b.base(), b.last())
                            .isLessThan(batches.size());
                    MBatch m = batches.get(mi++);
                    assertThat(LogPropertySupport.diff(m, b)).as(at + "segment %d", s.baseOffset()).isNull();
                    assertThat(b.base()).as(at + "batch %s in segment %d", m, s.baseOffset()).isGreaterThanOrEqualTo(s.baseOffset());
                    assertThat(b.last()).as(at + "batch %s in segment %d", m, s.baseOffset()).isLessThan(next);
                }
            }
            assertThat(mi).as(at + "model batches missing from the segments: %s", batches.subList(mi, batches.size()))
                    .isEqualTo(batches.size());
        }

        void checkFullRead(String at, int step) {
            int chunk = 1 + new Random(step * 31L + 7).nextInt(5000);
            List<RBatch> got = LogPropertySupport.readAll(log, logStart, leo, chunk);
            List<MBatch> expected = batches.stream().filter(b -> b.last() >= logStart).toList();
            assertThat(got.size()).as(at + "batches read from %d (chunk %d)", logStart, chunk).isEqualTo(expected.size());
            for (int i = 0; i < got.size(); i++) {
                assertThat(LogPropertySupport.diff(expected.get(i), got.get(i))).as(at + "full read batch %d", i).isNull();
            }
        }

        void checkTimestamps(String at, int step) {
            Random random = new Random(step * 17L + 3);
            List<MBatch> visible = batches.stream().filter(b -> b.last() >= logStart).toList();
            for (long t : LogPropertySupport.probeTimestamps(visible, random, 4)) {
                Optional<MRec> want = LogPropertySupport.firstAtOrAfter(batches, logStart, t);
                for (long maxOffset : new long[]{leo, hw}) {
                    Optional<FileRecords.TimestampAndOffset> got = log.offsetForTimestamp(t, maxOffset);
                    Optional<MRec> w = want.filter(rec -> rec.offset() < maxOffset);
                    assertThat(got.map(g -> g.offset)).as(at + "offsetForTimestamp(%d, %d)", t, maxOffset)
                            .isEqualTo(w.map(MRec::offset));
                    if (got.isPresent()) {
                        assertThat(got.get().timestamp).as(at + "timestamp of offsetForTimestamp(%d)", t).isEqualTo(w.get().timestamp());
                        MBatch b = LogPropertySupport.batchOf(batches, got.get().offset);
                        assertThat(got.get().leaderEpoch).as(at + "epoch of offsetForTimestamp(%d)", t).isEqualTo(Optional.of(b.epoch()));
                    }
                }
            }
        }

        /** Segment files on disk are exactly the live segments' (plus *.deleted ones awaiting deletion). */
        void checkFiles(String at) {
            File[] files = dir.listFiles();
            assertThat(files).isNotNull();
            Set<String> live = new TreeSet<>();
            Set<String> deleted = new HashSet<>();
            for (File f : files) {
                String name = f.getName();
                if (name.endsWith(LogFileNames.DELETED_SUFFIX)) {
                    deleted.add(name);
                } else if (name.endsWith(LogFileNames.LOG_SUFFIX) || name.endsWith(LogFileNames.INDEX_SUFFIX)
                        || name.endsWith(LogFileNames.TIME_INDEX_SUFFIX)) {
                    live.add(name);
                }
            }
            Set<String> expected = new TreeSet<>();
            List<Long> bases = List.copyOf(log.segmentBaseOffsets());
            for (long b : bases) {
                expected.add(LogFileNames.filenamePrefix(b) + LogFileNames.LOG_SUFFIX);
                expected.add(LogFileNames.filenamePrefix(b) + LogFileNames.INDEX_SUFFIX);
                expected.add(LogFileNames.filenamePrefix(b) + LogFileNames.TIME_INDEX_SUFFIX);
            }
            // Index files are created lazily: the active segment's may be absent while they have no entries.
            LogSegment active = log.segments().active();
            if (active.offsetIndex().entries() == 0 && !live.contains(LogFileNames.filenamePrefix(active.baseOffset()) + LogFileNames.INDEX_SUFFIX)) {
                expected.remove(LogFileNames.filenamePrefix(active.baseOffset()) + LogFileNames.INDEX_SUFFIX);
            }
            if (active.timeIndex().entries() == 0 && !live.contains(LogFileNames.filenamePrefix(active.baseOffset()) + LogFileNames.TIME_INDEX_SUFFIX)) {
                expected.remove(LogFileNames.filenamePrefix(active.baseOffset()) + LogFileNames.TIME_INDEX_SUFFIX);
            }
            assertThat(live).as(at + "segment files in %s", dir).isEqualTo(expected);
            if (scheduler.pending("delete-segment") == 0) {
                assertThat(deleted).as(at + "*.deleted files with no deletion pending").isEmpty();
            }
        }
    }
}
