package dev.varve.broker;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.TopicDeletionDisabledException;
import org.apache.kafka.common.message.AlterConfigsRequestData;
import org.apache.kafka.common.message.CreatePartitionsRequestData;
import org.apache.kafka.common.message.DeleteRecordsRequestData;
import org.apache.kafka.common.message.DeleteTopicsRequestData;
import org.apache.kafka.common.message.DeleteTopicsResponseData;
import org.apache.kafka.common.message.DescribeClusterRequestData;
import org.apache.kafka.common.message.DescribeConfigsRequestData;
import org.apache.kafka.common.message.DescribeConfigsResponseData;
import org.apache.kafka.common.message.DescribeLogDirsRequestData;
import org.apache.kafka.common.message.IncrementalAlterConfigsRequestData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AlterConfigsRequest;
import org.apache.kafka.common.requests.AlterConfigsResponse;
import org.apache.kafka.common.requests.CreatePartitionsRequest;
import org.apache.kafka.common.requests.CreatePartitionsResponse;
import org.apache.kafka.common.requests.DeleteRecordsRequest;
import org.apache.kafka.common.requests.DeleteRecordsResponse;
import org.apache.kafka.common.requests.DeleteTopicsRequest;
import org.apache.kafka.common.requests.DeleteTopicsResponse;
import org.apache.kafka.common.requests.DescribeClusterRequest;
import org.apache.kafka.common.requests.DescribeClusterResponse;
import org.apache.kafka.common.requests.DescribeConfigsRequest;
import org.apache.kafka.common.requests.DescribeConfigsResponse;
import org.apache.kafka.common.requests.DescribeLogDirsRequest;
import org.apache.kafka.common.requests.DescribeLogDirsResponse;
import org.apache.kafka.common.requests.IncrementalAlterConfigsRequest;
import org.apache.kafka.common.requests.IncrementalAlterConfigsResponse;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The admin APIs at every version kafka-clients 4.4 knows, over a raw connection (so versions the
 * stock Admin never picks are exercised too), plus the edge cases Admin cannot send.
 */
class AdminApisWireTest {
    @TempDir
    static File dir;
    static Broker broker;
    static Admin admin;

    @BeforeAll
    static void start() throws Exception {
        broker = Broker.start(BrokerConfig.from(Map.of(
                "listeners", "PLAINTEXT://127.0.0.1:0",
                "log.dirs", dir.getAbsolutePath())));
        admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers()));
    }

    @AfterAll
    static void stop() throws Exception {
        admin.close();
        broker.close();
    }

    private static RawKafkaClient client() throws Exception {
        return new RawKafkaClient(broker.boundAddresses().get(0));
    }

    private static void create(String topic, int partitions) throws Exception {
        admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get();
    }

    @Test
    void deleteTopicsEveryVersion() throws Exception {
        try (RawKafkaClient c = client()) {
            for (short v = ApiKeys.DELETE_TOPICS.oldestVersion(); v <= ApiKeys.DELETE_TOPICS.latestVersion(); v++) {
                String name = "del-v" + v;
                create(name, 2);
                DeleteTopicsRequestData data = new DeleteTopicsRequestData().setTimeoutMs(1000);
                if (v >= 6) {
                    data.setTopics(List.of(new DeleteTopicsRequestData.DeleteTopicState().setName(name),
                            new DeleteTopicsRequestData.DeleteTopicState().setName("missing")));
                } else {
                    data.setTopicNames(List.of(name, "missing"));
                }
                DeleteTopicsResponse r = c.send(new DeleteTopicsRequest.Builder(data), v);
                Map<String, Short> codes = r.data().responses().stream()
                        .collect(Collectors.toMap(DeleteTopicsResponseData.DeletableTopicResult::name,
                                DeleteTopicsResponseData.DeletableTopicResult::errorCode));
                assertThat(codes).as("v" + v).containsEntry(name, Errors.NONE.code())
                        .containsEntry("missing", Errors.UNKNOWN_TOPIC_OR_PARTITION.code());
                assertThat(broker.context().topics().get(name)).isEmpty();
            }
        }
    }

    @Test
    void deleteTopicsByIdAndMalformedEntries() throws Exception {
        create("by-id", 1);
        create("twice", 1);
        Uuid id = broker.context().topics().get("by-id").orElseThrow().id();
        Uuid unknown = Uuid.randomUuid();
        DeleteTopicsRequestData data = new DeleteTopicsRequestData().setTimeoutMs(1000).setTopics(List.of(
                new DeleteTopicsRequestData.DeleteTopicState().setTopicId(id),
                new DeleteTopicsRequestData.DeleteTopicState().setTopicId(unknown),
                new DeleteTopicsRequestData.DeleteTopicState().setName("twice"),
                new DeleteTopicsRequestData.DeleteTopicState().setName("twice"),
                new DeleteTopicsRequestData.DeleteTopicState()));
        try (RawKafkaClient c = client()) {
            DeleteTopicsResponse r = c.send(new DeleteTopicsRequest.Builder(data), (short) 6);
            List<DeleteTopicsResponseData.DeletableTopicResult> results = List.copyOf(r.data().responses());
            assertThat(results).anySatisfy(t -> {
                assertThat(t.topicId()).isEqualTo(id);
                assertThat(t.name()).isEqualTo("by-id");
                assertThat(t.errorCode()).isEqualTo(Errors.NONE.code());
            });
            assertThat(results).anySatisfy(t -> {
                assertThat(t.topicId()).isEqualTo(unknown);
                assertThat(t.errorCode()).isEqualTo(Errors.UNKNOWN_TOPIC_ID.code());
            });
            assertThat(results).filteredOn(t -> "twice".equals(t.name())).singleElement()
                    .satisfies(t -> assertThat(t.errorCode()).isEqualTo(Errors.INVALID_REQUEST.code()));
            assertThat(results).anySatisfy(t -> {
                assertThat(t.name()).isNull();
                assertThat(t.topicId()).isEqualTo(Uuid.ZERO_UUID);
                assertThat(t.errorCode()).isEqualTo(Errors.INVALID_REQUEST.code());
            });
            assertThat(results).hasSize(4);
        }
        assertThat(broker.context().topics().get("by-id")).isEmpty();
        assertThat(broker.context().topics().get("twice")).as("a duplicated entry deletes nothing").isPresent();
    }

    @Test
    void createPartitionsEveryVersion() throws Exception {
        create("grow", 1);
        try (RawKafkaClient c = client()) {
            int count = 1;
            for (short v = ApiKeys.CREATE_PARTITIONS.oldestVersion(); v <= ApiKeys.CREATE_PARTITIONS.latestVersion(); v++) {
                count++;
                CreatePartitionsRequestData data = new CreatePartitionsRequestData().setTimeoutMs(1000);
                // null assignments, as the Admin client sends them: an empty list means "no partition assigned"
                // (INVALID_REPLICA_ASSIGNMENT, as from Kafka), and is the generated class's default
                data.topics().add(new CreatePartitionsRequestData.CreatePartitionsTopic().setName("grow").setCount(count)
                        .setAssignments(null));
                data.topics().add(new CreatePartitionsRequestData.CreatePartitionsTopic().setName("missing").setCount(2)
                        .setAssignments(null));
                CreatePartitionsResponse r = c.send(new CreatePartitionsRequest.Builder(data), v);
                assertThat(r.data().results()).extracting(t -> t.name() + "=" + Errors.forCode(t.errorCode()))
                        .containsExactly("grow=NONE", "missing=UNKNOWN_TOPIC_OR_PARTITION");
                assertThat(broker.context().topics().get("grow").orElseThrow().partitions()).isEqualTo(count);
            }
            CreatePartitionsRequestData huge = new CreatePartitionsRequestData().setTimeoutMs(1000);
            huge.topics().add(new CreatePartitionsRequestData.CreatePartitionsTopic().setName("grow")
                    .setCount(Integer.MAX_VALUE).setAssignments(null));
            CreatePartitionsResponse r = c.send(new CreatePartitionsRequest.Builder(huge), ApiKeys.CREATE_PARTITIONS.latestVersion());
            assertThat(r.data().results().get(0).errorCode()).isEqualTo(Errors.INVALID_PARTITIONS.code());
            assertThat(r.data().results().get(0).errorMessage()).contains("at most");
        }
    }

    @Test
    void deleteRecordsEveryVersion() throws Exception {
        create("empty", 1);
        try (RawKafkaClient c = client()) {
            for (short v = ApiKeys.DELETE_RECORDS.oldestVersion(); v <= ApiKeys.DELETE_RECORDS.latestVersion(); v++) {
                DeleteRecordsRequestData data = new DeleteRecordsRequestData().setTimeoutMs(1000);
                data.topics().add(new DeleteRecordsRequestData.DeleteRecordsTopic().setName("empty").setPartitions(List.of(
                        new DeleteRecordsRequestData.DeleteRecordsPartition().setPartitionIndex(0).setOffset(-1),
                        new DeleteRecordsRequestData.DeleteRecordsPartition().setPartitionIndex(5).setOffset(0))));
                data.topics().add(new DeleteRecordsRequestData.DeleteRecordsTopic().setName("empty").setPartitions(List.of(
                        new DeleteRecordsRequestData.DeleteRecordsPartition().setPartitionIndex(0).setOffset(-2))));
                DeleteRecordsResponse r = c.send(new DeleteRecordsRequest.Builder(data), v);
                var partitions = r.data().topics().find("empty").partitions();
                assertThat(partitions.find(5).errorCode()).isEqualTo(Errors.UNKNOWN_TOPIC_OR_PARTITION.code());
                assertThat(partitions.find(0).errorCode()).as("the later entry (-2) wins")
                        .isEqualTo(Errors.OFFSET_OUT_OF_RANGE.code());
            }
        }
    }

    @Test
    void describeConfigsEveryVersionWithKeyFilter() throws Exception {
        create("filtered", 1);
        try (RawKafkaClient c = client()) {
            for (short v = ApiKeys.DESCRIBE_CONFIGS.oldestVersion(); v <= ApiKeys.DESCRIBE_CONFIGS.latestVersion(); v++) {
                DescribeConfigsRequestData data = new DescribeConfigsRequestData().setIncludeSynonyms(true)
                        .setIncludeDocumentation(v >= 3)
                        .setResources(List.of(
                                new DescribeConfigsRequestData.DescribeConfigsResource()
                                        .setResourceType(ConfigResource.Type.TOPIC.id()).setResourceName("filtered")
                                        .setConfigurationKeys(List.of("retention.ms", "cleanup.policy", "not.a.key")),
                                new DescribeConfigsRequestData.DescribeConfigsResource()
                                        .setResourceType(ConfigResource.Type.BROKER.id()).setResourceName("")
                                        .setConfigurationKeys(null),
                                new DescribeConfigsRequestData.DescribeConfigsResource()
                                        .setResourceType(ConfigResource.Type.BROKER.id()).setResourceName("42")
                                        .setConfigurationKeys(null),
                                new DescribeConfigsRequestData.DescribeConfigsResource()
                                        .setResourceType(ConfigResource.Type.BROKER_LOGGER.id())
                                        .setResourceName(Integer.toString(broker.context().nodeId()))
                                        .setConfigurationKeys(null)));
                DescribeConfigsResponse r = c.send(new DescribeConfigsRequest.Builder(data), v);
                List<DescribeConfigsResponseData.DescribeConfigsResult> results = r.data().results();
                assertThat(results.get(0).errorCode()).isEqualTo(Errors.NONE.code());
                assertThat(results.get(0).configs()).extracting(DescribeConfigsResponseData.DescribeConfigsResourceResult::name)
                        .containsExactly("cleanup.policy", "retention.ms");
                assertThat(results.get(0).configs().get(0).synonyms()).isNotEmpty();
                if (v >= 3) {
                    assertThat(results.get(0).configs().get(0).documentation()).isNotBlank();
                    assertThat(results.get(0).configs().get(0).configType())
                            .isEqualTo(DescribeConfigsResponse.ConfigType.LIST.id());
                }
                assertThat(results.get(1).errorCode()).isEqualTo(Errors.NONE.code());
                assertThat(results.get(1).configs()).as("no dynamic cluster-wide defaults").isEmpty();
                assertThat(results.get(2).errorCode()).as("another broker id").isEqualTo(Errors.INVALID_REQUEST.code());
                assertThat(results.get(2).errorMessage()).contains("42");
                assertThat(results.get(3).errorCode()).as("broker loggers").isEqualTo(Errors.INVALID_REQUEST.code());
            }
        }
    }

    @Test
    void alterConfigsReplacesTheWholeSet() throws Exception {
        create("replaced", 1);
        ConfigResource topic = new ConfigResource(ConfigResource.Type.TOPIC, "replaced");
        broker.context().alterTopicConfigs("replaced", m -> Map.of("retention.ms", "1000", "segment.bytes", "2048"), false);
        try (RawKafkaClient c = client()) {
            for (short v = ApiKeys.ALTER_CONFIGS.oldestVersion(); v <= ApiKeys.ALTER_CONFIGS.latestVersion(); v++) {
                AlterConfigsResponse r = c.send(new AlterConfigsRequest.Builder(Map.of(topic,
                        new AlterConfigsRequest.Config(List.of(new AlterConfigsRequest.ConfigEntry("retention.bytes", "" + (v + 1000))))),
                        false), v);
                assertThat(r.errors().get(topic).error()).isEqualTo(Errors.NONE);
                assertThat(broker.context().topics().get("replaced").orElseThrow().configs())
                        .isEqualTo(Map.of("retention.bytes", "" + (v + 1000)));
                assertThat(broker.context().replicaManager().log(new org.apache.kafka.common.TopicPartition("replaced", 0))
                        .config().segmentBytes()).as("segment.bytes was dropped: back to the default").isEqualTo(1 << 30);
            }
            // Validate-only and a bad value.
            AlterConfigsResponse r = c.send(new AlterConfigsRequest.Builder(Map.of(topic, new AlterConfigsRequest.Config(
                    List.of(new AlterConfigsRequest.ConfigEntry("retention.ms", "5")))), true), ApiKeys.ALTER_CONFIGS.latestVersion());
            assertThat(r.errors().get(topic).error()).isEqualTo(Errors.NONE);
            r = c.send(new AlterConfigsRequest.Builder(Map.of(topic, new AlterConfigsRequest.Config(
                    List.of(new AlterConfigsRequest.ConfigEntry("max.message.bytes", "-5")))), false), ApiKeys.ALTER_CONFIGS.latestVersion());
            assertThat(r.errors().get(topic).error()).isEqualTo(Errors.INVALID_CONFIG);
            assertThat(r.errors().get(topic).message()).contains("max.message.bytes");
            assertThat(broker.context().topics().get("replaced").orElseThrow().configs()).containsOnlyKeys("retention.bytes");
            // Broker: nothing to change is fine, a change is not supported.
            ConfigResource self = new ConfigResource(ConfigResource.Type.BROKER, Integer.toString(broker.context().nodeId()));
            r = c.send(new AlterConfigsRequest.Builder(Map.of(self, new AlterConfigsRequest.Config(List.of())), false),
                    ApiKeys.ALTER_CONFIGS.latestVersion());
            assertThat(r.errors().get(self).error()).isEqualTo(Errors.NONE);
        }
    }

    @Test
    void incrementalAlterConfigsEveryVersion() throws Exception {
        create("incremental", 1);
        try (RawKafkaClient c = client()) {
            for (short v = ApiKeys.INCREMENTAL_ALTER_CONFIGS.oldestVersion(); v <= ApiKeys.INCREMENTAL_ALTER_CONFIGS.latestVersion(); v++) {
                IncrementalAlterConfigsRequestData data = new IncrementalAlterConfigsRequestData();
                IncrementalAlterConfigsRequestData.AlterConfigsResource res = new IncrementalAlterConfigsRequestData.AlterConfigsResource()
                        .setResourceType(ConfigResource.Type.TOPIC.id()).setResourceName("incremental");
                res.configs().add(new IncrementalAlterConfigsRequestData.AlterableConfig().setName("retention.ms")
                        .setConfigOperation((byte) 0).setValue("" + (v + 100)));
                data.resources().add(res);
                IncrementalAlterConfigsRequestData.AlterConfigsResource bad = new IncrementalAlterConfigsRequestData.AlterConfigsResource()
                        .setResourceType(ConfigResource.Type.TOPIC.id()).setResourceName("incremental-missing");
                bad.configs().add(new IncrementalAlterConfigsRequestData.AlterableConfig().setName("retention.ms")
                        .setConfigOperation((byte) 9).setValue("1"));
                data.resources().add(bad);
                IncrementalAlterConfigsResponse r = c.send(new IncrementalAlterConfigsRequest.Builder(data), v);
                assertThat(r.data().responses()).extracting(x -> x.resourceName() + "=" + Errors.forCode(x.errorCode()))
                        .containsExactly("incremental=NONE", "incremental-missing=UNKNOWN_TOPIC_OR_PARTITION");
                assertThat(broker.context().topics().get("incremental").orElseThrow().configs())
                        .containsEntry("retention.ms", "" + (v + 100));
            }
            // An unknown operation, a resource named twice, an unknown resource type.
            IncrementalAlterConfigsRequestData data = new IncrementalAlterConfigsRequestData();
            IncrementalAlterConfigsRequestData.AlterConfigsResource unknownOp = new IncrementalAlterConfigsRequestData.AlterConfigsResource()
                    .setResourceType(ConfigResource.Type.TOPIC.id()).setResourceName("incremental");
            unknownOp.configs().add(new IncrementalAlterConfigsRequestData.AlterableConfig().setName("retention.ms")
                    .setConfigOperation((byte) 9).setValue("1"));
            data.resources().add(unknownOp);
            for (int i = 0; i < 2; i++) {
                data.resources().add(new IncrementalAlterConfigsRequestData.AlterConfigsResource()
                        .setResourceType(ConfigResource.Type.TOPIC.id()).setResourceName("twice"));
            }
            data.resources().add(new IncrementalAlterConfigsRequestData.AlterConfigsResource()
                    .setResourceType((byte) 99).setResourceName("what"));
            IncrementalAlterConfigsResponse r = c.send(new IncrementalAlterConfigsRequest.Builder(data),
                    ApiKeys.INCREMENTAL_ALTER_CONFIGS.latestVersion());
            assertThat(r.data().responses()).extracting(x -> x.resourceName() + "=" + Errors.forCode(x.errorCode()))
                    .containsExactly("incremental=INVALID_REQUEST", "twice=INVALID_REQUEST", "twice=INVALID_REQUEST",
                            "what=INVALID_REQUEST");
            assertThat(broker.context().topics().get("incremental").orElseThrow().configs())
                    .containsEntry("retention.ms", "" + (ApiKeys.INCREMENTAL_ALTER_CONFIGS.latestVersion() + 100));
        }
    }

    @Test
    void describeClusterEveryVersion() throws Exception {
        try (RawKafkaClient c = client()) {
            for (short v = ApiKeys.DESCRIBE_CLUSTER.oldestVersion(); v <= ApiKeys.DESCRIBE_CLUSTER.latestVersion(); v++) {
                DescribeClusterResponse r = c.send(new DescribeClusterRequest.Builder(new DescribeClusterRequestData()), v);
                assertThat(r.data().errorCode()).isEqualTo(Errors.NONE.code());
                assertThat(r.data().clusterId()).isEqualTo(broker.context().clusterId());
                assertThat(r.data().controllerId()).isEqualTo(broker.context().nodeId());
                assertThat(r.nodes()).containsOnlyKeys(broker.context().nodeId());
                assertThat(r.nodes().get(broker.context().nodeId()).port()).isEqualTo(broker.boundAddresses().get(0).getPort());
                assertThat(r.data().clusterAuthorizedOperations()).isEqualTo(Integer.MIN_VALUE);
                if (v >= 1) {
                    DescribeClusterResponse controllers = c.send(new DescribeClusterRequest.Builder(
                            new DescribeClusterRequestData().setEndpointType((byte) 2)), v);
                    assertThat(controllers.data().errorCode()).isEqualTo(Errors.MISMATCHED_ENDPOINT_TYPE.code());
                    DescribeClusterResponse unknown = c.send(new DescribeClusterRequest.Builder(
                            new DescribeClusterRequestData().setEndpointType((byte) 7)), v);
                    assertThat(unknown.data().errorCode()).isEqualTo(Errors.UNSUPPORTED_ENDPOINT_TYPE.code());
                }
            }
        }
    }

    @Test
    void describeLogDirsEveryVersion() throws Exception {
        create("dirs", 3);
        try (RawKafkaClient c = client()) {
            for (short v = ApiKeys.DESCRIBE_LOG_DIRS.oldestVersion(); v <= ApiKeys.DESCRIBE_LOG_DIRS.latestVersion(); v++) {
                DescribeLogDirsRequestData data = new DescribeLogDirsRequestData();
                data.topics().add(new DescribeLogDirsRequestData.DescribableLogDirTopic().setTopic("dirs").setPartitions(List.of(0, 2, 9)));
                DescribeLogDirsResponse r = c.send(new DescribeLogDirsRequest.Builder(data), v);
                assertThat(r.data().results()).singleElement().satisfies(d -> {
                    assertThat(d.errorCode()).isEqualTo(Errors.NONE.code());
                    assertThat(d.logDir()).isEqualTo(dir.getAbsolutePath());
                    assertThat(d.topics()).singleElement().satisfies(t -> {
                        assertThat(t.name()).isEqualTo("dirs");
                        assertThat(t.partitions()).extracting(p -> p.partitionIndex()).containsExactly(0, 2);
                    });
                });
                DescribeLogDirsResponse all = c.send(new DescribeLogDirsRequest.Builder(new DescribeLogDirsRequestData().setTopics(null)), v);
                assertThat(all.data().results().get(0).topics()).anySatisfy(t -> assertThat(t.name()).isEqualTo("dirs"));
            }
        }
    }

    @Test
    void topicDeletionCanBeDisabled(@TempDir File other) throws Exception {
        try (Broker locked = Broker.start(BrokerConfig.from(Map.of(
                "listeners", "PLAINTEXT://127.0.0.1:0",
                "log.dirs", other.getAbsolutePath(),
                "delete.topic.enable", "false")));
             Admin a = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, locked.bootstrapServers()))) {
            a.createTopics(List.of(new NewTopic("kept", 1, (short) 1))).all().get();
            assertThatThrownBy(() -> a.deleteTopics(List.of("kept")).all().get())
                    .hasCauseInstanceOf(TopicDeletionDisabledException.class);
            assertThat(a.listTopics().names().get()).contains("kept");
            try (RawKafkaClient c = new RawKafkaClient(locked.boundAddresses().get(0))) {
                DeleteTopicsResponse r = c.send(new DeleteTopicsRequest.Builder(new DeleteTopicsRequestData()
                        .setTopicNames(List.of("kept")).setTimeoutMs(1000)), (short) 2);
                assertThat(r.data().responses().find("kept").errorCode()).isEqualTo(Errors.INVALID_REQUEST.code());
            }
        }
    }

    @Test
    void describeLogDirsReportsADirWithAnOfflinePartition(@TempDir File other) throws Exception {
        // A segment that cannot be opened: its .log is a directory.
        java.nio.file.Files.createDirectories(new File(other, "broken-0/00000000000000000000.log").toPath());
        try (Broker b = Broker.start(BrokerConfig.from(Map.of(
                "listeners", "PLAINTEXT://127.0.0.1:0",
                "log.dirs", other.getAbsolutePath())));
             RawKafkaClient c = new RawKafkaClient(b.boundAddresses().get(0))) {
            assertThat(b.context().replicaManager().logManager().offlinePartitions())
                    .containsExactly(new org.apache.kafka.common.TopicPartition("broken", 0));
            DescribeLogDirsResponse r = c.send(new DescribeLogDirsRequest.Builder(new DescribeLogDirsRequestData().setTopics(null)),
                    ApiKeys.DESCRIBE_LOG_DIRS.latestVersion());
            assertThat(r.data().results()).singleElement().satisfies(d ->
                    assertThat(d.errorCode()).isEqualTo(Errors.KAFKA_STORAGE_ERROR.code()));
        }
    }
}
