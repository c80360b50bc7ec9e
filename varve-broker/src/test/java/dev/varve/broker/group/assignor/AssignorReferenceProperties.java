package dev.varve.broker.group.assignor;

import dev.varve.broker.group.assignor.AssignmentChecks.Prior;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.junit.jupiter.api.Test;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.coordinator.group.api.assignor.ConsumerGroupPartitionAssignor;
import org.apache.kafka.coordinator.group.api.assignor.GroupSpec;
import org.apache.kafka.coordinator.group.api.assignor.MemberAssignment;
import org.apache.kafka.coordinator.group.api.assignor.MemberSubscription;
import org.apache.kafka.coordinator.group.api.assignor.SubscribedTopicDescriber;
import org.apache.kafka.coordinator.group.api.assignor.SubscriptionType;
import org.apache.kafka.coordinator.group.assignor.RangeAssignor;
import org.apache.kafka.coordinator.group.assignor.UniformAssignor;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;

import static dev.varve.broker.group.assignor.AssignmentChecks.effective;
import static dev.varve.broker.group.assignor.AssignmentChecks.plain;
import static dev.varve.broker.group.assignor.AssignmentChecks.randomSpec;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Compares with Apache Kafka's own server-side assignors (test scope only): the range assignment
 * must be identical; the uniform one, in homogeneous groups, must move no more partitions.
 */
class AssignorReferenceProperties {

    @Property(tries = 300)
    void rangeMatchesKafka(@ForAll @IntRange(min = 1, max = 50) int members,
                           @ForAll @IntRange(min = 0, max = 10) int topics,
                           @ForAll boolean homogeneous, @ForAll long seed) {
        AssignmentSpec spec = randomSpec(new Random(seed), members, topics, 64, homogeneous, Prior.NONE);
        Map<String, Map<Uuid, Set<Integer>>> ours = ServerAssignor.byName("range").assign(spec);
        assertThat(plain(ours)).isEqualTo(plain(kafka(new RangeAssignor(), spec)));
    }

    @Property(tries = 300)
    void uniformHomogeneousMovesNoMoreThanKafka(@ForAll @IntRange(min = 1, max = 50) int members,
                                                @ForAll @IntRange(min = 1, max = 10) int topics,
                                                @ForAll boolean withPrior, @ForAll long seed) {
        AssignmentSpec spec = randomSpec(new Random(seed), members, topics, 64, true,
            withPrior ? Prior.RANDOM_UNIQUE : Prior.NONE);
        Map<String, Map<Uuid, Set<Integer>>> prior = new HashMap<>();
        spec.members().forEach(m -> prior.put(m.memberId(), m.currentTarget()));
        Map<String, Map<Uuid, Set<Integer>>> ours = ServerAssignor.byName("uniform").assign(spec);
        Map<String, Map<Uuid, Set<Integer>>> theirs = kafka(new UniformAssignor(), spec);
        assertThat(Assignments.totalPartitions(ours)).isEqualTo(Assignments.totalPartitions(theirs));
        assertThat(maxMinusMin(ours)).isLessThanOrEqualTo(Math.max(1, maxMinusMin(theirs)));
        assertThat(Assignments.moved(prior, ours)).isLessThanOrEqualTo(Assignments.moved(prior, theirs));
    }

    /**
     * Heterogeneous groups: over 500 fixed scenarios (a fresh assignment, then one member joins,
     * or one leaves), the total of partitions that change owner is no more than with Kafka's
     * uniform assignor fed the same history, and the loads are no less even (sum of squares).
     * Single scenarios may go either way: both are heuristics.
     */
    @Test
    void uniformHeterogeneousNoLessStickyOrEvenThanKafkaOverall() {
        UniformAssignor kafka = new UniformAssignor();
        ServerAssignor ours = ServerAssignor.byName("uniform");
        long[] moved = new long[2];
        long[] squares = new long[2];
        for (int seed = 0; seed < 500; seed++) {
            Random rnd = new Random(seed);
            AssignmentSpec spec = randomSpec(rnd, 2 + rnd.nextInt(40), 1 + rnd.nextInt(10), 64, false, Prior.NONE);
            Set<Uuid> newcomer = spec.members().get(rnd.nextInt(spec.members().size())).subscribedTopicIds();
            String leaver = spec.members().get(rnd.nextInt(spec.members().size())).memberId();
            for (int k = 0; k < 2; k++) {
                java.util.function.Function<AssignmentSpec, Map<String, Map<Uuid, Set<Integer>>>> assignor =
                    k == 0 ? ours::assign : s -> kafka(kafka, s);
                Map<String, Map<Uuid, Set<Integer>>> before = assignor.apply(spec);
                List<MemberSpec> joined = new ArrayList<>(AssignmentChecks.withTargets(spec, before).members());
                joined.add(new MemberSpec("newcomer", null, null, newcomer, Map.of()));
                Map<String, Map<Uuid, Set<Integer>>> afterJoin = assignor.apply(AssignmentChecks.withMembers(spec, joined));
                List<MemberSpec> rest = new ArrayList<>(AssignmentChecks.withTargets(spec, before).members());
                rest.removeIf(m -> m.memberId().equals(leaver));
                Map<String, Map<Uuid, Set<Integer>>> afterLeave = assignor.apply(AssignmentChecks.withMembers(spec, rest));
                Map<String, Map<Uuid, Set<Integer>>> survivors = new HashMap<>(before);
                survivors.remove(leaver);
                moved[k] += Assignments.moved(before, afterJoin) + Assignments.moved(survivors, afterLeave);
                for (Map<String, Map<Uuid, Set<Integer>>> a : List.of(before, afterJoin, afterLeave)) {
                    for (int load : AssignmentChecks.loads(a).values()) {
                        squares[k] += (long) load * load;
                    }
                }
            }
        }
        assertThat(moved[0]).as("partitions moved, ours vs Kafka's %d", moved[1]).isLessThanOrEqualTo(moved[1]);
        assertThat(squares[0]).as("sum of squared loads, ours vs Kafka's %d", squares[1]).isLessThanOrEqualTo(squares[1]);
    }

    private static int maxMinusMin(Map<String, Map<Uuid, Set<Integer>>> a) {
        Collection<Integer> loads = AssignmentChecks.loads(a).values();
        return loads.isEmpty() ? 0 : Collections.max(loads) - Collections.min(loads);
    }

    /** Runs a Kafka assignor on the spec (unknown topic ids dropped: Kafka rejects them); empty sets removed. */
    static Map<String, Map<Uuid, Set<Integer>>> kafka(ConsumerGroupPartitionAssignor assignor, AssignmentSpec spec) {
        Map<String, MemberSpec> byId = new HashMap<>();
        Map<String, Set<Uuid>> subs = new HashMap<>();
        Map<Uuid, Map<Integer, String>> owners = new HashMap<>();
        List<String> ids = new ArrayList<>();
        for (MemberSpec m : spec.members()) {
            byId.put(m.memberId(), m);
            subs.put(m.memberId(), effective(spec, m));
            ids.add(m.memberId());
            m.currentTarget().forEach((t, ps) -> ps.forEach(p ->
                owners.computeIfAbsent(t, k -> new HashMap<>()).put(p, m.memberId())));
        }
        boolean homogeneous = new HashSet<>(subs.values()).size() <= 1;
        GroupSpec groupSpec = new GroupSpec() {
            @Override
            public Collection<String> memberIds() {
                return ids;
            }

            @Override
            public SubscriptionType subscriptionType() {
                return homogeneous ? SubscriptionType.HOMOGENEOUS : SubscriptionType.HETEROGENEOUS;
            }

            @Override
            public boolean isPartitionAssigned(Uuid topicId, int partitionId) {
                return owners.getOrDefault(topicId, Map.of()).containsKey(partitionId);
            }

            @Override
            public boolean isPartitionAssignable(Uuid topicId, int partitionId) {
                return true;
            }

            @Override
            public MemberSubscription memberSubscription(String memberId) {
                MemberSpec m = byId.get(memberId);
                return new MemberSubscription() {
                    @Override
                    public Optional<String> rackId() {
                        return Optional.empty();
                    }

                    @Override
                    public Optional<String> instanceId() {
                        return Optional.ofNullable(m.instanceId());
                    }

                    @Override
                    public Set<Uuid> subscribedTopicIds() {
                        return subs.get(memberId);
                    }
                };
            }

            @Override
            public MemberAssignment memberAssignment(String memberId) {
                Map<Uuid, Set<Integer>> current = Collections.unmodifiableMap(new HashMap<>(byId.get(memberId).currentTarget()));
                return () -> current;
            }
        };
        SubscribedTopicDescriber topics = new SubscribedTopicDescriber() {
            @Override
            public int numPartitions(Uuid topicId) {
                TopicSpec t = spec.topics().get(topicId);
                return t == null ? -1 : t.partitions();
            }

            @Override
            public Set<String> racksForPartition(Uuid topicId, int partition) {
                return Set.of();
            }
        };
        Map<String, Map<Uuid, Set<Integer>>> out = new HashMap<>();
        assignor.assign(groupSpec, topics).members().forEach((m, a) -> {
            Map<Uuid, Set<Integer>> nonEmpty = new HashMap<>();
            a.partitions().forEach((t, ps) -> {
                if (!ps.isEmpty()) {
                    nonEmpty.put(t, ps);
                }
            });
            out.put(m, nonEmpty);
        });
        for (String id : ids) {
            out.putIfAbsent(id, Map.of());
        }
        return out;
    }
}
