package dev.varve.tests;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.message.DescribeConfigsRequestData;
import org.apache.kafka.common.message.DescribeConfigsResponseData;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.DescribeConfigsRequest;
import org.apache.kafka.common.requests.DescribeConfigsResponse;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
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
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Group configs (KIP-848/932) with the stock Java Admin client and consumers, against Varve broker
 * processes: set with IncrementalAlterConfigs, read back with DescribeConfigs, removed with an
 * incremental DELETE, and taking effect. A consumer-protocol member heartbeats at its group's
 * {@code consumer.heartbeat.interval.ms} (the client's own heartbeat count shows it), and a share
 * consumer of a group with {@code share.auto.offset.reset=earliest} receives the records written before
 * it joined (the broker's default, latest, would give it none). On a single node the overrides are in a
 * file and survive a restart; in a cluster they are metadata: every node answers with them, a restarted
 * node has them back, and the coordinator applies them.
 */
@Timeout(120)
class GroupConfigsEndToEndTest {
    /** The broker's own consumer heartbeat interval: 3 s; the overrides ask for a tenth of a second or so. */
    private static final Map<String, String> BOUNDS = Map.of(
            "group.consumer.min.heartbeat.interval.ms", "100",
            "group.consumer.heartbeat.interval.ms", "3000",
            "group.initial.rebalance.delay.ms", "0",
            "offsets.topic.num.partitions", "3");
    private static final long MEASURE_MS = 3_000;

    private static ConfigResource group(String name) {
        return new ConfigResource(ConfigResource.Type.GROUP, name);
    }

    private static AlterConfigOp set(String key, String value) {
        return new AlterConfigOp(new ConfigEntry(key, value), AlterConfigOp.OpType.SET);
    }

    private static ConfigEntry describe(Admin admin, String groupId, String key) throws Exception {
        return admin.describeConfigs(List.of(group(groupId))).all().get(30, TimeUnit.SECONDS).get(group(groupId)).get(key);
    }

    /** How many heartbeats a consumer-protocol member of {@code groupId} sends in {@link #MEASURE_MS} once it has joined. */
    private static double heartbeatsOf(String bootstrap, String groupId, String topic) {
        Map<String, Object> props = new HashMap<>();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.GROUP_ID_CONFIG, groupId);
        props.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props, new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            consumer.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 30_000;
            while (consumer.assignment().isEmpty()) {
                assertThat(System.currentTimeMillis()).as("the consumer joined in time").isLessThan(deadline);
                consumer.poll(Duration.ofMillis(100));
            }
            double before = heartbeatTotal(consumer);
            long end = System.currentTimeMillis() + MEASURE_MS;
            while (System.currentTimeMillis() < end) {
                consumer.poll(Duration.ofMillis(100));
            }
            return heartbeatTotal(consumer) - before;
        }
    }

    private static double heartbeatTotal(KafkaConsumer<?, ?> consumer) {
        for (Map.Entry<MetricName, ? extends Metric> e : consumer.metrics().entrySet()) {
            if (e.getKey().name().equals("heartbeat-total") && e.getKey().group().equals("consumer-coordinator-metrics")) {
                return ((Number) e.getValue().metricValue()).doubleValue();
            }
        }
        throw new AssertionError("no heartbeat-total metric: " + consumer.metrics().keySet());
    }

    /** What a new share consumer of {@code groupId} receives of {@code topic} within a few seconds. */
    private static List<String> shareConsume(String bootstrap, String groupId, String topic, int expected) {
        List<String> out = new ArrayList<>();
        try (KafkaShareConsumer<String, String> consumer = new KafkaShareConsumer<>(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap, ConsumerConfig.GROUP_ID_CONFIG, groupId),
                new StringDeserializer(), new StringDeserializer())) {
            consumer.subscribe(List.of(topic));
            long deadline = System.currentTimeMillis() + 15_000;
            while (out.size() < expected && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                    out.add(r.value());
                }
            }
            consumer.commitSync();
        }
        return out;
    }

    private static void produce(String bootstrap, String topic, int n) throws Exception {
        try (KafkaProducer<byte[], byte[]> producer = Clients.producer(bootstrap, Map.of())) {
            for (int i = 0; i < n; i++) {
                producer.send(new ProducerRecord<>(topic, 0, null, ("early-" + i).getBytes(StandardCharsets.UTF_8))).get();
            }
        }
    }

    @Test
    void onOneNodeOverridesTakeEffectAndSurviveARestart(@TempDir Path dir) throws Exception {
        Map<String, String> config = new HashMap<>(BOUNDS);
        config.put("group.coordinator.rebalance.protocols", "classic,consumer,share");
        config.put("share.coordinator.state.topic.num.partitions", "3");
        config.put("varve.admin.listener", "");
        try (VarveProcess broker = VarveProcess.start(dir, dir.resolve("data"), config)) {
            String topic = TestBroker.unique("group-configs");
            Clients.createTopic(broker.bootstrap(), topic, 1, Map.of());
            produce(broker.bootstrap(), topic, 5);
            try (Admin admin = Clients.admin(broker.bootstrap())) {
                admin.incrementalAlterConfigs(Map.of(
                        group("fast"), List.of(set("consumer.heartbeat.interval.ms", "150")),
                        group("from-start"), List.of(set("share.auto.offset.reset", "earliest")),
                        group("from-start-later"), List.of(set("share.auto.offset.reset", "earliest"))))
                        .all().get(30, TimeUnit.SECONDS);
                ConfigEntry hb = describe(admin, "fast", "consumer.heartbeat.interval.ms");
                assertThat(hb.value()).isEqualTo("150");
                assertThat(hb.source()).isEqualTo(ConfigEntry.ConfigSource.DYNAMIC_GROUP_CONFIG);
                assertThatThrownBy(() -> admin.incrementalAlterConfigs(Map.of(group("fast"),
                        List.of(set("consumer.heartbeat.interval.ms", "50")))).all().get(30, TimeUnit.SECONDS))
                        .isInstanceOf(ExecutionException.class).hasCauseInstanceOf(InvalidConfigurationException.class);
            }
            // 150 ms: ~20 heartbeats in 3 s; a group without the override heartbeats every 3 s (the broker's)
            assertThat(heartbeatsOf(broker.bootstrap(), "fast", topic)).as("heartbeats in %d ms", MEASURE_MS)
                    .isGreaterThanOrEqualTo(8);
            assertThat(heartbeatsOf(broker.bootstrap(), "slow", topic)).as("heartbeats in %d ms without the override",
                    MEASURE_MS).isLessThanOrEqualTo(3);
            assertThat(shareConsume(broker.bootstrap(), "from-start", topic, 5))
                    .as("a share group that starts at the earliest offset").hasSize(5).startsWith("early-0");

            broker.stop();
            broker.restart();
            try (Admin admin = Clients.admin(broker.bootstrap())) {
                assertThat(describe(admin, "fast", "consumer.heartbeat.interval.ms").value()).isEqualTo("150");
                assertThat(describe(admin, "from-start-later", "share.auto.offset.reset").value()).isEqualTo("earliest");
                assertThat(shareConsume(broker.bootstrap(), "from-start-later", topic, 5))
                        .as("set before the restart, used after it").hasSize(5).startsWith("early-0");
                assertThat(heartbeatsOf(broker.bootstrap(), "fast", topic)).isGreaterThanOrEqualTo(8);

                admin.incrementalAlterConfigs(Map.of(group("fast"), List.of(new AlterConfigOp(
                        new ConfigEntry("consumer.heartbeat.interval.ms", null), AlterConfigOp.OpType.DELETE))))
                        .all().get(30, TimeUnit.SECONDS);
                ConfigEntry back = describe(admin, "fast", "consumer.heartbeat.interval.ms");
                assertThat(back.value()).isEqualTo("3000");
                assertThat(back.source()).isEqualTo(ConfigEntry.ConfigSource.STATIC_BROKER_CONFIG);
            }
        }
    }

    /**
     * DescribeConfigs of one group key sent to one node (the Admin client would pick any node): "value
     * source" of the entry, or the error.
     */
    private static String describeOn(TestCluster.Node node, String groupId, String key) throws Exception {
        DescribeConfigsRequestData data = new DescribeConfigsRequestData();
        data.resources().add(new DescribeConfigsRequestData.DescribeConfigsResource()
                .setResourceType(ConfigResource.Type.GROUP.id()).setResourceName(groupId).setConfigurationKeys(List.of(key)));
        try (RawKafkaClient c = new RawKafkaClient(node.bootstrap())) {
            DescribeConfigsResponse r = c.send(new DescribeConfigsRequest.Builder(data).build((short) 4));
            DescribeConfigsResponseData.DescribeConfigsResult result = r.data().results().get(0);
            if (result.errorCode() != 0) {
                return Errors.forCode(result.errorCode()).name();
            }
            DescribeConfigsResponseData.DescribeConfigsResourceResult entry = result.configs().get(0);
            return entry.value() + " " + DescribeConfigsResponse.ConfigSource.forId(entry.configSource()).name();
        }
    }

    private static org.awaitility.core.ConditionFactory eventually(String what) {
        return org.awaitility.Awaitility.await(what).atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(200))
                .ignoreExceptions();
    }

    @Test
    void inAClusterOverridesAreMetadataEveryNodeAnswersWithAndKeeps(@TempDir Path dir) throws Exception {
        try (TestCluster cluster = TestCluster.start(dir, 3, BOUNDS)) {
            String topic = TestBroker.unique("cluster-group-configs");
            try (Admin admin = cluster.admin()) {
                TestCluster.createAndAwaitInSync(admin, new org.apache.kafka.clients.admin.NewTopic(topic, 1, (short) 3),
                        Duration.ofSeconds(30));
                admin.incrementalAlterConfigs(Map.of(group("fast"), List.of(set("consumer.heartbeat.interval.ms", "150"))))
                        .all().get(30, TimeUnit.SECONDS);
                // share groups are not offered in a cluster: their keys are refused, not stored without effect
                assertThatThrownBy(() -> admin.incrementalAlterConfigs(Map.of(group("fast"),
                        List.of(set("share.auto.offset.reset", "earliest")))).all().get(30, TimeUnit.SECONDS))
                        .isInstanceOf(ExecutionException.class).hasCauseInstanceOf(InvalidConfigurationException.class);
            }
            for (TestCluster.Node node : cluster.nodes()) {
                eventually("node " + node.id + " answers with the override").untilAsserted(() ->
                        assertThat(describeOn(node, "fast", "consumer.heartbeat.interval.ms"))
                                .isEqualTo("150 GROUP_CONFIG"));
            }
            assertThat(heartbeatsOf(cluster.allBootstrap(), "fast", topic)).as("heartbeats in %d ms", MEASURE_MS)
                    .isGreaterThanOrEqualTo(8);

            TestCluster.Node restarted = cluster.node(2);
            restarted.stop();
            restarted.start();
            eventually("the restarted node has the override back").untilAsserted(() ->
                    assertThat(describeOn(restarted, "fast", "consumer.heartbeat.interval.ms")).isEqualTo("150 GROUP_CONFIG"));
            assertThat(describeOn(restarted, "other", "consumer.heartbeat.interval.ms")).isEqualTo("3000 STATIC_BROKER_CONFIG");
        }
    }
}
