package dev.varve.tests;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.CreateTopicsOptions;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.errors.InvalidReplicaAssignmentException;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Topics created and grown with manual replica assignments on a 3-process cluster (nodes 1, 2, 3), as
 * users do it: the Java Admin client ({@code NewTopic(name, assignments)}, {@code NewPartitions.increaseTo(n,
 * assignments)}), Kafka 4.4's {@code kafka-topics.sh --replica-assignment} and librdkafka's admin API
 * (python3-confluent-kafka). Each topic has exactly the assigned replicas, the first of each list leads,
 * every replica is in sync, records go through byte for byte, and an assignment naming a broker that does
 * not exist is refused with Kafka's INVALID_REPLICA_ASSIGNMENT and message.
 */
@Timeout(180)
class ManualReplicaAssignmentTest {
    private static final String TOPIC_COMMAND = "org.apache.kafka.tools.TopicCommand";
    private static final String UNKNOWN = "The manual partition assignment includes broker 9, but no such broker is registered.";

    @TempDir
    static Path dir;
    private static TestCluster cluster;
    private static Admin admin;

    @BeforeAll
    static void start() throws Exception {
        cluster = TestCluster.start(dir, 3, TestCluster.FAST);
        admin = cluster.admin();
    }

    @AfterAll
    static void stop() {
        if (admin != null) {
            admin.close();
        }
        if (cluster != null) {
            cluster.close();
        }
    }

    @Test
    void theAdminClientPlacesEveryReplicaWhereItSaysAndRecordsGoThrough() throws Exception {
        admin.createTopics(List.of(new NewTopic("placed", Map.of(0, List.of(1, 2), 1, List.of(2, 3), 2, List.of(3, 1)))))
                .all().get(30, TimeUnit.SECONDS);
        awaitPlacement("placed", List.of(List.of(1, 2), List.of(2, 3), List.of(3, 1)));

        admin.createPartitions(Map.of("placed", NewPartitions.increaseTo(5, List.of(List.of(3, 2), List.of(1, 3)))))
                .all().get(30, TimeUnit.SECONDS);
        awaitPlacement("placed", List.of(List.of(1, 2), List.of(2, 3), List.of(3, 1), List.of(3, 2), List.of(1, 3)));

        // records in == records out, byte for byte, on every partition (acks=all: both replicas have them)
        Map<Integer, List<String>> sent = new HashMap<>();
        long bytesIn = 0;
        try (KafkaProducer<String, String> p = cluster.producer(Map.of())) {
            List<Future<?>> acks = new ArrayList<>();
            for (int i = 0; i < 500; i++) {
                int partition = i % 5;
                String value = "r" + i + "-" + "x".repeat(i % 97);
                sent.computeIfAbsent(partition, k -> new ArrayList<>()).add(value);
                bytesIn += value.getBytes(StandardCharsets.UTF_8).length;
                acks.add(p.send(new ProducerRecord<>("placed", partition, null, value)));
            }
            for (Future<?> f : acks) {
                f.get(30, TimeUnit.SECONDS);
            }
        }
        Map<Integer, List<String>> read = cluster.readPartitions("placed", 5);
        assertThat(read).isEqualTo(sent);
        long bytesOut = read.values().stream().flatMap(List::stream).mapToLong(v -> v.getBytes(StandardCharsets.UTF_8).length).sum();
        assertThat(bytesOut).isEqualTo(bytesIn);

        // refused, with nothing created: an unknown broker, at creation and when growing
        assertThatThrownBy(() -> admin.createTopics(List.of(new NewTopic("nowhere", Map.of(0, List.of(1, 9)))))
                .all().get(30, TimeUnit.SECONDS))
                .hasCauseInstanceOf(InvalidReplicaAssignmentException.class).hasMessageContaining(UNKNOWN);
        assertThatThrownBy(() -> admin.createPartitions(Map.of("placed", NewPartitions.increaseTo(6, List.of(List.of(9, 1)))))
                .all().get(30, TimeUnit.SECONDS))
                .hasCauseInstanceOf(InvalidReplicaAssignmentException.class).hasMessageContaining(UNKNOWN);
        // and the validate-only dry run checks the same
        assertThatThrownBy(() -> admin.createTopics(List.of(new NewTopic("dry", Map.of(0, List.of(2, 2)))),
                new CreateTopicsOptions().validateOnly(true)).all().get(30, TimeUnit.SECONDS))
                .hasCauseInstanceOf(InvalidReplicaAssignmentException.class)
                .hasMessageContaining("The manual partition assignment includes the broker 2 more than once.");
        admin.createTopics(List.of(new NewTopic("dry", Map.of(0, List.of(2, 3)))), new CreateTopicsOptions().validateOnly(true))
                .all().get(30, TimeUnit.SECONDS);
        assertThat(admin.listTopics().names().get(30, TimeUnit.SECONDS)).doesNotContain("nowhere", "dry");
        assertThat(TestCluster.describe(admin, "placed")).hasSize(5);
    }

    @Test
    void kafkaTopicsReplicaAssignmentCreatesGrowsAndRefuses() throws Exception {
        KafkaTool.Result created = topics("--create", "--topic", "by-tool", "--replica-assignment", "3:1,1:2");
        assertThat(created.exitCode()).as("%s", created).isZero();
        assertThat(created.stdout()).contains("Created topic by-tool.");
        awaitPlacement("by-tool", List.of(List.of(3, 1), List.of(1, 2)));

        // kafka-topics sends the entries past the current count as the new partitions' assignment
        KafkaTool.Result altered = topics("--alter", "--topic", "by-tool", "--partitions", "3", "--replica-assignment", "3:1,1:2,2:3");
        assertThat(altered.exitCode()).as("%s", altered).isZero();
        awaitPlacement("by-tool", List.of(List.of(3, 1), List.of(1, 2), List.of(2, 3)));

        KafkaTool.Result described = topics("--describe", "--topic", "by-tool");
        assertThat(described.exitCode()).as("%s", described).isZero();
        assertThat(described.stdout()).contains("Partition: 0\tLeader: 3\tReplicas: 3,1\tIsr: 3,1",
                "Partition: 1\tLeader: 1\tReplicas: 1,2\tIsr: 1,2", "Partition: 2\tLeader: 2\tReplicas: 2,3\tIsr: 2,3");

        KafkaTool.Result refused = topics("--create", "--topic", "by-tool-bad", "--replica-assignment", "1:9");
        assertThat(refused.exitCode()).as("%s", refused).isNotZero();
        assertThat(refused.all()).contains("Error while executing topic command : " + UNKNOWN);
        KafkaTool.Result refusedGrowth = topics("--alter", "--topic", "by-tool", "--partitions", "4",
                "--replica-assignment", "3:1,1:2,2:3,9:1");
        assertThat(refusedGrowth.exitCode()).as("%s", refusedGrowth).isNotZero();
        assertThat(refusedGrowth.all()).contains(UNKNOWN);
        assertThat(TestCluster.describe(admin, "by-tool")).hasSize(3);
        assertThat(admin.listTopics().names().get(30, TimeUnit.SECONDS)).doesNotContain("by-tool-bad");
    }

    @Test
    void replicationFactorAndPartitionCountCannotComeWithAnAssignment() {
        // the Admin client cannot send both; a raw NewTopic-like request can, and Kafka answers INVALID_REQUEST
        assertThatThrownBy(() -> topicsRaw("both", 1, (short) 2, Map.of(0, List.of(1, 2))))
                .hasCauseInstanceOf(InvalidRequestException.class)
                .hasMessageContaining("A manual partition assignment was specified, but replication factor was not set to -1.");
    }

    @Test
    void librdkafkaCreatesAndGrowsATopicByAssignment() throws Exception {
        NativeTransactionalClientsTest.Client client = NativeTransactionalClientsTest.Client.LIBRDKAFKA;
        assumeTrue(dev.varve.storage.testing.Capabilities.require(NativeTransactionalClientsTest.probe(client), client.what),
                client.what + " is missing");
        NativeTransactionalClientsTest.Run run = NativeTransactionalClientsTest.run(dir, client, "python/confluent_kafka_assignments.py",
                "--bootstrap", cluster.allBootstrap(), "--topic", "by-librdkafka", "--assignment", "1,2;2,3", "--grow", "3,1",
                "--unknown", "9");
        assertThat(run.ofType("create").get(0).get("code").isNull()).as("%s", run).isTrue();
        assertThat(run.ofType("grow").get(0).get("code").isNull()).as("%s", run).isTrue();
        for (String refused : List.of("create-bad", "grow-bad")) {
            JsonNode r = run.ofType(refused).get(0);
            assertThat(r.get("code").asText()).as("%s\n%s", refused, run).isEqualTo("INVALID_REPLICA_ASSIGNMENT");
            assertThat(r.get("message").asText()).as("%s\n%s", refused, run).isEqualTo(UNKNOWN);
        }
        List<String> seen = new ArrayList<>();
        run.ofType("metadata").get(0).get("partitions").forEach(p -> seen.add(p.get("id").asInt() + ":" + p.get("replicas")
                + " leader " + p.get("leader").asInt()));
        assertThat(seen).as("%s", run).containsExactly("0:[1,2] leader 1", "1:[2,3] leader 2", "2:[3,1] leader 3");
        assertThat(run.ofType("produced").get(0).get("delivered").asInt()).as("%s", run).isEqualTo(3);

        awaitPlacement("by-librdkafka", List.of(List.of(1, 2), List.of(2, 3), List.of(3, 1)));
        assertThat(cluster.readPartitions("by-librdkafka", 3)).isEqualTo(Map.of(
                0, List.of("by-librdkafka-0"), 1, List.of("by-librdkafka-1"), 2, List.of("by-librdkafka-2")));
        assertThat(admin.listTopics().names().get(30, TimeUnit.SECONDS)).doesNotContain("by-librdkafka-bad");
    }

    // ---- helpers

    /** Waits until the topic's partitions have exactly these replicas, the first leading, all in sync. */
    private static void awaitPlacement(String topic, List<List<Integer>> replicas) {
        await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(200)).untilAsserted(() -> {
            List<TopicPartitionInfo> partitions = TestCluster.describe(admin, topic);
            assertThat(partitions).hasSize(replicas.size());
            for (TopicPartitionInfo p : partitions) {
                List<Integer> expected = replicas.get(p.partition());
                assertThat(p.replicas()).extracting(org.apache.kafka.common.Node::id).as("replicas of %d", p.partition())
                        .containsExactlyElementsOf(expected);
                assertThat(TestCluster.leaderId(p)).as("leader of %d", p.partition()).isEqualTo(expected.get(0));
                assertThat(p.isr()).extracting(org.apache.kafka.common.Node::id).as("isr of %d", p.partition())
                        .containsExactlyInAnyOrderElementsOf(expected);
            }
        });
    }

    private static KafkaTool.Result topics(String... args) throws Exception {
        List<String> all = new ArrayList<>(List.of("--bootstrap-server", cluster.allBootstrap()));
        all.addAll(List.of(args));
        return KafkaTool.run(dir, TOPIC_COMMAND, all);
    }

    /** CreateTopics with an assignment and a partition count or replication factor too, over a raw connection. */
    private static void topicsRaw(String name, int partitions, short rf, Map<Integer, List<Integer>> assignment) throws Exception {
        org.apache.kafka.common.message.CreateTopicsRequestData.CreatableTopic t =
                new org.apache.kafka.common.message.CreateTopicsRequestData.CreatableTopic().setName(name)
                        .setNumPartitions(partitions).setReplicationFactor(rf);
        assignment.forEach((p, r) -> t.assignments().add(
                new org.apache.kafka.common.message.CreateTopicsRequestData.CreatableReplicaAssignment().setPartitionIndex(p).setBrokerIds(r)));
        org.apache.kafka.common.message.CreateTopicsRequestData data =
                new org.apache.kafka.common.message.CreateTopicsRequestData().setTimeoutMs(10_000);
        data.topics().add(t);
        TestCluster.Node node = cluster.nodes().get(0);
        org.apache.kafka.common.requests.CreateTopicsResponse r;
        try (RawKafkaClient c = new RawKafkaClient(node.bootstrap())) {
            r = c.send(new org.apache.kafka.common.requests.CreateTopicsRequest.Builder(data)
                    .build(org.apache.kafka.common.protocol.ApiKeys.CREATE_TOPICS.latestVersion()));
        }
        org.apache.kafka.common.message.CreateTopicsResponseData.CreatableTopicResult result = r.data().topics().find(name);
        org.apache.kafka.common.protocol.Errors error = org.apache.kafka.common.protocol.Errors.forCode(result.errorCode());
        if (error != org.apache.kafka.common.protocol.Errors.NONE) {
            throw new java.util.concurrent.ExecutionException(error.exception(result.errorMessage()));
        }
    }
}
