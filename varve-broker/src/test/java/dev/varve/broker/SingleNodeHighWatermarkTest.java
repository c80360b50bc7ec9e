package dev.varve.broker;

import dev.varve.storage.ExecutorScheduler;
import dev.varve.storage.LogConfig;
import dev.varve.storage.LogManager;
import dev.varve.storage.LogManagerConfig;
import dev.varve.storage.PartitionLog;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.utils.Time;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * On a single node every append is committed at once; the high watermark (what consumers may read,
 * what ListOffsets answers as the end) must only ever move forward, however many producers append
 * to one partition at the same time.
 */
class SingleNodeHighWatermarkTest {
    private static final int WRITERS = 4;
    private static final int APPENDS_EACH = 20_000;

    @Test
    void concurrentAppendsNeverMoveTheHighWatermarkBack(@TempDir File dir) throws Exception {
        ExecutorScheduler scheduler = new ExecutorScheduler(1, "hw-test");
        TopicRegistry topics = new TopicRegistry(dir, LogConfig.DEFAULT);
        LogManager logs = new LogManager(LogManagerConfig.defaults(List.of(new File(dir, "data"))),
                topics::logConfig, Time.SYSTEM, scheduler);
        try {
            logs.startup();
            topics.create("t", 1, Map.of());
            ReplicaManager replicas = new ReplicaManager(logs, topics, new FetchPurgatory());
            TopicPartition tp = new TopicPartition("t", 0);
            PartitionLog log = replicas.log(tp);

            AtomicBoolean done = new AtomicBoolean();
            AtomicLong regressions = new AtomicLong();
            AtomicLong worst = new AtomicLong();
            Thread watcher = new Thread(() -> {
                long last = 0;
                while (!done.get()) {
                    long hw = log.highWatermark();
                    if (hw < last) {
                        regressions.incrementAndGet();
                        worst.accumulateAndGet(last - hw, Math::max);
                    }
                    last = Math.max(last, hw);
                }
            });
            watcher.start();
            List<Thread> writers = new ArrayList<>();
            for (int w = 0; w < WRITERS; w++) {
                Thread t = new Thread(() -> {
                    for (int i = 0; i < APPENDS_EACH; i++) {
                        replicas.appendAsLeader(tp, MemoryRecords.withRecords(Compression.NONE,
                                new SimpleRecord(("v" + i).getBytes())));
                    }
                });
                t.start();
                writers.add(t);
            }
            for (Thread t : writers) {
                t.join();
            }
            done.set(true);
            watcher.join();
            assertThat(regressions.get()).as("times the high watermark moved back (by up to %d)", worst.get()).isZero();
            assertThat(log.highWatermark()).isEqualTo(log.logEndOffset()).isEqualTo((long) WRITERS * APPENDS_EACH);
        } finally {
            logs.close();
            scheduler.close();
        }
    }
}
