package dev.varve.broker.group;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.coordinator.group.generated.ConsumerGroupCurrentMemberAssignmentKey;
import org.apache.kafka.coordinator.group.generated.ConsumerGroupCurrentMemberAssignmentValue;
import org.apache.kafka.coordinator.group.generated.ConsumerGroupMemberMetadataKey;
import org.apache.kafka.coordinator.group.generated.ConsumerGroupMemberMetadataValue;
import org.apache.kafka.coordinator.group.generated.ConsumerGroupMetadataKey;
import org.apache.kafka.coordinator.group.generated.ConsumerGroupMetadataValue;
import org.apache.kafka.coordinator.group.generated.ConsumerGroupTargetAssignmentMemberKey;
import org.apache.kafka.coordinator.group.generated.ConsumerGroupTargetAssignmentMemberValue;
import org.apache.kafka.coordinator.group.generated.ConsumerGroupTargetAssignmentMetadataKey;
import org.apache.kafka.coordinator.group.generated.ConsumerGroupTargetAssignmentMetadataValue;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The KIP-848 consumer group records of {@code __consumer_offsets}, in Kafka's formats and with
 * Kafka's generated codec: a key is the record type (int16) and the key fields, a value its version
 * (int16) and the value fields.
 *
 * <pre>
 *   3 ConsumerGroupMetadata            group epoch, metadata hash
 *   5 ConsumerGroupMemberMetadata      per member: instance id, rack, client, subscription, assignor, rebalance timeout
 *   6 ConsumerGroupTargetAssignmentMetadata   the target assignment's epoch
 *   7 ConsumerGroupTargetAssignmentMember     per member: its target partitions
 *   8 ConsumerGroupCurrentMemberAssignment    per member: epoch, previous epoch, state, owned and revoking partitions
 * </pre>
 *
 * A change is written as the difference between the group's state before and after it
 * ({@link #changes}), in Kafka's order; replay ({@link Loader}) rebuilds the state from them. A
 * deleted value is a tombstone. Regular-expression resolutions (type 16) are not stored: a
 * coordinator resolves them again from the topics it sees.
 */
public final class ConsumerGroupRecords {
    public static final short GROUP_METADATA = 3;
    public static final short PARTITION_METADATA = 4;
    public static final short MEMBER_METADATA = 5;
    public static final short TARGET_METADATA = 6;
    public static final short TARGET_MEMBER = 7;
    public static final short CURRENT_ASSIGNMENT = 8;

    private ConsumerGroupRecords() {
    }

    /** Whether a record key's type is one of this class's (the first two bytes of the key). */
    public static boolean isConsumerGroupRecord(short type) {
        return type >= GROUP_METADATA && type <= CURRENT_ASSIGNMENT;
    }

    /** The records that turn {@code before} into {@code after}, stamped {@code nowMs}. */
    public static List<SimpleRecord> changes(String groupId, ConsumerGroupState before, ConsumerGroupState after, long nowMs) {
        List<SimpleRecord> out = new ArrayList<>();
        for (String gone : before.members().keySet()) {
            if (!after.members().containsKey(gone)) {
                out.add(CoordinatorRecordCodec.tombstone(nowMs, new ConsumerGroupCurrentMemberAssignmentKey().setGroupId(groupId).setMemberId(gone)));
                out.add(CoordinatorRecordCodec.tombstone(nowMs, new ConsumerGroupTargetAssignmentMemberKey().setGroupId(groupId).setMemberId(gone)));
                out.add(CoordinatorRecordCodec.tombstone(nowMs, new ConsumerGroupMemberMetadataKey().setGroupId(groupId).setMemberId(gone)));
            }
        }
        for (ConsumerGroupMember m : after.members().values()) {
            if (!m.sameMetadata(before.members().get(m.memberId()))) {
                out.add(memberMetadata(groupId, m, nowMs));
            }
        }
        if (after.groupEpoch() != before.groupEpoch() || after.metadataHash() != before.metadataHash()) {
            out.add(CoordinatorRecordCodec.record(nowMs, new ConsumerGroupMetadataKey().setGroupId(groupId),
                    new ConsumerGroupMetadataValue().setEpoch(after.groupEpoch()).setMetadataHash(after.metadataHash())));
        }
        for (Map.Entry<String, Map<Uuid, Set<Integer>>> e : after.target().entrySet()) {
            if (!e.getValue().equals(before.target().get(e.getKey()))) {
                out.add(CoordinatorRecordCodec.record(nowMs, new ConsumerGroupTargetAssignmentMemberKey().setGroupId(groupId).setMemberId(e.getKey()),
                        new ConsumerGroupTargetAssignmentMemberValue().setTopicPartitions(targetPartitions(e.getValue()))));
            }
        }
        for (String member : before.target().keySet()) {
            if (!after.target().containsKey(member) && after.members().containsKey(member)) {
                out.add(CoordinatorRecordCodec.tombstone(nowMs, new ConsumerGroupTargetAssignmentMemberKey().setGroupId(groupId).setMemberId(member)));
            }
        }
        if (after.assignmentEpoch() != before.assignmentEpoch()) {
            out.add(CoordinatorRecordCodec.record(nowMs, new ConsumerGroupTargetAssignmentMetadataKey().setGroupId(groupId),
                    new ConsumerGroupTargetAssignmentMetadataValue().setAssignmentEpoch(after.assignmentEpoch())
                            .setAssignmentTimestamp(nowMs)));
        }
        for (ConsumerGroupMember m : after.members().values()) {
            if (!m.sameAssignment(before.members().get(m.memberId()))) {
                out.add(CoordinatorRecordCodec.record(nowMs, new ConsumerGroupCurrentMemberAssignmentKey().setGroupId(groupId).setMemberId(m.memberId()),
                        new ConsumerGroupCurrentMemberAssignmentValue().setMemberEpoch(m.memberEpoch())
                                .setPreviousMemberEpoch(m.previousMemberEpoch()).setState(m.state().value)
                                .setAssignedPartitions(currentPartitions(m.assigned()))
                                .setPartitionsPendingRevocation(currentPartitions(m.pendingRevocation()))));
            }
        }
        return out;
    }

    /** The tombstones of an empty consumer group's own records (its offsets are the caller's). */
    public static List<SimpleRecord> deletion(String groupId, long nowMs) {
        return List.of(
                CoordinatorRecordCodec.tombstone(nowMs, new ConsumerGroupTargetAssignmentMetadataKey().setGroupId(groupId)),
                CoordinatorRecordCodec.tombstone(nowMs, new ConsumerGroupMetadataKey().setGroupId(groupId)));
    }

    private static SimpleRecord memberMetadata(String groupId, ConsumerGroupMember m, long nowMs) {
        return CoordinatorRecordCodec.record(nowMs, new ConsumerGroupMemberMetadataKey().setGroupId(groupId).setMemberId(m.memberId()),
                new ConsumerGroupMemberMetadataValue().setInstanceId(m.instanceId()).setRackId(m.rackId())
                        .setClientId(m.clientId()).setClientHost(m.clientHost())
                        .setSubscribedTopicNames(m.subscribedTopicNames()).setSubscribedTopicRegex(m.subscribedTopicRegex())
                        .setServerAssignor(m.serverAssignor()).setRebalanceTimeoutMs(m.rebalanceTimeoutMs()));
    }

    private static List<ConsumerGroupTargetAssignmentMemberValue.TopicPartition> targetPartitions(Map<Uuid, Set<Integer>> a) {
        List<ConsumerGroupTargetAssignmentMemberValue.TopicPartition> out = new ArrayList<>();
        a.forEach((t, ps) -> out.add(new ConsumerGroupTargetAssignmentMemberValue.TopicPartition().setTopicId(t)
                .setPartitions(ps.stream().sorted().toList())));
        return out;
    }

    private static List<ConsumerGroupCurrentMemberAssignmentValue.TopicPartitions> currentPartitions(Map<Uuid, Set<Integer>> a) {
        List<ConsumerGroupCurrentMemberAssignmentValue.TopicPartitions> out = new ArrayList<>();
        a.forEach((t, ps) -> out.add(new ConsumerGroupCurrentMemberAssignmentValue.TopicPartitions().setTopicId(t)
                .setPartitions(ps.stream().sorted().toList())));
        return out;
    }

    /**
     * Rebuilds consumer groups from their records in log order. Records of groups not seen before
     * create them; a group-metadata tombstone ends the group. Throws
     * {@link GroupRecords.CorruptGroupRecordException} for a record that does not decode.
     */
    public static final class Loader {
        private final Map<String, Partial> groups = new LinkedHashMap<>();

        private static final class Partial {
            int groupEpoch;
            long metadataHash;
            int assignmentEpoch;
            final Map<String, ConsumerGroupMemberMetadataValue> metadata = new LinkedHashMap<>();
            final Map<String, Map<Uuid, Set<Integer>>> target = new HashMap<>();
            final Map<String, ConsumerGroupCurrentMemberAssignmentValue> current = new HashMap<>();
        }

        /** @return the group the record belongs to */
        public String replay(ByteBuffer key, ByteBuffer value) {
            ByteBuffer k = key.duplicate();
            short type;
            try {
                type = k.getShort();
                String groupId;
                switch (type) {
                    case GROUP_METADATA -> {
                        groupId = new ConsumerGroupMetadataKey(new ByteBufferAccessor(k), (short) 0).groupId();
                        if (value == null) {
                            groups.remove(groupId);
                        } else {
                            ConsumerGroupMetadataValue v = new ConsumerGroupMetadataValue(CoordinatorRecordCodec.valueFields(value), CoordinatorRecordCodec.valueVersion(value));
                            Partial p = partial(groupId);
                            p.groupEpoch = v.epoch();
                            p.metadataHash = v.metadataHash();
                        }
                    }
                    case PARTITION_METADATA -> groupId = null; // superseded by the metadata hash (Kafka 4.1+)
                    case MEMBER_METADATA -> {
                        ConsumerGroupMemberMetadataKey mk = new ConsumerGroupMemberMetadataKey(new ByteBufferAccessor(k), (short) 0);
                        groupId = mk.groupId();
                        if (value == null) {
                            Partial p = groups.get(groupId);
                            if (p != null) {
                                p.metadata.remove(mk.memberId());
                            }
                        } else {
                            partial(groupId).metadata.put(mk.memberId(),
                                    new ConsumerGroupMemberMetadataValue(CoordinatorRecordCodec.valueFields(value), CoordinatorRecordCodec.valueVersion(value)));
                        }
                    }
                    case TARGET_METADATA -> {
                        groupId = new ConsumerGroupTargetAssignmentMetadataKey(new ByteBufferAccessor(k), (short) 0).groupId();
                        if (value != null) {
                            partial(groupId).assignmentEpoch = new ConsumerGroupTargetAssignmentMetadataValue(CoordinatorRecordCodec.valueFields(value),
                                    CoordinatorRecordCodec.valueVersion(value)).assignmentEpoch();
                        }
                    }
                    case TARGET_MEMBER -> {
                        ConsumerGroupTargetAssignmentMemberKey tk = new ConsumerGroupTargetAssignmentMemberKey(new ByteBufferAccessor(k), (short) 0);
                        groupId = tk.groupId();
                        if (value == null) {
                            Partial p = groups.get(groupId);
                            if (p != null) {
                                p.target.remove(tk.memberId());
                            }
                        } else {
                            Map<Uuid, Set<Integer>> a = new HashMap<>();
                            new ConsumerGroupTargetAssignmentMemberValue(CoordinatorRecordCodec.valueFields(value), CoordinatorRecordCodec.valueVersion(value)).topicPartitions()
                                    .forEach(tp -> a.put(tp.topicId(), Set.copyOf(tp.partitions())));
                            partial(groupId).target.put(tk.memberId(), ConsumerGroupMember.freeze(a));
                        }
                    }
                    case CURRENT_ASSIGNMENT -> {
                        ConsumerGroupCurrentMemberAssignmentKey ck = new ConsumerGroupCurrentMemberAssignmentKey(new ByteBufferAccessor(k), (short) 0);
                        groupId = ck.groupId();
                        if (value == null) {
                            Partial p = groups.get(groupId);
                            if (p != null) {
                                p.current.remove(ck.memberId());
                            }
                        } else {
                            partial(groupId).current.put(ck.memberId(),
                                    new ConsumerGroupCurrentMemberAssignmentValue(CoordinatorRecordCodec.valueFields(value), CoordinatorRecordCodec.valueVersion(value)));
                        }
                    }
                    default -> throw new GroupRecords.CorruptGroupRecordException("not a consumer group record type " + type);
                }
                return groupId;
            } catch (RuntimeException e) {
                if (e instanceof GroupRecords.CorruptGroupRecordException c) {
                    throw c;
                }
                throw new GroupRecords.CorruptGroupRecordException("consumer group record does not decode: " + e);
            }
        }

        private Partial partial(String groupId) {
            return groups.computeIfAbsent(groupId, g -> new Partial());
        }

        /** The groups replayed so far, as states (members need both their metadata and assignment). */
        public Map<String, ConsumerGroupState> states() {
            Map<String, ConsumerGroupState> out = new LinkedHashMap<>();
            groups.forEach((groupId, p) -> {
                Map<String, ConsumerGroupMember> members = new LinkedHashMap<>();
                p.metadata.forEach((memberId, md) -> {
                    ConsumerGroupCurrentMemberAssignmentValue c = p.current.get(memberId);
                    members.put(memberId, new ConsumerGroupMember(memberId, md.instanceId(), md.rackId(), md.clientId(),
                            md.clientHost(), ConsumerGroupMember.sortedDistinct(md.subscribedTopicNames()),
                            md.subscribedTopicRegex(), md.serverAssignor(), md.rebalanceTimeoutMs(),
                            c == null ? 0 : c.memberEpoch(), c == null ? 0 : c.previousMemberEpoch(),
                            c == null ? ConsumerGroupMember.MemberState.STABLE : ConsumerGroupMember.MemberState.of(c.state()),
                            c == null ? Map.of() : partitions(c.assignedPartitions()),
                            c == null ? Map.of() : partitions(c.partitionsPendingRevocation())));
                });
                Map<String, Map<Uuid, Set<Integer>>> target = new HashMap<>(p.target);
                target.keySet().retainAll(members.keySet());
                out.put(groupId, new ConsumerGroupState(p.groupEpoch, p.assignmentEpoch, p.metadataHash, members, target));
            });
            return out;
        }

        /** Forgets the groups {@code which} accepts (installed, or about to be replayed again). */
        public void clear(java.util.function.Predicate<String> which) {
            groups.keySet().removeIf(which);
        }

        private static Map<Uuid, Set<Integer>> partitions(List<ConsumerGroupCurrentMemberAssignmentValue.TopicPartitions> tps) {
            Map<Uuid, Set<Integer>> a = new HashMap<>();
            tps.forEach(tp -> a.put(tp.topicId(), Set.copyOf(tp.partitions())));
            return a;
        }
    }
}
