package dev.varve.broker.group.assignor;

import org.apache.kafka.common.Uuid;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

import static org.assertj.core.api.Assertions.assertThat;

/** Random specs and the checks the assignor tests share. */
final class AssignmentChecks {
    private AssignmentChecks() {
    }

    /** How to fill the members' current targets. */
    enum Prior {
        /** Nothing assigned before. */
        NONE,
        /** Arbitrary: random owners (subscribed or not), duplicates, unknown topics, bad partitions. */
        GARBAGE,
        /** Every partition once, to a random member (subscribed or not). */
        RANDOM_UNIQUE
    }

    static Uuid uuid(Random rnd) {
        return new Uuid(rnd.nextLong(), rnd.nextLong());
    }

    /**
     * A random spec: {@code topics} topics with 1..maxPartitions partitions; {@code members}
     * members (some static) subscribing either all to the same random topics (homogeneous: a few
     * then subscribe to nothing that exists) or each to a random subset, sometimes including ids
     * of topics that do not exist. Inputs are
     * unmodifiable, so an assignor that mutates them fails.
     */
    static AssignmentSpec randomSpec(Random rnd, int members, int topics, int maxPartitions, boolean homogeneous,
                                     Prior prior) {
        Map<Uuid, TopicSpec> topicMap = new LinkedHashMap<>();
        List<Uuid> ids = new ArrayList<>();
        for (int t = 0; t < topics; t++) {
            Uuid id = uuid(rnd);
            ids.add(id);
            topicMap.put(id, new TopicSpec(id, "t" + t, 1 + rnd.nextInt(maxPartitions)));
        }
        List<Uuid> unknown = List.of(uuid(rnd), uuid(rnd));
        Set<Uuid> shared = randomSubscription(rnd, ids, unknown);
        List<MemberSpec> list = new ArrayList<>();
        Set<String> used = new HashSet<>();
        for (int m = 0; m < members; m++) {
            String memberId;
            do {
                memberId = "member-" + Integer.toString(rnd.nextInt(100_000), 36);
            } while (!used.add(memberId));
            String instanceId = rnd.nextInt(3) == 0 ? "instance-" + m : null;
            Set<Uuid> subscription = homogeneous ? shared : randomSubscription(rnd, ids, unknown);
            if (homogeneous && rnd.nextInt(8) == 0) {
                // still homogeneous: a member with nothing (existing) to consume takes no part
                subscription = rnd.nextBoolean() ? Set.of() : Set.of(unknown.get(0));
            }
            list.add(new MemberSpec(memberId, instanceId, rnd.nextBoolean() ? "rack" + rnd.nextInt(3) : null,
                subscription, Map.of()));
        }
        AssignmentSpec spec = new AssignmentSpec(List.copyOf(list), Collections.unmodifiableMap(topicMap));
        return switch (prior) {
            case NONE -> spec;
            case GARBAGE -> withTargets(spec, garbage(rnd, spec, unknown));
            case RANDOM_UNIQUE -> withTargets(spec, randomUnique(rnd, spec));
        };
    }

    private static Set<Uuid> randomSubscription(Random rnd, List<Uuid> ids, List<Uuid> unknown) {
        Set<Uuid> s = new HashSet<>();
        int mode = rnd.nextInt(6);
        for (Uuid id : ids) {
            if (mode == 0 || rnd.nextInt(3) == 0) {
                s.add(id); // mode 0: everything
            }
        }
        if (rnd.nextInt(5) == 0) {
            s.add(unknown.get(rnd.nextInt(unknown.size())));
        }
        return Set.copyOf(s);
    }

    private static Map<String, Map<Uuid, Set<Integer>>> garbage(Random rnd, AssignmentSpec spec, List<Uuid> unknown) {
        Map<String, Map<Uuid, Set<Integer>>> out = new HashMap<>();
        List<MemberSpec> members = spec.members();
        if (members.isEmpty()) {
            return out;
        }
        Map<String, Map<Uuid, Set<Integer>>> builder = new HashMap<>();
        for (TopicSpec topic : spec.topics().values()) {
            for (int p = -1; p <= topic.partitions(); p++) {
                int owners = rnd.nextInt(4) == 0 ? 2 : rnd.nextInt(3) == 0 ? 0 : 1; // dupes, gaps
                for (int i = 0; i < owners; i++) {
                    String m = members.get(rnd.nextInt(members.size())).memberId();
                    builder.computeIfAbsent(m, k -> new HashMap<>())
                        .computeIfAbsent(topic.id(), k -> new HashSet<>()).add(p);
                }
            }
        }
        for (MemberSpec m : members) {
            if (rnd.nextInt(4) == 0) {
                builder.computeIfAbsent(m.memberId(), k -> new HashMap<>())
                    .computeIfAbsent(unknown.get(0), k -> new HashSet<>()).add(0);
            }
        }
        builder.forEach((m, a) -> out.put(m, freeze(a)));
        return out;
    }

    private static Map<String, Map<Uuid, Set<Integer>>> randomUnique(Random rnd, AssignmentSpec spec) {
        Map<String, Map<Uuid, Set<Integer>>> builder = new HashMap<>();
        List<MemberSpec> members = spec.members();
        if (members.isEmpty()) {
            return builder;
        }
        for (TopicSpec topic : spec.topics().values()) {
            for (int p = 0; p < topic.partitions(); p++) {
                if (rnd.nextInt(5) == 0) {
                    continue;
                }
                String m = members.get(rnd.nextInt(members.size())).memberId();
                builder.computeIfAbsent(m, k -> new HashMap<>()).computeIfAbsent(topic.id(), k -> new HashSet<>()).add(p);
            }
        }
        Map<String, Map<Uuid, Set<Integer>>> out = new HashMap<>();
        builder.forEach((m, a) -> out.put(m, freeze(a)));
        return out;
    }

    static Map<Uuid, Set<Integer>> freeze(Map<Uuid, Set<Integer>> a) {
        Map<Uuid, Set<Integer>> out = new HashMap<>();
        a.forEach((t, ps) -> out.put(t, Set.copyOf(ps)));
        return Collections.unmodifiableMap(out);
    }

    /** The spec with each member's current target replaced by its entry in {@code targets} (or empty). */
    static AssignmentSpec withTargets(AssignmentSpec spec, Map<String, Map<Uuid, Set<Integer>>> targets) {
        List<MemberSpec> members = new ArrayList<>();
        for (MemberSpec m : spec.members()) {
            members.add(new MemberSpec(m.memberId(), m.instanceId(), m.rackId(), m.subscribedTopicIds(),
                targets.getOrDefault(m.memberId(), Map.of())));
        }
        return new AssignmentSpec(List.copyOf(members), spec.topics());
    }

    static AssignmentSpec withMembers(AssignmentSpec spec, List<MemberSpec> members) {
        return new AssignmentSpec(List.copyOf(members), spec.topics());
    }

    static AssignmentSpec shuffled(AssignmentSpec spec, Random rnd) {
        List<MemberSpec> members = new ArrayList<>(spec.members());
        Collections.shuffle(members, rnd);
        return withMembers(spec, members);
    }

    /** The member's subscribed topics that exist. */
    static Set<Uuid> effective(AssignmentSpec spec, MemberSpec m) {
        Set<Uuid> s = new TreeSet<>();
        for (Uuid id : m.subscribedTopicIds()) {
            if (spec.topics().containsKey(id)) {
                s.add(id);
            }
        }
        return s;
    }

    /** The members with at least one existing subscribed topic. */
    static List<MemberSpec> active(AssignmentSpec spec) {
        return spec.members().stream().filter(m -> !effective(spec, m).isEmpty()).toList();
    }

    static boolean homogeneous(AssignmentSpec spec) {
        Set<Uuid> first = null;
        for (MemberSpec m : spec.members()) {
            Set<Uuid> e = effective(spec, m);
            if (e.isEmpty()) {
                continue;
            }
            if (first == null) {
                first = e;
            } else if (!first.equals(e)) {
                return false;
            }
        }
        return true;
    }

    /**
     * Complete and valid: every member present; a member only gets partitions of existing topics
     * it subscribes to, within range, never an empty set; every partition of every topic with a
     * subscriber is assigned exactly once; topics without subscribers are not assigned.
     */
    static void checkComplete(AssignmentSpec spec, Map<String, Map<Uuid, Set<Integer>>> result) {
        Set<String> ids = new HashSet<>();
        spec.members().forEach(m -> ids.add(m.memberId()));
        assertThat(result.keySet()).isEqualTo(ids);
        Map<Uuid, Set<String>> subscribers = new HashMap<>();
        for (MemberSpec m : spec.members()) {
            for (Uuid t : effective(spec, m)) {
                subscribers.computeIfAbsent(t, k -> new HashSet<>()).add(m.memberId());
            }
        }
        Map<Uuid, int[]> seen = new HashMap<>();
        for (MemberSpec m : spec.members()) {
            Map<Uuid, Set<Integer>> a = result.get(m.memberId());
            assertThat(a).as("assignment of %s", m.memberId()).isNotNull();
            for (Map.Entry<Uuid, Set<Integer>> e : a.entrySet()) {
                Uuid t = e.getKey();
                assertThat(spec.topics()).as("assigned topic exists").containsKey(t);
                assertThat(subscribers.getOrDefault(t, Set.of())).as("%s subscribes to %s", m.memberId(), t)
                    .contains(m.memberId());
                assertThat(e.getValue()).as("no empty partition set").isNotEmpty();
                int[] count = seen.computeIfAbsent(t, k -> new int[spec.topics().get(k).partitions()]);
                for (int p : e.getValue()) {
                    assertThat(p).isBetween(0, count.length - 1);
                    count[p]++;
                }
            }
        }
        for (Uuid t : spec.topics().keySet()) {
            int partitions = spec.topics().get(t).partitions();
            if (subscribers.containsKey(t)) {
                int[] count = seen.getOrDefault(t, new int[partitions]);
                for (int p = 0; p < partitions; p++) {
                    assertThat(count[p]).as("partition %s-%d assigned once", t, p).isEqualTo(1);
                }
            } else {
                assertThat(seen).as("unsubscribed topic %s", t).doesNotContainKey(t);
            }
        }
    }

    static Map<String, Integer> loads(Map<String, Map<Uuid, Set<Integer>>> result) {
        Map<String, Integer> loads = new TreeMap<>();
        result.forEach((m, a) -> loads.put(m, Assignments.partitionCount(a)));
        return loads;
    }

    /**
     * The uniform balance property: for every topic, an owner of one of its partitions has at most
     * one partition more, in total, than any subscriber of the topic.
     */
    static void checkUniformBalance(AssignmentSpec spec, Map<String, Map<Uuid, Set<Integer>>> result) {
        Map<String, Integer> loads = loads(result);
        for (Uuid t : spec.topics().keySet()) {
            int minSubscriber = Integer.MAX_VALUE;
            for (MemberSpec m : spec.members()) {
                if (effective(spec, m).contains(t)) {
                    minSubscriber = Math.min(minSubscriber, loads.get(m.memberId()));
                }
            }
            for (Map.Entry<String, Map<Uuid, Set<Integer>>> e : result.entrySet()) {
                if (e.getValue().containsKey(t)) {
                    assertThat(loads.get(e.getKey())).as("load of %s, an owner of %s", e.getKey(), t)
                        .isLessThanOrEqualTo(minSubscriber + 1);
                }
            }
        }
        if (homogeneous(spec)) {
            List<Integer> active = new ArrayList<>();
            for (MemberSpec m : spec.members()) {
                if (!effective(spec, m).isEmpty()) {
                    active.add(loads.get(m.memberId()));
                }
            }
            if (!active.isEmpty()) {
                assertThat(Collections.max(active) - Collections.min(active)).isLessThanOrEqualTo(1);
            }
        }
    }

    /** Plain HashMap/HashSet copy, for equality checks that ignore the set implementation. */
    static Map<String, Map<Uuid, Set<Integer>>> plain(Map<String, Map<Uuid, Set<Integer>>> a) {
        Map<String, Map<Uuid, Set<Integer>>> out = new TreeMap<>();
        a.forEach((m, topics) -> {
            Map<Uuid, Set<Integer>> t = new TreeMap<>();
            topics.forEach((id, ps) -> t.put(id, new TreeSet<>(ps)));
            out.put(m, t);
        });
        return out;
    }
}
