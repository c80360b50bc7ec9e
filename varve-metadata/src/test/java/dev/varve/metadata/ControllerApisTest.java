package dev.varve.metadata;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.message.AllocateProducerIdsRequestData;
import org.apache.kafka.common.message.AllocateProducerIdsResponseData;
import org.apache.kafka.common.message.AlterConfigsRequestData;
import org.apache.kafka.common.message.AlterConfigsResponseData;
import org.apache.kafka.common.message.AlterPartitionReassignmentsRequestData;
import org.apache.kafka.common.message.AlterPartitionReassignmentsResponseData;
import org.apache.kafka.common.message.AlterPartitionRequestData;
import org.apache.kafka.common.message.AlterPartitionResponseData;
import org.apache.kafka.common.message.BrokerHeartbeatRequestData;
import org.apache.kafka.common.message.BrokerHeartbeatResponseData;
import org.apache.kafka.common.message.BrokerRegistrationRequestData;
import org.apache.kafka.common.message.BrokerRegistrationResponseData;
import org.apache.kafka.common.message.CreatePartitionsRequestData;
import org.apache.kafka.common.message.CreatePartitionsResponseData;
import org.apache.kafka.common.message.CreateTopicsRequestData;
import org.apache.kafka.common.message.CreateTopicsResponseData;
import org.apache.kafka.common.message.DeleteTopicsRequestData;
import org.apache.kafka.common.message.DeleteTopicsResponseData;
import org.apache.kafka.common.message.ElectLeadersRequestData;
import org.apache.kafka.common.message.ElectLeadersResponseData;
import org.apache.kafka.common.message.IncrementalAlterConfigsRequestData;
import org.apache.kafka.common.message.IncrementalAlterConfigsResponseData;
import org.apache.kafka.common.message.ListPartitionReassignmentsRequestData;
import org.apache.kafka.common.message.ListPartitionReassignmentsResponseData;
import org.apache.kafka.common.message.ProduceRequestData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.DescribeConfigsResponse.ConfigSource;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The controller as brokers and admin clients see it: Kafka request bodies go through the envelope,
 * are decided on the image, their records are committed (through the record serde) and the response
 * comes back through the envelope at the request's version.
 */
class ControllerApisTest {
    private static final byte TOPIC = ConfigResource.Type.TOPIC.id();
    private static final byte BROKER = ConfigResource.Type.BROKER.id();
    private static final byte GROUP = ConfigResource.Type.GROUP.id();
    private static final byte SET = 0;
    private static final byte DELETE = 1;
    private static final byte APPEND = 2;
    private static final byte SUBTRACT = 3;

    private final Random random = new Random(7);
    /** What the group config validator was last asked about, per group. */
    private final Map<String, Map<String, String>> validatedGroupConfigs = new HashMap<>();
    private final ControllerLogic logic = new ControllerLogic(ControllerConfig.defaults(),
            () -> new Uuid(random.nextLong(), random.nextLong()),
            (topic, configs) -> {
                if ("forbidden".equals(configs.get("retention.ms"))) {
                    throw new InvalidConfigurationException("Invalid value forbidden for configuration retention.ms");
                }
            },
            (group, configs) -> {
                validatedGroupConfigs.put(group, Map.copyOf(configs));
                for (String key : configs.keySet()) {
                    if (!key.startsWith("consumer.")) {
                        throw new InvalidConfigurationException("Unknown group config name: " + key);
                    }
                }
            });
    private final ControllerApis apis = new ControllerApis(logic);
    private MetadataImage image = MetadataImage.EMPTY;
    private final Map<Integer, Long> epochs = new HashMap<>();

    @BeforeEach
    void threeUnfencedBrokers() {
        for (int id = 0; id < 3; id++) {
            BrokerRegistrationResponseData r = register(id, listener("PLAINTEXT", 9092 + id));
            assertThat(Errors.forCode(r.errorCode())).isEqualTo(Errors.NONE);
            epochs.put(id, r.brokerEpoch());
            assertThat(image.broker(id).orElseThrow().fenced()).isTrue();
        }
        for (int id = 0; id < 3; id++) {
            BrokerHeartbeatResponseData r = heartbeat(id, epochs.get(id), false);
            assertThat(r.isFenced()).isFalse();
            assertThat(r.isCaughtUp()).isTrue();
            assertThat(image.isEligible(id)).isTrue();
        }
    }

    // ---- brokers

    @Test
    void registrationAndHeartbeatErrors() {
        assertThat(Errors.forCode(register(7).errorCode())).isEqualTo(Errors.INVALID_REGISTRATION);
        assertThat(Errors.forCode(register(7, listener("", 1)).errorCode())).isEqualTo(Errors.INVALID_REGISTRATION);
        assertThat(Errors.forCode(register(7, listener("A", 1), listener("A", 2)).errorCode())).isEqualTo(Errors.INVALID_REGISTRATION);
        assertThat(image.broker(7)).isEmpty();

        BrokerHeartbeatResponseData stale = heartbeat(0, epochs.get(0) - 1, false);
        assertThat(Errors.forCode(stale.errorCode())).isEqualTo(Errors.STALE_BROKER_EPOCH);
        assertThat(Errors.forCode(heartbeat(9, 0, false).errorCode())).isEqualTo(Errors.BROKER_ID_NOT_REGISTERED);

        BrokerHeartbeatResponseData fenced = heartbeat(2, epochs.get(2), true);
        assertThat(fenced.isFenced()).isTrue();
        assertThat(image.isEligible(2)).isFalse();
    }

    // ---- topics

    @Test
    void createTopicWithThreeReplicas() {
        CreateTopicsResponseData r = send(ApiKeys.CREATE_TOPICS, createTopics(false,
                topic("orders", 2, 3, Map.of("retention.ms", "1000"))));
        CreateTopicsResponseData.CreatableTopicResult result = r.topics().find("orders");
        assertThat(Errors.forCode(result.errorCode())).isEqualTo(Errors.NONE);
        assertThat(result.errorMessage()).isNull();
        TopicImage orders = image.topic("orders").orElseThrow();
        assertThat(result.topicId()).isEqualTo(orders.id());
        assertThat(result.numPartitions()).isEqualTo(2);
        assertThat(result.replicationFactor()).isEqualTo((short) 3);
        assertThat(result.configs()).singleElement().satisfies(c -> {
            assertThat(c.name()).isEqualTo("retention.ms");
            assertThat(c.value()).isEqualTo("1000");
            assertThat(c.configSource()).isEqualTo(ConfigSource.TOPIC_CONFIG.id());
        });

        assertThat(orders.partitions()).hasSize(2).allSatisfy(p -> {
            assertThat(p.replicas()).hasSize(3).doesNotHaveDuplicates().allMatch(b -> b >= 0 && b < 3);
            assertThat(p.leader()).isEqualTo(p.replicas().get(0));
            assertThat(p.isr()).containsExactlyInAnyOrderElementsOf(p.replicas());
        });
        assertThat(image.configs(topicResource("orders"))).containsExactly(Map.entry("retention.ms", "1000"));
    }

    @Test
    void createTopicsReportsEachTopic() {
        createTopic("taken", 1);
        Map<String, String> nullValue = new HashMap<>();
        nullValue.put("retention.ms", null);
        CreateTopicsRequestData.CreatableTopic repeatedIndex = topic("twice", -1, -1, Map.of());
        repeatedIndex.assignments().add(new CreateTopicsRequestData.CreatableReplicaAssignment().setPartitionIndex(0).setBrokerIds(List.of(0)));
        repeatedIndex.assignments().add(new CreateTopicsRequestData.CreatableReplicaAssignment().setPartitionIndex(0).setBrokerIds(List.of(1)));
        CreateTopicsResponseData r = send(ApiKeys.CREATE_TOPICS, createTopics(false,
                topic("taken", 1, 1, Map.of()),
                topic("nulls", 1, 1, nullValue),
                repeatedIndex,
                topic("toomany", 1, 4, Map.of()),
                topic("fine", -1, -1, Map.of())));
        assertThat(r.topics()).extracting(CreateTopicsResponseData.CreatableTopicResult::name)
                .containsExactly("taken", "nulls", "twice", "toomany", "fine");
        assertThat(r.topics()).extracting(t -> Errors.forCode(t.errorCode())).containsExactly(Errors.TOPIC_ALREADY_EXISTS,
                Errors.INVALID_CONFIG, Errors.INVALID_REPLICA_ASSIGNMENT, Errors.INVALID_REPLICATION_FACTOR, Errors.NONE);
        assertThat(r.topics().find("nulls").errorMessage()).contains("retention.ms");
        assertThat(image.topicsByName()).containsOnlyKeys("taken", "fine");
    }

    @Test
    void validateOnlyCreatesNothing() {
        ControllerResult<ApiMessage> r = decide(ApiKeys.CREATE_TOPICS, createTopics(true, topic("dry", 3, 2, Map.of())));
        assertThat(r.records()).isEmpty();
        CreateTopicsResponseData.CreatableTopicResult result = ((CreateTopicsResponseData) r.response()).topics().find("dry");
        assertThat(Errors.forCode(result.errorCode())).isEqualTo(Errors.NONE);
        assertThat(result.numPartitions()).isEqualTo(3);
        assertThat(result.replicationFactor()).isEqualTo((short) 2);
    }

    @Test
    void deleteTopicsByNameAndById() {
        createTopic("a", 1);
        Uuid b = createTopic("b", 1).id();
        createTopic("c", 1);
        Uuid unknown = new Uuid(5, 5);
        DeleteTopicsResponseData r = send(ApiKeys.DELETE_TOPICS, new DeleteTopicsRequestData().setTopics(List.of(
                new DeleteTopicsRequestData.DeleteTopicState().setName("a"),
                new DeleteTopicsRequestData.DeleteTopicState().setTopicId(b),
                new DeleteTopicsRequestData.DeleteTopicState().setTopicId(unknown),
                new DeleteTopicsRequestData.DeleteTopicState().setName("nope"),
                new DeleteTopicsRequestData.DeleteTopicState().setName("c").setTopicId(b))));
        Map<String, Errors> byName = new HashMap<>();
        Map<Uuid, Errors> byId = new HashMap<>();
        for (DeleteTopicsResponseData.DeletableTopicResult t : r.responses()) {
            if (t.name() != null) {
                byName.put(t.name(), Errors.forCode(t.errorCode()));
            }
            byId.put(t.topicId(), Errors.forCode(t.errorCode()));
        }
        assertThat(byName).containsEntry("a", Errors.NONE).containsEntry("b", Errors.NONE)
                .containsEntry("nope", Errors.UNKNOWN_TOPIC_OR_PARTITION).containsEntry("c", Errors.INVALID_REQUEST);
        assertThat(byId).containsEntry(unknown, Errors.UNKNOWN_TOPIC_ID);
        assertThat(image.topicsByName()).containsOnlyKeys("c");

        // Before v6 topics are named in topicNames.
        DeleteTopicsResponseData legacy = send(ApiKeys.DELETE_TOPICS, (short) 5, new DeleteTopicsRequestData().setTopicNames(List.of("c")));
        assertThat(legacy.responses()).singleElement().satisfies(t -> {
            assertThat(t.name()).isEqualTo("c");
            assertThat(Errors.forCode(t.errorCode())).isEqualTo(Errors.NONE);
        });
        assertThat(image.topicsByName()).isEmpty();
    }

    @Test
    void createPartitions() {
        createTopic("grow", 2);
        CreatePartitionsResponseData r = send(ApiKeys.CREATE_PARTITIONS, createPartitions(false,
                new CreatePartitionsRequestData.CreatePartitionsTopic().setName("grow").setCount(4).setAssignments(null),
                new CreatePartitionsRequestData.CreatePartitionsTopic().setName("missing").setCount(2).setAssignments(null)));
        assertThat(r.results()).extracting(t -> t.name() + "=" + Errors.forCode(t.errorCode()))
                .containsExactly("grow=NONE", "missing=UNKNOWN_TOPIC_OR_PARTITION");
        TopicImage grow = image.topic("grow").orElseThrow();
        assertThat(grow.partitions()).hasSize(4).allSatisfy(p -> assertThat(p.replicas()).hasSize(3));

        CreatePartitionsResponseData shrink = send(ApiKeys.CREATE_PARTITIONS, createPartitions(false,
                new CreatePartitionsRequestData.CreatePartitionsTopic().setName("grow").setCount(3).setAssignments(null)));
        assertThat(Errors.forCode(shrink.results().get(0).errorCode())).isEqualTo(Errors.INVALID_PARTITIONS);
        assertThat(shrink.results().get(0).errorMessage()).isNotBlank();

        CreatePartitionsResponseData manual = send(ApiKeys.CREATE_PARTITIONS, createPartitions(false,
                new CreatePartitionsRequestData.CreatePartitionsTopic().setName("grow").setCount(5).setAssignments(List.of(
                        new CreatePartitionsRequestData.CreatePartitionsAssignment().setBrokerIds(List.of(2, 1, 0))))));
        assertThat(Errors.forCode(manual.results().get(0).errorCode())).isEqualTo(Errors.NONE);
        assertThat(image.topic("grow").orElseThrow().partition(4).replicas()).containsExactly(2, 1, 0);

        ControllerResult<ApiMessage> dry = decide(ApiKeys.CREATE_PARTITIONS, createPartitions(true,
                new CreatePartitionsRequestData.CreatePartitionsTopic().setName("grow").setCount(9).setAssignments(null)));
        assertThat(dry.records()).isEmpty();
        assertThat(Errors.forCode(((CreatePartitionsResponseData) dry.response()).results().get(0).errorCode())).isEqualTo(Errors.NONE);
    }

    // ---- partitions

    @Test
    void alterPartitionShrinksTheIsrOnlyWithCurrentEpochs() {
        TopicImage t = createTopic("isr", 1);
        PartitionState p = t.partition(0);
        int leader = p.leader();
        int follower = p.replicas().stream().filter(b -> b != leader).findFirst().orElseThrow();
        List<Integer> shrunk = List.of(leader, follower);

        AlterPartitionResponseData.PartitionData ok = alterIsr(leader, t.id(), p, shrunk);
        assertThat(Errors.forCode(ok.errorCode())).isEqualTo(Errors.NONE);
        assertThat(ok.isr()).containsExactlyElementsOf(shrunk);
        assertThat(ok.leaderId()).isEqualTo(leader);
        assertThat(ok.leaderEpoch()).isEqualTo(p.leaderEpoch());
        assertThat(ok.partitionEpoch()).isEqualTo(p.partitionEpoch() + 1);
        assertThat(image.topic("isr").orElseThrow().partition(0).isr()).containsExactlyElementsOf(shrunk);

        // The same request again: its partition epoch is now stale.
        assertThat(Errors.forCode(alterIsr(leader, t.id(), p, shrunk).errorCode())).isEqualTo(Errors.INVALID_UPDATE_VERSION);

        // An ISR member that restarted since the leader saw it (another broker epoch) may not stay in the ISR.
        PartitionState current = image.topic("isr").orElseThrow().partition(0);
        AlterPartitionRequestData withStaleMember = alterPartitionRequest(leader, t.id(), current, shrunk);
        withStaleMember.topics().get(0).partitions().get(0).newIsrWithEpochs().get(1).setBrokerEpoch(epochs.get(follower) - 1);
        AlterPartitionResponseData stale = send(ApiKeys.ALTER_PARTITION, withStaleMember);
        assertThat(Errors.forCode(stale.topics().get(0).partitions().get(0).errorCode())).isEqualTo(Errors.INELIGIBLE_REPLICA);

        // A stale broker epoch fails the whole request.
        AlterPartitionRequestData staleBroker = alterPartitionRequest(leader, t.id(), current, List.of(leader)).setBrokerEpoch(epochs.get(leader) - 1);
        AlterPartitionResponseData refused = send(ApiKeys.ALTER_PARTITION, staleBroker);
        assertThat(Errors.forCode(refused.errorCode())).isEqualTo(Errors.STALE_BROKER_EPOCH);
        assertThat(refused.topics()).isEmpty();

        assertThat(Errors.forCode(alterIsr(leader, new Uuid(9, 9), current, shrunk).errorCode())).isEqualTo(Errors.UNKNOWN_TOPIC_ID);

        // The leader is fenced: leadership moves to the follower with a new leader epoch; the old epoch is fenced.
        heartbeat(leader, epochs.get(leader), true);
        PartitionState moved = image.topic("isr").orElseThrow().partition(0);
        assertThat(moved.leader()).isEqualTo(follower);
        assertThat(moved.leaderEpoch()).isGreaterThan(current.leaderEpoch());
        assertThat(Errors.forCode(alterIsr(follower, t.id(), current, List.of(follower)).errorCode())).isEqualTo(Errors.FENCED_LEADER_EPOCH);
        assertThat(Errors.forCode(alterIsr(leader, t.id(), current, List.of(leader)).errorCode())).isEqualTo(Errors.FENCED_LEADER_EPOCH);
        assertThat(image.topic("isr").orElseThrow().partition(0)).isEqualTo(moved);
    }

    @Test
    void alterPartitionDecidesEachPartitionOnTheChangesBeforeIt() {
        Uuid id = createTopicWithAssignment("many", List.of(0, 1, 2), List.of(0, 1, 2)).id();
        PartitionState p0 = image.topic(id).orElseThrow().partition(0);
        PartitionState p1 = image.topic(id).orElseThrow().partition(1);
        AlterPartitionRequestData req = alterPartitionRequest(0, id, p0, List.of(0, 1));
        List<AlterPartitionRequestData.PartitionData> partitions = req.topics().get(0).partitions();
        partitions.add(alterPartitionRequest(0, id, p1, List.of(0, 2)).topics().get(0).partitions().get(0));
        partitions.add(alterPartitionRequest(0, id, p0, List.of(0)).topics().get(0).partitions().get(0)); // p0 again, now stale

        AlterPartitionResponseData r = send(ApiKeys.ALTER_PARTITION, req);
        assertThat(r.topics().get(0).partitions()).extracting(x -> x.partitionIndex() + "=" + Errors.forCode(x.errorCode()))
                .containsExactly("0=NONE", "1=NONE", "0=INVALID_UPDATE_VERSION");
        assertThat(image.topic(id).orElseThrow().partition(0).isr()).containsExactly(0, 1);
        assertThat(image.topic(id).orElseThrow().partition(1).isr()).containsExactly(0, 2);
    }

    @Test
    void electPreferredLeaders() {
        Uuid id = createTopicWithAssignment("pref", List.of(0, 1, 2)).id();
        heartbeat(0, epochs.get(0), true); // broker 0 fenced: leadership moves away, 0 leaves the ISR
        heartbeat(0, epochs.get(0), false); // back, but not in the ISR yet
        PartitionState p = image.topic(id).orElseThrow().partition(0);
        assertThat(p.leader()).isNotEqualTo(0);
        assertThat(Errors.forCode(alterIsr(p.leader(), id, p, List.of(p.leader(), p.isr().get(1), 0)).errorCode())).isEqualTo(Errors.NONE);

        ElectLeadersResponseData all = send(ApiKeys.ELECT_LEADERS, new ElectLeadersRequestData().setElectionType((byte) 0).setTopicPartitions(null));
        assertThat(all.errorCode()).isZero();
        assertThat(all.replicaElectionResults()).singleElement().satisfies(t -> {
            assertThat(t.topic()).isEqualTo("pref");
            assertThat(t.partitionResult()).singleElement().satisfies(x -> {
                assertThat(x.partitionId()).isZero();
                assertThat(Errors.forCode(x.errorCode())).isEqualTo(Errors.NONE);
            });
        });
        assertThat(image.topic(id).orElseThrow().partition(0).leader()).isZero();

        ElectLeadersRequestData.TopicPartitionsCollection tps = new ElectLeadersRequestData.TopicPartitionsCollection();
        tps.add(new ElectLeadersRequestData.TopicPartitions().setTopic("pref").setPartitions(List.of(0, 5)));
        ElectLeadersResponseData again = send(ApiKeys.ELECT_LEADERS, new ElectLeadersRequestData().setElectionType((byte) 0).setTopicPartitions(tps));
        assertThat(again.replicaElectionResults().get(0).partitionResult()).extracting(x -> x.partitionId() + "=" + Errors.forCode(x.errorCode()))
                .containsExactly("0=ELECTION_NOT_NEEDED", "5=UNKNOWN_TOPIC_OR_PARTITION");

        ElectLeadersResponseData badType = send(ApiKeys.ELECT_LEADERS, new ElectLeadersRequestData().setElectionType((byte) 7));
        assertThat(Errors.forCode(badType.errorCode())).isEqualTo(Errors.INVALID_REQUEST);
    }

    // ---- reassignments

    @Test
    void reassignmentMovesTheLeaderOffARemovedReplicaOnceTheNewOneIsInSync() {
        addBroker(3);
        Uuid id = createTopicWithAssignment("move", List.of(0, 1, 2)).id();
        PartitionState before = image.partition(id, 0);
        assertThat(before.leader()).isZero();

        assertThat(reassign("move", 0, List.of(1, 2, 3))).isEqualTo(Errors.NONE);
        PartitionState moving = image.partition(id, 0);
        assertThat(moving.replicas()).containsExactly(1, 2, 3, 0); // target first, then the replicas it drops
        assertThat(moving.addingReplicas()).containsExactly(3);
        assertThat(moving.removingReplicas()).containsExactly(0);
        assertThat(moving.isr()).isEqualTo(before.isr());
        assertThat(moving.leader()).isZero();
        assertThat(moving.leaderEpoch()).isEqualTo(before.leaderEpoch());
        assertThat(moving.partitionEpoch()).isEqualTo(before.partitionEpoch() + 1);
        assertThat(listReassignments(null)).containsExactly("move-0 replicas=[1, 2, 3, 0] adding=[3] removing=[0]");
        checkSnapshot();

        // Broker 3 caught up: the leader adds it to the ISR, which completes the reassignment. Leader 0 is
        // being removed, so leadership moves to the first target replica in the ISR and 0 is told so.
        AlterPartitionResponseData.PartitionData r = alterIsr(0, id, moving, List.of(0, 1, 2, 3));
        assertThat(Errors.forCode(r.errorCode())).isEqualTo(Errors.NEW_LEADER_ELECTED);
        PartitionState done = image.partition(id, 0);
        assertThat(done.replicas()).containsExactly(1, 2, 3);
        assertThat(done.isr()).containsExactly(1, 2, 3);
        assertThat(done.leader()).isEqualTo(1);
        assertThat(done.leaderEpoch()).isEqualTo(before.leaderEpoch() + 1);
        assertThat(done.partitionEpoch()).isEqualTo(moving.partitionEpoch() + 1);
        assertThat(done.isReassigning()).isFalse();
        assertThat(listReassignments(null)).isEmpty();
        checkSnapshot();
    }

    @Test
    void completionThatKeepsTheLeaderStillBumpsItsEpoch() {
        addBroker(3);
        Uuid id = createTopicWithAssignment("keep", List.of(0, 1, 2)).id();
        PartitionState before = image.partition(id, 0);
        assertThat(reassign("keep", 0, List.of(0, 1, 3))).isEqualTo(Errors.NONE);
        PartitionState moving = image.partition(id, 0);
        assertThat(moving.replicas()).containsExactly(0, 1, 3, 2);

        // Only part of the ISR expansion so far: 3 is still catching up, nothing completes.
        AlterPartitionResponseData.PartitionData partial = alterIsr(0, id, moving, List.of(0, 1));
        assertThat(Errors.forCode(partial.errorCode())).isEqualTo(Errors.NONE);
        assertThat(image.partition(id, 0).isReassigning()).isTrue();

        AlterPartitionResponseData.PartitionData r = alterIsr(0, id, image.partition(id, 0), List.of(0, 1, 3));
        assertThat(Errors.forCode(r.errorCode())).isEqualTo(Errors.NONE);
        PartitionState done = image.partition(id, 0);
        assertThat(done.replicas()).containsExactly(0, 1, 3);
        assertThat(done.isr()).containsExactly(0, 1, 3);
        assertThat(done.leader()).isZero();
        assertThat(done.leaderEpoch()).as("2 was dropped: its fetches must be fenced").isEqualTo(before.leaderEpoch() + 1);
        assertThat(done.isReassigning()).isFalse();
        assertThat(r.isr()).containsExactly(0, 1, 3);
        assertThat(r.leaderEpoch()).isEqualTo(done.leaderEpoch());
        assertThat(r.partitionEpoch()).isEqualTo(done.partitionEpoch());
    }

    @Test
    void reassignmentThatAddsNothingCompletesAtOnce() {
        Uuid id = createTopicWithAssignment("shrink", List.of(0, 1, 2)).id();
        PartitionState before = image.partition(id, 0);
        assertThat(reassign("shrink", 0, List.of(2, 1))).isEqualTo(Errors.NONE);
        PartitionState done = image.partition(id, 0);
        assertThat(done.replicas()).containsExactly(2, 1);
        assertThat(done.isr()).containsExactly(1, 2);
        assertThat(done.leader()).as("first target replica in the ISR").isEqualTo(2);
        assertThat(done.leaderEpoch()).isEqualTo(before.leaderEpoch() + 1);
        assertThat(done.isReassigning()).isFalse();

        // Reordering only: no replica dropped, the leader and its epoch stay.
        assertThat(reassign("shrink", 0, List.of(1, 2))).isEqualTo(Errors.NONE);
        PartitionState reordered = image.partition(id, 0);
        assertThat(reordered.replicas()).containsExactly(1, 2);
        assertThat(reordered.leader()).isEqualTo(2);
        assertThat(reordered.leaderEpoch()).isEqualTo(done.leaderEpoch());
        assertThat(reordered.partitionEpoch()).isEqualTo(done.partitionEpoch() + 1);

        // The same assignment again changes nothing.
        ControllerResult<ApiMessage> same = decide(ApiKeys.ALTER_PARTITION_REASSIGNMENTS, reassignment(true, "shrink", 0, List.of(1, 2)));
        assertThat(same.records()).isEmpty();
    }

    @Test
    void cancelRevertsAndMovesTheLeaderOffAnAddedReplica() {
        addBroker(3);
        addBroker(4);
        Uuid id = createTopicWithAssignment("undo", List.of(0, 1, 2)).id();
        assertThat(reassign("undo", 0, List.of(3, 4, 1))).isEqualTo(Errors.NONE);
        PartitionState moving = image.partition(id, 0);
        assertThat(moving.replicas()).containsExactly(3, 4, 1, 0, 2);
        assertThat(moving.addingReplicas()).containsExactly(3, 4);
        assertThat(moving.removingReplicas()).containsExactly(0, 2);
        assertThat(Errors.forCode(alterIsr(0, id, moving, List.of(0, 1, 2, 3)).errorCode())).isEqualTo(Errors.NONE);
        assertThat(image.partition(id, 0).isReassigning()).as("4 has not caught up").isTrue();

        // The leader fails: its successor is a target replica, never 2, which is being removed.
        heartbeat(0, epochs.get(0), true);
        PartitionState failedOver = image.partition(id, 0);
        assertThat(failedOver.isr()).containsExactly(1, 2, 3);
        assertThat(failedOver.leader()).isEqualTo(3);

        assertThat(reassign("undo", 0, null)).isEqualTo(Errors.NONE);
        PartitionState reverted = image.partition(id, 0);
        assertThat(reverted.replicas()).containsExactly(1, 0, 2);
        assertThat(reverted.isr()).containsExactly(1, 2);
        assertThat(reverted.leader()).isEqualTo(1);
        assertThat(reverted.leaderEpoch()).isEqualTo(failedOver.leaderEpoch() + 1);
        assertThat(reverted.isReassigning()).isFalse();
        assertThat(reassign("undo", 0, null)).isEqualTo(Errors.NO_REASSIGNMENT_IN_PROGRESS);
        checkSnapshot();
    }

    @Test
    void cancelThatNeedsAnUncleanElectionIsRefusedUnlessEnabled() {
        Uuid id = createTopicWithAssignment("lonely", List.of(0)).id();
        assertThat(reassign("lonely", 0, List.of(1, 2))).isEqualTo(Errors.NONE);
        assertThat(Errors.forCode(alterIsr(0, id, image.partition(id, 0), List.of(0, 1)).errorCode())).isEqualTo(Errors.NONE);
        heartbeat(0, epochs.get(0), true); // 0 leaves the ISR: only the added replica 1 is in sync
        heartbeat(0, epochs.get(0), false);
        PartitionState p = image.partition(id, 0);
        assertThat(p.isr()).containsExactly(1);
        assertThat(p.leader()).isEqualTo(1);

        assertThat(reassign("lonely", 0, null)).isEqualTo(Errors.INVALID_REPLICA_ASSIGNMENT);
        assertThat(image.partition(id, 0)).isEqualTo(p);

        assertThat(alterTopicConfig("lonely", op("unclean.leader.election.enable", SET, "true"))).isEqualTo(Errors.NONE);
        assertThat(reassign("lonely", 0, null)).isEqualTo(Errors.NONE);
        PartitionState reverted = image.partition(id, 0);
        assertThat(reverted.replicas()).containsExactly(0);
        assertThat(reverted.isr()).containsExactly(0);
        assertThat(reverted.leader()).isZero();
    }

    @Test
    void reassignmentErrorsArePerPartition() {
        createTopicWithAssignment("errs", List.of(0, 1), List.of(1, 2));
        AlterPartitionReassignmentsRequestData req = new AlterPartitionReassignmentsRequestData().setTopics(List.of(
                new AlterPartitionReassignmentsRequestData.ReassignableTopic().setName("errs").setPartitions(List.of(
                        target(0, List.of()), target(0, List.of(1, 1)), target(0, List.of(0, 9)), target(1, null), target(7, List.of(0)),
                        target(1, List.of(2, 0)))),
                new AlterPartitionReassignmentsRequestData.ReassignableTopic().setName("ghost").setPartitions(List.of(
                        target(0, List.of(0))))));
        AlterPartitionReassignmentsResponseData r = send(ApiKeys.ALTER_PARTITION_REASSIGNMENTS, req);
        assertThat(Errors.forCode(r.errorCode())).isEqualTo(Errors.NONE);
        assertThat(r.allowReplicationFactorChange()).isTrue();
        assertThat(r.responses()).extracting(AlterPartitionReassignmentsResponseData.ReassignableTopicResponse::name)
                .containsExactly("errs", "ghost");
        assertThat(r.responses().get(0).partitions()).extracting(x -> x.partitionIndex() + "=" + Errors.forCode(x.errorCode()))
                .containsExactly("0=INVALID_REPLICA_ASSIGNMENT", "0=INVALID_REPLICA_ASSIGNMENT", "0=INVALID_REPLICA_ASSIGNMENT",
                        "1=NO_REASSIGNMENT_IN_PROGRESS", "7=UNKNOWN_TOPIC_OR_PARTITION", "1=NONE");
        assertThat(r.responses().get(0).partitions()).filteredOn(x -> x.errorCode() != 0).allSatisfy(x -> assertThat(x.errorMessage()).isNotBlank());
        assertThat(r.responses().get(0).partitions().get(5).errorMessage()).isNull();
        assertThat(Errors.forCode(r.responses().get(1).partitions().get(0).errorCode())).isEqualTo(Errors.UNKNOWN_TOPIC_OR_PARTITION);
        assertThat(image.topic("errs").orElseThrow().partition(0).replicas()).containsExactly(0, 1);
        assertThat(image.topic("errs").orElseThrow().partition(1).replicas()).containsExactly(2, 0, 1);

        // KIP-860: without allowReplicationFactorChange the replica count must stay (the partition's target counts).
        AlterPartitionReassignmentsResponseData strict = send(ApiKeys.ALTER_PARTITION_REASSIGNMENTS,
                reassignment(false, "errs", 1, List.of(0)));
        assertThat(strict.allowReplicationFactorChange()).isFalse();
        assertThat(Errors.forCode(strict.responses().get(0).partitions().get(0).errorCode())).isEqualTo(Errors.INVALID_REPLICATION_FACTOR);
        AlterPartitionReassignmentsResponseData sameSize = send(ApiKeys.ALTER_PARTITION_REASSIGNMENTS,
                reassignment(false, "errs", 1, List.of(0, 2)));
        assertThat(Errors.forCode(sameSize.responses().get(0).partitions().get(0).errorCode())).isEqualTo(Errors.NONE);
    }

    @Test
    void listReassignmentsOfChosenPartitions() {
        addBroker(3);
        createTopicWithAssignment("a", List.of(0, 1), List.of(1, 2), List.of(2, 0));
        createTopicWithAssignment("b", List.of(0, 1));
        assertThat(reassign("a", 2, List.of(3, 0))).isEqualTo(Errors.NONE);
        assertThat(reassign("a", 0, List.of(0, 3))).isEqualTo(Errors.NONE);
        assertThat(reassign("b", 0, List.of(3))).isEqualTo(Errors.NONE);

        assertThat(listReassignments(null)).containsExactly(
                "a-0 replicas=[0, 3, 1] adding=[3] removing=[1]",
                "a-2 replicas=[3, 0, 2] adding=[3] removing=[2]",
                "b-0 replicas=[3, 0, 1] adding=[3] removing=[0, 1]");
        List<ListPartitionReassignmentsRequestData.ListPartitionReassignmentsTopics> topics = List.of(
                new ListPartitionReassignmentsRequestData.ListPartitionReassignmentsTopics().setName("a").setPartitionIndexes(List.of(2, 1, 9)),
                new ListPartitionReassignmentsRequestData.ListPartitionReassignmentsTopics().setName("ghost").setPartitionIndexes(List.of(0)));
        assertThat(listReassignments(topics)).containsExactly("a-2 replicas=[3, 0, 2] adding=[3] removing=[2]");
        assertThat(decide(ApiKeys.LIST_PARTITION_REASSIGNMENTS, new ListPartitionReassignmentsRequestData().setTopics(null)).records()).isEmpty();

        // A new reassignment replaces the ongoing one, based on the current (merged) replicas; 3 has not
        // caught up yet, so it is still being added and the reassignment waits for it.
        assertThat(reassign("b", 0, List.of(1, 3))).isEqualTo(Errors.NONE);
        assertThat(listReassignments(null)).contains("b-0 replicas=[1, 3, 0] adding=[3] removing=[0]");
    }

    // ---- configs

    @Test
    void incrementalAlterConfigsOnTopics() {
        createTopic("cfg", 1, Map.of("retention.ms", "1000", "segment.ms", "5"));
        IncrementalAlterConfigsResponseData r = send(ApiKeys.INCREMENTAL_ALTER_CONFIGS, incremental(false,
                resource(TOPIC, "cfg", op("retention.ms", SET, "2000"), op("segment.ms", DELETE, null)),
                resource(TOPIC, "ghost", op("retention.ms", SET, "1"))));
        assertThat(r.responses()).extracting(x -> x.resourceName() + "=" + Errors.forCode(x.errorCode()))
                .containsExactly("cfg=NONE", "ghost=UNKNOWN_TOPIC_OR_PARTITION");
        assertThat(image.configs(topicResource("cfg"))).containsExactly(Map.entry("retention.ms", "2000"));

        send(ApiKeys.INCREMENTAL_ALTER_CONFIGS, incremental(false, resource(TOPIC, "cfg", op("cleanup.policy", APPEND, "compact"))));
        assertThat(image.configs(topicResource("cfg"))).containsEntry("cleanup.policy", "delete,compact");
        send(ApiKeys.INCREMENTAL_ALTER_CONFIGS, incremental(false, resource(TOPIC, "cfg", op("cleanup.policy", SUBTRACT, "delete"))));
        assertThat(image.configs(topicResource("cfg"))).containsEntry("cleanup.policy", "compact");

        MetadataImage before = image;
        assertThat(alterTopicConfig("cfg", op("retention.ms", APPEND, "1"))).isEqualTo(Errors.INVALID_CONFIG);
        assertThat(alterTopicConfig("cfg", op("retention.ms", SET, "forbidden"))).isEqualTo(Errors.INVALID_CONFIG);
        assertThat(alterTopicConfig("cfg", op("min.insync.replicas", SET, "0"))).isEqualTo(Errors.INVALID_CONFIG);
        assertThat(alterTopicConfig("cfg", op("retention.ms", SET, null))).isEqualTo(Errors.INVALID_REQUEST);
        assertThat(alterTopicConfig("cfg", op("retention.ms", SET, "1"), op("retention.ms", DELETE, null))).isEqualTo(Errors.INVALID_REQUEST);
        assertThat(alterTopicConfig("cfg", op("retention.ms", (byte) 9, "1"))).isEqualTo(Errors.INVALID_REQUEST);
        ControllerResult<ApiMessage> dry = decide(ApiKeys.INCREMENTAL_ALTER_CONFIGS, incremental(true,
                resource(TOPIC, "cfg", op("retention.ms", SET, "3"))));
        assertThat(dry.records()).isEmpty();
        assertThat(((IncrementalAlterConfigsResponseData) dry.response()).responses().get(0).errorCode()).isZero();
        assertThat(image).isEqualTo(before);
    }

    @Test
    void incrementalAlterConfigsOnBrokers() {
        IncrementalAlterConfigsResponseData r = send(ApiKeys.INCREMENTAL_ALTER_CONFIGS, incremental(false,
                resource(BROKER, "", op("min.insync.replicas", SET, "2")),
                resource(BROKER, "1", op("log.cleanup.policy", APPEND, "compact")),
                resource(BROKER, "not-a-broker", op("x", SET, "1")),
                resource((byte) 8, "g", op("x", SET, "1"))));
        assertThat(r.responses()).extracting(x -> Errors.forCode(x.errorCode()))
                .containsExactly(Errors.NONE, Errors.NONE, Errors.INVALID_REQUEST, Errors.INVALID_REQUEST);
        assertThat(r.responses().get(3).resourceType()).isEqualTo((byte) 8);
        assertThat(image.configs(MetadataImage.CLUSTER_DEFAULTS)).containsEntry("min.insync.replicas", "2");
        assertThat(image.configs(new ConfigResource(ConfigResource.Type.BROKER, "1"))).containsEntry("log.cleanup.policy", "delete,compact");

        IncrementalAlterConfigsResponseData twice = send(ApiKeys.INCREMENTAL_ALTER_CONFIGS, incremental(false,
                resource(BROKER, "", op("a", SET, "1")), resource(BROKER, "", op("b", SET, "1"))));
        assertThat(twice.responses()).extracting(x -> Errors.forCode(x.errorCode())).containsOnly(Errors.INVALID_REQUEST);
    }

    @Test
    void incrementalAlterConfigsOnGroupsAreConfigRecordsCheckedWholeByTheGroupValidator() {
        ConfigResource g1 = new ConfigResource(ConfigResource.Type.GROUP, "g1");
        IncrementalAlterConfigsResponseData r = send(ApiKeys.INCREMENTAL_ALTER_CONFIGS, incremental(false,
                resource(GROUP, "g1", op("consumer.heartbeat.interval.ms", SET, "6000")),
                resource(GROUP, "", op("consumer.heartbeat.interval.ms", SET, "6000"))));
        assertThat(r.responses()).extracting(x -> x.resourceName() + "=" + Errors.forCode(x.errorCode()))
                .containsExactly("g1=NONE", "=INVALID_REQUEST");
        assertThat(r.responses().get(1).errorMessage()).isEqualTo("Default group resources are not allowed.");
        assertThat(image.configs(g1)).isEqualTo(Map.of("consumer.heartbeat.interval.ms", "6000"));

        // the validator sees the group's whole set after the change; a refusal changes nothing
        send(ApiKeys.INCREMENTAL_ALTER_CONFIGS, incremental(false,
                resource(GROUP, "g1", op("consumer.session.timeout.ms", SET, "50000"))));
        assertThat(validatedGroupConfigs.get("g1")).isEqualTo(Map.of("consumer.heartbeat.interval.ms", "6000",
                "consumer.session.timeout.ms", "50000"));
        MetadataImage before = image;
        IncrementalAlterConfigsResponseData bad = send(ApiKeys.INCREMENTAL_ALTER_CONFIGS, incremental(false,
                resource(GROUP, "g1", op("share.isolation.level", SET, "read_committed"))));
        assertThat(Errors.forCode(bad.responses().get(0).errorCode())).isEqualTo(Errors.INVALID_CONFIG);
        assertThat(bad.responses().get(0).errorMessage()).isEqualTo("Unknown group config name: share.isolation.level");
        assertThat(image).isEqualTo(before);
        ControllerResult<ApiMessage> dry = decide(ApiKeys.INCREMENTAL_ALTER_CONFIGS, incremental(true,
                resource(GROUP, "g1", op("consumer.session.timeout.ms", DELETE, null))));
        assertThat(dry.records()).isEmpty();

        // the records: one ConfigRecord of type GROUP per key, nothing about partitions
        ControllerResult<ApiMessage> delete = decide(ApiKeys.INCREMENTAL_ALTER_CONFIGS, incremental(false,
                resource(GROUP, "g1", op("consumer.session.timeout.ms", DELETE, null), op("no.such.key", DELETE, null))));
        assertThat(delete.records()).containsExactly(new MetadataRecord.ConfigRecord(ConfigResource.Type.GROUP, "g1",
                "consumer.session.timeout.ms", null));
        send(ApiKeys.INCREMENTAL_ALTER_CONFIGS, incremental(false,
                resource(GROUP, "g1", op("consumer.session.timeout.ms", DELETE, null))));
        assertThat(image.configs(g1)).isEqualTo(Map.of("consumer.heartbeat.interval.ms", "6000"));
        checkSnapshot();

        // legacy AlterConfigs replaces the group's whole set
        AlterConfigsRequestData.AlterConfigsResource res = new AlterConfigsRequestData.AlterConfigsResource()
                .setResourceType(GROUP).setResourceName("g1");
        res.configs().add(new AlterConfigsRequestData.AlterableConfig().setName("consumer.session.timeout.ms").setValue("55000"));
        AlterConfigsRequestData.AlterConfigsResourceCollection resources = new AlterConfigsRequestData.AlterConfigsResourceCollection();
        resources.add(res);
        AlterConfigsResponseData legacy = send(ApiKeys.ALTER_CONFIGS, new AlterConfigsRequestData().setResources(resources));
        assertThat(Errors.forCode(legacy.responses().get(0).errorCode())).isEqualTo(Errors.NONE);
        assertThat(image.configs(g1)).isEqualTo(Map.of("consumer.session.timeout.ms", "55000"));

        // a controller built without group configs refuses them
        ControllerApis without = new ControllerApis(new ControllerLogic(ControllerConfig.defaults(), Uuid::randomUuid,
                (topic, configs) -> { }));
        ControllerResult<ApiMessage> refused = without.handle(image, ApiKeys.INCREMENTAL_ALTER_CONFIGS, incremental(false,
                resource(GROUP, "g2", op("consumer.session.timeout.ms", SET, "50000"))), 1_000);
        assertThat(refused.records()).isEmpty();
        assertThat(Errors.forCode(((IncrementalAlterConfigsResponseData) refused.response()).responses().get(0).errorCode()))
                .isEqualTo(Errors.INVALID_REQUEST);
    }

    @Test
    void legacyAlterConfigsReplacesTheWholeSet() {
        createTopic("legacy", 1, Map.of("retention.ms", "1000", "segment.ms", "5"));
        AlterConfigsRequestData.AlterConfigsResource res = new AlterConfigsRequestData.AlterConfigsResource()
                .setResourceType(TOPIC).setResourceName("legacy");
        res.configs().add(new AlterConfigsRequestData.AlterableConfig().setName("retention.ms").setValue("3000"));
        AlterConfigsRequestData.AlterConfigsResourceCollection resources = new AlterConfigsRequestData.AlterConfigsResourceCollection();
        resources.add(res);
        AlterConfigsResponseData r = send(ApiKeys.ALTER_CONFIGS, new AlterConfigsRequestData().setResources(resources));
        assertThat(Errors.forCode(r.responses().get(0).errorCode())).isEqualTo(Errors.NONE);
        assertThat(image.configs(topicResource("legacy"))).containsExactly(Map.entry("retention.ms", "3000"));
    }

    // ---- producer ids

    @Test
    void producerIdBlocksNeverOverlap() {
        AllocateProducerIdsResponseData first = send(ApiKeys.ALLOCATE_PRODUCER_IDS,
                new AllocateProducerIdsRequestData().setBrokerId(1).setBrokerEpoch(epochs.get(1)));
        AllocateProducerIdsResponseData second = send(ApiKeys.ALLOCATE_PRODUCER_IDS,
                new AllocateProducerIdsRequestData().setBrokerId(2).setBrokerEpoch(epochs.get(2)));
        assertThat(first.errorCode()).isZero();
        assertThat(second.errorCode()).isZero();
        assertThat(first.producerIdLen()).isPositive();
        assertThat(second.producerIdStart()).isGreaterThanOrEqualTo(first.producerIdStart() + first.producerIdLen());

        AllocateProducerIdsResponseData stale = send(ApiKeys.ALLOCATE_PRODUCER_IDS,
                new AllocateProducerIdsRequestData().setBrokerId(1).setBrokerEpoch(epochs.get(1) - 1));
        assertThat(Errors.forCode(stale.errorCode())).isEqualTo(Errors.STALE_BROKER_EPOCH);
        AllocateProducerIdsResponseData unknown = send(ApiKeys.ALLOCATE_PRODUCER_IDS,
                new AllocateProducerIdsRequestData().setBrokerId(9).setBrokerEpoch(0));
        assertThat(Errors.forCode(unknown.errorCode())).isEqualTo(Errors.BROKER_ID_NOT_REGISTERED);
    }

    // ---- contract

    @Test
    void onlyControllerCommandsAreHandled() {
        assertThatThrownBy(() -> apis.handle(image, ApiKeys.PRODUCE, new ProduceRequestData(), 0))
                .isInstanceOf(InvalidRequestException.class);
        assertThatThrownBy(() -> apis.handle(image, ApiKeys.CREATE_TOPICS, new DeleteTopicsRequestData(), 0))
                .isInstanceOf(InvalidRequestException.class);
    }

    @Test
    void oldestVersionsGetAnswersTheyCanCarry() {
        createTopic("old", 1);
        // send() encodes each response at the request's version.
        CreateTopicsResponseData created = send(ApiKeys.CREATE_TOPICS, ApiKeys.CREATE_TOPICS.oldestVersion(),
                createTopics(false, topic("older", 1, 1, Map.of("retention.ms", "1"))));
        assertThat(created.topics().find("older").errorCode()).isZero();
        ElectLeadersResponseData elected = send(ApiKeys.ELECT_LEADERS, (short) 0, new ElectLeadersRequestData().setTopicPartitions(null));
        assertThat(elected.replicaElectionResults()).isEmpty();
        PartitionState p = image.topic("old").orElseThrow().partition(0);
        AlterPartitionRequestData v2 = new AlterPartitionRequestData().setBrokerId(p.leader()).setBrokerEpoch(epochs.get(p.leader()))
                .setTopics(List.of(new AlterPartitionRequestData.TopicData().setTopicId(image.topic("old").orElseThrow().id())
                        .setPartitions(List.of(new AlterPartitionRequestData.PartitionData().setPartitionIndex(0)
                                .setLeaderEpoch(p.leaderEpoch()).setPartitionEpoch(p.partitionEpoch()).setNewIsr(List.of(p.leader()))))));
        AlterPartitionResponseData altered = send(ApiKeys.ALTER_PARTITION, (short) 2, v2);
        assertThat(altered.topics().get(0).partitions().get(0).isr()).containsExactly(p.leader());
        AlterPartitionReassignmentsResponseData reassigned = send(ApiKeys.ALTER_PARTITION_REASSIGNMENTS, (short) 0,
                reassignment(true, "old", 0, List.of(p.leader())));
        assertThat(reassigned.responses().get(0).partitions().get(0).errorCode()).isZero();
        ListPartitionReassignmentsResponseData listed = send(ApiKeys.LIST_PARTITION_REASSIGNMENTS, (short) 0,
                new ListPartitionReassignmentsRequestData().setTopics(null));
        assertThat(listed.topics()).isEmpty();
        DeleteTopicsResponseData deleted = send(ApiKeys.DELETE_TOPICS, ApiKeys.DELETE_TOPICS.oldestVersion(),
                new DeleteTopicsRequestData().setTopicNames(List.of("old", "older")));
        assertThat(deleted.responses()).extracting(DeleteTopicsResponseData.DeletableTopicResult::errorCode).containsOnly((short) 0);
    }

    // ---- harness

    /** Sends at the latest version. */
    private <R extends ApiMessage> R send(ApiKeys key, ApiMessage request) {
        return send(key, key.latestVersion(), request);
    }

    /** As a broker would: the request through the envelope, decided, committed as one entry, the reply through the envelope. */
    @SuppressWarnings("unchecked")
    private <R extends ApiMessage> R send(ApiKeys key, short version, ApiMessage request) {
        ControllerEnvelope.Request decoded = ControllerEnvelope.decodeRequest(ControllerEnvelope.encodeRequest(key, version, request));
        ControllerResult<ApiMessage> result = apis.handle(image, decoded.key(), decoded.data(), 1_000);
        if (!result.records().isEmpty()) {
            List<MetadataRecord> committed = MetadataRecordSerde.deserialize(MetadataRecordSerde.serialize(result.records()));
            image = image.apply(image.offset() + 1, committed);
        }
        return (R) ControllerEnvelope.decodeResponse(key, version, ControllerEnvelope.encodeResponse(key, version, result.response()));
    }

    /** Registers and unfences one more broker. */
    private void addBroker(int id) {
        BrokerRegistrationResponseData r = register(id, listener("PLAINTEXT", 9092 + id));
        assertThat(Errors.forCode(r.errorCode())).isEqualTo(Errors.NONE);
        epochs.put(id, r.brokerEpoch());
        assertThat(heartbeat(id, r.brokerEpoch(), false).isFenced()).isFalse();
    }

    /** The snapshot of the image replays into an equal image. */
    private void checkSnapshot() {
        List<MetadataRecord> snapshot = MetadataRecordSerde.deserialize(MetadataRecordSerde.serialize(image.toRecords()));
        assertThat(MetadataImage.fromSnapshot(image.offset(), snapshot)).isEqualTo(image);
    }

    private static AlterPartitionReassignmentsRequestData.ReassignablePartition target(int partition, List<Integer> replicas) {
        return new AlterPartitionReassignmentsRequestData.ReassignablePartition().setPartitionIndex(partition).setReplicas(replicas);
    }

    private static AlterPartitionReassignmentsRequestData reassignment(boolean allowRfChange, String topic, int partition,
                                                                       List<Integer> replicas) {
        return new AlterPartitionReassignmentsRequestData().setAllowReplicationFactorChange(allowRfChange).setTopics(List.of(
                new AlterPartitionReassignmentsRequestData.ReassignableTopic().setName(topic).setPartitions(List.of(target(partition, replicas)))));
    }

    /** One AlterPartitionReassignments for one partition (null replicas: cancel); that partition's error. */
    private Errors reassign(String topic, int partition, List<Integer> replicas) {
        AlterPartitionReassignmentsResponseData r = send(ApiKeys.ALTER_PARTITION_REASSIGNMENTS, reassignment(true, topic, partition, replicas));
        assertThat(r.errorCode()).isZero();
        return Errors.forCode(r.responses().get(0).partitions().get(0).errorCode());
    }

    /** ListPartitionReassignments, one line per partition. */
    private List<String> listReassignments(List<ListPartitionReassignmentsRequestData.ListPartitionReassignmentsTopics> topics) {
        ListPartitionReassignmentsResponseData r = send(ApiKeys.LIST_PARTITION_REASSIGNMENTS,
                new ListPartitionReassignmentsRequestData().setTopics(topics));
        assertThat(r.errorCode()).isZero();
        List<String> out = new ArrayList<>();
        r.topics().forEach(t -> t.partitions().forEach(p -> out.add(t.name() + "-" + p.partitionIndex() + " replicas=" + p.replicas()
                + " adding=" + p.addingReplicas() + " removing=" + p.removingReplicas())));
        return out;
    }

    /** Decides without committing. */
    private ControllerResult<ApiMessage> decide(ApiKeys key, ApiMessage request) {
        return apis.handle(image, key, request, 1_000);
    }

    private BrokerRegistrationResponseData register(int id, BrokerRegistrationRequestData.Listener... listeners) {
        BrokerRegistrationRequestData.ListenerCollection collection = new BrokerRegistrationRequestData.ListenerCollection();
        for (BrokerRegistrationRequestData.Listener l : listeners) {
            collection.add(l);
        }
        return send(ApiKeys.BROKER_REGISTRATION, new BrokerRegistrationRequestData().setBrokerId(id).setClusterId("c")
                .setIncarnationId(new Uuid(random.nextLong(), random.nextLong())).setListeners(collection).setRack(null));
    }

    private static BrokerRegistrationRequestData.Listener listener(String name, int port) {
        return new BrokerRegistrationRequestData.Listener().setName(name).setHost("127.0.0.1").setPort(port).setSecurityProtocol((short) 0);
    }

    private BrokerHeartbeatResponseData heartbeat(int id, long epoch, boolean wantFence) {
        return send(ApiKeys.BROKER_HEARTBEAT, new BrokerHeartbeatRequestData().setBrokerId(id).setBrokerEpoch(epoch)
                .setCurrentMetadataOffset(image.offset()).setWantFence(wantFence));
    }

    private TopicImage createTopic(String name, int partitions) {
        return createTopic(name, partitions, Map.of());
    }

    private TopicImage createTopic(String name, int partitions, Map<String, String> configs) {
        CreateTopicsResponseData r = send(ApiKeys.CREATE_TOPICS, createTopics(false, topic(name, partitions, 3, configs)));
        assertThat(r.topics().find(name).errorCode()).isZero();
        return image.topic(name).orElseThrow();
    }

    @SafeVarargs
    private TopicImage createTopicWithAssignment(String name, List<Integer>... replicas) {
        CreateTopicsRequestData.CreatableTopic t = topic(name, -1, -1, Map.of());
        for (int p = 0; p < replicas.length; p++) {
            t.assignments().add(new CreateTopicsRequestData.CreatableReplicaAssignment().setPartitionIndex(p).setBrokerIds(replicas[p]));
        }
        CreateTopicsResponseData r = send(ApiKeys.CREATE_TOPICS, createTopics(false, t));
        assertThat(r.topics().find(name).errorCode()).isZero();
        return image.topic(name).orElseThrow();
    }

    private static CreateTopicsRequestData.CreatableTopic topic(String name, int partitions, int rf, Map<String, String> configs) {
        CreateTopicsRequestData.CreatableTopic t = new CreateTopicsRequestData.CreatableTopic().setName(name)
                .setNumPartitions(partitions).setReplicationFactor((short) rf);
        configs.forEach((k, v) -> t.configs().add(new CreateTopicsRequestData.CreatableTopicConfig().setName(k).setValue(v)));
        return t;
    }

    private static CreateTopicsRequestData createTopics(boolean validateOnly, CreateTopicsRequestData.CreatableTopic... topics) {
        CreateTopicsRequestData req = new CreateTopicsRequestData().setValidateOnly(validateOnly);
        for (CreateTopicsRequestData.CreatableTopic t : topics) {
            req.topics().add(t);
        }
        return req;
    }

    private static CreatePartitionsRequestData createPartitions(boolean validateOnly,
                                                                CreatePartitionsRequestData.CreatePartitionsTopic... topics) {
        CreatePartitionsRequestData req = new CreatePartitionsRequestData().setValidateOnly(validateOnly);
        for (CreatePartitionsRequestData.CreatePartitionsTopic t : topics) {
            req.topics().add(t);
        }
        return req;
    }

    private AlterPartitionRequestData alterPartitionRequest(int sender, Uuid topicId, PartitionState seen, List<Integer> isr) {
        List<AlterPartitionRequestData.BrokerState> members = new ArrayList<>();
        isr.forEach(b -> members.add(new AlterPartitionRequestData.BrokerState().setBrokerId(b).setBrokerEpoch(epochs.get(b))));
        return new AlterPartitionRequestData().setBrokerId(sender).setBrokerEpoch(epochs.get(sender)).setTopics(new ArrayList<>(List.of(
                new AlterPartitionRequestData.TopicData().setTopicId(topicId).setPartitions(new ArrayList<>(List.of(
                        new AlterPartitionRequestData.PartitionData().setPartitionIndex(seen.partition())
                                .setLeaderEpoch(seen.leaderEpoch()).setPartitionEpoch(seen.partitionEpoch())
                                .setNewIsrWithEpochs(members)))))));
    }

    /** One AlterPartition for one partition, based on the state {@code seen}; returns that partition's answer. */
    private AlterPartitionResponseData.PartitionData alterIsr(int sender, Uuid topicId, PartitionState seen, List<Integer> isr) {
        AlterPartitionResponseData r = send(ApiKeys.ALTER_PARTITION, alterPartitionRequest(sender, topicId, seen, isr));
        assertThat(r.errorCode()).isZero();
        return r.topics().get(0).partitions().get(0);
    }

    /** One IncrementalAlterConfigs on one topic; its error. */
    private Errors alterTopicConfig(String topic, IncrementalAlterConfigsRequestData.AlterableConfig... ops) {
        IncrementalAlterConfigsResponseData r = send(ApiKeys.INCREMENTAL_ALTER_CONFIGS, incremental(false, resource(TOPIC, topic, ops)));
        return Errors.forCode(r.responses().get(0).errorCode());
    }

    private static IncrementalAlterConfigsRequestData incremental(boolean validateOnly,
                                                                  IncrementalAlterConfigsRequestData.AlterConfigsResource... resources) {
        IncrementalAlterConfigsRequestData req = new IncrementalAlterConfigsRequestData().setValidateOnly(validateOnly);
        for (IncrementalAlterConfigsRequestData.AlterConfigsResource r : resources) {
            req.resources().add(r);
        }
        return req;
    }

    private static IncrementalAlterConfigsRequestData.AlterConfigsResource resource(byte type, String name,
                                                                                   IncrementalAlterConfigsRequestData.AlterableConfig... ops) {
        IncrementalAlterConfigsRequestData.AlterConfigsResource r = new IncrementalAlterConfigsRequestData.AlterConfigsResource()
                .setResourceType(type).setResourceName(name);
        for (IncrementalAlterConfigsRequestData.AlterableConfig op : ops) {
            r.configs().add(op);
        }
        return r;
    }

    private static IncrementalAlterConfigsRequestData.AlterableConfig op(String key, byte op, String value) {
        return new IncrementalAlterConfigsRequestData.AlterableConfig().setName(key).setConfigOperation(op).setValue(value);
    }

    private static ConfigResource topicResource(String name) {
        return new ConfigResource(ConfigResource.Type.TOPIC, name);
    }
}
