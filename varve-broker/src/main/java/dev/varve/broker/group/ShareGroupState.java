package dev.varve.broker.group;

import org.apache.kafka.common.Uuid;

import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The membership of a KIP-932 share group at one moment, immutable (as {@link ConsumerGroupState} is
 * for consumer groups). Share groups need no revocation: members may share partitions (the share
 * partition's acquisition locks keep records apart), so a member gets its target assignment, and the
 * target's epoch, at its next heartbeat.
 *
 * @param groupEpoch      grows when members join or leave, subscriptions change, or subscribed topics change
 * @param assignmentEpoch the group epoch the target assignment was computed for
 * @param metadataHash    a hash of the subscribed topics when the group epoch last grew
 */
public final class ShareGroupState {
    /** A member: its subscription and the assignment it was last given, at {@code memberEpoch}. */
    public record Member(String memberId, String rackId, String clientId, String clientHost,
                         List<String> subscribedTopicNames, int memberEpoch, int previousMemberEpoch,
                         Map<Uuid, Set<Integer>> assigned) {
        public Member {
            subscribedTopicNames = List.copyOf(subscribedTopicNames);
            assigned = ConsumerGroupMember.freeze(assigned);
        }

        boolean sameMetadata(Member o) {
            return o != null && java.util.Objects.equals(rackId, o.rackId) && clientId.equals(o.clientId)
                    && clientHost.equals(o.clientHost) && subscribedTopicNames.equals(o.subscribedTopicNames);
        }

        boolean sameAssignment(Member o) {
            return o != null && memberEpoch == o.memberEpoch && previousMemberEpoch == o.previousMemberEpoch
                    && assigned.equals(o.assigned);
        }
    }

    public static final ShareGroupState EMPTY = new ShareGroupState(0, 0, 0, Map.of(), Map.of());

    private final int groupEpoch;
    private final int assignmentEpoch;
    private final long metadataHash;
    private final Map<String, Member> members;
    private final Map<String, Map<Uuid, Set<Integer>>> target;

    public ShareGroupState(int groupEpoch, int assignmentEpoch, long metadataHash, Map<String, Member> members,
                           Map<String, Map<Uuid, Set<Integer>>> target) {
        this.groupEpoch = groupEpoch;
        this.assignmentEpoch = assignmentEpoch;
        this.metadataHash = metadataHash;
        this.members = Collections.unmodifiableMap(new LinkedHashMap<>(members));
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

    public Map<String, Member> members() {
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

    /** Kafka's share group states: Empty, Stable. */
    public String stateName() {
        return members.isEmpty() ? "Empty" : "Stable";
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ShareGroupState s && s.groupEpoch == groupEpoch && s.assignmentEpoch == assignmentEpoch
                && s.metadataHash == metadataHash && s.members.equals(members) && s.target.equals(target);
    }

    @Override
    public int hashCode() {
        return members.hashCode() * 31 + groupEpoch;
    }

    @Override
    public String toString() {
        return "ShareGroupState{groupEpoch=" + groupEpoch + ", assignmentEpoch=" + assignmentEpoch + ", members="
                + members.keySet() + "}";
    }
}
