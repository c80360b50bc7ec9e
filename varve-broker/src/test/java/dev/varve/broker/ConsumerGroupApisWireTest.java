package dev.varve.broker;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.ConsumerGroupDescribeRequestData;
import org.apache.kafka.common.message.ConsumerGroupHeartbeatRequestData;
import org.apache.kafka.common.message.ConsumerGroupHeartbeatResponseData;
import org.apache.kafka.common.message.DescribeGroupsRequestData;
import org.apache.kafka.common.message.JoinGroupRequestData;
import org.apache.kafka.common.message.ListGroupsRequestData;
import org.apache.kafka.common.message.OffsetCommitRequestData;
import org.apache.kafka.common.message.OffsetFetchRequestData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.ConsumerGroupDescribeRequest;
import org.apache.kafka.common.requests.ConsumerGroupDescribeResponse;
import org.apache.kafka.common.requests.ConsumerGroupHeartbeatRequest;
import org.apache.kafka.common.requests.ConsumerGroupHeartbeatResponse;
import org.apache.kafka.common.requests.DescribeGroupsRequest;
import org.apache.kafka.common.requests.DescribeGroupsResponse;
import org.apache.kafka.common.requests.JoinGroupRequest;
import org.apache.kafka.common.requests.JoinGroupResponse;
import org.apache.kafka.common.requests.ListGroupsRequest;
import org.apache.kafka.common.requests.ListGroupsResponse;
import org.apache.kafka.common.requests.OffsetCommitRequest;
import org.apache.kafka.common.requests.OffsetCommitResponse;
import org.apache.kafka.common.requests.OffsetFetchRequest;
import org.apache.kafka.common.requests.OffsetFetchResponse;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The KIP-848 group APIs on the wire, at every version kafka-clients 4.4 knows: a member's whole life
 * (join, heartbeats, commits and fetches with its epoch, describe, leave), the errors Kafka answers for
 * bad requests, the group's place among classic groups (ListGroups, DescribeGroups, JoinGroup), and
 * its state surviving a restart of the broker (a member keeps its epoch and partitions).
 */
class ConsumerGroupApisWireTest {
    @TempDir
    File dir;

    private Broker start() throws Exception {
        return Broker.start(BrokerConfig.from(Map.of(
                "listeners", "PLAINTEXT://127.0.0.1:0",
                "log.dirs", dir.getAbsolutePath(),
                "offsets.topic.num.partitions", "3",
                "group.consumer.max.size", "3")));
    }

    private static Uuid createTopic(Broker broker, String name, int partitions) throws Exception {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers()))) {
            admin.createTopics(List.of(new NewTopic(name, partitions, (short) 1))).all().get();
        }
        return broker.context().topics().get(name).orElseThrow().id();
    }

    private static ConsumerGroupHeartbeatRequestData join(String group, String member, List<String> topics) {
        return new ConsumerGroupHeartbeatRequestData().setGroupId(group).setMemberId(member).setMemberEpoch(0)
                .setRebalanceTimeoutMs(30_000).setSubscribedTopicNames(topics).setTopicPartitions(List.of());
    }

    private static ConsumerGroupHeartbeatResponseData heartbeat(RawKafkaClient c, ConsumerGroupHeartbeatRequestData data,
                                                                short version) throws Exception {
        ConsumerGroupHeartbeatResponse r = c.send(new ConsumerGroupHeartbeatRequest.Builder(data), version);
        return r.data();
    }

    private static List<ConsumerGroupHeartbeatRequestData.TopicPartitions> owned(ConsumerGroupHeartbeatResponseData r) {
        return r.assignment().topicPartitions().stream().map(tp -> new ConsumerGroupHeartbeatRequestData.TopicPartitions()
                .setTopicId(tp.topicId()).setPartitions(tp.partitions())).toList();
    }

    /**
     * A member that was sent partitions and never reports owning them holds up a revocation only for its
     * rebalance timeout: then it is fenced and the other member gets them.
     */
    @Test
    void aMemberThatNeverReportsWhatItWasSentIsFencedAfterItsRebalanceTimeout() throws Exception {
        try (Broker broker = start()) {
            createTopic(broker, "slow", 2);
            try (RawKafkaClient c = new RawKafkaClient(broker.boundAddresses().get(0))) {
                ConsumerGroupHeartbeatResponseData a = heartbeat(c, join("held", "a", List.of("slow")).setRebalanceTimeoutMs(1_500),
                        (short) 1);
                assertThat(owned(a).get(0).partitions()).containsExactlyInAnyOrder(0, 1);
                ConsumerGroupHeartbeatResponseData b = heartbeat(c, join("held", "b", List.of("slow")), (short) 1);
                assertThat(b.assignment().topicPartitions()).as("b waits for a partition a was sent").isEmpty();
                // a's client reports nothing owned yet (it is still reconciling): nothing moves
                ConsumerGroupHeartbeatResponseData a2 = heartbeat(c, new ConsumerGroupHeartbeatRequestData().setGroupId("held")
                        .setMemberId("a").setMemberEpoch(a.memberEpoch()).setTopicPartitions(List.of()), (short) 1);
                assertThat(Errors.forCode(a2.errorCode())).isEqualTo(Errors.NONE);
                assertThat(a2.memberEpoch()).as("a stays at its epoch").isEqualTo(a.memberEpoch());
                long deadline = System.currentTimeMillis() + 10_000;
                ConsumerGroupHeartbeatResponseData b2;
                do {
                    Thread.sleep(200);
                    b2 = heartbeat(c, new ConsumerGroupHeartbeatRequestData().setGroupId("held").setMemberId("b")
                            .setMemberEpoch(b.memberEpoch()), (short) 1);
                    if (b2.memberEpoch() > 0) {
                        b = b.setMemberEpoch(b2.memberEpoch());
                    }
                } while ((b2.assignment() == null || b2.assignment().topicPartitions().isEmpty())
                        && System.currentTimeMillis() < deadline);
                assertThat(b2.assignment()).as("b gets partitions once a is fenced").isNotNull();
                assertThat(b2.assignment().topicPartitions().get(0).partitions()).containsExactlyInAnyOrder(0, 1);
                ConsumerGroupHeartbeatResponseData a3 = heartbeat(c, new ConsumerGroupHeartbeatRequestData().setGroupId("held")
                        .setMemberId("a").setMemberEpoch(a.memberEpoch()), (short) 1);
                assertThat(Errors.forCode(a3.errorCode())).as("a was fenced").isEqualTo(Errors.UNKNOWN_MEMBER_ID);
            }
        }
    }

    @Test
    void aMemberLivesCommitsAndLeavesAtEveryVersion() throws Exception {
        try (Broker broker = start()) {
            Uuid topicId = createTopic(broker, "t", 4);
            try (RawKafkaClient c = new RawKafkaClient(broker.boundAddresses().get(0))) {
                for (short v = ApiKeys.CONSUMER_GROUP_HEARTBEAT.oldestVersion(); v <= ApiKeys.CONSUMER_GROUP_HEARTBEAT.latestVersion(); v++) {
                    String group = "life-v" + v;
                    // version 0 lets the coordinator name the member; version 1 needs the client's id (KIP-1082)
                    String asked = v == 0 ? "" : Uuid.randomUuid().toString();
                    ConsumerGroupHeartbeatResponseData joined = heartbeat(c, join(group, asked, List.of("t")), v);
                    assertThat(Errors.forCode(joined.errorCode())).as("v%d join: %s", v, joined.errorMessage()).isEqualTo(Errors.NONE);
                    String member = joined.memberId();
                    assertThat(member).as("v%d", v).isNotEmpty();
                    if (v > 0) {
                        assertThat(member).isEqualTo(asked);
                    }
                    assertThat(joined.memberEpoch()).as("v%d: the first member makes the group's first epoch", v).isEqualTo(1);
                    assertThat(joined.heartbeatIntervalMs()).isEqualTo(5_000);
                    assertThat(joined.assignment().topicPartitions()).hasSize(1);
                    assertThat(joined.assignment().topicPartitions().get(0).partitions()).containsExactlyInAnyOrder(0, 1, 2, 3);

                    // an unchanged heartbeat: same epoch, no assignment repeated
                    ConsumerGroupHeartbeatResponseData again = heartbeat(c, new ConsumerGroupHeartbeatRequestData()
                            .setGroupId(group).setMemberId(member).setMemberEpoch(1).setTopicPartitions(owned(joined)), v);
                    assertThat(Errors.forCode(again.errorCode())).isEqualTo(Errors.NONE);
                    assertThat(again.memberEpoch()).isEqualTo(1);
                    assertThat(again.assignment()).as("nothing changed: no assignment").isNull();

                    // commits with the member's epoch; a stale epoch and an old OffsetCommit version are refused
                    assertThat(commit(c, group, member, 1, topicId, 42, (short) 10)).isEqualTo(Errors.NONE);
                    assertThat(commit(c, group, member, 0, topicId, 43, (short) 10)).isEqualTo(Errors.STALE_MEMBER_EPOCH);
                    assertThat(commit(c, group, member, 2, topicId, 43, (short) 10)).isEqualTo(Errors.FENCED_MEMBER_EPOCH);
                    assertThat(commit(c, group, "nobody", 1, topicId, 43, (short) 10)).isEqualTo(Errors.UNKNOWN_MEMBER_ID);
                    assertThat(commit(c, group, member, 1, topicId, 43, (short) 8)).isEqualTo(Errors.UNSUPPORTED_VERSION);
                    assertThat(commit(c, group, "", -1, topicId, 43, (short) 10))
                            .as("an admin commit while the group has members").isEqualTo(Errors.UNKNOWN_MEMBER_ID);
                    assertThat(fetch(c, group, member, 1, topicId)).isEqualTo(42);
                    assertThat(fetchError(c, group, member, 0, topicId)).isEqualTo(Errors.STALE_MEMBER_EPOCH);

                    for (short dv = ApiKeys.CONSUMER_GROUP_DESCRIBE.oldestVersion(); dv <= ApiKeys.CONSUMER_GROUP_DESCRIBE.latestVersion(); dv++) {
                        ConsumerGroupDescribeResponse d = c.send(new ConsumerGroupDescribeRequest.Builder(
                                new ConsumerGroupDescribeRequestData().setGroupIds(List.of(group, "absent"))), dv);
                        var g = d.data().groups().get(0);
                        assertThat(Errors.forCode(g.errorCode())).isEqualTo(Errors.NONE);
                        assertThat(g.groupState()).isEqualTo("Stable");
                        assertThat(g.groupEpoch()).isEqualTo(1);
                        assertThat(g.assignmentEpoch()).isEqualTo(1);
                        assertThat(g.assignorName()).isEqualTo("uniform");
                        assertThat(g.members()).singleElement().satisfies(m -> {
                            assertThat(m.memberId()).isEqualTo(member);
                            assertThat(m.memberEpoch()).isEqualTo(1);
                            assertThat(m.subscribedTopicNames()).containsExactly("t");
                            assertThat(m.assignment().topicPartitions()).singleElement().satisfies(tp -> {
                                assertThat(tp.topicName()).isEqualTo("t");
                                assertThat(tp.partitions()).containsExactly(0, 1, 2, 3);
                            });
                        });
                        assertThat(Errors.forCode(d.data().groups().get(1).errorCode())).isEqualTo(Errors.GROUP_ID_NOT_FOUND);
                    }

                    ConsumerGroupHeartbeatResponseData left = heartbeat(c, new ConsumerGroupHeartbeatRequestData()
                            .setGroupId(group).setMemberId(member).setMemberEpoch(-1), v);
                    assertThat(Errors.forCode(left.errorCode())).isEqualTo(Errors.NONE);
                    assertThat(left.memberEpoch()).isEqualTo(-1);
                    assertThat(commit(c, group, "", -1, topicId, 44, (short) 10))
                            .as("an admin commit once the group is empty").isEqualTo(Errors.NONE);
                }
            }
        }
    }

    @Test
    void badRequestsGetKafkasErrorsAndChangeNothing() throws Exception {
        try (Broker broker = start()) {
            createTopic(broker, "t", 2);
            try (RawKafkaClient c = new RawKafkaClient(broker.boundAddresses().get(0))) {
                short v = ApiKeys.CONSUMER_GROUP_HEARTBEAT.latestVersion();
                Map<String, UnaryOperator<ConsumerGroupHeartbeatRequestData>> invalid = Map.of(
                        "no group id", r -> r.setGroupId(""),
                        "no member id at version 1", r -> r.setMemberId(""),
                        "no rebalance timeout on join", r -> r.setRebalanceTimeoutMs(-1),
                        "owned partitions on join", r -> r.setTopicPartitions(List.of(
                                new ConsumerGroupHeartbeatRequestData.TopicPartitions().setTopicId(Uuid.randomUuid())
                                        .setPartitions(List.of(0)))),
                        "no subscription on join", r -> r.setSubscribedTopicNames(null),
                        "an empty rack", r -> r.setRackId(""),
                        "epoch below -2", r -> r.setMemberEpoch(-3),
                        "a static leave without an instance id", r -> r.setMemberEpoch(-2));
                for (var e : invalid.entrySet()) {
                    ConsumerGroupHeartbeatResponseData r = heartbeat(c, e.getValue().apply(join("bad", "m1", List.of("t"))), v);
                    assertThat(Errors.forCode(r.errorCode())).as(e.getKey()).isEqualTo(Errors.INVALID_REQUEST);
                    assertThat(r.errorMessage()).as(e.getKey()).isNotEmpty();
                }
                assertThat(error(heartbeat(c, join("bad", "m1", List.of("t")).setServerAssignor("sticky"), v)))
                        .isEqualTo(Errors.UNSUPPORTED_ASSIGNOR);
                assertThat(error(heartbeat(c, join("bad", "m1", null).setSubscribedTopicRegex("(unclosed"), v)))
                        .isEqualTo(Errors.INVALID_REGULAR_EXPRESSION);
                assertThat(error(heartbeat(c, new ConsumerGroupHeartbeatRequestData().setGroupId("bad").setMemberId("ghost")
                        .setMemberEpoch(5), v))).isEqualTo(Errors.UNKNOWN_MEMBER_ID);

                // one good member; then epochs ahead of the group's, a taken instance id, a full group
                ConsumerGroupHeartbeatResponseData a = heartbeat(c, join("g", "a", List.of("t")).setInstanceId("i-a"), v);
                assertThat(error(a)).isEqualTo(Errors.NONE);
                assertThat(error(heartbeat(c, new ConsumerGroupHeartbeatRequestData().setGroupId("g").setMemberId("a")
                        .setMemberEpoch(a.memberEpoch() + 1), v))).isEqualTo(Errors.FENCED_MEMBER_EPOCH);
                assertThat(error(heartbeat(c, join("g", "a2", List.of("t")).setInstanceId("i-a"), v)))
                        .isEqualTo(Errors.UNRELEASED_INSTANCE_ID);
                assertThat(error(heartbeat(c, join("g", "b", List.of("t")), v))).isEqualTo(Errors.NONE);
                assertThat(error(heartbeat(c, join("g", "c", List.of("t")), v))).isEqualTo(Errors.NONE);
                assertThat(error(heartbeat(c, join("g", "d", List.of("t")), v))).as("group.consumer.max.size=3")
                        .isEqualTo(Errors.GROUP_MAX_SIZE_REACHED);

                // a classic member cannot join a consumer group with members; a consumer member not a classic one
                JoinGroupResponse classic = c.send(new JoinGroupRequest.Builder(new JoinGroupRequestData().setGroupId("g")
                        .setMemberId("").setProtocolType("consumer").setSessionTimeoutMs(10_000).setRebalanceTimeoutMs(10_000)
                        .setProtocols(new JoinGroupRequestData.JoinGroupRequestProtocolCollection(List.of(
                                new JoinGroupRequestData.JoinGroupRequestProtocol().setName("range").setMetadata(new byte[0]))
                                .iterator()))), ApiKeys.JOIN_GROUP.latestVersion());
                assertThat(classic.error()).isEqualTo(Errors.INCONSISTENT_GROUP_PROTOCOL);

                // the group among groups: ListGroups says consumer, DescribeGroups describes classic groups only
                ListGroupsResponse listed = c.send(new ListGroupsRequest.Builder(new ListGroupsRequestData()
                        .setTypesFilter(List.of("consumer"))), ApiKeys.LIST_GROUPS.latestVersion());
                assertThat(listed.data().groups()).singleElement().satisfies(g -> {
                    assertThat(g.groupId()).isEqualTo("g");
                    assertThat(g.groupType()).isEqualTo("consumer");
                    assertThat(g.protocolType()).isEqualTo("consumer");
                    assertThat(g.groupState()).isIn("Reconciling", "Stable");
                });
                DescribeGroupsResponse described = c.send(new DescribeGroupsRequest.Builder(new DescribeGroupsRequestData()
                        .setGroups(List.of("g"))), ApiKeys.DESCRIBE_GROUPS.latestVersion());
                assertThat(Errors.forCode(described.data().groups().get(0).errorCode())).isEqualTo(Errors.GROUP_ID_NOT_FOUND);
                DescribeGroupsResponse old = c.send(new DescribeGroupsRequest.Builder(new DescribeGroupsRequestData()
                        .setGroups(List.of("g"))), (short) 5);
                assertThat(old.data().groups().get(0).groupState()).as("before v6: Dead").isEqualTo("Dead");
            }
        }
    }

    @Test
    void anEmptyGroupChangesProtocolAndTheStateSurvivesARestart() throws Exception {
        Uuid topicId;
        String member = Uuid.randomUuid().toString();
        int epoch;
        List<ConsumerGroupHeartbeatRequestData.TopicPartitions> owned;
        short v = ApiKeys.CONSUMER_GROUP_HEARTBEAT.latestVersion();
        try (Broker broker = start()) {
            topicId = createTopic(broker, "t", 3);
            try (RawKafkaClient c = new RawKafkaClient(broker.boundAddresses().get(0))) {
                // an offsets-only (classic, empty) group becomes a consumer group when a consumer member joins
                assertThat(commit(c, "g", "", -1, topicId, 7, (short) 10)).isEqualTo(Errors.NONE);
                ConsumerGroupHeartbeatResponseData r = heartbeat(c, join("g", member, List.of("t")), v);
                assertThat(error(r)).isEqualTo(Errors.NONE);
                epoch = r.memberEpoch();
                owned = owned(r);
                assertThat(fetch(c, "g", member, epoch, topicId)).as("its offsets stay").isEqualTo(7);
                // a second member joins, so the group's epoch moves on
                ConsumerGroupHeartbeatResponseData second = heartbeat(c, join("g", "second", List.of("t")), v);
                assertThat(error(second)).isEqualTo(Errors.NONE);
                assertThat(second.memberEpoch()).isGreaterThan(epoch);
            }
        }
        try (Broker broker = start()) {
            try (RawKafkaClient c = new RawKafkaClient(broker.boundAddresses().get(0))) {
                // after the restart the member is still known with its epoch and partitions: it is told to revoke
                ConsumerGroupHeartbeatResponseData r = heartbeat(c, new ConsumerGroupHeartbeatRequestData().setGroupId("g")
                        .setMemberId(member).setMemberEpoch(epoch).setTopicPartitions(owned), v);
                assertThat(error(r)).as(r.errorMessage()).isEqualTo(Errors.NONE);
                ConsumerGroupDescribeResponse d = c.send(new ConsumerGroupDescribeRequest.Builder(
                        new ConsumerGroupDescribeRequestData().setGroupIds(List.of("g"))), (short) 1);
                assertThat(d.data().groups().get(0).members()).extracting(m -> m.memberId())
                        .containsExactlyInAnyOrder(member, "second");
                // both leave; an empty consumer group becomes a classic one again when a classic member joins
                for (String m : List.of(member, "second")) {
                    assertThat(error(heartbeat(c, new ConsumerGroupHeartbeatRequestData().setGroupId("g").setMemberId(m)
                            .setMemberEpoch(-1), v))).isEqualTo(Errors.NONE);
                }
                JoinGroupResponse classic = c.send(new JoinGroupRequest.Builder(new JoinGroupRequestData().setGroupId("g")
                        .setMemberId("").setProtocolType("consumer").setSessionTimeoutMs(10_000).setRebalanceTimeoutMs(10_000)
                        .setProtocols(new JoinGroupRequestData.JoinGroupRequestProtocolCollection(List.of(
                                new JoinGroupRequestData.JoinGroupRequestProtocol().setName("range").setMetadata(new byte[0]))
                                .iterator()))), ApiKeys.JOIN_GROUP.latestVersion());
                assertThat(classic.error()).as("the two-step join of a classic member").isEqualTo(Errors.MEMBER_ID_REQUIRED);
                JoinGroupResponse joined = c.send(new JoinGroupRequest.Builder(new JoinGroupRequestData().setGroupId("g")
                        .setMemberId(classic.data().memberId()).setProtocolType("consumer").setSessionTimeoutMs(10_000)
                        .setRebalanceTimeoutMs(10_000)
                        .setProtocols(new JoinGroupRequestData.JoinGroupRequestProtocolCollection(List.of(
                                new JoinGroupRequestData.JoinGroupRequestProtocol().setName("range").setMetadata(new byte[0]))
                                .iterator()))), ApiKeys.JOIN_GROUP.latestVersion());
                assertThat(joined.error()).isEqualTo(Errors.NONE);
                assertThat(error(heartbeat(c, join("g", "late", List.of("t")), v)))
                        .as("a classic group with a member refuses consumer-protocol members").isEqualTo(Errors.GROUP_ID_NOT_FOUND);
            }
        }
    }

    @Test
    void aRegularExpressionSubscriptionFollowsTopicsAsTheyAreCreated() throws Exception {
        try (Broker broker = start()) {
            Uuid first = createTopic(broker, "orders-eu", 2);
            createTopic(broker, "payments", 1);
            short v = ApiKeys.CONSUMER_GROUP_HEARTBEAT.latestVersion();
            try (RawKafkaClient c = new RawKafkaClient(broker.boundAddresses().get(0))) {
                ConsumerGroupHeartbeatResponseData joined = heartbeat(c, join("re", "m", null)
                        .setSubscribedTopicRegex("orders-.*"), v);
                assertThat(error(joined)).isEqualTo(Errors.NONE);
                assertThat(joined.assignment().topicPartitions()).singleElement().satisfies(tp -> {
                    assertThat(tp.topicId()).isEqualTo(first);
                    assertThat(tp.partitions()).containsExactlyInAnyOrder(0, 1);
                });
                Uuid second = createTopic(broker, "orders-us", 3);
                ConsumerGroupHeartbeatResponseData next = heartbeat(c, new ConsumerGroupHeartbeatRequestData()
                        .setGroupId("re").setMemberId("m").setMemberEpoch(joined.memberEpoch()).setTopicPartitions(owned(joined)), v);
                assertThat(error(next)).isEqualTo(Errors.NONE);
                assertThat(next.memberEpoch()).as("a new matching topic is a new group epoch").isGreaterThan(joined.memberEpoch());
                assertThat(next.assignment().topicPartitions()).extracting(tp -> tp.topicId())
                        .containsExactlyInAnyOrder(first, second);
                ConsumerGroupDescribeResponse d = c.send(new ConsumerGroupDescribeRequest.Builder(
                        new ConsumerGroupDescribeRequestData().setGroupIds(List.of("re"))), (short) 1);
                assertThat(d.data().groups().get(0).members().get(0).subscribedTopicRegex()).isEqualTo("orders-.*");

                // the Java consumer learns the names of its assignment's topics by id, with an empty name
                org.apache.kafka.common.message.MetadataRequestData byId = new org.apache.kafka.common.message.MetadataRequestData()
                        .setTopics(List.of(new org.apache.kafka.common.message.MetadataRequestData.MetadataRequestTopic()
                                .setName("").setTopicId(second)));
                org.apache.kafka.common.requests.MetadataResponse md = c.send(
                        new org.apache.kafka.common.requests.MetadataRequest.Builder(byId), ApiKeys.METADATA.latestVersion());
                assertThat(md.data().topics()).singleElement().satisfies(t -> {
                    assertThat(t.name()).isEqualTo("orders-us");
                    assertThat(Errors.forCode(t.errorCode())).isEqualTo(Errors.NONE);
                    assertThat(t.partitions()).hasSize(3);
                });

                // a commit sent with the epoch before the last bump counts for partitions the member still owns
                // (its answer with the new epoch was on its way), not for one it does not own
                Uuid payments = broker.context().topics().get("payments").orElseThrow().id();
                assertThat(commitTo(c, "re", "m", joined.memberEpoch(), "orders-eu")).isEqualTo(Errors.NONE);
                assertThat(commitTo(c, "re", "m", joined.memberEpoch(), "payments")).isEqualTo(Errors.STALE_MEMBER_EPOCH);
                assertThat(payments).isNotNull();
            }
        }
    }

    private static Errors commitTo(RawKafkaClient c, String group, String member, int epoch, String topic) throws Exception {
        OffsetCommitRequestData data = new OffsetCommitRequestData().setGroupId(group).setMemberId(member)
                .setGenerationIdOrMemberEpoch(epoch).setTopics(List.of(new OffsetCommitRequestData.OffsetCommitRequestTopic()
                        .setName(topic).setPartitions(List.of(new OffsetCommitRequestData.OffsetCommitRequestPartition()
                                .setPartitionIndex(0).setCommittedOffset(0)))));
        OffsetCommitResponse r = c.send(OffsetCommitRequest.Builder.forTopicNames(data), (short) 9);
        return Errors.forCode(r.data().topics().get(0).partitions().get(0).errorCode());
    }

    private static Errors error(ConsumerGroupHeartbeatResponseData r) {
        return Errors.forCode(r.errorCode());
    }

    private static Errors commit(RawKafkaClient c, String group, String member, int epoch, Uuid topicId, long offset,
                                 short version) throws Exception {
        OffsetCommitRequestData.OffsetCommitRequestTopic topic = new OffsetCommitRequestData.OffsetCommitRequestTopic()
                .setPartitions(List.of(new OffsetCommitRequestData.OffsetCommitRequestPartition().setPartitionIndex(0)
                        .setCommittedOffset(offset)));
        if (version >= 10) {
            topic.setTopicId(topicId);
        } else {
            topic.setName("t");
        }
        OffsetCommitRequestData data = new OffsetCommitRequestData().setGroupId(group).setMemberId(member)
                .setGenerationIdOrMemberEpoch(epoch).setTopics(List.of(topic));
        OffsetCommitResponse r = c.send(version >= 10 ? OffsetCommitRequest.Builder.forTopicIdsOrNames(data)
                : OffsetCommitRequest.Builder.forTopicNames(data), version);
        return Errors.forCode(r.data().topics().get(0).partitions().get(0).errorCode());
    }

    private static OffsetFetchResponse fetchResponse(RawKafkaClient c, String group, String member, int epoch, Uuid topicId)
            throws Exception {
        OffsetFetchRequestData data = new OffsetFetchRequestData().setGroups(List.of(
                new OffsetFetchRequestData.OffsetFetchRequestGroup().setGroupId(group).setMemberId(member).setMemberEpoch(epoch)
                        .setTopics(List.of(new OffsetFetchRequestData.OffsetFetchRequestTopics().setTopicId(topicId)
                                .setPartitionIndexes(List.of(0))))));
        return c.send(OffsetFetchRequest.Builder.forTopicIdsOrNames(data, false), ApiKeys.OFFSET_FETCH.latestVersion());
    }

    private static long fetch(RawKafkaClient c, String group, String member, int epoch, Uuid topicId) throws Exception {
        OffsetFetchResponse r = fetchResponse(c, group, member, epoch, topicId);
        assertThat(Errors.forCode(r.group(group).errorCode())).isEqualTo(Errors.NONE);
        return r.group(group).topics().get(0).partitions().get(0).committedOffset();
    }

    private static Errors fetchError(RawKafkaClient c, String group, String member, int epoch, Uuid topicId) throws Exception {
        return Errors.forCode(fetchResponse(c, group, member, epoch, topicId).group(group).errorCode());
    }
}
