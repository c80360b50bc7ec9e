package dev.varve.tests;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * KIP-392 on 3 processes, each in a rack of its own, with Kafka's RackAwareReplicaSelector: a stock
 * consumer that names a follower's rack (client.rack) reads every record byte for byte from that
 * follower (the follower's BytesOut counts them, the leader's counts none), and one without a rack
 * reads from the leader.
 */
@Timeout(180)
class FollowerFetchingTest {
    private static final int RECORDS = 200;

    @TempDir
    Path dir;

    @Test
    void aConsumerReadsFromTheReplicaInItsRack() throws Exception {
        try (TestCluster cluster = TestCluster.start(dir, 3,
                Map.of("replica.selector.class", "org.apache.kafka.common.replica.RackAwareReplicaSelector"),
                "PLAINTEXT", id -> Map.of("broker.rack", "rack-" + id), Map.of());
             Admin admin = cluster.admin()) {
            TestCluster.createAndAwaitInSync(admin, new NewTopic("nearby", 1, (short) 3), Duration.ofSeconds(60));
            List<byte[]> sent = new ArrayList<>();
            try (KafkaProducer<String, String> p = cluster.producer(Map.of())) {
                for (int i = 0; i < RECORDS; i++) {
                    String v = "record-" + i + "-" + "x".repeat(i % 50);
                    sent.add(v.getBytes(java.nio.charset.StandardCharsets.UTF_8));
                    p.send(new ProducerRecord<>("nearby", 0, null, v));
                }
                p.flush();
            }
            TopicPartitionInfo info = admin.describeTopics(List.of("nearby")).allTopicNames().get(30, TimeUnit.SECONDS)
                    .get("nearby").partitions().get(0);
            int leader = info.leader().id();
            int follower = info.replicas().stream().map(n -> n.id()).filter(id -> id != leader).findFirst().orElseThrow();

            assertThat(consumeAll(cluster, "rack-" + follower, sent.size())).as("bytes read in the follower's rack").containsExactlyElementsOf(sent);
            double fromFollower = ClusterMetricsTest.sum(List.of(cluster.node(follower)), "kafka_server_brokertopicmetrics_bytesout_total",
                    "topic", "nearby");
            long valueBytes = sent.stream().mapToLong(b -> b.length).sum();
            assertThat(fromFollower).as("the follower served them").isGreaterThanOrEqualTo(valueBytes);
            assertThat(ClusterMetricsTest.sum(List.of(cluster.node(leader)), "kafka_server_brokertopicmetrics_bytesout_total",
                    "topic", "nearby")).as("the leader served none").isZero();

            // a consumer waiting on the follower is woken when the follower's high watermark moves, not
            // after its fetch.max.wait.ms (20 s here), as Kafka's follower completes its delayed fetches
            Map<String, Object> waiting = new HashMap<>(cluster.clientSecurity());
            waiting.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap());
            waiting.put(ConsumerConfig.CLIENT_RACK_CONFIG, "rack-" + follower);
            waiting.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 20_000);
            waiting.put(ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, 40_000);
            KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(waiting, new ByteArrayDeserializer(), new ByteArrayDeserializer());
            try (KafkaProducer<String, String> p = cluster.producer(Map.of())) {
                TopicPartition tp = new TopicPartition("nearby", 0);
                c.assign(List.of(tp));
                c.seekToEnd(List.of(tp));
                assertThat(c.poll(Duration.ofSeconds(3)).count()).isZero(); // caught up: its next fetch waits on the follower
                long sentAt = System.nanoTime();
                p.send(new ProducerRecord<>("nearby", 0, null, "late")).get(30, TimeUnit.SECONDS);
                sent.add("late".getBytes(java.nio.charset.StandardCharsets.UTF_8));
                int got = 0;
                while (got == 0 && System.nanoTime() - sentAt < TimeUnit.SECONDS.toNanos(30)) {
                    got = c.poll(Duration.ofMillis(200)).count();
                }
                long waitedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - sentAt);
                System.out.println("FollowerFetchingTest: the record reached the consumer waiting on the follower in " + waitedMs + " ms");
                assertThat(got).isEqualTo(1);
                assertThat(waitedMs).as("woken by the follower's high watermark, not its 20 s fetch wait").isLessThan(10_000);
            } finally {
                c.close(Duration.ofMillis(500)); // not waiting for its next 20 s fetch to end
            }
            assertThat(ClusterMetricsTest.sum(List.of(cluster.node(leader)), "kafka_server_brokertopicmetrics_bytesout_total",
                    "topic", "nearby")).as("still only the follower serves this rack").isZero();

            // no rack: the leader serves
            assertThat(consumeAll(cluster, null, sent.size())).containsExactlyElementsOf(sent);
            assertThat(ClusterMetricsTest.sum(List.of(cluster.node(leader)), "kafka_server_brokertopicmetrics_bytesout_total",
                    "topic", "nearby")).isGreaterThanOrEqualTo(valueBytes);
        }
    }

    /** Every record's value, read from the start by a consumer in {@code rack} (none: null). */
    private static List<byte[]> consumeAll(TestCluster cluster, String rack, int count) {
        Map<String, Object> config = new HashMap<>(cluster.clientSecurity());
        config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap());
        config.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        if (rack != null) {
            config.put(ConsumerConfig.CLIENT_RACK_CONFIG, rack);
        }
        List<byte[]> values = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(config, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            c.assign(List.of(new TopicPartition("nearby", 0)));
            c.seekToBeginning(List.of(new TopicPartition("nearby", 0)));
            long deadline = System.currentTimeMillis() + 60_000;
            while (values.size() < count && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : c.poll(Duration.ofMillis(200))) {
                    values.add(r.value());
                }
            }
        }
        return values;
    }
}
