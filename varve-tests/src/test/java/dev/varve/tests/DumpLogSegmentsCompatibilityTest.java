package dev.varve.tests;

import dev.varve.storage.LogAppendInfo;
import dev.varve.storage.LogConfig;
import dev.varve.storage.PartitionLog;
import dev.varve.storage.Scheduler;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.FileLogInputStream.FileChannelRecordBatch;
import org.apache.kafka.common.record.internal.FileRecords;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.utils.Time;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Disk format = wire format, checked by Apache Kafka itself: Varve's {@link PartitionLog} writes a
 * partition (many small segments, dense indexes, mixed compression, idempotent batches, several
 * leader epochs), then Kafka 4.4's {@code DumpLogSegments} reads every {@code .log}, {@code .index}
 * and {@code .timeindex} file and must agree with what Varve says it wrote.
 *
 * <p>The tool runs as a child JVM (it ends with {@code Exit.exit}); one run covers all files of a kind
 * ({@code --files a,b,c}) to keep the test to a few JVM starts. A second test flips one byte of a
 * written batch and checks that Kafka then reports that batch invalid and that this test's own
 * checks reject the dump; a third one damages an index entry of each kind and checks that Kafka reports
 * both mismatches. So the first test cannot pass vacuously.
 */
@Timeout(120)
class DumpLogSegmentsCompatibilityTest {
    private static final String DUMP_LOG_SEGMENTS = "org.apache.kafka.tools.DumpLogSegments";
    private static final TopicPartition TP = new TopicPartition("dump-compat", 0);
    private static final int SEGMENT_BYTES = 64 * 1024;
    private static final int INDEX_INTERVAL_BYTES = 1024;
    private static final int TARGET_RECORDS = 6000;
    private static final int[] LEADER_EPOCHS = {0, 1, 3, 4, 7};
    private static final Compression[] CODECS = {
        Compression.NONE, Compression.gzip().build(), Compression.lz4().build(),
        Compression.zstd().build(), Compression.snappy().build()};

    /** Anything Kafka prints when an index or log does not match. */
    private static final List<String> PROBLEM_MARKERS = List.of(
            "Mismatches in", "Found timestamp mismatch", "Found out of order timestamp",
            "indexed offsets are not found", "invalid bytes at the end", "isvalid: false",
            "corrupt", "Exception", "Ignoring unknown file");

    /** Kafka 4.4's batch line (the record lines start with "| offset:"). */
    private static final Pattern BATCH_LINE = Pattern.compile(
            "^baseOffset: (\\d+) lastOffset: (\\d+) count: (\\d+) baseSequence: (-?\\d+) lastSequence: (-?\\d+)"
                    + " producerId: (-?\\d+) producerEpoch: (-?\\d+) partitionLeaderEpoch: (-?\\d+)"
                    + " isTransactional: (\\w+) isControl: (\\w+) deleteHorizonMs: .*"
                    + " position: (\\d+) CreateTime: (-?\\d+) size: (\\d+) magic: (\\d+) compresscodec: (\\w+)"
                    + " crc: (\\d+) isvalid: (\\w+)$", Pattern.CASE_INSENSITIVE);
    private static final Pattern RECORD_LINE = Pattern.compile("^\\| offset: (\\d+) CreateTime: (-?\\d+) .*");
    private static final Pattern INDEX_LINE = Pattern.compile("^offset: (\\d+) position: (\\d+)$");
    private static final Pattern TIME_INDEX_LINE = Pattern.compile("^timestamp: (-?\\d+) offset: (\\d+)$");

    /** What Varve says it wrote for one batch. */
    record Batch(long baseOffset, long lastOffset, int count, int leaderEpoch, long maxTimestamp, String codec,
                 long producerId, int baseSequence) {
    }

    /** What Kafka printed for one batch. */
    record DumpedBatch(Batch batch, int position, int size, boolean valid) {
    }

    @TempDir
    Path tmp;

    @Test
    void kafkaDumpLogSegmentsReadsEverySegmentVarveWrote() throws Exception {
        File dir = tmp.resolve(TP.toString()).toFile();
        List<Batch> written = writePartition(dir);
        List<File> logs = files(dir, ".log");
        List<File> indexes = files(dir, ".index");
        List<File> timeIndexes = files(dir, ".timeindex");
        assertThat(logs).as("segments").hasSizeGreaterThanOrEqualTo(8);
        assertThat(indexes).hasSameSizeAs(logs);
        assertThat(timeIndexes).hasSameSizeAs(logs);
        Map<File, List<Batch>> expected = splitBySegment(written, logs);

        // 1. Every batch and record, as Kafka reads them.
        KafkaTool.Result logDump = dump(logs, "--deep-iteration");
        Map<File, List<DumpedBatch>> dumped = checkLogDump(logDump, expected);

        // 2. Index entries: each must point at the start of a batch and name its last offset.
        KafkaTool.Result indexDump = dump(concat(indexes, timeIndexes));
        checkIndexDump(indexDump, dumped);

        // 3. Kafka's own verification and its startup sanity check.
        KafkaTool.Result verify = dump(concat(indexes, timeIndexes), "--verify-index-only");
        checkNoProblems(verify, concat(indexes, timeIndexes));
        KafkaTool.Result sanity = dump(concat(indexes, timeIndexes), "--index-sanity-check");
        checkNoProblems(sanity, concat(indexes, timeIndexes));
        for (File f : concat(indexes, timeIndexes)) {
            if (f.length() > 0) {
                assertThat(sanity.stdout()).as(sanity.toString()).contains(f.getPath() + " passed sanity check.");
            }
        }
    }

    @Test
    void aFlippedByteInABatchIsReportedInvalid() throws Exception {
        File dir = tmp.resolve(TP.toString()).toFile();
        List<Batch> written = writePartition(dir);
        List<File> logs = files(dir, ".log");
        Map<File, List<Batch>> expected = splitBySegment(written, logs);

        // Corrupt the value of the last record of an uncompressed batch in the middle of segment 1.
        File victimLog = logs.get(1);
        long victimBase = -1;
        try (FileRecords records = FileRecords.open(victimLog, false)) {
            List<FileChannelRecordBatch> batches = new ArrayList<>();
            records.batches().forEach(batches::add);
            for (FileChannelRecordBatch b : batches.subList(batches.size() / 2, batches.size())) {
                if (b.compressionType().id == 0 && b.sizeInBytes() > 120) {
                    victimBase = b.baseOffset();
                    flipByte(victimLog, b.position() + b.sizeInBytes() - 8);
                    break;
                }
            }
        }
        assertThat(victimBase).as("an uncompressed batch to corrupt").isNotNegative();
        String victimPrefix = "baseOffset: " + victimBase + " ";

        KafkaTool.Result logDump = dump(List.of(victimLog), "--deep-iteration");
        String victimLine = logDump.stdout().lines()
                .filter(l -> l.startsWith(victimPrefix)).findFirst().orElseThrow();
        assertThat(victimLine.toLowerCase(Locale.ROOT)).endsWith("isvalid: false");
        assertThat(logDump.stdout().lines().filter(l -> l.toLowerCase(Locale.ROOT).endsWith("isvalid: false")).count())
                .isEqualTo(1);
        // The checks of the first test reject this dump.
        assertThatThrownBy(() -> checkLogDump(logDump, Map.of(victimLog, expected.get(victimLog))))
                .isInstanceOf(AssertionError.class)
                .hasMessageContaining("isvalid: false");
    }

    @Test
    void wrongIndexEntriesAreReportedAsMismatches() throws Exception {
        File dir = tmp.resolve(TP.toString()).toFile();
        writePartition(dir);
        File index = files(dir, ".index").get(0);
        File timeIndex = files(dir, ".timeindex").get(0);
        assertThat(index.length()).isGreaterThanOrEqualTo(3 * 8L);
        assertThat(timeIndex.length()).isGreaterThanOrEqualTo(2 * 12L);

        // Offset index entry 1 gets entry 2's position; time index entry 0 gets a timestamp 1 ms too small.
        try (RandomAccessFile raf = new RandomAccessFile(index, "rw")) {
            raf.seek(2 * 8 + 4);
            int position = raf.readInt();
            raf.seek(8 + 4);
            raf.writeInt(position);
        }
        try (RandomAccessFile raf = new RandomAccessFile(timeIndex, "rw")) {
            long ts = raf.readLong();
            raf.seek(0);
            raf.writeLong(ts - 1);
        }

        KafkaTool.Result verify = dump(List.of(index, timeIndex), "--verify-index-only");
        assertThat(verify.stderr()).as(verify.toString())
                .contains("Mismatches in :" + index.getAbsolutePath())
                .contains("Found timestamp mismatch in :" + timeIndex.getAbsolutePath());
        assertThatThrownBy(() -> checkNoProblems(verify, List.of(index, timeIndex))).isInstanceOf(AssertionError.class);
    }

    // ------------------------------------------------------------------ writing with Varve

    /**
     * Appends a few thousand records in batches of 1 to 80 records with mixed codecs, keys,
     * headers and producer ids, under several leader epochs, then rolls and closes.
     */
    private static List<Batch> writePartition(File dir) throws IOException {
        LogConfig config = LogConfig.DEFAULT.with(Map.of(
                TopicConfig.SEGMENT_BYTES_CONFIG, SEGMENT_BYTES,
                TopicConfig.INDEX_INTERVAL_BYTES_CONFIG, INDEX_INTERVAL_BYTES));
        Random random = new Random(0x5EED_DA7AL);
        long now = Time.SYSTEM.milliseconds();
        long tsBase = now - 3_600_000L;
        List<Batch> written = new ArrayList<>();
        long nextOffset = 0;
        int step = 0;
        int sequence = 0;
        try (PartitionLog log = PartitionLog.open(dir, TP, config, Time.SYSTEM, new NoOpScheduler())) {
            for (int e = 0; e < LEADER_EPOCHS.length; e++) {
                int epoch = LEADER_EPOCHS[e];
                long epochTarget = (long) TARGET_RECORDS * (e + 1) / LEADER_EPOCHS.length;
                while (nextOffset < epochTarget) {
                    int batchesInRequest = 1 + random.nextInt(3);
                    List<MemoryRecords> parts = new ArrayList<>();
                    List<Batch> pending = new ArrayList<>();
                    long offset = nextOffset;
                    for (int b = 0; b < batchesInRequest; b++) {
                        int count = batchSize(random);
                        Compression codec = CODECS[random.nextInt(CODECS.length)];
                        boolean idempotent = random.nextInt(5) == 0;
                        boolean late = random.nextInt(12) == 0; // timestamps below the maximum so far
                        SimpleRecord[] records = new SimpleRecord[count];
                        long maxTs = RecordBatch.NO_TIMESTAMP;
                        for (int i = 0; i < count; i++) {
                            long ts = (late ? tsBase - 600_000L : tsBase) + 10L * step++ + random.nextInt(25);
                            maxTs = Math.max(maxTs, ts);
                            records[i] = record(random, offset + i, ts);
                        }
                        long producerId = idempotent ? 4242L : RecordBatch.NO_PRODUCER_ID;
                        short producerEpoch = idempotent ? (short) 0 : RecordBatch.NO_PRODUCER_EPOCH;
                        int baseSequence = idempotent ? sequence : RecordBatch.NO_SEQUENCE;
                        if (idempotent) {
                            sequence += count;
                        }
                        parts.add(MemoryRecords.withRecords(RecordBatch.MAGIC_VALUE_V2, 0L, codec, TimestampType.CREATE_TIME,
                                producerId, producerEpoch, baseSequence, RecordBatch.NO_PARTITION_LEADER_EPOCH, false, records));
                        pending.add(new Batch(offset, offset + count - 1, count, epoch, maxTs, codec.type().name,
                                producerId, baseSequence));
                        offset += count;
                    }
                    LogAppendInfo info = log.appendAsLeader(concat(parts), epoch);
                    assertThat(info.firstOffset()).isEqualTo(nextOffset);
                    assertThat(info.lastOffset()).isEqualTo(offset - 1);
                    assertThat(info.numBatches()).isEqualTo(batchesInRequest);
                    written.addAll(pending);
                    nextOffset = offset;
                }
                if (e == 2) {
                    log.roll(); // an explicit roll besides the size-driven ones
                }
            }
            log.updateHighWatermark(log.logEndOffset());
            log.roll();
            log.flush();
        }
        return written;
    }

    private static int batchSize(Random random) {
        return switch (random.nextInt(4)) {
            case 0 -> 1;
            case 1 -> 2 + random.nextInt(4);
            case 2 -> 6 + random.nextInt(15);
            default -> 21 + random.nextInt(60);
        };
    }

    private static SimpleRecord record(Random random, long offset, long timestamp) {
        byte[] key = random.nextInt(3) == 0 ? null : ("key-" + (offset % 97)).getBytes(StandardCharsets.UTF_8);
        StringBuilder value = new StringBuilder("value-").append(offset).append('-');
        int extra = random.nextInt(10) == 0 ? 400 + random.nextInt(800) : random.nextInt(120);
        for (int i = 0; i < extra; i++) {
            value.append((char) ('a' + random.nextInt(random.nextBoolean() ? 4 : 26)));
        }
        Header[] headers = random.nextInt(4) == 0
                ? new Header[]{new RecordHeader("h" + random.nextInt(3), new byte[]{(byte) offset})}
                : new Header[0];
        return new SimpleRecord(timestamp, key, value.toString().getBytes(StandardCharsets.UTF_8), headers);
    }

    private static MemoryRecords concat(List<MemoryRecords> parts) {
        int size = parts.stream().mapToInt(MemoryRecords::sizeInBytes).sum();
        ByteBuffer buffer = ByteBuffer.allocate(size);
        for (MemoryRecords p : parts) {
            buffer.put(p.buffer().duplicate());
        }
        buffer.flip();
        return MemoryRecords.readableRecords(buffer);
    }

    private static final class NoOpScheduler implements Scheduler {
        @Override
        public void scheduleOnce(String name, Runnable task, long delayMs) {
        }

        @Override
        public void schedulePeriodic(String name, Runnable task, long delayMs, long periodMs) {
        }
    }

    // ------------------------------------------------------------------ running and checking Kafka's tool

    private KafkaTool.Result dump(List<File> files, String... options) throws IOException, InterruptedException {
        List<String> args = new ArrayList<>();
        args.add("--files");
        args.add(files.stream().map(File::getPath).collect(Collectors.joining(",")));
        args.addAll(Arrays.asList(options));
        return KafkaTool.run(tmp, DUMP_LOG_SEGMENTS, args);
    }

    /**
     * Checks a {@code --deep-iteration} dump of {@code expected.keySet()}: the batches, exactly as
     * written and all valid, laid end to end; every record, with consecutive offsets.
     */
    private static Map<File, List<DumpedBatch>> checkLogDump(KafkaTool.Result result, Map<File, List<Batch>> expected) {
        checkNoProblems(result, List.copyOf(expected.keySet()));
        Map<String, List<String>> sections = sections(result.stdout());
        Map<File, List<DumpedBatch>> dumped = new LinkedHashMap<>();
        int totalBatches = 0;
        int totalRecords = 0;
        for (Map.Entry<File, List<Batch>> e : expected.entrySet()) {
            File log = e.getKey();
            long base = baseOffsetOf(log);
            List<String> lines = sections.get(log.getPath());
            assertThat(lines).as("section for %s in %s", log, result).isNotNull();
            assertThat(lines.get(0)).isEqualTo("Log starting offset: " + base);
            List<DumpedBatch> batches = new ArrayList<>();
            List<Long> recordOffsets = new ArrayList<>();
            for (String line : lines.subList(1, lines.size())) {
                Matcher b = BATCH_LINE.matcher(line);
                Matcher r = RECORD_LINE.matcher(line);
                if (b.matches()) {
                    assertThat(b.group(14)).as(line).isEqualTo("2");
                    assertThat(b.group(9)).as(line).isEqualTo("false");
                    assertThat(b.group(10)).as(line).isEqualTo("false");
                    int count = Integer.parseInt(b.group(3));
                    int baseSequence = Integer.parseInt(b.group(4));
                    if (baseSequence >= 0) {
                        assertThat(Integer.parseInt(b.group(5))).as(line).isEqualTo(baseSequence + count - 1);
                    }
                    batches.add(new DumpedBatch(new Batch(Long.parseLong(b.group(1)), Long.parseLong(b.group(2)), count,
                            Integer.parseInt(b.group(8)), Long.parseLong(b.group(12)), b.group(15),
                            Long.parseLong(b.group(6)), baseSequence),
                            Integer.parseInt(b.group(11)), Integer.parseInt(b.group(13)),
                            Boolean.parseBoolean(b.group(17))));
                } else if (r.matches()) {
                    recordOffsets.add(Long.parseLong(r.group(1)));
                } else if (!line.isBlank()) {
                    throw new AssertionError("unexpected line in the dump of " + log + ": " + line);
                }
            }
            // isvalid is checked before the layout so that a corrupt batch is named as such.
            for (DumpedBatch d : batches) {
                assertThat(d.valid()).as("isvalid: false for batch %s in %s", d, log).isTrue();
            }
            assertThat(batches.stream().map(DumpedBatch::batch).toList()).as("batches of %s", log)
                    .containsExactlyElementsOf(e.getValue());
            int position = 0;
            for (DumpedBatch d : batches) {
                assertThat(d.position()).as("position of %s", d).isEqualTo(position);
                position += d.size();
            }
            assertThat((long) position).as("the batches cover %s", log).isEqualTo(log.length());
            List<Long> expectedOffsets = new ArrayList<>();
            for (Batch b : e.getValue()) {
                for (long o = b.baseOffset(); o <= b.lastOffset(); o++) {
                    expectedOffsets.add(o);
                }
            }
            assertThat(recordOffsets).as("record offsets of %s", log).isEqualTo(expectedOffsets);
            assertThat(recordOffsets.get(0)).isEqualTo(base);
            totalBatches += batches.size();
            totalRecords += recordOffsets.size();
            dumped.put(log, batches);
        }
        assertThat(totalBatches).isEqualTo(expected.values().stream().mapToInt(List::size).sum());
        assertThat(totalRecords).isEqualTo(expected.values().stream().flatMap(List::stream).mapToInt(Batch::count).sum());
        return dumped;
    }

    /** Checks a plain dump of .index and .timeindex files against the batches Kafka read. */
    private static void checkIndexDump(KafkaTool.Result result, Map<File, List<DumpedBatch>> batchesByLog) {
        List<File> files = new ArrayList<>();
        batchesByLog.keySet().forEach(log -> {
            files.add(sibling(log, ".index"));
            files.add(sibling(log, ".timeindex"));
        });
        checkNoProblems(result, files);
        Map<String, List<String>> sections = sections(result.stdout());
        int totalIndexEntries = 0;
        int totalTimeEntries = 0;
        for (Map.Entry<File, List<DumpedBatch>> e : batchesByLog.entrySet()) {
            List<DumpedBatch> batches = e.getValue();
            Map<Long, DumpedBatch> byLastOffset = new TreeMap<>();
            batches.forEach(d -> byLastOffset.put(d.batch().lastOffset(), d));

            File index = sibling(e.getKey(), ".index");
            List<String> indexLines = sections.get(index.getPath());
            assertThat(indexLines).as("offset index section of %s", index).isNotNull();
            if (index.length() == 0) {
                assertThat(indexLines).containsExactly(index.getPath() + " is empty.");
                indexLines = List.of();
            }
            assertThat(indexLines).as("entries of %s", index).hasSize((int) (index.length() / 8));
            if (e.getKey().length() > 4L * INDEX_INTERVAL_BYTES) {
                assertThat(indexLines).as("a segment of %d bytes is indexed", e.getKey().length())
                        .hasSizeGreaterThanOrEqualTo((int) (e.getKey().length() / (INDEX_INTERVAL_BYTES + 16 * 1024)));
            }
            for (String line : indexLines) {
                Matcher m = INDEX_LINE.matcher(line);
                assertThat(m.matches()).as("index line %s", line).isTrue();
                DumpedBatch batch = byLastOffset.get(Long.parseLong(m.group(1)));
                assertThat(batch).as("%s: %s names the last offset of a batch", index, line).isNotNull();
                assertThat(batch.position()).as("%s: %s points at that batch", index, line)
                        .isEqualTo(Integer.parseInt(m.group(2)));
            }
            totalIndexEntries += indexLines.size();

            File timeIndex = sibling(e.getKey(), ".timeindex");
            List<String> timeLines = sections.get(timeIndex.getPath());
            assertThat(timeLines).as("time index section of %s", timeIndex).isNotNull();
            assertThat(timeLines).as("entries of %s", timeIndex).hasSize((int) (timeIndex.length() / 12));
            assertThat(timeLines).as("a closed segment's time index holds at least its final entry").isNotEmpty();
            long previous = Long.MIN_VALUE;
            for (String line : timeLines) {
                Matcher m = TIME_INDEX_LINE.matcher(line);
                assertThat(m.matches()).as("time index line %s", line).isTrue();
                long ts = Long.parseLong(m.group(1));
                DumpedBatch batch = byLastOffset.get(Long.parseLong(m.group(2)));
                assertThat(batch).as("%s: %s names the last offset of a batch", timeIndex, line).isNotNull();
                assertThat(ts).as("%s: %s is that batch's max timestamp", timeIndex, line)
                        .isEqualTo(batch.batch().maxTimestamp());
                long maxBefore = batches.stream().filter(d -> d.position() < batch.position())
                        .mapToLong(d -> d.batch().maxTimestamp()).max().orElse(Long.MIN_VALUE);
                assertThat(ts).as("%s: %s is a new maximum", timeIndex, line).isGreaterThan(maxBefore);
                assertThat(ts).isGreaterThan(previous);
                previous = ts;
            }
            long segmentMax = batches.stream().mapToLong(d -> d.batch().maxTimestamp()).max().orElseThrow();
            assertThat(previous).as("the last entry of %s is the segment's max timestamp", timeIndex).isEqualTo(segmentMax);
            totalTimeEntries += timeLines.size();
        }
        assertThat(totalIndexEntries).as("offset index entries").isGreaterThan(100);
        assertThat(totalTimeEntries).as("time index entries").isGreaterThan(100);
    }

    /**
     * The tool ran, dumped every file, and reported nothing wrong. Kafka's deep iteration restarts its
     * "previous offset" at -1 for each file, so a segment with base B reports "-1 is followed by B":
     * that is the only non-consecutive pair allowed.
     */
    private static void checkNoProblems(KafkaTool.Result result, List<File> files) {
        assertThat(result.exitCode()).as(result.toString()).isZero();
        assertThat(result.stdout()).as(result.toString()).isNotBlank();
        for (File f : files) {
            assertThat(result.stdout()).as(result.toString()).contains("Dumping " + f.getPath() + "\n");
        }
        String all = result.all();
        for (String marker : PROBLEM_MARKERS) {
            String found = all.lines().filter(l -> l.toLowerCase(Locale.ROOT).contains(marker.toLowerCase(Locale.ROOT)))
                    .findFirst().orElse(null);
            assertThat(found).as("Kafka reported a problem (%s): %s\n%s", marker, found, result).isNull();
        }
        String currentFile = null;
        for (String line : result.stderr().lines().toList()) {
            if (line.startsWith("Non-consecutive offsets in ")) {
                currentFile = line.substring("Non-consecutive offsets in ".length());
            } else if (currentFile != null && line.matches("\\s+-?\\d+ is followed by \\d+")) {
                String[] parts = line.trim().split(" is followed by ");
                long base = baseOffsetOf(new File(currentFile));
                assertThat(parts).as("%s: %s", currentFile, line).containsExactly("-1", Long.toString(base));
            } else if (!line.isBlank()) {
                throw new AssertionError("unexpected line on stderr: " + line + "\n" + result);
            }
        }
    }

    /** The stdout of a run split at its "Dumping FILE" lines. */
    private static Map<String, List<String>> sections(String stdout) {
        Map<String, List<String>> sections = new LinkedHashMap<>();
        List<String> current = null;
        for (String line : stdout.lines().toList()) {
            if (line.startsWith("Dumping ")) {
                current = new ArrayList<>();
                sections.put(line.substring("Dumping ".length()), current);
            } else if (current != null) {
                current.add(line);
            } else {
                throw new AssertionError("output before the first file: " + line);
            }
        }
        return sections;
    }

    // ------------------------------------------------------------------ files

    private static List<File> files(File dir, String suffix) throws IOException {
        try (Stream<Path> s = Files.list(dir.toPath())) {
            return s.filter(p -> p.getFileName().toString().endsWith(suffix)).map(Path::toFile).sorted().toList();
        }
    }

    private static Map<File, List<Batch>> splitBySegment(List<Batch> written, List<File> logs) {
        Map<File, List<Batch>> bySegment = new LinkedHashMap<>();
        for (int i = 0; i < logs.size(); i++) {
            long base = baseOffsetOf(logs.get(i));
            long next = i + 1 < logs.size() ? baseOffsetOf(logs.get(i + 1)) : Long.MAX_VALUE;
            List<Batch> in = written.stream().filter(b -> b.baseOffset() >= base && b.baseOffset() < next).toList();
            if (in.isEmpty()) {
                assertThat(logs.get(i).length()).as("%s holds no batch", logs.get(i)).isZero();
                assertThat(i).as("only the last (active) segment may be empty").isEqualTo(logs.size() - 1);
                continue;
            }
            assertThat(in.get(0).baseOffset()).as("a segment starts with its base offset").isEqualTo(base);
            bySegment.put(logs.get(i), in);
        }
        assertThat(bySegment.values().stream().mapToInt(List::size).sum()).isEqualTo(written.size());
        return bySegment;
    }

    private static long baseOffsetOf(File f) {
        String name = f.getName();
        return Long.parseLong(name.substring(0, name.indexOf('.')));
    }

    private static File sibling(File log, String suffix) {
        String name = log.getName();
        return new File(log.getParentFile(), name.substring(0, name.indexOf('.')) + suffix);
    }

    private static List<File> concat(List<File> a, List<File> b) {
        List<File> all = new ArrayList<>(a);
        all.addAll(b);
        return all;
    }

    private static void flipByte(File file, long position) throws IOException {
        try (RandomAccessFile raf = new RandomAccessFile(file, "rw")) {
            raf.seek(position);
            int b = raf.read();
            raf.seek(position);
            raf.write(b ^ 0x5A);
        }
    }
}
