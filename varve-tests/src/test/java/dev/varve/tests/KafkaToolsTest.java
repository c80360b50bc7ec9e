package dev.varve.tests;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Apache Kafka 4.4's own command-line tools, unchanged, against an in-process broker (each tool runs
 * in a child JVM, see {@link KafkaTool}): kafka-topics ({@code TopicCommand}), kafka-configs
 * ({@code ConfigCommand}, in kafka-tools since 4.0), kafka-producer-perf-test
 * ({@code ProducerPerformance}), kafka-console-consumer ({@code ConsoleConsumer}),
 * kafka-consumer-perf-test ({@code ConsumerPerformance}) and kafka-consumer-groups
 * ({@code ConsumerGroupCommand}). With {@code -Dvarve.tests.bootstrap} they run against that broker
 * instead (see {@link TestBroker}).
 */
@Timeout(180)
class KafkaToolsTest {
    private static final String TOPIC_COMMAND = "org.apache.kafka.tools.TopicCommand";
    private static final String CONFIG_COMMAND = "org.apache.kafka.tools.ConfigCommand";
    private static final String PRODUCER_PERFORMANCE = "org.apache.kafka.tools.ProducerPerformance";
    private static final String CONSOLE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleConsumer";
    private static final String CONSUMER_PERFORMANCE = "org.apache.kafka.tools.ConsumerPerformance";
    private static final String CONSUMER_GROUPS = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand";
    private static final String TRANSACTIONS_COMMAND = "org.apache.kafka.tools.TransactionsCommand";

    @TempDir
    static Path tmp;
    private static TestBroker broker;
    private static String bootstrap;

    @BeforeAll
    static void startBroker() throws Exception {
        broker = TestBroker.start(tmp.resolve("data"), Map.of());
        bootstrap = broker.bootstrap();
    }

    @AfterAll
    static void stopBroker() throws Exception {
        if (broker != null) {
            broker.close();
        }
    }

    private static KafkaTool.Result tool(String mainClass, String... args) throws Exception {
        return KafkaTool.run(tmp, mainClass, List.of(args));
    }

    private static KafkaTool.Result topics(String... args) throws Exception {
        List<String> all = new ArrayList<>(List.of("--bootstrap-server", bootstrap));
        all.addAll(List.of(args));
        return KafkaTool.run(tmp, TOPIC_COMMAND, all);
    }

    @Test
    void kafkaTopicsCreatesAndLists() throws Exception {
        KafkaTool.Result created = topics("--create", "--topic", "tools-created", "--partitions", "3",
                "--replication-factor", "1", "--config", "retention.ms=3600000");
        assertThat(created.exitCode()).as(created.toString()).isZero();
        assertThat(created.stdout()).as(created.toString()).contains("Created topic tools-created.");

        KafkaTool.Result again = topics("--create", "--topic", "tools-created", "--partitions", "3",
                "--replication-factor", "1");
        assertThat(again.exitCode()).as(again.toString()).isEqualTo(1);
        assertThat(again.all()).as(again.toString()).contains("Topic 'tools-created' already exists.");

        KafkaTool.Result list = topics("--list");
        assertThat(list.exitCode()).as(list.toString()).isZero();
        assertThat(list.stdout().lines()).as(list.toString()).contains("tools-created");

        try (Admin admin = Clients.admin(bootstrap)) {
            TopicDescription d = admin.describeTopics(List.of("tools-created")).allTopicNames()
                    .get(30, TimeUnit.SECONDS).get("tools-created");
            assertThat(d.partitions()).hasSize(3);
        }
    }

    @Test
    void kafkaTopicsDescribes() throws Exception {
        Clients.createTopic(bootstrap, "tools-described", 3, Map.of("retention.ms", "3600000"));
        KafkaTool.Result describe = topics("--describe", "--topic", "tools-described");
        assertThat(describe.exitCode()).as(describe.toString()).isZero();
        assertThat(describe.stdout()).as(describe.toString())
                .containsPattern("Topic: tools-described\\s+TopicId: \\S+\\s+PartitionCount: 3\\s+ReplicationFactor: 1"
                        + "\\s+Configs: .*retention.ms=3600000");
        for (int p = 0; p < 3; p++) {
            assertThat(describe.stdout()).as(describe.toString())
                    .containsPattern("Topic: tools-described\\s+Partition: " + p + "\\s+Leader: 1\\s+Replicas: 1\\s+Isr: 1");
        }
    }

    @Test
    void kafkaTopicsAddsPartitions() throws Exception {
        Clients.createTopic(bootstrap, "tools-grown", 2, Map.of());
        KafkaTool.Result alter = topics("--alter", "--topic", "tools-grown", "--partitions", "5");
        assertThat(alter.exitCode()).as(alter.toString()).isZero();
        try (Admin admin = Clients.admin(bootstrap)) {
            TopicDescription d = admin.describeTopics(List.of("tools-grown")).allTopicNames()
                    .get(30, TimeUnit.SECONDS).get("tools-grown");
            assertThat(d.partitions()).hasSize(5);
        }
        // Fewer partitions than now is refused.
        KafkaTool.Result shrink = topics("--alter", "--topic", "tools-grown", "--partitions", "3");
        assertThat(shrink.exitCode()).as(shrink.toString()).isEqualTo(1);
        assertThat(shrink.all()).as(shrink.toString()).containsIgnoringCase("partition");
    }

    @Test
    void kafkaTopicsDeletes() throws Exception {
        Clients.createTopic(bootstrap, "tools-deleted", 1, Map.of());
        KafkaTool.Result delete = topics("--delete", "--topic", "tools-deleted");
        assertThat(delete.exitCode()).as(delete.toString()).isZero();
        try (Admin admin = Clients.admin(bootstrap)) {
            assertThat(admin.listTopics().names().get(30, TimeUnit.SECONDS)).doesNotContain("tools-deleted");
        }
        KafkaTool.Result list = topics("--list");
        assertThat(list.stdout().lines()).as(list.toString()).doesNotContain("tools-deleted");
    }

    @Test
    void kafkaConfigsAltersTopicConfigsAndTheLogObeys() throws Exception {
        String topic = "tools-configured";
        Clients.createTopic(bootstrap, topic, 1, Map.of());
        KafkaTool.Result alter = tool(CONFIG_COMMAND, "--bootstrap-server", bootstrap, "--entity-type", "topics",
                "--entity-name", topic, "--alter", "--add-config", "retention.ms=7200000,max.message.bytes=10000");
        assertThat(alter.exitCode()).as(alter.toString()).isZero();
        assertThat(alter.stdout()).as(alter.toString()).contains("Completed updating config for topic " + topic + ".");

        KafkaTool.Result describe = tool(CONFIG_COMMAND, "--bootstrap-server", bootstrap, "--entity-type", "topics",
                "--entity-name", topic, "--describe");
        assertThat(describe.exitCode()).as(describe.toString()).isZero();
        assertThat(describe.stdout()).as(describe.toString())
                .contains("retention.ms=7200000").contains("max.message.bytes=10000");

        ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        try (Admin admin = Clients.admin(bootstrap)) {
            Config config = admin.describeConfigs(List.of(resource)).all().get(30, TimeUnit.SECONDS).get(resource);
            assertThat(config.get("retention.ms").value()).isEqualTo("7200000");
            assertThat(config.get("max.message.bytes").value()).isEqualTo("10000");
        }
        // The new limit applies to the partition at once.
        try (KafkaProducer<byte[], byte[]> producer = Clients.producer(bootstrap, Map.of())) {
            assertThatThrownBy(() -> producer.send(new ProducerRecord<>(topic, 0, null, new byte[20_000]))
                    .get(60, TimeUnit.SECONDS))
                    .isInstanceOf(ExecutionException.class).hasCauseInstanceOf(RecordTooLargeException.class);
        }

        KafkaTool.Result delete = tool(CONFIG_COMMAND, "--bootstrap-server", bootstrap, "--entity-type", "topics",
                "--entity-name", topic, "--alter", "--delete-config", "retention.ms");
        assertThat(delete.exitCode()).as(delete.toString()).isZero();
        try (Admin admin = Clients.admin(bootstrap)) {
            Config config = admin.describeConfigs(List.of(resource)).all().get(30, TimeUnit.SECONDS).get(resource);
            assertThat(config.get("retention.ms").value()).as("back to the default").isEqualTo("604800000");
            assertThat(config.get("max.message.bytes").value()).isEqualTo("10000");
        }
    }

    @Test
    void kafkaTransactionsListsDescribesAndAbortsAHangingTransaction() throws Exception {
        String topic = "tools-txn";
        Clients.createTopic(bootstrap, topic, 1, Map.of());
        Map<String, Object> cfg = new java.util.HashMap<>();
        cfg.put(org.apache.kafka.clients.producer.ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        cfg.put(org.apache.kafka.clients.producer.ProducerConfig.TRANSACTIONAL_ID_CONFIG, "tools-txn-app");
        KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(cfg, new org.apache.kafka.common.serialization.ByteArraySerializer(),
                new org.apache.kafka.common.serialization.ByteArraySerializer());
        producer.initTransactions();
        producer.beginTransaction();
        producer.send(new ProducerRecord<>(topic, 0, null, bytes("in flight"))).get(30, TimeUnit.SECONDS);
        producer.close(java.time.Duration.ZERO); // the producer is gone with its transaction open

        KafkaTool.Result list = tool(TRANSACTIONS_COMMAND, "--bootstrap-server", bootstrap, "list");
        assertThat(list.exitCode()).as(list.toString()).isZero();
        assertThat(list.stdout()).as(list.toString()).containsPattern("(?m)^tools-txn-app\\s+\\d+\\s+\\d+\\s+Ongoing");
        KafkaTool.Result describe = tool(TRANSACTIONS_COMMAND, "--bootstrap-server", bootstrap, "describe",
                "--transactional-id", "tools-txn-app");
        assertThat(describe.exitCode()).as(describe.toString()).isZero();
        assertThat(describe.stdout()).as(describe.toString()).contains("Ongoing").contains(topic + "-0");
        KafkaTool.Result producers = tool(TRANSACTIONS_COMMAND, "--bootstrap-server", bootstrap, "describe-producers",
                "--topic", topic, "--partition", "0");
        assertThat(producers.exitCode()).as(producers.toString()).isZero();
        // columns: ProducerId ProducerEpoch LatestCoordinatorEpoch LastSequence LastTimestamp CurrentTransactionStartOffset
        assertThat(producers.stdout()).as(producers.toString()).containsPattern("(?m)^\\d+\\s+0\\s+-1\\s+0\\s+\\d+\\s+0\\s*$");

        // find-hanging (ListTransactions filtered by producer id, DescribeTransactions): the coordinator knows this
        // open transaction and its partition, so it is not hanging, even with no timeout allowed
        KafkaTool.Result hanging = tool(TRANSACTIONS_COMMAND, "--bootstrap-server", bootstrap, "find-hanging",
                "--topic", topic, "--max-transaction-timeout", "0");
        assertThat(hanging.exitCode()).as(hanging.toString()).isZero();
        assertThat(hanging.stdout().strip().lines().toList()).as(hanging.toString() + ": the header and no hanging row")
                .singleElement().asString().startsWith("Topic\tPartition\tProducerId");

        // the dead producer's transaction holds read_committed consumers at offset 0 until it is aborted
        TopicPartition tp = new TopicPartition(topic, 0);
        try (Admin admin = Clients.admin(bootstrap)) {
            assertThat(admin.listOffsets(Map.of(tp, OffsetSpec.latest()), new org.apache.kafka.clients.admin.ListOffsetsOptions(
                    org.apache.kafka.common.IsolationLevel.READ_COMMITTED)).partitionResult(tp).get(30, TimeUnit.SECONDS).offset())
                    .isZero();
            KafkaTool.Result abort = tool(TRANSACTIONS_COMMAND, "--bootstrap-server", bootstrap, "abort",
                    "--topic", topic, "--partition", "0", "--start-offset", "0");
            assertThat(abort.exitCode()).as(abort.toString()).isZero();
            assertThat(admin.listOffsets(Map.of(tp, OffsetSpec.latest()), new org.apache.kafka.clients.admin.ListOffsetsOptions(
                    org.apache.kafka.common.IsolationLevel.READ_COMMITTED)).partitionResult(tp).get(30, TimeUnit.SECONDS).offset())
                    .as("the last stable offset after the abort marker").isEqualTo(2);
        }
    }

    @Test
    void producerPerformanceSendsEveryRecord() throws Exception {
        String topic = "tools-perf";
        Clients.createTopic(bootstrap, topic, 2, Map.of());
        KafkaTool.Result perf = tool(PRODUCER_PERFORMANCE, "--topic", topic, "--num-records", "20000",
                "--record-size", "100", "--throughput", "-1",
                "--command-property", "bootstrap.servers=" + bootstrap, "acks=1");
        assertThat(perf.exitCode()).as(perf.toString()).isZero();
        assertThat(perf.stdout()).as(perf.toString()).containsPattern("(?m)^20000 records sent, ");
        try (Admin admin = Clients.admin(bootstrap)) {
            long total = 0;
            for (int p = 0; p < 2; p++) {
                TopicPartition tp = new TopicPartition(topic, p);
                total += admin.listOffsets(Map.of(tp, OffsetSpec.latest())).partitionResult(tp)
                        .get(30, TimeUnit.SECONDS).offset();
            }
            assertThat(total).as("records stored").isEqualTo(20_000);
        }
    }

    @Test
    void consoleConsumerPrintsTheRecords() throws Exception {
        String topic = "tools-console";
        Clients.createTopic(bootstrap, topic, 2, Map.of());
        long timestamp = System.currentTimeMillis() - 60_000;
        int count = 40;
        try (KafkaProducer<byte[], byte[]> producer = Clients.producer(bootstrap, Map.of())) {
            for (int i = 0; i < count; i++) {
                producer.send(new ProducerRecord<>(topic, 0, timestamp + i, bytes("key-" + i), bytes("value " + i),
                        List.of(new RecordHeader("n", bytes(Integer.toString(i))))));
                producer.send(new ProducerRecord<>(topic, 1, null, bytes("other partition " + i)));
            }
            producer.flush();
        }
        KafkaTool.Result all = consoleConsumer(topic, "earliest", count);
        assertThat(all.exitCode()).as(all.toString()).isZero();
        List<String> expected = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            expected.add("CreateTime:" + (timestamp + i) + "\tPartition:0\tOffset:" + i + "\tn:" + i
                    + "\tkey-" + i + "\tvalue " + i);
        }
        assertThat(all.stdout().lines()).as(all.toString()).containsExactlyElementsOf(expected);
        assertThat(all.stderr()).as(all.toString()).contains("Processed a total of " + count + " messages");

        // From a given offset: exactly the next records.
        KafkaTool.Result some = consoleConsumer(topic, "25", 5);
        assertThat(some.exitCode()).as(some.toString()).isZero();
        assertThat(some.stdout().lines()).as(some.toString()).containsExactlyElementsOf(expected.subList(25, 30));
    }

    private static KafkaTool.Result consoleConsumer(String topic, String offset, int maxMessages) throws Exception {
        return tool(CONSOLE_CONSUMER, "--bootstrap-server", bootstrap, "--topic", topic, "--partition", "0",
                "--offset", offset, "--max-messages", Integer.toString(maxMessages),
                "--formatter-property", "print.timestamp=true", "--formatter-property", "print.partition=true",
                "--formatter-property", "print.offset=true", "--formatter-property", "print.headers=true",
                "--formatter-property", "print.key=true");
    }

    /** kafka-consumer-perf-test reads every record of a topic as a group member and commits on close. */
    @Test
    void consumerPerformanceConsumesEveryRecordInAGroup() throws Exception {
        String topic = TestBroker.unique("tools-consumer-perf");
        String group = TestBroker.unique("tools-perf-group");
        int count = 20_000;
        RecordFixture fixture = new RecordFixture(topic, 3, 5, System.currentTimeMillis() - 60_000);
        Clients.createTopic(bootstrap, topic, 3, Map.of());
        try (KafkaProducer<byte[], byte[]> producer = Clients.producer(bootstrap, Map.of())) {
            Clients.produce(producer, fixture, 0, count);
        }
        KafkaTool.Result perf = tool(CONSUMER_PERFORMANCE, "--bootstrap-server", bootstrap, "--topic", topic,
                "--num-records", Integer.toString(count), "--group", group, "--timeout", "30000");
        assertThat(perf.exitCode()).as(perf.toString()).isZero();
        List<String> lines = perf.stdout().lines().filter(l -> !l.isBlank()).toList();
        assertThat(lines).as(perf.toString()).hasSize(2);
        List<String> header = List.of(lines.get(0).split(",\\s*"));
        String[] values = lines.get(1).split(",\\s*");
        assertThat(header).as(perf.toString()).contains("data.consumed.in.nMsg");
        assertThat(values[header.indexOf("data.consumed.in.nMsg")]).as(perf.toString()).isEqualTo(Integer.toString(count));
        try (Admin admin = Clients.admin(bootstrap)) {
            assertThat(GroupAssertions.committed(admin, group)).as("the tool's group committed everything on close")
                    .isEqualTo(Clients.endOffsets(fixture, count));
        }
    }

    private static KafkaTool.Result consumerGroups(String... args) throws Exception {
        List<String> all = new ArrayList<>(List.of("--bootstrap-server", bootstrap));
        all.addAll(List.of(args));
        return KafkaTool.run(tmp, CONSUMER_GROUPS, all);
    }

    /**
     * kafka-consumer-groups: --list, --describe (offsets and lag; --members; --state) of a group with
     * one live member, --reset-offsets refused while it is active and applied once it left, --delete;
     * for a classic group and a KIP-848 consumer group.
     */
    @org.junit.jupiter.params.ParameterizedTest(name = "{0}")
    @org.junit.jupiter.params.provider.ValueSource(strings = {"classic", "consumer"})
    void kafkaConsumerGroupsListsDescribesResetsAndDeletes(String protocol) throws Exception {
        boolean kip848 = protocol.equals("consumer");
        String topic = TestBroker.unique("tools-groups-" + protocol);
        String group = TestBroker.unique("tools-group-" + protocol);
        RecordFixture fixture = new RecordFixture(topic, 3, 6, System.currentTimeMillis() - 60_000);
        Clients.createTopic(bootstrap, topic, 3, Map.of());
        try (KafkaProducer<byte[], byte[]> producer = Clients.producer(bootstrap, Map.of())) {
            Clients.produce(producer, fixture, 0, 90); // 30 records per partition
        }
        TopicPartition p0 = fixture.tp(0);
        TopicPartition p1 = fixture.tp(1);
        TopicPartition p2 = fixture.tp(2);
        try (KafkaConsumer<byte[], byte[]> member = new KafkaConsumer<>(GroupMember.config(bootstrap, group,
                "tools-member", Map.of(ConsumerConfig.MAX_POLL_INTERVAL_MS_CONFIG, 300_000,
                        ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol)))) {
            member.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 30_000;
            while (member.assignment().size() < 3) {
                assertThat(System.currentTimeMillis()).as("time to get an assignment").isLessThan(deadline);
                member.poll(Duration.ofMillis(100));
            }
            member.commitSync(Map.of(p0, new OffsetAndMetadata(10), p1, new OffsetAndMetadata(20),
                    p2, new OffsetAndMetadata(30)), Duration.ofSeconds(30));
            String memberId = member.groupMetadata().memberId();
            // The member now sits idle; its heartbeat thread keeps it in the group while the tools run.

            KafkaTool.Result list = consumerGroups("--list");
            assertThat(list.exitCode()).as(list.toString()).isZero();
            assertThat(list.stdout().lines()).as(list.toString()).contains(group);

            // Offsets, log-end offsets and lag per partition, with the member that owns it.
            KafkaTool.Result describe = consumerGroups("--describe", "--group", group);
            assertThat(describe.exitCode()).as(describe.toString()).isZero();
            assertThat(rows(describe, group)).as(describe.toString()).containsExactlyInAnyOrder(
                    List.of(group, topic, "0", "10", "30", "20", memberId, "/127.0.0.1", "tools-member"),
                    List.of(group, topic, "1", "20", "30", "10", memberId, "/127.0.0.1", "tools-member"),
                    List.of(group, topic, "2", "30", "30", "0", memberId, "/127.0.0.1", "tools-member"));

            KafkaTool.Result members = consumerGroups("--describe", "--group", group, "--members", "--verbose");
            assertThat(members.exitCode()).as(members.toString()).isZero();
            assertThat(rows(members, group)).as(members.toString()).containsExactly(kip848
                    ? List.of(group, memberId, "/127.0.0.1", "tools-member", "3", "1", topic + ":0,1,2", "1", topic + ":0,1,2")
                    : List.of(group, memberId, "/127.0.0.1", "tools-member", "3", "-", topic + ":0,1,2", "-", "-"));

            KafkaTool.Result state = consumerGroups("--describe", "--group", group, "--state");
            assertThat(state.exitCode()).as(state.toString()).isZero();
            assertThat(rows(state, group)).as(state.toString()).containsExactly(
                    List.of(group, bootstrap, "(1)", kip848 ? "uniform" : "range", "Stable", "1"));

            // Offsets of an active group cannot be reset.
            KafkaTool.Result refused = consumerGroups("--reset-offsets", "--group", group, "--topic", topic,
                    "--to-earliest", "--execute");
            assertThat(refused.stdout()).as(refused.toString()).contains("Error: Assignments can only be reset if the group '"
                    + group + "' is inactive, but the current state is Stable.");
            try (Admin admin = Clients.admin(bootstrap)) {
                assertThat(GroupAssertions.committed(admin, group)).as("nothing reset")
                        .isEqualTo(Map.of(p0, 10L, p1, 20L, p2, 30L));
            }
        }
        // The member left (close sends LeaveGroup): now the reset goes through.
        KafkaTool.Result reset = consumerGroups("--reset-offsets", "--group", group, "--topic", topic,
                "--to-earliest", "--execute");
        assertThat(reset.exitCode()).as(reset.toString()).isZero();
        assertThat(rows(reset, group)).as(reset.toString()).containsExactlyInAnyOrder(
                List.of(group, topic, "0", "0"), List.of(group, topic, "1", "0"), List.of(group, topic, "2", "0"));
        try (Admin admin = Clients.admin(bootstrap)) {
            assertThat(GroupAssertions.committed(admin, group)).isEqualTo(Map.of(p0, 0L, p1, 0L, p2, 0L));
        }

        KafkaTool.Result describeEmpty = consumerGroups("--describe", "--group", group);
        assertThat(describeEmpty.exitCode()).as(describeEmpty.toString()).isZero();
        assertThat(describeEmpty.all()).as(describeEmpty.toString())
                .contains("Consumer group '" + group + "' has no active members.");
        assertThat(rows(describeEmpty, group)).as(describeEmpty.toString()).containsExactlyInAnyOrder(
                List.of(group, topic, "0", "0", "30", "30", "-", "-", "-"),
                List.of(group, topic, "1", "0", "30", "30", "-", "-", "-"),
                List.of(group, topic, "2", "0", "30", "30", "-", "-", "-"));

        KafkaTool.Result delete = consumerGroups("--delete", "--group", group);
        assertThat(delete.exitCode()).as(delete.toString()).isZero();
        assertThat(delete.stdout()).as(delete.toString())
                .contains("Deletion of requested consumer groups ('" + group + "') was successful.");
        try (Admin admin = Clients.admin(bootstrap)) {
            assertThat(admin.listGroups().all().get(30, TimeUnit.SECONDS))
                    .extracting(GroupListing::groupId).doesNotContain(group);
            assertThat(GroupAssertions.committed(admin, group)).as("offsets deleted with the group").isEmpty();
        }
    }

    /** The whitespace-separated fields of each output line that starts with {@code group}. */
    private static List<List<String>> rows(KafkaTool.Result result, String group) {
        return result.stdout().lines().map(String::trim).filter(l -> l.startsWith(group + " "))
                .map(l -> List.of(l.split("\\s+"))).toList();
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }
}
