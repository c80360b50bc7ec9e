package dev.varve.broker.group;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.coordinator.group.generated.ShareGroupCurrentMemberAssignmentKey;
import org.apache.kafka.coordinator.group.generated.ShareGroupCurrentMemberAssignmentValue;
import org.apache.kafka.coordinator.group.generated.ShareGroupMemberMetadataKey;
import org.apache.kafka.coordinator.group.generated.ShareGroupMemberMetadataValue;
import org.apache.kafka.coordinator.group.generated.ShareGroupMetadataKey;
import org.apache.kafka.coordinator.group.generated.ShareGroupMetadataValue;
import org.apache.kafka.coordinator.group.generated.ShareGroupTargetAssignmentMemberKey;
import org.apache.kafka.coordinator.group.generated.ShareGroupTargetAssignmentMemberValue;
import org.apache.kafka.coordinator.group.generated.ShareGroupTargetAssignmentMetadataKey;
import org.apache.kafka.coordinator.group.generated.ShareGroupTargetAssignmentMetadataValue;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The KIP-932 share group records of {@code __consumer_offsets}, in Kafka's formats with Kafka's
 * generated codec (as {@link ConsumerGroupRecords} for consumer groups): 10 ShareGroupMemberMetadata,
 * 11 ShareGroupMetadata, 12 ShareGroupTargetAssignmentMetadata, 13 ShareGroupTargetAssignmentMember,
 * 14 ShareGroupCurrentMemberAssignment. Record 15 (which share partitions have state) is not written:
 * the share partitions' own state ({@code __share_group_state}) says so.
 */
public final class ShareGroupRecords {
    public static final short MEMBER_METADATA = 10;
    public static final short GROUP_METADATA = 11;
    public static final short TARGET_METADATA = 12;
    public static final short TARGET_MEMBER = 13;
    public static final short CURRENT_ASSIGNMENT = 14;
    public static final short STATE_PARTITION_METADATA = 15;

    private ShareGroupRecords() {
    }

    public static boolean isShareGroupRecord(short type) {
        return type >= MEMBER_METADATA && type <= STATE_PARTITION_METADATA;
    }

    /** The records that turn {@code before} into {@code after}, in Kafka's order. */
    public static List<SimpleRecord> changes(String groupId, ShareGroupState before, ShareGroupState after, long nowMs) {
        List<SimpleRecord> out = new ArrayList<>();
        for (String gone : before.members().keySet()) {
            if (!after.members().containsKey(gone)) {
                out.add(CoordinatorRecordCodec.tombstone(nowMs, new ShareGroupCurrentMemberAssignmentKey().setGroupId(groupId).setMemberId(gone)));
                out.add(CoordinatorRecordCodec.tombstone(nowMs, new ShareGroupTargetAssignmentMemberKey().setGroupId(groupId).setMemberId(gone)));
                out.add(CoordinatorRecordCodec.tombstone(nowMs, new ShareGroupMemberMetadataKey().setGroupId(groupId).setMemberId(gone)));
            }
        }
        for (ShareGroupState.Member m : after.members().values()) {
            if (!m.sameMetadata(before.members().get(m.memberId()))) {
                out.add(CoordinatorRecordCodec.record(nowMs, new ShareGroupMemberMetadataKey().setGroupId(groupId).setMemberId(m.memberId()),
                        new ShareGroupMemberMetadataValue().setRackId(m.rackId()).setClientId(m.clientId())
                                .setClientHost(m.clientHost()).setSubscribedTopicNames(m.subscribedTopicNames())));
            }
        }
        if (after.groupEpoch() != before.groupEpoch() || after.metadataHash() != before.metadataHash()) {
            out.add(CoordinatorRecordCodec.record(nowMs, new ShareGroupMetadataKey().setGroupId(groupId),
                    new ShareGroupMetadataValue().setEpoch(after.groupEpoch()).setMetadataHash(after.metadataHash())));
        }
        for (Map.Entry<String, Map<Uuid, Set<Integer>>> e : after.target().entrySet()) {
            if (!e.getValue().equals(before.target().get(e.getKey())) && after.members().containsKey(e.getKey())) {
                List<ShareGroupTargetAssignmentMemberValue.TopicPartition> tps = new ArrayList<>();
                e.getValue().forEach((t, ps) -> tps.add(new ShareGroupTargetAssignmentMemberValue.TopicPartition()
                        .setTopicId(t).setPartitions(ps.stream().sorted().toList())));
                out.add(CoordinatorRecordCodec.record(nowMs, new ShareGroupTargetAssignmentMemberKey().setGroupId(groupId).setMemberId(e.getKey()),
                        new ShareGroupTargetAssignmentMemberValue().setTopicPartitions(tps)));
            }
        }
        if (after.assignmentEpoch() != before.assignmentEpoch()) {
            out.add(CoordinatorRecordCodec.record(nowMs, new ShareGroupTargetAssignmentMetadataKey().setGroupId(groupId),
                    new ShareGroupTargetAssignmentMetadataValue().setAssignmentEpoch(after.assignmentEpoch())
                            .setAssignmentTimestamp(nowMs)));
        }
        for (ShareGroupState.Member m : after.members().values()) {
            if (!m.sameAssignment(before.members().get(m.memberId()))) {
                List<ShareGroupCurrentMemberAssignmentValue.TopicPartitions> tps = new ArrayList<>();
                m.assigned().forEach((t, ps) -> tps.add(new ShareGroupCurrentMemberAssignmentValue.TopicPartitions()
                        .setTopicId(t).setPartitions(ps.stream().sorted().toList())));
                out.add(CoordinatorRecordCodec.record(nowMs, new ShareGroupCurrentMemberAssignmentKey().setGroupId(groupId).setMemberId(m.memberId()),
                        new ShareGroupCurrentMemberAssignmentValue().setMemberEpoch(m.memberEpoch())
                                .setPreviousMemberEpoch(m.previousMemberEpoch()).setState((byte) 0)
                                .setAssignedPartitions(tps)));
            }
        }
        return out;
    }

    /** The tombstones of an empty share group's own records. */
    public static List<SimpleRecord> deletion(String groupId, long nowMs) {
        return List.of(CoordinatorRecordCodec.tombstone(nowMs, new ShareGroupTargetAssignmentMetadataKey().setGroupId(groupId)),
                CoordinatorRecordCodec.tombstone(nowMs, new ShareGroupMetadataKey().setGroupId(groupId)));
    }

    /** Rebuilds share groups from their records in log order (a metadata tombstone ends the group). */
    public static final class Loader {
        private final Map<String, Partial> groups = new LinkedHashMap<>();

        private static final class Partial {
            int groupEpoch;
            long metadataHash;
            int assignmentEpoch;
            final Map<String, ShareGroupMemberMetadataValue> metadata = new LinkedHashMap<>();
            final Map<String, Map<Uuid, Set<Integer>>> target = new HashMap<>();
            final Map<String, ShareGroupCurrentMemberAssignmentValue> current = new HashMap<>();
        }

        /** @return the group the record belongs to, or null (record 15, which is ignored) */
        public String replay(ByteBuffer key, ByteBuffer value) {
            ByteBuffer k = key.duplicate();
            try {
                short type = k.getShort();
                ByteBufferAccessor kr = new ByteBufferAccessor(k);
                switch (type) {
                    case GROUP_METADATA -> {
                        String g = new ShareGroupMetadataKey(kr, (short) 0).groupId();
                        if (value == null) {
                            groups.remove(g);
                        } else {
                            ShareGroupMetadataValue v = new ShareGroupMetadataValue(CoordinatorRecordCodec.valueFields(value), CoordinatorRecordCodec.valueVersion(value));
                            partial(g).groupEpoch = v.epoch();
                            partial(g).metadataHash = v.metadataHash();
                        }
                        return g;
                    }
                    case MEMBER_METADATA -> {
                        ShareGroupMemberMetadataKey mk = new ShareGroupMemberMetadataKey(kr, (short) 0);
                        if (value == null) {
                            Partial p = groups.get(mk.groupId());
                            if (p != null) {
                                p.metadata.remove(mk.memberId());
                            }
                        } else {
                            partial(mk.groupId()).metadata.put(mk.memberId(),
                                    new ShareGroupMemberMetadataValue(CoordinatorRecordCodec.valueFields(value), CoordinatorRecordCodec.valueVersion(value)));
                        }
                        return mk.groupId();
                    }
                    case TARGET_METADATA -> {
                        String g = new ShareGroupTargetAssignmentMetadataKey(kr, (short) 0).groupId();
                        if (value != null) {
                            partial(g).assignmentEpoch = new ShareGroupTargetAssignmentMetadataValue(CoordinatorRecordCodec.valueFields(value),
                                    CoordinatorRecordCodec.valueVersion(value)).assignmentEpoch();
                        }
                        return g;
                    }
                    case TARGET_MEMBER -> {
                        ShareGroupTargetAssignmentMemberKey tk = new ShareGroupTargetAssignmentMemberKey(kr, (short) 0);
                        if (value == null) {
                            Partial p = groups.get(tk.groupId());
                            if (p != null) {
                                p.target.remove(tk.memberId());
                            }
                        } else {
                            Map<Uuid, Set<Integer>> a = new HashMap<>();
                            new ShareGroupTargetAssignmentMemberValue(CoordinatorRecordCodec.valueFields(value), CoordinatorRecordCodec.valueVersion(value)).topicPartitions()
                                    .forEach(tp -> a.put(tp.topicId(), Set.copyOf(tp.partitions())));
                            partial(tk.groupId()).target.put(tk.memberId(), ConsumerGroupMember.freeze(a));
                        }
                        return tk.groupId();
                    }
                    case CURRENT_ASSIGNMENT -> {
                        ShareGroupCurrentMemberAssignmentKey ck = new ShareGroupCurrentMemberAssignmentKey(kr, (short) 0);
                        if (value == null) {
                            Partial p = groups.get(ck.groupId());
                            if (p != null) {
                                p.current.remove(ck.memberId());
                            }
                        } else {
                            partial(ck.groupId()).current.put(ck.memberId(),
                                    new ShareGroupCurrentMemberAssignmentValue(CoordinatorRecordCodec.valueFields(value), CoordinatorRecordCodec.valueVersion(value)));
                        }
                        return ck.groupId();
                    }
                    case STATE_PARTITION_METADATA -> {
                        return null;
                    }
                    default -> throw new GroupRecords.CorruptGroupRecordException("not a share group record type " + type);
                }
            } catch (GroupRecords.CorruptGroupRecordException e) {
                throw e;
            } catch (RuntimeException e) {
                throw new GroupRecords.CorruptGroupRecordException("share group record does not decode: " + e);
            }
        }

        private Partial partial(String groupId) {
            return groups.computeIfAbsent(groupId, g -> new Partial());
        }

        public Map<String, ShareGroupState> states() {
            Map<String, ShareGroupState> out = new LinkedHashMap<>();
            groups.forEach((groupId, p) -> {
                Map<String, ShareGroupState.Member> members = new LinkedHashMap<>();
                p.metadata.forEach((memberId, md) -> {
                    ShareGroupCurrentMemberAssignmentValue c = p.current.get(memberId);
                    Map<Uuid, Set<Integer>> assigned = new HashMap<>();
                    if (c != null) {
                        c.assignedPartitions().forEach(tp -> assigned.put(tp.topicId(), Set.copyOf(tp.partitions())));
                    }
                    members.put(memberId, new ShareGroupState.Member(memberId, md.rackId(), md.clientId(), md.clientHost(),
                            md.subscribedTopicNames().stream().distinct().sorted().toList(),
                            c == null ? 0 : c.memberEpoch(), c == null ? 0 : c.previousMemberEpoch(), assigned));
                });
                Map<String, Map<Uuid, Set<Integer>>> target = new HashMap<>(p.target);
                target.keySet().retainAll(members.keySet());
                out.put(groupId, new ShareGroupState(p.groupEpoch, p.assignmentEpoch, p.metadataHash, members, target));
            });
            return out;
        }

        public void clear(java.util.function.Predicate<String> which) {
            groups.keySet().removeIf(which);
        }
    }
}
