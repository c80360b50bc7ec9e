package dev.varve.broker.group;

import org.apache.kafka.clients.consumer.ConsumerPartitionAssignor;
import org.apache.kafka.clients.consumer.internals.ConsumerProtocol;
import org.apache.kafka.common.TopicPartition;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;

/**
 * A consumer group of the classic protocol: its state, generation, members, committed offsets and
 * pending transactional offsets.
 *
 * <pre>
 *   Empty --join--> PreparingRebalance --all joined / rebalance timeout--> CompletingRebalance
 *     ^                 ^          |                                          | leader's SyncGroup
 *     |                 |          +--no members left--> Empty                v
 *     +--last leaves----+<------------- member joins, leaves or expires ---- Stable
 *   any --DeleteGroups / all offsets expired while empty--> Dead (removed)
 * </pre>
 *
 * <p>Not thread-safe: every access holds the group's monitor ({@code synchronized (group)}).
 * The coordinator's protocol logic lives in {@link GroupCoordinator}; this class keeps the data and
 * its invariants (a leader exists iff members do; the static-member index matches the members).
 */
final class ClassicGroup {
    enum State {
        EMPTY("Empty"), PREPARING_REBALANCE("PreparingRebalance"), COMPLETING_REBALANCE("CompletingRebalance"),
        STABLE("Stable"), DEAD("Dead");

        final String kafkaName;

        State(String kafkaName) {
            this.kafkaName = kafkaName;
        }
    }

    final String groupId;
    private State state = State.EMPTY;
    /** When the group entered its current state (offset retention of an empty group counts from it). */
    long stateTimestampMs;
    int generationId;
    String protocolType;
    String protocolName;
    String leaderId;
    private final LinkedHashMap<String, GroupMember> members = new LinkedHashMap<>();
    private final Map<String, String> staticMembers = new HashMap<>();
    /** Members told their id (MEMBER_ID_REQUIRED) that have not joined with it yet; value: timer cancel. */
    final Map<String, Runnable> pendingMembers = new HashMap<>();
    /** Set when a member joins during the initial delayed rebalance, which then waits longer. */
    boolean newMemberAdded;
    /** Identifies the scheduled join completion; a firing with an older token is ignored. */
    long joinTimerToken;
    Runnable joinTimer;
    /** The scheduled join completion is the initial delay, which does not complete early. */
    boolean initialDelay;
    /** Members of the current generation that have not sent SyncGroup yet. */
    final Set<String> pendingSync = new HashSet<>();
    Runnable pendingSyncTimer;
    final Map<TopicPartition, GroupRecords.OffsetValue> offsets = new HashMap<>();
    /**
     * Per partition, the offsets-topic position of the last commit or tombstone applied to
     * {@link #offsets}: writes complete in any order, and one that completes after a later one
     * (a smaller position) must not undo it; replay records the positions it applies. Absent: nothing
     * applied for the partition yet.
     */
    private final Map<TopicPartition, Long> offsetWrittenAt = new HashMap<>();
    /**
     * Transactional offsets (TxnOffsetCommit) appended but not yet committed or aborted, by producer id:
     * invisible to OffsetFetch until the producer's COMMIT marker applies them (Kafka's pending
     * transactional offsets). Each keeps its offsets-topic position, which decides against other writes.
     */
    private final Map<Long, Map<TopicPartition, PendingOffset>> pendingTxnOffsets = new HashMap<>();

    /** A transactional offset and the offsets-topic position of its record. */
    record PendingOffset(GroupRecords.OffsetValue value, long writtenAt) {
    }

    /**
     * The group's deletion (DeleteGroups, or all offsets of an empty group expired) is being written:
     * it takes no new changes, which would land after its tombstones; it is dead once they are committed.
     */
    boolean deleting;

    /**
     * The group's membership under the KIP-848 consumer protocol ({@link ConsumerGroupCoordinator}); null
     * while the group is a classic one. A consumer group has no classic members (its classic state stays
     * Empty); its offsets are kept here like any group's.
     */
    ConsumerGroupState consumer;
    /** Per consumer-protocol member: cancels its session timeout. */
    final Map<String, Runnable> consumerSessionTimers = new HashMap<>();
    /** Per consumer-protocol member revoking partitions: cancels its rebalance timeout. */
    final Map<String, Runnable> consumerRebalanceTimers = new HashMap<>();

    /** The group's membership as a KIP-932 share group ({@link ShareGroupCoordinator}); null otherwise. */
    ShareGroupState share;
    /** Per share group member: cancels its session timeout. */
    final Map<String, Runnable> shareSessionTimers = new HashMap<>();

    boolean isConsumerGroup() {
        return consumer != null;
    }

    boolean isShareGroup() {
        return share != null;
    }

    /** No members under any protocol. */
    boolean hasNoMembers() {
        return members.isEmpty() && (consumer == null || consumer.isEmpty()) && (share == null || share.isEmpty());
    }

    ClassicGroup(String groupId, long nowMs) {
        this.groupId = groupId;
        this.stateTimestampMs = nowMs;
    }

    State state() {
        return state;
    }

    /** Dead, or being deleted: requests are answered as for a group that no longer exists here. */
    boolean gone() {
        return state == State.DEAD || deleting;
    }

    /**
     * Applies a committed offset written at {@code writtenAt} unless a later write (commit or
     * tombstone) of the partition was applied already.
     */
    void applyCommit(TopicPartition tp, GroupRecords.OffsetValue value, long writtenAt) {
        if (offsetWrittenAt.getOrDefault(tp, Long.MIN_VALUE) < writtenAt) {
            offsets.put(tp, value);
            offsetWrittenAt.put(tp, writtenAt);
        }
    }

    /**
     * Applies a tombstone written at {@code writtenAt}, unless a later commit of the partition was
     * applied; it also drops the partition's pending transactional offsets written before it (as Kafka's
     * replay of a tombstone does).
     */
    void applyDelete(TopicPartition tp, long writtenAt) {
        if (offsetWrittenAt.getOrDefault(tp, Long.MIN_VALUE) < writtenAt) {
            offsets.remove(tp);
            offsetWrittenAt.put(tp, writtenAt);
        }
        pendingTxnOffsets.values().removeIf(pending -> {
            PendingOffset p = pending.get(tp);
            if (p != null && p.writtenAt() < writtenAt) {
                pending.remove(tp);
            }
            return pending.isEmpty();
        });
    }

    /** Keeps a transactional offset of {@code producerId} as pending (a later one of the partition wins). */
    void addPending(long producerId, TopicPartition tp, GroupRecords.OffsetValue value, long writtenAt) {
        Map<TopicPartition, PendingOffset> pending = pendingTxnOffsets.computeIfAbsent(producerId, id -> new HashMap<>());
        PendingOffset current = pending.get(tp);
        if (current == null || current.writtenAt() < writtenAt) {
            pending.put(tp, new PendingOffset(value, writtenAt));
        }
    }

    /** Forgets a pending transactional offset whose write failed (if it is still the one written at {@code writtenAt}). */
    void removePending(long producerId, TopicPartition tp, long writtenAt) {
        Map<TopicPartition, PendingOffset> pending = pendingTxnOffsets.get(producerId);
        if (pending != null && pending.get(tp) != null && pending.get(tp).writtenAt() == writtenAt) {
            pending.remove(tp);
            if (pending.isEmpty()) {
                pendingTxnOffsets.remove(producerId);
            }
        }
    }

    /**
     * Ends {@code producerId}'s transaction in this group for its pending offsets written before
     * {@code markerOffset}: on commit they become the committed ones, each only if written after the
     * partition's last applied commit or tombstone (Kafka compares the records' log offsets); on abort
     * they are dropped.
     */
    void completeTransaction(long producerId, boolean commit, long markerOffset) {
        Map<TopicPartition, PendingOffset> pending = pendingTxnOffsets.get(producerId);
        if (pending == null) {
            return;
        }
        for (var it = pending.entrySet().iterator(); it.hasNext(); ) {
            Map.Entry<TopicPartition, PendingOffset> e = it.next();
            if (e.getValue().writtenAt() < markerOffset) {
                it.remove();
                if (commit) {
                    applyCommit(e.getKey(), e.getValue().value(), e.getValue().writtenAt());
                }
            }
        }
        if (pending.isEmpty()) {
            pendingTxnOffsets.remove(producerId);
        }
    }

    /** Whether some transaction has a pending offset for the partition. */
    boolean hasPendingOffset(TopicPartition tp) {
        for (Map<TopicPartition, PendingOffset> pending : pendingTxnOffsets.values()) {
            if (pending.containsKey(tp)) {
                return true;
            }
        }
        return false;
    }

    /** Whether any transaction of this group is open (has offsets pending). */
    boolean hasPendingOffsets() {
        return !pendingTxnOffsets.isEmpty();
    }

    /** The partitions with a pending transactional offset. */
    Set<TopicPartition> pendingPartitions() {
        Set<TopicPartition> out = new HashSet<>();
        pendingTxnOffsets.values().forEach(p -> out.addAll(p.keySet()));
        return out;
    }

    /** The producers with pending offsets here, and their offsets (read-only). */
    Map<Long, Map<TopicPartition, PendingOffset>> pendingOffsets() {
        return java.util.Collections.unmodifiableMap(pendingTxnOffsets);
    }

    /** Drops every pending transactional offset (the group is deleted or unloaded). */
    void clearPending() {
        pendingTxnOffsets.clear();
    }

    boolean is(State s) {
        return state == s;
    }

    void transitionTo(State next, long nowMs) {
        state = next;
        stateTimestampMs = nowMs;
    }

    Collection<GroupMember> members() {
        return members.values();
    }

    int size() {
        return members.size();
    }

    boolean has(String memberId) {
        return members.containsKey(memberId);
    }

    GroupMember get(String memberId) {
        return members.get(memberId);
    }

    boolean isLeader(String memberId) {
        return memberId.equals(leaderId);
    }

    void add(GroupMember member) {
        if (members.isEmpty()) {
            protocolType = member.protocolType;
        }
        members.put(member.memberId(), member);
        if (member.isStatic()) {
            staticMembers.put(member.groupInstanceId, member.memberId());
        }
        if (leaderId == null) {
            leaderId = member.memberId();
        }
    }

    void remove(String memberId) {
        GroupMember m = members.remove(memberId);
        if (m != null && m.isStatic()) {
            staticMembers.remove(m.groupInstanceId, memberId);
        }
        if (memberId.equals(leaderId)) {
            leaderId = members.isEmpty() ? null : members.keySet().iterator().next();
        }
    }

    /** The member id currently holding a static instance id, or null. */
    String staticMemberId(String groupInstanceId) {
        return groupInstanceId == null ? null : staticMembers.get(groupInstanceId);
    }

    /** Gives a static member a new member id (it rejoined without knowing its old one). */
    void replaceStaticMember(String groupInstanceId, String oldMemberId, String newMemberId) {
        GroupMember m = members.remove(oldMemberId);
        m.setMemberId(newMemberId);
        members.put(newMemberId, m);
        staticMembers.put(groupInstanceId, newMemberId);
        if (oldMemberId.equals(leaderId)) {
            leaderId = newMemberId;
        }
    }

    int awaitingJoinCount() {
        int n = 0;
        for (GroupMember m : members.values()) {
            if (m.isAwaitingJoin()) {
                n++;
            }
        }
        return n;
    }

    boolean allMembersJoined() {
        return awaitingJoinCount() == members.size() && pendingMembers.isEmpty();
    }

    int maxRebalanceTimeoutMs() {
        int max = 0;
        for (GroupMember m : members.values()) {
            max = Math.max(max, m.rebalanceTimeoutMs);
        }
        return max;
    }

    /** Protocols every member supports (any, when there are no members). */
    private Set<String> candidateProtocols() {
        Set<String> candidates = null;
        for (GroupMember m : members.values()) {
            Set<String> names = new HashSet<>();
            m.protocols.forEach(p -> names.add(p.name()));
            if (candidates == null) {
                candidates = names;
            } else {
                candidates.retainAll(names);
            }
        }
        return candidates;
    }

    /** Whether a member with these protocols may join: same protocol type, one protocol in common. */
    boolean supports(String memberProtocolType, List<GroupMember.Protocol> protocols) {
        if (members.isEmpty()) {
            return memberProtocolType != null && !memberProtocolType.isEmpty() && !protocols.isEmpty();
        }
        if (!memberProtocolType.equals(protocolType)) {
            return false;
        }
        Set<String> candidates = candidateProtocols();
        for (GroupMember.Protocol p : protocols) {
            if (candidates.contains(p.name())) {
                return true;
            }
        }
        return false;
    }

    /** The protocol most members prefer among those all support (ties: the name first in order). */
    String selectProtocol() {
        Set<String> candidates = candidateProtocols();
        Map<String, Integer> votes = new TreeMap<>();
        for (GroupMember m : members.values()) {
            votes.merge(m.vote(candidates), 1, Integer::sum);
        }
        return votes.entrySet().stream().max(Map.Entry.comparingByValue()).orElseThrow().getKey();
    }

    /** Starts the next generation once every member has joined (or the rebalance timed out). */
    void initNextGeneration(long nowMs) {
        generationId++;
        if (members.isEmpty()) {
            protocolName = null;
            transitionTo(State.EMPTY, nowMs);
        } else {
            protocolName = selectProtocol();
            transitionTo(State.COMPLETING_REBALANCE, nowMs);
        }
    }

    /**
     * Topics the members subscribe to, when the group uses the consumer protocol and every
     * subscription parses; empty when the group has no members, absent when it cannot be known.
     */
    Optional<Set<String>> subscribedTopics() {
        if (members.isEmpty()) {
            return Optional.of(Set.of());
        }
        if (!ConsumerProtocol.PROTOCOL_TYPE.equals(protocolType) || protocolName == null) {
            return Optional.empty();
        }
        Set<String> topics = new HashSet<>();
        for (GroupMember m : members.values()) {
            byte[] meta = m.metadata(protocolName);
            if (meta == null) {
                return Optional.empty();
            }
            try {
                ConsumerPartitionAssignor.Subscription s = ConsumerProtocol.deserializeSubscription(ByteBuffer.wrap(meta));
                topics.addAll(s.topics());
            } catch (RuntimeException e) {
                return Optional.empty();
            }
        }
        return Optional.of(topics);
    }

    /** The stored form of this group's membership (written when a generation completes). */
    GroupRecords.GroupValue toValue() {
        List<GroupRecords.MemberValue> out = new ArrayList<>();
        for (GroupMember m : members.values()) {
            byte[] meta = protocolName == null ? null : m.metadata(protocolName);
            out.add(new GroupRecords.MemberValue(m.memberId(), m.groupInstanceId, m.clientId, m.clientHost,
                    m.rebalanceTimeoutMs, m.sessionTimeoutMs, meta == null ? new byte[0] : meta, m.assignment));
        }
        return new GroupRecords.GroupValue(protocolType, generationId, protocolName, leaderId, stateTimestampMs, out);
    }

    /** Restores membership from its stored form (at start-up), replacing what is in memory. */
    void loadFrom(GroupRecords.GroupValue v, long nowMs) {
        members.clear();
        staticMembers.clear();
        pendingMembers.clear();
        protocolType = v.protocolType() == null || v.protocolType().isEmpty() ? null : v.protocolType();
        generationId = v.generationId();
        protocolName = v.protocolName();
        for (GroupRecords.MemberValue mv : v.members()) {
            GroupMember m = new GroupMember(mv.memberId(), mv.groupInstanceId(), mv.clientId(), mv.clientHost(),
                    mv.rebalanceTimeoutMs(), mv.sessionTimeoutMs(), protocolType,
                    List.of(new GroupMember.Protocol(protocolName == null ? "" : protocolName, mv.subscription())));
            m.assignment = mv.assignment();
            members.put(m.memberId(), m);
            if (m.isStatic()) {
                staticMembers.put(m.groupInstanceId, m.memberId());
            }
        }
        leaderId = v.leaderId() != null && members.containsKey(v.leaderId()) ? v.leaderId()
                : members.isEmpty() ? null : members.keySet().iterator().next();
        transitionTo(members.isEmpty() ? State.EMPTY : State.STABLE,
                v.currentStateTimestampMs() >= 0 ? v.currentStateTimestampMs() : nowMs);
    }
}
