package dev.varve.bench;

import dev.varve.storage.CleanerConfig;
import dev.varve.storage.LogCleanerManager;
import dev.varve.storage.LogConfig;
import dev.varve.storage.LogManager;
import dev.varve.storage.LogManagerConfig;
import dev.varve.storage.PartitionLog;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MemoryRecordsBuilder;
import org.apache.kafka.common.utils.Time;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * Log cleaner throughput: one operation is one cleaning round ({@link LogCleanerManager#cleanFilthiestLog})
 * over a freshly copied compacted log of {@code logMiB} MiB that is entirely dirty: the key-hash map is
 * built over the whole log (it holds every key), then every segment is read, filtered to the latest
 * record per key, rewritten (decompressed and recompressed for lz4), fsynced and swapped in.
 *
 * <p>Records have {@code keys} distinct 16-byte keys drawn at random and ~1 KiB values (half random,
 * half repeated bytes, so lz4 has something to compress); 16 records per batch; 16 MiB segments. The
 * copy of the uncleaned log is made (and fsynced) before each operation and is not timed; the round's
 * fsync of its new segments is.
 *
 * <p>Report: average time per operation; cleaning throughput in MB/s of input is the log's size
 * (printed by the set-up, about {@code logMiB} MiB) divided by it.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
@Warmup(iterations = 2, time = 10)
@Measurement(iterations = 3, time = 10)
public class CleanerBenchmark {
    private static final int RECORDS_PER_BATCH = 16;
    private static final int VALUE_BYTES = 1000;

    @State(Scope.Benchmark)
    public static class Template {
        /** Size of the log to clean. */
        @Param({"64"})
        public int logMiB;

        /** Distinct keys: the share of records the cleaner keeps is about keys / records. */
        @Param({"10000"})
        public int keys;

        /** Codec of every batch: "none" or "lz4". */
        @Param({"none", "lz4"})
        public String codec;

        Path template;
        long inputBytes;

        @Setup(Level.Trial)
        public void write() throws IOException {
            template = Files.createTempDirectory(Files.createDirectories(BenchSupport.BASE_DIR), "cleaner-template");
            Compression compression = codec.equals("lz4") ? Compression.lz4().build() : Compression.NONE;
            LogManager manager = manager(template);
            try {
                PartitionLog log = manager.getOrCreateLog(BenchSupport.TP);
                Random random = new Random(42);
                long ts = 1_700_000_000_000L;
                while (log.size() < (long) logMiB * 1024 * 1024) {
                    log.appendAsLeader(batch(compression, random, keys, ts), 0);
                    ts += RECORDS_PER_BATCH;
                }
                log.roll();
                log.updateHighWatermark(log.logEndOffset());
                inputBytes = log.size();
            } finally {
                manager.close();
            }
            System.out.printf("%n[CleanerBenchmark] log of %d bytes (%.1f MB), codec %s, %d keys%n",
                    inputBytes, inputBytes / 1e6, codec, keys);
        }

        @TearDown(Level.Trial)
        public void delete() throws IOException {
            BenchSupport.deleteRecursively(template);
        }
    }

    /** A fresh copy of the template, opened, per operation. */
    @State(Scope.Thread)
    public static class Copy {
        Path dir;
        LogManager manager;
        LogCleanerManager cleaner;

        @Setup(Level.Invocation)
        public void copy(Template template) throws IOException {
            dir = Files.createTempDirectory(BenchSupport.BASE_DIR, "cleaner-run");
            try (Stream<Path> walk = Files.walk(template.template)) {
                for (Path p : walk.toList()) {
                    Path target = dir.resolve(template.template.relativize(p).toString());
                    if (Files.isDirectory(p)) {
                        Files.createDirectories(target);
                    } else {
                        Files.copy(p, target);
                        // Untimed: a real dirty section was written long ago and is on disk already; the
                        // round's own fsync of it should not measure writing back a fresh copy.
                        try (java.nio.channels.FileChannel ch = java.nio.channels.FileChannel.open(target,
                                java.nio.file.StandardOpenOption.WRITE)) {
                            ch.force(true);
                        }
                    }
                }
            }
            manager = manager(dir);
            cleaner = manager.cleaner().orElseThrow();
        }

        @TearDown(Level.Invocation)
        public void delete() throws IOException {
            manager.close();
            BenchSupport.deleteRecursively(dir);
        }
    }

    @Benchmark
    public long clean(Copy copy) {
        LogCleanerManager.CleanResult result = copy.cleaner.cleanFilthiestLog()
                .orElseThrow(() -> new IllegalStateException("nothing to clean"));
        if (!result.completed()) {
            throw new IllegalStateException("cleaning round did not complete: " + result);
        }
        return result.bytesRead();
    }

    private static LogManager manager(Path dir) {
        LogConfig config = LogConfig.fromMap(Map.of(
                TopicConfig.CLEANUP_POLICY_CONFIG, "compact",
                TopicConfig.SEGMENT_BYTES_CONFIG, 16 * 1024 * 1024,
                TopicConfig.MIN_CLEANABLE_DIRTY_RATIO_CONFIG, 0.0,
                TopicConfig.MESSAGE_TIMESTAMP_BEFORE_MAX_MS_CONFIG, Long.MAX_VALUE,
                TopicConfig.FILE_DELETE_DELAY_MS_CONFIG, 0L));
        CleanerConfig cleaner = CleanerConfig.fromMap(Map.of(CleanerConfig.DEDUPE_BUFFER_SIZE, 32L * 1024 * 1024));
        LogManager manager = new LogManager(LogManagerConfig.defaults(List.of(dir.toFile())).withCleaner(cleaner),
                topic -> config, Time.SYSTEM, BenchSupport.NO_OP_SCHEDULER);
        try {
            manager.startup();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return manager;
    }

    private static MemoryRecords batch(Compression compression, Random random, int keys, long ts) {
        ByteBuffer buffer = ByteBuffer.allocate(RECORDS_PER_BATCH * (VALUE_BYTES + 64) + 128);
        MemoryRecordsBuilder builder = MemoryRecords.builder(buffer, compression, TimestampType.CREATE_TIME, 0L);
        byte[] value = new byte[VALUE_BYTES];
        for (int i = 0; i < RECORDS_PER_BATCH; i++) {
            byte[] key = String.format("key-%012d", random.nextInt(keys)).getBytes(StandardCharsets.UTF_8);
            random.nextBytes(value);
            java.util.Arrays.fill(value, VALUE_BYTES / 2, VALUE_BYTES, (byte) i);
            builder.append(ts + i, key, value);
        }
        return builder.build();
    }
}
