package dev.varve.tests;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import static dev.varve.tests.GroupAssertions.awaitAssignment;
import static dev.varve.tests.GroupAssertions.awaitCommitted;
import static dev.varve.tests.GroupAssertions.committed;
import static dev.varve.tests.GroupAssertions.consumptionCounts;
import static dev.varve.tests.GroupAssertions.describe;
import static dev.varve.tests.GroupAssertions.produced;
import static dev.varve.tests.GroupAssertions.sample;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Committed offsets survive a broker process stopped with SIGTERM and killed with SIGKILL: a group
 * resumes exactly where its members committed (no record lost, none read twice), a member that
 * stays up while the broker is killed carries on afterwards, and an offsets-only group keeps its
 * offsets and their metadata.
 *
 * <p>Runs a Varve process ({@link VarveProcess}); with {@code -Dvarve.tests.bootstrap} it needs
 * {@code -Dvarve.tests.peer=PATH} (the peer Kafka script) to restart that broker, and is skipped otherwise.
 */
@Timeout(300)
class ConsumerGroupRestartTest {
    private static final int PARTITIONS = 6;

    @TempDir
    Path work;

    private BrokerProcess startBroker() throws Exception {
        if (TestBroker.external()) {
            assumeTrue(PeerKafkaNode.available(), "an external broker can be restarted only with -Dvarve.tests.peer");
            return new PeerKafkaNode(TestBroker.EXTERNAL_BOOTSTRAP);
        }
        return VarveProcess.start(work, work.resolve("data"), TestBroker.FAST_GROUPS);
    }

    @Test
    void committedOffsetsSurviveSigtermAndSigkill() throws Exception {
        RecordFixture fixture = new RecordFixture(TestBroker.unique("restart-groups"), PARTITIONS, 4,
                System.currentTimeMillis() - 600_000L);
        String group = TestBroker.unique("restart-group");
        String simpleGroup = TestBroker.unique("restart-simple");
        Map<TopicPartition, OffsetAndMetadata> simpleCommits = Map.of(
                fixture.tp(0), new OffsetAndMetadata(7, "seven"), fixture.tp(5), new OffsetAndMetadata(0, ""));
        List<GroupMember> everyone = new ArrayList<>();
        try (BrokerProcess broker = startBroker()) {
            try {
                String bootstrap = broker.bootstrap();
                Clients.createTopic(bootstrap, fixture.topic, PARTITIONS, Map.of());
                produce(bootstrap, fixture, 0, 300);

                // Phase 1: one member reads and commits the first 300 records, then leaves.
                GroupMember first = GroupMember.start(bootstrap, group, "first", fixture, Map.of());
                everyone.add(first);
                try (Admin admin = Clients.admin(bootstrap)) {
                    awaitAssignment(List.of(first), PARTITIONS, PARTITIONS);
                    awaitCommitted(admin, group, Clients.endOffsets(fixture, 300), everyone);
                }
                first.stop(CloseOptions.GroupMembershipOperation.DEFAULT);
                first.assertHealthy();
                try (KafkaConsumer<byte[], byte[]> simple = new KafkaConsumer<>(
                        GroupMember.config(bootstrap, simpleGroup, "simple", Map.of()))) {
                    simple.assign(simpleCommits.keySet());
                    simple.commitSync(simpleCommits, Duration.ofSeconds(30));
                }
                produce(bootstrap, fixture, 300, 600);

                // A clean restart keeps the commits.
                assertThat(broker.stop()).as("exit code after SIGTERM").isZero();
                broker.restart();
                try (Admin admin = Clients.admin(bootstrap)) {
                    assertThat(committed(admin, group)).as("after SIGTERM").isEqualTo(Clients.endOffsets(fixture, 300));
                    assertOffsetsOnlyGroup(admin, simpleGroup, simpleCommits);
                    ConsumerGroupDescription d = describe(admin, group);
                    assertThat(d.groupState()).as("%s", d).isEqualTo(GroupState.EMPTY);
                }

                // Phase 2: a new member resumes at the commits (auto.offset.reset=none: no fallback) and stays
                // up while the broker is killed.
                GroupMember second = GroupMember.start(bootstrap, group, "second", fixture,
                        Map.of(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "none"));
                everyone.add(second);
                try (Admin admin = Clients.admin(bootstrap)) {
                    awaitCommitted(admin, group, Clients.endOffsets(fixture, 600), everyone);
                }
                broker.kill();
                broker.restart();
                try (Admin admin = Clients.admin(bootstrap)) {
                    assertThat(committed(admin, group)).as("after SIGKILL").isEqualTo(Clients.endOffsets(fixture, 600));
                    assertOffsetsOnlyGroup(admin, simpleGroup, simpleCommits);
                }

                // Phase 3: the member that rode through the kill reads what arrives next.
                produce(bootstrap, fixture, 600, 900);
                try (Admin admin = Clients.admin(bootstrap)) {
                    awaitCommitted(admin, group, Clients.endOffsets(fixture, 900), everyone);
                    second.stop(CloseOptions.GroupMembershipOperation.DEFAULT);
                    second.assertHealthy();
                    assertThat(describe(admin, group).groupState()).isEqualTo(GroupState.EMPTY);
                }
                assertThat(broker.stop()).as("exit code after SIGTERM").isZero();
            } catch (Throwable t) {
                t.addSuppressed(new Exception(broker.log()));
                throw t;
            } finally {
                for (GroupMember m : everyone) {
                    m.close();
                }
            }
        }

        Map<GroupMember.Position, Integer> counts = consumptionCounts(everyone);
        Set<GroupMember.Position> missing = new HashSet<>(produced(fixture, 900));
        missing.removeAll(counts.keySet());
        assertThat(missing).as("records never consumed: %s", sample(missing)).isEmpty();
        assertThat(counts.keySet()).hasSize(900);
        Set<GroupMember.Position> twice = new HashSet<>();
        counts.forEach((p, n) -> {
            if (n > 1) {
                twice.add(p);
            }
        });
        everyone.forEach(m -> twice.removeAll(m.failedCommits));
        assertThat(twice).as("committed records read again after a restart: %s", sample(twice)).isEmpty();
        GroupMember first = everyone.get(0);
        assertThat(new HashSet<>(first.consumed)).as("the first member read exactly the first 300")
                .isEqualTo(produced(fixture, 300));
    }

    private static void assertOffsetsOnlyGroup(Admin admin, String group, Map<TopicPartition, OffsetAndMetadata> commits)
            throws Exception {
        assertThat(admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS))
                .as("offsets and metadata of %s", group).isEqualTo(new HashMap<>(commits));
    }

    private static void produce(String bootstrap, RecordFixture fixture, long from, long to) {
        try (KafkaProducer<byte[], byte[]> producer = Clients.producer(bootstrap, Map.of())) {
            Clients.produce(producer, fixture, from, to);
        }
    }
}
