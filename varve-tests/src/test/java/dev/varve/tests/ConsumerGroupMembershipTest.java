package dev.varve.tests;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.consumer.CloseOptions;
import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.RangeAssignor;
import org.apache.kafka.clients.consumer.RoundRobinAssignor;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.FencedInstanceIdException;
import org.apache.kafka.common.errors.InconsistentGroupProtocolException;
import org.apache.kafka.common.errors.InvalidSessionTimeoutException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.Timeout;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;

import static dev.varve.tests.GroupAssertions.awaitAssignment;
import static dev.varve.tests.GroupAssertions.awaitCommitted;
import static dev.varve.tests.GroupAssertions.awaitGroup;
import static dev.varve.tests.GroupAssertions.consumptionCounts;
import static dev.varve.tests.GroupAssertions.describe;
import static dev.varve.tests.GroupAssertions.produced;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Group membership beyond join and leave, with stock Java consumers: static members
 * ({@code group.instance.id}) that restart without a rebalance and fence a duplicate instance, a
 * member that stops heartbeating and is removed after its session timeout, and "simple" consumers
 * that use a group only to store offsets ({@code assign()} + {@code commitSync}, no membership).
 */
@Timeout(120)
class ConsumerGroupMembershipTest {
    @RegisterExtension
    static final SharedTestBroker BROKER = new SharedTestBroker();

    private static RecordFixture topicWith(String name, int partitions, long records) throws Exception {
        RecordFixture fixture = new RecordFixture(TestBroker.unique(name), partitions, name.hashCode(),
                System.currentTimeMillis() - 600_000L);
        Clients.createTopic(BROKER.bootstrap(), fixture.topic, partitions, Map.of());
        produce(fixture, 0, records);
        return fixture;
    }

    private static void produce(RecordFixture fixture, long from, long to) {
        try (KafkaProducer<byte[], byte[]> producer = Clients.producer(BROKER.bootstrap(), Map.of())) {
            Clients.produce(producer, fixture, from, to);
        }
    }

    private static Map<String, Object> staticMember(String instanceId) {
        // A session long enough to restart a member in, short enough for the suite.
        return Map.of(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, instanceId,
                ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 10_000);
    }

    private static Map<String, String> memberIdsByInstance(ConsumerGroupDescription d) {
        Map<String, String> out = new TreeMap<>();
        for (MemberDescription m : d.members()) {
            out.put(m.groupInstanceId().orElse("<dynamic " + m.consumerId() + ">"), m.consumerId());
        }
        return out;
    }

    /**
     * A static member (here the group's leader) that closes (no LeaveGroup) and comes back with the
     * same group.instance.id within its session timeout gets its old partitions back in the same
     * generation, and the other member sees no rebalance at all, although the returning instance's
     * subscription metadata differs from the one it last sent (Kafka rebalances only if the group's
     * selected protocol would change; a returning leader gets JoinGroup's skipAssignment). A second instance with the same id fences the first
     * ({@link FencedInstanceIdException}) and takes over its partitions.
     */
    @Test
    void staticMembersRestartWithoutARebalanceAndADuplicateInstanceIsFenced() throws Exception {
        RecordFixture fixture = topicWith("static", 4, 40);
        String group = TestBroker.unique("static-group");
        List<GroupMember> everyone = new ArrayList<>();
        try (Admin admin = Clients.admin(BROKER.bootstrap())) {
            try {
                // s1 first, alone (it becomes the leader), then s2: s1 rejoins, so the subscription it last sent
                // (generation, owned partitions) differs from the one a fresh s1 instance sends.
                GroupMember first = GroupMember.start(BROKER.bootstrap(), group, "s1-first", fixture, staticMember("s1"));
                everyone.add(first);
                awaitAssignment(List.of(first), 4, 4);
                GroupMember other = GroupMember.start(BROKER.bootstrap(), group, "s2", fixture, staticMember("s2"));
                everyone.add(other);
                awaitAssignment(List.of(first, other), 2, 4);
                awaitCommitted(admin, group, Clients.endOffsets(fixture, 40), everyone);
                awaitGroup("a stable group of two static members", everyone).untilAsserted(() -> {
                    ConsumerGroupDescription d = describe(admin, group);
                    assertThat(d.groupState()).as("%s", d).isEqualTo(GroupState.STABLE);
                    assertThat(memberIdsByInstance(d)).as("%s", d)
                            .isEqualTo(Map.of("s1", first.memberId(), "s2", other.memberId()));
                });
                int generation = other.generation();
                assertThat(first.generation()).isEqualTo(generation);
                Set<TopicPartition> s1Partitions = first.assignment();
                int otherAssignedEvents = other.assignedEvents.size();
                int otherRevokedEvents = other.revokedEvents.size();

                // A static member's close sends no LeaveGroup: it stays in the group until its session expires.
                first.stop(CloseOptions.GroupMembershipOperation.DEFAULT);
                first.assertHealthy();
                ConsumerGroupDescription afterClose = describe(admin, group);
                assertThat(afterClose.groupState()).as("%s", afterClose).isEqualTo(GroupState.STABLE);
                assertThat(memberIdsByInstance(afterClose)).as("s1 is still a member: %s", afterClose)
                        .isEqualTo(Map.of("s1", first.memberId(), "s2", other.memberId()));

                GroupMember second = GroupMember.start(BROKER.bootstrap(), group, "s1-second", fixture, staticMember("s1"));
                everyone.add(second);
                awaitGroup("s1 back with its partitions", everyone)
                        .untilAsserted(() -> assertThat(second.assignment()).isEqualTo(s1Partitions));
                assertThat(second.generation()).as("no new generation for a returning static member")
                        .isEqualTo(generation);
                assertThat(second.memberId()).as("the returning instance gets a new member id")
                        .isNotEmpty().isNotEqualTo(first.memberId());
                ConsumerGroupDescription afterReturn = describe(admin, group);
                assertThat(memberIdsByInstance(afterReturn)).as("%s", afterReturn)
                        .isEqualTo(Map.of("s1", second.memberId(), "s2", other.memberId()));

                // A duplicate instance: the newest wins, the older one is fenced.
                GroupMember third = GroupMember.start(BROKER.bootstrap(), group, "s1-third", fixture, staticMember("s1"));
                everyone.add(third);
                awaitGroup("the duplicate instance takes over s1's partitions", List.of(other, third))
                        .untilAsserted(() -> assertThat(third.assignment()).isEqualTo(s1Partitions));
                awaitGroup("the older s1 instance is fenced", List.of(other, third)).untilAsserted(() -> {
                    assertThat(second.finished()).isTrue();
                    assertThat(second.failure()).isInstanceOf(FencedInstanceIdException.class);
                });
                assertThat(third.generation()).isEqualTo(generation);

                // Records keep flowing to the group as it is now.
                produce(fixture, 40, 80);
                awaitCommitted(admin, group, Clients.endOffsets(fixture, 80), List.of(other, third));

                assertThat(other.generation()).as("s2 saw no rebalance at all").isEqualTo(generation);
                assertThat(other.assignedEvents).as("s2's assignment callbacks").hasSize(otherAssignedEvents);
                assertThat(other.revokedEvents).as("s2's revocation callbacks").hasSize(otherRevokedEvents);
                other.assertHealthy();
                third.assertHealthy();

                // LeaveGroup for static members (close with LEAVE_GROUP): the group empties at once.
                third.stop(CloseOptions.GroupMembershipOperation.LEAVE_GROUP);
                other.stop(CloseOptions.GroupMembershipOperation.LEAVE_GROUP);
                ConsumerGroupDescription left = describe(admin, group);
                assertThat(left.groupState()).as("%s", left).isEqualTo(GroupState.EMPTY);
                assertThat(left.members()).as("%s", left).isEmpty();
            } finally {
                for (GroupMember m : everyone) {
                    m.close();
                }
            }
        }
        Map<GroupMember.Position, Integer> counts = consumptionCounts(everyone);
        assertThat(counts.keySet()).as("every record consumed").isEqualTo(produced(fixture, 80));
        assertThat(counts.values()).as("each record consumed once").containsOnly(1);
    }

    /**
     * A member that stops heartbeating without LeaveGroup (a crashed process) stays in the group
     * for its session timeout, then is removed, and its partitions go to the remaining member.
     */
    @Test
    void aMemberThatStopsHeartbeatingIsRemovedAfterItsSessionTimeout() throws Exception {
        RecordFixture fixture = topicWith("session", 2, 20);
        String group = TestBroker.unique("session-group");
        int sessionTimeoutMs = 6_000;
        Map<String, Object> config = Map.of(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, sessionTimeoutMs);
        try (Admin admin = Clients.admin(BROKER.bootstrap());
             GroupMember survivor = GroupMember.start(BROKER.bootstrap(), group, "survivor", fixture, config);
             GroupMember crashed = GroupMember.start(BROKER.bootstrap(), group, "crashed", fixture, config)) {
            awaitAssignment(List.of(survivor, crashed), 1, 2);

            long stoppedAt = System.nanoTime();
            crashed.stop(CloseOptions.GroupMembershipOperation.REMAIN_IN_GROUP);
            crashed.assertHealthy();
            ConsumerGroupDescription justAfter = describe(admin, group);
            assertThat(justAfter.members()).as("no LeaveGroup, so still two members: %s", justAfter).hasSize(2);

            awaitGroup("the survivor takes both partitions", List.of(survivor))
                    .untilAsserted(() -> assertThat(survivor.assignment()).hasSize(2));
            long elapsedMs = (System.nanoTime() - stoppedAt) / 1_000_000;
            // Its last heartbeat was at most one interval (1 s) before it stopped; the survivor learns of the
            // rebalance on its next heartbeat (1 s) and the rejoin takes a moment.
            assertThat(elapsedMs).as("ms until the silent member's partitions moved (session.timeout.ms=%d)",
                    sessionTimeoutMs).isBetween(sessionTimeoutMs - 1_500L, sessionTimeoutMs + 6_000L);
            ConsumerGroupDescription after = describe(admin, group);
            assertThat(after.members()).as("%s", after).hasSize(1);
            assertThat(after.members().iterator().next().clientId()).isEqualTo("survivor");
            awaitCommitted(admin, group, Clients.endOffsets(fixture, 20), List.of(survivor));
        }
    }

    /**
     * A consumer with a group.id but no subscription ({@code assign()}) commits and fetches offsets
     * with no membership; the group shows as Empty with no protocol; another such consumer resumes at
     * exactly the committed offsets. Committing that way into a group that has live members is refused
     * with {@link CommitFailedException} (UNKNOWN_MEMBER_ID).
     */
    @Test
    void simpleConsumersCommitOffsetsWithoutJoining() throws Exception {
        RecordFixture fixture = topicWith("simple", 3, 30);
        String group = TestBroker.unique("simple-group");
        List<TopicPartition> all = fixture.allPartitions();
        TopicPartition p0 = fixture.tp(0);
        TopicPartition p1 = fixture.tp(1);
        TopicPartition p2 = fixture.tp(2);
        Map<TopicPartition, OffsetAndMetadata> commits = Map.of(
                p0, new OffsetAndMetadata(4, "four"),
                p1, new OffsetAndMetadata(10, ""),
                p2, new OffsetAndMetadata(0, "from the start"));
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(
                GroupMember.config(BROKER.bootstrap(), group, "simple-1", Map.of()))) {
            consumer.assign(all);
            assertThat(consumer.committed(Set.copyOf(all), Duration.ofSeconds(30)).values())
                    .as("nothing committed yet").allMatch(Objects::isNull);
            consumer.commitSync(commits, Duration.ofSeconds(30));
            assertThat(consumer.committed(Set.copyOf(all), Duration.ofSeconds(30))).isEqualTo(commits);
        }
        try (Admin admin = Clients.admin(BROKER.bootstrap())) {
            assertThat(admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get())
                    .isEqualTo(commits);
            ConsumerGroupDescription d = describe(admin, group);
            assertThat(d.groupState()).as("%s", d).isEqualTo(GroupState.EMPTY);
            assertThat(d.members()).as("%s", d).isEmpty();
            assertThat(d.isSimpleConsumerGroup()).as("no protocol type: %s", d).isTrue();
            assertThat(d.partitionAssignor()).as("%s", d).isEmpty();
        }

        // Another consumer resumes exactly there (auto.offset.reset=none: no fallback to a reset).
        Map<TopicPartition, Long> ends = Clients.endOffsets(fixture, 30);
        Set<GroupMember.Position> read = new HashSet<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(GroupMember.config(BROKER.bootstrap(), group,
                "simple-2", Map.of(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "none")))) {
            consumer.assign(all);
            Map<TopicPartition, Long> positions = new HashMap<>();
            for (TopicPartition tp : all) {
                positions.put(tp, consumer.position(tp, Duration.ofSeconds(30)));
            }
            assertThat(positions).isEqualTo(Map.of(p0, 4L, p1, 10L, p2, 0L));
            long deadline = System.currentTimeMillis() + 30_000;
            while (all.stream().anyMatch(tp -> consumer.position(tp) < ends.get(tp))) {
                assertThat(System.currentTimeMillis()).as("time to read to the end").isLessThan(deadline);
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(100))) {
                    fixture.verify(r);
                    assertThat(read.add(new GroupMember.Position(r.partition(), r.offset()))).isTrue();
                }
            }
        }
        Set<GroupMember.Position> expected = new HashSet<>();
        for (long o = 4; o < 10; o++) {
            expected.add(new GroupMember.Position(0, o));
        }
        for (long o = 0; o < 10; o++) {
            expected.add(new GroupMember.Position(2, o));
        }
        assertThat(read).as("exactly the records after the committed offsets").isEqualTo(expected);

        // A group with a live member does not take commits from outside its generation.
        String busy = TestBroker.unique("busy-group");
        try (GroupMember member = GroupMember.start(BROKER.bootstrap(), busy, "member", fixture, Map.of());
             KafkaConsumer<byte[], byte[]> outsider = new KafkaConsumer<>(
                     GroupMember.config(BROKER.bootstrap(), busy, "outsider", Map.of()))) {
            awaitAssignment(List.of(member), 3, 3);
            outsider.assign(List.of(p0));
            assertThatThrownBy(() -> outsider.commitSync(Map.of(p0, new OffsetAndMetadata(1)), Duration.ofSeconds(30)))
                    .isInstanceOf(CommitFailedException.class);
            member.assertHealthy();
        }
    }

    /**
     * JoinGroup refusals reach the application as Kafka's exceptions: a session timeout outside the
     * broker's [group.min.session.timeout.ms, group.max.session.timeout.ms] (6 s and 30 min by default)
     * is INVALID_SESSION_TIMEOUT; a member whose assignors share none with the group's is
     * INCONSISTENT_GROUP_PROTOCOL.
     */
    @Test
    void joinGroupRefusesABadSessionTimeoutAndAnInconsistentProtocol() throws Exception {
        RecordFixture fixture = topicWith("refusals", 2, 0);
        String group = TestBroker.unique("refusals-group");
        for (int sessionTimeoutMs : new int[]{1_000, 1_800_001}) {
            try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(GroupMember.config(BROKER.bootstrap(), group,
                    "bad-session", Map.of(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, sessionTimeoutMs,
                            ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 300)))) {
                consumer.subscribe(List.of(fixture.topic));
                assertThat(pollUntilFailure(consumer)).as("session.timeout.ms=%d", sessionTimeoutMs)
                        .isInstanceOf(InvalidSessionTimeoutException.class);
            }
        }
        try (GroupMember ranged = GroupMember.start(BROKER.bootstrap(), group, "ranged", fixture, Map.of(
                ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, RangeAssignor.class.getName()));
             KafkaConsumer<byte[], byte[]> other = new KafkaConsumer<>(GroupMember.config(BROKER.bootstrap(), group, "round",
                     Map.of(ConsumerConfig.PARTITION_ASSIGNMENT_STRATEGY_CONFIG, RoundRobinAssignor.class.getName())))) {
            awaitAssignment(List.of(ranged), 2, 2);
            other.subscribe(List.of(fixture.topic));
            assertThat(pollUntilFailure(other)).isInstanceOf(InconsistentGroupProtocolException.class);
            ranged.assertHealthy();
            assertThat(ranged.assignment()).as("the group is undisturbed").hasSize(2);
        }
    }

    /** Polls until the consumer throws (at most 30 s) and returns what it threw. */
    private static Throwable pollUntilFailure(KafkaConsumer<byte[], byte[]> consumer) {
        long deadline = System.currentTimeMillis() + 30_000;
        while (System.currentTimeMillis() < deadline) {
            try {
                consumer.poll(Duration.ofMillis(200));
            } catch (RuntimeException e) {
                return e;
            }
        }
        throw new AssertionError("poll did not fail within 30 s");
    }
}
