package dev.varve.metadata;

import dev.varve.metadata.PartitionControl.AlterPartitionReply;
import dev.varve.metadata.PartitionControl.AlterPartitionRequest;
import dev.varve.metadata.TopicControl.CreatableTopic;
import dev.varve.metadata.TopicControl.CreatePartitionsTopic;
import dev.varve.metadata.TopicControl.CreateTopicResult;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.ApiError;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

class TopicAndPartitionControlTest {
    private final TestCluster c = new TestCluster(ControllerConfig.defaults()).withBrokers(3, 0);

    private Errors create(String name, int partitions, int rf, Map<Integer, List<Integer>> assignments, Map<String, String> configs) {
        List<ManualAssignments.PartitionReplicas> entries = new java.util.ArrayList<>();
        new java.util.TreeMap<>(assignments).forEach((p, replicas) -> entries.add(new ManualAssignments.PartitionReplicas(p, replicas)));
        List<CreateTopicResult> r = c.commit(c.controller.createTopics(c.image,
                List.of(new CreatableTopic(name, partitions, (short) rf, entries, configs)), false));
        return r.get(0).error().error();
    }

    @Test
    void createTopicsValidatesLikeKafka() {
        assertThat(create("ok", 3, 2, Map.of(), Map.of("retention.ms", "1000"))).isEqualTo(Errors.NONE);
        assertThat(c.image.configs(new ConfigResource(ConfigResource.Type.TOPIC, "ok"))).containsEntry("retention.ms", "1000");
        assertThat(create("ok", 1, 1, Map.of(), Map.of())).isEqualTo(Errors.TOPIC_ALREADY_EXISTS);
        assertThat(create("o.k", 1, 1, Map.of(), Map.of())).isEqualTo(Errors.NONE);
        assertThat(create("o_k", 1, 1, Map.of(), Map.of())).isEqualTo(Errors.INVALID_TOPIC_EXCEPTION);
        assertThat(create("bad name!", 1, 1, Map.of(), Map.of())).isEqualTo(Errors.INVALID_TOPIC_EXCEPTION);
        assertThat(create("zero", 0, 1, Map.of(), Map.of())).isEqualTo(Errors.INVALID_PARTITIONS);
        assertThat(create("huge", Integer.MAX_VALUE, 1, Map.of(), Map.of())).isEqualTo(Errors.INVALID_PARTITIONS);
        assertThat(create("rf0", 1, 0, Map.of(), Map.of())).isEqualTo(Errors.INVALID_REPLICATION_FACTOR);
        assertThat(create("rf4", 1, 4, Map.of(), Map.of())).isEqualTo(Errors.INVALID_REPLICATION_FACTOR);
        assertThat(create("minisr", 1, 1, Map.of(), Map.of("min.insync.replicas", "0"))).isEqualTo(Errors.INVALID_CONFIG);
        assertThat(create("defaults", -1, -1, Map.of(), Map.of())).isEqualTo(Errors.NONE);
        assertThat(c.image.topic("defaults").orElseThrow().partitions()).hasSize(1);
        assertThat(create("manual", -1, -1, Map.of(0, List.of(2, 1), 1, List.of(0, 2)), Map.of())).isEqualTo(Errors.NONE);
        assertThat(c.image.topic("manual").orElseThrow().partition(1).replicas()).containsExactly(0, 2);
        assertThat(c.image.topic("manual").orElseThrow().partition(0).leader()).isEqualTo(2);
        assertThat(create("gap", -1, -1, Map.of(0, List.of(1), 2, List.of(2)), Map.of())).isEqualTo(Errors.INVALID_REPLICA_ASSIGNMENT);
        assertThat(create("unknownBroker", -1, -1, Map.of(0, List.of(9)), Map.of())).isEqualTo(Errors.INVALID_REPLICA_ASSIGNMENT);
        assertThat(create("mixed", 2, -1, Map.of(0, List.of(1)), Map.of())).isEqualTo(Errors.INVALID_REQUEST);
        List<CreateTopicResult> dup = c.commit(c.controller.createTopics(c.image, List.of(
                new CreatableTopic("d", 1, (short) 1, null, null), new CreatableTopic("d", 1, (short) 1, null, null)), false));
        assertThat(dup).extracting(x -> x.error().error()).containsOnly(Errors.INVALID_REQUEST);
        c.checkReplay();
    }

    @Test
    void validateOnlyWritesNothing() {
        var result = c.controller.createTopics(c.image, List.of(new CreatableTopic("v", 2, (short) 2, null, null)), true);
        assertThat(result.records()).isEmpty();
        assertThat(result.response().get(0).error().isSuccess()).isTrue();
    }

    @Test
    void deleteTopicsAndConfigsGoTogether() {
        create("gone", 2, 2, Map.of(), Map.of("retention.ms", "5"));
        Uuid id = c.image.topic("gone").orElseThrow().id();
        Map<String, ApiError> r = c.commit(c.controller.deleteTopics(c.image, List.of("gone", "never")));
        assertThat(r.get("gone").isSuccess()).isTrue();
        assertThat(r.get("never").error()).isEqualTo(Errors.UNKNOWN_TOPIC_OR_PARTITION);
        assertThat(c.image.topic(id)).isEmpty();
        assertThat(c.image.configs(new ConfigResource(ConfigResource.Type.TOPIC, "gone"))).isEmpty();
        assertThat(c.commit(c.controller.deleteTopicsById(c.image, List.of(id))).get(id).error()).isEqualTo(Errors.UNKNOWN_TOPIC_ID);
        TestCluster disabled = new TestCluster(ControllerConfig.defaults().withDeleteTopicEnable(false)).withBrokers(1, 0);
        disabled.createTopic("kept", 1, 1);
        assertThat(disabled.commit(disabled.controller.deleteTopics(disabled.image, List.of("kept"))).get("kept").error())
                .isEqualTo(Errors.TOPIC_DELETION_DISABLED);
        c.checkReplay();
    }

    @Test
    void createPartitionsGrowsWithTheSameReplicationFactor() {
        c.createTopic("grow", 2, 2);
        Map<String, ApiError> r = c.commit(c.controller.createPartitions(c.image, List.of(
                new CreatePartitionsTopic("grow", 5, null), new CreatePartitionsTopic("nope", 2, null)), false));
        assertThat(r.get("grow").isSuccess()).isTrue();
        assertThat(r.get("nope").error()).isEqualTo(Errors.UNKNOWN_TOPIC_OR_PARTITION);
        TopicImage t = c.image.topic("grow").orElseThrow();
        assertThat(t.partitions()).hasSize(5).allMatch(p -> p.replicas().size() == 2 && p.leader() >= 0);
        assertThat(c.commit(c.controller.createPartitions(c.image, List.of(new CreatePartitionsTopic("grow", 5, null)), false))
                .get("grow").error()).isEqualTo(Errors.INVALID_PARTITIONS);
        assertThat(c.commit(c.controller.createPartitions(c.image, List.of(new CreatePartitionsTopic("grow", 3, null)), false))
                .get("grow").error()).isEqualTo(Errors.INVALID_PARTITIONS);
        assertThat(c.commit(c.controller.createPartitions(c.image, List.of(new CreatePartitionsTopic("grow", 7,
                List.of(List.of(0, 1)))), false)).get("grow").error()).isEqualTo(Errors.INVALID_REPLICA_ASSIGNMENT);
        c.checkReplay();
    }

    @Test
    void alterPartitionChecksEpochsAndEligibility() {
        TopicImage t = c.createTopic("isr", 1, 3);
        PartitionState p = t.partition(0);
        int leader = p.leader();
        long epoch = c.epochs.get(leader);
        List<Integer> followers = p.replicas().stream().filter(x -> x != leader).toList();

        AlterPartitionReply shrink = c.commit(c.controller.alterPartition(c.image, new AlterPartitionRequest(leader, epoch,
                t.id(), 0, p.leaderEpoch(), p.partitionEpoch(), List.of(leader, followers.get(0)))));
        assertThat(shrink.error()).isEqualTo(Errors.NONE);
        assertThat(shrink.state().partitionEpoch()).isEqualTo(p.partitionEpoch() + 1);
        assertThat(shrink.state().leaderEpoch()).isEqualTo(p.leaderEpoch());
        assertThat(c.image.partition(t.id(), 0)).isEqualTo(shrink.state());

        PartitionState now = shrink.state();
        assertThat(alter(leader, epoch, t.id(), now.leaderEpoch(), p.partitionEpoch(), List.of(leader))).isEqualTo(Errors.INVALID_UPDATE_VERSION);
        assertThat(alter(leader, epoch, t.id(), now.leaderEpoch() - 1, now.partitionEpoch(), List.of(leader))).isEqualTo(Errors.FENCED_LEADER_EPOCH);
        assertThat(alter(leader, epoch + 100, t.id(), now.leaderEpoch(), now.partitionEpoch(), List.of(leader))).isEqualTo(Errors.STALE_BROKER_EPOCH);
        assertThat(alter(followers.get(0), c.epochs.get(followers.get(0)), t.id(), now.leaderEpoch(), now.partitionEpoch(),
                List.of(followers.get(0)))).isEqualTo(Errors.NOT_LEADER_OR_FOLLOWER);
        assertThat(alter(leader, epoch, Uuid.randomUuid(), now.leaderEpoch(), now.partitionEpoch(), List.of(leader))).isEqualTo(Errors.UNKNOWN_TOPIC_ID);
        assertThat(alter(leader, epoch, t.id(), now.leaderEpoch(), now.partitionEpoch(), List.of(followers.get(0)))).isEqualTo(Errors.INVALID_REQUEST);

        // a fenced broker may not join the ISR
        c.heartbeat(followers.get(1), true, false);
        assertThat(alter(leader, epoch, t.id(), now.leaderEpoch(), now.partitionEpoch(), List.of(leader, followers.get(0), followers.get(1))))
                .isEqualTo(Errors.INELIGIBLE_REPLICA);
        c.checkReplay();
    }

    private Errors alter(int broker, long brokerEpoch, Uuid topicId, int leaderEpoch, int partitionEpoch, List<Integer> isr) {
        return c.commit(c.controller.alterPartition(c.image, new AlterPartitionRequest(broker, brokerEpoch, topicId, 0,
                leaderEpoch, partitionEpoch, isr))).error();
    }

    @Test
    void preferredLeaderElectionRestoresBalance() {
        TopicImage t = c.createTopic("pref", 3, 3);
        int preferred = t.partition(0).preferredLeader();
        c.heartbeat(preferred, false, true); // controlled shutdown moves its leaderships
        assertThat(c.image.topic("pref").orElseThrow().partition(0).leader()).isNotEqualTo(preferred);
        assertThat(c.heartbeat(preferred, false, true).shouldShutDown()).isTrue();
        c.register(preferred, null, true);
        c.heartbeat(preferred);
        // it is back but not in the ISR (it left at shutdown): the leader re-admits it
        PartitionState p = c.image.topic("pref").orElseThrow().partition(0);
        TopicPartition tp = new TopicPartition("pref", 0);
        assertThat(c.commit(c.controller.electLeaders(c.image, ElectionType.PREFERRED, List.of(tp))).get(tp).error())
                .isEqualTo(Errors.PREFERRED_LEADER_NOT_AVAILABLE);
        c.commit(c.controller.alterPartition(c.image, new AlterPartitionRequest(p.leader(), c.epochs.get(p.leader()), t.id(), 0,
                p.leaderEpoch(), p.partitionEpoch(), p.replicas())));
        assertThat(c.commit(c.controller.electLeaders(c.image, ElectionType.PREFERRED, List.of(tp))).get(tp).isSuccess()).isTrue();
        assertThat(c.image.topic("pref").orElseThrow().partition(0).leader()).isEqualTo(preferred);
        assertThat(c.commit(c.controller.electLeaders(c.image, ElectionType.PREFERRED, List.of(tp))).get(tp).error())
                .isEqualTo(Errors.ELECTION_NOT_NEEDED);
        c.checkReplay();
    }
}
