package dev.varve.storage;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.record.internal.FileLogInputStream.FileChannelRecordBatch;
import org.apache.kafka.common.record.internal.FileRecords;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.record.internal.SimpleRecord;

import java.io.File;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Start-up verification over random logs (random batch sizes, timestamps that go back and forth,
 * several codecs, rolls, truncations, appends after reopening):
 * <ul>
 *   <li>no false alarm: a log closed cleanly always passes {@link SegmentRecovery#verify}, so nothing
 *       is ever cut or rebuilt for nothing;</li>
 *   <li>exact detection: one byte flipped anywhere a batch's CRC protects it (or in its length or
 *       magic) in any segment makes the load keep exactly the batches before it, and nothing read
 *       afterwards fails its CRC.</li>
 * </ul>
 */
class CorruptionProperties {
    private static final TopicPartition TP = new TopicPartition("rot", 0);
    private static final long T0 = 1_700_000_000_000L;
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

    private record Written(File dir, LogConfig config, List<String> values) {
    }

    /** A random log, closed cleanly; values.get(i) is the value at offset i. */
    private static Written write(long seed) throws IOException {
        Random random = new Random(seed);
        File dir = LogPropertySupport.newTempDir("rot").resolve("rot-0").toFile();
        LogConfig config = LogConfig.fromMap(Map.of(
                TopicConfig.SEGMENT_BYTES_CONFIG, 1024 + random.nextInt(4096),
                TopicConfig.INDEX_INTERVAL_BYTES_CONFIG, 1 + random.nextInt(600)));
        MockTime time = new MockTime(T0);
        ManualScheduler scheduler = new ManualScheduler(time);
        List<String> values = new ArrayList<>();
        Compression[] codecs = {Compression.NONE, Compression.NONE, Compression.gzip().build(), Compression.lz4().build()};
        int epoch = 0;
        for (int round = 0; round < 1 + random.nextInt(3); round++) {
            PartitionLog log = PartitionLog.open(dir, TP, config, time, scheduler, 0, 0, 0, true, false);
            int batches = 20 + random.nextInt(80);
            for (int b = 0; b < batches; b++) {
                int n = 1 + random.nextInt(5);
                SimpleRecord[] records = new SimpleRecord[n];
                long ts = random.nextInt(10) == 0 ? RecordBatch.NO_TIMESTAMP : T0 - 50_000 + random.nextInt(100_000);
                for (int r = 0; r < n; r++) {
                    String v = "s" + seed + "-o" + (values.size() + r) + "-" + "z".repeat(random.nextInt(60));
                    records[r] = new SimpleRecord(ts == RecordBatch.NO_TIMESTAMP ? ts : ts + r, null, v.getBytes(StandardCharsets.UTF_8));
                }
                if (random.nextInt(30) == 0) {
                    epoch++;
                }
                MemoryRecords batch = MemoryRecords.withRecords(codecs[random.nextInt(codecs.length)], records);
                LogAppendInfo info = log.appendAsLeader(batch, epoch);
                for (int r = 0; r < n; r++) {
                    values.add(new String(records[r].value().array(), StandardCharsets.UTF_8));
                }
                assertThat(info.lastOffset()).isEqualTo(values.size() - 1);
                if (random.nextInt(40) == 0) {
                    log.roll();
                }
                if (random.nextInt(60) == 0 && values.size() > 2) {
                    long to = values.size() - random.nextInt(Math.min(values.size() - 1, 8)) - 1;
                    log.truncateTo(to);
                    values.subList((int) log.logEndOffset(), values.size()).clear();
                }
            }
            log.flush();
            log.close();
        }
        return new Written(dir, config, values);
    }

    private static PartitionLog open(Written w, boolean verifyAll) throws IOException {
        MockTime time = new MockTime(T0);
        return PartitionLog.open(w.dir(), TP, w.config(), time, new ManualScheduler(time), 0, 0, 0, true, verifyAll);
    }

    private static List<String> readAll(PartitionLog log) {
        List<String> out = new ArrayList<>();
        long next = log.logStartOffset();
        while (next < log.logEndOffset()) {
            LogSlice slice = log.read(next, 1 << 16, log.logEndOffset(), true);
            for (RecordBatch b : slice.records().batches()) {
                assertThat(b.isValid()).isTrue();
                for (var r : b) {
                    if (r.offset() >= next) {
                        assertThat(r.offset()).isEqualTo(next);
                        out.add(StandardCharsets.UTF_8.decode(r.value()).toString());
                        next++;
                    }
                }
            }
        }
        return out;
    }

    @Property(tries = 25)
    void aCleanlyClosedLogAlwaysPassesVerification(@ForAll long seed) throws IOException {
        Written w = write(seed);
        PartitionLog log = open(w, false);
        try {
            SegmentRecovery recovery = new SegmentRecovery();
            for (LogSegment s : log.segments().all()) {
                assertThat(recovery.verify(s)).as("verification of %s", s).isNull();
            }
        } finally {
            log.close();
        }
        PartitionLog verified = open(w, true);
        try {
            assertThat(verified.damagedAtLoad()).isFalse();
            assertThat(readAll(verified)).isEqualTo(w.values());
        } finally {
            verified.close();
        }
    }

    @Property(tries = 50)
    void aFlippedProtectedByteCutsTheLogExactlyBeforeItsBatch(@ForAll long seed, @ForAll @IntRange(min = 1, max = 255) int mask)
            throws IOException {
        Written w = write(seed);
        Random random = new Random(seed * 31 + mask);
        File[] logs = w.dir().listFiles((d, name) -> name.endsWith(".log"));
        List<File> nonEmpty = new ArrayList<>();
        for (File f : logs) {
            if (f.length() > 0) {
                nonEmpty.add(f);
            }
        }
        File victim = nonEmpty.get(random.nextInt(nonEmpty.size()));
        List<long[]> batches = new ArrayList<>(); // {baseOffset, position, size}
        try (FileRecords records = FileRecords.open(victim, false)) {
            for (FileChannelRecordBatch b : records.batches()) {
                batches.add(new long[]{b.baseOffset(), b.position(), b.sizeInBytes()});
            }
        }
        long[] hit = batches.get(random.nextInt(batches.size()));
        // Protected: length (8-11), magic (16), the CRC and everything it covers (17..end).
        int within = random.nextInt(5) == 0 ? 8 + random.nextInt(4) : 16 + random.nextInt((int) hit[2] - 16);
        try (RandomAccessFile raf = new RandomAccessFile(victim, "rw")) {
            raf.seek(hit[1] + within);
            int b = raf.read();
            raf.seek(hit[1] + within);
            raf.write(b ^ mask);
        }
        PartitionLog log = open(w, true);
        try {
            assertThat(log.damagedAtLoad()).isTrue();
            assertThat(log.logEndOffset()).isEqualTo(hit[0]);
            assertThat(readAll(log)).isEqualTo(w.values().subList(0, (int) hit[0]));
        } finally {
            log.close();
        }
    }
}
