package dev.varve.broker;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.DescribeConfigsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.message.ConsumerGroupHeartbeatRequestData;
import org.apache.kafka.common.message.ConsumerGroupHeartbeatResponseData;
import org.apache.kafka.common.message.DescribeConfigsRequestData;
import org.apache.kafka.common.message.IncrementalAlterConfigsRequestData;
import org.apache.kafka.common.message.ShareFetchRequestData;
import org.apache.kafka.common.message.ShareGroupHeartbeatRequestData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AlterConfigsRequest;
import org.apache.kafka.common.requests.AlterConfigsResponse;
import org.apache.kafka.common.requests.ConsumerGroupHeartbeatRequest;
import org.apache.kafka.common.requests.ConsumerGroupHeartbeatResponse;
import org.apache.kafka.common.requests.DescribeConfigsRequest;
import org.apache.kafka.common.requests.DescribeConfigsResponse;
import org.apache.kafka.common.requests.IncrementalAlterConfigsRequest;
import org.apache.kafka.common.requests.IncrementalAlterConfigsResponse;
import org.apache.kafka.common.requests.ShareFetchRequest;
import org.apache.kafka.common.requests.ShareFetchResponse;
import org.apache.kafka.common.requests.ShareGroupHeartbeatRequest;
import org.apache.kafka.common.requests.ShareGroupHeartbeatResponse;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Group configs (KIP-848/932) on a single node, on the wire: IncrementalAlterConfigs, legacy
 * AlterConfigs and DescribeConfigs of GROUP resources with Kafka 4.4's answers and error codes, the
 * overrides on disk across a restart, and each accepted key taking effect: the heartbeat intervals
 * consumer and share groups are told, a consumer member's session timeout, the acquisition lock
 * share fetches report.
 */
class GroupConfigsWireTest {
    private static final byte GROUP = ConfigResource.Type.GROUP.id();

    @TempDir
    File dir;

    private Broker start() throws Exception {
        Map<String, String> props = new LinkedHashMap<>();
        props.put("listeners", "PLAINTEXT://127.0.0.1:0");
        props.put("log.dirs", dir.getAbsolutePath());
        props.put("offsets.topic.num.partitions", "2");
        props.put("share.coordinator.state.topic.num.partitions", "2");
        props.put("group.coordinator.rebalance.protocols", "classic,consumer,share");
        // bounds wide enough for short timeouts; the consumer heartbeat set in the file (STATIC_BROKER_CONFIG)
        props.put("group.consumer.min.session.timeout.ms", "1000");
        props.put("group.consumer.min.heartbeat.interval.ms", "100");
        props.put("group.consumer.heartbeat.interval.ms", "4000");
        props.put("group.share.min.session.timeout.ms", "1000");
        props.put("group.share.min.heartbeat.interval.ms", "100");
        props.put("group.share.min.record.lock.duration.ms", "1000");
        return Broker.start(BrokerConfig.from(props));
    }

    private static Admin admin(Broker broker) {
        return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers()));
    }

    private static RawKafkaClient raw(Broker broker) throws Exception {
        return new RawKafkaClient(broker.boundAddresses().get(0));
    }

    private static ConfigResource group(String name) {
        return new ConfigResource(ConfigResource.Type.GROUP, name);
    }

    private static AlterConfigOp set(String key, String value) {
        return new AlterConfigOp(new ConfigEntry(key, value), AlterConfigOp.OpType.SET);
    }

    private static AlterConfigOp delete(String key) {
        return new AlterConfigOp(new ConfigEntry(key, null), AlterConfigOp.OpType.DELETE);
    }

    private static Map<String, ConfigEntry> describe(Admin admin, String name) throws Exception {
        Config c = admin.describeConfigs(List.of(group(name)), new DescribeConfigsOptions().includeSynonyms(true)
                .includeDocumentation(true)).all().get().get(group(name));
        return c.entries().stream().collect(Collectors.toMap(ConfigEntry::name, e -> e, (a, b) -> a, TreeMap::new));
    }

    private static String synonyms(ConfigEntry e) {
        return e.synonyms().stream().map(s -> s.source() + ":" + s.name() + "=" + s.value())
                .collect(Collectors.joining(", "));
    }

    @Test
    void alterDescribeAndDeleteWithTheAdminClientAndTheOverridesSurviveARestart() throws Exception {
        try (Broker broker = start(); Admin admin = admin(broker)) {
            Map<String, ConfigEntry> before = describe(admin, "orders");
            assertThat(before.keySet()).containsExactly("consumer.heartbeat.interval.ms", "consumer.session.timeout.ms",
                    "share.auto.offset.reset", "share.heartbeat.interval.ms", "share.isolation.level",
                    "share.record.lock.duration.ms", "share.session.timeout.ms");
            ConfigEntry hb = before.get("consumer.heartbeat.interval.ms");
            assertThat(hb.value()).isEqualTo("4000");
            assertThat(hb.source()).isEqualTo(ConfigEntry.ConfigSource.STATIC_BROKER_CONFIG);
            assertThat(synonyms(hb)).isEqualTo("STATIC_BROKER_CONFIG:group.consumer.heartbeat.interval.ms=4000, "
                    + "DEFAULT_CONFIG:group.consumer.heartbeat.interval.ms=5000");
            assertThat(hb.type()).isEqualTo(ConfigEntry.ConfigType.INT);
            assertThat(hb.isReadOnly()).isFalse();
            assertThat(hb.documentation()).isNotBlank();
            ConfigEntry reset = before.get("share.auto.offset.reset");
            assertThat(reset.value()).isEqualTo("latest");
            assertThat(reset.source()).isEqualTo(ConfigEntry.ConfigSource.DEFAULT_CONFIG);
            assertThat(synonyms(reset)).isEqualTo("DEFAULT_CONFIG:share.auto.offset.reset=latest");
            assertThat(synonyms(before.get("consumer.session.timeout.ms")))
                    .isEqualTo("DEFAULT_CONFIG:group.consumer.session.timeout.ms=45000");

            admin.incrementalAlterConfigs(Map.of(group("orders"), List.of(set("consumer.heartbeat.interval.ms", "700"),
                    set("share.auto.offset.reset", "earliest"), set("share.record.lock.duration.ms", "2000")))).all().get();
            Map<String, ConfigEntry> after = describe(admin, "orders");
            hb = after.get("consumer.heartbeat.interval.ms");
            assertThat(hb.value()).isEqualTo("700");
            assertThat(hb.source()).isEqualTo(ConfigEntry.ConfigSource.DYNAMIC_GROUP_CONFIG);
            assertThat(synonyms(hb)).isEqualTo("DYNAMIC_GROUP_CONFIG:consumer.heartbeat.interval.ms=700, "
                    + "STATIC_BROKER_CONFIG:group.consumer.heartbeat.interval.ms=4000, "
                    + "DEFAULT_CONFIG:group.consumer.heartbeat.interval.ms=5000");
            assertThat(synonyms(after.get("share.auto.offset.reset"))).isEqualTo(
                    "DYNAMIC_GROUP_CONFIG:share.auto.offset.reset=earliest, DEFAULT_CONFIG:share.auto.offset.reset=latest");
            assertThat(describe(admin, "other").get("consumer.heartbeat.interval.ms").value())
                    .as("another group keeps the broker's").isEqualTo("4000");

            // validate-only changes nothing
            admin.incrementalAlterConfigs(Map.of(group("orders"), List.of(set("consumer.heartbeat.interval.ms", "900"))),
                    new org.apache.kafka.clients.admin.AlterConfigsOptions().validateOnly(true)).all().get();
            assertThat(describe(admin, "orders").get("consumer.heartbeat.interval.ms").value()).isEqualTo("700");

            admin.incrementalAlterConfigs(Map.of(group("orders"), List.of(delete("share.record.lock.duration.ms"))))
                    .all().get();
        }
        // the broker restarts: the overrides are on disk
        try (Broker broker = start(); Admin admin = admin(broker)) {
            Map<String, ConfigEntry> restarted = describe(admin, "orders");
            assertThat(restarted.get("consumer.heartbeat.interval.ms").value()).isEqualTo("700");
            assertThat(restarted.get("share.auto.offset.reset").value()).isEqualTo("earliest");
            assertThat(restarted.get("share.record.lock.duration.ms").source())
                    .isEqualTo(ConfigEntry.ConfigSource.DEFAULT_CONFIG);
            assertThat(broker.context().groupConfigs().consumerHeartbeatIntervalMs("orders")).isEqualTo(700);
            // deleting the last overrides leaves the group with none
            admin.incrementalAlterConfigs(Map.of(group("orders"), List.of(delete("consumer.heartbeat.interval.ms"),
                    delete("share.auto.offset.reset")))).all().get();
            assertThat(describe(admin, "orders").values()).allSatisfy(e ->
                    assertThat(e.source()).isNotEqualTo(ConfigEntry.ConfigSource.DYNAMIC_GROUP_CONFIG));
            assertThat(broker.context().groupConfigStore().get("orders")).isEmpty();
        }
    }

    private static IncrementalAlterConfigsRequestData.AlterConfigsResource resource(String name, Object... opKeyValue) {
        IncrementalAlterConfigsRequestData.AlterConfigsResource r = new IncrementalAlterConfigsRequestData.AlterConfigsResource()
                .setResourceType(GROUP).setResourceName(name);
        for (int i = 0; i < opKeyValue.length; i += 3) {
            r.configs().add(new IncrementalAlterConfigsRequestData.AlterableConfig()
                    .setConfigOperation(((AlterConfigOp.OpType) opKeyValue[i]).id()).setName((String) opKeyValue[i + 1])
                    .setValue((String) opKeyValue[i + 2]));
        }
        return r;
    }

    @Test
    void errorCodesAreKafkas() throws Exception {
        AlterConfigOp.OpType set = AlterConfigOp.OpType.SET;
        Map<String, IncrementalAlterConfigsRequestData.AlterConfigsResource> cases = new LinkedHashMap<>();
        cases.put("unknown", resource("g-unknown", set, "no.such.key", "1"));
        cases.put("broker-key", resource("g-broker-key", set, "group.consumer.heartbeat.interval.ms", "700"));
        cases.put("streams", resource("g-streams", set, "streams.num.standby.replicas", "1"));
        cases.put("delivery", resource("g-delivery", set, "share.delivery.count.limit", "3"));
        cases.put("range", resource("g-range", set, "consumer.heartbeat.interval.ms", "50"));
        cases.put("nan", resource("g-nan", set, "consumer.session.timeout.ms", "soon"));
        cases.put("session", resource("g-session", set, "consumer.session.timeout.ms", "3000"));
        cases.put("append", resource("g-append", AlterConfigOp.OpType.APPEND, "share.isolation.level", "read_committed"));
        cases.put("null", resource("g-null", set, "share.isolation.level", null));
        cases.put("duplicate", resource("g-duplicate", set, "share.isolation.level", "read_committed",
                set, "share.isolation.level", "read_uncommitted"));
        cases.put("empty", resource("", set, "share.isolation.level", "read_committed"));
        cases.put("ok", resource("g-ok", set, "share.isolation.level", "read_committed",
                AlterConfigOp.OpType.DELETE, "no.such.key", null));
        try (Broker broker = start(); RawKafkaClient c = raw(broker)) {
            IncrementalAlterConfigsRequestData data = new IncrementalAlterConfigsRequestData();
            cases.values().forEach(r -> data.resources().add(r.duplicate()));
            IncrementalAlterConfigsResponse r = c.send(new IncrementalAlterConfigsRequest.Builder(data),
                    ApiKeys.INCREMENTAL_ALTER_CONFIGS.latestVersion());
            Map<String, String> codes = new LinkedHashMap<>();
            r.data().responses().forEach(x -> codes.put(x.resourceName(), Errors.forCode(x.errorCode()) + ": " + x.errorMessage()));
            assertThat(codes.get("g-unknown")).isEqualTo("INVALID_CONFIG: Unknown group config name: no.such.key");
            assertThat(codes.get("g-broker-key"))
                    .isEqualTo("INVALID_CONFIG: Unknown group config name: group.consumer.heartbeat.interval.ms");
            assertThat(codes.get("g-streams")).startsWith("INVALID_CONFIG: Group config streams.num.standby.replicas is not supported");
            assertThat(codes.get("g-delivery")).startsWith("INVALID_CONFIG: Group config share.delivery.count.limit is not supported");
            assertThat(codes.get("g-range"))
                    .isEqualTo("INVALID_CONFIG: consumer.heartbeat.interval.ms must be in the range 100 to 15000 inclusive.");
            assertThat(codes.get("g-nan")).isEqualTo(
                    "INVALID_CONFIG: Invalid value soon for configuration consumer.session.timeout.ms: Not a number of type INT");
            assertThat(codes.get("g-session"))
                    .isEqualTo("INVALID_CONFIG: consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms");
            assertThat(codes.get("g-append"))
                    .isEqualTo("INVALID_CONFIG: Can't APPEND to key share.isolation.level because its type is not LIST.");
            assertThat(codes.get("g-null")).startsWith("INVALID_REQUEST: Null value not supported");
            assertThat(codes.get("g-duplicate")).startsWith("INVALID_REQUEST: Error due to duplicate config keys");
            assertThat(codes.get("")).isEqualTo("INVALID_REQUEST: Default group resources are not allowed.");
            assertThat(codes.get("g-ok")).isEqualTo("NONE: null");
            for (String refused : List.of("g-unknown", "g-range", "g-session", "g-null")) {
                assertThat(broker.context().groupConfigStore().get(refused)).as(refused).isEmpty();
            }
            assertThat(broker.context().groupConfigStore().get("g-ok")).isEqualTo(Map.of("share.isolation.level", "read_committed"));

            // legacy AlterConfigs replaces the whole set (Kafka 4 accepts GROUP there too)
            Map<ConfigResource, AlterConfigsRequest.Config> legacy = new LinkedHashMap<>();
            legacy.put(group("g-ok"), new AlterConfigsRequest.Config(List.of(
                    new AlterConfigsRequest.ConfigEntry("share.heartbeat.interval.ms", "300"))));
            legacy.put(group("g-legacy-bad"), new AlterConfigsRequest.Config(List.of(
                    new AlterConfigsRequest.ConfigEntry("share.heartbeat.interval.ms", "20"))));
            AlterConfigsResponse lresp = c.send(new AlterConfigsRequest.Builder(legacy, false), (short) 2);
            assertThat(lresp.data().responses()).extracting(x -> x.resourceName() + "=" + Errors.forCode(x.errorCode()))
                    .containsExactly("g-ok=NONE", "g-legacy-bad=INVALID_CONFIG");
            assertThat(broker.context().groupConfigStore().get("g-ok")).isEqualTo(Map.of("share.heartbeat.interval.ms", "300"));

            // DescribeConfigs of the empty group name
            DescribeConfigsRequestData describe = new DescribeConfigsRequestData();
            describe.resources().add(new DescribeConfigsRequestData.DescribeConfigsResource().setResourceType(GROUP)
                    .setResourceName(""));
            DescribeConfigsResponse dr = c.send(new DescribeConfigsRequest.Builder(describe), (short) 4);
            assertThat(Errors.forCode(dr.data().results().get(0).errorCode())).isEqualTo(Errors.INVALID_REQUEST);
            assertThat(dr.data().results().get(0).errorMessage()).isEqualTo("Group name must not be empty");
        }
    }

    private static ConsumerGroupHeartbeatResponseData consumerJoin(RawKafkaClient c, String group, String member, String topic)
            throws Exception {
        ConsumerGroupHeartbeatResponse r = c.send(new ConsumerGroupHeartbeatRequest.Builder(
                new ConsumerGroupHeartbeatRequestData().setGroupId(group).setMemberId(member).setMemberEpoch(0)
                        .setRebalanceTimeoutMs(30_000).setSubscribedTopicNames(List.of(topic)).setTopicPartitions(List.of())),
                ApiKeys.CONSUMER_GROUP_HEARTBEAT.latestVersion());
        assertThat(Errors.forCode(r.data().errorCode())).as(r.data().errorMessage()).isEqualTo(Errors.NONE);
        return r.data();
    }

    private static ConsumerGroupHeartbeatResponseData consumerHeartbeat(RawKafkaClient c, String group, String member,
                                                                        int epoch) throws Exception {
        ConsumerGroupHeartbeatResponse r = c.send(new ConsumerGroupHeartbeatRequest.Builder(
                new ConsumerGroupHeartbeatRequestData().setGroupId(group).setMemberId(member).setMemberEpoch(epoch)),
                ApiKeys.CONSUMER_GROUP_HEARTBEAT.latestVersion());
        return r.data();
    }

    @Test
    void overridesTakeEffect() throws Exception {
        try (Broker broker = start(); Admin admin = admin(broker); RawKafkaClient c = raw(broker)) {
            admin.createTopics(List.of(new NewTopic("t", 2, (short) 1))).all().get();
            Uuid topicId = broker.context().topics().get("t").orElseThrow().id();
            admin.incrementalAlterConfigs(Map.of(
                    group("fast"), List.of(set("consumer.heartbeat.interval.ms", "700"),
                            set("consumer.session.timeout.ms", "1500")),
                    group("shared"), List.of(set("share.heartbeat.interval.ms", "800"),
                            set("share.record.lock.duration.ms", "2500")))).all().get();

            // consumer groups: the heartbeat interval they are told, and the session timer
            ConsumerGroupHeartbeatResponseData fast = consumerJoin(c, "fast", Uuid.randomUuid().toString(), "t");
            assertThat(fast.heartbeatIntervalMs()).isEqualTo(700);
            ConsumerGroupHeartbeatResponseData slow = consumerJoin(c, "slow", Uuid.randomUuid().toString(), "t");
            assertThat(slow.heartbeatIntervalMs()).as("the broker's group.consumer.heartbeat.interval.ms").isEqualTo(4000);
            assertThat(consumerHeartbeat(c, "fast", fast.memberId(), fast.memberEpoch()).heartbeatIntervalMs()).isEqualTo(700);
            Thread.sleep(2_500); // silent for longer than 1.5 s, far less than the broker's 45 s
            assertThat(Errors.forCode(consumerHeartbeat(c, "fast", fast.memberId(), fast.memberEpoch()).errorCode()))
                    .as("removed after its group's session timeout").isEqualTo(Errors.UNKNOWN_MEMBER_ID);
            assertThat(Errors.forCode(consumerHeartbeat(c, "slow", slow.memberId(), slow.memberEpoch()).errorCode()))
                    .as("a group without the override keeps its member").isEqualTo(Errors.NONE);

            // share groups: the heartbeat interval, and the acquisition lock a fetch reports
            ShareGroupHeartbeatResponse sh = c.send(new ShareGroupHeartbeatRequest.Builder(new ShareGroupHeartbeatRequestData()
                    .setGroupId("shared").setMemberId("m1").setMemberEpoch(0).setSubscribedTopicNames(List.of("t"))),
                    ApiKeys.SHARE_GROUP_HEARTBEAT.latestVersion());
            assertThat(Errors.forCode(sh.data().errorCode())).isEqualTo(Errors.NONE);
            assertThat(sh.data().heartbeatIntervalMs()).isEqualTo(800);
            ShareFetchRequestData fetch = new ShareFetchRequestData().setGroupId("shared").setMemberId("m1")
                    .setShareSessionEpoch(0).setMaxWaitMs(0).setMinBytes(1).setMaxBytes(1 << 20).setMaxRecords(10)
                    .setBatchSize(10);
            fetch.topics().add(new ShareFetchRequestData.FetchTopic().setTopicId(topicId).setPartitions(
                    new ShareFetchRequestData.FetchPartitionCollection(List.of(
                            new ShareFetchRequestData.FetchPartition().setPartitionIndex(0)).iterator())));
            ShareFetchResponse sf = c.send(new ShareFetchRequest.Builder(fetch), ApiKeys.SHARE_FETCH.latestVersion());
            assertThat(Errors.forCode(sf.data().errorCode())).isEqualTo(Errors.NONE);
            assertThat(sf.data().acquisitionLockTimeoutMs()).isEqualTo(2500);
            assertThat(broker.shareStates()).isNotNull();
        }
    }
}
