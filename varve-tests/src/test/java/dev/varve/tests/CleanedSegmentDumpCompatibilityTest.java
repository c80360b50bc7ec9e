package dev.varve.tests;

import dev.varve.storage.CleanerConfig;
import dev.varve.storage.LogConfig;
import dev.varve.storage.LogManager;
import dev.varve.storage.LogManagerConfig;
import dev.varve.storage.PartitionLog;
import dev.varve.storage.Scheduler;
import dev.varve.storage.index.TransactionIndex.AbortedTxn;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.record.internal.FileLogInputStream.FileChannelRecordBatch;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.utils.Time;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.Supplier;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Kafka 4.4's {@code DumpLogSegments} reads the segments and {@code .txnindex} files Varve's cleaner
 * wrote for a compacted topic with transactions: batches recompressed with their own codec, gaps,
 * empty batches kept for producers, transaction markers stamped with a delete horizon (KIP-534's
 * DELETE_HORIZON attribute and base timestamp), and aborted-transaction index entries. Every batch must
 * be valid and exactly what Varve reads, no aborted record may be left, and the index entries must be
 * the log's.
 */
@Timeout(120)
class CleanedSegmentDumpCompatibilityTest {
    private static final String DUMP_LOG_SEGMENTS = "org.apache.kafka.tools.DumpLogSegments";
    private static final TopicPartition TP = new TopicPartition("cleaned-dump", 0);
    private static final long HOUR_MS = 3_600_000L;

    /** Kafka 4.4's batch line. */
    private static final Pattern BATCH_LINE = Pattern.compile(
            "^baseOffset: (\\d+) lastOffset: (\\d+) count: (\\d+) baseSequence: (-?\\d+) lastSequence: (-?\\d+)"
                    + " producerId: (-?\\d+) producerEpoch: (-?\\d+) partitionLeaderEpoch: (-?\\d+)"
                    + " isTransactional: (\\w+) isControl: (\\w+) deleteHorizonMs: (\\S+)"
                    + " position: (\\d+) CreateTime: (-?\\d+) size: (\\d+) magic: (\\d+) compresscodec: (\\w+)"
                    + " crc: (\\d+) isvalid: (\\w+)$");
    private static final Pattern RECORD_LINE = Pattern.compile("^\\| offset: (\\d+) CreateTime: (-?\\d+) .*");
    private static final Pattern TXN_INDEX_LINE = Pattern.compile(
            "^version: 0 producerId: (\\d+) firstOffset: (\\d+) lastOffset: (\\d+) lastStableOffset: (\\d+)$");

    @TempDir
    Path tmp;

    /** A batch as Varve reads it, in the dump's terms. */
    record Batch(long base, long last, int count, long producerId, boolean transactional, boolean control,
                 String deleteHorizonMs, String codec, List<Long> recordOffsets) {
    }

    @Test
    void kafkaDumpLogSegmentsReadsTheSegmentsAndTransactionIndexesOfACleanedTransactionalLog() throws Exception {
        ManualTime time = new ManualTime(System.currentTimeMillis() - 2 * HOUR_MS);
        File logDir = tmp.resolve("data").toFile();
        LogConfig config = LogConfig.DEFAULT.with(Map.of(
                TopicConfig.CLEANUP_POLICY_CONFIG, "compact",
                TopicConfig.SEGMENT_BYTES_CONFIG, 1024,
                TopicConfig.MIN_CLEANABLE_DIRTY_RATIO_CONFIG, 0.0,
                TopicConfig.DELETE_RETENTION_MS_CONFIG, HOUR_MS,
                TopicConfig.FILE_DELETE_DELAY_MS_CONFIG, 0L,
                TopicConfig.MESSAGE_TIMESTAMP_BEFORE_MAX_MS_CONFIG, Long.MAX_VALUE));
        LogManagerConfig managerConfig = LogManagerConfig.defaults(List.of(logDir))
                .withCleaner(new CleanerConfig(true, 1, 1 << 20, 64 * 1024, 0.9, 1000));
        LogManager manager = new LogManager(managerConfig, t -> config, time, new NoOpScheduler());
        List<String> abortedValues = new ArrayList<>();
        List<Batch> expected;
        List<AbortedTxn> expectedIndex;
        try {
            manager.startup();
            PartitionLog log = manager.getOrCreateLog(TP);
            Map<Long, Integer> sequences = new HashMap<>();
            // Two hours ago: producer 2 aborts, producer 4 commits a value a plain record replaces later.
            // Both are forgotten below (nothing keeps their batches for deduplication): all of their data
            // goes, then their markers.
            long old = time.milliseconds();
            log.appendAsLeader(txn(sequences, 2, Compression.NONE, old, "k0", "aborted-2", "k3", "aborted-2"), 0);
            abortedValues.add("aborted-2");
            log.appendMarkerAsLeader(2, (short) 0, 0, false, 0);
            log.appendAsLeader(txn(sequences, 4, Compression.snappy().build(), old, "k5", "c4"), 0);
            log.appendMarkerAsLeader(4, (short) 0, 0, true, 0);
            log.appendAsLeader(plain(Compression.lz4().build(), old, "k4", "p"), 0);
            time.advance(2 * HOUR_MS);
            long now = time.milliseconds();
            // Now: producer 1 commits, producer 3 aborts; both stay remembered, so their batches stay
            // (producer 3's empty), and with them their markers and producer 3's index entry.
            log.appendAsLeader(txn(sequences, 1, Compression.gzip().build(), now, "k0", "c1", "k1", "c1", "k2", "c1"), 0);
            log.roll();
            log.appendMarkerAsLeader(1, (short) 0, 0, true, 0);
            log.appendAsLeader(txn(sequences, 3, Compression.zstd().build(), now, "k1", "aborted-3"), 0);
            abortedValues.add("aborted-3");
            log.appendMarkerAsLeader(3, (short) 0, 0, false, 0);
            log.appendAsLeader(plain(Compression.NONE, now, "k5", "p", "k0", "p"), 0);
            log.roll();
            log.updateHighWatermark(log.logEndOffset());
            assertThat(log.removeExpiredProducers(HOUR_MS)).as("producers 2 and 4 forgotten").isEqualTo(2);

            // Round 1 drops the aborted and superseded records; round 2 finds producers 2 and 4's
            // transactions empty and stamps their markers with a delete horizon.
            assertThat(manager.cleaner().orElseThrow().cleanUntilDone(10)).isPositive();
            log.appendAsLeader(plain(Compression.NONE, now, "k6", "p"), 0);
            log.roll();
            log.updateHighWatermark(log.logEndOffset());
            assertThat(manager.cleaner().orElseThrow().cleanUntilDone(10)).isPositive();
            log.flush();

            expected = readAll(log);
            expectedIndex = log.abortedTransactions(0, log.logEndOffset());
        } finally {
            manager.close();
        }
        assertThat(expected).as("markers with a delete horizon")
                .filteredOn(b -> b.control() && !b.deleteHorizonMs().equals("OptionalLong.empty")).hasSize(2);
        assertThat(expected).as("empty batches kept for producers").anySatisfy(b -> assertThat(b.count()).isZero());
        assertThat(expectedIndex).as("producer 3's abort, whose (empty) batch stays")
                .extracting(AbortedTxn::producerId).containsExactly(3L);

        File dir = new File(logDir, TP.toString());
        List<File> logs = files(dir, ".log");
        List<File> txnIndexes = files(dir, ".txnindex");
        assertThat(txnIndexes).isNotEmpty();

        KafkaTool.Result logDump = dump(logs, "--deep-iteration", "--print-data-log");
        checkRan(logDump, logs);
        List<Batch> dumped = parseLogDump(logDump);
        assertThat(dumped).as(logDump.toString()).containsExactlyElementsOf(expected);
        for (String value : abortedValues) {
            assertThat(logDump.stdout()).as("no aborted record left").doesNotContain("payload: " + value);
        }
        assertThat(logDump.stdout()).contains("payload: c1");

        KafkaTool.Result txnDump = dump(txnIndexes);
        checkRan(txnDump, txnIndexes);
        List<AbortedTxn> dumpedIndex = new ArrayList<>();
        for (String line : txnDump.stdout().lines().toList()) {
            Matcher m = TXN_INDEX_LINE.matcher(line);
            if (m.matches()) {
                dumpedIndex.add(new AbortedTxn(Long.parseLong(m.group(1)), Long.parseLong(m.group(2)),
                        Long.parseLong(m.group(3)), Long.parseLong(m.group(4))));
            } else {
                assertThat(line).as("a txnindex dump line").startsWith("Dumping ");
            }
        }
        assertThat(dumpedIndex).isEqualTo(expectedIndex);

        List<File> indexes = new ArrayList<>(files(dir, ".index"));
        indexes.addAll(files(dir, ".timeindex"));
        KafkaTool.Result verify = dump(indexes, "--verify-index-only");
        checkRan(verify, indexes);
        assertThat(verify.stderr()).as(verify.toString()).isBlank();
    }

    private static MemoryRecords txn(Map<Long, Integer> sequences, long pid, Compression codec, long timestamp,
                                     String... keyValues) {
        SimpleRecord[] records = records(timestamp, keyValues);
        int seq = sequences.getOrDefault(pid, 0);
        sequences.put(pid, seq + records.length);
        return MemoryRecords.withTransactionalRecords(codec, pid, (short) 0, seq, records);
    }

    private static MemoryRecords plain(Compression codec, long timestamp, String... keyValues) {
        return MemoryRecords.withRecords(codec, records(timestamp, keyValues));
    }

    private static SimpleRecord[] records(long timestamp, String... keyValues) {
        SimpleRecord[] records = new SimpleRecord[keyValues.length / 2];
        for (int i = 0; i < records.length; i++) {
            records[i] = new SimpleRecord(timestamp, keyValues[2 * i].getBytes(StandardCharsets.UTF_8),
                    keyValues[2 * i + 1].getBytes(StandardCharsets.UTF_8));
        }
        return records;
    }

    /** Every batch of the log as Varve reads it, following the cleaner's gaps. */
    private static List<Batch> readAll(PartitionLog log) {
        List<Batch> out = new ArrayList<>();
        long next = log.logStartOffset();
        while (next < log.logEndOffset()) {
            List<Batch> read = new ArrayList<>();
            for (FileChannelRecordBatch b : log.read(next, 1 << 20, log.logEndOffset(), true).records().batches()) {
                List<Long> offsets = new ArrayList<>();
                for (Record r : b) {
                    offsets.add(r.offset());
                }
                read.add(new Batch(b.baseOffset(), b.lastOffset(), b.countOrNull(), b.producerId(), b.isTransactional(),
                        b.isControlBatch(), b.deleteHorizonMs().toString(), b.compressionType().name, offsets));
            }
            assertThat(read).isNotEmpty();
            out.addAll(read);
            next = read.get(read.size() - 1).last() + 1;
        }
        return out;
    }

    private static List<Batch> parseLogDump(KafkaTool.Result result) {
        List<Batch> out = new ArrayList<>();
        for (String line : result.stdout().lines().toList()) {
            Matcher b = BATCH_LINE.matcher(line);
            Matcher r = RECORD_LINE.matcher(line);
            if (b.matches()) {
                assertThat(b.group(18)).as("isvalid: %s", line).isEqualTo("true");
                assertThat(b.group(15)).as("magic: %s", line).isEqualTo("2");
                out.add(new Batch(Long.parseLong(b.group(1)), Long.parseLong(b.group(2)), Integer.parseInt(b.group(3)),
                        Long.parseLong(b.group(6)), Boolean.parseBoolean(b.group(9)), Boolean.parseBoolean(b.group(10)),
                        b.group(11), b.group(16), new ArrayList<>()));
            } else if (r.matches()) {
                assertThat(out).as("a record line after a batch line: %s", line).isNotEmpty();
                out.get(out.size() - 1).recordOffsets().add(Long.parseLong(r.group(1)));
            } else {
                assertThat(line).as("a line of the dump").matches("^(Dumping .*|Log starting offset: \\d+|)$");
            }
        }
        return out;
    }

    private KafkaTool.Result dump(List<File> files, String... options) throws IOException, InterruptedException {
        List<String> args = new ArrayList<>();
        args.add("--files");
        args.add(files.stream().map(File::getPath).collect(Collectors.joining(",")));
        args.addAll(List.of(options));
        return KafkaTool.run(tmp, DUMP_LOG_SEGMENTS, args);
    }

    /**
     * The tool ran and dumped every file, reporting nothing but the offset gaps compaction leaves
     * ("Non-consecutive offsets", which Kafka prints for its own compacted segments too).
     */
    private static void checkRan(KafkaTool.Result result, List<File> files) {
        assertThat(result.exitCode()).as(result.toString()).isZero();
        for (File f : files) {
            assertThat(result.stdout()).as(result.toString()).contains("Dumping " + f.getPath() + "\n");
        }
        for (String marker : List.of("exception", "corrupt", "invalid bytes", "isvalid: false", "ignoring unknown file")) {
            assertThat(result.all().toLowerCase(Locale.ROOT)).as(result.toString()).doesNotContain(marker);
        }
        for (String line : result.stderr().lines().toList()) {
            assertThat(line).as(result.toString()).matches("^(Non-consecutive offsets in .*|\\s+-?\\d+ is followed by \\d+|)$");
        }
    }

    private static List<File> files(File dir, String suffix) throws IOException {
        try (Stream<Path> s = Files.list(dir.toPath())) {
            return s.filter(p -> p.getFileName().toString().endsWith(suffix)).map(Path::toFile).sorted().toList();
        }
    }

    private static final class NoOpScheduler implements Scheduler {
        @Override
        public void scheduleOnce(String name, Runnable task, long delayMs) {
        }

        @Override
        public void schedulePeriodic(String name, Runnable task, long delayMs, long periodMs) {
        }
    }

    /** A clock that moves only when told to. */
    private static final class ManualTime implements Time {
        private long nowMs;

        ManualTime(long nowMs) {
            this.nowMs = nowMs;
        }

        void advance(long ms) {
            nowMs += ms;
        }

        @Override
        public long milliseconds() {
            return nowMs;
        }

        @Override
        public long nanoseconds() {
            return nowMs * 1_000_000L;
        }

        @Override
        public void sleep(long ms) {
        }

        @Override
        public void waitObject(Object obj, Supplier<Boolean> condition, long deadlineMs) {
            throw new UnsupportedOperationException();
        }
    }
}
