package dev.varve.tests;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.CooperativeStickyAssignor;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.consumer.RoundRobinAssignor;
import org.apache.kafka.clients.consumer.StickyAssignor;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static dev.varve.tests.GroupAssertions.assignments;
import static dev.varve.tests.GroupAssertions.awaitAssignment;
import static dev.varve.tests.GroupAssertions.awaitCommitted;
import static dev.varve.tests.GroupAssertions.awaitGroup;
import static dev.varve.tests.GroupAssertions.committed;
import static dev.varve.tests.GroupAssertions.consumptionCounts;
import static dev.varve.tests.GroupAssertions.describe;
import static dev.varve.tests.GroupAssertions.membersByClientId;
import static dev.varve.tests.GroupAssertions.produced;
import static dev.varve.tests.GroupAssertions.sample;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Consumer groups with stock Java consumers (classic group protocol, {@code subscribe()}): three
 * members share a six-partition topic under each client-side assignor; one member leaves with a
 * batch it consumed but never committed and another joins, while records keep arriving. Every
 * record must be consumed, and the only records consumed twice must be uncommitted work.
 *
 * <p>Runs against an in-process Varve broker, or the broker named by {@code -Dvarve.tests.bootstrap}
 * (see {@link TestBroker}). Static membership, session expiry, offsets-only groups and the Admin
 * client's group operations are in {@link ConsumerGroupMembershipTest} and {@link ConsumerGroupAdminTest}.
 */
@Timeout(120)
class ConsumerGroupTest {
    private static final int PARTITIONS = 6;
    private static final int PHASE_ONE_RECORDS = 600;
    private static final int TOTAL_RECORDS = 1_800;

    @RegisterExtension
    static final SharedTestBroker BROKER = new SharedTestBroker();

    static String assignorClass(String name) {
        return switch (name) {
            case "range" -> RangeAssignor.class.getName();
            case "roundrobin" -> RoundRobinAssignor.class.getName();
            case "sticky" -> StickyAssignor.class.getName();
            case "cooperative-sticky" -> CooperativeStickyAssignor.class.getName();
            default -> throw new IllegalArgumentException(name);
        };
    }

    /** The consumer settings of an assignor: a client-side one (classic protocol), or consumer-NAME (KIP-848). */
    static Map<String, Object> groupConfig(String assignor) {
        if (assignor.startsWith("consumer-")) {
            return Map.of(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer",
                    ConsumerConfig.GROUP_REMOTE_ASSIGNOR_CONFIG, assignor.substring("consumer-".length()));
        }
        return Map.of(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, assignorClass(assignor));
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"range", "roundrobin", "sticky", "cooperative-sticky", "consumer-uniform", "consumer-range"})
    void membersLeaveAndJoinWithoutLosingRecords(String assignor) throws Exception {
        String group = TestBroker.unique("group-" + assignor);
        RecordFixture fixture = new RecordFixture(TestBroker.unique("grouped-" + assignor), PARTITIONS,
                assignor.hashCode(), System.currentTimeMillis() - 3_600_000L);
        Clients.createTopic(BROKER.bootstrap(), fixture.topic, PARTITIONS, Map.of());
        try (KafkaProducer<byte[], byte[]> producer = Clients.producer(BROKER.bootstrap(), Map.of())) {
            Clients.produce(producer, fixture, 0, PHASE_ONE_RECORDS);
        }
        Map<String, Object> config = groupConfig(assignor);
        boolean sticky = assignor.contains("sticky") || assignor.equals("consumer-uniform");
        List<GroupMember> everyone = new ArrayList<>();
        try (Admin admin = Clients.admin(BROKER.bootstrap())) {
            try {
                GroupMember a = GroupMember.start(BROKER.bootstrap(), group, "a", fixture, config);
                GroupMember b = GroupMember.start(BROKER.bootstrap(), group, "b", fixture, config);
                GroupMember c = GroupMember.start(BROKER.bootstrap(), group, "c", fixture, config);
                everyone.addAll(List.of(a, b, c));

                // Three members, two partitions each; together they consume and commit phase one.
                awaitAssignment(List.of(a, b, c), 2, PARTITIONS);
                awaitCommitted(admin, group, Clients.endOffsets(fixture, PHASE_ONE_RECORDS), everyone);
                awaitDescribedAs(admin, group, assignor, List.of(a, b, c));
                Map<String, Set<TopicPartition>> initial = assignments(List.of(a, b));

                // Phase two arrives while c leaves with an uncommitted batch and d joins.
                CompletableFuture<Void> producing = CompletableFuture.runAsync(() -> produceSlowly(fixture));
                c.abandonNextBatch();
                c.join();
                c.assertHealthy();
                assertThat(c.abandoned).as("the batch c consumed and did not commit").isNotEmpty();

                awaitAssignment(List.of(a, b), 3, PARTITIONS);
                Map<String, Set<TopicPartition>> afterLeave = assignments(List.of(a, b));
                if (sticky) {
                    for (String m : initial.keySet()) {
                        assertThat(afterLeave.get(m)).as("%s keeps its partitions when c leaves (%s)", m, assignor)
                                .containsAll(initial.get(m));
                    }
                }

                GroupMember d = GroupMember.start(BROKER.bootstrap(), group, "d", fixture, config);
                everyone.add(d);
                awaitAssignment(List.of(a, b, d), 2, PARTITIONS);
                Map<String, Set<TopicPartition>> afterJoin = assignments(List.of(a, b));
                if (sticky) {
                    for (String m : afterLeave.keySet()) {
                        assertThat(afterLeave.get(m)).as("%s gives d partitions but takes none (%s)", m, assignor)
                                .containsAll(afterJoin.get(m));
                    }
                }

                producing.get(60, TimeUnit.SECONDS);
                awaitCommitted(admin, group, Clients.endOffsets(fixture, TOTAL_RECORDS), everyone);
                awaitDescribedAs(admin, group, assignor, List.of(a, b, d));

                for (GroupMember m : List.of(a, b, d)) {
                    m.stop(CloseOptions.GroupMembershipOperation.DEFAULT);
                    m.assertHealthy();
                }
                ConsumerGroupDescription empty = describe(admin, group);
                assertThat(empty.groupState()).as("after every member left: %s", empty).isEqualTo(GroupState.EMPTY);
                assertThat(empty.members()).as("after every member left").isEmpty();
                assertThat(committed(admin, group)).as("commits outlive the members")
                        .isEqualTo(Clients.endOffsets(fixture, TOTAL_RECORDS));
            } finally {
                for (GroupMember m : everyone) {
                    m.close();
                }
            }
        }

        // Every record was consumed; only uncommitted work was consumed twice.
        Map<GroupMember.Position, Integer> counts = consumptionCounts(everyone);
        Set<GroupMember.Position> expected = produced(fixture, TOTAL_RECORDS);
        Set<GroupMember.Position> missing = new HashSet<>(expected);
        missing.removeAll(counts.keySet());
        Set<GroupMember.Position> unexpected = new HashSet<>(counts.keySet());
        unexpected.removeAll(expected);
        assertThat(missing).as("records never consumed: %s", sample(missing)).isEmpty();
        assertThat(unexpected).as("positions that were never produced: %s", sample(unexpected)).isEmpty();

        Set<GroupMember.Position> duplicates = new HashSet<>();
        counts.forEach((p, n) -> {
            if (n > 1) {
                duplicates.add(p);
            }
        });
        Set<GroupMember.Position> uncommitted = new HashSet<>();
        for (GroupMember m : everyone) {
            uncommitted.addAll(m.failedCommits);
            uncommitted.addAll(m.abandoned);
        }
        Set<GroupMember.Position> committedTwice = new HashSet<>(duplicates);
        committedTwice.removeAll(uncommitted);
        assertThat(committedTwice).as("records consumed again although their offsets were committed: %s",
                sample(committedTwice)).isEmpty();
        Set<GroupMember.Position> abandonedNotReread = new HashSet<>();
        everyone.forEach(m -> abandonedNotReread.addAll(m.abandoned));
        abandonedNotReread.removeAll(duplicates);
        assertThat(abandonedNotReread).as("records c consumed but never committed must be consumed again: %s",
                sample(abandonedNotReread)).isEmpty();
        System.out.printf("%s: %d records consumed %d times in all; %d consumed again; uncommitted work: %d records "
                        + "abandoned by c, %d in all (%d failed commits)%n", assignor, TOTAL_RECORDS,
                counts.values().stream().mapToInt(n -> n).sum(), duplicates.size(), abandonedCount(everyone),
                uncommitted.size(), everyone.stream().mapToInt(m -> m.commitFailures.get()).sum());
    }

    private static int abandonedCount(List<GroupMember> members) {
        return members.stream().mapToInt(m -> m.abandoned.size()).sum();
    }

    /** The group as DescribeGroups reports it matches what the members see. */
    private static void awaitDescribedAs(Admin admin, String group, String assignor, List<GroupMember> members) {
        awaitGroup("DescribeGroups of " + group + " agrees with its members", members).untilAsserted(() -> {
            ConsumerGroupDescription d = describe(admin, group);
            boolean kip848 = assignor.startsWith("consumer-");
            assertThat(d.groupState()).as("%s", d).isEqualTo(GroupState.STABLE);
            assertThat(d.type()).as("%s", d).isEqualTo(kip848 ? GroupType.CONSUMER : GroupType.CLASSIC);
            assertThat(d.isSimpleConsumerGroup()).as("%s", d).isFalse();
            assertThat(d.partitionAssignor()).as("%s", d).isEqualTo(kip848 ? assignor.substring("consumer-".length()) : assignor);
            assertThat(membersByClientId(d)).as("%s", d).isEqualTo(assignments(members));
        });
    }

    /** Records [PHASE_ONE_RECORDS, TOTAL_RECORDS) in small chunks over a second or two. */
    private static void produceSlowly(RecordFixture fixture) {
        try (KafkaProducer<byte[], byte[]> producer = Clients.producer(BROKER.bootstrap(),
                Map.of(ProducerConfig.LINGER_MS_CONFIG, 0))) {
            for (long i = PHASE_ONE_RECORDS; i < TOTAL_RECORDS; i += 60) {
                Clients.produce(producer, fixture, i, Math.min(i + 60, TOTAL_RECORDS));
                Thread.sleep(40);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }
}
