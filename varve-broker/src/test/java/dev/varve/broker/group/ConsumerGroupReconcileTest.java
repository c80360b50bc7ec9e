package dev.varve.broker.group;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.ConsumerGroupHeartbeatRequestData;
import org.apache.kafka.common.message.ConsumerGroupHeartbeatResponseData;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The reconciliation window the fault-injection run found (a partition with two owners): a client reports
 * what it has reconciled, which lags behind what it was sent, so a report without a partition it was just
 * sent does not mean it gave the partition up.
 */
class ConsumerGroupReconcileTest {
    private final ConsumerGroupSimulationTest.Topics topics = new ConsumerGroupSimulationTest.Topics();
    private final ConsumerGroupLogic logic = new ConsumerGroupLogic(
            new ConsumerGroupLogic.Config(45_000, 5_000, 1000, List.of("uniform", "range")));
    private ConsumerGroupState state = ConsumerGroupState.EMPTY;
    private Uuid t;

    @Test
    void aPartitionSentButNotYetReportedIsNotGivenToAnotherMemberOnAStaleReport() {
        topics.create("t", 2);
        t = topics.idOf("t");
        // a joins and is sent both partitions; its client starts reconciling towards them
        ConsumerGroupHeartbeatResponseData a1 = heartbeat("a", 0, List.of());
        assertThat(partitions(a1)).containsExactlyInAnyOrder(0, 1);
        // b joins: the target moves one partition of a's to b, which must wait for it
        ConsumerGroupHeartbeatResponseData b1 = heartbeat("b", 0, List.of());
        assertThat(partitions(b1)).isEmpty();
        // a's client has not finished reconciling: after a failed heartbeat it sends what it owns, nothing yet
        ConsumerGroupHeartbeatResponseData a2 = heartbeat("a", a1.memberEpoch(), List.of());
        assertThat(state.members().get("a").assigned()).as("a keeps what it was sent").isEqualTo(Map.of(t, Set.of(0, 1)));
        ConsumerGroupHeartbeatResponseData b2 = heartbeat("b", b1.memberEpoch(), null);
        assertThat(partitions(b2)).as("b gets nothing a may still take").isEmpty();
        // a finishes reconciling and reports both; now it is asked to give one up
        ConsumerGroupHeartbeatResponseData a3 = heartbeat("a", a2.memberEpoch(), List.of(0, 1));
        assertThat(state.members().get("a").state()).isEqualTo(ConsumerGroupMember.MemberState.UNREVOKED_PARTITIONS);
        assertThat(partitions(a3)).hasSize(1);
        int given = state.members().get("a").pendingRevocation().get(t).iterator().next();
        assertThat(partitions(heartbeat("b", b1.memberEpoch(), null))).as("b still waits").isEmpty();
        // a revokes it and says so: b gets it
        heartbeat("a", a3.memberEpoch(), partitions(a3));
        ConsumerGroupHeartbeatResponseData b3 = heartbeat("b", b1.memberEpoch(), null);
        assertThat(partitions(b3)).containsExactly(given);
    }

    @Test
    void aMemberThatRejoinsOwnsNothingAndGivesUpAtOnce() {
        topics.create("t", 2);
        t = topics.idOf("t");
        ConsumerGroupHeartbeatResponseData a1 = heartbeat("a", 0, List.of());
        heartbeat("a", a1.memberEpoch(), List.of(0, 1));
        ConsumerGroupHeartbeatResponseData b1 = heartbeat("b", 0, List.of());
        // a was fenced and dropped everything; it rejoins with epoch 0 under its id: nothing to wait for
        ConsumerGroupHeartbeatResponseData a2 = heartbeat("a", 0, List.of());
        assertThat(partitions(a2)).hasSize(1);
        assertThat(partitions(heartbeat("b", b1.memberEpoch(), null))).hasSize(1);
    }

    private ConsumerGroupHeartbeatResponseData heartbeat(String member, int epoch, List<Integer> owned) {
        ConsumerGroupHeartbeatRequestData r = new ConsumerGroupHeartbeatRequestData().setGroupId("g").setMemberId(member)
                .setMemberEpoch(epoch).setRebalanceTimeoutMs(epoch == 0 ? 30_000 : -1)
                .setSubscribedTopicNames(epoch == 0 ? List.of("t") : null)
                .setTopicPartitions(owned == null ? null : owned.isEmpty() ? List.of()
                        : List.of(new ConsumerGroupHeartbeatRequestData.TopicPartitions().setTopicId(t).setPartitions(owned)));
        ConsumerGroupLogic.Step s = logic.heartbeat(state, r, (short) 1, member, "/h", topics, null);
        state = s.next();
        return s.response();
    }

    private List<Integer> partitions(ConsumerGroupHeartbeatResponseData r) {
        if (r.assignment() == null) {
            return List.of();
        }
        return r.assignment().topicPartitions().stream().flatMap(tp -> tp.partitions().stream()).sorted().toList();
    }
}
