package dev.varve.storage;

import ch.qos.logback.classic.Level;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.record.internal.FileLogInputStream.FileChannelRecordBatch;
import org.apache.kafka.common.record.internal.FileRecords;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.stream.Stream;

/**
 * Shared generators, a batch-level model of a partition log and checks used by
 * {@link PartitionLogProperties} and {@link CrashRecoveryProperties}.
 */
final class LogPropertySupport {
    static final long T0 = 1_700_000_000_000L;

    private LogPropertySupport() {
    }

    // ------------------------------------------------------------------ generated specs

    /** One record to produce: value size (-1 = null value), key size (-1 = null key), timestamp delta from now, content seed. */
    record RecSpec(int valueSize, int keySize, long tsDelta, int seed) {
    }

    /** One producer batch: compression (0 none, 1 gzip, 2 lz4, 3 zstd, 4 snappy) and its records. */
    record BatchSpec(int compression, List<RecSpec> records) {
    }

    /** Tiny log settings. */
    record Cfg(int segmentBytes, int indexBytes, int indexInterval, long deleteDelayMs, boolean logAppendTime,
               long segmentMs) {
        LogConfig toLogConfig() {
            Map<String, Object> m = new HashMap<>();
            m.put(TopicConfig.SEGMENT_BYTES_CONFIG, segmentBytes);
            m.put(TopicConfig.SEGMENT_INDEX_BYTES_CONFIG, indexBytes);
            m.put(TopicConfig.INDEX_INTERVAL_BYTES_CONFIG, indexInterval);
            m.put(TopicConfig.FILE_DELETE_DELAY_MS_CONFIG, deleteDelayMs);
            m.put(TopicConfig.MESSAGE_TIMESTAMP_TYPE_CONFIG, logAppendTime ? "LogAppendTime" : "CreateTime");
            m.put(TopicConfig.SEGMENT_MS_CONFIG, segmentMs);
            m.put(TopicConfig.RETENTION_MS_CONFIG, -1L);
            m.put(TopicConfig.RETENTION_BYTES_CONFIG, -1L);
            m.put(LogConfig.RETENTION_MESSAGES_CONFIG, -1L);
            return LogConfig.fromMap(m);
        }
    }

    static Arbitrary<Cfg> configs() {
        return Combinators.combine(
                Arbitraries.integers().between(1024, 4096),
                Arbitraries.integers().between(120, 240),
                Arbitraries.integers().between(0, 256),
                Arbitraries.<Long>frequencyOf(Tuple2.of(1, Arbitraries.just(0L)), Tuple2.of(2, Arbitraries.longs().between(1, 2000))),
                Arbitraries.integers().between(0, 4).map(i -> i == 0),
                Arbitraries.<Long>frequencyOf(Tuple2.of(3, Arbitraries.just(7 * 24 * 3600_000L)),
                        Tuple2.of(1, Arbitraries.longs().between(1_000_000L, 50_000_000L)))
        ).as(Cfg::new);
    }

    /** Small helper so generator code reads as weights. */
    static final class Tuple2 {
        static <T> net.jqwik.api.Tuple.Tuple2<Integer, Arbitrary<? extends T>> of(int weight, Arbitrary<? extends T> a) {
            return net.jqwik.api.Tuple.of(weight, a);
        }
    }

    static Arbitrary<RecSpec> recSpecs() {
        Arbitrary<Integer> valueSizes = Arbitraries.<Integer>frequencyOf(
                Tuple2.of(1, Arbitraries.just(-1)),
                Tuple2.of(2, Arbitraries.just(0)),
                Tuple2.of(10, Arbitraries.integers().between(1, 40)),
                Tuple2.of(4, Arbitraries.integers().between(41, 300)));
        return Combinators.combine(
                valueSizes,
                Arbitraries.integers().between(-1, 8),
                Arbitraries.longs().between(-5_000_000L, 500_000L),
                Arbitraries.integers()
        ).as(RecSpec::new);
    }

    static Arbitrary<BatchSpec> batchSpecs(int maxRecords) {
        return Combinators.combine(
                Arbitraries.<Integer>frequencyOf(
                        Tuple2.of(6, Arbitraries.just(0)),
                        Tuple2.of(1, Arbitraries.just(1)),
                        Tuple2.of(1, Arbitraries.just(2)),
                        Tuple2.of(1, Arbitraries.just(3)),
                        Tuple2.of(1, Arbitraries.just(4))),
                recSpecs().list().ofMinSize(1).ofMaxSize(maxRecords)
        ).as(BatchSpec::new);
    }

    static Compression compression(int c) {
        return switch (c) {
            case 1 -> Compression.gzip().build();
            case 2 -> Compression.lz4().build();
            case 3 -> Compression.zstd().build();
            case 4 -> Compression.snappy().build();
            default -> Compression.NONE;
        };
    }

    static byte[] bytes(int size, int seed) {
        if (size < 0) {
            return null;
        }
        byte[] b = new byte[size];
        new Random(seed).nextBytes(b);
        return b;
    }

    // ------------------------------------------------------------------ the model

    /** A record as the model knows it. */
    record MRec(long offset, byte[] key, byte[] value, long timestamp) {
    }

    /** A batch as the model knows it. */
    record MBatch(long base, long last, int sizeBytes, int epoch, List<MRec> records) {
        boolean contains(long offset) {
            return base <= offset && offset <= last;
        }

        long maxTimestamp() {
            return records.stream().mapToLong(MRec::timestamp).max().orElse(-1);
        }

        @Override
        public String toString() {
            return "MBatch[" + base + "-" + last + ", " + sizeBytes + "B, epoch " + epoch + "]";
        }
    }

    /** Producer-style MemoryRecords (one buffer, several batches) for the specs. */
    static MemoryRecords build(List<BatchSpec> specs, long nowMs) {
        List<MemoryRecords> parts = new ArrayList<>();
        for (BatchSpec spec : specs) {
            SimpleRecord[] recs = new SimpleRecord[spec.records().size()];
            for (int i = 0; i < recs.length; i++) {
                RecSpec r = spec.records().get(i);
                recs[i] = new SimpleRecord(nowMs + r.tsDelta(), bytes(r.keySize(), ~r.seed()), bytes(r.valueSize(), r.seed()));
            }
            parts.add(MemoryRecords.withRecords(compression(spec.compression()), recs));
        }
        return parts.size() == 1 ? parts.get(0) : TestRecords.concat(parts.toArray(new MemoryRecords[0]));
    }

    /** What the model expects after an append of {@code specs} (buffer already rewritten by the log). */
    static List<MBatch> expectedBatches(MemoryRecords appended, List<BatchSpec> specs, long nowMs, boolean logAppendTime) {
        List<MBatch> out = new ArrayList<>();
        int i = 0;
        for (MutableRecordBatch b : appended.batches()) {
            BatchSpec spec = specs.get(i++);
            List<MRec> recs = new ArrayList<>();
            for (int j = 0; j < spec.records().size(); j++) {
                RecSpec r = spec.records().get(j);
                long ts = logAppendTime ? nowMs : nowMs + r.tsDelta();
                recs.add(new MRec(b.baseOffset() + j, bytes(r.keySize(), ~r.seed()), bytes(r.valueSize(), r.seed()), ts));
            }
            out.add(new MBatch(b.baseOffset(), b.lastOffset(), b.sizeInBytes(), b.partitionLeaderEpoch(), List.copyOf(recs)));
        }
        return out;
    }

    // ------------------------------------------------------------------ reading back

    /** A batch as read from a file slice. */
    record RBatch(long base, long last, int sizeBytes, int epoch, int position, List<MRec> records) {
    }

    static List<RBatch> readBatches(FileRecords records) {
        List<RBatch> out = new ArrayList<>();
        for (FileChannelRecordBatch b : records.batches()) {
            b.ensureValid();
            List<MRec> recs = new ArrayList<>();
            for (Record r : b) {
                recs.add(new MRec(r.offset(), toBytes(r.key()), toBytes(r.value()), r.timestamp()));
            }
            out.add(new RBatch(b.baseOffset(), b.lastOffset(), b.sizeInBytes(), b.partitionLeaderEpoch(), b.position(), recs));
        }
        return out;
    }

    static byte[] toBytes(ByteBuffer b) {
        if (b == null) {
            return null;
        }
        byte[] out = new byte[b.remaining()];
        b.duplicate().get(out);
        return out;
    }

    /** Null when equal, else a description of the first difference. */
    static String diff(MBatch expected, RBatch actual) {
        if (expected.base() != actual.base() || expected.last() != actual.last() || expected.sizeBytes() != actual.sizeBytes()
                || expected.epoch() != actual.epoch()) {
            return "batch header differs: expected " + expected + " got [" + actual.base() + "-" + actual.last() + ", "
                    + actual.sizeBytes() + "B, epoch " + actual.epoch() + "]";
        }
        if (expected.records().size() != actual.records().size()) {
            return "record count of " + expected + " differs: " + actual.records().size();
        }
        for (int i = 0; i < expected.records().size(); i++) {
            MRec e = expected.records().get(i);
            MRec a = actual.records().get(i);
            if (e.offset() != a.offset() || e.timestamp() != a.timestamp() || !Arrays.equals(e.key(), a.key())
                    || !Arrays.equals(e.value(), a.value())) {
                return "record " + i + " of " + expected + " differs: expected offset " + e.offset() + " ts " + e.timestamp()
                        + " value " + len(e.value()) + "B, got offset " + a.offset() + " ts " + a.timestamp() + " value "
                        + len(a.value()) + "B";
            }
        }
        return null;
    }

    private static String len(byte[] b) {
        return b == null ? "null" : Integer.toString(b.length);
    }

    /**
     * Reads [from, logEnd) in chunks of at most {@code chunkBytes} (one batch minimum) and returns the
     * batches in order. Fails when a chunk makes no progress or is not whole batches.
     */
    static List<RBatch> readAll(PartitionLog log, long from, long upTo, int chunkBytes) {
        List<RBatch> out = new ArrayList<>();
        long next = from;
        int guard = 0;
        while (next < upTo) {
            if (++guard > 1_000_000) {
                throw new AssertionError("readAll does not terminate at " + next);
            }
            LogSlice slice = log.read(next, chunkBytes, upTo, true);
            List<RBatch> batches = readBatches(slice.records());
            int sum = batches.stream().mapToInt(RBatch::sizeBytes).sum();
            if (sum != slice.sizeInBytes()) {
                throw new AssertionError("read(" + next + ") returned " + slice.sizeInBytes() + " bytes but whole batches cover " + sum);
            }
            if (batches.isEmpty()) {
                throw new AssertionError("read(" + next + ", minOneBatch) below " + upTo + " returned nothing; log " + log);
            }
            if (!(batches.get(0).base() <= next && next <= batches.get(0).last())) {
                throw new AssertionError("read(" + next + ") starts with batch " + batches.get(0).base() + "-" + batches.get(0).last());
            }
            out.addAll(batches);
            next = batches.get(batches.size() - 1).last() + 1;
        }
        return out;
    }

    /** The leader-epoch entries a log holding {@code batches} from {@code logStart} on should report. */
    static List<EpochEntry> expectedEpochs(List<MBatch> batches, long logStart) {
        List<EpochEntry> out = new ArrayList<>();
        int latest = -1;
        for (MBatch b : batches) {
            if (b.last() < logStart || b.epoch() < 0) {
                continue;
            }
            if (b.epoch() > latest) {
                out.add(new EpochEntry(b.epoch(), Math.max(b.base(), logStart)));
                latest = b.epoch();
            }
        }
        return out;
    }

    /** The model's answer to ListOffsets by time. */
    static Optional<MRec> firstAtOrAfter(List<MBatch> batches, long logStart, long timestamp) {
        for (MBatch b : batches) {
            for (MRec r : b.records()) {
                if (r.offset() >= logStart && r.timestamp() >= timestamp) {
                    return Optional.of(r);
                }
            }
        }
        return Optional.empty();
    }

    static MBatch batchOf(List<MBatch> batches, long offset) {
        for (MBatch b : batches) {
            if (b.contains(offset)) {
                return b;
            }
        }
        return null;
    }

    /** Timestamps worth asking about: existing ones, their neighbours, extremes and random ones. */
    static List<Long> probeTimestamps(List<MBatch> batches, Random random, int count) {
        List<Long> all = new ArrayList<>();
        for (MBatch b : batches) {
            for (MRec r : b.records()) {
                all.add(r.timestamp());
            }
        }
        List<Long> out = new ArrayList<>(List.of(Long.MIN_VALUE, 0L, Long.MAX_VALUE));
        if (!all.isEmpty()) {
            long min = all.stream().mapToLong(Long::longValue).min().getAsLong();
            long max = all.stream().mapToLong(Long::longValue).max().getAsLong();
            out.add(min);
            out.add(max);
            out.add(max + 1);
            for (int i = 0; i < count; i++) {
                long t = all.get(random.nextInt(all.size()));
                out.add(t + random.nextInt(3) - 1);
            }
            out.add(min + (long) (random.nextDouble() * (max - min + 1)));
        }
        return out;
    }

    // ------------------------------------------------------------------ files

    private static Path root;

    /**
     * A fresh directory under one per-JVM root that a shutdown hook removes: a try abandoned by
     * jqwik's shrinking timeout may never reach its own clean-up.
     */
    static synchronized Path newTempDir(String prefix) throws IOException {
        if (root == null) {
            root = Files.createTempDirectory("varve-props");
            Path r = root;
            Runtime.getRuntime().addShutdownHook(new Thread(() -> deleteRecursively(r)));
        }
        return Files.createTempDirectory(root, prefix);
    }

    /** Removes the per-JVM root (called when a property class is done). */
    static synchronized void deleteTempRoot() {
        deleteRecursively(root);
        root = null;
    }

    static void deleteRecursively(Path dir) {
        if (dir == null || !Files.exists(dir)) {
            return;
        }
        try (Stream<Path> walk = Files.walk(dir)) {
            walk.sorted(Comparator.reverseOrder()).forEach(p -> {
                try {
                    Files.deleteIfExists(p);
                } catch (IOException e) {
                    // best effort
                }
            });
        } catch (IOException | java.io.UncheckedIOException e) {
            // best effort: files may vanish while walking (delayed segment deletions)
        }
    }

    /** Silences the storage engine's WARN logs (recovery is expected to complain) while properties run. */
    static final class QuietLogs implements AutoCloseable {
        private final ch.qos.logback.classic.Logger logger =
                (ch.qos.logback.classic.Logger) LoggerFactory.getLogger("dev.varve.storage");
        private final Level previous = logger.getLevel();

        QuietLogs() {
            logger.setLevel(Level.ERROR);
        }

        @Override
        public void close() {
            logger.setLevel(previous);
        }
    }
}
