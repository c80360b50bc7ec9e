package dev.varve.broker.group.assignor;

import org.apache.kafka.common.Uuid;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

class RangeAssignorTest {
    private static final Uuid T1 = new Uuid(0, 1);
    private static final Uuid T2 = new Uuid(0, 2);
    private static final Uuid T3 = new Uuid(0, 3);
    private final ServerAssignor range = ServerAssignor.byName("range");

    private static MemberSpec member(String id, String instance, Set<Uuid> topics) {
        return new MemberSpec(id, instance, null, topics, Map.of());
    }

    private static Map<Uuid, TopicSpec> topics(int p1, int p2, int p3) {
        return Map.of(T1, new TopicSpec(T1, "t1", p1), T2, new TopicSpec(T2, "t2", p2), T3, new TopicSpec(T3, "t3", p3));
    }

    @Test
    void twoMembersTwoCoPartitionedTopics() {
        // Kafka's documented example: M0 gets partitions 0 and 1 of both topics, M1 partition 2 of both.
        AssignmentSpec spec = new AssignmentSpec(List.of(member("M1", null, Set.of(T1, T2)),
            member("M0", null, Set.of(T1, T2))), topics(3, 3, 3));
        assertThat(range.assign(spec)).isEqualTo(Map.of(
            "M0", Map.of(T1, Set.of(0, 1), T2, Set.of(0, 1)),
            "M1", Map.of(T1, Set.of(2), T2, Set.of(2))));
    }

    @Test
    void staticMembersComeFirstByInstanceIdAndKeepTheirRangesAcrossNewMemberIds() {
        AssignmentSpec before = new AssignmentSpec(List.of(
            member("a", null, Set.of(T1)), member("z", "I0", Set.of(T1)), member("y", "I1", Set.of(T1))), topics(7, 1, 1));
        assertThat(range.assign(before)).isEqualTo(Map.of(
            "z", Map.of(T1, Set.of(0, 1, 2)), "y", Map.of(T1, Set.of(3, 4)), "a", Map.of(T1, Set.of(5, 6))));
        // I0 and I1 restart with new member ids that sort the other way round: same ranges
        AssignmentSpec after = new AssignmentSpec(List.of(
            member("a", null, Set.of(T1)), member("b", "I0", Set.of(T1)), member("c", "I1", Set.of(T1))), topics(7, 1, 1));
        assertThat(range.assign(after)).isEqualTo(Map.of(
            "b", Map.of(T1, Set.of(0, 1, 2)), "c", Map.of(T1, Set.of(3, 4)), "a", Map.of(T1, Set.of(5, 6))));
    }

    @Test
    void heterogeneousSubscriptionsRangePerTopic() {
        AssignmentSpec spec = new AssignmentSpec(List.of(
            member("a", null, Set.of(T1, T2)), member("b", null, Set.of(T2, T3)), member("c", null, Set.of(T1, T3))),
            topics(4, 5, 1));
        assertThat(range.assign(spec)).isEqualTo(Map.of(
            "a", Map.of(T1, Set.of(0, 1), T2, Set.of(0, 1, 2)),
            "b", Map.of(T2, Set.of(3, 4), T3, Set.of(0)),
            "c", Map.of(T1, Set.of(2, 3))));
    }

    @Test
    void moreMembersThanPartitionsLeavesTheLastEmptyHanded() {
        AssignmentSpec spec = new AssignmentSpec(List.of(
            member("a", null, Set.of(T1)), member("b", null, Set.of(T1)), member("c", null, Set.of(T1))), topics(2, 1, 1));
        assertThat(range.assign(spec)).isEqualTo(Map.of(
            "a", Map.of(T1, Set.of(0)), "b", Map.of(T1, Set.of(1)), "c", Map.of()));
    }

    @Test
    void unknownTopicsAndEmptySubscriptionsGetNothing() {
        Uuid missing = new Uuid(9, 9);
        AssignmentSpec spec = new AssignmentSpec(List.of(
            member("a", null, Set.of(missing)), member("b", null, Set.of()), member("c", null, Set.of(T2, missing))),
            topics(2, 2, 2));
        assertThat(range.assign(spec)).isEqualTo(Map.of("a", Map.of(), "b", Map.of(), "c", Map.of(T2, Set.of(0, 1))));
    }

    @Test
    void previousTargetIsIgnored() {
        AssignmentSpec spec = new AssignmentSpec(List.of(
            new MemberSpec("a", null, null, Set.of(T1), Map.of(T1, Set.of(2, 3))),
            new MemberSpec("b", null, null, Set.of(T1), Map.of(T1, Set.of(0, 1)))), topics(4, 1, 1));
        assertThat(range.assign(spec)).isEqualTo(Map.of("a", Map.of(T1, Set.of(0, 1)), "b", Map.of(T1, Set.of(2, 3))));
    }
}
