package dev.varve.broker.group.assignor;

import org.apache.kafka.common.Uuid;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * An indexed, primitive view of an {@link AssignmentSpec} shared by the assignors.
 *
 * <p>Members are numbered 0..M-1 in the order the assignor chose (member id for uniform); topics
 * are the existing topics with at least one subscriber, numbered 0..T-1 in topic id order; every
 * partition of those topics has a global index {@code offset[t] + p}. Subscriptions are kept as
 * sorted int arrays so that the algorithms avoid boxing and hashing per partition.
 */
final class GroupModel {
    final List<MemberSpec> members;
    final int memberCount;
    /** Per member: the indexes of the existing topics it subscribes to, ascending. */
    final int[][] memberTopics;

    final Uuid[] topicIds;
    final int[] partitions;
    /** offset[t] is the global index of partition 0 of topic t; offset[T] is the partition total. */
    final int[] offset;
    final int totalPartitions;
    /** Per topic: the indexes of its subscribers, ascending. */
    final int[][] subscribers;
    private final Map<Uuid, Integer> topicIndex;

    GroupModel(AssignmentSpec spec, Comparator<MemberSpec> memberOrder) {
        List<MemberSpec> sorted = new ArrayList<>(spec.members());
        sorted.sort(memberOrder);
        Set<String> seen = new HashSet<>(sorted.size() * 2);
        for (MemberSpec m : sorted) {
            if (!seen.add(m.memberId())) {
                throw new IllegalArgumentException("Duplicate member id " + m.memberId());
            }
        }
        this.members = Collections.unmodifiableList(sorted);
        this.memberCount = sorted.size();

        // Topics that exist and have at least one subscriber, in id order.
        Map<Uuid, TopicSpec> existing = spec.topics();
        TreeSet<Uuid> used = new TreeSet<>();
        Set<Set<Uuid>> visited = Collections.newSetFromMap(new IdentityHashMap<>());
        for (MemberSpec m : sorted) {
            if (!visited.add(m.subscribedTopicIds())) {
                continue;
            }
            for (Uuid id : m.subscribedTopicIds()) {
                if (id != null && existing.containsKey(id)) {
                    used.add(id);
                }
            }
        }
        int t = used.size();
        this.topicIds = used.toArray(new Uuid[0]);
        this.partitions = new int[t];
        this.offset = new int[t + 1];
        this.topicIndex = new HashMap<>(t * 2);
        long total = 0;
        for (int i = 0; i < t; i++) {
            topicIndex.put(topicIds[i], i);
            partitions[i] = existing.get(topicIds[i]).partitions();
            offset[i] = (int) total;
            total += partitions[i];
        }
        if (total > Integer.MAX_VALUE - 8) {
            throw new IllegalArgumentException("Too many partitions: " + total);
        }
        this.offset[t] = (int) total;
        this.totalPartitions = (int) total;

        this.memberTopics = new int[memberCount][];
        int[] subscriberCounts = new int[t];
        int[] scratch = new int[t];
        // Members often share one subscription Set instance: index each instance once.
        Map<Set<Uuid>, int[]> indexed = new IdentityHashMap<>();
        for (int m = 0; m < memberCount; m++) {
            Set<Uuid> subscription = sorted.get(m).subscribedTopicIds();
            int[] topics = indexed.get(subscription);
            if (topics == null) {
                int n = 0;
                for (Uuid id : subscription) {
                    Integer ti = id == null ? null : topicIndex.get(id);
                    if (ti != null) {
                        scratch[n++] = ti;
                    }
                }
                topics = Arrays.copyOf(scratch, n);
                Arrays.sort(topics); // a Set has no duplicates
                indexed.put(subscription, topics);
            }
            memberTopics[m] = topics;
            for (int ti : topics) {
                subscriberCounts[ti]++;
            }
        }
        this.subscribers = new int[t][];
        for (int i = 0; i < t; i++) {
            subscribers[i] = new int[subscriberCounts[i]];
        }
        int[] fill = new int[t];
        for (int m = 0; m < memberCount; m++) {
            for (int ti : memberTopics[m]) {
                subscribers[ti][fill[ti]++] = m;
            }
        }
    }

    int topicCount() {
        return topicIds.length;
    }

    boolean subscribes(int member, int topic) {
        return Arrays.binarySearch(memberTopics[member], topic) >= 0;
    }

    /**
     * The previous owner of each partition (global index), -1 if none: a member's current target
     * counts only for topics it still subscribes to and partitions that still exist. Should two
     * members claim a partition, the first in member order keeps it.
     */
    int[] previousOwners() {
        int[] owner = new int[totalPartitions];
        Arrays.fill(owner, -1);
        for (int m = 0; m < memberCount; m++) {
            for (Map.Entry<Uuid, Set<Integer>> e : members.get(m).currentTarget().entrySet()) {
                Integer ti = e.getKey() == null ? null : topicIndex.get(e.getKey());
                if (ti == null || e.getValue() == null || !subscribes(m, ti)) {
                    continue;
                }
                int base = offset[ti];
                int count = partitions[ti];
                for (Integer p : e.getValue()) {
                    if (p != null && p >= 0 && p < count && owner[base + p] < 0) {
                        owner[base + p] = m;
                    }
                }
            }
        }
        return owner;
    }

    /** Whether all members with at least one existing subscribed topic subscribe to the same topics. */
    boolean homogeneous() {
        int[] first = null;
        for (int[] topics : memberTopics) {
            if (topics.length == 0) {
                continue;
            }
            if (first == null) {
                first = topics;
            } else if (!Arrays.equals(first, topics)) {
                return false;
            }
        }
        return true;
    }

    /**
     * Builds the result from an owner per global partition index (every entry a member index,
     * or -1 for a partition nobody gets, which the callers never produce).
     */
    Map<String, Map<Uuid, Set<Integer>>> toAssignment(int[] owner) {
        int[] counts = new int[memberCount + 1];
        for (int o : owner) {
            counts[o + 1]++;
        }
        // CSR: member m's partitions, in global order, at [start[m], start[m + 1]).
        int[] start = new int[memberCount + 1];
        for (int m = 0; m < memberCount; m++) {
            start[m + 1] = start[m] + counts[m + 1];
        }
        int[] slots = new int[start[memberCount]];
        int[] fill = Arrays.copyOf(start, memberCount);
        for (int g = 0; g < owner.length; g++) {
            int o = owner[g];
            if (o >= 0) {
                slots[fill[o]++] = g;
            }
        }
        Map<String, Map<Uuid, Set<Integer>>> result = new HashMap<>(memberCount * 4 / 3 + 1);
        for (int m = 0; m < memberCount; m++) {
            result.put(members.get(m).memberId(), slice(slots, start[m], start[m + 1]));
        }
        return Collections.unmodifiableMap(result);
    }

    private Map<Uuid, Set<Integer>> slice(int[] slots, int from, int to) {
        if (from == to) {
            return Map.of();
        }
        Map<Uuid, Set<Integer>> map = new HashMap<>();
        int i = from;
        int t = topicOf(slots[i]);
        while (i < to) {
            while (slots[i] >= offset[t + 1]) {
                t++;
            }
            int end = i;
            int limit = offset[t + 1];
            while (end < to && slots[end] < limit) {
                end++;
            }
            int[] local = new int[end - i];
            for (int k = 0; k < local.length; k++) {
                local[k] = slots[i + k] - offset[t];
            }
            map.put(topicIds[t], IntSets.of(local));
            i = end;
        }
        return Collections.unmodifiableMap(map);
    }

    private int topicOf(int global) {
        int i = Arrays.binarySearch(offset, global);
        if (i >= 0) {
            // offset[i] == global; skip topics with no partitions that share this offset
            while (offset[i + 1] == global) {
                i++;
            }
            return i;
        }
        return -i - 2;
    }
}
