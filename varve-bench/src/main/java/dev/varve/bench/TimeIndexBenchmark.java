package dev.varve.bench;

import dev.varve.storage.LogConfig;
import dev.varve.storage.PartitionLog;
import dev.varve.storage.index.TimeIndex;
import dev.varve.storage.index.TimestampOffset;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.record.internal.FileRecords;
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
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.TimeUnit;

/**
 * ListOffsets by time, average time per call:
 * <ul>
 *   <li>{@code offsetForTimestamp}: {@link PartitionLog#offsetForTimestamp}{@code (randomTimestamp, logEndOffset)}
 *       on a prewritten log ({@code logMiB} MiB of 16 KiB batches in {@code segmentMiB} MiB segments)
 *       whose record timestamps increase by 1 ms per record. It picks the segment, searches its time
 *       index and offset index, reads batch headers from there, then iterates the records of the
 *       batch that holds the answer.</li>
 *   <li>{@code timeIndexLookup}: {@link TimeIndex#lookup} alone on an index of {@code indexEntries}
 *       entries, memory-mapped and in the page cache. 4,096 entries is what a 64 MiB segment of
 *       16 KiB batches holds; 873,813 is a full default 10 MiB time index.</li>
 * </ul>
 * Timestamps are drawn uniformly from the range the log (or the index) covers.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Fork(value = 1, jvmArgsAppend = {"-Xms1g", "-Xmx1g"})
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 3)
public class TimeIndexBenchmark {
    private static final int PROBES = 1 << 16;

    /** A prewritten partition log. */
    @State(Scope.Benchmark)
    public static class Log {
        @Param({"256"})
        public int logMiB;

        @Param({"64"})
        public int segmentMiB;

        PartitionLog log;
        long logEndOffset;
        final long[] timestamps = new long[PROBES];

        @Setup(Level.Trial)
        public void write() {
            long firstTimestamp = System.currentTimeMillis() - 24 * 3600 * 1000L;
            LogConfig config = LogConfig.DEFAULT.with(TopicConfig.SEGMENT_BYTES_CONFIG, segmentMiB * 1024 * 1024);
            log = BenchSupport.prewrite(BenchSupport.newLogDir("timeindex"), config, (long) logMiB * 1024 * 1024,
                    firstTimestamp);
            logEndOffset = log.logEndOffset();
            Random random = new Random(3);
            for (int i = 0; i < PROBES; i++) {
                timestamps[i] = firstTimestamp + (long) (random.nextDouble() * logEndOffset); // 1 ms per record
            }
            // Check the setup once: record n has timestamp firstTimestamp + n.
            Optional<FileRecords.TimestampAndOffset> found = log.offsetForTimestamp(timestamps[0], logEndOffset);
            if (found.isEmpty() || found.get().offset != timestamps[0] - firstTimestamp) {
                throw new IllegalStateException("offsetForTimestamp(" + timestamps[0] + ") = " + found
                        + ", expected offset " + (timestamps[0] - firstTimestamp));
            }
        }

        @TearDown(Level.Trial)
        public void delete() {
            BenchSupport.closeAndDelete(log);
        }
    }

    /** A standalone time index: one entry per 16 KiB batch of 16 records, 16 ms apart. */
    @State(Scope.Benchmark)
    public static class Index {
        private static final long BASE_OFFSET = 1_000_000L;

        @Param({"4096", "873813"})
        public int indexEntries;

        Path dir;
        TimeIndex index;
        final long[] timestamps = new long[PROBES];

        @Setup(Level.Trial)
        public void build() throws IOException {
            long firstTimestamp = System.currentTimeMillis() - 24 * 3600 * 1000L;
            Files.createDirectories(BenchSupport.BASE_DIR);
            dir = Files.createTempDirectory(BenchSupport.BASE_DIR, "timeindex-lookup");
            Path file = dir.resolve(String.format("%020d.timeindex", BASE_OFFSET));
            index = new TimeIndex(file.toFile(), BASE_OFFSET, (indexEntries + 1) * TimeIndex.ENTRY_SIZE);
            for (int i = 0; i < indexEntries; i++) {
                index.maybeAppend(firstTimestamp + 16L * i + 15, BASE_OFFSET + 16L * i + 15, false);
            }
            if (index.entries() != indexEntries) {
                throw new IllegalStateException("time index holds " + index.entries() + " entries, not " + indexEntries);
            }
            Random random = new Random(5);
            for (int i = 0; i < PROBES; i++) {
                timestamps[i] = firstTimestamp + (long) (random.nextDouble() * 16L * indexEntries);
            }
        }

        @TearDown(Level.Trial)
        public void delete() throws IOException {
            index.close();
            BenchSupport.deleteRecursively(dir);
        }
    }

    /** Which probe comes next (per thread). */
    @State(Scope.Thread)
    public static class Cursor {
        private int next;

        int next() {
            int i = next;
            next = (i + 1) & (PROBES - 1);
            return i;
        }
    }

    @Benchmark
    public Optional<FileRecords.TimestampAndOffset> offsetForTimestamp(Log log, Cursor cursor) {
        return log.log.offsetForTimestamp(log.timestamps[cursor.next()], log.logEndOffset);
    }

    @Benchmark
    public TimestampOffset timeIndexLookup(Index index, Cursor cursor) {
        return index.index.lookup(index.timestamps[cursor.next()]);
    }
}
