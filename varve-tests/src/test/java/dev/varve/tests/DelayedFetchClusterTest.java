package dev.varve.tests;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A consumer's parked fetch completes when the high watermark makes a record readable, whatever the
 * producer's acks (Kafka's DelayedFetch). With acks=1 no acknowledgement waits on the followers, so a
 * fetch woken only by appends (the append itself is not readable yet) or by completed acks would sit
 * out its whole {@code fetch.max.wait.ms}.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class DelayedFetchClusterTest {
    /** The followers' lag time: the idle periods of {@link #idleFollowersStayInSyncAndAreWokenAtOnceByTheNextRecord} outlast it. */
    private static final long LAG_MS = 4_000;

    @TempDir
    static Path dir;

    /** One cluster for both tests: neither stops a node or changes a setting, and each has a topic of its own. */
    private static TestCluster cluster;
    private static Admin admin;

    @BeforeAll
    static void startCluster() throws Exception {
        cluster = TestCluster.start(dir, 3, Map.of("replica.lag.time.max.ms", Long.toString(LAG_MS)));
        admin = cluster.admin();
    }

    @AfterAll
    static void stopCluster() {
        if (admin != null) {
            admin.close();
        }
        if (cluster != null) {
            cluster.close();
        }
    }

    @Test
    void aWaitingConsumerIsAnsweredWhenTheHighWatermarkMovesNotAtItsMaxWait() throws Exception {
        TestCluster.createAndAwaitInSync(admin, new NewTopic("hw", 1, (short) 3), Duration.ofSeconds(30));
        long maxWaitMs = 10_000;
        Map<String, Object> cc = new HashMap<>();
        cc.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.allBootstrap());
        cc.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, (int) maxWaitMs);
        cc.put(ConsumerConfig.FETCH_MIN_BYTES_CONFIG, 1);
        cc.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, 30_000);
        TopicPartition tp = new TopicPartition("hw", 0);
        try (KafkaProducer<String, String> producer = cluster.producer(Map.of(ProducerConfig.ACKS_CONFIG, "1",
                ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, false));
             KafkaConsumer<String, String> consumer = new KafkaConsumer<>(cc, new StringDeserializer(), new StringDeserializer())) {
            consumer.assign(List.of(tp));
            consumer.seekToEnd(List.of(tp));
            consumer.position(tp);
            for (int i = 0; i < 5; i++) {
                consumer.poll(Duration.ofMillis(300)); // a fetch is parked at the leader now
                long sent = System.nanoTime();
                producer.send(new ProducerRecord<>("hw", 0, null, "r" + i)).get(30, TimeUnit.SECONDS);
                ConsumerRecord<String, String> got = null;
                while (got == null && System.nanoTime() - sent < TimeUnit.MILLISECONDS.toNanos(3 * maxWaitMs)) {
                    for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                        got = r;
                    }
                }
                long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - sent);
                assertThat(got).isNotNull();
                assertThat(got.value()).isEqualTo("r" + i);
                System.out.printf("acks=1 record %d consumed %d ms after it was sent%n", i, tookMs);
                assertThat(tookMs).as("answered when the HW moved, well before fetch.max.wait.ms").isLessThan(maxWaitMs / 2);
            }
            // close() would wait for the fetch now parked at the leader (up to fetch.max.wait.ms, 10 s)
            // before it closes the fetch session; nothing is asserted after this point
            consumer.close(org.apache.kafka.clients.consumer.CloseOptions.timeout(Duration.ofSeconds(1)));
        }
    }

    /**
     * Idle followers of many partitions: a leader answers their unchanged fetches without reading the
     * partitions while nothing on it changes (they cost no work per partition), yet the followers stay in
     * sync through idle periods longer than {@code replica.lag.time.max.ms}, and a record sent after such
     * a period is replicated and acknowledged at once, not at a parked fetch's max wait.
     */
    @Test
    void idleFollowersStayInSyncAndAreWokenAtOnceByTheNextRecord() throws Exception {
        long lagMs = LAG_MS;
        int partitions = 120;
        TestCluster.createAndAwaitInSync(admin, new NewTopic("idle", partitions, (short) 3), Duration.ofSeconds(60));
        List<Long> latencies = new java.util.ArrayList<>();
        try (KafkaProducer<String, String> producer = cluster.producer(Map.of(ProducerConfig.ACKS_CONFIG, "all"))) {
            producer.send(new ProducerRecord<>("idle", 0, null, "warm-up")).get(30, TimeUnit.SECONDS);
            for (int round = 0; round < 2; round++) {
                Thread.sleep(2 * lagMs + 1_000); // idle for more than twice the lag time
                assertThat(TestCluster.describe(admin, "idle")).as("after %d ms idle", 2 * lagMs + 1_000)
                        .allSatisfy(p -> assertThat(p.isr()).as(p.toString()).hasSize(3));
                for (int i = 0; i < 12; i++) {
                    Thread.sleep(300); // the followers' fetches are parked again
                    long sent = System.nanoTime();
                    producer.send(new ProducerRecord<>("idle", (round * 12 + i * 7) % partitions, null, "r" + i))
                            .get(30, TimeUnit.SECONDS);
                    latencies.add(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - sent));
                }
            }
        }
        List<Long> sorted = latencies.stream().sorted().toList();
        System.out.printf("acks=all after idle periods: latencies %s ms%n", sorted);
        // a parked follower fetch that no append woke would answer at its max wait (500 ms) first
        assertThat(sorted.get(sorted.size() / 2)).as("median acks=all latency, ms: " + sorted).isLessThan(250);
    }
}
