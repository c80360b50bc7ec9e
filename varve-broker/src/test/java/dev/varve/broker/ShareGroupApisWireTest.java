package dev.varve.broker;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.DeleteGroupsRequestData;
import org.apache.kafka.common.message.ListGroupsRequestData;
import org.apache.kafka.common.message.ShareGroupDescribeRequestData;
import org.apache.kafka.common.message.ShareGroupHeartbeatRequestData;
import org.apache.kafka.common.message.ShareGroupHeartbeatResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.DeleteGroupsRequest;
import org.apache.kafka.common.requests.DeleteGroupsResponse;
import org.apache.kafka.common.requests.ListGroupsRequest;
import org.apache.kafka.common.requests.ListGroupsResponse;
import org.apache.kafka.common.requests.ShareGroupDescribeRequest;
import org.apache.kafka.common.requests.ShareGroupDescribeResponse;
import org.apache.kafka.common.requests.ShareGroupHeartbeatRequest;
import org.apache.kafka.common.requests.ShareGroupHeartbeatResponse;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Share group membership (KIP-932) on the wire: members join, get every partition between them (shared
 * when there are more members than partitions), leave; Kafka's errors for bad heartbeats; the group
 * among others (ListGroups type share, DescribeGroups refusing it, a consumer member refused); its
 * state across a broker restart; DeleteGroups once it is empty.
 */
class ShareGroupApisWireTest {
    @TempDir
    File dir;

    private Broker start() throws Exception {
        return Broker.start(BrokerConfig.from(Map.of("listeners", "PLAINTEXT://127.0.0.1:0",
                "log.dirs", dir.getAbsolutePath(), "offsets.topic.num.partitions", "3",
                "group.coordinator.rebalance.protocols", "classic,consumer,share", "group.share.max.size", "4")));
    }

    private static ShareGroupHeartbeatResponseData heartbeat(RawKafkaClient c, ShareGroupHeartbeatRequestData r) throws Exception {
        ShareGroupHeartbeatResponse response = c.send(new ShareGroupHeartbeatRequest.Builder(r),
                ApiKeys.SHARE_GROUP_HEARTBEAT.latestVersion());
        return response.data();
    }

    private static ShareGroupHeartbeatRequestData join(String member) {
        return new ShareGroupHeartbeatRequestData().setGroupId("sg").setMemberId(member).setMemberEpoch(0)
                .setSubscribedTopicNames(List.of("q"));
    }

    private static Set<Integer> partitions(ShareGroupHeartbeatResponseData r) {
        Set<Integer> out = new HashSet<>();
        r.assignment().topicPartitions().forEach(tp -> out.addAll(tp.partitions()));
        return out;
    }

    @Test
    void membersShareThePartitionsAndTheGroupSurvivesARestart() throws Exception {
        Map<String, Integer> epochs = new HashMap<>();
        try (Broker broker = start()) {
            try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers()))) {
                admin.createTopics(List.of(new NewTopic("q", 2, (short) 1))).all().get();
            }
            try (RawKafkaClient c = new RawKafkaClient(broker.boundAddresses().get(0))) {
                ShareGroupHeartbeatResponseData a = heartbeat(c, join("a"));
                assertThat(Errors.forCode(a.errorCode())).as(a.errorMessage()).isEqualTo(Errors.NONE);
                assertThat(partitions(a)).containsExactlyInAnyOrder(0, 1);
                heartbeat(c, join("b"));
                ShareGroupHeartbeatResponseData third = heartbeat(c, join("c"));
                assertThat(third.memberEpoch()).isEqualTo(3);
                // every member heartbeats once more and gets the target of the third epoch
                Map<String, Set<Integer>> assigned = new HashMap<>();
                for (String m : List.of("a", "b", "c")) {
                    ShareGroupHeartbeatResponseData r = heartbeat(c, new ShareGroupHeartbeatRequestData().setGroupId("sg")
                            .setMemberId(m).setMemberEpoch(m.equals("c") ? 3 : m.equals("b") ? 2 : 1));
                    assertThat(Errors.forCode(r.errorCode())).as(m + ": " + r.errorMessage()).isEqualTo(Errors.NONE);
                    assertThat(r.memberEpoch()).isEqualTo(3);
                    if (r.assignment() != null) {
                        assigned.put(m, partitions(r));
                    } else {
                        assigned.put(m, partitions(third));
                    }
                    epochs.put(m, r.memberEpoch());
                }
                assertThat(assigned.values()).as("every member gets a partition").allSatisfy(p -> assertThat(p).isNotEmpty());
                Set<Integer> all = new HashSet<>();
                assigned.values().forEach(all::addAll);
                assertThat(all).as("every partition is consumed").containsExactlyInAnyOrder(0, 1);

                // errors
                assertThat(error(heartbeat(c, new ShareGroupHeartbeatRequestData().setGroupId("sg").setMemberId("a")
                        .setMemberEpoch(9)))).isEqualTo(Errors.FENCED_MEMBER_EPOCH);
                assertThat(error(heartbeat(c, new ShareGroupHeartbeatRequestData().setGroupId("sg").setMemberId("ghost")
                        .setMemberEpoch(3)))).isEqualTo(Errors.UNKNOWN_MEMBER_ID);
                assertThat(error(heartbeat(c, join("").setMemberId("")))).isEqualTo(Errors.INVALID_REQUEST);
                assertThat(error(heartbeat(c, join("d").setSubscribedTopicNames(null)))).isEqualTo(Errors.INVALID_REQUEST);
                assertThat(error(heartbeat(c, join("d")))).isEqualTo(Errors.NONE);
                assertThat(error(heartbeat(c, join("e")))).as("group.share.max.size=4").isEqualTo(Errors.GROUP_MAX_SIZE_REACHED);
                assertThat(error(heartbeat(c, new ShareGroupHeartbeatRequestData().setGroupId("sg").setMemberId("d")
                        .setMemberEpoch(-1)))).isEqualTo(Errors.NONE);

                ListGroupsResponse listed = c.send(new ListGroupsRequest.Builder(new ListGroupsRequestData()
                        .setTypesFilter(List.of("share"))), ApiKeys.LIST_GROUPS.latestVersion());
                assertThat(listed.data().groups()).singleElement().satisfies(g -> {
                    assertThat(g.groupId()).isEqualTo("sg");
                    assertThat(g.groupType()).isEqualTo("share");
                    assertThat(g.groupState()).isEqualTo("Stable");
                });
            }
        }
        try (Broker broker = start(); RawKafkaClient c = new RawKafkaClient(broker.boundAddresses().get(0))) {
            ShareGroupDescribeResponse d = c.send(new ShareGroupDescribeRequest.Builder(new ShareGroupDescribeRequestData()
                    .setGroupIds(List.of("sg"))), ApiKeys.SHARE_GROUP_DESCRIBE.latestVersion());
            var g = d.data().groups().get(0);
            assertThat(Errors.forCode(g.errorCode())).isEqualTo(Errors.NONE);
            assertThat(g.assignorName()).isEqualTo("simple");
            assertThat(g.members()).extracting(m -> m.memberId()).containsExactlyInAnyOrder("a", "b", "c");
            // after the restart a member goes on with its epoch
            assertThat(error(heartbeat(c, new ShareGroupHeartbeatRequestData().setGroupId("sg").setMemberId("a")
                    .setMemberEpoch(epochs.get("a"))))).isEqualTo(Errors.NONE);
            DeleteGroupsResponse refused = c.send(new DeleteGroupsRequest.Builder(new DeleteGroupsRequestData()
                    .setGroupsNames(List.of("sg"))), ApiKeys.DELETE_GROUPS.latestVersion());
            assertThat(refused.errors().get("sg")).isEqualTo(Errors.NON_EMPTY_GROUP);
            for (String m : List.of("a", "b", "c")) {
                assertThat(error(heartbeat(c, new ShareGroupHeartbeatRequestData().setGroupId("sg").setMemberId(m)
                        .setMemberEpoch(-1)))).isEqualTo(Errors.NONE);
            }
            DeleteGroupsResponse deleted = c.send(new DeleteGroupsRequest.Builder(new DeleteGroupsRequestData()
                    .setGroupsNames(List.of("sg"))), ApiKeys.DELETE_GROUPS.latestVersion());
            assertThat(deleted.errors().get("sg")).isEqualTo(Errors.NONE);
        }
        try (Broker broker = start(); RawKafkaClient c = new RawKafkaClient(broker.boundAddresses().get(0))) {
            ShareGroupDescribeResponse d = c.send(new ShareGroupDescribeRequest.Builder(new ShareGroupDescribeRequestData()
                    .setGroupIds(List.of("sg"))), ApiKeys.SHARE_GROUP_DESCRIBE.latestVersion());
            assertThat(Errors.forCode(d.data().groups().get(0).errorCode())).as("deleted for good").isEqualTo(Errors.GROUP_ID_NOT_FOUND);
        }
    }

    private static Errors error(ShareGroupHeartbeatResponseData r) {
        return Errors.forCode(r.errorCode());
    }
}
