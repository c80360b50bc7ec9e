package dev.varve.broker.group.assignor;

import org.apache.kafka.common.Uuid;
import org.junit.jupiter.api.Test;

import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class UniformAssignorTest {
    private static final Uuid T1 = new Uuid(0, 1);
    private static final Uuid T2 = new Uuid(0, 2);
    private static final Uuid T3 = new Uuid(0, 3);
    private final ServerAssignor uniform = ServerAssignor.byName("uniform");

    private static MemberSpec member(String id, Set<Uuid> topics, Map<Uuid, Set<Integer>> current) {
        return new MemberSpec(id, null, null, topics, current);
    }

    private static Map<Uuid, TopicSpec> topics(int p1, int p2, int p3) {
        return Map.of(T1, new TopicSpec(T1, "t1", p1), T2, new TopicSpec(T2, "t2", p2), T3, new TopicSpec(T3, "t3", p3));
    }

    @Test
    void byName() {
        assertThat(ServerAssignor.byName("uniform").name()).isEqualTo("uniform");
        assertThat(ServerAssignor.byName("range").name()).isEqualTo("range");
        assertThatThrownBy(() -> ServerAssignor.byName("sticky")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> ServerAssignor.byName(null)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void emptyGroupAndNoTopics() {
        assertThat(uniform.assign(new AssignmentSpec(List.of(), topics(3, 3, 3)))).isEmpty();
        assertThat(uniform.assign(new AssignmentSpec(List.of(member("a", Set.of(T1), Map.of())), Map.of())))
            .isEqualTo(Map.of("a", Map.of()));
    }

    @Test
    void duplicateMemberIdIsRejected() {
        AssignmentSpec spec = new AssignmentSpec(List.of(member("a", Set.of(T1), Map.of()), member("a", Set.of(T2), Map.of())),
            topics(1, 1, 1));
        assertThatThrownBy(() -> uniform.assign(spec)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void freshHomogeneousGroupSpreadsEachTopic() {
        AssignmentSpec spec = new AssignmentSpec(List.of(member("b", Set.of(T1, T2), Map.of()),
            member("a", Set.of(T1, T2), Map.of())), topics(3, 3, 0));
        assertThat(uniform.assign(spec)).isEqualTo(Map.of(
            "a", Map.of(T1, Set.of(0, 2), T2, Set.of(1)),
            "b", Map.of(T1, Set.of(1), T2, Set.of(0, 2))));
    }

    @Test
    void membersWithNothingToConsumeTakeNoPart() {
        Uuid missing = new Uuid(9, 9);
        AssignmentSpec spec = new AssignmentSpec(List.of(member("a", Set.of(T1), Map.of()), member("b", Set.of(T1), Map.of()),
            member("c", Set.of(), Map.of(T1, Set.of(0))), member("d", Set.of(missing), Map.of(missing, Set.of(0)))),
            topics(5, 1, 1));
        Map<String, Map<Uuid, Set<Integer>>> result = uniform.assign(spec);
        assertThat(result.get("c")).isEmpty();
        assertThat(result.get("d")).isEmpty();
        assertThat(AssignmentChecks.loads(result)).isEqualTo(Map.of("a", 3, "b", 2, "c", 0, "d", 0));
    }

    @Test
    void theMembersThatKeepTheMostGetTheExtraPartition() {
        // 7 partitions, 3 members: quotas 3, 2, 2. "c" holds 3 already, so it keeps them all.
        AssignmentSpec spec = new AssignmentSpec(List.of(
            member("a", Set.of(T1), Map.of(T1, Set.of(0, 1))),
            member("b", Set.of(T1), Map.of()),
            member("c", Set.of(T1), Map.of(T1, Set.of(2, 3, 4)))), topics(7, 1, 1));
        Map<String, Map<Uuid, Set<Integer>>> result = uniform.assign(spec);
        assertThat(result.get("a")).isEqualTo(Map.of(T1, Set.of(0, 1)));
        assertThat(result.get("c")).isEqualTo(Map.of(T1, Set.of(2, 3, 4)));
        assertThat(result.get("b")).isEqualTo(Map.of(T1, Set.of(5, 6)));
    }

    @Test
    void staleAndConflictingPreviousTargetsAreIgnored() {
        // "a" claims an unsubscribed topic and an out-of-range partition; "b" and "a" both claim T1-0
        // (the first by member id keeps it).
        AssignmentSpec spec = new AssignmentSpec(List.of(
            member("b", Set.of(T1), Map.of(T1, Set.of(0, 1))),
            member("a", Set.of(T1), Map.of(T1, Set.of(0, 9), T2, Set.of(0)))), topics(2, 1, 1));
        assertThat(uniform.assign(spec)).isEqualTo(Map.of("a", Map.of(T1, Set.of(0)), "b", Map.of(T1, Set.of(1))));
    }

    @Test
    void heterogeneousBalancesTotalsAcrossTopics() {
        // "a" alone on T1 (4 partitions), everyone on T2 (8): a takes T1, the others share T2 more.
        AssignmentSpec spec = new AssignmentSpec(List.of(
            member("a", Set.of(T1, T2), Map.of()), member("b", Set.of(T2), Map.of()), member("c", Set.of(T2), Map.of())),
            topics(4, 8, 1));
        Map<String, Map<Uuid, Set<Integer>>> result = uniform.assign(spec);
        AssignmentChecks.checkComplete(spec, result);
        assertThat(AssignmentChecks.loads(result)).isEqualTo(Map.of("a", 4, "b", 4, "c", 4));
        assertThat(result.get("a")).isEqualTo(Map.of(T1, Set.of(0, 1, 2, 3)));
    }

    @Test
    void heterogeneousRebalanceMovesFromTheMostLoaded() {
        // Previously "a" had everything of T2; "b" now subscribes to T2 too and takes half.
        AssignmentSpec spec = new AssignmentSpec(List.of(
            member("a", Set.of(T2), Map.of(T2, Set.of(0, 1, 2, 3, 4, 5))),
            member("b", Set.of(T2, T3), Map.of(T3, Set.of(0)))), topics(1, 6, 1));
        Map<String, Map<Uuid, Set<Integer>>> result = uniform.assign(spec);
        assertThat(result.get("b").get(T3)).isEqualTo(Set.of(0));
        assertThat(AssignmentChecks.loads(result)).isEqualTo(Map.of("a", 4, "b", 3));
        assertThat(Assignments.moved(Map.of("a", Map.of(T2, Set.of(0, 1, 2, 3, 4, 5)), "b", Map.of(T3, Set.of(0))), result))
            .isEqualTo(2);
    }

    @Test
    void balancingMovesPartitionsNewToTheirOwnerFirst() {
        // T1 (8 partitions: a, b) is placed before T2 (3: a only). "a" keeps T1-0 and gets the free
        // T1-5..7, then all of T2, so it must give one T1 partition to "b": a new one, not T1-0.
        Map<String, Map<Uuid, Set<Integer>>> prior = Map.of("a", Map.of(T1, Set.of(0)), "b", Map.of(T1, Set.of(1, 2, 3, 4)));
        AssignmentSpec spec = new AssignmentSpec(List.of(
            member("a", Set.of(T1, T2), prior.get("a")), member("b", Set.of(T1), prior.get("b"))), topics(8, 3, 1));
        Map<String, Map<Uuid, Set<Integer>>> result = uniform.assign(spec);
        assertThat(AssignmentChecks.loads(result)).isEqualTo(Map.of("a", 6, "b", 5));
        assertThat(Assignments.moved(prior, result)).isZero();
    }

    @Test
    void resultIsUnmodifiableAndInputUntouched() {
        Set<Integer> prior = new HashSet<>(Set.of(0, 1, 2));
        AssignmentSpec spec = new AssignmentSpec(List.of(member("a", Set.of(T1), Map.of(T1, prior)),
            member("b", Set.of(T1), Map.of())), topics(4, 1, 1));
        Map<String, Map<Uuid, Set<Integer>>> result = uniform.assign(spec);
        assertThat(prior).containsExactlyInAnyOrder(0, 1, 2);
        assertThatThrownBy(() -> result.get("a").get(T1).add(7)).isInstanceOf(UnsupportedOperationException.class);
        assertThatThrownBy(() -> result.get("a").clear()).isInstanceOf(UnsupportedOperationException.class);
        assertThatThrownBy(() -> result.clear()).isInstanceOf(UnsupportedOperationException.class);
    }
}
