package dev.varve.storage;

import dev.varve.storage.CompactionSupport.Read;
import dev.varve.storage.CompactionSupport.ReadBatch;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.SimpleRecord;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Compaction against a model, over random key/value/tombstone streams in many tiny segments, every
 * codec (none, gzip, snappy, lz4, zstd), idempotent and plain batches, dedupe maps from tiny (several
 * rounds per pass) to roomy, and a mock clock.
 *
 * <p>After every cleaning pass: batches and offsets strictly increase; every record read is byte for
 * byte the record appended at that offset (key, value, timestamp, header); every key's latest record is
 * there, except a tombstone at least {@code delete.retention.ms} past the pass that first kept it; no
 * older record of a key remains; every tombstone left carries a delete horizon in (now, now +
 * delete.retention.ms]; segments never overlap. At the end, once the clock passes every horizon, no
 * tombstone remains; an unclean reopen (full recovery) reads the same records and the idempotent
 * producer's sequence survives.
 *
 * <p>{@link #aCrashAtAnyStepOfTheSwapLosesNothing}: the cleaning of a random log is stopped by a
 * simulated crash before each single step of its segment swaps in turn (every rename, the map update),
 * the directory is reopened as after a crash, and must read as a set of records between the
 * uncleaned and the fully cleaned log — nothing of the latest-per-key view lost, nothing invented —
 * then clean to exactly the fully cleaned log.
 */
class CompactionProperties {
    private static final long T0 = 1_700_000_000_000L;
    private static final TopicPartition TP = new TopicPartition("compact", 0);
    private static final long PRODUCER_ID = 42L;
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

    // ------------------------------------------------------------------ generators

    /** One record: key index, tombstone or value of some length, timestamp delta, header or none. */
    record Rec(int key, boolean tombstone, int valueLength, int tsDelta, boolean header, int seed) {
    }

    /** One produced batch: codec (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd), idempotent or not, its records. */
    record Batch(int codec, boolean idempotent, List<Rec> records) {
    }

    /** Batches appended, then the clock advances, then the cleaner runs until nothing is cleanable. */
    record Phase(List<Batch> batches, int advanceMs) {
    }

    record Scenario(int segmentBytes, int dedupeBytes, int deleteRetentionMs, int keys, List<Phase> phases) {
    }

    private static Arbitrary<Rec> recs(int keys) {
        return Combinators.combine(Arbitraries.integers().between(0, keys - 1),
                Arbitraries.integers().between(0, 99).map(p -> p < 15),
                Arbitraries.integers().between(0, 60), Arbitraries.integers().between(-2000, 2000),
                Arbitraries.of(true, false), Arbitraries.integers()).as(Rec::new);
    }

    private static Arbitrary<Batch> batches(int keys) {
        return Combinators.combine(Arbitraries.integers().between(0, 4),
                Arbitraries.integers().between(0, 4).map(i -> i == 0),
                recs(keys).list().ofMinSize(1).ofMaxSize(10)).as(Batch::new);
    }

    private static Arbitrary<Scenario> scenarios(int maxPhases, int maxBatches, Arbitrary<Integer> dedupeBytes,
                                                 int minSegmentBytes) {
        return Arbitraries.integers().between(3, 40).flatMap(keys -> Combinators.combine(
                Arbitraries.integers().between(minSegmentBytes, 2048),
                dedupeBytes,
                Arbitraries.integers().between(1, 20_000),
                Arbitraries.just(keys),
                Combinators.combine(batches(keys).list().ofMinSize(1).ofMaxSize(maxBatches), Arbitraries.integers().between(0, 15_000))
                        .as(Phase::new).list().ofMinSize(1).ofMaxSize(maxPhases)
        ).as(Scenario::new));
    }

    @Provide
    Arbitrary<Scenario> histories() {
        return scenarios(4, 15, Arbitraries.of(1024, 4096, 64 * 1024), 256);
    }

    @Provide
    Arbitrary<Scenario> crashHistories() {
        // One round per clean (a roomy map) and not too many segments: every swap step of it is crashed.
        return scenarios(2, 8, Arbitraries.just(64 * 1024), 512);
    }

    // ------------------------------------------------------------------ the model

    /** What the test appended, by offset, and the producer's next sequence. */
    static final class Model {
        final Map<Long, Read> byOffset = new HashMap<>();
        final Map<Long, Long> firstCleanedAtMs = new HashMap<>();
        int nextSequence;

        Map<String, Read> latestPerKey() {
            return CompactionSupport.latestPerKey(byOffset.values().stream()
                    .sorted(java.util.Comparator.comparingLong(Read::offset)).toList());
        }
    }

    private static void append(PartitionLog log, Batch batch, Model model, long nowMs) {
        SimpleRecord[] records = new SimpleRecord[batch.records().size()];
        for (int i = 0; i < records.length; i++) {
            Rec r = batch.records().get(i);
            Header[] headers = r.header() ? new Header[]{new RecordHeader("h", ("h" + r.seed()).getBytes(StandardCharsets.UTF_8))}
                    : new Header[0];
            records[i] = new SimpleRecord(nowMs + r.tsDelta(), key(r).getBytes(StandardCharsets.UTF_8),
                    r.tombstone() ? null : value(r).getBytes(StandardCharsets.UTF_8), headers);
        }
        Compression codec = LogPropertySupport.compression(switch (batch.codec()) {
            case 1 -> 1;
            case 2 -> 4;
            case 3 -> 2;
            case 4 -> 3;
            default -> 0;
        });
        MemoryRecords built = batch.idempotent()
                ? MemoryRecords.withIdempotentRecords(codec, PRODUCER_ID, (short) 0, model.nextSequence, records)
                : MemoryRecords.withRecords(codec, records);
        LogAppendInfo info = log.appendAsLeader(built, 0);
        if (batch.idempotent()) {
            model.nextSequence += records.length;
        }
        for (int i = 0; i < records.length; i++) {
            Rec r = batch.records().get(i);
            long offset = info.firstOffset() + i;
            model.byOffset.put(offset, new Read(offset, key(r), r.tombstone() ? null : value(r), nowMs + r.tsDelta(),
                    r.header() ? "h" + r.seed() : null, java.util.OptionalLong.empty()));
        }
    }

    private static String key(Rec r) {
        return "key-" + r.key();
    }

    private static String value(Rec r) {
        StringBuilder b = new StringBuilder("v" + r.seed() + ":");
        while (b.length() < r.valueLength()) {
            b.append((char) ('a' + Math.floorMod(r.seed() + b.length(), 26)));
        }
        return b.toString();
    }

    private static LogConfig config(Scenario s) {
        return CompactionSupport.compacted(s.segmentBytes(), s.deleteRetentionMs());
    }

    // ------------------------------------------------------------------ properties

    @Property(tries = 30)
    void cleaningKeepsExactlyTheLatestRecordOfEveryKey(@ForAll("histories") Scenario scenario) throws IOException {
        Path root = LogPropertySupport.newTempDir("compact");
        MockTime time = new MockTime(T0);
        ManualScheduler scheduler = new ManualScheduler(time);
        File dir = root.resolve("compact-0").toFile();
        PartitionLog log = PartitionLog.open(dir, TP, config(scenario), time, scheduler);
        try {
            LogCleanerManager cleaner = CompactionSupport.manager(CompactionSupport.cleanerConfig(scenario.dedupeBytes()),
                    root.toFile(), time, List.of(log), SegmentSwap.Hook.NONE);
            Model model = new Model();
            for (Phase phase : scenario.phases()) {
                for (Batch b : phase.batches()) {
                    append(log, b, model, time.milliseconds());
                }
                log.roll();
                log.updateHighWatermark(log.logEndOffset());
                time.advance(phase.advanceMs());
                int rounds = cleaner.cleanUntilDone(10_000);
                assertThat(rounds).as("a pass ran").isPositive();
                for (long offset : model.byOffset.keySet()) {
                    model.firstCleanedAtMs.putIfAbsent(offset, time.milliseconds());
                }
                checkCleaned(log, model, scenario, time.milliseconds());
                scheduler.runDue(); // delayed deletions of replaced segments
            }
            // Past every delete horizon, a pass drops the remaining tombstones.
            time.advance(scenario.deleteRetentionMs() + 1L);
            cleaner.cleanUntilDone(10_000);
            List<Read> end = checkCleaned(log, model, scenario, time.milliseconds());
            assertThat(end).as("tombstones after every horizon").allSatisfy(r -> assertThat(r.value()).isNotNull());
            Map<String, Read> live = new HashMap<>(model.latestPerKey());
            live.values().removeIf(r -> r.value() == null);
            assertThat(end).hasSize(live.size());

            // An unclean reopen recovers every segment: compacted ones must pass (no holes, no cuts).
            long hw = log.highWatermark();
            log.close();
            log = PartitionLog.open(dir, TP, config(scenario), time, scheduler, 0, 0, hw, false);
            List<Read> reopened = CompactionSupport.readAll(log);
            assertThat(reopened).isEqualTo(end);
            if (model.nextSequence > 0) {
                assertThat(log.producerState(PRODUCER_ID)).as("idempotent producer state after reload")
                        .hasValueSatisfying(e -> assertThat(e.lastSeq()).isEqualTo(model.nextSequence - 1));
            }
        } finally {
            log.close();
            LogPropertySupport.deleteRecursively(root);
        }
    }

    /** Checks the invariants after a pass at {@code nowMs}; returns the records read. */
    private static List<Read> checkCleaned(PartitionLog log, Model model, Scenario scenario, long nowMs) {
        List<ReadBatch> batches = CompactionSupport.readAllBatches(log);
        CompactionSupport.checkOffsets(batches);
        CompactionSupport.checkSegmentsDisjoint(log);
        List<Read> records = batches.stream().flatMap(b -> b.records().stream()).toList();
        Map<String, Read> latest = model.latestPerKey();
        Map<String, Long> seen = new HashMap<>();
        for (Read r : records) {
            Read appended = model.byOffset.get(r.offset());
            assertThat(appended).as("offset %d was appended", r.offset()).isNotNull();
            assertThat(r.sameRecord(appended)).as("record at %d: %s vs %s", r.offset(), r, appended).isTrue();
            assertThat(seen.put(r.key(), r.offset())).as("a second record of %s at %d", r.key(), r.offset()).isNull();
            assertThat(latest.get(r.key()).offset()).as("only the latest record of %s", r.key()).isEqualTo(r.offset());
            if (r.value() == null) {
                assertThat(r.deleteHorizonMs()).as("tombstone at %d has a delete horizon", r.offset()).isPresent();
                assertThat(r.deleteHorizonMs().getAsLong()).as("tombstone at %d is not past its horizon", r.offset())
                        .isGreaterThan(nowMs).isLessThanOrEqualTo(nowMs + scenario.deleteRetentionMs());
            }
        }
        for (Read l : latest.values()) {
            if (!seen.containsKey(l.key())) {
                assertThat(l.value()).as("the latest record of %s (offset %d) is missing", l.key(), l.offset()).isNull();
                assertThat(nowMs).as("tombstone %d dropped before delete.retention.ms", l.offset())
                        .isGreaterThanOrEqualTo(model.firstCleanedAtMs.get(l.offset()) + scenario.deleteRetentionMs());
            }
        }
        return records;
    }

    // ------------------------------------------------------------------ crash injection

    /** The simulated crash: an Error, so no clean-up code of the cleaner runs (as in a real crash). */
    static final class SimulatedCrash extends Error {
        SimulatedCrash() {
            super("simulated crash", null, false, false);
        }
    }

    /** Throws at its {@code crashAt}-th call (0-based); counts calls. */
    static final class CrashingHook implements SegmentSwap.Hook {
        final int crashAt;
        int calls;

        CrashingHook(int crashAt) {
            this.crashAt = crashAt;
        }

        @Override
        public void before(SegmentSwap.Step step) {
            if (calls++ == crashAt) {
                throw new SimulatedCrash();
            }
        }
    }

    @Property(tries = 6)
    void aCrashAtAnyStepOfTheSwapLosesNothing(@ForAll("crashHistories") Scenario scenario) throws IOException {
        Path root = LogPropertySupport.newTempDir("crash-compact");
        MockTime time = new MockTime(T0);
        ManualScheduler scheduler = new ManualScheduler(time);
        try {
            // The uncleaned log, kept as files.
            Path pristine = root.resolve("pristine");
            File pristineDir = pristine.resolve("compact-0").toFile();
            Model model = new Model();
            long hw;
            PartitionLog log = PartitionLog.open(pristineDir, TP, config(scenario), time, scheduler);
            try {
                for (Phase phase : scenario.phases()) {
                    for (Batch b : phase.batches()) {
                        append(log, b, model, time.milliseconds());
                    }
                    log.roll();
                }
                hw = log.updateHighWatermark(log.logEndOffset());
            } finally {
                log.close();
            }
            time.advance(1);
            // The fully cleaned log, and how many swap steps cleaning takes.
            CrashingHook counter = new CrashingHook(-1);
            List<Read> cleaned = cleanCopy(pristine, root.resolve("reference"), scenario, time, scheduler, hw, counter);
            int steps = counter.calls;
            net.jqwik.api.statistics.Statistics.label("swap steps").collect(steps / 20 * 20);
            List<Read> uncleaned = new ArrayList<>(model.byOffset.values());
            uncleaned.sort(java.util.Comparator.comparingLong(Read::offset));
            Map<String, Read> latest = model.latestPerKey();
            for (int crashAt = 0; crashAt < steps; crashAt++) {
                Path copy = root.resolve("crash-" + crashAt);
                List<Read> recovered = crashAndRecover(pristine, copy, scenario, time, scheduler, hw, crashAt);
                String at = "crash before swap step " + crashAt + " of " + steps + ": ";
                // Nothing invented: every record is the one appended at its offset.
                for (Read r : recovered) {
                    assertThat(r.sameRecord(model.byOffset.get(r.offset()))).as(at + "record %s", r).isTrue();
                }
                // Nothing lost: the latest record of every key, and everything the full clean keeps.
                assertThat(CompactionSupport.latestPerKey(recovered)).as(at + "latest per key").isEqualTo(latestOf(latest, recovered));
                assertThat(recovered).as(at + "a superset of the cleaned log").containsAll(cleaned);
                assertThat(uncleaned).as(at + "a subset of the uncleaned log").containsAll(recovered);
                // And the crashed log cleans to exactly the reference.
                assertThat(cleanCopy(copy, root.resolve("again-" + crashAt), scenario, time, scheduler, hw,
                        new CrashingHook(-1))).as(at + "cleaned after recovery").isEqualTo(cleaned);
                LogPropertySupport.deleteRecursively(copy);
                LogPropertySupport.deleteRecursively(root.resolve("again-" + crashAt));
            }
        } finally {
            LogPropertySupport.deleteRecursively(root);
        }
    }

    /** The model's latest records, as {@code Read}s comparable with records read back. */
    private static Map<String, Read> latestOf(Map<String, Read> latest, List<Read> recovered) {
        Map<Long, Read> byOffset = new HashMap<>();
        for (Read r : recovered) {
            byOffset.put(r.offset(), r);
        }
        Map<String, Read> out = new HashMap<>();
        latest.forEach((k, v) -> out.put(k, byOffset.getOrDefault(v.offset(), v)));
        return out;
    }

    /** Copies the log directory {@code from} into {@code to}, cleans it fully, reads it. */
    private static List<Read> cleanCopy(Path from, Path to, Scenario scenario, MockTime time, ManualScheduler scheduler,
                                        long hw, SegmentSwap.Hook hook) throws IOException {
        copyDir(from, to);
        File dir = to.resolve("compact-0").toFile();
        PartitionLog log = PartitionLog.open(dir, TP, config(scenario), time, scheduler, 0, 0, hw, false);
        try {
            CompactionSupport.manager(CompactionSupport.cleanerConfig(scenario.dedupeBytes()), to.toFile(), time,
                    List.of(log), hook).cleanUntilDone(10_000);
            List<ReadBatch> batches = CompactionSupport.readAllBatches(log);
            CompactionSupport.checkOffsets(batches);
            return batches.stream().flatMap(b -> b.records().stream()).map(CompactionProperties::withoutHorizon).toList();
        } finally {
            log.close();
        }
    }

    /** Copies, cleans with a crash at step {@code crashAt}, reopens as after a crash, reads. */
    private static List<Read> crashAndRecover(Path from, Path to, Scenario scenario, MockTime time,
                                              ManualScheduler scheduler, long hw, int crashAt) throws IOException {
        copyDir(from, to);
        File dir = to.resolve("compact-0").toFile();
        PartitionLog log = PartitionLog.open(dir, TP, config(scenario), time, scheduler, 0, 0, hw, false);
        try {
            CompactionSupport.manager(CompactionSupport.cleanerConfig(scenario.dedupeBytes()), to.toFile(), time,
                    List.of(log), new CrashingHook(crashAt)).cleanUntilDone(10_000);
            throw new AssertionError("no crash at step " + crashAt);
        } catch (SimulatedCrash expected) {
            // The process "dies" here: its files stay as they are.
        } finally {
            log.close(); // releases handles only; recovery below ignores what close writes
        }
        PartitionLog recovered = PartitionLog.open(dir, TP, config(scenario), time, scheduler, 0, 0, hw, false);
        try {
            assertThat(dir.list((d, n) -> n.endsWith(LogFileNames.CLEANED_SUFFIX) || n.endsWith(LogFileNames.SWAP_SUFFIX)))
                    .as("no swap leftovers after recovery").isEmpty();
            CompactionSupport.checkSegmentsDisjoint(recovered);
            List<ReadBatch> batches = CompactionSupport.readAllBatches(recovered);
            CompactionSupport.checkOffsets(batches);
            return batches.stream().flatMap(b -> b.records().stream()).map(CompactionProperties::withoutHorizon).toList();
        } finally {
            recovered.close();
        }
    }

    private static Read withoutHorizon(Read r) {
        return new Read(r.offset(), r.key(), r.value(), r.timestamp(), r.header(), java.util.OptionalLong.empty());
    }

    private static void copyDir(Path from, Path to) throws IOException {
        try (Stream<Path> walk = Files.walk(from)) {
            for (Path p : walk.toList()) {
                Path target = to.resolve(from.relativize(p).toString());
                if (Files.isDirectory(p)) {
                    Files.createDirectories(target);
                } else if (!p.getFileName().toString().endsWith(LogFileNames.DELETED_SUFFIX)) {
                    Files.copy(p, target);
                }
            }
        }
        Objects.requireNonNull(to);
    }
}
