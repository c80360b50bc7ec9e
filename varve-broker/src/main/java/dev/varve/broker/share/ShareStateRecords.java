package dev.varve.broker.share;

import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.MessageUtil;
import org.apache.kafka.coordinator.share.generated.CoordinatorRecordType;
import org.apache.kafka.coordinator.share.generated.ShareSnapshotKey;
import org.apache.kafka.coordinator.share.generated.ShareSnapshotValue;
import org.apache.kafka.coordinator.share.generated.ShareUpdateKey;
import org.apache.kafka.coordinator.share.generated.ShareUpdateValue;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * The records of {@code __share_group_state} in Kafka's layout, encoded with Kafka's generated classes:
 * the key is the record type (ShareSnapshot 0, ShareUpdate 1) followed by the key fields (group id, topic
 * id, partition); the value is a version-prefixed ShareSnapshotValue / ShareUpdateValue. Varve writes only
 * ShareSnapshot records (the whole state each time, see docs/architecture.md) and reads both, so Kafka's
 * tools can read the topic and a topic Kafka wrote could be read.
 */
public final class ShareStateRecords {
    private ShareStateRecords() {
    }

    /** A decoded record: its share-partition, whether it is a snapshot or an update, and its value (null: tombstone). */
    public record Decoded(SharePartitionKey key, boolean snapshot, SharePartition.Snapshot value, int snapshotEpoch) {
    }

    public static byte[] snapshotKey(SharePartitionKey key) {
        return MessageUtil.toCoordinatorTypePrefixedBytes(new ShareSnapshotKey()
                .setGroupId(key.groupId()).setTopicId(key.topicId()).setPartition(key.partition()));
    }

    public static byte[] snapshotValue(SharePartition.Snapshot s, int snapshotEpoch, long nowMs) {
        List<ShareSnapshotValue.StateBatch> batches = new ArrayList<>(s.batches().size());
        int complete = 0;
        for (SharePartition.StateBatch b : s.batches()) {
            batches.add(new ShareSnapshotValue.StateBatch().setFirstOffset(b.firstOffset()).setLastOffset(b.lastOffset())
                    .setDeliveryState(b.state().id).setDeliveryCount(b.deliveryCount()));
            if (b.state().terminal()) {
                complete += (int) Math.min(Integer.MAX_VALUE - complete, b.lastOffset() - b.firstOffset() + 1);
            }
        }
        ShareSnapshotValue v = new ShareSnapshotValue().setSnapshotEpoch(snapshotEpoch).setStateEpoch(0).setLeaderEpoch(0)
                .setStartOffset(s.startOffset()).setDeliveryCompleteCount(complete).setCreateTimestamp(nowMs)
                .setWriteTimestamp(nowMs).setStateBatches(batches);
        return MessageUtil.toVersionPrefixedBytes(ShareSnapshotValue.HIGHEST_SUPPORTED_VERSION, v);
    }

    /**
     * Decodes a record of the state topic; null for a record of another kind. Throws on bytes that do not
     * decode (the caller skips the record with a warning).
     */
    public static Decoded decode(ByteBuffer key, ByteBuffer value) {
        if (key == null || key.remaining() < 2) {
            return null;
        }
        ByteBuffer k = key.duplicate();
        short type = k.getShort();
        if (type == CoordinatorRecordType.SHARE_SNAPSHOT.id()) {
            ShareSnapshotKey sk = new ShareSnapshotKey(new ByteBufferAccessor(k), (short) 0);
            SharePartitionKey spk = new SharePartitionKey(sk.groupId(), sk.topicId(), sk.partition());
            if (value == null) {
                return new Decoded(spk, true, null, 0);
            }
            ByteBuffer v = value.duplicate();
            short version = v.getShort();
            ShareSnapshotValue sv = new ShareSnapshotValue(new ByteBufferAccessor(v), version);
            List<SharePartition.StateBatch> batches = new ArrayList<>();
            for (ShareSnapshotValue.StateBatch b : sv.stateBatches()) {
                batches.add(new SharePartition.StateBatch(b.firstOffset(), b.lastOffset(),
                        SharePartition.RecordState.forId(b.deliveryState()), b.deliveryCount()));
            }
            return new Decoded(spk, true, new SharePartition.Snapshot(sv.startOffset(), batches), sv.snapshotEpoch());
        }
        if (type == CoordinatorRecordType.SHARE_UPDATE.id()) {
            ShareUpdateKey uk = new ShareUpdateKey(new ByteBufferAccessor(k), (short) 0);
            SharePartitionKey spk = new SharePartitionKey(uk.groupId(), uk.topicId(), uk.partition());
            if (value == null) {
                return new Decoded(spk, false, null, 0);
            }
            ByteBuffer v = value.duplicate();
            short version = v.getShort();
            ShareUpdateValue uv = new ShareUpdateValue(new ByteBufferAccessor(v), version);
            List<SharePartition.StateBatch> batches = new ArrayList<>();
            for (ShareUpdateValue.StateBatch b : uv.stateBatches()) {
                batches.add(new SharePartition.StateBatch(b.firstOffset(), b.lastOffset(),
                        SharePartition.RecordState.forId(b.deliveryState()), b.deliveryCount()));
            }
            return new Decoded(spk, false, new SharePartition.Snapshot(uv.startOffset(), batches), uv.snapshotEpoch());
        }
        return null;
    }

    /**
     * An update applied over a snapshot, as Kafka's share coordinator merges them: the start offset moves
     * forward, the update's batches replace the snapshot's at their offsets, and what lies below the new
     * start goes.
     */
    public static SharePartition.Snapshot merge(SharePartition.Snapshot base, SharePartition.Snapshot update) {
        long start = Math.max(base.startOffset(), update.startOffset() < 0 ? base.startOffset() : update.startOffset());
        java.util.TreeMap<Long, SharePartition.StateBatch> byFirst = new java.util.TreeMap<>();
        for (SharePartition.StateBatch b : base.batches()) {
            byFirst.put(b.firstOffset(), b);
        }
        for (SharePartition.StateBatch u : update.batches()) {
            // cut the base batches the update overlaps
            List<SharePartition.StateBatch> cut = new ArrayList<>();
            for (SharePartition.StateBatch b : new ArrayList<>(byFirst.values())) {
                if (b.lastOffset() < u.firstOffset() || b.firstOffset() > u.lastOffset()) {
                    continue;
                }
                byFirst.remove(b.firstOffset());
                if (b.firstOffset() < u.firstOffset()) {
                    cut.add(new SharePartition.StateBatch(b.firstOffset(), u.firstOffset() - 1, b.state(), b.deliveryCount()));
                }
                if (b.lastOffset() > u.lastOffset()) {
                    cut.add(new SharePartition.StateBatch(u.lastOffset() + 1, b.lastOffset(), b.state(), b.deliveryCount()));
                }
            }
            cut.forEach(b -> byFirst.put(b.firstOffset(), b));
            byFirst.put(u.firstOffset(), u);
        }
        List<SharePartition.StateBatch> out = new ArrayList<>();
        for (SharePartition.StateBatch b : byFirst.values()) {
            if (b.lastOffset() >= start) {
                out.add(b);
            }
        }
        return new SharePartition.Snapshot(start, out);
    }
}
