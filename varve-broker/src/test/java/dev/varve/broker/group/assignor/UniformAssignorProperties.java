package dev.varve.broker.group.assignor;

import dev.varve.broker.group.assignor.AssignmentChecks.Prior;
import net.jqwik.api.Assume;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import org.apache.kafka.common.Uuid;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;

import static dev.varve.broker.group.assignor.AssignmentChecks.checkComplete;
import static dev.varve.broker.group.assignor.AssignmentChecks.checkUniformBalance;
import static dev.varve.broker.group.assignor.AssignmentChecks.effective;
import static dev.varve.broker.group.assignor.AssignmentChecks.plain;
import static dev.varve.broker.group.assignor.AssignmentChecks.randomSpec;
import static dev.varve.broker.group.assignor.AssignmentChecks.withMembers;
import static dev.varve.broker.group.assignor.AssignmentChecks.withTargets;
import static org.assertj.core.api.Assertions.assertThat;

class UniformAssignorProperties {
    private final UniformAssignor uniform = UniformAssignor.INSTANCE;

    @Property(tries = 300)
    void completeAndBalanced(@ForAll @IntRange(min = 0, max = 50) int members,
                             @ForAll @IntRange(min = 0, max = 10) int topics,
                             @ForAll boolean homogeneous, @ForAll Prior prior, @ForAll long seed) {
        AssignmentSpec spec = randomSpec(new Random(seed), members, topics, 64, homogeneous, prior);
        Map<String, Map<Uuid, Set<Integer>>> result = uniform.assign(spec);
        checkComplete(spec, result);
        checkUniformBalance(spec, result);
    }

    /** The general algorithm alone also meets the guarantees, on homogeneous groups too. */
    @Property(tries = 300)
    void generalAlgorithmCompleteAndBalanced(@ForAll @IntRange(min = 0, max = 50) int members,
                                             @ForAll @IntRange(min = 0, max = 10) int topics,
                                             @ForAll boolean homogeneous, @ForAll Prior prior,
                                             @ForAll long seed) {
        AssignmentSpec spec = randomSpec(new Random(seed), members, topics, 64, homogeneous, prior);
        Map<String, Map<Uuid, Set<Integer>>> result = uniform.assignGeneral(spec);
        checkComplete(spec, result);
        checkUniformBalance(spec, result);
        assertThat(plain(uniform.assignGeneral(withTargets(spec, result)))).isEqualTo(plain(result));
    }

    @Property(tries = 200)
    void deterministicWhateverTheMemberOrder(@ForAll @IntRange(min = 0, max = 50) int members,
                                             @ForAll @IntRange(min = 0, max = 10) int topics,
                                             @ForAll boolean homogeneous, @ForAll Prior prior,
                                             @ForAll long seed) {
        Random rnd = new Random(seed);
        AssignmentSpec spec = randomSpec(rnd, members, topics, 64, homogeneous, prior);
        Map<String, Map<Uuid, Set<Integer>>> result = uniform.assign(spec);
        assertThat(uniform.assign(spec)).isEqualTo(result);
        assertThat(plain(uniform.assign(AssignmentChecks.shuffled(spec, rnd)))).isEqualTo(plain(result));
    }

    /** Feeding the result back as the current target changes nothing. */
    @Property(tries = 300)
    void stableWhenNothingChanges(@ForAll @IntRange(min = 0, max = 50) int members,
                                  @ForAll @IntRange(min = 0, max = 10) int topics,
                                  @ForAll boolean homogeneous, @ForAll Prior prior, @ForAll long seed) {
        AssignmentSpec spec = randomSpec(new Random(seed), members, topics, 64, homogeneous, prior);
        Map<String, Map<Uuid, Set<Integer>>> first = uniform.assign(spec);
        Map<String, Map<Uuid, Set<Integer>>> second = uniform.assign(withTargets(spec, first));
        assertThat(plain(second)).isEqualTo(plain(first));
        assertThat(Assignments.moved(first, second)).isZero();
    }

    /**
     * Homogeneous groups keep as many previous partitions as any balanced assignment could: with
     * N members, P partitions and q = P / N, member i can keep at most min(kept_i, q + 1) and at
     * most P % N members can exceed q.
     */
    @Property(tries = 300)
    void homogeneousKeepsTheMostBalanceAllows(@ForAll @IntRange(min = 1, max = 50) int members,
                                              @ForAll @IntRange(min = 1, max = 10) int topics,
                                              @ForAll long seed) {
        AssignmentSpec spec = randomSpec(new Random(seed), members, topics, 64, true, Prior.RANDOM_UNIQUE);
        List<MemberSpec> active = AssignmentChecks.active(spec);
        Assume.that(!active.isEmpty());
        Set<Uuid> shared = effective(spec, active.get(0));
        int total = 0;
        for (Uuid t : shared) {
            total += spec.topics().get(t).partitions();
        }
        int n = active.size();
        int q = total / n;
        int extra = total % n;
        int optimum = 0;
        int above = 0;
        long kept = 0;
        for (MemberSpec m : active) {
            int valid = 0;
            for (Map.Entry<Uuid, Set<Integer>> e : m.currentTarget().entrySet()) {
                if (shared.contains(e.getKey())) {
                    valid += e.getValue().size();
                }
            }
            optimum += Math.min(valid, q);
            if (valid > q) {
                above++;
            }
        }
        optimum += Math.min(extra, above);
        Map<String, Map<Uuid, Set<Integer>>> result = uniform.assign(spec);
        for (MemberSpec m : spec.members()) {
            for (Map.Entry<Uuid, Set<Integer>> e : m.currentTarget().entrySet()) {
                Set<Integer> now = result.get(m.memberId()).getOrDefault(e.getKey(), Set.of());
                for (Integer p : e.getValue()) {
                    if (now.contains(p)) {
                        kept++;
                    }
                }
            }
        }
        assertThat(kept).isEqualTo(optimum);
    }

    /** A member joining a balanced homogeneous group of N takes floor(P / (N + 1)) partitions; nothing else moves. */
    @Property(tries = 300)
    void joinMovesOnlyWhatTheNewcomerTakes(@ForAll @IntRange(min = 1, max = 50) int members,
                                           @ForAll @IntRange(min = 1, max = 10) int topics,
                                           @ForAll Prior prior, @ForAll long seed) {
        AssignmentSpec spec = randomSpec(new Random(seed), members, topics, 64, true, prior);
        List<MemberSpec> active = AssignmentChecks.active(spec);
        Assume.that(!active.isEmpty());
        Map<String, Map<Uuid, Set<Integer>>> before = uniform.assign(spec);
        List<MemberSpec> joined = new ArrayList<>(withTargets(spec, before).members());
        joined.add(new MemberSpec("newcomer", null, null, active.get(0).subscribedTopicIds(), Map.of()));
        AssignmentSpec next = withMembers(spec, joined);
        Map<String, Map<Uuid, Set<Integer>>> after = uniform.assign(next);
        checkComplete(next, after);
        checkUniformBalance(next, after);
        long total = Assignments.totalPartitions(before);
        long moved = Assignments.moved(before, after);
        assertThat(moved).isEqualTo(total / (active.size() + 1));
        assertThat(Assignments.partitionCount(after.get("newcomer"))).isEqualTo(moved);
    }

    /** When a member leaves a homogeneous group, only its partitions move. */
    @Property(tries = 300)
    void leaveMovesOnlyTheLeaversPartitions(@ForAll @IntRange(min = 2, max = 50) int members,
                                            @ForAll @IntRange(min = 1, max = 10) int topics,
                                            @ForAll Prior prior, @ForAll long seed) {
        Random rnd = new Random(seed);
        AssignmentSpec spec = randomSpec(rnd, members, topics, 64, true, prior);
        Map<String, Map<Uuid, Set<Integer>>> before = uniform.assign(spec);
        List<MemberSpec> rest = new ArrayList<>(withTargets(spec, before).members());
        MemberSpec leaver = rest.remove(rnd.nextInt(rest.size()));
        AssignmentSpec next = withMembers(spec, rest);
        Map<String, Map<Uuid, Set<Integer>>> after = uniform.assign(next);
        checkComplete(next, after);
        checkUniformBalance(next, after);
        Map<String, Map<Uuid, Set<Integer>>> survivorsBefore = new HashMap<>(before);
        survivorsBefore.remove(leaver.memberId());
        assertThat(Assignments.moved(survivorsBefore, after)).isZero();
    }
}
