package dev.varve.broker;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewPartitionReassignment;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ElectionNotNeededException;
import org.apache.kafka.common.errors.InvalidReplicaAssignmentException;
import org.apache.kafka.common.errors.NoReassignmentInProgressException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Leader elections and reassignments asked of a single node, with the stock Admin client: Kafka's answers for one broker. */
class SingleNodeLeadershipTest {
    @TempDir
    static File dir;
    static Broker broker;
    static Admin admin;
    static int self;

    @BeforeAll
    static void start() throws Exception {
        broker = Broker.start(BrokerConfig.from(Map.of("listeners", "PLAINTEXT://127.0.0.1:0", "log.dirs", dir.getAbsolutePath())));
        admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers()));
        admin.createTopics(List.of(new NewTopic("led", 3, (short) 1))).all().get(30, TimeUnit.SECONDS);
        self = admin.describeCluster().nodes().get().iterator().next().id();
    }

    @AfterAll
    static void stop() throws Exception {
        admin.close();
        broker.close();
    }

    @Test
    void electionsAreNeverNeededAndUnknownPartitionsAreNamed() throws Exception {
        TopicPartition p1 = new TopicPartition("led", 1);
        TopicPartition missing = new TopicPartition("led", 7);
        for (ElectionType type : ElectionType.values()) {
            Map<TopicPartition, Optional<Throwable>> r = admin.electLeaders(type, Set.of(p1, missing)).partitions().get(30, TimeUnit.SECONDS);
            assertThat(r.get(p1)).containsInstanceOf(ElectionNotNeededException.class);
            assertThat(r.get(missing)).containsInstanceOf(UnknownTopicOrPartitionException.class);
        }
        // all partitions: none needs an election, and Kafka's controller lists only those that did
        assertThat(admin.electLeaders(ElectionType.PREFERRED, null).partitions().get(30, TimeUnit.SECONDS)).isEmpty();
    }

    @Test
    void noReassignmentIsInProgressAndOnlyThisNodeCanHoldAReplica() throws Exception {
        assertThat(admin.listPartitionReassignments().reassignments().get(30, TimeUnit.SECONDS)).isEmpty();
        TopicPartition p0 = new TopicPartition("led", 0);
        admin.alterPartitionReassignments(Map.of(p0, Optional.of(new NewPartitionReassignment(List.of(self))))).all().get(30, TimeUnit.SECONDS);
        assertThatThrownBy(() -> admin.alterPartitionReassignments(Map.of(p0,
                Optional.of(new NewPartitionReassignment(List.of(self, self + 1))))).all().get(30, TimeUnit.SECONDS))
                .isInstanceOf(ExecutionException.class).hasCauseInstanceOf(InvalidReplicaAssignmentException.class)
                .hasMessageContaining("single node");
        assertThatThrownBy(() -> admin.alterPartitionReassignments(Map.of(p0, Optional.empty())).all().get(30, TimeUnit.SECONDS))
                .hasCauseInstanceOf(NoReassignmentInProgressException.class);
        assertThatThrownBy(() -> admin.alterPartitionReassignments(Map.of(new TopicPartition("nope", 0),
                Optional.of(new NewPartitionReassignment(List.of(self))))).all().get(30, TimeUnit.SECONDS))
                .hasCauseInstanceOf(UnknownTopicOrPartitionException.class);
        assertThat(admin.describeTopics(List.of("led")).allTopicNames().get().get("led").partitions().get(0).replicas())
                .extracting(n -> n.id()).containsExactly(self);
    }
}
