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
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;
import net.jqwik.api.statistics.Statistics;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.record.internal.FileRecords;
import org.apache.kafka.common.record.internal.MemoryRecords;

import java.io.File;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Crash recovery at random points: batches (several leader epochs, tiny segments) are appended, the
 * log is flushed at a random point, more is appended, and then the files are damaged the way a crash
 * can damage them: the unflushed tail of a segment is cut (anywhere, or at a batch boundary),
 * overwritten or followed by garbage; index files of any segment are deleted, cut or scribbled on;
 * the leader-epoch checkpoint is lost or mangled. The log is then opened as after an unclean
 * shutdown, and must come back as exactly the longest undamaged prefix of what was appended (at
 * least everything flushed), with consistent indexes and epochs, accept appends, and survive a clean
 * restart unchanged.
 *
 * <p>Overwrites never touch a batch's baseOffset or partitionLeaderEpoch fields: the v2 CRC does
 * not cover them, so no recovery can notice such damage (see the report).
 */
class CrashRecoveryProperties {
    private static final TopicPartition TP = new TopicPartition("crash", 0);
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

    // ------------------------------------------------------------------ scenario

    /** One append: a batch and how much the leader epoch grows before it. */
    record Step(BatchSpec batch, int epochBump) {
    }

    sealed interface Damage permits CutLog, Overwrite, Garbage, IndexDamage, EpochDamage {
    }

    /** Cut an unflushed segment's log: atBoundary cuts at a batch boundary after the flushed size. */
    record CutLog(int segmentPick, int positionPick, boolean atBoundary) implements Damage {
    }

    /** Overwrite 1..16 bytes after the flushed size (never the CRC-less header fields). */
    record Overwrite(int segmentPick, int positionPick, int length, int seed) implements Damage {
    }

    /** Append garbage (random bytes, or zeros like a preallocated tail) to an unflushed or the last segment. */
    record Garbage(int segmentPick, int length, boolean zeros, int seed) implements Damage {
    }

    /** kind: 0 delete, 1 cut to a random length, 2 scribble random bytes, 3 append zeros. */
    record IndexDamage(int segmentPick, boolean timeIndex, int kind, int pick, int seed) implements Damage {
    }

    /** kind: 0 delete, 1 garbage, 2 drop the last line, 3 unknown version. */
    record EpochDamage(int kind, int seed) implements Damage {
    }

    record Scenario(List<Step> steps, int flushAfter, List<Damage> damages, boolean closeBeforeCrash, int hwPick,
                    List<Step> after) {
    }

    @Provide
    Arbitrary<Cfg> configs() {
        return LogPropertySupport.configs();
    }

    private static Arbitrary<Step> steps() {
        return Combinators.combine(LogPropertySupport.batchSpecs(12),
                Arbitraries.<Integer>frequencyOf(Tuple2.of(6, Arbitraries.just(0)), Tuple2.of(1, Arbitraries.integers().between(1, 2))))
                .as(Step::new);
    }

    private static Arbitrary<Damage> logDamages() {
        Arbitrary<Integer> picks = Arbitraries.integers().between(0, Integer.MAX_VALUE);
        return Arbitraries.<Damage>frequencyOf(
                Tuple2.of(3, Combinators.combine(picks, picks, Arbitraries.of(true, false)).as(CutLog::new)),
                Tuple2.of(2, Combinators.combine(picks, picks, Arbitraries.integers().between(1, 16), Arbitraries.integers())
                        .as(Overwrite::new)),
                Tuple2.of(2, Combinators.combine(picks, Arbitraries.integers().between(1, 300), Arbitraries.of(true, false),
                        Arbitraries.integers()).as(Garbage::new)));
    }

    private static Arbitrary<Damage> indexDamages() {
        Arbitrary<Integer> picks = Arbitraries.integers().between(0, Integer.MAX_VALUE);
        return Combinators.combine(picks, Arbitraries.of(true, false), Arbitraries.integers().between(0, 3), picks,
                Arbitraries.integers()).as(IndexDamage::new);
    }

    private static Arbitrary<Damage> epochDamages() {
        return Combinators.combine(Arbitraries.integers().between(0, 3), Arbitraries.integers()).as(EpochDamage::new);
    }

    private static Arbitrary<Scenario> scenarios(Arbitrary<Damage> damage) {
        return Combinators.combine(
                steps().list().ofMinSize(5).ofMaxSize(60),
                Arbitraries.integers().between(0, Integer.MAX_VALUE),
                damage.list().ofMinSize(0).ofMaxSize(3),
                Arbitraries.of(true, false),
                Arbitraries.integers().between(0, Integer.MAX_VALUE),
                steps().list().ofMinSize(1).ofMaxSize(5)
        ).as(Scenario::new);
    }

    @Provide
    Arbitrary<Scenario> logCrashes() {
        return scenarios(logDamages());
    }

    @Provide
    Arbitrary<Scenario> indexCrashes() {
        return scenarios(indexDamages());
    }

    @Provide
    Arbitrary<Scenario> epochCrashes() {
        return scenarios(epochDamages());
    }

    @Provide
    Arbitrary<Scenario> mixedCrashes() {
        return scenarios(Arbitraries.oneOf(logDamages(), indexDamages(), epochDamages()));
    }

    // ------------------------------------------------------------------ properties

    /** Torn, cut, overwritten or garbage-extended unflushed log tails. */
    @Property(tries = 100)
    void recoversTheUndamagedPrefixOfTornLogFiles(@ForAll("configs") Cfg cfg, @ForAll("logCrashes") Scenario scenario) throws IOException {
        run(cfg, scenario);
    }

    /** Lost, cut or scribbled index files, of flushed segments too. */
    @Property(tries = 100)
    void rebuildsDamagedIndexes(@ForAll("configs") Cfg cfg, @ForAll("indexCrashes") Scenario scenario) throws IOException {
        run(cfg, scenario);
    }

    /** A lost or mangled leader-epoch checkpoint. */
    @Property(tries = 100)
    void rebuildsTheLeaderEpochCache(@ForAll("configs") Cfg cfg, @ForAll("epochCrashes") Scenario scenario) throws IOException {
        run(cfg, scenario);
    }

    /** All kinds of damage together. */
    @Property(tries = 100)
    void recoversFromMixedDamage(@ForAll("configs") Cfg cfg, @ForAll("mixedCrashes") Scenario scenario) throws IOException {
        run(cfg, scenario);
    }

    // ------------------------------------------------------------------ minimal reproductions of bugs the properties found

    private interface LogBody {
        void accept(File dir, MockTime time, ManualScheduler scheduler) throws IOException;
    }

    private static void inTempDir(LogBody body) throws IOException {
        Path tmp = LogPropertySupport.newTempDir("varve-crash-example");
        MockTime time = new MockTime(LogPropertySupport.T0);
        try {
            body.accept(tmp.resolve("crash-0").toFile(), time, new ManualScheduler(time));
        } finally {
            LogPropertySupport.deleteRecursively(tmp);
        }
    }

    private static final long T = LogPropertySupport.T0;

    /**
     * Bug 3: a missing leader-epoch checkpoint is read as an empty cache and not rebuilt from the
     * batches (only a malformed one is), so after an unclean start the cache holds only the epochs of
     * the recovered tail.
     */
    @Example
    void aLostLeaderEpochCheckpointIsRebuilt() throws IOException {
        inTempDir((dir, time, scheduler) -> {
            long rp;
            try (PartitionLog log = PartitionLog.open(dir, TP, LogConfig.DEFAULT, time, scheduler)) {
                log.appendAsLeader(TestRecords.batch(T, "a", "b"), 1);   // 0-1, epoch 1
                log.appendAsLeader(TestRecords.batch(T, "c"), 2);        // 2, epoch 2
                log.roll();
                log.flush();
                rp = log.recoveryPoint();
                log.appendAsLeader(TestRecords.batch(T, "d"), 3);        // 3, epoch 3
            }
            Files.delete(new File(dir, LogFileNames.LEADER_EPOCH_CHECKPOINT).toPath());
            try (PartitionLog log = PartitionLog.open(dir, TP, LogConfig.DEFAULT, time, scheduler, 0, rp, 0, false)) {
                assertThat(log.epochCache().entries())
                        .containsExactly(new EpochEntry(1, 0), new EpochEntry(2, 2), new EpochEntry(3, 3));
            }
        });
    }

    /**
     * Bug 4: a missing (or shortened) time index of a segment below the recovery point passes the
     * unclean-start check (an empty index is "ordered") and is not rebuilt: the segment then reports
     * no timestamps and ListOffsets by time skips it.
     */
    @Example
    void aLostTimeIndexOfAFlushedSegmentIsRebuilt() throws IOException {
        inTempDir((dir, time, scheduler) -> {
            long rp;
            try (PartitionLog log = PartitionLog.open(dir, TP, LogConfig.DEFAULT, time, scheduler)) {
                log.appendAsLeader(TestRecords.batch(T + 100, "a"), 0);
                log.appendAsLeader(TestRecords.batch(T + 200, "b"), 0);
                log.roll();
                log.appendAsLeader(TestRecords.batch(T + 300, "c"), 0);
                log.flush();
                rp = log.recoveryPoint();
            }
            Files.delete(LogFileNames.timeIndexFile(dir, 0).toPath());
            try (PartitionLog log = PartitionLog.open(dir, TP, LogConfig.DEFAULT, time, scheduler, 0, rp, 0, false)) {
                assertThat(log.offsetForTimestamp(T + 100, Long.MAX_VALUE).map(t -> t.offset)).hasValue(0L);
            }
        });
    }

    /**
     * Bug 5: an unflushed segment that lost its tail at a batch boundary (a power failure can keep a
     * later file's data and lose an earlier one's) recovers "cleanly" (nothing to cut), so the
     * segments after it are kept and the log has a hole: offset 1 is gone but 2 and 3 are readable.
     */
    @Example
    void recoveryNeverLeavesAHoleBetweenSegments() throws IOException {
        inTempDir((dir, time, scheduler) -> {
            int firstBatchBytes;
            try (PartitionLog log = PartitionLog.open(dir, TP, LogConfig.DEFAULT, time, scheduler)) {
                firstBatchBytes = log.appendAsLeader(TestRecords.batch(T, "a"), 0).validBytes(); // 0
                log.appendAsLeader(TestRecords.batch(T, "b"), 0);                               // 1
                log.roll();
                log.appendAsLeader(TestRecords.batch(T, "c"), 0);                               // 2
                log.roll();
                log.appendAsLeader(TestRecords.batch(T, "d"), 0);                               // 3
            }
            try (RandomAccessFile raf = new RandomAccessFile(LogFileNames.logFile(dir, 0), "rw")) {
                raf.setLength(firstBatchBytes); // segment 0 lost batch 1
            }
            try (PartitionLog log = PartitionLog.open(dir, TP, LogConfig.DEFAULT, time, scheduler, 0, 0, 0, false)) {
                List<Long> offsets = new ArrayList<>();
                for (RBatch b : LogPropertySupport.readAll(log, 0, log.logEndOffset(), 1)) {
                    offsets.add(b.base());
                }
                assertThat(offsets).as("offsets of the recovered log (end %d)", log.logEndOffset()).containsExactly(0L);
            }
        });
    }

    /**
     * Bug 6 (bit rot rather than a crash): after an unclean shutdown the indexes of segments below
     * the recovery point are only checked for ordering, so one changed byte that keeps the entries
     * ordered sends reads into the middle of a batch (CorruptRecordException) or makes ListOffsets by
     * time wrong.
     */
    @Example
    void aPlausibleButWrongIndexEntryOfAFlushedSegmentIsNotTrusted() throws IOException {
        inTempDir((dir, time, scheduler) -> {
            LogConfig config = LogConfig.fromMap(Map.of(org.apache.kafka.common.config.TopicConfig.INDEX_INTERVAL_BYTES_CONFIG, 0));
            long rp;
            try (PartitionLog log = PartitionLog.open(dir, TP, config, time, scheduler)) {
                for (int i = 0; i < 4; i++) {
                    log.appendAsLeader(TestRecords.batch(T + i, "value-" + i), 0); // one entry per batch after the first
                }
                log.roll();
                log.appendAsLeader(TestRecords.batch(T + 9, "tail"), 0);
                log.flush();
                rp = log.recoveryPoint();
            }
            File index = LogFileNames.offsetIndexFile(dir, 0);
            try (RandomAccessFile raf = new RandomAccessFile(index, "rw")) {
                raf.seek(8 + 4);                 // entry 1 (offset 2): its position
                int position = raf.readInt();
                raf.seek(8 + 4);
                raf.writeInt(position - 1);      // still between its neighbours
            }
            try (PartitionLog log = PartitionLog.open(dir, TP, config, time, scheduler, 0, rp, 0, false)) {
                List<RBatch> got = LogPropertySupport.readBatches(log.read(2, 1, Long.MAX_VALUE, true).records());
                assertThat(got).extracting(RBatch::base).containsExactly(2L);
            }
        });
    }

    // ------------------------------------------------------------------ the crash

    /** Where a model batch sits on disk. */
    record Placed(MBatch batch, long segmentBase, int position) {
        int end() {
            return position + batch.sizeBytes();
        }
    }

    private void run(Cfg cfg, Scenario sc) throws IOException {
        Path tmp = LogPropertySupport.newTempDir("varve-crash-prop");
        File dir = tmp.resolve(TP.topic() + "-" + TP.partition()).toFile();
        MockTime time = new MockTime(LogPropertySupport.T0);
        ManualScheduler scheduler = new ManualScheduler(time);
        LogConfig config = cfg.toLogConfig();
        PartitionLog log = PartitionLog.open(dir, TP, config, time, scheduler);
        PartitionLog recovered = null;
        try {
            // 1. Append, flushing once at a random point.
            List<MBatch> model = new ArrayList<>();
            int flushAfter = Math.floorMod(sc.flushAfter(), sc.steps().size() + 1);
            Map<Long, Integer> flushedSizes = new HashMap<>();
            int epoch = 0;
            for (int i = 0; i <= sc.steps().size(); i++) {
                if (i == flushAfter) {
                    log.flush();
                    for (LogSegment s : log.segments().all()) {
                        flushedSizes.put(s.baseOffset(), s.size());
                    }
                }
                if (i == sc.steps().size()) {
                    break;
                }
                Step step = sc.steps().get(i);
                epoch += step.epochBump();
                model.addAll(append(log, time, cfg, List.of(step.batch()), epoch));
                time.advance(7);
            }
            long recoveryPoint = log.recoveryPoint();
            long leo = log.logEndOffset();
            long hw = Math.floorMod((long) sc.hwPick(), leo + 1);
            log.updateHighWatermark(hw);
            int flushedBatches = (int) model.stream().filter(b -> b.last() < recoveryPoint).count();
            assertThat(recoveryPoint).as("recovery point is at a batch boundary")
                    .isEqualTo(flushedBatches == 0 ? 0 : model.get(flushedBatches - 1).last() + 1);

            // Where every batch lies.
            List<LogSegment> segs = new ArrayList<>(log.segments().all());
            List<Placed> placed = new ArrayList<>();
            int mi = 0;
            for (LogSegment s : segs) {
                for (RBatch b : LogPropertySupport.readBatches(s.log())) {
                    assertThat(LogPropertySupport.diff(model.get(mi), b)).as("before the crash").isNull();
                    placed.add(new Placed(model.get(mi++), s.baseOffset(), b.position()));
                }
            }
            assertThat(mi).isEqualTo(model.size());

            // 2. Crash: abandon the log (or close it first) and damage its files.
            if (sc.closeBeforeCrash()) {
                log.close();
            }
            log = null;
            Crash crash = new Crash(dir, segs, placed, flushedSizes);
            for (Damage d : sc.damages()) {
                crash.apply(d);
            }
            int expectedBatches = crash.firstDamagedBatch;
            Statistics.label("damage").collect(sc.damages().stream().map(d -> d.getClass().getSimpleName()).sorted().toList());
            Statistics.label("batches lost").collect(model.size() - expectedBatches == 0 ? "none"
                    : expectedBatches == flushedBatches ? "all unflushed" : "some");

            // 3. Recover.
            recovered = PartitionLog.open(dir, TP, config, time, scheduler, 0, recoveryPoint, hw, false);
            String what = "recovery after " + crash.applied + " (recovery point " + recoveryPoint + ", flushed batches "
                    + flushedBatches + " of " + model.size() + ")";
            assertThat(expectedBatches).as("test: flushed batches are never damaged").isGreaterThanOrEqualTo(flushedBatches);
            List<MBatch> survivors = new ArrayList<>(model.subList(0, expectedBatches));
            checkLog(recovered, survivors, what);
            assertThat(recovered.recoveryPoint()).as(what + ": recovery point").isLessThanOrEqualTo(recovered.logEndOffset());
            assertThat(recovered.highWatermark()).as(what + ": high watermark").isLessThanOrEqualTo(recovered.logEndOffset());

            // 4. It takes appends (with a newer epoch) and reads them back.
            int newEpoch = epoch + 1;
            for (Step step : sc.after()) {
                newEpoch += step.epochBump();
                survivors.addAll(append(recovered, time, cfg, List.of(step.batch()), newEpoch));
            }
            checkLog(recovered, survivors, what + " and new appends");

            // 5. A clean restart changes nothing.
            List<Long> segmentsBefore = recovered.segmentBaseOffsets();
            List<EpochEntry> epochsBefore = recovered.epochCache().entries();
            long start = recovered.logStartOffset();
            long rp = recovered.recoveryPoint();
            long hwm = recovered.highWatermark();
            recovered.close();
            recovered = PartitionLog.open(dir, TP, config, time, scheduler, start, rp, hwm, true);
            checkLog(recovered, survivors, what + ", new appends and a clean restart");
            assertThat(recovered.segmentBaseOffsets()).as("segments after a clean restart").isEqualTo(segmentsBefore);
            assertThat(recovered.epochCache().entries()).as("epochs after a clean restart").isEqualTo(epochsBefore);
        } finally {
            if (recovered != null) {
                try {
                    recovered.close();
                } catch (IOException | RuntimeException e) {
                    // already failing
                }
            }
            LogPropertySupport.deleteRecursively(tmp);
        }
    }

    private static List<MBatch> append(PartitionLog log, MockTime time, Cfg cfg, List<BatchSpec> specs, int epoch) {
        long now = time.milliseconds();
        MemoryRecords records = LogPropertySupport.build(specs, now);
        long leo = log.logEndOffset();
        LogAppendInfo info = log.appendAsLeader(records, epoch);
        assertThat(info.firstOffset()).as("append offset").isEqualTo(leo);
        return LogPropertySupport.expectedBatches(records, specs, now, cfg.logAppendTime());
    }

    /** The log holds exactly {@code expected} from offset 0, in reads, segment files, epochs and time lookups. */
    private static void checkLog(PartitionLog log, List<MBatch> expected, String what) {
        long leo = expected.isEmpty() ? 0 : expected.get(expected.size() - 1).last() + 1;
        assertThat(log.logStartOffset()).as(what + ": log start").isZero();
        List<RBatch> got = LogPropertySupport.readAll(log, 0, Math.max(leo, log.logEndOffset()), 2500);
        for (int i = 0; i < Math.min(got.size(), expected.size()); i++) {
            assertThat(LogPropertySupport.diff(expected.get(i), got.get(i))).as(what + ": batch %d", i).isNull();
        }
        assertThat(got.size()).as(what + ": batches read back (expected %s, got %s)", describe(expected), describeRead(got))
                .isEqualTo(expected.size());
        assertThat(log.logEndOffset()).as(what + ": log end offset").isEqualTo(leo);

        // Segment files hold whole, contiguous batches and nothing else.
        List<LogSegment> segs = new ArrayList<>(log.segments().all());
        int mi = 0;
        for (int i = 0; i < segs.size(); i++) {
            LogSegment s = segs.get(i);
            long next = i + 1 < segs.size() ? segs.get(i + 1).baseOffset() : Long.MAX_VALUE;
            List<RBatch> inFile = LogPropertySupport.readBatches(s.log());
            assertThat(inFile.stream().mapToInt(RBatch::sizeBytes).sum()).as(what + ": segment %d holds whole batches", s.baseOffset())
                    .isEqualTo(s.size());
            for (RBatch b : inFile) {
                assertThat(mi).as(what + ": extra batch %d-%d in segment %d", b.base(), b.last(), s.baseOffset()).isLessThan(expected.size());
                assertThat(LogPropertySupport.diff(expected.get(mi++), b)).as(what + ": segment %d", s.baseOffset()).isNull();
                assertThat(b.base()).isGreaterThanOrEqualTo(s.baseOffset());
                assertThat(b.last()).isLessThan(next);
            }
            // Index files are created lazily: only the active segment's may be absent, and only while empty.
            boolean lazy = i == segs.size() - 1;
            if (!lazy || s.offsetIndex().entries() > 0) {
                assertThat(LogFileNames.offsetIndexFile(log.dir(), s.baseOffset())).as(what + ": offset index of %d", s.baseOffset()).exists();
            }
            if (!lazy || s.timeIndex().entries() > 0) {
                assertThat(LogFileNames.timeIndexFile(log.dir(), s.baseOffset())).as(what + ": time index of %d", s.baseOffset()).exists();
            }
        }
        assertThat(mi).as(what + ": batches in segment files").isEqualTo(expected.size());

        // Reads from every batch's offsets (exercise the offset index).
        for (MBatch b : expected) {
            for (long o : new long[]{b.base(), b.last()}) {
                LogSlice slice = log.read(o, 1, leo, true);
                List<RBatch> first = LogPropertySupport.readBatches(slice.records());
                assertThat(first).as(what + ": read(%d)", o).hasSize(1);
                assertThat(LogPropertySupport.diff(b, first.get(0))).as(what + ": read(%d)", o).isNull();
            }
        }

        // Leader epochs: each entry starts at the first offset of its epoch in the log.
        assertThat(log.epochCache().entries()).as(what + ": leader epoch cache")
                .isEqualTo(LogPropertySupport.expectedEpochs(expected, 0));

        // ListOffsets by time (exercises the time index and the segments' largest timestamps).
        Random random = new Random(expected.size());
        for (long t : LogPropertySupport.probeTimestamps(expected, random, 6)) {
            Optional<MRec> want = LogPropertySupport.firstAtOrAfter(expected, 0, t);
            Optional<FileRecords.TimestampAndOffset> found = log.offsetForTimestamp(t, leo);
            assertThat(found.map(f -> f.offset)).as(what + ": offsetForTimestamp(%d)", t).isEqualTo(want.map(MRec::offset));
        }
    }

    private static String describe(List<MBatch> batches) {
        return batches.isEmpty() ? "none" : batches.size() + " batches 0-" + batches.get(batches.size() - 1).last();
    }

    private static String describeRead(List<RBatch> batches) {
        StringBuilder sb = new StringBuilder();
        long expectNext = 0;
        for (RBatch b : batches) {
            if (b.base() != expectNext) {
                sb.append(" GAP ").append(expectNext).append("-").append(b.base() - 1);
            }
            expectNext = b.last() + 1;
        }
        return batches.size() + " batches" + (batches.isEmpty() ? "" : " 0-" + (expectNext - 1)) + sb;
    }

    /** Applies damage to the files of an abandoned log and tracks the first batch it destroys. */
    static final class Crash {
        final File dir;
        final List<LogSegment> segments;
        final List<Placed> placed;
        final Map<Long, Integer> flushedSizes;
        final List<String> applied = new ArrayList<>();
        int firstDamagedBatch;

        Crash(File dir, List<LogSegment> segments, List<Placed> placed, Map<Long, Integer> flushedSizes) {
            this.dir = dir;
            this.segments = segments;
            this.placed = placed;
            this.flushedSizes = flushedSizes;
            this.firstDamagedBatch = placed.size();
        }

        int flushedSize(long base) {
            return flushedSizes.getOrDefault(base, 0);
        }

        File logFile(long base) {
            return LogFileNames.logFile(dir, base);
        }

        /** Segments with bytes written after the flush. */
        List<Long> unflushed() {
            List<Long> out = new ArrayList<>();
            for (LogSegment s : segments) {
                if (logFile(s.baseOffset()).length() > flushedSize(s.baseOffset())) {
                    out.add(s.baseOffset());
                }
            }
            return out;
        }

        int batchIndexAt(long base, long position) {
            for (int i = 0; i < placed.size(); i++) {
                Placed p = placed.get(i);
                if (p.segmentBase() == base && p.position() <= position && position < p.end()) {
                    return i;
                }
            }
            return -1;
        }

        /** The first batch of the segment after {@code base}, or none. */
        int firstBatchAfterSegment(long base) {
            for (int i = 0; i < placed.size(); i++) {
                if (placed.get(i).segmentBase() > base) {
                    return i;
                }
            }
            return placed.size();
        }

        void lose(int batchIndex) {
            firstDamagedBatch = Math.min(firstDamagedBatch, batchIndex);
        }

        void apply(Damage d) throws IOException {
            if (d instanceof CutLog c) {
                cut(c);
            } else if (d instanceof Overwrite o) {
                overwrite(o);
            } else if (d instanceof Garbage g) {
                garbage(g);
            } else if (d instanceof IndexDamage i) {
                index(i);
            } else if (d instanceof EpochDamage e) {
                epochs(e);
            }
        }

        void cut(CutLog c) throws IOException {
            List<Long> candidates = unflushed();
            if (candidates.isEmpty()) {
                return;
            }
            long base = candidates.get(Math.floorMod(c.segmentPick(), candidates.size()));
            File f = logFile(base);
            int size = (int) f.length();
            int from = flushedSize(base);
            int position;
            if (c.atBoundary()) {
                List<Integer> boundaries = new ArrayList<>();
                for (Placed p : placed) {
                    if (p.segmentBase() == base && p.position() >= from && p.position() < size) {
                        boundaries.add(p.position());
                    }
                }
                if (boundaries.isEmpty()) {
                    return;
                }
                position = boundaries.get(Math.floorMod(c.positionPick(), boundaries.size()));
            } else {
                position = from + Math.floorMod(c.positionPick(), size - from + 1);
            }
            try (var ch = java.nio.channels.FileChannel.open(f.toPath(), StandardOpenOption.WRITE)) {
                ch.truncate(position);
            }
            applied.add("cut " + f.getName() + " " + size + " -> " + position + " bytes (flushed " + from + ")");
            if (position < size) {
                int hit = batchIndexAt(base, position);
                lose(hit >= 0 ? hit : firstBatchAfterSegment(base));
            }
        }

        void overwrite(Overwrite o) throws IOException {
            List<Long> candidates = unflushed();
            if (candidates.isEmpty()) {
                return;
            }
            long base = candidates.get(Math.floorMod(o.segmentPick(), candidates.size()));
            File f = logFile(base);
            int size = (int) f.length();
            int from = flushedSize(base);
            int start = from + Math.floorMod(o.positionPick(), size - from);
            Random random = new Random(o.seed());
            List<Integer> changed = new ArrayList<>();
            try (RandomAccessFile raf = new RandomAccessFile(f, "rw")) {
                for (int pos = start; pos < Math.min(size, start + o.length()); pos++) {
                    int batch = batchIndexAt(base, pos);
                    int rel = batch < 0 ? Integer.MAX_VALUE : pos - placed.get(batch).position(); // < 0: garbage added earlier
                    if (rel < 8 || (rel >= 12 && rel < 16)) {
                        continue; // baseOffset and partitionLeaderEpoch: not covered by the CRC
                    }
                    raf.seek(pos);
                    int old = raf.read();
                    int neu = (old + 1 + random.nextInt(255)) & 0xff; // always a different byte
                    raf.seek(pos);
                    raf.write(neu);
                    changed.add(pos);
                    if (batch >= 0) {
                        lose(batch);
                    }
                }
            }
            if (!changed.isEmpty()) {
                applied.add("overwrote " + f.getName() + " at " + changed + " (flushed " + from + ", size " + size + ")");
            }
        }

        void garbage(Garbage g) throws IOException {
            List<Long> candidates = unflushed();
            long last = segments.get(segments.size() - 1).baseOffset();
            if (!candidates.contains(last)) {
                candidates.add(last);
            }
            long base = candidates.get(Math.floorMod(g.segmentPick(), candidates.size()));
            File f = logFile(base);
            byte[] bytes = new byte[g.length()];
            if (!g.zeros()) {
                new Random(g.seed()).nextBytes(bytes);
            }
            Files.write(f.toPath(), bytes, StandardOpenOption.APPEND);
            applied.add("appended " + g.length() + (g.zeros() ? " zero" : " random") + " bytes to " + f.getName());
            if (base != last) {
                lose(firstBatchAfterSegment(base)); // recovery cuts the garbage and drops the segments after it
            }
        }

        void index(IndexDamage d) throws IOException {
            long base = segments.get(Math.floorMod(d.segmentPick(), segments.size())).baseOffset();
            File f = d.timeIndex() ? LogFileNames.timeIndexFile(dir, base) : LogFileNames.offsetIndexFile(dir, base);
            long length = f.length();
            Random random = new Random(d.seed());
            boolean flushedSegment = flushedSizes.containsKey(base) && flushedSize(base) == logFile(base).length()
                    && base != segments.get(segments.size() - 1).baseOffset();
            String desc;
            switch (d.kind()) {
                case 0 -> {
                    Files.deleteIfExists(f.toPath());
                    desc = "deleted";
                }
                case 1 -> {
                    long to = Math.floorMod((long) d.pick(), length + 1);
                    try (RandomAccessFile raf = new RandomAccessFile(f, "rw")) {
                        raf.setLength(to);
                    }
                    desc = "cut " + length + " -> " + to;
                }
                case 2 -> {
                    if (length == 0) {
                        return;
                    }
                    long at = Math.floorMod((long) d.pick(), length);
                    int n = 1 + random.nextInt(8);
                    byte[] junk = new byte[n];
                    random.nextBytes(junk);
                    try (RandomAccessFile raf = new RandomAccessFile(f, "rw")) {
                        raf.seek(at);
                        raf.write(junk, 0, (int) Math.min(n, length - at));
                    }
                    desc = "scribbled " + Math.min(n, length - at) + " bytes at " + at + " of " + length;
                }
                default -> {
                    int n = 1 + Math.floorMod(d.pick(), 64);
                    Files.write(f.toPath(), new byte[n], StandardOpenOption.APPEND, StandardOpenOption.CREATE);
                    desc = "appended " + n + " zeros to " + length + " bytes";
                }
            }
            boolean flushed = flushedSizes.containsKey(base) && flushedSize(base) == logFile(base).length()
                    && base != segments.get(segments.size() - 1).baseOffset();
            applied.add(desc + " " + f.getName() + (flushed ? " (flushed segment)" : ""));
        }

        void epochs(EpochDamage d) throws IOException {
            Path p = new File(dir, LogFileNames.LEADER_EPOCH_CHECKPOINT).toPath();
            switch (d.kind()) {
                case 0 -> {
                    Files.deleteIfExists(p);
                    applied.add("deleted the leader-epoch checkpoint");
                }
                case 1 -> {
                    byte[] junk = new byte[1 + Math.floorMod(d.seed(), 40)];
                    new Random(d.seed()).nextBytes(junk);
                    junk[0] = 'x';
                    Files.write(p, junk);
                    applied.add("replaced the leader-epoch checkpoint with garbage");
                }
                case 2 -> {
                    if (!Files.exists(p)) {
                        return;
                    }
                    List<String> lines = Files.readAllLines(p, StandardCharsets.ISO_8859_1);
                    if (lines.size() <= 2) {
                        return;
                    }
                    Files.write(p, lines.subList(0, lines.size() - 1), StandardCharsets.ISO_8859_1);
                    applied.add("dropped the last line of the leader-epoch checkpoint");
                }
                default -> {
                    Files.writeString(p, "7\n0\n");
                    applied.add("gave the leader-epoch checkpoint an unknown version");
                }
            }
        }
    }
}
