package dev.varve.tests;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.PartitionReassignment;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Partition reassignment on a 3-process cluster with the Admin client, as Kafka's reassignment tool
 * drives it: a partition moves from nodes [1, 2] to [3, 2] under a replication throttle; while it
 * moves, ListPartitionReassignments shows the adding and removing replicas and the throttle holds the
 * copy to its rate; afterwards every record is on the new replicas and node 1's copy is gone.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class ClusterReassignmentTest {
    private static final int RECORDS = 3000;
    private static final int RATE = 400_000;

    @TempDir
    Path dir;

    @Test
    void aThrottledReassignmentMovesEveryRecordAndDropsTheOldReplica() throws Exception {
        try (TestCluster cluster = TestCluster.start(dir, 3, Map.of()); Admin admin = cluster.admin()) {
            admin.createTopics(List.of(new NewTopic("mv", Map.of(0, List.of(1, 2))))).all().get(30, TimeUnit.SECONDS);
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() ->
                    assertThat(TestCluster.describe(admin, "mv").get(0).isr()).hasSize(2));
            List<String> sent = new ArrayList<>();
            Map<String, Object> pc = new HashMap<>();
            pc.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.allBootstrap());
            pc.put(ProducerConfig.ACKS_CONFIG, "all");
            String pad = "x".repeat(1000);
            try (KafkaProducer<String, String> p = new KafkaProducer<>(pc, new StringSerializer(), new StringSerializer())) {
                for (int i = 0; i < RECORDS; i++) {
                    String v = i + "-" + pad;
                    p.send(new ProducerRecord<>("mv", 0, null, v));
                    sent.add(v);
                }
                p.flush();
            }
            // the throttle Kafka's reassignment tool sets: rates on every broker, replicas on the topic
            Map<ConfigResource, Collection<AlterConfigOp>> throttle = new HashMap<>();
            for (int b = 1; b <= 3; b++) {
                throttle.put(new ConfigResource(ConfigResource.Type.BROKER, Integer.toString(b)), List.of(
                        new AlterConfigOp(new ConfigEntry("leader.replication.throttled.rate", Integer.toString(RATE)), AlterConfigOp.OpType.SET),
                        new AlterConfigOp(new ConfigEntry("follower.replication.throttled.rate", Integer.toString(RATE)), AlterConfigOp.OpType.SET)));
            }
            throttle.put(new ConfigResource(ConfigResource.Type.TOPIC, "mv"), List.of(
                    new AlterConfigOp(new ConfigEntry("leader.replication.throttled.replicas", "0:1,0:2"), AlterConfigOp.OpType.SET),
                    new AlterConfigOp(new ConfigEntry("follower.replication.throttled.replicas", "0:3"), AlterConfigOp.OpType.SET)));
            admin.incrementalAlterConfigs(throttle).all().get(30, TimeUnit.SECONDS);

            TopicPartition tp = new TopicPartition("mv", 0);
            long start = System.nanoTime();
            admin.alterPartitionReassignments(Map.of(tp, Optional.of(new NewPartitionReassignment(List.of(3, 2)))))
                    .all().get(30, TimeUnit.SECONDS);
            PartitionReassignment ongoing = admin.listPartitionReassignments().reassignments().get(10, TimeUnit.SECONDS).get(tp);
            assertThat(ongoing).as("the reassignment is still copying under the throttle").isNotNull();
            assertThat(ongoing.addingReplicas()).containsExactly(3);
            assertThat(ongoing.removingReplicas()).containsExactly(1);

            await().atMost(Duration.ofSeconds(120)).untilAsserted(() -> {
                TopicPartitionInfo p = TestCluster.describe(admin, "mv").get(0);
                assertThat(TestCluster.ids(p.replicas())).containsExactlyInAnyOrder(3, 2);
            });
            long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
            long bytes = (long) RECORDS * 1000;
            System.out.printf("moved %d bytes in %d ms under a %d B/s throttle%n", bytes, tookMs, RATE);
            // the windowed rate lets about one second's worth through at once; the rest waits for the rate
            assertThat(tookMs).as("the throttle slowed the copy").isGreaterThan(1000L * bytes / RATE / 2);
            assertThat(admin.listPartitionReassignments().reassignments().get(10, TimeUnit.SECONDS)).doesNotContainKey(tp);
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() ->
                    assertThat(Files.exists(dir.resolve("node-1/data/mv-0"))).as("node 1's copy is deleted").isFalse());

            Map<String, Object> cc = new HashMap<>();
            cc.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.allBootstrap());
            List<String> read = new ArrayList<>();
            try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cc, new StringDeserializer(), new StringDeserializer())) {
                c.assign(List.of(tp));
                c.seekToBeginning(List.of(tp));
                long deadline = System.currentTimeMillis() + 60_000;
                while (read.size() < RECORDS && System.currentTimeMillis() < deadline) {
                    for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                        read.add(r.value());
                    }
                }
            }
            assertThat(read).containsExactlyElementsOf(sent);
        }
    }
}
