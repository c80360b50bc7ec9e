package dev.varve.bench;

import dev.varve.storage.LogAppendInfo;
import dev.varve.storage.LogConfig;
import dev.varve.storage.PartitionLog;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
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
import org.openjdk.jmh.annotations.Threads;
import org.openjdk.jmh.annotations.Warmup;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * Leader appends on one thread, one uncompressed 16 KiB batch (16 records of ~1 KiB) per operation,
 * into the page cache (default flush policy: no fsync), default {@code segment.bytes} (1 GiB).
 *
 * <ul>
 *   <li>{@code append}: {@link PartitionLog#appendAsLeader}: validation (CRC32C over the batch, a walk
 *       over its records), offset assignment in place, the file write, index entries.</li>
 *   <li>{@code baselineFileChannelWrite}: the same bytes written with a bare {@link FileChannel#write}
 *       to a plain file under the same reset policy: what this machine's page cache allows, so the
 *       Varve figure can be read as a fraction of it on a noisy shared machine.</li>
 * </ul>
 *
 * <p>Throughput is reported in ops/s; one op is exactly {@link BenchSupport#BATCH_BYTES} = 16,384
 * bytes, so MB/s = ops/s x 0.016384 (MiB/s = ops/s / 64).
 *
 * <p>The batches are built once (a ring of 64). An append rewrites the batch in place (base offset,
 * leader epoch) and a produced batch must arrive with base offset 0, so before each append the base
 * offset is set back to 0 with {@code setLastOffset(15)}: the base offset is outside the CRC, so the
 * batch stays valid and nothing is copied.
 *
 * <p>Disk use and dirty page cache are bounded: each iteration starts a fresh file; when it reaches
 * {@code logResetMiB} the benchmark switches to a new empty one and a background thread deletes the
 * old one, which drops its dirty pages. Without this the kernel starts throttling writers to the
 * disk's speed after one or two GB of dirty data, and the benchmark would measure the disk.
 */
@BenchmarkMode(Mode.Throughput)
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 3)
@Threads(1)
public class AppendBenchmark {
    private static final int RING = 64; // 1 MiB of pre-built batches

    /** The pre-built batches and the background deleter, shared by both benchmarks. */
    @State(Scope.Thread)
    public static class Batches {
        /** MiB written to one log (or file) before the benchmark moves to a fresh one. */
        @Param({"1024"})
        public int logResetMiB;

        final MemoryRecords[] ring = new MemoryRecords[RING];
        final MutableRecordBatch[] ringBatches = new MutableRecordBatch[RING];
        long maxBytesPerLog;
        ExecutorService deleter;
        private int next;

        @Setup(Level.Trial)
        public void build() {
            maxBytesPerLog = (long) logResetMiB * 1024 * 1024;
            Random random = new Random(7);
            long now = System.currentTimeMillis();
            for (int i = 0; i < RING; i++) {
                ring[i] = BenchSupport.batch(now, random);
                ringBatches[i] = ring[i].batches().iterator().next();
            }
            deleter = Executors.newSingleThreadExecutor(r -> {
                Thread t = new Thread(r, "bench-log-deleter");
                t.setDaemon(true);
                return t;
            });
        }

        int nextSlot() {
            int i = next;
            next = (i + 1) & (RING - 1);
            return i;
        }

        @TearDown(Level.Trial)
        public void stopDeleter() throws InterruptedException {
            deleter.shutdown();
            if (!deleter.awaitTermination(120, TimeUnit.SECONDS)) {
                throw new IllegalStateException("file deletion did not finish");
            }
        }
    }

    /** A Varve partition log, fresh for each iteration. */
    @State(Scope.Thread)
    public static class VarveLog {
        PartitionLog log;
        long bytesInLog;

        @Setup(Level.Iteration)
        public void open() {
            log = BenchSupport.open(BenchSupport.newLogDir("append"), LogConfig.DEFAULT);
            bytesInLog = 0;
        }

        void switchLog(Batches batches) {
            PartitionLog old = log;
            open();
            batches.deleter.execute(() -> BenchSupport.closeAndDelete(old));
        }

        @TearDown(Level.Iteration)
        public void delete() {
            BenchSupport.closeAndDelete(log);
        }
    }

    /** A plain file written with FileChannel.write, fresh for each iteration. */
    @State(Scope.Thread)
    public static class RawFile {
        Path dir;
        FileChannel channel;
        long bytesInFile;

        @Setup(Level.Iteration)
        public void open() throws IOException {
            Files.createDirectories(BenchSupport.BASE_DIR);
            dir = Files.createTempDirectory(BenchSupport.BASE_DIR, "append-raw");
            channel = FileChannel.open(dir.resolve("00000000000000000000.log"),
                    StandardOpenOption.CREATE_NEW, StandardOpenOption.READ, StandardOpenOption.WRITE);
            bytesInFile = 0;
        }

        void switchFile(Batches batches) throws IOException {
            FileChannel oldChannel = channel;
            Path oldDir = dir;
            open();
            batches.deleter.execute(() -> {
                try {
                    oldChannel.close();
                    BenchSupport.deleteRecursively(oldDir);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
        }

        @TearDown(Level.Iteration)
        public void delete() throws IOException {
            channel.close();
            BenchSupport.deleteRecursively(dir);
        }
    }

    @Benchmark
    public LogAppendInfo append(Batches batches, VarveLog varve) {
        int i = batches.nextSlot();
        batches.ringBatches[i].setLastOffset(BenchSupport.RECORDS_PER_BATCH - 1); // base offset back to 0
        LogAppendInfo info = varve.log.appendAsLeader(batches.ring[i], 0);
        varve.bytesInLog += BenchSupport.BATCH_BYTES;
        if (varve.bytesInLog >= batches.maxBytesPerLog) {
            varve.switchLog(batches);
        }
        return info;
    }

    @Benchmark
    public int baselineFileChannelWrite(Batches batches, RawFile raw) throws IOException {
        int i = batches.nextSlot();
        ByteBuffer buffer = batches.ring[i].buffer().duplicate();
        int written = 0;
        while (buffer.hasRemaining()) {
            written += raw.channel.write(buffer);
        }
        raw.bytesInFile += written;
        if (raw.bytesInFile >= batches.maxBytesPerLog) {
            raw.switchFile(batches);
        }
        return written;
    }
}
