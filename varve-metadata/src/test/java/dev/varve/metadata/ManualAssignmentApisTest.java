package dev.varve.metadata;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.AlterPartitionReassignmentsRequestData;
import org.apache.kafka.common.message.AlterPartitionReassignmentsResponseData;
import org.apache.kafka.common.message.CreatePartitionsRequestData;
import org.apache.kafka.common.message.CreatePartitionsResponseData;
import org.apache.kafka.common.message.CreateTopicsRequestData;
import org.apache.kafka.common.message.CreateTopicsResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.Errors;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * CreateTopics and CreatePartitions with manual replica assignments, as the controller answers them:
 * request bodies through the envelope, decided on the image, committed, answered through the envelope.
 * Brokers 0, 1, 2 are unfenced; broker 3 is registered and fenced. Messages are Kafka 4.4's.
 */
class ManualAssignmentApisTest {
    private final TestCluster c = new TestCluster(ControllerConfig.defaults()).withBrokers(3, 0);
    private final ControllerApis apis = new ControllerApis(c.controller);

    @BeforeEach
    void fencedBroker3() {
        c.register(3, null, false);
        assertThat(c.image.broker(3).orElseThrow().fenced()).isTrue();
    }

    @Test
    void eachTopicIsRefusedForItsOwnReasonInKafkasOrder() {
        assertThat(errorOf(send(create(false, topic("taken", -1, -1, List.of(0)))), "taken")).isEqualTo("NONE");
        CreateTopicsRequestData.CreatableTopic badConfig = topic("badconfig", -1, -1, List.of(0, 0));
        badConfig.configs().add(new CreateTopicsRequestData.CreatableTopicConfig().setName("min.insync.replicas").setValue("0"));
        CreateTopicsResponseData r = send(create(false,
                topic("taken", -1, -1, List.of(0, 0)), // exists: reported before its assignment
                badConfig, // configs before the assignment
                topic("both", 2, 2, List.of(0, 1)),
                topic("rf", -1, 2, List.of(0, 1)),
                topic("np", 2, -1, List.of(0, 1)),
                withIndexes(topic("twice", -1, -1, List.of(0, 1), List.of(1, 2)), 0, 0),
                withIndexes(topic("gap", -1, -1, List.of(0, 1), List.of(1, 2)), 0, 2),
                topic("empty", -1, -1, List.of(0), List.of()),
                topic("repeated", -1, -1, List.of(1, 1)),
                topic("unknown", -1, -1, List.of(1, 7)),
                topic("uneven", -1, -1, List.of(0, 1), List.of(2)),
                topic("fenced", -1, -1, List.of(0), List.of(3)),
                topic("fine", -1, -1, List.of(2, 0), List.of(1, 2))));
        assertThat(errorOf(r, "taken")).startsWith("TOPIC_ALREADY_EXISTS");
        assertThat(errorOf(r, "badconfig")).startsWith("INVALID_CONFIG");
        assertThat(errorOf(r, "both")).isEqualTo("INVALID_REQUEST A manual partition assignment was specified, but replication factor was not set to -1.");
        assertThat(errorOf(r, "rf")).isEqualTo("INVALID_REQUEST A manual partition assignment was specified, but replication factor was not set to -1.");
        assertThat(errorOf(r, "np")).isEqualTo("INVALID_REQUEST A manual partition assignment was specified, but numPartitions was not set to -1.");
        assertThat(errorOf(r, "twice")).isEqualTo("INVALID_REPLICA_ASSIGNMENT Found multiple manual partition assignments for partition 0");
        assertThat(errorOf(r, "gap")).isEqualTo("INVALID_REPLICA_ASSIGNMENT partitions should be a consecutive 0-based integer sequence");
        assertThat(errorOf(r, "empty")).isEqualTo("INVALID_REPLICA_ASSIGNMENT The manual partition assignment includes an empty replica list.");
        assertThat(errorOf(r, "repeated")).isEqualTo("INVALID_REPLICA_ASSIGNMENT The manual partition assignment includes the broker 1 more than once.");
        assertThat(errorOf(r, "unknown")).isEqualTo(
                "INVALID_REPLICA_ASSIGNMENT The manual partition assignment includes broker 7, but no such broker is registered.");
        assertThat(errorOf(r, "uneven")).isEqualTo("INVALID_REPLICA_ASSIGNMENT The manual partition assignment includes a partition "
                + "with 1 replica(s), but this is not consistent with previous partitions, which have 2 replica(s).");
        assertThat(errorOf(r, "fenced")).isEqualTo("INVALID_REPLICA_ASSIGNMENT All brokers specified in the manual partition "
                + "assignment for partition 1 are fenced or in controlled shutdown.");
        assertThat(errorOf(r, "fine")).isEqualTo("NONE");
        assertThat(r.topics()).filteredOn(t -> t.errorCode() != 0)
                .allSatisfy(t -> assertThat(t.numPartitions()).isEqualTo(-1));
        assertThat(c.image.topicsByName()).containsOnlyKeys("taken", "fine");
        c.checkReplay();
    }

    @Test
    void theTopicHasExactlyTheAssignedReplicasAndTheFirstActiveOneLeads() {
        // given in reverse order of partitions
        CreateTopicsResponseData r = send(create(false, withIndexes(
                topic("placed", -1, -1, List.of(0, 1), List.of(1, 2), List.of(2, 0)), 2, 1, 0)));
        CreateTopicsResponseData.CreatableTopicResult result = r.topics().find("placed");
        assertThat(Errors.forCode(result.errorCode())).isEqualTo(Errors.NONE);
        assertThat(result.numPartitions()).isEqualTo(3);
        assertThat(result.replicationFactor()).isEqualTo((short) 2);
        assertThat(result.topicId()).isNotEqualTo(Uuid.ZERO_UUID);
        TopicImage t = c.image.topic("placed").orElseThrow();
        assertThat(t.partitions()).extracting(p -> p.replicas() + " leader=" + p.leader() + " isr=" + p.isr())
                .containsExactly("[2, 0] leader=2 isr=[2, 0]", "[1, 2] leader=1 isr=[1, 2]", "[0, 1] leader=0 isr=[0, 1]");
        assertThat(t.partitions()).allSatisfy(p -> {
            assertThat(p.leaderEpoch()).isZero();
            assertThat(p.partitionEpoch()).isZero();
        });

        // a fenced broker is a replica, out of the ISR; the next replica leads (as Kafka does)
        send(create(false, topic("halfFenced", -1, -1, List.of(3, 1))));
        PartitionState p = c.image.topic("halfFenced").orElseThrow().partition(0);
        assertThat(p.replicas()).containsExactly(3, 1);
        assertThat(p.isr()).containsExactly(1);
        assertThat(p.leader()).isEqualTo(1);
        c.checkReplay();
    }

    @Test
    void validateOnlyChecksTheAssignmentAndWritesNothing() {
        ControllerResult<ApiMessage> ok = apis.handle(c.image, ApiKeys.CREATE_TOPICS,
                create(true, topic("dry", -1, -1, List.of(0, 1, 2), List.of(1, 2, 0))), c.nowMs);
        assertThat(ok.records()).isEmpty();
        CreateTopicsResponseData.CreatableTopicResult result = ((CreateTopicsResponseData) ok.response()).topics().find("dry");
        assertThat(Errors.forCode(result.errorCode())).isEqualTo(Errors.NONE);
        assertThat(result.numPartitions()).isEqualTo(2);
        assertThat(result.replicationFactor()).isEqualTo((short) 3);

        ControllerResult<ApiMessage> bad = apis.handle(c.image, ApiKeys.CREATE_TOPICS,
                create(true, topic("dry", -1, -1, List.of(0, 9))), c.nowMs);
        assertThat(bad.records()).isEmpty();
        assertThat(errorOf((CreateTopicsResponseData) bad.response(), "dry")).startsWith("INVALID_REPLICA_ASSIGNMENT");
    }

    @Test
    void createPartitionsChecksTheNewPartitionsAssignment() {
        send(create(false, topic("grow", -1, -1, List.of(0, 1), List.of(1, 2))));
        assertThat(grow("grow", 4, List.of(List.of(0, 1))))
                .isEqualTo("INVALID_REPLICA_ASSIGNMENT Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified.");
        assertThat(grow("grow", 3, List.of()))
                .isEqualTo("INVALID_REPLICA_ASSIGNMENT Attempted to add 1 additional partition(s), but only 0 assignment(s) were specified.");
        assertThat(grow("grow", 2, List.of())).isEqualTo("INVALID_PARTITIONS Topic already has 2 partition(s).");
        assertThat(grow("grow", 3, List.of(List.of(0)))).isEqualTo("INVALID_REPLICA_ASSIGNMENT The manual partition assignment "
                + "includes a partition with 1 replica(s), but this is not consistent with previous partitions, which have 2 replica(s).");
        assertThat(grow("grow", 3, List.of(List.of(0, 0))))
                .isEqualTo("INVALID_REPLICA_ASSIGNMENT The manual partition assignment includes the broker 0 more than once.");
        assertThat(grow("grow", 3, List.of(List.of(7, 0))))
                .isEqualTo("INVALID_REPLICA_ASSIGNMENT The manual partition assignment includes broker 7, but no such broker is registered.");
        assertThat(grow("grow", 3, List.of(List.of())))
                .isEqualTo("INVALID_REPLICA_ASSIGNMENT The manual partition assignment includes an empty replica list.");
        assertThat(c.image.topic("grow").orElseThrow().partitionCount()).isEqualTo(2);

        send(create(false, topic("single", -1, -1, List.of(0))));
        assertThat(grow("single", 3, List.of(List.of(1), List.of(3)))).isEqualTo("INVALID_REPLICA_ASSIGNMENT All brokers "
                + "specified in the manual partition assignment for partition 2 are fenced or in controlled shutdown.");

        CreatePartitionsResponseData dry = (CreatePartitionsResponseData) apis.handle(c.image, ApiKeys.CREATE_PARTITIONS,
                createPartitions(true, "grow", 4, List.of(List.of(3, 1), List.of(2, 0))), c.nowMs).response();
        assertThat(dry.results().get(0).errorCode()).isZero();
        assertThat(c.image.topic("grow").orElseThrow().partitionCount()).isEqualTo(2);

        assertThat(grow("grow", 4, List.of(List.of(3, 1), List.of(2, 0)))).isEqualTo("NONE");
        TopicImage t = c.image.topic("grow").orElseThrow();
        assertThat(t.partitions()).extracting(p -> p.replicas() + " leader=" + p.leader() + " isr=" + p.isr())
                .containsExactly("[0, 1] leader=0 isr=[0, 1]", "[1, 2] leader=1 isr=[1, 2]",
                        "[3, 1] leader=1 isr=[1]", "[2, 0] leader=2 isr=[2, 0]");
        c.checkReplay();
    }

    @Test
    void reassignmentTargetsFollowTheSameReplicaRules() {
        send(create(false, topic("moving", -1, -1, List.of(0, 1))));
        AlterPartitionReassignmentsResponseData r = send(ApiKeys.ALTER_PARTITION_REASSIGNMENTS,
                new AlterPartitionReassignmentsRequestData().setTopics(List.of(
                        new AlterPartitionReassignmentsRequestData.ReassignableTopic().setName("moving").setPartitions(List.of(
                                new AlterPartitionReassignmentsRequestData.ReassignablePartition().setPartitionIndex(0)
                                        .setReplicas(List.of(2, 9, 2)))))));
        AlterPartitionReassignmentsResponseData.ReassignablePartitionResponse p = r.responses().get(0).partitions().get(0);
        assertThat(Errors.forCode(p.errorCode())).isEqualTo(Errors.INVALID_REPLICA_ASSIGNMENT);
        assertThat(p.errorMessage()).isEqualTo("The manual partition assignment includes the broker 2 more than once.");
    }

    // ---- helpers

    private String grow(String topic, int count, List<List<Integer>> assignments) {
        CreatePartitionsResponseData r = send(ApiKeys.CREATE_PARTITIONS, createPartitions(false, topic, count, assignments));
        CreatePartitionsResponseData.CreatePartitionsTopicResult result = r.results().get(0);
        Errors error = Errors.forCode(result.errorCode());
        return error == Errors.NONE ? "NONE" : error + " " + result.errorMessage();
    }

    private static CreatePartitionsRequestData createPartitions(boolean validateOnly, String topic, int count,
                                                                List<List<Integer>> assignments) {
        List<CreatePartitionsRequestData.CreatePartitionsAssignment> list = new ArrayList<>();
        assignments.forEach(a -> list.add(new CreatePartitionsRequestData.CreatePartitionsAssignment().setBrokerIds(a)));
        CreatePartitionsRequestData req = new CreatePartitionsRequestData().setValidateOnly(validateOnly);
        req.topics().add(new CreatePartitionsRequestData.CreatePartitionsTopic().setName(topic).setCount(count).setAssignments(list));
        return req;
    }

    @SafeVarargs
    private static CreateTopicsRequestData.CreatableTopic topic(String name, int partitions, int rf, List<Integer>... replicas) {
        CreateTopicsRequestData.CreatableTopic t = new CreateTopicsRequestData.CreatableTopic().setName(name)
                .setNumPartitions(partitions).setReplicationFactor((short) rf);
        for (int p = 0; p < replicas.length; p++) {
            t.assignments().add(new CreateTopicsRequestData.CreatableReplicaAssignment().setPartitionIndex(p).setBrokerIds(replicas[p]));
        }
        return t;
    }

    /** Renumbers the topic's assignments, in order. */
    private static CreateTopicsRequestData.CreatableTopic withIndexes(CreateTopicsRequestData.CreatableTopic t, int... indexes) {
        List<CreateTopicsRequestData.CreatableReplicaAssignment> entries = new ArrayList<>(t.assignments());
        t.assignments().clear();
        for (int i = 0; i < entries.size(); i++) {
            t.assignments().add(new CreateTopicsRequestData.CreatableReplicaAssignment().setPartitionIndex(indexes[i])
                    .setBrokerIds(entries.get(i).brokerIds()));
        }
        return t;
    }

    private static CreateTopicsRequestData create(boolean validateOnly, CreateTopicsRequestData.CreatableTopic... topics) {
        CreateTopicsRequestData req = new CreateTopicsRequestData().setValidateOnly(validateOnly);
        for (CreateTopicsRequestData.CreatableTopic t : topics) {
            req.topics().add(t);
        }
        return req;
    }

    private static String errorOf(CreateTopicsResponseData r, String topic) {
        CreateTopicsResponseData.CreatableTopicResult t = r.topics().find(topic);
        Errors error = Errors.forCode(t.errorCode());
        return error == Errors.NONE ? "NONE" : error + " " + t.errorMessage();
    }

    private CreateTopicsResponseData send(CreateTopicsRequestData request) {
        return send(ApiKeys.CREATE_TOPICS, request);
    }

    /** As a broker would: through the envelope at the latest version, decided, committed, answered through the envelope. */
    @SuppressWarnings("unchecked")
    private <R extends ApiMessage> R send(ApiKeys key, ApiMessage request) {
        short version = key.latestVersion();
        ControllerEnvelope.Request decoded = ControllerEnvelope.decodeRequest(ControllerEnvelope.encodeRequest(key, version, request));
        ApiMessage response = c.commit(apis.handle(c.image, decoded.key(), decoded.data(), c.nowMs));
        return (R) ControllerEnvelope.decodeResponse(key, version, ControllerEnvelope.encodeResponse(key, version, response));
    }
}
