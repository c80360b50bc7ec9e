package dev.varve.tests;

import dev.varve.broker.Broker;
import dev.varve.broker.BrokerConfig;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.requests.FetchRequest;
import org.apache.kafka.common.requests.FetchResponse;
import java.util.LinkedHashMap;
import java.util.Optional;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.ClusterAuthorizationException;
import org.apache.kafka.common.errors.GroupAuthorizationException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.errors.TransactionalIdAuthorizationException;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The ACL authorizer on a single node, as a Kafka operator uses it: {@code authorizer.class.name} set to
 * Kafka's StandardAuthorizer, an admin in {@code super.users}, ACLs granted and removed with Kafka's
 * own kafka-acls ({@code AclCommand}) and the Admin API, and stock Java clients of three users. Each
 * refused call gets Kafka's exception and leaves nothing behind (the log end offsets are counted); the
 * ACLs survive a restart (the single node's ACL file). The cluster case is in {@code SecureClusterTest}.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class AclAuthorizerTest {
    private static final String JAAS = PlainUsers.jaas(null, "admin", "alice", "bob");

    @TempDir
    Path dir;
    private final Closer closing = new Closer();
    private Broker broker;

    @AfterEach
    void close() throws Exception {
        closing.close();
        if (broker != null) {
            broker.close();
        }
    }

    private Broker start(Map<String, String> extra) throws Exception {
        Map<String, String> props = new HashMap<>();
        props.put("log.dirs", dir.resolve("data").toString());
        props.put("listeners", "SASL_PLAINTEXT://127.0.0.1:0");
        props.put("sasl.enabled.mechanisms", "PLAIN");
        props.put("listener.name.sasl_plaintext.plain.sasl.jaas.config", JAAS);
        props.put("authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer");
        props.put("super.users", "User:admin");
        props.put("group.initial.rebalance.delay.ms", "0");
        props.putAll(extra);
        return Broker.start(BrokerConfig.from(props));
    }

    private String bootstrap() {
        return broker.bootstrapServers();
    }

    private static Map<String, Object> user(String name) {
        return PlainUsers.client("SASL_PLAINTEXT", name);
    }

    private Admin admin(String name) {
        Map<String, Object> p = user(name);
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
        p.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 15_000);
        p.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
        Admin admin = Admin.create(p);
        closing.add(admin);
        return admin;
    }

    private KafkaProducer<byte[], byte[]> producer(String name, Map<String, Object> overrides) {
        Map<String, Object> p = user(name);
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 10_000);
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 15_000);
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
        p.putAll(overrides);
        KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
        closing.add(producer);
        return producer;
    }

    private KafkaConsumer<byte[], byte[]> consumer(String name, String group) {
        return consumer(name, group, Map.of());
    }

    private KafkaConsumer<byte[], byte[]> consumer(String name, String group, Map<String, Object> overrides) {
        Map<String, Object> p = user(name);
        p.putAll(overrides);
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
        p.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        p.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        p.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 10_000);
        KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer());
        closing.add(consumer);
        return consumer;
    }

    /** kafka-acls with the admin's credentials; its output. */
    private String kafkaAcls(String... args) throws Exception {
        Path config = dir.resolve("admin.properties");
        Files.writeString(config, "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config="
                + user("admin").get("sasl.jaas.config") + "\n", StandardCharsets.UTF_8);
        List<String> command = new ArrayList<>(List.of("--bootstrap-server", bootstrap(), "--command-config", config.toString()));
        command.addAll(List.of(args));
        KafkaTool.Result r = KafkaTool.run(dir, "org.apache.kafka.tools.AclCommand", command);
        assertThat(r.exitCode()).as(r.toString()).isZero();
        return r.stdout();
    }

    private long endOffset(String topic, int partitions) throws Exception {
        Map<TopicPartition, OffsetSpec> specs = new HashMap<>();
        for (int p = 0; p < partitions; p++) {
            specs.put(new TopicPartition(topic, p), OffsetSpec.latest());
        }
        return admin("admin").listOffsets(specs).all().get(15, TimeUnit.SECONDS).values().stream()
                .mapToLong(i -> i.offset()).sum();
    }

    private static void fails(ThrowingCall call, Class<? extends Throwable> expected) {
        assertThatThrownBy(call::run).satisfies(e -> assertThat(e instanceof ExecutionException ? e.getCause() : e)
                .isInstanceOf(expected));
    }

    private interface ThrowingCall {
        void run() throws Exception;
    }

    private static ProducerRecord<byte[], byte[]> record(String topic, int i) {
        return new ProducerRecord<>(topic, ("k" + i).getBytes(StandardCharsets.UTF_8), ("v" + i).getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void aclsGrantedWithKafkaAclsAreEnforcedOnEveryPathAndSurviveARestart() throws Exception {
        broker = start(Map.of());
        Admin admin = admin("admin");
        admin.createTopics(List.of(new NewTopic("orders", 3, (short) 1), new NewTopic("payments", 1, (short) 1)))
                .all().get(15, TimeUnit.SECONDS);

        assertThat(kafkaAcls("--add", "--allow-principal", "User:alice", "--operation", "Write", "--operation", "Read",
                "--topic", "orders")).contains("orders");
        // the consumer-group convenience form: READ on the topic and on the group
        assertThat(kafkaAcls("--add", "--allow-principal", "User:alice", "--consumer", "--topic", "orders", "--group", "app"))
                .contains("app");
        assertThat(kafkaAcls("--list", "--topic", "orders")).contains("principal=User:alice").contains("operation=WRITE")
                .contains("operation=READ");

        // alice: an idempotent producer (WRITE on a topic stands for IDEMPOTENT_WRITE) and a consumer in her group
        KafkaProducer<byte[], byte[]> alice = producer("alice", Map.of());
        for (int i = 0; i < 90; i++) {
            alice.send(record("orders", i)).get(15, TimeUnit.SECONDS);
        }
        KafkaConsumer<byte[], byte[]> aliceReads = consumer("alice", "app");
        aliceReads.subscribe(List.of("orders"));
        Set<String> read = new HashSet<>();
        long deadline = System.currentTimeMillis() + 30_000;
        while (read.size() < 90 && System.currentTimeMillis() < deadline) {
            for (ConsumerRecord<byte[], byte[]> r : aliceReads.poll(Duration.ofMillis(500))) {
                read.add(new String(r.value(), StandardCharsets.UTF_8));
            }
        }
        assertThat(read).hasSize(90);
        aliceReads.commitSync();

        // bob has no ACL at all
        fails(() -> producer("bob", Map.of()).send(record("orders", 0)).get(15, TimeUnit.SECONDS),
                TopicAuthorizationException.class);
        fails(() -> producer("bob", Map.of(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, false)).send(record("orders", 0))
                .get(15, TimeUnit.SECONDS), TopicAuthorizationException.class);
        // alice outside her group
        KafkaConsumer<byte[], byte[]> otherGroup = consumer("alice", "other");
        otherGroup.subscribe(List.of("orders"));
        fails(() -> otherGroup.poll(Duration.ofSeconds(5)), GroupAuthorizationException.class);
        // ... under the KIP-848 consumer protocol too (ConsumerGroupHeartbeat needs Read on the group)
        KafkaConsumer<byte[], byte[]> otherGroup848 = consumer("alice", "other", Map.of(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer"));
        otherGroup848.subscribe(List.of("orders"));
        fails(() -> otherGroup848.poll(Duration.ofSeconds(5)), GroupAuthorizationException.class);
        // bob may see payments but write nowhere: an idempotent producer cannot even start (no IDEMPOTENT_WRITE)
        admin.createAcls(List.of(new AclBinding(new ResourcePattern(ResourceType.TOPIC, "payments", PatternType.LITERAL),
                new AccessControlEntry("User:bob", "*", AclOperation.DESCRIBE, AclPermissionType.ALLOW)))).all().get(15, TimeUnit.SECONDS);
        fails(() -> producer("bob", Map.of()).send(record("payments", 0)).get(15, TimeUnit.SECONDS),
                ClusterAuthorizationException.class);
        KafkaConsumer<byte[], byte[]> bobReads = consumer("bob", "app");
        bobReads.subscribe(List.of("payments"));
        fails(() -> bobReads.poll(Duration.ofSeconds(5)), GroupAuthorizationException.class);
        assertThat(endOffset("orders", 3)).as("nothing bob sent was written").isEqualTo(90);
        assertThat(endOffset("payments", 1)).isZero();

        // Metadata shows each principal the topics it may describe
        assertThat(admin("alice").listTopics().names().get(15, TimeUnit.SECONDS)).containsExactly("orders");
        assertThat(admin("bob").listTopics().names().get(15, TimeUnit.SECONDS)).containsExactly("payments");
        assertThat(admin.listTopics().names().get(15, TimeUnit.SECONDS)).contains("orders", "payments");
        // describeTopics (DescribeTopicPartitions): a topic the principal may not describe is refused, not hidden
        var aliceDescribes = admin("alice").describeTopics(List.of("orders", "payments"),
                new org.apache.kafka.clients.admin.DescribeTopicsOptions().includeAuthorizedOperations(true)).topicNameValues();
        assertThat(aliceDescribes.get("orders").get(15, TimeUnit.SECONDS).authorizedOperations())
                .containsExactlyInAnyOrder(AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE);
        assertThat(aliceDescribes.get("orders").get(15, TimeUnit.SECONDS).partitions()).hasSize(3);
        fails(() -> aliceDescribes.get("payments").get(15, TimeUnit.SECONDS), TopicAuthorizationException.class);

        // admin calls without the ACLs for them
        Admin aliceAdmin = admin("alice");
        fails(() -> aliceAdmin.createTopics(List.of(new NewTopic("new", 1, (short) 1))).all().get(15, TimeUnit.SECONDS),
                TopicAuthorizationException.class);
        fails(() -> aliceAdmin.deleteTopics(List.of("orders")).all().get(15, TimeUnit.SECONDS), TopicAuthorizationException.class);
        fails(() -> aliceAdmin.describeConfigs(List.of(new ConfigResource(ConfigResource.Type.TOPIC, "orders")))
                .all().get(15, TimeUnit.SECONDS), TopicAuthorizationException.class);
        fails(() -> aliceAdmin.describeAcls(AclBindingFilter.ANY).values().get(15, TimeUnit.SECONDS),
                ClusterAuthorizationException.class);
        fails(() -> aliceAdmin.deleteRecords(Map.of(new TopicPartition("orders", 0),
                org.apache.kafka.clients.admin.RecordsToDelete.beforeOffset(1))).all().get(15, TimeUnit.SECONDS),
                TopicAuthorizationException.class);
        // READ on her group implies DESCRIBE; another group is not hers to see
        assertThat(aliceAdmin.describeConsumerGroups(List.of("app"), new org.apache.kafka.clients.admin.DescribeConsumerGroupsOptions()
                .includeAuthorizedOperations(true)).all().get(15, TimeUnit.SECONDS).get("app").authorizedOperations())
                .as("what alice may do to her group").containsExactlyInAnyOrder(AclOperation.READ, AclOperation.DESCRIBE);
        assertThat(aliceAdmin.describeTopics(List.of("orders"), new org.apache.kafka.clients.admin.DescribeTopicsOptions()
                .includeAuthorizedOperations(true)).allTopicNames().get(15, TimeUnit.SECONDS).get("orders").authorizedOperations())
                .containsExactlyInAnyOrder(AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE);
        fails(() -> aliceAdmin.describeConsumerGroups(List.of("other")).all().get(15, TimeUnit.SECONDS),
                GroupAuthorizationException.class);
        assertThat(aliceAdmin.listConsumerGroups().all().get(15, TimeUnit.SECONDS))
                .extracting(org.apache.kafka.clients.admin.ConsumerGroupListing::groupId).containsExactly("app");
        assertThat(admin.listTopics().names().get(15, TimeUnit.SECONDS)).doesNotContain("new").contains("orders");
        assertThat(endOffset("orders", 3)).isEqualTo(90);

        // transactions: the transactional id needs its own ACL
        fails(() -> producer("alice", Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "alice-tx")).initTransactions(),
                TransactionalIdAuthorizationException.class);
        admin.createAcls(List.of(new AclBinding(new ResourcePattern(ResourceType.TRANSACTIONAL_ID, "alice-", PatternType.PREFIXED),
                new AccessControlEntry("User:alice", "*", AclOperation.WRITE, AclPermissionType.ALLOW)))).all().get(15, TimeUnit.SECONDS);
        KafkaProducer<byte[], byte[]> tx = producer("alice", Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "alice-tx"));
        tx.initTransactions();
        tx.beginTransaction();
        for (int i = 90; i < 100; i++) {
            tx.send(record("orders", i));
        }
        tx.commitTransaction();

        // a prefixed grant lets bob create and use his own topics
        admin.createAcls(List.of(
                new AclBinding(new ResourcePattern(ResourceType.TOPIC, "bob-", PatternType.PREFIXED),
                        new AccessControlEntry("User:bob", "*", AclOperation.ALL, AclPermissionType.ALLOW)))).all().get(15, TimeUnit.SECONDS);
        admin("bob").createTopics(List.of(new NewTopic("bob-events", 1, (short) 1))).all().get(15, TimeUnit.SECONDS);
        producer("bob", Map.of()).send(record("bob-events", 0)).get(15, TimeUnit.SECONDS);
        fails(() -> admin("bob").createTopics(List.of(new NewTopic("robert", 1, (short) 1))).all().get(15, TimeUnit.SECONDS),
                TopicAuthorizationException.class);
        Map<ConfigResource, org.apache.kafka.clients.admin.Config> bobsConfigs = admin("bob").describeConfigs(List.of(
                new ConfigResource(ConfigResource.Type.TOPIC, "bob-events"))).all().get(15, TimeUnit.SECONDS);
        assertThat(bobsConfigs.values().iterator().next().entries()).extracting(ConfigEntry::name).contains("cleanup.policy");

        // a request naming resources bob may and may not touch: each gets its own answer
        var mixed = admin("bob").describeConfigs(List.of(new ConfigResource(ConfigResource.Type.TOPIC, "bob-events"),
                new ConfigResource(ConfigResource.Type.TOPIC, "orders"))).values();
        assertThat(mixed.get(new ConfigResource(ConfigResource.Type.TOPIC, "bob-events")).get(15, TimeUnit.SECONDS).entries())
                .isNotEmpty();
        fails(() -> mixed.get(new ConfigResource(ConfigResource.Type.TOPIC, "orders")).get(15, TimeUnit.SECONDS),
                TopicAuthorizationException.class);
        fails(() -> aliceAdmin.createPartitions(Map.of("orders", org.apache.kafka.clients.admin.NewPartitions.increaseTo(4)))
                .all().get(15, TimeUnit.SECONDS), TopicAuthorizationException.class);
        fails(() -> aliceAdmin.incrementalAlterConfigs(Map.of(new ConfigResource(ConfigResource.Type.TOPIC, "orders"),
                List.of(new org.apache.kafka.clients.admin.AlterConfigOp(new ConfigEntry("retention.ms", "1000"),
                        org.apache.kafka.clients.admin.AlterConfigOp.OpType.SET)))).all().get(15, TimeUnit.SECONDS),
                TopicAuthorizationException.class);
        fails(() -> aliceAdmin.deleteConsumerGroups(List.of("app")).all().get(15, TimeUnit.SECONDS),
                GroupAuthorizationException.class);
        assertThat(admin.describeTopics(List.of("orders")).allTopicNames().get(15, TimeUnit.SECONDS).get("orders").partitions())
                .hasSize(3);
        assertThat(admin.describeConfigs(List.of(new ConfigResource(ConfigResource.Type.TOPIC, "orders"))).all()
                .get(15, TimeUnit.SECONDS).values().iterator().next().get("retention.ms").value()).isNotEqualTo("1000");

        int acls = admin.describeAcls(AclBindingFilter.ANY).values().get(15, TimeUnit.SECONDS).size();
        assertThat(acls).as("alice: WRITE, READ, DESCRIBE on orders, READ on app, WRITE on alice-*; bob: DESCRIBE on payments, ALL on bob-*").isEqualTo(7);
        closing.close();
        broker.close();
        broker = start(Map.of());
        assertThat(admin("admin").describeAcls(AclBindingFilter.ANY).values().get(15, TimeUnit.SECONDS)).hasSize(acls);
        producer("alice", Map.of()).send(record("orders", 100)).get(15, TimeUnit.SECONDS);
        assertThat(endOffset("orders", 3)).as("90 + 10 in a transaction + its commit markers + 1").isGreaterThanOrEqualTo(101);

        // removing the ACLs takes alice's access away at once
        kafkaAcls("--remove", "--force", "--allow-principal", "User:alice", "--operation", "Write", "--operation", "Read",
                "--topic", "orders");
        fails(() -> producer("alice", Map.of(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, false)).send(record("orders", 0))
                .get(15, TimeUnit.SECONDS), TopicAuthorizationException.class);
    }

    /**
     * A client on a PLAINTEXT listener (principal User:ANONYMOUS, no ACLs) writing, and posing as a follower
     * replica to read past the high watermark: every partition is refused with TOPIC_AUTHORIZATION_FAILED
     * (a follower needs CLUSTER_ACTION), nothing is written, and the broker goes on serving.
     */
    @Test
    void anUnauthenticatedClientPosingAsAFollowerOrWritingIsRefused() throws Exception {
        broker = start(Map.of("listeners", "SASL_PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0"));
        Admin admin = admin("admin");
        admin.createTopics(List.of(new NewTopic("guarded", 1, (short) 1))).all().get(15, TimeUnit.SECONDS);
        producer("admin", Map.of()).send(record("guarded", 0)).get(15, TimeUnit.SECONDS);
        Uuid id = admin.describeTopics(List.of("guarded")).allTopicNames().get(15, TimeUnit.SECONDS).get("guarded").topicId();
        var plaintext = broker.boundAddresses().get(1);
        try (RawKafkaClient rogue = new RawKafkaClient(plaintext.getHostString() + ":" + plaintext.getPort())) {
            Map<TopicPartition, FetchRequest.PartitionData> fetch = new LinkedHashMap<>();
            fetch.put(new TopicPartition("guarded", 0), new FetchRequest.PartitionData(id, 0, 0, 1 << 20,
                    Optional.empty(), Optional.empty()));
            FetchResponse asFollower = rogue.send(FetchRequest.Builder.forReplica(ApiKeys.FETCH.latestVersion(), 1, 1, 0, 1, fetch)
                    .build());
            assertThat(asFollower.data().responses()).flatExtracting(t -> t.partitions())
                    .extracting(p -> Errors.forCode(p.errorCode())).containsExactly(Errors.TOPIC_AUTHORIZATION_FAILED);
            assertThat(asFollower.data().responses()).flatExtracting(t -> t.partitions())
                    .allMatch(p -> p.records() == null || p.records().sizeInBytes() == 0);
            MemoryRecords forged = MemoryRecords.withRecords(Compression.NONE, new SimpleRecord("forged".getBytes(StandardCharsets.UTF_8)));
            assertThat(Errors.forCode(rogue.produce("guarded", 0, forged).errorCode())).isEqualTo(Errors.TOPIC_AUTHORIZATION_FAILED);
        }
        assertThat(endOffset("guarded", 1)).isEqualTo(1);
        producer("admin", Map.of()).send(record("guarded", 1)).get(15, TimeUnit.SECONDS);
        assertThat(endOffset("guarded", 1)).isEqualTo(2);
    }

    @Test
    void allowEveryoneIfNoAclFoundOpensOnlyResourcesWithoutAcls() throws Exception {
        broker = start(Map.of("allow.everyone.if.no.acl.found", "true"));
        Admin admin = admin("admin");
        admin.createTopics(List.of(new NewTopic("open", 1, (short) 1), new NewTopic("closed", 1, (short) 1)))
                .all().get(15, TimeUnit.SECONDS);
        admin.createAcls(List.of(new AclBinding(new ResourcePattern(ResourceType.TOPIC, "closed", PatternType.LITERAL),
                new AccessControlEntry("User:alice", "*", AclOperation.WRITE, AclPermissionType.ALLOW)))).all().get(15, TimeUnit.SECONDS);
        KafkaProducer<byte[], byte[]> bob = producer("bob", Map.of());
        bob.send(record("open", 0)).get(15, TimeUnit.SECONDS);
        fails(() -> bob.send(record("closed", 0)).get(15, TimeUnit.SECONDS), TopicAuthorizationException.class);
        assertThat(endOffset("closed", 1)).isZero();
    }

    @Test
    void authorizerSettingsVarveCannotServeAreRefusedAtStart() {
        Map<String, String> base = Map.of("log.dirs", dir.resolve("data").toString());
        Map<String, String> zk = new HashMap<>(base);
        zk.put("authorizer.class.name", "kafka.security.authorizer.AclAuthorizer");
        assertThatThrownBy(() -> BrokerConfig.from(zk)).isInstanceOf(ConfigException.class)
                .hasMessageContaining("authorizer.class.name");
        Map<String, String> badSuper = new HashMap<>(base);
        badSuper.put("authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer");
        badSuper.put("super.users", "admin");
        assertThatThrownBy(() -> BrokerConfig.from(badSuper)).isInstanceOf(ConfigException.class)
                .hasMessageContaining("super.users");
    }
}
