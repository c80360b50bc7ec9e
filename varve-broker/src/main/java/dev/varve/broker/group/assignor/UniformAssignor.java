package dev.varve.broker.group.assignor;

import org.apache.kafka.common.Uuid;

import java.util.Arrays;
import java.util.Comparator;
import java.util.Map;
import java.util.Set;

/**
 * The server-side "uniform" assignor, Apache Kafka 4.x's default: balanced first, sticky second.
 *
 * <p>What it guarantees (and the tests check):
 * <ul>
 *   <li><b>Complete:</b> each partition of each existing topic with at least one subscriber goes to
 *       exactly one member subscribed to that topic; members without an existing subscribed topic
 *       get nothing.</li>
 *   <li><b>Balanced:</b> for every topic T, a member owning a partition of T has at most one
 *       partition more, in total, than any other subscriber of T (so no single partition move
 *       within a topic's subscribers improves the balance). When all members that subscribe to
 *       anything subscribe to the same topics (homogeneous), this means their partition counts
 *       differ by at most one. As in Kafka, balance is over total partition counts, not per topic.</li>
 *   <li><b>Sticky:</b> a partition stays with its previous owner (the member's
 *       {@code currentTarget}) unless balance requires otherwise. Feeding a result back as the
 *       current target returns it unchanged. In a homogeneous group the number of partitions that
 *       change owner is the least any balanced assignment allows: when a member joins a balanced
 *       group of N, exactly {@code floor(P / (N + 1))} partitions move (all to it); when one
 *       leaves, only its partitions move.</li>
 *   <li><b>Deterministic:</b> the result depends on the spec's content only, not on the order of
 *       its member list or of any set or map (ties are broken by member id and topic id).</li>
 * </ul>
 *
 * <p>Homogeneous groups take a quota path like Kafka's: each member's quota is P / N, and the
 * P % N members that keep the most of their previous partitions get one more; partitions above a
 * quota are revoked, and the free partitions are dealt round-robin to the members below quota.
 * Other groups keep their valid previous partitions, give each free partition to its topic's least
 * loaded subscriber (topics with the most partitions per subscriber first, as Kafka), then move
 * partitions, one topic at a time, from its most loaded owner to its least loaded subscriber while
 * the two differ by two or more, preferring partitions that are new to their owner. Each move
 * lowers the sum of squared member loads, so this ends; unlike Kafka, which caps the balancing at
 * 16 rounds, it runs until the balance property holds. The member's rack is not used (as in Kafka's
 * uniform assignor).
 */
public final class UniformAssignor implements ServerAssignor {
    public static final String NAME = "uniform";
    static final UniformAssignor INSTANCE = new UniformAssignor();

    static final Comparator<MemberSpec> ORDER = Comparator.comparing(MemberSpec::memberId);

    @Override
    public String name() {
        return NAME;
    }

    @Override
    public Map<String, Map<Uuid, Set<Integer>>> assign(AssignmentSpec spec) {
        GroupModel model = new GroupModel(spec, ORDER);
        int[] owner = model.homogeneous() ? homogeneous(model) : general(model);
        return model.toAssignment(owner);
    }

    /** The general (heterogeneous) algorithm whatever the subscriptions; for tests. */
    Map<String, Map<Uuid, Set<Integer>>> assignGeneral(AssignmentSpec spec) {
        GroupModel model = new GroupModel(spec, ORDER);
        return model.toAssignment(general(model));
    }

    // ---------------------------------------------------------------- homogeneous

    private static int[] homogeneous(GroupModel model) {
        int[] owner = model.previousOwners();
        int members = model.memberCount;
        int total = model.totalPartitions;
        int active = 0;
        for (int m = 0; m < members; m++) {
            if (model.memberTopics[m].length > 0) {
                active++;
            }
        }
        if (active == 0) {
            return owner; // no subscribed topic exists, so there is no partition either
        }
        int[] kept = new int[members];
        for (int o : owner) {
            if (o >= 0) {
                kept[o]++;
            }
        }
        // Quotas: P / N each; the P % N members keeping the most (then lowest index) get one more,
        // which maximises the partitions that stay where they are.
        long[] byKept = new long[active];
        int n = 0;
        for (int m = 0; m < members; m++) {
            if (model.memberTopics[m].length > 0) {
                byKept[n++] = ((long) (Integer.MAX_VALUE - kept[m]) << 32) | m;
            }
        }
        Arrays.sort(byKept);
        int minQuota = total / active;
        int extra = total % active;
        int[] quota = new int[members];
        for (int i = 0; i < active; i++) {
            quota[(int) byKept[i]] = minQuota + (i < extra ? 1 : 0);
        }
        // Revoke what exceeds a quota (a member keeps its lowest partitions).
        int[] used = new int[members];
        for (int g = 0; g < total; g++) {
            int m = owner[g];
            if (m >= 0) {
                if (used[m] < quota[m]) {
                    used[m]++;
                } else {
                    owner[g] = -1;
                }
            }
        }
        // Deal the free partitions round-robin to the members below quota, in member order.
        int[] ring = new int[active];
        int ringSize = 0;
        for (int m = 0; m < members; m++) {
            if (model.memberTopics[m].length > 0 && used[m] < quota[m]) {
                ring[ringSize++] = m;
            }
        }
        int g = 0;
        while (ringSize > 0) {
            int next = 0;
            for (int i = 0; i < ringSize; i++) {
                int m = ring[i];
                while (owner[g] >= 0) {
                    g++; // the quotas add up to P, so a free partition exists for every open slot
                }
                owner[g++] = m;
                if (++used[m] < quota[m]) {
                    ring[next++] = m;
                }
            }
            ringSize = next;
        }
        return owner;
    }

    // ---------------------------------------------------------------- general

    private static int[] general(GroupModel model) {
        int[] previous = model.previousOwners();
        int[] owner = previous.clone();
        int members = model.memberCount;
        int[] load = new int[members];
        for (int o : owner) {
            if (o >= 0) {
                load[o]++;
            }
        }
        int[] topics = topicOrder(model);
        MemberHeap least = new MemberHeap(members, load, false);
        MemberHeap most = new MemberHeap(members, load, true);

        // Free partitions go to their topic's least loaded subscriber.
        for (int t : topics) {
            int from = model.offset[t];
            int to = model.offset[t + 1];
            boolean heapReady = false;
            for (int g = from; g < to; g++) {
                if (owner[g] >= 0) {
                    continue;
                }
                if (!heapReady) {
                    for (int m : model.subscribers[t]) {
                        least.add(m);
                    }
                    heapReady = true;
                }
                int m = least.peek();
                owner[g] = m;
                load[m]++;
                least.update(m);
            }
            least.clear();
        }

        // Balance until no topic has an owner two or more partitions above one of its subscribers.
        Balancer balancer = new Balancer(model, previous, owner, load, least, most);
        boolean moved = true;
        while (moved) {
            moved = false;
            for (int t : topics) {
                moved |= balancer.balance(t);
            }
        }
        return owner;
    }

    /** Topics by partitions per subscriber descending, then subscriber count ascending, then id. */
    private static int[] topicOrder(GroupModel model) {
        int count = model.topicCount();
        Integer[] order = new Integer[count];
        for (int t = 0; t < count; t++) {
            order[t] = t;
        }
        Arrays.sort(order, (a, b) -> {
            long pa = model.partitions[a];
            long pb = model.partitions[b];
            long sa = model.subscribers[a].length;
            long sb = model.subscribers[b].length;
            int c = Long.compare(pb * sa, pa * sb); // pb / sb vs pa / sa, descending
            if (c == 0) {
                c = Long.compare(sa, sb);
            }
            return c != 0 ? c : Integer.compare(a, b); // topic indexes follow topic id order
        });
        int[] out = new int[count];
        for (int t = 0; t < count; t++) {
            out[t] = order[t];
        }
        return out;
    }

    /** Moves partitions of one topic from its most loaded owners to its least loaded subscribers. */
    private static final class Balancer {
        private final GroupModel model;
        private final int[] previous;
        private final int[] owner;
        private final int[] load;
        private final MemberHeap least;
        private final MemberHeap most;
        /** Per member, for the topic at hand: its partitions of the topic at slots[start, end). */
        private final int[] start;
        private final int[] end;
        private final int[] slots;

        Balancer(GroupModel model, int[] previous, int[] owner, int[] load, MemberHeap least, MemberHeap most) {
            this.model = model;
            this.previous = previous;
            this.owner = owner;
            this.load = load;
            this.least = least;
            this.most = most;
            this.start = new int[model.memberCount];
            this.end = new int[model.memberCount];
            int widest = 0;
            for (int p : model.partitions) {
                widest = Math.max(widest, p);
            }
            this.slots = new int[widest];
        }

        /** Returns whether a partition moved. */
        boolean balance(int t) {
            int[] subs = model.subscribers[t];
            if (subs.length < 2) {
                return false;
            }
            int min = Integer.MAX_VALUE;
            int max = Integer.MIN_VALUE;
            for (int m : subs) {
                min = Math.min(min, load[m]);
                max = Math.max(max, load[m]);
            }
            if (max - min < 2) {
                return false;
            }
            int from = model.offset[t];
            int to = model.offset[t + 1];
            for (int m : subs) {
                end[m] = 0; // used as a count first
            }
            int ownerMax = Integer.MIN_VALUE;
            for (int g = from; g < to; g++) {
                int m = owner[g];
                end[m]++;
                ownerMax = Math.max(ownerMax, load[m]);
            }
            if (ownerMax - min < 2) {
                return false;
            }
            int next = 0;
            for (int m : subs) {
                int c = end[m];
                start[m] = next;
                end[m] = next;
                next += c;
            }
            // Partitions the owner already had before this assignment first, so that the ones new
            // to it (popped from the end) move first.
            for (int g = from; g < to; g++) {
                int m = owner[g];
                if (previous[g] == m) {
                    slots[end[m]++] = g;
                }
            }
            for (int g = from; g < to; g++) {
                int m = owner[g];
                if (previous[g] != m) {
                    slots[end[m]++] = g;
                }
            }
            for (int m : subs) {
                least.add(m);
                if (end[m] > start[m]) {
                    most.add(m);
                }
            }
            boolean moved = false;
            while (true) {
                int giver = most.peek();
                int taker = least.peek();
                if (giver < 0 || load[giver] - load[taker] < 2) {
                    break;
                }
                // A taker's load stays within one of the least, so it never becomes a giver here:
                // the partitions it receives need no slot.
                int g = slots[--end[giver]];
                owner[g] = taker;
                load[giver]--;
                load[taker]++;
                moved = true;
                if (end[giver] == start[giver]) {
                    most.remove(giver);
                } else {
                    most.update(giver);
                }
                if (most.contains(taker)) {
                    most.update(taker);
                }
                least.update(taker);
                least.update(giver);
            }
            least.clear();
            most.clear();
            return moved;
        }
    }
}
