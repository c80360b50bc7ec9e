package dev.varve.broker.group;

import org.apache.kafka.common.Uuid;

import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.function.BiPredicate;

/**
 * The membership of a KIP-848 consumer group at one moment, immutable. The coordinator computes the
 * next state from a heartbeat or a timer ({@link ConsumerGroupLogic}), writes the difference to
 * {@code __consumer_offsets} ({@link ConsumerGroupRecords}) and installs it once the local append
 * succeeded; replay rebuilds the same state from those records.
 *
 * @param groupEpoch      grows whenever the members or their subscriptions, or the subscribed
 *                        topics' partitions, change
 * @param assignmentEpoch the group epoch the target assignment was computed for
 * @param metadataHash    a hash of the subscribed topics (id, name, partitions) when the group epoch
 *                        last grew: a different hash means the topics changed
 * @param members         by member id, in join order
 * @param target          the target assignment, by member id
 */
public final class ConsumerGroupState {
    public static final ConsumerGroupState EMPTY = new ConsumerGroupState(0, 0, 0, Map.of(), Map.of());

    private final int groupEpoch;
    private final int assignmentEpoch;
    private final long metadataHash;
    private final Map<String, ConsumerGroupMember> members;
    private final Map<String, Map<Uuid, Set<Integer>>> target;
    /** Who owns (or must still revoke) each partition: built when first needed. */
    private Map<Uuid, Map<Integer, String>> owners;

    public ConsumerGroupState(int groupEpoch, int assignmentEpoch, long metadataHash,
                              Map<String, ConsumerGroupMember> members, Map<String, Map<Uuid, Set<Integer>>> target) {
        this.groupEpoch = groupEpoch;
        this.assignmentEpoch = assignmentEpoch;
        this.metadataHash = metadataHash;
        this.members = Collections.unmodifiableMap(new LinkedHashMap<>(members));
        // shallow: the assignments are frozen where they are made (ConsumerGroupLogic, replay)
        this.target = Collections.unmodifiableMap(new HashMap<>(target));
    }

    public int groupEpoch() {
        return groupEpoch;
    }

    public int assignmentEpoch() {
        return assignmentEpoch;
    }

    public long metadataHash() {
        return metadataHash;
    }

    public Map<String, ConsumerGroupMember> members() {
        return members;
    }

    public Map<String, Map<Uuid, Set<Integer>>> target() {
        return target;
    }

    public Map<Uuid, Set<Integer>> targetOf(String memberId) {
        return target.getOrDefault(memberId, Map.of());
    }

    public boolean isEmpty() {
        return members.isEmpty();
    }

    /** Kafka's names: Empty, Assigning (the target is behind the group epoch), Reconciling, Stable. */
    public String stateName() {
        if (members.isEmpty()) {
            return "Empty";
        }
        if (assignmentEpoch != groupEpoch) {
            return "Assigning";
        }
        for (ConsumerGroupMember m : members.values()) {
            if (m.memberEpoch() != assignmentEpoch || m.state() != ConsumerGroupMember.MemberState.STABLE) {
                return "Reconciling";
            }
        }
        return "Stable";
    }

    /** The member holding {@code instanceId}, or null. */
    public ConsumerGroupMember staticMember(String instanceId) {
        if (instanceId == null) {
            return null;
        }
        for (ConsumerGroupMember m : members.values()) {
            if (instanceId.equals(m.instanceId())) {
                return m;
            }
        }
        return null;
    }

    /** Whether a partition is owned, or still to be revoked, by a member other than {@code memberId}. */
    BiPredicate<Uuid, Integer> ownedByOtherThan(String memberId) {
        Map<Uuid, Map<Integer, String>> index = owners();
        return (topic, partition) -> {
            Map<Integer, String> byPartition = index.get(topic);
            String owner = byPartition == null ? null : byPartition.get(partition);
            return owner != null && !owner.equals(memberId);
        };
    }

    /** The member owning a partition (assigned or pending revocation), or null. */
    public String ownerOf(Uuid topic, int partition) {
        Map<Integer, String> byPartition = owners().get(topic);
        return byPartition == null ? null : byPartition.get(partition);
    }

    private synchronized Map<Uuid, Map<Integer, String>> owners() {
        if (owners == null) {
            Map<Uuid, Map<Integer, String>> index = new HashMap<>();
            for (ConsumerGroupMember m : members.values()) {
                for (Map<Uuid, Set<Integer>> part : java.util.List.of(m.assigned(), m.pendingRevocation())) {
                    part.forEach((t, ps) -> {
                        Map<Integer, String> byPartition = index.computeIfAbsent(t, k -> new HashMap<>());
                        for (int p : ps) {
                            byPartition.put(p, m.memberId());
                        }
                    });
                }
            }
            owners = index;
        }
        return owners;
    }

    ConsumerGroupState with(int groupEpoch, int assignmentEpoch, long metadataHash,
                            Map<String, ConsumerGroupMember> members, Map<String, Map<Uuid, Set<Integer>>> target) {
        return new ConsumerGroupState(groupEpoch, assignmentEpoch, metadataHash, members, target);
    }

    @Override
    public String toString() {
        return "ConsumerGroupState{groupEpoch=" + groupEpoch + ", assignmentEpoch=" + assignmentEpoch + ", members="
                + members.keySet() + "}";
    }
}
