package dev.varve.bench;

import dev.varve.storage.LogConfig;
import dev.varve.storage.LogSlice;
import dev.varve.storage.PartitionLog;
import org.apache.kafka.common.config.TopicConfig;
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

import java.util.Random;
import java.util.concurrent.TimeUnit;

/**
 * The fetch path's lookup: {@link PartitionLog#read}{@code (randomOffset, maxBytes, logEndOffset, true)}
 * on a prewritten log, average time per call. A read returns a file slice (channel, position,
 * length) ready for sendfile; no record bytes are copied, so this measures finding the slice: the
 * segment lookup, the offset-index search, reading the headers of the batches around the start and
 * the end of the slice.
 *
 * <p>The log: {@link #logMiB} MiB of 16 KiB batches (16 records each) in segments of
 * {@link #segmentMiB} MiB, default {@code index.interval.bytes} (4 KiB, so every batch is indexed),
 * all in the page cache. Offsets are drawn uniformly from the whole log.
 */
@State(Scope.Benchmark)
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 3)
public class ReadBenchmark {
    @Param({"256"})
    public int logMiB;

    @Param({"64"})
    public int segmentMiB;

    @Param({"1048576"})
    public int maxBytes;

    private static final int OFFSETS = 1 << 16;

    private PartitionLog log;
    private long logEndOffset;
    private final long[] offsets = new long[OFFSETS];
    private int next;

    @Setup(Level.Trial)
    public void writeLog() {
        LogConfig config = LogConfig.DEFAULT.with(TopicConfig.SEGMENT_BYTES_CONFIG, segmentMiB * 1024 * 1024);
        log = BenchSupport.prewrite(BenchSupport.newLogDir("read"), config, (long) logMiB * 1024 * 1024,
                System.currentTimeMillis());
        logEndOffset = log.logEndOffset();
        Random random = new Random(1);
        for (int i = 0; i < OFFSETS; i++) {
            offsets[i] = (long) (random.nextDouble() * logEndOffset);
        }
        // Check the setup once: a read returns whole batches up to maxBytes.
        LogSlice slice = log.read(offsets[0], maxBytes, logEndOffset, true);
        if (slice.sizeInBytes() <= 0 || slice.sizeInBytes() > Math.max(maxBytes, BenchSupport.BATCH_BYTES)) {
            throw new IllegalStateException("unexpected read of " + slice.sizeInBytes() + " bytes");
        }
    }

    @Benchmark
    public LogSlice read() {
        int i = next;
        next = (i + 1) & (OFFSETS - 1);
        return log.read(offsets[i], maxBytes, logEndOffset, true);
    }

    @TearDown(Level.Trial)
    public void deleteLog() {
        BenchSupport.closeAndDelete(log);
    }
}
