package dev.varve.bench;

import dev.varve.storage.LogConfig;
import dev.varve.storage.PartitionLog;
import dev.varve.storage.Scheduler;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MemoryRecordsBuilder;
import org.apache.kafka.common.utils.Time;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Random;

/** Shared pieces of the storage benchmarks: batches as a producer builds them, scratch log directories. */
final class BenchSupport {
    /** Where benchmark logs live: {@code -Dvarve.bench.dir=...}, else the JVM's temp directory. */
    static final Path BASE_DIR = Path.of(System.getProperty("varve.bench.dir", System.getProperty("java.io.tmpdir")));

    static final TopicPartition TP = new TopicPartition("bench", 0);

    /** Size of every benchmark batch on disk and on the wire: exactly 16 KiB. */
    static final int BATCH_BYTES = 16 * 1024;

    /** Records per batch: 16 records of about 1 KiB (1012-byte values plus record framing). */
    static final int RECORDS_PER_BATCH = 16;

    private BenchSupport() {
    }

    /**
     * An uncompressed v2 batch of {@link #RECORDS_PER_BATCH} records with no key, as a producer sends
     * it (base offset 0), exactly {@link #BATCH_BYTES} bytes long; record i has timestamp
     * {@code firstTimestamp + i}.
     */
    static MemoryRecords batch(long firstTimestamp, Random random) {
        // Framing: 61-byte batch header; per record 9 bytes (length 2, attributes 1, timestamp delta 1,
        // offset delta 1, key length 1, value length 2, header count 1) for values of 64..8191 bytes.
        int perRecord = (BATCH_BYTES - 61) / RECORDS_PER_BATCH;
        int valueBytes = perRecord - 9;
        int lastValueBytes = valueBytes + (BATCH_BYTES - 61) % RECORDS_PER_BATCH;
        ByteBuffer buffer = ByteBuffer.allocate(BATCH_BYTES + 1024);
        MemoryRecordsBuilder builder = MemoryRecords.builder(buffer, Compression.NONE, TimestampType.CREATE_TIME, 0L);
        for (int i = 0; i < RECORDS_PER_BATCH; i++) {
            byte[] value = new byte[i == RECORDS_PER_BATCH - 1 ? lastValueBytes : valueBytes];
            random.nextBytes(value);
            builder.append(firstTimestamp + i, null, value);
        }
        MemoryRecords records = builder.build();
        if (records.sizeInBytes() != BATCH_BYTES) {
            throw new IllegalStateException("benchmark batch is " + records.sizeInBytes() + " bytes, not " + BATCH_BYTES);
        }
        return records;
    }

    /** A new, empty directory for one partition log under {@link #BASE_DIR}. */
    static Path newLogDir(String prefix) {
        try {
            Files.createDirectories(BASE_DIR);
            return Files.createTempDirectory(BASE_DIR, prefix).resolve(TP.toString());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static PartitionLog open(Path dir, LogConfig config) {
        try {
            Files.createDirectories(dir);
            return PartitionLog.open(dir.toFile(), TP, config, Time.SYSTEM, NO_OP_SCHEDULER);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Closes the log (no fsync) and deletes its directory and the temp directory holding it. */
    static void closeAndDelete(PartitionLog log) {
        try {
            log.close();
            deleteRecursively(log.dir().toPath().getParent());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static void deleteRecursively(Path root) throws IOException {
        org.apache.kafka.common.utils.Utils.delete(root.toFile());
    }

    /**
     * Writes {@code totalBytes} of 16 KiB batches under leader epoch 0. Record timestamps increase by
     * 1 ms per record from {@code firstTimestamp}. Returns the open log.
     */
    static PartitionLog prewrite(Path dir, LogConfig config, long totalBytes, long firstTimestamp) {
        PartitionLog log = open(dir, config);
        Random random = new Random(42);
        long batches = totalBytes / BATCH_BYTES;
        for (long b = 0; b < batches; b++) {
            log.appendAsLeader(batch(firstTimestamp + b * RECORDS_PER_BATCH, random), 0);
        }
        log.updateHighWatermark(log.logEndOffset());
        return log;
    }

    /** Ignores every task: benchmarks delete their own files, and nothing else is scheduled by appends. */
    static final Scheduler NO_OP_SCHEDULER = new Scheduler() {
        @Override
        public void scheduleOnce(String name, Runnable task, long delayMs) {
        }

        @Override
        public void schedulePeriodic(String name, Runnable task, long delayMs, long periodMs) {
        }
    };
}
