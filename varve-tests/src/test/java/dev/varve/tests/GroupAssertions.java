package dev.varve.tests;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.awaitility.core.ConditionFactory;

import java.time.Duration;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/** Waits and checks shared by the consumer-group tests; every wait is bounded. */
final class GroupAssertions {
    /** How long a group may take to settle after a member joins or leaves: several rebalances, with margin. */
    static final Duration SETTLE = Duration.ofSeconds(45);

    private GroupAssertions() {
    }

    /** A bounded wait that stops at once if one of {@code members} has failed. */
    static ConditionFactory awaitGroup(String what, Collection<GroupMember> members) {
        return await(what).atMost(SETTLE).pollInterval(Duration.ofMillis(100))
                .failFast("a member failed", () -> members.forEach(GroupMember::assertHealthy));
    }

    /** Waits until each of {@code members} owns exactly {@code each} partitions and together they own all of the topic's. */
    static void awaitAssignment(Collection<GroupMember> members, int each, int partitions) {
        awaitGroup(members.size() + " members with " + each + " partitions each", members).untilAsserted(() -> {
            int sum = 0;
            Set<TopicPartition> union = new HashSet<>();
            for (GroupMember m : members) {
                assertThat(m.assignment()).as("assignment of %s", m.name).hasSize(each);
                sum += m.assignment().size();
                union.addAll(m.assignment());
            }
            assertThat(union).as("the members' partitions, disjoint").hasSize(sum).hasSize(partitions);
        });
    }

    /** Partition → committed offset of {@code group} (listConsumerGroupOffsets). */
    static Map<TopicPartition, Long> committed(Admin admin, String group) throws Exception {
        Map<TopicPartition, OffsetAndMetadata> raw = admin.listConsumerGroupOffsets(group)
                .partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
        Map<TopicPartition, Long> out = new HashMap<>();
        raw.forEach((tp, om) -> {
            if (om != null) {
                out.put(tp, om.offset());
            }
        });
        return out;
    }

    /** Waits until {@code group}'s committed offsets are exactly {@code expected}. */
    static void awaitCommitted(Admin admin, String group, Map<TopicPartition, Long> expected,
                               Collection<GroupMember> members) {
        awaitGroup("committed offsets of " + group + " reach " + expected, members)
                .untilAsserted(() -> assertThat(committed(admin, group)).isEqualTo(expected));
    }

    static ConsumerGroupDescription describe(Admin admin, String group) throws Exception {
        return admin.describeConsumerGroups(List.of(group)).describedGroups().get(group).get(30, TimeUnit.SECONDS);
    }

    /** client.id → assigned partitions, as DescribeGroups reports them. */
    static Map<String, Set<TopicPartition>> membersByClientId(ConsumerGroupDescription d) {
        Map<String, Set<TopicPartition>> out = new TreeMap<>();
        for (MemberDescription m : d.members()) {
            Set<TopicPartition> previous = out.put(m.clientId(), Set.copyOf(m.assignment().topicPartitions()));
            assertThat(previous).as("client.id %s appears once in %s", m.clientId(), d).isNull();
        }
        return out;
    }

    /** client.id → assigned partitions, as the members themselves see them. */
    static Map<String, Set<TopicPartition>> assignments(Collection<GroupMember> members) {
        Map<String, Set<TopicPartition>> out = new TreeMap<>();
        for (GroupMember m : members) {
            out.put(m.name, m.assignment());
        }
        return out;
    }

    /** Every (partition, offset) of records {@code [0, count)} of the fixture. */
    static Set<GroupMember.Position> produced(RecordFixture fixture, long count) {
        Set<GroupMember.Position> out = new HashSet<>();
        for (int p = 0; p < fixture.partitions; p++) {
            for (long o = 0; o < fixture.endOffset(p, count); o++) {
                out.add(new GroupMember.Position(p, o));
            }
        }
        return out;
    }

    /** How often each (partition, offset) was consumed, over all {@code members}. */
    static Map<GroupMember.Position, Integer> consumptionCounts(Collection<GroupMember> members) {
        Map<GroupMember.Position, Integer> counts = new HashMap<>();
        for (GroupMember m : members) {
            for (GroupMember.Position p : m.consumed) {
                counts.merge(p, 1, Integer::sum);
            }
        }
        return counts;
    }

    /** A short, sorted sample of a set of positions for failure messages. */
    static String sample(Collection<GroupMember.Position> positions) {
        TreeSet<String> s = new TreeSet<>();
        for (GroupMember.Position p : positions) {
            s.add(p.partition() + "@" + p.offset());
        }
        return positions.size() + " " + (s.size() <= 20 ? s : List.copyOf(s).subList(0, 20) + "...");
    }
}
