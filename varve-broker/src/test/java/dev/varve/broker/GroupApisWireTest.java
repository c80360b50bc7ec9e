package dev.varve.broker;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.DeleteGroupsRequestData;
import org.apache.kafka.common.message.DescribeGroupsRequestData;
import org.apache.kafka.common.message.FindCoordinatorRequestData;
import org.apache.kafka.common.message.HeartbeatRequestData;
import org.apache.kafka.common.message.JoinGroupRequestData;
import org.apache.kafka.common.message.LeaveGroupRequestData;
import org.apache.kafka.common.message.ListGroupsRequestData;
import org.apache.kafka.common.message.OffsetCommitRequestData;
import org.apache.kafka.common.message.OffsetDeleteRequestData;
import org.apache.kafka.common.message.OffsetFetchRequestData;
import org.apache.kafka.common.message.SyncGroupRequestData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.DeleteGroupsRequest;
import org.apache.kafka.common.requests.DeleteGroupsResponse;
import org.apache.kafka.common.requests.DescribeGroupsRequest;
import org.apache.kafka.common.requests.DescribeGroupsResponse;
import org.apache.kafka.common.requests.FindCoordinatorRequest;
import org.apache.kafka.common.requests.FindCoordinatorResponse;
import org.apache.kafka.common.requests.HeartbeatRequest;
import org.apache.kafka.common.requests.HeartbeatResponse;
import org.apache.kafka.common.requests.JoinGroupRequest;
import org.apache.kafka.common.requests.JoinGroupResponse;
import org.apache.kafka.common.requests.LeaveGroupRequest;
import org.apache.kafka.common.requests.LeaveGroupResponse;
import org.apache.kafka.common.requests.ListGroupsRequest;
import org.apache.kafka.common.requests.ListGroupsResponse;
import org.apache.kafka.common.requests.OffsetCommitRequest;
import org.apache.kafka.common.requests.OffsetCommitResponse;
import org.apache.kafka.common.requests.OffsetDeleteRequest;
import org.apache.kafka.common.requests.OffsetDeleteResponse;
import org.apache.kafka.common.requests.OffsetFetchRequest;
import org.apache.kafka.common.requests.OffsetFetchResponse;
import org.apache.kafka.common.requests.SyncGroupRequest;
import org.apache.kafka.common.requests.SyncGroupResponse;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every version kafka-clients 4.4 knows of every group API, on the wire: a whole membership cycle
 * (join, sync, heartbeat, commit, fetch, leave) per JoinGroup version, commits and fetches per
 * OffsetCommit/OffsetFetch version (names and topic ids), and the admin group APIs.
 */
class GroupApisWireTest {
    @TempDir
    static File dir;
    static Broker broker;
    static Uuid topicId;

    @BeforeAll
    static void start() throws Exception {
        broker = Broker.start(BrokerConfig.from(Map.of(
                "listeners", "PLAINTEXT://127.0.0.1:0",
                "log.dirs", dir.getAbsolutePath(),
                "offsets.topic.num.partitions", "4",
                "group.initial.rebalance.delay.ms", "0")));
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers()))) {
            admin.createTopics(List.of(new NewTopic("wire", 2, (short) 1))).all().get();
        }
        topicId = broker.context().topics().get("wire").orElseThrow().id();
    }

    @AfterAll
    static void stop() throws Exception {
        broker.close();
    }

    private static RawKafkaClient client() throws Exception {
        return new RawKafkaClient(broker.boundAddresses().get(0));
    }

    @Test
    void findCoordinatorEveryVersion() throws Exception {
        int port = broker.boundAddresses().get(0).getPort();
        try (RawKafkaClient c = client()) {
            for (short v = ApiKeys.FIND_COORDINATOR.oldestVersion(); v <= ApiKeys.FIND_COORDINATOR.latestVersion(); v++) {
                FindCoordinatorRequestData data = new FindCoordinatorRequestData().setKeyType((byte) 0);
                if (v >= FindCoordinatorRequest.MIN_BATCHED_VERSION) {
                    data.setCoordinatorKeys(List.of("g1", "g2"));
                } else {
                    data.setKey("g1");
                }
                FindCoordinatorResponse r = c.send(new FindCoordinatorRequest.Builder(data), v);
                assertThat(r.coordinators()).as("v" + v).isNotEmpty().allSatisfy(co -> {
                    assertThat(Errors.forCode(co.errorCode())).isEqualTo(Errors.NONE);
                    assertThat(co.nodeId()).isEqualTo(1);
                    assertThat(co.port()).isEqualTo(port);
                });
                if (v >= 1) {
                    data.setKeyType((byte) 1);
                    FindCoordinatorResponse txn = c.send(new FindCoordinatorRequest.Builder(data), v);
                    // a transactional id's coordinator: this node, which leads every __transaction_state partition
                    assertThat(txn.coordinators()).as("v" + v).isNotEmpty().allSatisfy(co -> {
                        assertThat(Errors.forCode(co.errorCode())).isEqualTo(Errors.NONE);
                        assertThat(co.nodeId()).isEqualTo(1);
                        assertThat(co.port()).isEqualTo(port);
                    });
                }
            }
        }
        assertThat(broker.context().topics().get(OffsetsTopic.NAME)).get()
                .extracting(TopicRegistry.TopicInfo::partitions).isEqualTo(4);
    }

    @Test
    void aMembershipCycleAtEveryJoinGroupVersion() throws Exception {
        try (RawKafkaClient c = client()) {
            for (short v = ApiKeys.JOIN_GROUP.oldestVersion(); v <= ApiKeys.JOIN_GROUP.latestVersion(); v++) {
                String group = "cycle-v" + v;
                short syncV = (short) Math.min(v, ApiKeys.SYNC_GROUP.latestVersion());
                short hbV = (short) Math.min(v, ApiKeys.HEARTBEAT.latestVersion());
                short leaveV = (short) Math.min(v, ApiKeys.LEAVE_GROUP.latestVersion());
                JoinGroupRequestData.JoinGroupRequestProtocolCollection protocols =
                        new JoinGroupRequestData.JoinGroupRequestProtocolCollection();
                protocols.add(new JoinGroupRequestData.JoinGroupRequestProtocol().setName("range").setMetadata(new byte[]{9}));
                JoinGroupRequestData join = new JoinGroupRequestData().setGroupId(group).setMemberId("")
                        .setSessionTimeoutMs(10_000).setRebalanceTimeoutMs(10_000).setProtocolType("consumer")
                        .setProtocols(protocols);
                JoinGroupResponse joined = c.send(new JoinGroupRequest.Builder(join), v);
                if (v >= 4) {
                    assertThat(joined.error()).as("v" + v).isEqualTo(Errors.MEMBER_ID_REQUIRED);
                    join.setMemberId(joined.data().memberId());
                    joined = c.send(new JoinGroupRequest.Builder(join), v);
                }
                assertThat(joined.error()).as("v" + v).isEqualTo(Errors.NONE);
                String memberId = joined.data().memberId();
                assertThat(joined.data().generationId()).isEqualTo(1);
                assertThat(joined.data().leader()).isEqualTo(memberId);
                assertThat(joined.data().protocolName()).isEqualTo("range");
                assertThat(joined.data().members()).hasSize(1);
                assertThat(joined.data().members().get(0).metadata()).containsExactly(9);

                SyncGroupRequestData sync = new SyncGroupRequestData().setGroupId(group).setMemberId(memberId)
                        .setGenerationId(1).setAssignments(List.of(new SyncGroupRequestData.SyncGroupRequestAssignment()
                                .setMemberId(memberId).setAssignment(new byte[]{4, 2})));
                if (syncV >= 5) {
                    sync.setProtocolType("consumer").setProtocolName("range");
                }
                SyncGroupResponse synced = c.send(new SyncGroupRequest.Builder(sync), syncV);
                assertThat(synced.error()).as("v" + v).isEqualTo(Errors.NONE);
                assertThat(synced.data().assignment()).containsExactly(4, 2);

                HeartbeatResponse hb = c.send(new HeartbeatRequest.Builder(new HeartbeatRequestData().setGroupId(group)
                        .setMemberId(memberId).setGenerationId(1)), hbV);
                assertThat(hb.error()).as("v" + v).isEqualTo(Errors.NONE);
                HeartbeatResponse stale = c.send(new HeartbeatRequest.Builder(new HeartbeatRequestData().setGroupId(group)
                        .setMemberId(memberId).setGenerationId(0)), hbV);
                assertThat(stale.error()).as("v" + v).isEqualTo(Errors.ILLEGAL_GENERATION);

                LeaveGroupResponse left = c.send(new LeaveGroupRequest.Builder(group,
                        List.of(new LeaveGroupRequestData.MemberIdentity().setMemberId(memberId))), leaveV);
                assertThat(left.topLevelError()).as("v" + v).isEqualTo(Errors.NONE);
                assertThat(left.error()).as("v" + v).isEqualTo(Errors.NONE);
                LeaveGroupResponse again = c.send(new LeaveGroupRequest.Builder(group,
                        List.of(new LeaveGroupRequestData.MemberIdentity().setMemberId(memberId))), leaveV);
                assertThat(again.error()).as("v" + v).isEqualTo(Errors.UNKNOWN_MEMBER_ID);
            }
        }
    }

    @Test
    void commitAndFetchAtEveryVersionByNameAndById() throws Exception {
        try (RawKafkaClient c = client()) {
            for (short v = ApiKeys.OFFSET_COMMIT.oldestVersion(); v <= ApiKeys.OFFSET_COMMIT.latestVersion(); v++) {
                boolean byId = v >= 10;
                OffsetCommitRequestData.OffsetCommitRequestTopic topic = new OffsetCommitRequestData.OffsetCommitRequestTopic()
                        .setPartitions(List.of(new OffsetCommitRequestData.OffsetCommitRequestPartition()
                                .setPartitionIndex(1).setCommittedOffset(100 + v).setCommittedMetadata("m" + v),
                                new OffsetCommitRequestData.OffsetCommitRequestPartition()
                                        .setPartitionIndex(7).setCommittedOffset(1)));
                if (byId) {
                    topic.setTopicId(topicId);
                } else {
                    topic.setName("wire");
                }
                OffsetCommitRequestData data = new OffsetCommitRequestData().setGroupId("commit-v" + v)
                        .setGenerationIdOrMemberEpoch(-1).setMemberId("").setTopics(List.of(topic));
                OffsetCommitResponse r = c.send(byId ? OffsetCommitRequest.Builder.forTopicIdsOrNames(data)
                        : OffsetCommitRequest.Builder.forTopicNames(data), v);
                assertThat(r.data().topics()).as("v" + v).hasSize(1);
                assertThat(r.data().topics().get(0).partitions()).extracting(p -> Errors.forCode(p.errorCode()))
                        .as("v" + v).containsExactly(Errors.NONE, Errors.UNKNOWN_TOPIC_OR_PARTITION);
            }
            for (short v = ApiKeys.OFFSET_FETCH.oldestVersion(); v <= ApiKeys.OFFSET_FETCH.latestVersion(); v++) {
                boolean byId = OffsetFetchRequest.useTopicIds(v);
                String group = "commit-v" + Math.max(v, ApiKeys.OFFSET_COMMIT.oldestVersion());
                long expected = 100 + Math.max(v, ApiKeys.OFFSET_COMMIT.oldestVersion());
                OffsetFetchRequestData.OffsetFetchRequestTopics t = new OffsetFetchRequestData.OffsetFetchRequestTopics()
                        .setPartitionIndexes(List.of(0, 1));
                if (byId) {
                    t.setTopicId(topicId);
                } else {
                    t.setName("wire");
                }
                OffsetFetchRequestData data = new OffsetFetchRequestData().setGroups(List.of(
                        new OffsetFetchRequestData.OffsetFetchRequestGroup().setGroupId(group).setTopics(List.of(t))));
                OffsetFetchResponse r = c.send(byId ? OffsetFetchRequest.Builder.forTopicIdsOrNames(data, false)
                        : OffsetFetchRequest.Builder.forTopicNames(data, false), v);
                var partitions = r.group(group).topics().get(0).partitions();
                assertThat(partitions).as("v" + v).hasSize(2);
                assertThat(partitions.get(0).committedOffset()).as("v" + v).isEqualTo(-1);
                assertThat(partitions.get(1).committedOffset()).as("v" + v).isEqualTo(expected);
                assertThat(partitions.get(1).metadata()).as("v" + v).isEqualTo("m" + (expected - 100));
            }
        }
    }

    @Test
    void theOffsetsTopicIsProtectedAndDeletedTopicsTakeTheirOffsetsWithThem() throws Exception {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers()));
             RawKafkaClient c = client()) {
            admin.createTopics(List.of(new NewTopic("doomed", 1, (short) 1))).all().get();
            OffsetCommitRequestData commit = new OffsetCommitRequestData().setGroupId("doomed-g")
                    .setGenerationIdOrMemberEpoch(-1).setMemberId("").setTopics(List.of(
                            new OffsetCommitRequestData.OffsetCommitRequestTopic().setName("doomed").setPartitions(List.of(
                                    new OffsetCommitRequestData.OffsetCommitRequestPartition().setPartitionIndex(0)
                                            .setCommittedOffset(3))),
                            new OffsetCommitRequestData.OffsetCommitRequestTopic().setName("wire").setPartitions(List.of(
                                    new OffsetCommitRequestData.OffsetCommitRequestPartition().setPartitionIndex(0)
                                            .setCommittedOffset(4)))));
            c.send(OffsetCommitRequest.Builder.forTopicNames(commit), (short) 9);
            admin.deleteTopics(List.of("doomed")).all().get();
            assertThat(admin.listConsumerGroupOffsets("doomed-g").partitionsToOffsetAndMetadata().get())
                    .containsOnlyKeys(new org.apache.kafka.common.TopicPartition("wire", 0));
            // the coordinator's own topic: listed as internal, not deletable
            assertThat(admin.listTopics(new org.apache.kafka.clients.admin.ListTopicsOptions().listInternal(true))
                    .listings().get()).anySatisfy(l -> {
                        assertThat(l.name()).isEqualTo(OffsetsTopic.NAME);
                        assertThat(l.isInternal()).isTrue();
                    });
            assertThat(admin.listTopics().names().get()).doesNotContain(OffsetsTopic.NAME);
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> admin.deleteTopics(List.of(OffsetsTopic.NAME)).all().get())
                    .hasCauseInstanceOf(org.apache.kafka.common.errors.InvalidTopicException.class);
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> admin.createPartitions(Map.of(OffsetsTopic.NAME,
                            org.apache.kafka.clients.admin.NewPartitions.increaseTo(10))).all().get())
                    .hasCauseInstanceOf(org.apache.kafka.common.errors.InvalidTopicException.class);
            org.assertj.core.api.Assertions.assertThatThrownBy(() -> admin.deleteRecords(Map.of(
                            new org.apache.kafka.common.TopicPartition(OffsetsTopic.NAME, 0),
                            org.apache.kafka.clients.admin.RecordsToDelete.beforeOffset(1))).all().get())
                    .hasCauseInstanceOf(org.apache.kafka.common.errors.InvalidTopicException.class);
            assertThat(broker.context().topics().get(OffsetsTopic.NAME).orElseThrow().partitions()).isEqualTo(4);
        }
    }

    @Test
    void listDescribeDeleteAndOffsetDeleteEveryVersion() throws Exception {
        try (RawKafkaClient c = client()) {
            OffsetCommitRequestData commit = new OffsetCommitRequestData().setGroupId("admin-g")
                    .setGenerationIdOrMemberEpoch(-1).setMemberId("").setTopics(List.of(
                            new OffsetCommitRequestData.OffsetCommitRequestTopic().setName("wire").setPartitions(List.of(
                                    new OffsetCommitRequestData.OffsetCommitRequestPartition().setPartitionIndex(0)
                                            .setCommittedOffset(5)))));
            for (short v = ApiKeys.LIST_GROUPS.oldestVersion(); v <= ApiKeys.LIST_GROUPS.latestVersion(); v++) {
                c.send(OffsetCommitRequest.Builder.forTopicNames(commit), (short) 9);
                ListGroupsRequestData data = new ListGroupsRequestData();
                if (v >= 4) {
                    data.setStatesFilter(List.of("Empty"));
                }
                if (v >= 5) {
                    data.setTypesFilter(List.of("classic"));
                }
                ListGroupsResponse r = c.send(new ListGroupsRequest.Builder(data), v);
                assertThat(r.data().groups()).as("v" + v).anySatisfy(g -> assertThat(g.groupId()).isEqualTo("admin-g"));
            }
            for (short v = ApiKeys.DESCRIBE_GROUPS.oldestVersion(); v <= ApiKeys.DESCRIBE_GROUPS.latestVersion(); v++) {
                DescribeGroupsResponse r = c.send(new DescribeGroupsRequest.Builder(new DescribeGroupsRequestData()
                        .setGroups(List.of("admin-g", "no-such-group"))), v);
                assertThat(r.data().groups().get(0).groupState()).as("v" + v).isEqualTo("Empty");
                if (v >= 6) {
                    assertThat(Errors.forCode(r.data().groups().get(1).errorCode())).isEqualTo(Errors.GROUP_ID_NOT_FOUND);
                } else {
                    assertThat(r.data().groups().get(1).groupState()).as("v" + v).isEqualTo("Dead");
                }
            }
            OffsetDeleteResponse od = c.send(new OffsetDeleteRequest.Builder(new OffsetDeleteRequestData().setGroupId("admin-g")
                    .setTopics(new OffsetDeleteRequestData.OffsetDeleteRequestTopicCollection(List.of(
                            new OffsetDeleteRequestData.OffsetDeleteRequestTopic().setName("wire").setPartitions(List.of(
                                    new OffsetDeleteRequestData.OffsetDeleteRequestPartition().setPartitionIndex(0),
                                    new OffsetDeleteRequestData.OffsetDeleteRequestPartition().setPartitionIndex(9))))
                            .iterator()))), (short) 0);
            assertThat(Errors.forCode(od.data().errorCode())).isEqualTo(Errors.NONE);
            assertThat(od.data().topics().find("wire").partitions()).extracting(p -> Errors.forCode(p.errorCode()))
                    .containsExactly(Errors.NONE, Errors.UNKNOWN_TOPIC_OR_PARTITION);
            for (short v = ApiKeys.DELETE_GROUPS.oldestVersion(); v <= ApiKeys.DELETE_GROUPS.latestVersion(); v++) {
                c.send(OffsetCommitRequest.Builder.forTopicNames(commit), (short) 9);
                DeleteGroupsResponse r = c.send(new DeleteGroupsRequest.Builder(new DeleteGroupsRequestData()
                        .setGroupsNames(List.of("admin-g", "no-such-group"))), v);
                assertThat(r.get("admin-g")).as("v" + v).isEqualTo(Errors.NONE);
                assertThat(r.get("no-such-group")).as("v" + v).isEqualTo(Errors.GROUP_ID_NOT_FOUND);
            }
        }
    }
}
