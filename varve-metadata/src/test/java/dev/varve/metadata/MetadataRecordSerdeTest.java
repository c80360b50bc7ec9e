package dev.varve.metadata;

import dev.varve.metadata.MetadataRecord.BeginControlledShutdown;
import dev.varve.metadata.MetadataRecord.ConfigRecord;
import dev.varve.metadata.MetadataRecord.Endpoint;
import dev.varve.metadata.MetadataRecord.FenceBroker;
import dev.varve.metadata.MetadataRecord.PartitionChange;
import dev.varve.metadata.MetadataRecord.PartitionRecord;
import dev.varve.metadata.MetadataRecord.ProducerIdBlock;
import dev.varve.metadata.MetadataRecord.RegisterBroker;
import dev.varve.metadata.MetadataRecord.RemoveTopic;
import dev.varve.metadata.MetadataRecord.TopicRecord;
import dev.varve.metadata.MetadataRecord.UnfenceBroker;
import dev.varve.metadata.MetadataRecord.UnregisterBroker;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.constraints.IntRange;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
import org.junit.jupiter.api.Test;

import java.nio.ByteBuffer;
import java.util.List;
import java.util.Random;
import java.util.zip.CRC32C;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class MetadataRecordSerdeTest {

    static Arbitrary<MetadataRecord> records() {
        Arbitrary<Integer> broker = Arbitraries.integers().between(0, 20);
        Arbitrary<Long> epoch = Arbitraries.longs().between(0, 1_000_000);
        Arbitrary<Uuid> uuid = Arbitraries.longs().tuple2().map(t -> new Uuid(t.get1(), t.get2()))
                .filter(u -> !Uuid.ZERO_UUID.equals(u));
        Arbitrary<String> text = Arbitraries.strings().ofMinLength(1).ofMaxLength(20);
        Arbitrary<List<Integer>> ints = broker.list().ofMaxSize(5);
        Arbitrary<List<Integer>> nullableInts = ints.injectNull(0.3);
        Arbitrary<Endpoint> endpoint = Combinators.combine(text, text, Arbitraries.integers().between(0, 65535)).as(Endpoint::new);
        return Arbitraries.oneOf(
                Combinators.combine(broker, uuid, epoch, endpoint.list().ofMaxSize(3), text.injectNull(0.5), Arbitraries.of(true, false))
                        .as(RegisterBroker::new),
                Combinators.combine(broker, epoch).as(FenceBroker::new),
                Combinators.combine(broker, epoch).as(UnfenceBroker::new),
                Combinators.combine(broker, epoch).as(BeginControlledShutdown::new),
                Combinators.combine(broker, epoch).as(UnregisterBroker::new),
                Combinators.combine(text, uuid).as(TopicRecord::new),
                Combinators.combine(uuid, Arbitraries.integers().between(0, 1000), ints, ints, ints, ints,
                        Arbitraries.integers().between(-1, 20), Arbitraries.integers().between(0, 1000))
                        .as((id, p, r, i, e, l, leader, le) -> new PartitionRecord(id, p, r, i, e, l, leader, le, le + 1))
                        .flatMap(p -> Combinators.combine(ints, ints).as((adding, removing) -> new PartitionRecord(p.topicId(),
                                p.partition(), p.replicas(), p.isr(), p.elr(), p.lastKnownElr(), p.leader(), p.leaderEpoch(),
                                p.partitionEpoch(), adding, removing))),
                Combinators.combine(uuid, Arbitraries.integers().between(0, 1000), Arbitraries.integers().between(-2, 20),
                        nullableInts, nullableInts, nullableInts, nullableInts, nullableInts)
                        .as((id, p, leader, r, i, e, l, adding) -> new PartitionChange(id, p, leader, r, i, e, l, adding, null))
                        .flatMap(c -> nullableInts.map(removing -> new PartitionChange(c.topicId(), c.partition(), c.leader(),
                                c.replicas(), c.isr(), c.elr(), c.lastKnownElr(), c.addingReplicas(), removing))),
                uuid.map(RemoveTopic::new),
                Combinators.combine(Arbitraries.of(ConfigResource.Type.BROKER, ConfigResource.Type.TOPIC), text, text,
                        text.injectNull(0.3)).as(ConfigRecord::new),
                Combinators.combine(Arbitraries.integers().between(-1, 20), Arbitraries.longs().between(-1, 100),
                        Arbitraries.longs().between(0, Long.MAX_VALUE)).as(ProducerIdBlock::new),
                Combinators.combine(uuid.filter(u -> !Uuid.ZERO_UUID.equals(u)), Arbitraries.bytes().array(byte[].class).ofMaxSize(300))
                        .as(MetadataRecord.CommandReply::new),
                text.map(MetadataRecord.BeginTransaction::new),
                Arbitraries.just(new MetadataRecord.EndTransaction()),
                text.map(MetadataRecord.AbortTransaction::new),
                Combinators.combine(text, Arbitraries.of((byte) 1, (byte) 2), Arbitraries.bytes().array(byte[].class).ofMaxSize(64),
                                Arbitraries.bytes().array(byte[].class).ofMaxSize(64), Arbitraries.bytes().array(byte[].class).ofMaxSize(64),
                                Arbitraries.integers().between(1, 16_384))
                        .as(MetadataRecord.UserScramCredential::new),
                Combinators.combine(text, Arbitraries.of((byte) 1, (byte) 2)).as(MetadataRecord.RemoveUserScramCredential::new),
                Combinators.combine(uuid, Arbitraries.bytes().between((byte) 2, (byte) 7), text, Arbitraries.of((byte) 3, (byte) 4),
                                text, text, Arbitraries.bytes().between((byte) 2, (byte) 14), Arbitraries.of((byte) 2, (byte) 3))
                        .as(MetadataRecord.AclRecord::new),
                uuid.map(MetadataRecord.RemoveAcl::new),
                Combinators.combine(Arbitraries.maps(Arbitraries.of("user", "client-id", "ip"), text.injectNull(0.3)).ofMinSize(1)
                                .map(m -> (java.util.SortedMap<String, String>) new java.util.TreeMap<>(m)),
                        text, Arbitraries.doubles(), Arbitraries.of(true, false)).as(MetadataRecord.ClientQuota::new),
                Combinators.combine(broker, uuid, endpoint).as(MetadataRecord.ControllerRegistration::new),
                Combinators.combine(text.filter(t -> !t.isBlank()), Arbitraries.shorts().between((short) 0, Short.MAX_VALUE),
                        Arbitraries.longs().between(1, Long.MAX_VALUE)).as(MetadataRecord.FeatureLevel::new));
    }

    @Provide
    Arbitrary<List<MetadataRecord>> batches() {
        return records().list().ofMaxSize(30);
    }

    @Property(tries = 200)
    void roundTrip(@ForAll("batches") List<MetadataRecord> batch) {
        assertThat(MetadataRecordSerde.deserialize(MetadataRecordSerde.serialize(batch))).isEqualTo(batch);
    }

    @Property(tries = 150)
    void everyTruncationFailsCleanly(@ForAll("batches") List<MetadataRecord> batch, @ForAll @IntRange(min = 1, max = 10_000) int cut) {
        byte[] bytes = MetadataRecordSerde.serialize(batch);
        int length = Math.max(0, bytes.length - cut);
        byte[] truncated = java.util.Arrays.copyOf(bytes, length);
        assertThatThrownBy(() -> MetadataRecordSerde.deserialize(truncated)).isInstanceOf(CorruptMetadataException.class);
    }

    /** Random corruption with the CRC recomputed, so the parser itself meets the garbage: a clean error or valid records. */
    @Property(tries = 300)
    void corruptionBehindAValidCrcNeverEscapes(@ForAll("batches") List<MetadataRecord> batch, @ForAll long seed) {
        Random r = new Random(seed);
        byte[] bytes = MetadataRecordSerde.serialize(batch);
        int flips = 1 + r.nextInt(8);
        for (int i = 0; i < flips; i++) {
            int at = 6 + r.nextInt(bytes.length - 6);
            bytes[at] = r.nextInt(4) == 0 ? (byte) 0xFF : (byte) r.nextInt(256);
        }
        fixCrc(bytes);
        try {
            List<MetadataRecord> read = MetadataRecordSerde.deserialize(bytes);
            assertThat(MetadataRecordSerde.deserialize(MetadataRecordSerde.serialize(read))).isEqualTo(read);
        } catch (CorruptMetadataException expected) {
            assertThat(expected.getMessage()).isNotBlank();
        }
    }

    @Property(tries = 100)
    void randomBytesFailCleanly(@ForAll byte[] bytes) {
        try {
            MetadataRecordSerde.deserialize(bytes);
        } catch (CorruptMetadataException expected) {
            return;
        }
        // Only a valid empty-enough batch could parse; random bytes essentially never carry a right CRC.
    }

    @Test
    void flippedByteFailsTheCrc() {
        byte[] bytes = MetadataRecordSerde.serialize(List.of(new FenceBroker(1, 2)));
        bytes[bytes.length - 1] ^= 1;
        assertThatThrownBy(() -> MetadataRecordSerde.deserialize(bytes))
                .isInstanceOf(CorruptMetadataException.class).hasMessageContaining("CRC");
    }

    @Test
    void hugeCountsAreRefusedBeforeAllocating() {
        // record count 2^31-1 in a 10-byte batch
        ByteBuffer b = ByteBuffer.allocate(10);
        b.putShort(MetadataRecordSerde.VERSION).putInt(0).putInt(Integer.MAX_VALUE);
        byte[] bytes = b.array();
        fixCrc(bytes);
        assertThatThrownBy(() -> MetadataRecordSerde.deserialize(bytes)).isInstanceOf(CorruptMetadataException.class)
                .hasMessageContaining("does not fit");

        // a partition record whose replica list claims 2^31-1 entries
        byte[] ok = MetadataRecordSerde.serialize(List.of(new PartitionRecord(Uuid.randomUuid(), 0, List.of(1), List.of(1),
                List.of(), List.of(), 1, 0, 0)));
        int replicasCountAt = 10 + 6 + 16 + 4;
        ByteBuffer.wrap(ok).putInt(replicasCountAt, Integer.MAX_VALUE);
        fixCrc(ok);
        assertThatThrownBy(() -> MetadataRecordSerde.deserialize(ok)).isInstanceOf(CorruptMetadataException.class)
                .hasMessageContaining("does not fit");
    }

    @Test
    void unknownVersionAndTypeAreNamed() {
        byte[] bytes = MetadataRecordSerde.serialize(List.of(new RemoveTopic(Uuid.randomUuid())));
        ByteBuffer.wrap(bytes).putShort(10, (short) 99);
        fixCrc(bytes);
        assertThatThrownBy(() -> MetadataRecordSerde.deserialize(bytes)).hasMessageContaining("unknown metadata record type 99");
        ByteBuffer.wrap(bytes).putShort(0, (short) 7);
        assertThatThrownBy(() -> MetadataRecordSerde.deserialize(bytes)).hasMessageContaining("version 7");
        assertThatThrownBy(() -> MetadataRecordSerde.deserialize(new byte[3])).isInstanceOf(CorruptMetadataException.class);
        assertThatThrownBy(() -> MetadataRecordSerde.deserialize(null)).isInstanceOf(CorruptMetadataException.class);
    }

    /**
     * A batch written by the version-1 serializer (before reassignments): a topic, a partition and a change.
     * Raft logs and snapshots outlive the code that wrote them, so it must still decode, the new fields empty
     * (records) or unchanged (changes), and replay into the same image as ever.
     */
    @Test
    void versionOneBatchesStillDecode() {
        byte[] v1 = java.util.HexFormat.of().parseHex("00015e348eba0000000300060000001500036f6c6401020304050607081112131415161718"
                + "00070000004801020304050607081112131415161718000000000000000300000001000000020000000300000002000000010000"
                + "000200000001000000030000000000000001000000040000000700080000002c0102030405060708111213141516171800000000"
                + "00000002ffffffff0000000100000002ffffffffffffffff");
        assertThat(ByteBuffer.wrap(v1).getShort()).isEqualTo((short) 1);
        Uuid topic = new Uuid(0x0102030405060708L, 0x1112131415161718L);
        List<MetadataRecord> read = MetadataRecordSerde.deserialize(v1);
        assertThat(read).containsExactly(
                new TopicRecord("old", topic),
                new PartitionRecord(topic, 0, List.of(1, 2, 3), List.of(1, 2), List.of(3), List.of(), 1, 4, 7, List.of(), List.of()),
                new PartitionChange(topic, 0, 2, null, List.of(2), null, null, null, null));
        PartitionState p = MetadataImage.EMPTY.apply(0, read).partition(topic, 0);
        assertThat(p.isReassigning()).isFalse();
        assertThat(p.leader()).isEqualTo(2);
        assertThat(p.isr()).containsExactly(2);
        assertThat(p.leaderEpoch()).isEqualTo(5);
        assertThat(p.partitionEpoch()).isEqualTo(8);
        // Written again it is a current-version batch with the same records.
        byte[] again = MetadataRecordSerde.serialize(read);
        assertThat(ByteBuffer.wrap(again).getShort()).isEqualTo(MetadataRecordSerde.VERSION);
        assertThat(MetadataRecordSerde.deserialize(again)).isEqualTo(read);
    }

    @Test
    void reassignmentFieldsRoundTrip() {
        Uuid topic = new Uuid(3, 4);
        List<MetadataRecord> batch = List.of(
                new PartitionRecord(topic, 2, List.of(4, 5, 1, 2), List.of(1, 2, 4), List.of(), List.of(), 1, 3, 9,
                        List.of(4, 5), List.of(1, 2)),
                new PartitionChange(topic, 2, 4, List.of(4, 5), List.of(4, 5), null, null, List.of(), List.of()),
                new PartitionChange(topic, 2, MetadataRecord.NO_LEADER_CHANGE, null, null, null, null, List.of(7), null));
        assertThat(MetadataRecordSerde.deserialize(MetadataRecordSerde.serialize(batch))).isEqualTo(batch);
    }

    @Test
    void emptyBatchRoundTrips() {
        assertThat(MetadataRecordSerde.deserialize(MetadataRecordSerde.serialize(List.of()))).isEmpty();
    }

    static void fixCrc(byte[] bytes) {
        CRC32C crc = new CRC32C();
        crc.update(bytes, 6, bytes.length - 6);
        ByteBuffer.wrap(bytes).putInt(2, (int) crc.getValue());
    }
}
