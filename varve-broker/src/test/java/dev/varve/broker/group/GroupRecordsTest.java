package dev.varve.broker.group;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.coordinator.group.generated.GroupMetadataKey;
import org.apache.kafka.coordinator.group.generated.GroupMetadataValue;
import org.apache.kafka.coordinator.group.generated.OffsetCommitKey;
import org.apache.kafka.coordinator.group.generated.OffsetCommitValue;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Varve's {@code __consumer_offsets} records are byte-identical to what Kafka 4.4's own generated
 * record classes write, and Kafka's bytes decode in Varve.
 */
class GroupRecordsTest {
    private static byte[] kafkaBytes(short version, ApiMessage message) {
        ObjectSerializationCache cache = new ObjectSerializationCache();
        int size = message.size(cache, version);
        ByteBuffer buf = ByteBuffer.allocate(2 + size);
        buf.putShort(version);
        message.write(new ByteBufferAccessor(buf), cache, version);
        return buf.array();
    }

    @Test
    void offsetCommitKeyAndValueMatchKafka() {
        TopicPartition tp = new TopicPartition("orders", 7);
        assertThat(GroupRecords.offsetCommitKey("grp", tp)).isEqualTo(kafkaBytes((short) 1,
                new OffsetCommitKey().setGroup("grp").setTopic("orders").setPartition(7)));
        GroupRecords.OffsetValue v = new GroupRecords.OffsetValue(12345L, 3, "meta", 1_700_000_000_000L);
        assertThat(GroupRecords.offsetValue(v)).isEqualTo(kafkaBytes((short) 3, new OffsetCommitValue()
                .setOffset(12345L).setLeaderEpoch(3).setMetadata("meta").setCommitTimestamp(1_700_000_000_000L)));
        assertThat(GroupRecords.readOffsetValue(ByteBuffer.wrap(GroupRecords.offsetValue(v)))).isEqualTo(v);
        // Kafka's older value versions decode too
        GroupRecords.OffsetValue v1 = GroupRecords.readOffsetValue(ByteBuffer.wrap(kafkaBytes((short) 1,
                new OffsetCommitValue().setOffset(9).setMetadata("").setCommitTimestamp(5).setExpireTimestamp(6))));
        assertThat(v1).isEqualTo(new GroupRecords.OffsetValue(9, -1, "", 5));
        GroupRecords.Key key = GroupRecords.readKey(ByteBuffer.wrap(GroupRecords.offsetCommitKey("grp", tp)));
        assertThat(key.groupId()).isEqualTo("grp");
        assertThat(key.partition()).isEqualTo(tp);
    }

    @Test
    void groupMetadataKeyAndValueMatchKafka() {
        assertThat(GroupRecords.groupMetadataKey("grp")).isEqualTo(kafkaBytes((short) 2, new GroupMetadataKey().setGroup("grp")));
        GroupRecords.GroupValue g = new GroupRecords.GroupValue("consumer", 4, "range", "m1", 99L, List.of(
                new GroupRecords.MemberValue("m1", null, "c1", "/127.0.0.1", 30000, 10000, new byte[]{1, 2}, new byte[]{3}),
                new GroupRecords.MemberValue("m2", "static-2", "c2", "/10.0.0.2", 30000, 10000, new byte[0], new byte[]{4})));
        GroupMetadataValue kafka = new GroupMetadataValue().setProtocolType("consumer").setGeneration(4)
                .setProtocol("range").setLeader("m1").setCurrentStateTimestamp(99L).setMembers(List.of(
                        new GroupMetadataValue.MemberMetadata().setMemberId("m1").setGroupInstanceId(null).setClientId("c1")
                                .setClientHost("/127.0.0.1").setRebalanceTimeout(30000).setSessionTimeout(10000)
                                .setSubscription(new byte[]{1, 2}).setAssignment(new byte[]{3}),
                        new GroupMetadataValue.MemberMetadata().setMemberId("m2").setGroupInstanceId("static-2").setClientId("c2")
                                .setClientHost("/10.0.0.2").setRebalanceTimeout(30000).setSessionTimeout(10000)
                                .setSubscription(new byte[0]).setAssignment(new byte[]{4})));
        assertThat(GroupRecords.groupValue(g)).isEqualTo(kafkaBytes((short) 3, kafka));
        GroupRecords.GroupValue back = GroupRecords.readGroupValue(ByteBuffer.wrap(GroupRecords.groupValue(g)));
        assertThat(back.generationId()).isEqualTo(4);
        assertThat(back.members()).extracting(GroupRecords.MemberValue::groupInstanceId).containsExactly(null, "static-2");
        assertThat(back.members().get(0).subscription()).containsExactly(1, 2);
        assertThat(GroupRecords.readKey(ByteBuffer.wrap(GroupRecords.groupMetadataKey("grp"))).isOffsetCommit()).isFalse();
    }

    @Test
    void lyingLengthsAreRefusedWithoutAllocating() {
        ByteBuffer lyingMembers = ByteBuffer.allocate(2 + 2 + 4 + 2 + 2 + 8 + 4);
        lyingMembers.putShort((short) 3).putShort((short) 0).putInt(1).putShort((short) -1).putShort((short) -1)
                .putLong(0).putInt(Integer.MAX_VALUE).flip();
        assertThatThrownBy(() -> GroupRecords.readGroupValue(lyingMembers))
                .isInstanceOf(GroupRecords.CorruptGroupRecordException.class).hasMessageContaining("member count");
        ByteBuffer lyingString = ByteBuffer.allocate(4).putShort((short) 1).putShort((short) 30000).flip();
        assertThatThrownBy(() -> GroupRecords.readKey(lyingString))
                .isInstanceOf(GroupRecords.CorruptGroupRecordException.class);
        ByteBuffer unknownVersion = ByteBuffer.allocate(2).putShort((short) 99).flip();
        assertThatThrownBy(() -> GroupRecords.readKey(unknownVersion))
                .isInstanceOf(GroupRecords.CorruptGroupRecordException.class);
    }
}
