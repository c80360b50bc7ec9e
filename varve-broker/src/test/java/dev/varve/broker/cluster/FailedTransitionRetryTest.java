package dev.varve.broker.cluster;

import dev.varve.broker.FetchPurgatory;
import dev.varve.broker.WheelTimer;
import dev.varve.metadata.MetadataImage;
import dev.varve.metadata.MetadataRecord;
import dev.varve.storage.ExecutorScheduler;
import dev.varve.storage.LogConfig;
import dev.varve.storage.LogManager;
import dev.varve.storage.LogManagerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.utils.Time;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A partition whose transition failed is tried again even when no further metadata arrives (a quiet
 * cluster): on a timer, not only with the next delta.
 */
class FailedTransitionRetryTest {
    private static final Uuid TOPIC = new Uuid(0, 0x7);

    @Test
    void aFailedBecomeLeaderIsRetriedWithoutANewImage(@TempDir File dir) throws Exception {
        ExecutorScheduler scheduler = new ExecutorScheduler(1, "retry-test");
        LogManager logs = new LogManager(LogManagerConfig.defaults(List.of(new File(dir, "data"))), t -> LogConfig.DEFAULT,
                Time.SYSTEM, scheduler);
        ReplicaFetcherManager fetchers = new ReplicaFetcherManager(1, () -> 10L,
                new ReplicaFetcherConfig(1 << 20, 10 << 20, 500, 1, 100, 5_000, 1), Time.SYSTEM);
        AtomicInteger minIsrCalls = new AtomicInteger();
        WheelTimer timer = new WheelTimer("retry-test-timer");
        // the first transition fails (a bug, say, in reading the topic's config); later ones work
        ClusterReplicaManager replicas = new ClusterReplicaManager(1, () -> 10L, logs, new FetchPurgatory(), fetchers, null,
                Time.SYSTEM, 10_000, "REPLICATION", topic -> {
                    if (minIsrCalls.incrementAndGet() == 1) {
                        throw new IllegalStateException("injected: config not readable yet");
                    }
                    return 1;
                }, timer);
        try {
            logs.startup();
            MetadataImage image = MetadataImage.EMPTY.apply(0, List.of(
                    new MetadataRecord.RegisterBroker(1, new Uuid(1, 1), 10L,
                            List.of(new MetadataRecord.Endpoint("REPLICATION", "127.0.0.1", 9092)), null, false),
                    new MetadataRecord.TopicRecord("t", TOPIC),
                    new MetadataRecord.PartitionRecord(TOPIC, 0, List.of(1), List.of(1), List.of(), List.of(), 1, 0, 0)));
            TopicPartition tp = new TopicPartition("t", 0);
            long start = System.nanoTime();
            replicas.onImage(MetadataImage.EMPTY, image);
            assertThat(replicas.isLeader(tp)).as("after the failed transition").isFalse();
            // no other image is delivered
            await().atMost(Duration.ofSeconds(10)).until(() -> replicas.isLeader(tp));
            assertThat((System.nanoTime() - start) / 1_000_000).as("ms until the retry")
                    .isGreaterThanOrEqualTo(ClusterReplicaManager.FIRST_RETRY_MS - 50);
            assertThat(minIsrCalls.get()).isGreaterThanOrEqualTo(2);
        } finally {
            replicas.close();
            timer.close();
            logs.close();
            scheduler.close();
        }
    }
}
