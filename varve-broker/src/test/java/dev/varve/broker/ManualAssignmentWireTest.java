package dev.varve.broker;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.errors.InvalidReplicaAssignmentException;
import org.apache.kafka.common.message.CreatePartitionsRequestData;
import org.apache.kafka.common.message.CreateTopicsRequestData;
import org.apache.kafka.common.message.CreateTopicsResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.CreatePartitionsRequest;
import org.apache.kafka.common.requests.CreatePartitionsResponse;
import org.apache.kafka.common.requests.CreateTopicsRequest;
import org.apache.kafka.common.requests.CreateTopicsResponse;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * CreateTopics and CreatePartitions with manual replica assignments on a single node (node.id 5): Kafka's
 * rules and messages with this node as the only broker, over a raw connection at every CreateTopics version
 * and through the stock Admin client.
 */
class ManualAssignmentWireTest {
    private static final int SELF = 5;

    @TempDir
    static File dir;
    static Broker broker;
    static Admin admin;

    @BeforeAll
    static void start() throws Exception {
        broker = Broker.start(BrokerConfig.from(Map.of(
                "listeners", "PLAINTEXT://127.0.0.1:0",
                "node.id", Integer.toString(SELF),
                "log.dirs", dir.getAbsolutePath())));
        admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers()));
    }

    @AfterAll
    static void stop() throws Exception {
        admin.close();
        broker.close();
    }

    @Test
    void badAssignmentsAreRefusedTopicByTopicWithKafkasCodesAndMessages() throws Exception {
        admin.createTopics(List.of(new NewTopic("taken", 1, (short) 1))).all().get(30, TimeUnit.SECONDS);
        CreateTopicsRequestData.CreatableTopic badConfig = topic("badconfig", -1, -1, List.of(SELF, SELF));
        badConfig.configs().add(new CreateTopicsRequestData.CreatableTopicConfig().setName("no.such.config").setValue("1"));
        CreateTopicsRequestData req = new CreateTopicsRequestData().setTimeoutMs(10_000);
        req.topics().add(topic("taken", -1, -1, List.of(SELF, SELF)));
        req.topics().add(badConfig);
        req.topics().add(topic("both", 2, 1, List.of(SELF)));
        req.topics().add(topic("np", 2, -1, List.of(SELF)));
        req.topics().add(renumbered(topic("twice", -1, -1, List.of(SELF), List.of(SELF)), 0, 0));
        req.topics().add(renumbered(topic("gap", -1, -1, List.of(SELF), List.of(SELF)), 0, 2));
        req.topics().add(topic("empty", -1, -1, List.of()));
        req.topics().add(topic("repeated", -1, -1, List.of(SELF, SELF)));
        req.topics().add(topic("stranger", -1, -1, List.of(SELF, SELF + 1)));
        req.topics().add(topic("fine", -1, -1, List.of(SELF), List.of(SELF), List.of(SELF)));
        CreateTopicsResponse r;
        try (RawKafkaClient c = client()) {
            r = c.send(new CreateTopicsRequest.Builder(req), ApiKeys.CREATE_TOPICS.latestVersion());
        }
        assertThat(outcome(r, "taken")).startsWith("TOPIC_ALREADY_EXISTS");
        assertThat(outcome(r, "badconfig")).startsWith("INVALID_CONFIG");
        assertThat(outcome(r, "both")).isEqualTo("INVALID_REQUEST A manual partition assignment was specified, but replication factor was not set to -1.");
        assertThat(outcome(r, "np")).isEqualTo("INVALID_REQUEST A manual partition assignment was specified, but numPartitions was not set to -1.");
        assertThat(outcome(r, "twice")).isEqualTo("INVALID_REPLICA_ASSIGNMENT Found multiple manual partition assignments for partition 0");
        assertThat(outcome(r, "gap")).isEqualTo("INVALID_REPLICA_ASSIGNMENT partitions should be a consecutive 0-based integer sequence");
        assertThat(outcome(r, "empty")).isEqualTo("INVALID_REPLICA_ASSIGNMENT The manual partition assignment includes an empty replica list.");
        assertThat(outcome(r, "repeated")).isEqualTo("INVALID_REPLICA_ASSIGNMENT The manual partition assignment includes the broker "
                + SELF + " more than once.");
        assertThat(outcome(r, "stranger")).isEqualTo("INVALID_REPLICA_ASSIGNMENT The manual partition assignment includes broker "
                + (SELF + 1) + ", but no such broker is registered.");
        assertThat(outcome(r, "fine")).isEqualTo("NONE partitions=3 rf=1");
        assertThat(admin.listTopics().names().get(30, TimeUnit.SECONDS)).contains("taken", "fine")
                .doesNotContain("badconfig", "both", "np", "twice", "gap", "empty", "repeated", "stranger");
        assertThat(new File(dir, "fine-2")).isDirectory();
    }

    @Test
    void everyCreateTopicsVersionCarriesAnAssignmentAndValidateOnlyCreatesNothing() throws Exception {
        try (RawKafkaClient c = client()) {
            for (short v = ApiKeys.CREATE_TOPICS.oldestVersion(); v <= ApiKeys.CREATE_TOPICS.latestVersion(); v++) {
                String name = "v" + v;
                if (v >= 1) { // validateOnly came with v1
                    CreateTopicsRequestData dry = new CreateTopicsRequestData().setTimeoutMs(10_000).setValidateOnly(true);
                    dry.topics().add(topic(name, -1, -1, List.of(SELF), List.of(SELF)));
                    CreateTopicsResponse checked = c.send(new CreateTopicsRequest.Builder(dry), v);
                    assertThat(Errors.forCode(checked.data().topics().find(name).errorCode())).as("v%d validate-only", v)
                            .isEqualTo(Errors.NONE);
                    assertThat(new File(dir, name + "-0")).doesNotExist();
                }

                CreateTopicsRequestData real = new CreateTopicsRequestData().setTimeoutMs(10_000);
                real.topics().add(topic(name, -1, -1, List.of(SELF), List.of(SELF)));
                CreateTopicsResponseData.CreatableTopicResult result = c.<CreateTopicsResponse>send(new CreateTopicsRequest.Builder(real), v)
                        .data().topics().find(name);
                assertThat(Errors.forCode(result.errorCode())).as("v%d", v).isEqualTo(Errors.NONE);
                if (v >= 5) {
                    assertThat(result.numPartitions()).isEqualTo(2);
                    assertThat(result.replicationFactor()).isEqualTo((short) 1);
                }
                assertThat(new File(dir, name + "-1")).isDirectory();
            }
        }
    }

    @Test
    void createPartitionsTakesOneAssignmentPerNewPartition() throws Exception {
        admin.createTopics(List.of(new NewTopic("grow", 2, (short) 1))).all().get(30, TimeUnit.SECONDS);
        assertThat(grow(false, 4, List.of(List.of(SELF))))
                .isEqualTo("INVALID_REPLICA_ASSIGNMENT Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified.");
        assertThat(grow(false, 3, List.of()))
                .isEqualTo("INVALID_REPLICA_ASSIGNMENT Attempted to add 1 additional partition(s), but only 0 assignment(s) were specified.");
        assertThat(grow(false, 2, List.of())).isEqualTo("INVALID_PARTITIONS Topic already has 2 partition(s).");
        assertThat(grow(false, 3, List.of(List.of(SELF, SELF))))
                .isEqualTo("INVALID_REPLICA_ASSIGNMENT The manual partition assignment includes the broker " + SELF + " more than once.");
        assertThat(grow(false, 3, List.of(List.of(SELF + 1))))
                .isEqualTo("INVALID_REPLICA_ASSIGNMENT The manual partition assignment includes broker " + (SELF + 1)
                        + ", but no such broker is registered.");
        assertThat(grow(false, 3, List.of(List.of())))
                .isEqualTo("INVALID_REPLICA_ASSIGNMENT The manual partition assignment includes an empty replica list.");
        assertThat(grow(true, 4, List.of(List.of(SELF), List.of(SELF)))).isEqualTo("NONE");
        assertThat(new File(dir, "grow-2")).doesNotExist();
        assertThat(grow(false, 4, List.of(List.of(SELF), List.of(SELF)))).isEqualTo("NONE");
        assertThat(new File(dir, "grow-3")).isDirectory();
    }

    @Test
    void theAdminClientCreatesAndGrowsATopicByAssignmentAndItCarriesRecords() throws Exception {
        admin.createTopics(List.of(new NewTopic("manual", Map.of(0, List.of(SELF), 1, List.of(SELF))))).all().get(30, TimeUnit.SECONDS);
        admin.createPartitions(Map.of("manual", NewPartitions.increaseTo(3, List.of(List.of(SELF))))).all().get(30, TimeUnit.SECONDS);
        TopicDescription d = admin.describeTopics(List.of("manual")).allTopicNames().get(30, TimeUnit.SECONDS).get("manual");
        assertThat(d.partitions()).hasSize(3).allSatisfy(p -> {
            assertThat(p.replicas()).extracting(Node::id).containsExactly(SELF);
            assertThat(p.leader().id()).isEqualTo(SELF);
            assertThat(p.isr()).extracting(Node::id).containsExactly(SELF);
        });
        assertThat(d.partitions()).extracting(TopicPartitionInfo::partition).containsExactly(0, 1, 2);

        assertThatThrownBy(() -> admin.createTopics(List.of(new NewTopic("elsewhere", Map.of(0, List.of(SELF + 1)))))
                .all().get(30, TimeUnit.SECONDS))
                .hasCauseInstanceOf(InvalidReplicaAssignmentException.class)
                .hasMessageContaining("includes broker " + (SELF + 1) + ", but no such broker is registered.");
        assertThatThrownBy(() -> admin.createPartitions(Map.of("manual", NewPartitions.increaseTo(4, List.of(List.of(SELF + 1)))))
                .all().get(30, TimeUnit.SECONDS))
                .hasCauseInstanceOf(InvalidReplicaAssignmentException.class);

        try (KafkaProducer<String, String> p = new KafkaProducer<>(Map.of(
                ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers(),
                ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class,
                ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class))) {
            for (int partition = 0; partition < 3; partition++) {
                p.send(new ProducerRecord<>("manual", partition, "k", "v" + partition)).get(30, TimeUnit.SECONDS);
            }
        }
        List<String> read = new ArrayList<>();
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers(),
                ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest",
                ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class,
                ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class))) {
            c.assign(List.of(new TopicPartition("manual", 0), new TopicPartition("manual", 1), new TopicPartition("manual", 2)));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (read.size() < 3 && System.nanoTime() < deadline) {
                for (ConsumerRecord<String, String> rec : c.poll(Duration.ofMillis(200))) {
                    read.add(rec.partition() + ":" + rec.value());
                }
            }
        }
        assertThat(read).containsExactlyInAnyOrder("0:v0", "1:v1", "2:v2");
    }

    // ---- helpers

    private static RawKafkaClient client() throws Exception {
        return new RawKafkaClient(broker.boundAddresses().get(0));
    }

    private static String grow(boolean validateOnly, int count, List<List<Integer>> assignments) throws Exception {
        List<CreatePartitionsRequestData.CreatePartitionsAssignment> list = new ArrayList<>();
        assignments.forEach(a -> list.add(new CreatePartitionsRequestData.CreatePartitionsAssignment().setBrokerIds(a)));
        CreatePartitionsRequestData req = new CreatePartitionsRequestData().setTimeoutMs(10_000).setValidateOnly(validateOnly);
        req.topics().add(new CreatePartitionsRequestData.CreatePartitionsTopic().setName("grow").setCount(count).setAssignments(list));
        try (RawKafkaClient c = client()) {
            CreatePartitionsResponse r = c.send(new CreatePartitionsRequest.Builder(req), ApiKeys.CREATE_PARTITIONS.latestVersion());
            Errors error = Errors.forCode(r.data().results().get(0).errorCode());
            return error == Errors.NONE ? "NONE" : error + " " + r.data().results().get(0).errorMessage();
        }
    }

    @SafeVarargs
    private static CreateTopicsRequestData.CreatableTopic topic(String name, int partitions, int rf, List<Integer>... replicas) {
        CreateTopicsRequestData.CreatableTopic t = new CreateTopicsRequestData.CreatableTopic().setName(name)
                .setNumPartitions(partitions).setReplicationFactor((short) rf);
        for (int p = 0; p < replicas.length; p++) {
            t.assignments().add(new CreateTopicsRequestData.CreatableReplicaAssignment().setPartitionIndex(p).setBrokerIds(replicas[p]));
        }
        return t;
    }

    private static CreateTopicsRequestData.CreatableTopic renumbered(CreateTopicsRequestData.CreatableTopic t, int... indexes) {
        List<CreateTopicsRequestData.CreatableReplicaAssignment> entries = new ArrayList<>(t.assignments());
        t.assignments().clear();
        for (int i = 0; i < entries.size(); i++) {
            t.assignments().add(new CreateTopicsRequestData.CreatableReplicaAssignment().setPartitionIndex(indexes[i])
                    .setBrokerIds(entries.get(i).brokerIds()));
        }
        return t;
    }

    private static String outcome(CreateTopicsResponse r, String topic) {
        CreateTopicsResponseData.CreatableTopicResult t = r.data().topics().find(topic);
        Errors error = Errors.forCode(t.errorCode());
        return error == Errors.NONE ? "NONE partitions=" + t.numPartitions() + " rf=" + t.replicationFactor()
                : error + " " + t.errorMessage();
    }
}
