package dev.varve.broker.group.assignor;

import dev.varve.broker.group.assignor.AssignmentChecks.Prior;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.apache.kafka.common.Uuid;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;

import static dev.varve.broker.group.assignor.AssignmentChecks.checkComplete;
import static dev.varve.broker.group.assignor.AssignmentChecks.effective;
import static dev.varve.broker.group.assignor.AssignmentChecks.plain;
import static dev.varve.broker.group.assignor.AssignmentChecks.randomSpec;
import static org.assertj.core.api.Assertions.assertThat;

class RangeAssignorProperties {
    private final ServerAssignor range = ServerAssignor.byName("range");

    /**
     * Complete, and per topic: the subscribers in range order (static members by instance id,
     * then the others by member id) hold consecutive ranges 0..P-1, the first P % n of them
     * P / n + 1 partitions, the rest P / n.
     */
    @Property(tries = 300)
    void contiguousRangesInMemberOrder(@ForAll @IntRange(min = 0, max = 50) int members,
                                       @ForAll @IntRange(min = 0, max = 10) int topics,
                                       @ForAll boolean homogeneous, @ForAll Prior prior, @ForAll long seed) {
        AssignmentSpec spec = randomSpec(new Random(seed), members, topics, 64, homogeneous, prior);
        Map<String, Map<Uuid, Set<Integer>>> result = range.assign(spec);
        checkComplete(spec, result);
        List<MemberSpec> ordered = new ArrayList<>(spec.members());
        ordered.sort(RangeAssignor.ORDER);
        for (TopicSpec topic : spec.topics().values()) {
            List<MemberSpec> subs = ordered.stream().filter(m -> effective(spec, m).contains(topic.id())).toList();
            int next = 0;
            for (int k = 0; k < subs.size(); k++) {
                int size = topic.partitions() / subs.size() + (k < topic.partitions() % subs.size() ? 1 : 0);
                Set<Integer> expected = new HashSet<>();
                for (int p = next; p < next + size; p++) {
                    expected.add(p);
                }
                next += size;
                assertThat(result.get(subs.get(k).memberId()).getOrDefault(topic.id(), Set.of()))
                    .as("range of member %d of %s", k, topic.id()).isEqualTo(expected);
            }
        }
    }

    /** Topics with the same subscribers and partition count give each member the same partitions. */
    @Property(tries = 300)
    void coPartitioned(@ForAll @IntRange(min = 1, max = 50) int members,
                       @ForAll @IntRange(min = 2, max = 10) int topics,
                       @ForAll @IntRange(min = 1, max = 64) int partitions,
                       @ForAll boolean homogeneous, @ForAll long seed) {
        Random rnd = new Random(seed);
        AssignmentSpec base = randomSpec(rnd, members, topics, 64, homogeneous, Prior.GARBAGE);
        // Same partition count for every topic, so co-partitioning depends only on the subscribers.
        Map<Uuid, TopicSpec> same = new java.util.HashMap<>();
        base.topics().forEach((id, t) -> same.put(id, new TopicSpec(id, t.name(), partitions)));
        AssignmentSpec spec = new AssignmentSpec(base.members(), Map.copyOf(same));
        Map<String, Map<Uuid, Set<Integer>>> result = range.assign(spec);
        checkComplete(spec, result);
        List<Uuid> ids = new ArrayList<>(spec.topics().keySet());
        for (Uuid a : ids) {
            for (Uuid b : ids) {
                Set<String> subsA = new HashSet<>();
                Set<String> subsB = new HashSet<>();
                for (MemberSpec m : spec.members()) {
                    if (effective(spec, m).contains(a)) {
                        subsA.add(m.memberId());
                    }
                    if (effective(spec, m).contains(b)) {
                        subsB.add(m.memberId());
                    }
                }
                if (!subsA.equals(subsB)) {
                    continue;
                }
                for (String m : subsA) {
                    assertThat(result.get(m).getOrDefault(a, Set.of()))
                        .as("%s gets the same partitions of %s and %s", m, a, b)
                        .isEqualTo(result.get(m).getOrDefault(b, Set.of()));
                }
            }
        }
    }

    /** The result depends neither on the member order nor on the previous target (as Kafka 4.x's). */
    @Property(tries = 200)
    void deterministicAndStateless(@ForAll @IntRange(min = 0, max = 50) int members,
                                   @ForAll @IntRange(min = 0, max = 10) int topics,
                                   @ForAll boolean homogeneous, @ForAll long seed) {
        Random rnd = new Random(seed);
        AssignmentSpec spec = randomSpec(rnd, members, topics, 64, homogeneous, Prior.GARBAGE);
        Map<String, Map<Uuid, Set<Integer>>> result = range.assign(spec);
        assertThat(plain(range.assign(AssignmentChecks.shuffled(spec, rnd)))).isEqualTo(plain(result));
        assertThat(plain(range.assign(AssignmentChecks.withTargets(spec, Map.of())))).isEqualTo(plain(result));
        assertThat(plain(range.assign(AssignmentChecks.withTargets(spec, result)))).isEqualTo(plain(result));
    }
}
