package dev.varve.broker.group.assignor;

import org.apache.kafka.common.Uuid;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.function.Supplier;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Large groups: 2,000 members over 1,000 topics of 100 partitions (100,000 partitions), and
 * 100 members over 10 x 100. Checks completeness and balance with plain loops; prints the time
 * of each assignment ("ASSIGNOR-SCALE" lines), which it does not assert. Each assignment runs once
 * (cold JIT); {@code -Dassignor.scale.runs=3} repeats it and also prints the best time.
 */
class AssignorScaleTest {
    private static final int RUNS = Integer.getInteger("assignor.scale.runs", 1);
    private static final int MEMBERS = 2_000;
    private static final int TOPICS = 1_000;
    private static final int PARTITIONS = 100;

    private static Map<Uuid, TopicSpec> topics(int count, int partitions) {
        Map<Uuid, TopicSpec> topics = new LinkedHashMap<>();
        Random rnd = new Random(42);
        for (int t = 0; t < count; t++) {
            Uuid id = new Uuid(rnd.nextLong(), rnd.nextLong());
            topics.put(id, new TopicSpec(id, "topic-" + t, partitions));
        }
        return topics;
    }

    private static AssignmentSpec group(int members, Map<Uuid, TopicSpec> topics, boolean homogeneous) {
        Random rnd = new Random(7);
        List<Uuid> ids = new ArrayList<>(topics.keySet());
        Set<Uuid> all = Set.copyOf(ids);
        List<MemberSpec> list = new ArrayList<>();
        for (int m = 0; m < members; m++) {
            Set<Uuid> subscription = all;
            if (!homogeneous) {
                Set<Uuid> some = new HashSet<>();
                for (Uuid id : ids) {
                    if (rnd.nextBoolean()) {
                        some.add(id);
                    }
                }
                subscription = Set.copyOf(some);
            }
            list.add(new MemberSpec("consumer-" + m + "-" + new Uuid(rnd.nextLong(), rnd.nextLong()),
                m % 4 == 0 ? "instance-" + m : null, null, subscription, Map.of()));
        }
        return new AssignmentSpec(list, topics);
    }

    private static Map<String, Map<Uuid, Set<Integer>>> timed(String label, Supplier<Map<String, Map<Uuid, Set<Integer>>>> run) {
        long best = Long.MAX_VALUE;
        long first = 0;
        Map<String, Map<Uuid, Set<Integer>>> result = null;
        for (int i = 0; i < RUNS; i++) {
            long start = System.nanoTime();
            result = run.get();
            long took = System.nanoTime() - start;
            if (i == 0) {
                first = took;
            }
            best = Math.min(best, took);
        }
        System.out.printf("ASSIGNOR-SCALE %-48s first %8.1f ms, best of %d %8.1f ms%n", label, first / 1e6, RUNS, best / 1e6);
        return result;
    }

    /** Complete (each partition of each subscribed topic exactly once, to a subscriber); returns the loads. */
    private static Map<String, Integer> checkComplete(AssignmentSpec spec, Map<String, Map<Uuid, Set<Integer>>> result) {
        Map<Uuid, int[]> counts = new HashMap<>();
        spec.topics().forEach((id, t) -> counts.put(id, new int[t.partitions()]));
        Map<String, Integer> loads = new HashMap<>();
        int wrong = 0;
        for (MemberSpec m : spec.members()) {
            Map<Uuid, Set<Integer>> a = result.get(m.memberId());
            assertThat(a).isNotNull();
            int load = 0;
            for (Map.Entry<Uuid, Set<Integer>> e : a.entrySet()) {
                if (!m.subscribedTopicIds().contains(e.getKey()) || e.getValue().isEmpty()) {
                    wrong++;
                }
                int[] c = counts.get(e.getKey());
                for (int p : e.getValue()) {
                    c[p]++;
                }
                load += e.getValue().size();
            }
            loads.put(m.memberId(), load);
        }
        assertThat(wrong).as("entries for unsubscribed topics or empty").isZero();
        assertThat(result).hasSize(spec.members().size());
        for (int[] c : counts.values()) {
            for (int n : c) {
                if (n != 1) {
                    wrong++;
                }
            }
        }
        assertThat(wrong).as("partitions not assigned exactly once").isZero();
        return loads;
    }

    /** Uniform balance: an owner of a topic's partition has at most one more than any subscriber of it. */
    private static void checkBalanced(AssignmentSpec spec, Map<String, Map<Uuid, Set<Integer>>> result,
                                      Map<String, Integer> loads) {
        Map<Uuid, Integer> minSubscriber = new HashMap<>();
        for (MemberSpec m : spec.members()) {
            int load = loads.get(m.memberId());
            for (Uuid t : m.subscribedTopicIds()) {
                minSubscriber.merge(t, load, Math::min);
            }
        }
        int violations = 0;
        for (MemberSpec m : spec.members()) {
            int load = loads.get(m.memberId());
            for (Uuid t : result.get(m.memberId()).keySet()) {
                if (load > minSubscriber.get(t) + 1) {
                    violations++;
                }
            }
        }
        assertThat(violations).isZero();
    }

    private static AssignmentSpec withTargets(AssignmentSpec spec, Map<String, Map<Uuid, Set<Integer>>> targets) {
        return AssignmentChecks.withTargets(spec, targets);
    }

    @Test
    void uniformHomogeneous2000Members100000Partitions() {
        AssignmentSpec spec = group(MEMBERS, topics(TOPICS, PARTITIONS), true);
        ServerAssignor uniform = ServerAssignor.byName("uniform");
        Map<String, Map<Uuid, Set<Integer>>> fresh = timed("uniform homogeneous 2000x100000 fresh", () -> uniform.assign(spec));
        Map<String, Integer> loads = checkComplete(spec, fresh);
        assertThat(loads.values()).containsOnly(50);

        AssignmentSpec steady = withTargets(spec, fresh);
        Map<String, Map<Uuid, Set<Integer>>> again = timed("uniform homogeneous 2000x100000 unchanged", () -> uniform.assign(steady));
        assertThat(again).isEqualTo(fresh);

        List<MemberSpec> joined = new ArrayList<>(steady.members());
        joined.add(new MemberSpec("newcomer", null, null, spec.members().get(0).subscribedTopicIds(), Map.of()));
        AssignmentSpec join = AssignmentChecks.withMembers(spec, joined);
        Map<String, Map<Uuid, Set<Integer>>> afterJoin = timed("uniform homogeneous 2000x100000 one joins", () -> uniform.assign(join));
        Map<String, Integer> joinLoads = checkComplete(join, afterJoin);
        int max = joinLoads.values().stream().max(Integer::compare).orElseThrow();
        int min = joinLoads.values().stream().min(Integer::compare).orElseThrow();
        assertThat(max - min).isLessThanOrEqualTo(1);
        assertThat(Assignments.moved(fresh, afterJoin)).isEqualTo(100_000 / 2_001);

        List<MemberSpec> left = new ArrayList<>(steady.members());
        MemberSpec leaver = left.remove(1234);
        AssignmentSpec leave = AssignmentChecks.withMembers(spec, left);
        Map<String, Map<Uuid, Set<Integer>>> afterLeave = timed("uniform homogeneous 2000x100000 one leaves", () -> uniform.assign(leave));
        checkBalanced(leave, afterLeave, checkComplete(leave, afterLeave));
        Map<String, Map<Uuid, Set<Integer>>> survivors = new HashMap<>(fresh);
        survivors.remove(leaver.memberId());
        assertThat(Assignments.moved(survivors, afterLeave)).isZero();
    }

    @Test
    void uniformHeterogeneous2000Members100000Partitions() {
        AssignmentSpec spec = group(MEMBERS, topics(TOPICS, PARTITIONS), false);
        ServerAssignor uniform = ServerAssignor.byName("uniform");
        Map<String, Map<Uuid, Set<Integer>>> fresh = timed("uniform heterogeneous 2000x100000 fresh", () -> uniform.assign(spec));
        checkBalanced(spec, fresh, checkComplete(spec, fresh));

        AssignmentSpec steady = withTargets(spec, fresh);
        Map<String, Map<Uuid, Set<Integer>>> again = timed("uniform heterogeneous 2000x100000 unchanged", () -> uniform.assign(steady));
        assertThat(again).isEqualTo(fresh);

        List<MemberSpec> joined = new ArrayList<>(steady.members());
        joined.add(new MemberSpec("newcomer", null, null, spec.members().get(0).subscribedTopicIds(), Map.of()));
        AssignmentSpec join = AssignmentChecks.withMembers(spec, joined);
        Map<String, Map<Uuid, Set<Integer>>> afterJoin = timed("uniform heterogeneous 2000x100000 one joins", () -> uniform.assign(join));
        checkBalanced(join, afterJoin, checkComplete(join, afterJoin));
        System.out.printf("ASSIGNOR-SCALE heterogeneous join: %d partitions moved, the newcomer got %d%n",
            Assignments.moved(fresh, afterJoin), Assignments.partitionCount(afterJoin.get("newcomer")));
    }

    @Test
    void range2000Members100000Partitions() {
        ServerAssignor range = ServerAssignor.byName("range");
        for (boolean homogeneous : new boolean[] {true, false}) {
            AssignmentSpec spec = group(MEMBERS, topics(TOPICS, PARTITIONS), homogeneous);
            Map<String, Map<Uuid, Set<Integer>>> result = timed("range " + (homogeneous ? "homogeneous" : "heterogeneous")
                + " 2000x100000", () -> range.assign(spec));
            Map<String, Integer> loads = checkComplete(spec, result);
            if (homogeneous) {
                // 100 partitions over 2,000 members: the first 100 in range order get one of every topic
                assertThat(new HashSet<>(loads.values())).isEqualTo(Set.of(0, 1_000));
            }
        }
    }

    @Test
    void hundredMembersThousandPartitions() {
        for (boolean homogeneous : new boolean[] {true, false}) {
            AssignmentSpec spec = group(100, topics(10, 100), homogeneous);
            for (String name : List.of("uniform", "range")) {
                ServerAssignor assignor = ServerAssignor.byName(name);
                Map<String, Map<Uuid, Set<Integer>>> result = timed(name + (homogeneous ? " homogeneous" : " heterogeneous")
                    + " 100x1000", () -> assignor.assign(spec));
                Map<String, Integer> loads = checkComplete(spec, result);
                if (name.equals("uniform")) {
                    checkBalanced(spec, result, loads);
                    if (homogeneous) {
                        assertThat(new HashSet<>(loads.values())).isEqualTo(Set.of(10));
                    }
                    Map<String, Map<Uuid, Set<Integer>>> again = assignor.assign(withTargets(spec, result));
                    assertThat(again).isEqualTo(result);
                }
            }
        }
    }
}
