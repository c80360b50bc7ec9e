package dev.varve.storage;

import dev.varve.storage.CompactionSupport.Read;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.utils.Time;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Appends, reads and cleaning at the same time on one log, with real threads and the real clock: an
 * appender overwrites a small key space (rolling tiny segments, moving the high watermark), two readers
 * read the whole log again and again, a cleaner thread cleans as fast as it can. No read may fail or see
 * offsets go backwards, every record read must be one that was appended at that offset, and at the end
 * one more clean leaves exactly the latest value of every key.
 */
class CompactionConcurrencyTest {
    private static final TopicPartition TP = new TopicPartition("busy", 0);

    @TempDir
    Path tmp;

    @Test
    void appendsAndReadsGoOnWhileTheLogIsCleaned() throws Exception {
        ExecutorScheduler scheduler = new ExecutorScheduler(1, "test-deleter");
        // Replaced segments stay open for in-flight readers for file.delete.delay.ms, as in production.
        LogConfig config = CompactionSupport.compacted(1024, 60_000)
                .with(org.apache.kafka.common.config.TopicConfig.FILE_DELETE_DELAY_MS_CONFIG, 60_000L);
        PartitionLog log = PartitionLog.open(tmp.resolve("busy-0").toFile(), TP, config, Time.SYSTEM, scheduler);
        LogCleanerManager cleaner = new LogCleanerManager(CompactionSupport.cleanerConfig(4096), List.of(tmp.toFile()),
                Time.SYSTEM, () -> List.of(log), SegmentSwap.Hook.NONE);
        Map<Long, String> appended = new ConcurrentHashMap<>();
        Map<String, Long> latest = new ConcurrentHashMap<>();
        AtomicBoolean stop = new AtomicBoolean();
        List<Throwable> failures = new CopyOnWriteArrayList<>();
        AtomicInteger cleanRounds = new AtomicInteger();
        AtomicInteger reads = new AtomicInteger();

        Thread appender = new Thread(() -> {
            try {
                for (int i = 0; i < 1000 && failures.isEmpty(); i++) {
                    String key = "k" + (i % 37);
                    String value = "v" + i;
                    LogAppendInfo info = log.appendAsLeader(CompactionSupport.batch(System.currentTimeMillis(), key, value), 0);
                    appended.put(info.firstOffset(), key + "=" + value);
                    latest.put(key, info.firstOffset());
                    log.updateHighWatermark(log.logEndOffset());
                }
            } catch (Throwable t) {
                failures.add(t);
            } finally {
                stop.set(true);
            }
        }, "appender");
        List<Thread> readers = new ArrayList<>();
        for (int r = 0; r < 2; r++) {
            readers.add(new Thread(() -> {
                try {
                    while (!stop.get() && failures.isEmpty()) {
                        List<CompactionSupport.ReadBatch> batches = CompactionSupport.readAllBatches(log);
                        CompactionSupport.checkOffsets(batches);
                        for (CompactionSupport.ReadBatch b : batches) {
                            for (Read rec : b.records()) {
                                String expected = appended.get(rec.offset());
                                if (expected != null && !expected.equals(rec.key() + "=" + rec.value())) {
                                    throw new AssertionError("offset " + rec.offset() + " reads " + rec + ", appended " + expected);
                                }
                            }
                        }
                        reads.incrementAndGet();
                    }
                } catch (Throwable t) {
                    failures.add(t);
                }
            }, "reader-" + r));
        }
        Thread cleanerThread = new Thread(() -> {
            try {
                while (!stop.get() && failures.isEmpty()) {
                    if (cleaner.cleanFilthiestLog().isPresent()) {
                        cleanRounds.incrementAndGet();
                    }
                }
            } catch (Throwable t) {
                failures.add(t);
            }
        }, "cleaner");
        appender.start();
        readers.forEach(Thread::start);
        cleanerThread.start();
        appender.join(60_000);
        cleanerThread.join(60_000);
        for (Thread t : readers) {
            t.join(60_000);
        }
        failures.forEach(Throwable::printStackTrace);
        assertThat(failures).isEmpty();
        assertThat(cleanRounds.get()).as("cleaning rounds during the appends").isGreaterThan(0);
        assertThat(reads.get()).isGreaterThan(0);

        log.roll();
        log.updateHighWatermark(log.logEndOffset());
        cleaner.cleanUntilDone(100);
        List<Read> end = CompactionSupport.readAll(log);
        Map<String, Long> read = new HashMap<>();
        for (Read r : end) {
            assertThat(read.put(r.key(), r.offset())).as("one record per key").isNull();
        }
        assertThat(read).isEqualTo(latest);
        log.close();
        scheduler.close();
    }
}
