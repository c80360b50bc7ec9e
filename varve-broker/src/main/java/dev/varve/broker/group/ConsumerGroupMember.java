package dev.varve.broker.group;

import org.apache.kafka.common.Uuid;

import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.BiPredicate;
import java.util.function.Predicate;

/**
 * A member of a KIP-848 consumer group, immutable: every change makes a new one, so the group's
 * next state can be computed, written and only then installed ({@link ConsumerGroupState}).
 *
 * @param subscribedTopicNames sorted, distinct
 * @param subscribedTopicRegex a RE2/J-style pattern (Java regex here), or null
 * @param serverAssignor       the assignor the member asked for, or null
 * @param memberEpoch          the epoch of the assignment the member has; 0 before its first;
 *                             {@link #LEAVE_STATIC} while a static member is away
 * @param previousMemberEpoch  the epoch before the last bump (a member whose response with the bump
 *                             was lost may still send it)
 * @param assigned             partitions the member owns, by topic id
 * @param pendingRevocation    partitions the member still owns but must give up before it moves on
 * @param unacknowledged       partitions of {@code assigned} sent to the member that it has not yet reported
 *                             owning: its client may be reconciling towards them, so a report without them
 *                             does not show that it gave them up (kept in memory only; a coordinator that
 *                             loads the group starts with none)
 */
public record ConsumerGroupMember(String memberId, String instanceId, String rackId, String clientId, String clientHost,
                                  List<String> subscribedTopicNames, String subscribedTopicRegex, String serverAssignor,
                                  int rebalanceTimeoutMs, int memberEpoch, int previousMemberEpoch, MemberState state,
                                  Map<Uuid, Set<Integer>> assigned, Map<Uuid, Set<Integer>> pendingRevocation,
                                  Map<Uuid, Set<Integer>> unacknowledged) {
    /** The epoch a static member leaves with (it keeps its assignment until its session ends). */
    public static final int LEAVE_STATIC = -2;
    /** The epoch a member leaves with. */
    public static final int LEAVE = -1;

    /** Kafka's member states, with the values of its ConsumerGroupCurrentMemberAssignment record. */
    public enum MemberState {
        /** The member has its whole target assignment. */
        STABLE((byte) 0),
        /** The member must give up partitions before it gets its next epoch. */
        UNREVOKED_PARTITIONS((byte) 1),
        /** The member has its epoch but waits for partitions other members still own. */
        UNRELEASED_PARTITIONS((byte) 2),
        UNKNOWN((byte) 127);

        public final byte value;

        MemberState(byte value) {
            this.value = value;
        }

        public static MemberState of(byte value) {
            for (MemberState s : values()) {
                if (s.value == value) {
                    return s;
                }
            }
            return UNKNOWN;
        }
    }

    public ConsumerGroupMember {
        subscribedTopicNames = List.copyOf(subscribedTopicNames);
        assigned = freeze(assigned);
        pendingRevocation = freeze(pendingRevocation);
        unacknowledged = freeze(intersect(unacknowledged, assigned));
    }

    /**
     * A member as its records describe it (a coordinator loading the group): what it was sent counts as
     * acknowledged. Every client reports its owned partitions in full after its coordinator moved (its
     * heartbeats failed meanwhile), so a report lags only within one coordinator's term; counting them
     * unacknowledged instead would hold up any member whose client sent no such report.
     */
    public ConsumerGroupMember(String memberId, String instanceId, String rackId, String clientId, String clientHost,
                               List<String> subscribedTopicNames, String subscribedTopicRegex, String serverAssignor,
                               int rebalanceTimeoutMs, int memberEpoch, int previousMemberEpoch, MemberState state,
                               Map<Uuid, Set<Integer>> assigned, Map<Uuid, Set<Integer>> pendingRevocation) {
        this(memberId, instanceId, rackId, clientId, clientHost, subscribedTopicNames, subscribedTopicRegex, serverAssignor,
                rebalanceTimeoutMs, memberEpoch, previousMemberEpoch, state, assigned, pendingRevocation, Map.of());
    }

    /** A member that has just joined: no assignment, epoch 0. */
    static ConsumerGroupMember joining(String memberId, String instanceId, String rackId, String clientId,
                                       String clientHost, List<String> topics, String regex, String assignor,
                                       int rebalanceTimeoutMs) {
        return new ConsumerGroupMember(memberId, instanceId, rackId, clientId, clientHost, sortedDistinct(topics), regex,
                assignor, rebalanceTimeoutMs, 0, 0, MemberState.STABLE, Map.of(), Map.of(), Map.of());
    }

    static List<String> sortedDistinct(List<String> topics) {
        return topics == null ? List.of() : topics.stream().distinct().sorted().toList();
    }

    boolean isStatic() {
        return instanceId != null;
    }

    /** Whether this member's stored metadata (record type 5) differs from {@code o}'s. */
    boolean sameMetadata(ConsumerGroupMember o) {
        return o != null && java.util.Objects.equals(instanceId, o.instanceId) && java.util.Objects.equals(rackId, o.rackId)
                && clientId.equals(o.clientId) && clientHost.equals(o.clientHost)
                && subscribedTopicNames.equals(o.subscribedTopicNames)
                && java.util.Objects.equals(subscribedTopicRegex, o.subscribedTopicRegex)
                && java.util.Objects.equals(serverAssignor, o.serverAssignor) && rebalanceTimeoutMs == o.rebalanceTimeoutMs;
    }

    /** Whether this member's stored assignment (record type 8) differs from {@code o}'s. */
    boolean sameAssignment(ConsumerGroupMember o) {
        return o != null && memberEpoch == o.memberEpoch && previousMemberEpoch == o.previousMemberEpoch
                && state == o.state && assigned.equals(o.assigned) && pendingRevocation.equals(o.pendingRevocation);
    }

    /** Whether the subscription (what the assignor reads) differs from {@code o}'s. */
    boolean sameSubscription(ConsumerGroupMember o) {
        return subscribedTopicNames.equals(o.subscribedTopicNames)
                && java.util.Objects.equals(subscribedTopicRegex, o.subscribedTopicRegex)
                && java.util.Objects.equals(rackId, o.rackId) && java.util.Objects.equals(serverAssignor, o.serverAssignor);
    }

    ConsumerGroupMember withMetadata(String rackId, String clientId, String clientHost, List<String> topics, String regex,
                                     String assignor, int rebalanceTimeoutMs) {
        return new ConsumerGroupMember(memberId, instanceId, rackId, clientId, clientHost, topics, regex, assignor,
                rebalanceTimeoutMs, memberEpoch, previousMemberEpoch, state, assigned, pendingRevocation, unacknowledged);
    }

    ConsumerGroupMember withEpoch(int epoch) {
        return new ConsumerGroupMember(memberId, instanceId, rackId, clientId, clientHost, subscribedTopicNames,
                subscribedTopicRegex, serverAssignor, rebalanceTimeoutMs, epoch, memberEpoch, state, assigned,
                pendingRevocation, unacknowledged);
    }

    /**
     * What the member's heartbeat tells about the partitions it was sent: those it reports owning
     * ({@code owned}, null when it did not report) are acknowledged. A member (re)joining with epoch 0 owns
     * nothing and has been sent nothing yet, so it has nothing to acknowledge.
     */
    ConsumerGroupMember acknowledging(Map<Uuid, Set<Integer>> owned, boolean joining) {
        Map<Uuid, Set<Integer>> left;
        if (joining) {
            left = Map.of();
        } else if (owned == null || unacknowledged.isEmpty()) {
            return this;
        } else {
            left = new HashMap<>();
            unacknowledged.forEach((t, ps) -> {
                Set<Integer> rest = new HashSet<>(ps);
                rest.removeAll(owned.getOrDefault(t, Set.of()));
                left.put(t, rest);
            });
        }
        return new ConsumerGroupMember(memberId, instanceId, rackId, clientId, clientHost, subscribedTopicNames,
                subscribedTopicRegex, serverAssignor, rebalanceTimeoutMs, memberEpoch, previousMemberEpoch, state, assigned,
                pendingRevocation, left);
    }

    /** After a (re)join, everything in the answer is on its way to the member: all of it unacknowledged. */
    ConsumerGroupMember sentInFull() {
        return new ConsumerGroupMember(memberId, instanceId, rackId, clientId, clientHost, subscribedTopicNames,
                subscribedTopicRegex, serverAssignor, rebalanceTimeoutMs, memberEpoch, previousMemberEpoch, state, assigned,
                pendingRevocation, assigned);
    }

    /** This member under a new member id (a static member back with a new id takes its old place). */
    ConsumerGroupMember withMemberId(String newMemberId, String clientId, String clientHost) {
        return new ConsumerGroupMember(newMemberId, instanceId, rackId, clientId, clientHost, subscribedTopicNames,
                subscribedTopicRegex, serverAssignor, rebalanceTimeoutMs, memberEpoch, previousMemberEpoch, state,
                assigned, pendingRevocation, unacknowledged);
    }

    /**
     * The member moved one step towards its target assignment (Kafka's CurrentAssignmentBuilder):
     * <ul>
     *   <li>while a partition it must give up was sent to it and it has not reported owning it, it waits
     *       as it is: its client may still be reconciling towards it, and a report without it proves nothing
     *       (partitions of deleted topics excepted: {@code topicExists});</li>
     *   <li>while it still owns partitions it must revoke, it waits ({@link MemberState#UNREVOKED_PARTITIONS})
     *       until {@code owned} (what it reported, null if it did not) no longer holds any of them;</li>
     *   <li>then it keeps the partitions both assignments share and gives up the others, which it must
     *       revoke before anything else: its epoch stays;</li>
     *   <li>with nothing to revoke, it takes its target's epoch and every target partition no other
     *       member owns ({@code ownedByOther}); the rest it waits for
     *       ({@link MemberState#UNRELEASED_PARTITIONS}) and gets as they are released.</li>
     * </ul>
     * A member never owns a partition another member owns or must still revoke.
     */
    ConsumerGroupMember reconcile(int targetEpoch, Map<Uuid, Set<Integer>> target, Map<Uuid, Set<Integer>> owned,
                                  BiPredicate<Uuid, Integer> ownedByOther, Predicate<Uuid> topicExists) {
        switch (state) {
            case UNREVOKED_PARTITIONS -> {
                if (owned == null || !containsAll(assigned, owned)) {
                    return this;
                }
                return nextAssignment(targetEpoch, target, owned, ownedByOther, topicExists);
            }
            case UNRELEASED_PARTITIONS, UNKNOWN -> {
                return nextAssignment(targetEpoch, target, owned, ownedByOther, topicExists);
            }
            default -> {
                if (memberEpoch == targetEpoch) {
                    return this;
                }
                return nextAssignment(targetEpoch, target, owned, ownedByOther, topicExists);
            }
        }
    }

    private ConsumerGroupMember nextAssignment(int targetEpoch, Map<Uuid, Set<Integer>> target, Map<Uuid, Set<Integer>> owned,
                                               BiPredicate<Uuid, Integer> ownedByOther, Predicate<Uuid> topicExists) {
        Map<Uuid, Set<Integer>> keep = new HashMap<>();
        Map<Uuid, Set<Integer>> revoke = new HashMap<>();
        Map<Uuid, Set<Integer>> next = new HashMap<>();
        boolean unreleased = false;
        for (Map.Entry<Uuid, Set<Integer>> e : assigned.entrySet()) {
            Set<Integer> wanted = target.getOrDefault(e.getKey(), Set.of());
            for (int p : e.getValue()) {
                (wanted.contains(p) ? keep : revoke).computeIfAbsent(e.getKey(), k -> new HashSet<>()).add(p);
            }
        }
        if (awaitsAcknowledgement(revoke, topicExists)) {
            return this;
        }
        if (!revoke.isEmpty() && ownsAny(owned, revoke)) {
            return new ConsumerGroupMember(memberId, instanceId, rackId, clientId, clientHost, subscribedTopicNames,
                    subscribedTopicRegex, serverAssignor, rebalanceTimeoutMs, memberEpoch, previousMemberEpoch,
                    MemberState.UNREVOKED_PARTITIONS, keep, revoke, unacknowledged);
        }
        for (Map.Entry<Uuid, Set<Integer>> e : target.entrySet()) {
            Set<Integer> have = assigned.getOrDefault(e.getKey(), Set.of());
            for (int p : e.getValue()) {
                if (have.contains(p) || !ownedByOther.test(e.getKey(), p)) {
                    next.computeIfAbsent(e.getKey(), k -> new HashSet<>()).add(p);
                } else {
                    unreleased = true;
                }
            }
        }
        Map<Uuid, Set<Integer>> sent = new HashMap<>();
        unacknowledged.forEach((t, ps) -> sent.put(t, new HashSet<>(ps)));
        next.forEach((t, ps) -> {
            Set<Integer> had = assigned.getOrDefault(t, Set.of());
            for (int p : ps) {
                if (!had.contains(p)) {
                    sent.computeIfAbsent(t, k -> new HashSet<>()).add(p);
                }
            }
        });
        int previous = targetEpoch == memberEpoch ? previousMemberEpoch : memberEpoch;
        return new ConsumerGroupMember(memberId, instanceId, rackId, clientId, clientHost, subscribedTopicNames,
                subscribedTopicRegex, serverAssignor, rebalanceTimeoutMs, targetEpoch, previous,
                unreleased ? MemberState.UNRELEASED_PARTITIONS : MemberState.STABLE, next, Map.of(), sent);
    }

    /**
     * Whether one of {@code revoke} was sent to the member and not yet reported owned: its client may hold it
     * soon whatever it reports now, so it is not given up yet. A deleted topic's partitions nobody else can get.
     */
    private boolean awaitsAcknowledgement(Map<Uuid, Set<Integer>> revoke, Predicate<Uuid> topicExists) {
        for (Map.Entry<Uuid, Set<Integer>> e : revoke.entrySet()) {
            Set<Integer> sent = unacknowledged.getOrDefault(e.getKey(), Set.of());
            if (!sent.isEmpty() && topicExists.test(e.getKey())) {
                for (int p : e.getValue()) {
                    if (sent.contains(p)) {
                        return true;
                    }
                }
            }
        }
        return false;
    }

    /** The partitions of {@code a} that are also in {@code b}. */
    private static Map<Uuid, Set<Integer>> intersect(Map<Uuid, Set<Integer>> a, Map<Uuid, Set<Integer>> b) {
        if (a.isEmpty() || a == b) {
            return a;
        }
        Map<Uuid, Set<Integer>> out = new HashMap<>();
        a.forEach((t, ps) -> {
            Set<Integer> in = b.getOrDefault(t, Set.of());
            Set<Integer> both = new HashSet<>(ps);
            both.retainAll(in);
            out.put(t, both);
        });
        return out;
    }

    /**
     * Whether the member still owns one of {@code revoke} by what it reported ({@code owned}; not reported:
     * assume it does). One that owns none of them (it rejoined, or revoked them already) need not wait.
     */
    private static boolean ownsAny(Map<Uuid, Set<Integer>> owned, Map<Uuid, Set<Integer>> revoke) {
        if (owned == null) {
            return true;
        }
        for (Map.Entry<Uuid, Set<Integer>> e : revoke.entrySet()) {
            Set<Integer> mine = owned.getOrDefault(e.getKey(), Set.of());
            for (int p : e.getValue()) {
                if (mine.contains(p)) {
                    return true;
                }
            }
        }
        return false;
    }

    /** Whether every partition of {@code part} is in {@code whole}. */
    static boolean containsAll(Map<Uuid, Set<Integer>> whole, Map<Uuid, Set<Integer>> part) {
        for (Map.Entry<Uuid, Set<Integer>> e : part.entrySet()) {
            if (!e.getValue().isEmpty() && !whole.getOrDefault(e.getKey(), Set.of()).containsAll(e.getValue())) {
                return false;
            }
        }
        return true;
    }

    static int count(Map<Uuid, Set<Integer>> partitions) {
        int n = 0;
        for (Set<Integer> s : partitions.values()) {
            n += s.size();
        }
        return n;
    }

    /** An unmodifiable copy without empty topics, so equal assignments compare equal. */
    static Map<Uuid, Set<Integer>> freeze(Map<Uuid, Set<Integer>> m) {
        if (m.isEmpty()) {
            return Map.of();
        }
        Map<Uuid, Set<Integer>> out = new HashMap<>();
        m.forEach((t, ps) -> {
            if (!ps.isEmpty()) {
                out.put(t, Set.copyOf(ps));
            }
        });
        return Collections.unmodifiableMap(out);
    }
}
