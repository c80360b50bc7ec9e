package dev.varve.broker;

import dev.varve.storage.PartitionLog;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.CreatePartitionsOptions;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.clients.admin.DescribeConfigsOptions;
import org.apache.kafka.clients.admin.AlterConfigsOptions;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.ReplicaInfo;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicCollection;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.errors.InvalidPartitionsException;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.errors.OffsetOutOfRangeException;
import org.apache.kafka.common.errors.UnknownTopicIdException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.function.Function;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The admin APIs through the stock kafka-clients {@link Admin}, against one in-process broker. */
class AdminApisTest {
    @TempDir
    static File dir;
    static Broker broker;
    static Admin admin;

    @BeforeAll
    static void start() throws Exception {
        broker = Broker.start(BrokerConfig.from(Map.of(
                "listeners", "PLAINTEXT://127.0.0.1:0",
                "log.dirs", dir.getAbsolutePath(),
                "log.retention.bytes", "1000000000")));
        admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers()));
    }

    @AfterAll
    static void stop() throws Exception {
        admin.close();
        broker.close();
    }

    @Test
    void deleteTopicThenRecreateIt() throws Exception {
        admin.createTopics(List.of(new NewTopic("doomed", 2, (short) 1))).all().get();
        produce("doomed", 0, 5);
        Uuid oldId = admin.describeTopics(List.of("doomed")).allTopicNames().get().get("doomed").topicId();

        admin.deleteTopics(List.of("doomed")).all().get();
        assertThat(admin.listTopics().names().get()).doesNotContain("doomed");
        assertThat(new File(dir, "doomed-0")).doesNotExist();
        assertThat(broker.context().replicaManager().logManager().getLog(new TopicPartition("doomed", 0))).isEmpty();

        admin.createTopics(List.of(new NewTopic("doomed", 1, (short) 1))).all().get();
        TopicDescription again = admin.describeTopics(List.of("doomed")).allTopicNames().get().get("doomed");
        assertThat(again.topicId()).isNotEqualTo(oldId);
        assertThat(again.partitions()).hasSize(1);
        TopicPartition p0 = new TopicPartition("doomed", 0);
        assertThat(endOffset(p0)).as("the old records are gone").isZero();
        assertThat(produce("doomed", 0, 1).get(0).offset()).isZero();

        // By topic id (DeleteTopics v6).
        admin.deleteTopics(TopicCollection.ofTopicIds(List.of(again.topicId()))).all().get();
        assertThat(admin.listTopics().names().get()).doesNotContain("doomed");
    }

    @Test
    void deletingUnknownTopicsFails() {
        assertThatThrownBy(() -> admin.deleteTopics(List.of("never-existed")).all().get())
                .hasCauseInstanceOf(UnknownTopicOrPartitionException.class);
        assertThatThrownBy(() -> admin.deleteTopics(TopicCollection.ofTopicIds(List.of(Uuid.randomUuid()))).all().get())
                .hasCauseInstanceOf(UnknownTopicIdException.class);
    }

    @Test
    void createPartitionsThenProduceToTheNewOne() throws Exception {
        admin.createTopics(List.of(new NewTopic("growing", 1, (short) 1))).all().get();

        admin.createPartitions(Map.of("growing", NewPartitions.increaseTo(3)),
                new CreatePartitionsOptions().validateOnly(true)).all().get();
        assertThat(partitionCount("growing")).as("validate-only changes nothing").isEqualTo(1);

        admin.createPartitions(Map.of("growing", NewPartitions.increaseTo(3))).all().get();
        assertThat(partitionCount("growing")).isEqualTo(3);
        assertThat(new File(dir, "growing-2")).isDirectory();
        RecordMetadata md = produce("growing", 2, 3).get(2);
        assertThat(md.partition()).isEqualTo(2);
        assertThat(md.offset()).isEqualTo(2);

        assertThatThrownBy(() -> admin.createPartitions(Map.of("growing", NewPartitions.increaseTo(3))).all().get())
                .hasCauseInstanceOf(InvalidPartitionsException.class);
        assertThatThrownBy(() -> admin.createPartitions(Map.of("growing", NewPartitions.increaseTo(2))).all().get())
                .hasCauseInstanceOf(InvalidPartitionsException.class);
        assertThatThrownBy(() -> admin.createPartitions(Map.of("growing",
                NewPartitions.increaseTo(4, List.of(List.of(broker.context().nodeId() + 1))))).all().get())
                .hasCauseInstanceOf(org.apache.kafka.common.errors.InvalidReplicaAssignmentException.class);
        assertThatThrownBy(() -> admin.createPartitions(Map.of("no-such-topic", NewPartitions.increaseTo(2))).all().get())
                .hasCauseInstanceOf(UnknownTopicOrPartitionException.class);
        assertThat(partitionCount("growing")).isEqualTo(3);
    }

    @Test
    void deleteRecordsMovesTheBeginningOffset() throws Exception {
        admin.createTopics(List.of(new NewTopic("trimmed", 1, (short) 1)
                .configs(Map.of("segment.bytes", "1024")))).all().get();
        TopicPartition tp = new TopicPartition("trimmed", 0);
        produce("trimmed", 0, 40);
        PartitionLog log = broker.context().replicaManager().log(tp);
        int segmentsBefore = log.numberOfSegments();
        assertThat(segmentsBefore).isGreaterThan(2);

        long low = admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(25))).lowWatermarks().get(tp).get().lowWatermark();
        assertThat(low).isEqualTo(25);
        assertThat(beginningOffset(tp)).isEqualTo(25);
        assertThat(log.numberOfSegments()).as("segments wholly below 25 are deleted").isLessThan(segmentsBefore);

        // Below the log start: nothing changes.
        assertThat(admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(3))).lowWatermarks().get(tp).get()
                .lowWatermark()).isEqualTo(25);
        assertThatThrownBy(() -> admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(41))).all().get())
                .hasCauseInstanceOf(OffsetOutOfRangeException.class);
        // -1: up to the high watermark.
        assertThat(admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(-1))).lowWatermarks().get(tp).get()
                .lowWatermark()).isEqualTo(40);
        assertThat(beginningOffset(tp)).isEqualTo(40);
        assertThat(endOffset(tp)).isEqualTo(40);
    }

    @Test
    void describeConfigsShowsDefaultsOverridesAndSources() throws Exception {
        admin.createTopics(List.of(new NewTopic("described", 1, (short) 1)
                .configs(Map.of("retention.ms", "123456", "cleanup.policy", "compact")))).all().get();
        ConfigResource topic = new ConfigResource(ConfigResource.Type.TOPIC, "described");
        Map<String, ConfigEntry> entries = describe(topic, new DescribeConfigsOptions().includeSynonyms(true)
                .includeDocumentation(true));

        assertThat(entries.keySet()).contains("segment.bytes", "retention.ms", "retention.bytes", "retention.messages",
                "cleanup.policy", "min.insync.replicas", "max.message.bytes", "message.timestamp.type");
        ConfigEntry retention = entries.get("retention.ms");
        assertThat(retention.value()).isEqualTo("123456");
        assertThat(retention.source()).isEqualTo(ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG);
        assertThat(retention.isReadOnly()).isFalse();
        assertThat(retention.isSensitive()).isFalse();
        assertThat(retention.type()).isEqualTo(ConfigEntry.ConfigType.LONG);
        assertThat(retention.documentation()).isNotBlank();
        assertThat(retention.synonyms()).extracting(ConfigEntry.ConfigSynonym::name, ConfigEntry.ConfigSynonym::source)
                .containsExactly(
                        org.assertj.core.groups.Tuple.tuple("retention.ms", ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG),
                        org.assertj.core.groups.Tuple.tuple("log.retention.ms", ConfigEntry.ConfigSource.DEFAULT_CONFIG));
        assertThat(entries.get("cleanup.policy").value()).isEqualTo("compact");
        assertThat(entries.get("cleanup.policy").type()).isEqualTo(ConfigEntry.ConfigType.LIST);

        ConfigEntry segment = entries.get("segment.bytes");
        assertThat(segment.value()).isEqualTo("1073741824");
        assertThat(segment.source()).isEqualTo(ConfigEntry.ConfigSource.DEFAULT_CONFIG);
        // Set in the broker's properties (log.retention.bytes).
        ConfigEntry bytes = entries.get("retention.bytes");
        assertThat(bytes.value()).isEqualTo("1000000000");
        assertThat(bytes.source()).isEqualTo(ConfigEntry.ConfigSource.STATIC_BROKER_CONFIG);
        assertThat(bytes.synonyms()).extracting(ConfigEntry.ConfigSynonym::name).containsExactly(
                "log.retention.bytes", "log.retention.bytes");

        // Without synonyms and documentation unless asked.
        ConfigEntry plain = describe(topic, new DescribeConfigsOptions()).get("retention.ms");
        assertThat(plain.synonyms()).isEmpty();
        assertThat(plain.documentation()).isNull();

        assertThatThrownBy(() -> admin.describeConfigs(List.of(new ConfigResource(ConfigResource.Type.TOPIC, "missing")))
                .all().get()).hasCauseInstanceOf(UnknownTopicOrPartitionException.class);
    }

    @Test
    void describeBrokerConfigs() throws Exception {
        String id = Integer.toString(broker.context().nodeId());
        Map<String, ConfigEntry> entries = describe(new ConfigResource(ConfigResource.Type.BROKER, id),
                new DescribeConfigsOptions());
        assertThat(entries.get("node.id").value()).isEqualTo(id);
        assertThat(entries.get("listeners").value()).isEqualTo("PLAINTEXT://127.0.0.1:0");
        assertThat(entries.get("listeners").source()).isEqualTo(ConfigEntry.ConfigSource.STATIC_BROKER_CONFIG);
        assertThat(entries.get("advertised.listeners").value())
                .isEqualTo("PLAINTEXT://" + broker.bootstrapServers());
        assertThat(entries.get("log.dirs").value()).isEqualTo(dir.getAbsolutePath());
        assertThat(entries.get("log.segment.bytes").value()).isEqualTo("1073741824");
        assertThat(entries.get("log.segment.bytes").source()).isEqualTo(ConfigEntry.ConfigSource.DEFAULT_CONFIG);
        assertThat(entries.get("log.retention.bytes").value()).isEqualTo("1000000000");
        assertThat(entries.get("log.retention.bytes").source()).isEqualTo(ConfigEntry.ConfigSource.STATIC_BROKER_CONFIG);
        assertThat(entries.get("delete.topic.enable").value()).isEqualTo("true");
        assertThat(entries.values()).allMatch(ConfigEntry::isReadOnly);
        // Another broker id: Admin cannot even route it; AdminApisWireTest sends one.
    }

    @Test
    void incrementalAlterConfigsRoundTrip() throws Exception {
        admin.createTopics(List.of(new NewTopic("altered", 2, (short) 1))).all().get();
        ConfigResource topic = new ConfigResource(ConfigResource.Type.TOPIC, "altered");
        alter(topic, new AlterConfigOp(new ConfigEntry("retention.ms", "5000"), AlterConfigOp.OpType.SET),
                new AlterConfigOp(new ConfigEntry("cleanup.policy", "compact"), AlterConfigOp.OpType.APPEND),
                new AlterConfigOp(new ConfigEntry("segment.bytes", "4096"), AlterConfigOp.OpType.SET));
        Map<String, ConfigEntry> entries = describe(topic, new DescribeConfigsOptions());
        assertThat(entries.get("retention.ms").value()).isEqualTo("5000");
        assertThat(entries.get("retention.ms").source()).isEqualTo(ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG);
        assertThat(entries.get("cleanup.policy").value()).isEqualTo("delete,compact");
        // Applied to the open logs and persisted in the registry.
        PartitionLog log = broker.context().replicaManager().log(new TopicPartition("altered", 1));
        assertThat(log.config().retentionMs()).isEqualTo(5000);
        assertThat(log.config().segmentBytes()).isEqualTo(4096);
        assertThat(broker.context().topics().get("altered").orElseThrow().configs())
                .containsEntry("retention.ms", "5000").containsEntry("cleanup.policy", "delete,compact");

        alter(topic, new AlterConfigOp(new ConfigEntry("retention.ms", ""), AlterConfigOp.OpType.DELETE),
                new AlterConfigOp(new ConfigEntry("cleanup.policy", "delete"), AlterConfigOp.OpType.SUBTRACT));
        entries = describe(topic, new DescribeConfigsOptions());
        assertThat(entries.get("retention.ms").value()).isEqualTo("604800000");
        assertThat(entries.get("retention.ms").source()).isEqualTo(ConfigEntry.ConfigSource.DEFAULT_CONFIG);
        assertThat(entries.get("cleanup.policy").value()).isEqualTo("compact");
        assertThat(log.config().retentionMs()).isEqualTo(604800000L);
        assertThat(log.config().segmentBytes()).as("untouched keys stay").isEqualTo(4096);
    }

    @Test
    void configsThatWouldDoNothingAreRefusedAndTheOthersAct() throws Exception {
        // preallocate=true is refused (Varve does not preallocate), naming the key
        assertThatThrownBy(() -> admin.createTopics(List.of(new NewTopic("prealloc", 1, (short) 1)
                .configs(Map.of("preallocate", "true")))).all().get())
                .hasCauseInstanceOf(InvalidConfigurationException.class).hasMessageContaining("preallocate");
        admin.createTopics(List.of(new NewTopic("prealloc-off", 1, (short) 1).configs(Map.of("preallocate", "false",
                "message.downconversion.enable", "false")))).all().get();
        assertThatThrownBy(() -> admin.createTopics(List.of(new NewTopic("codec", 1, (short) 1)
                .configs(Map.of("compression.type", "brotli")))).all().get())
                .hasCauseInstanceOf(InvalidConfigurationException.class).hasMessageContaining("compression.type");
        // compression.type recompresses what a producer sends uncompressed; segment.jitter.ms reaches the log
        admin.createTopics(List.of(new NewTopic("codec", 1, (short) 1).configs(Map.of("compression.type", "lz4",
                "segment.jitter.ms", "5000", "segment.ms", "60000")))).all().get();
        TopicPartition tp = new TopicPartition("codec", 0);
        try (org.apache.kafka.clients.producer.KafkaProducer<byte[], byte[]> producer = new org.apache.kafka.clients.producer.KafkaProducer<>(
                Map.of("bootstrap.servers", broker.bootstrapServers(), "compression.type", "none"),
                new org.apache.kafka.common.serialization.ByteArraySerializer(), new org.apache.kafka.common.serialization.ByteArraySerializer())) {
            producer.send(new org.apache.kafka.clients.producer.ProducerRecord<>("codec", 0, null, "hello".getBytes())).get();
        }
        dev.varve.storage.PartitionLog log = broker.context().replicaManager().log(tp);
        org.apache.kafka.common.record.internal.RecordBatch stored =
                log.read(0, 1 << 20, log.logEndOffset(), true).records().batches().iterator().next();
        assertThat(stored.compressionType()).isEqualTo(org.apache.kafka.common.record.internal.CompressionType.LZ4);
        assertThat(log.config().segmentJitterMs()).isEqualTo(5000);
        assertThat(log.activeSegmentRollJitterMs()).isBetween(0L, 4999L);
        assertThat(describe(new ConfigResource(ConfigResource.Type.TOPIC, "codec"), new DescribeConfigsOptions())
                .get("compression.type").value()).isEqualTo("lz4");
    }

    @Test
    void badConfigChangesAreRefusedAndChangeNothing() throws Exception {
        admin.createTopics(List.of(new NewTopic("guarded", 1, (short) 1).configs(Map.of("retention.ms", "7000")))).all().get();
        ConfigResource topic = new ConfigResource(ConfigResource.Type.TOPIC, "guarded");

        assertThatThrownBy(() -> alter(topic, new AlterConfigOp(new ConfigEntry("retention.ms", "soon"), AlterConfigOp.OpType.SET)))
                .hasCauseInstanceOf(InvalidConfigurationException.class).hasMessageContaining("retention.ms");
        assertThatThrownBy(() -> alter(topic, new AlterConfigOp(new ConfigEntry("no.such.key", "1"), AlterConfigOp.OpType.SET)))
                .hasCauseInstanceOf(InvalidConfigurationException.class).hasMessageContaining("no.such.key");
        assertThatThrownBy(() -> alter(topic, new AlterConfigOp(new ConfigEntry("retention.ms", "1"), AlterConfigOp.OpType.APPEND)))
                .hasCauseInstanceOf(InvalidConfigurationException.class).hasMessageContaining("retention.ms");
        // A good op next to a bad one: the resource is all or nothing.
        assertThatThrownBy(() -> alter(topic,
                new AlterConfigOp(new ConfigEntry("segment.bytes", "8192"), AlterConfigOp.OpType.SET),
                new AlterConfigOp(new ConfigEntry("cleanup.policy", "shred"), AlterConfigOp.OpType.SET)))
                .hasCauseInstanceOf(InvalidConfigurationException.class).hasMessageContaining("cleanup.policy");

        // Validate-only: checked, not applied.
        admin.incrementalAlterConfigs(Map.of(topic, List.of(
                new AlterConfigOp(new ConfigEntry("retention.ms", "1"), AlterConfigOp.OpType.SET))),
                new AlterConfigsOptions().validateOnly(true)).all().get();
        assertThatThrownBy(() -> admin.incrementalAlterConfigs(Map.of(topic, List.of(
                new AlterConfigOp(new ConfigEntry("retention.ms", "x"), AlterConfigOp.OpType.SET))),
                new AlterConfigsOptions().validateOnly(true)).all().get())
                .hasCauseInstanceOf(InvalidConfigurationException.class);

        assertThat(broker.context().topics().get("guarded").orElseThrow().configs()).isEqualTo(Map.of("retention.ms", "7000"));
        assertThat(describe(topic, new DescribeConfigsOptions()).get("retention.ms").value()).isEqualTo("7000");
        assertThat(broker.context().replicaManager().log(new TopicPartition("guarded", 0)).config().retentionMs()).isEqualTo(7000);

        assertThatThrownBy(() -> alter(new ConfigResource(ConfigResource.Type.TOPIC, "missing"),
                new AlterConfigOp(new ConfigEntry("retention.ms", "1"), AlterConfigOp.OpType.SET)))
                .hasCauseInstanceOf(UnknownTopicOrPartitionException.class);
        assertThatThrownBy(() -> alter(new ConfigResource(ConfigResource.Type.BROKER, Integer.toString(broker.context().nodeId())),
                new AlterConfigOp(new ConfigEntry("num.io.threads", "4"), AlterConfigOp.OpType.SET)))
                .hasCauseInstanceOf(InvalidRequestException.class).hasMessageContaining("not supported");
    }

    @Test
    void describeCluster() throws Exception {
        var result = admin.describeCluster(new DescribeClusterOptions().includeAuthorizedOperations(true));
        assertThat(result.clusterId().get()).isEqualTo(broker.context().clusterId());
        Node controller = result.controller().get();
        assertThat(controller.id()).isEqualTo(broker.context().nodeId());
        Collection<Node> nodes = result.nodes().get();
        assertThat(nodes).hasSize(1);
        Node self = nodes.iterator().next();
        assertThat(self.host() + ":" + self.port()).isEqualTo(broker.bootstrapServers());
        assertThat(result.authorizedOperations().get()).contains(AclOperation.DESCRIBE, AclOperation.ALTER_CONFIGS);
        assertThat(admin.describeCluster().authorizedOperations().get()).isNull();
    }

    @Test
    void describeLogDirsSizesGrowWithProduce() throws Exception {
        admin.createTopics(List.of(new NewTopic("sized", 2, (short) 1))).all().get();
        TopicPartition tp = new TopicPartition("sized", 1);
        long before = logDirs().replicaInfos().get(tp).size();
        produce("sized", 1, 20);
        LogDirDescription after = logDirs();
        ReplicaInfo info = after.replicaInfos().get(tp);
        assertThat(info.size()).isGreaterThan(before);
        assertThat(info.size()).isEqualTo(broker.context().replicaManager().log(tp).size());
        assertThat(info.offsetLag()).isZero();
        assertThat(info.isFuture()).isFalse();
        assertThat(after.replicaInfos()).containsKey(new TopicPartition("sized", 0));
        assertThat(after.error()).isNull();
        assertThat(after.totalBytes().orElseThrow()).isPositive();
        assertThat(after.usableBytes().orElseThrow()).isPositive();
    }

    // ------------------------------------------------------------------ helpers

    private static LogDirDescription logDirs() throws ExecutionException, InterruptedException {
        int id = broker.context().nodeId();
        Map<String, LogDirDescription> dirs = admin.describeLogDirs(List.of(id)).allDescriptions().get().get(id);
        assertThat(dirs).containsOnlyKeys(dir.getAbsolutePath());
        return dirs.get(dir.getAbsolutePath());
    }

    private static void alter(ConfigResource resource, AlterConfigOp... ops) throws Exception {
        admin.incrementalAlterConfigs(Map.of(resource, List.of(ops))).all().get();
    }

    private static Map<String, ConfigEntry> describe(ConfigResource resource, DescribeConfigsOptions options) throws Exception {
        Config config = admin.describeConfigs(List.of(resource), options).all().get().get(resource);
        return config.entries().stream().collect(Collectors.toMap(ConfigEntry::name, Function.identity()));
    }

    private static int partitionCount(String topic) throws Exception {
        return admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions().size();
    }

    private static List<RecordMetadata> produce(String topic, int partition, int count) throws Exception {
        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.LINGER_MS_CONFIG, "0");
        List<Future<RecordMetadata>> sent = new ArrayList<>();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp)) {
            for (int i = 0; i < count; i++) {
                // One batch per record, so small segments roll.
                sent.add(producer.send(new ProducerRecord<>(topic, partition, "k" + i, "value-" + i)));
                producer.flush();
            }
        }
        List<RecordMetadata> out = new ArrayList<>();
        for (Future<RecordMetadata> f : sent) {
            out.add(f.get());
        }
        return out;
    }

    private static long beginningOffset(TopicPartition tp) {
        try (KafkaConsumer<byte[], byte[]> c = consumer()) {
            return c.beginningOffsets(Set.of(tp)).get(tp);
        }
    }

    private static long endOffset(TopicPartition tp) {
        try (KafkaConsumer<byte[], byte[]> c = consumer()) {
            return c.endOffsets(Set.of(tp)).get(tp);
        }
    }

    private static KafkaConsumer<byte[], byte[]> consumer() {
        Properties cp = new Properties();
        cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        return new KafkaConsumer<>(cp);
    }
}
