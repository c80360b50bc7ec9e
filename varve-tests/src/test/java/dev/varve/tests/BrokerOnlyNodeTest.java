package dev.varve.tests;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartitionInfo;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A broker that is not a metadata voter ({@code process.roles=broker}): three voters and a fourth,
 * broker-only node that follows the metadata log from the active controller. It registers, leads and
 * follows partitions, sees the same metadata as the voters, keeps following when the active controller
 * dies, and catches up after a SIGKILL and restart.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class BrokerOnlyNodeTest {
    @TempDir
    Path dir;

    @Test
    void aBrokerOnlyNodeLeadsFollowsAndSurvivesControllerFailover() throws Exception {
        try (TestCluster cluster = TestCluster.start(dir, 3, 1, Map.of()); Admin admin = cluster.admin()) {
            admin.createTopics(List.of(new NewTopic("b", Map.of(0, List.of(4, 1, 2))))).all().get(30, TimeUnit.SECONDS);
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
                TopicPartitionInfo p = TestCluster.describe(admin, "b").get(0);
                assertThat(p.isr()).hasSize(3);
                assertThat(TestCluster.leaderId(p)).isEqualTo(4);
            });
            List<String> acked = new ArrayList<>();
            try (KafkaProducer<String, String> p = cluster.producer(Map.of())) {
                send(p, "first-", 200, acked);
            }
            // the broker-only node answers Metadata with the same view as a voter
            try (Admin viaBrokerOnly = Admin.create(Map.of("bootstrap.servers", cluster.node(4).bootstrap()))) {
                await().atMost(Duration.ofSeconds(10)).untilAsserted(() ->
                        assertThat(TestCluster.describe(viaBrokerOnly, "b")).isEqualTo(TestCluster.describe(admin, "b")));
            }
            // kill the voter that is the active controller (the latest to say so in its log)
            int controller = 1;
            String latest = "";
            for (int id = 1; id <= 3; id++) {
                for (String line : cluster.node(id).log().split("\n")) {
                    if (line.contains("is the active controller") && line.compareTo(latest) > 0) {
                        latest = line;
                        controller = id;
                    }
                }
            }
            cluster.node(controller).kill();
            try (KafkaProducer<String, String> p = cluster.producer(Map.of())) {
                send(p, "after-controller-", 100, acked);
            }
            // the broker-only node dies and returns: it catches up with the metadata and the data
            cluster.node(4).kill();
            try (KafkaProducer<String, String> p = cluster.producer(Map.of())) {
                send(p, "without-4-", 100, acked);
            }
            cluster.node(4).start();
            await().atMost(Duration.ofSeconds(60)).untilAsserted(() ->
                    assertThat(TestCluster.ids(TestCluster.describe(admin, "b").get(0).isr())).contains(4));
            assertThat(cluster.readPartition("b", 0)).containsExactlyElementsOf(acked);
        }
    }

    private static void send(KafkaProducer<String, String> p, String prefix, int n, List<String> acked) throws Exception {
        for (int i = 0; i < n; i++) {
            String v = prefix + i;
            p.send(new ProducerRecord<>("b", 0, null, v)).get(60, TimeUnit.SECONDS);
            acked.add(v);
        }
    }
}
