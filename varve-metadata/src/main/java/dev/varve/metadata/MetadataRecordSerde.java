package dev.varve.metadata;

import dev.varve.metadata.MetadataRecord.BeginControlledShutdown;
import dev.varve.metadata.MetadataRecord.CommandReply;
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
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;

import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.zip.CRC32C;

/**
 * Serialized form of a batch of {@link MetadataRecord}s: one Raft entry, or a whole snapshot.
 *
 * <pre>
 *   batch   := version:int16 (=2)  crc:uint32 (CRC32C of everything after it)  count:int32  record{count}
 *   record  := type:int16  length:int32  payload{length}
 *   string  := length:int16 (-1 = null)  UTF-8 bytes          ints := count:int32 (-1 = null)  int32{count}
 *   uuid    := 16 bytes                                        bool := byte 0 | 1
 *   bytes   := length:int32  bytes{length}
 * </pre>
 *
 * All integers big-endian. Payloads list the record's components in declaration order.
 *
 * <p>Versions: batches are written at {@link #VERSION}; every older version is still read (Raft logs and
 * snapshots outlive the code that wrote them).
 * <ul>
 *   <li>1: the first format.</li>
 *   <li>2: {@link PartitionRecord} and {@link PartitionChange} end with {@code addingReplicas} and
 *       {@code removingReplicas} (ints; null = unchanged in a change). Read from version 1 they are empty
 *       (record) or unchanged (change).</li>
 * </ul>
 *
 * <p>Reading checks every length and count against the bytes actually left
 * before allocating anything, checks the CRC, and requires each record to consume exactly its
 * declared length; so memory use is bounded by the input's size and any corruption ends in a
 * {@link CorruptMetadataException}, never an {@link OutOfMemoryError}. Stateless and thread-safe.
 */
public final class MetadataRecordSerde {
    /** The version written. */
    public static final short VERSION = 2;
    /** The oldest version still read. */
    public static final short OLDEST_READABLE_VERSION = 1;
    private static final int HEADER_BYTES = 2 + 4 + 4;
    private static final int RECORD_HEADER_BYTES = 2 + 4;

    private MetadataRecordSerde() {
    }

    /** Serializes {@code records} as one batch. */
    public static byte[] serialize(List<? extends MetadataRecord> records) {
        Writer w = new Writer(64 + records.size() * 48);
        w.putShort(VERSION);
        w.putInt(0); // crc, filled in below
        w.putInt(records.size());
        for (MetadataRecord r : records) {
            w.putShort(r.typeId());
            int lengthAt = w.position();
            w.putInt(0);
            writePayload(w, r);
            w.patchInt(lengthAt, w.position() - lengthAt - 4);
        }
        byte[] out = w.toArray();
        CRC32C crc = new CRC32C();
        crc.update(out, 6, out.length - 6);
        ByteBuffer.wrap(out).putInt(2, (int) crc.getValue());
        return out;
    }

    /**
     * Reads one batch.
     *
     * @throws CorruptMetadataException for any malformed, truncated, over-long or unknown input
     */
    public static List<MetadataRecord> deserialize(byte[] bytes) {
        if (bytes == null || bytes.length < HEADER_BYTES) {
            throw new CorruptMetadataException("metadata batch of " + (bytes == null ? "null" : bytes.length + " bytes")
                    + " is shorter than its " + HEADER_BYTES + "-byte header");
        }
        ByteBuffer buf = ByteBuffer.wrap(bytes);
        short version = buf.getShort();
        if (version < OLDEST_READABLE_VERSION || version > VERSION) {
            throw new CorruptMetadataException("unsupported metadata batch version " + version);
        }
        int storedCrc = buf.getInt();
        CRC32C crc = new CRC32C();
        crc.update(bytes, 6, bytes.length - 6);
        if ((int) crc.getValue() != storedCrc) {
            throw new CorruptMetadataException("metadata batch CRC mismatch: stored " + Integer.toUnsignedString(storedCrc)
                    + ", computed " + crc.getValue());
        }
        int count = buf.getInt();
        if (count < 0 || (long) count * RECORD_HEADER_BYTES > buf.remaining()) {
            throw new CorruptMetadataException("record count " + count + " does not fit the " + buf.remaining() + " bytes left");
        }
        List<MetadataRecord> out = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            if (buf.remaining() < RECORD_HEADER_BYTES) {
                throw new CorruptMetadataException("record " + i + " header truncated");
            }
            short type = buf.getShort();
            int length = buf.getInt();
            if (length < 0 || length > buf.remaining()) {
                throw new CorruptMetadataException("record " + i + " length " + length + " exceeds the " + buf.remaining() + " bytes left");
            }
            ByteBuffer payload = buf.slice(buf.position(), length);
            buf.position(buf.position() + length);
            try {
                out.add(readPayload(type, new Reader(payload), version));
            } catch (BufferUnderflowException e) {
                throw new CorruptMetadataException("record " + i + " (type " + type + ") is truncated");
            } catch (IllegalArgumentException | NullPointerException e) {
                throw new CorruptMetadataException("record " + i + " (type " + type + ") is invalid: " + e.getMessage());
            }
            if (payload.hasRemaining()) {
                throw new CorruptMetadataException("record " + i + " (type " + type + ") has " + payload.remaining() + " trailing bytes");
            }
        }
        if (buf.hasRemaining()) {
            throw new CorruptMetadataException(buf.remaining() + " bytes after the last record");
        }
        return out;
    }

    private static void writePayload(Writer w, MetadataRecord record) {
        if (record instanceof RegisterBroker r) {
            w.putInt(r.brokerId());
            w.putUuid(r.incarnationId());
            w.putLong(r.brokerEpoch());
            w.putInt(r.endpoints().size());
            for (Endpoint e : r.endpoints()) {
                w.putString(e.name());
                w.putString(e.host());
                w.putInt(e.port());
            }
            w.putString(r.rack());
            w.putBool(r.fenced());
        } else if (record instanceof FenceBroker r) {
            brokerAndEpoch(w, r.brokerId(), r.brokerEpoch());
        } else if (record instanceof UnfenceBroker r) {
            brokerAndEpoch(w, r.brokerId(), r.brokerEpoch());
        } else if (record instanceof BeginControlledShutdown r) {
            brokerAndEpoch(w, r.brokerId(), r.brokerEpoch());
        } else if (record instanceof UnregisterBroker r) {
            brokerAndEpoch(w, r.brokerId(), r.brokerEpoch());
        } else if (record instanceof TopicRecord r) {
            w.putString(r.name());
            w.putUuid(r.topicId());
        } else if (record instanceof PartitionRecord r) {
            w.putUuid(r.topicId());
            w.putInt(r.partition());
            w.putInts(r.replicas());
            w.putInts(r.isr());
            w.putInts(r.elr());
            w.putInts(r.lastKnownElr());
            w.putInt(r.leader());
            w.putInt(r.leaderEpoch());
            w.putInt(r.partitionEpoch());
            w.putInts(r.addingReplicas());
            w.putInts(r.removingReplicas());
        } else if (record instanceof PartitionChange r) {
            w.putUuid(r.topicId());
            w.putInt(r.partition());
            w.putInt(r.leader());
            w.putInts(r.replicas());
            w.putInts(r.isr());
            w.putInts(r.elr());
            w.putInts(r.lastKnownElr());
            w.putInts(r.addingReplicas());
            w.putInts(r.removingReplicas());
        } else if (record instanceof RemoveTopic r) {
            w.putUuid(r.topicId());
        } else if (record instanceof ConfigRecord r) {
            w.putByte(r.resourceType().id());
            w.putString(r.resourceName());
            w.putString(r.key());
            w.putString(r.value());
        } else if (record instanceof ProducerIdBlock r) {
            w.putInt(r.brokerId());
            w.putLong(r.brokerEpoch());
            w.putLong(r.nextProducerId());
        } else if (record instanceof CommandReply r) {
            w.putUuid(r.requestId());
            w.putBytes(r.response());
        } else if (record instanceof MetadataRecord.BeginTransaction r) {
            w.putString(r.name());
        } else if (record instanceof MetadataRecord.EndTransaction) {
            // no payload
        } else if (record instanceof MetadataRecord.AbortTransaction r) {
            w.putString(r.reason());
        } else if (record instanceof MetadataRecord.UserScramCredential r) {
            w.putString(r.name());
            w.putByte(r.mechanism());
            w.putBytes(r.salt());
            w.putBytes(r.storedKey());
            w.putBytes(r.serverKey());
            w.putInt(r.iterations());
        } else if (record instanceof MetadataRecord.RemoveUserScramCredential r) {
            w.putString(r.name());
            w.putByte(r.mechanism());
        } else if (record instanceof MetadataRecord.AclRecord r) {
            w.putUuid(r.id());
            w.putByte(r.resourceType());
            w.putString(r.resourceName());
            w.putByte(r.patternType());
            w.putString(r.principal());
            w.putString(r.host());
            w.putByte(r.operation());
            w.putByte(r.permissionType());
        } else if (record instanceof MetadataRecord.RemoveAcl r) {
            w.putUuid(r.id());
        } else if (record instanceof MetadataRecord.ClientQuota r) {
            w.putInt(r.entity().size());
            r.entity().forEach((type, name) -> {
                w.putString(type);
                w.putString(name);
            });
            w.putString(r.key());
            w.putLong(Double.doubleToLongBits(r.value()));
            w.putBool(r.remove());
        } else if (record instanceof MetadataRecord.FeatureLevel r) {
            w.putString(r.name());
            w.putShort(r.level());
            w.putLong(r.epoch());
        } else if (record instanceof MetadataRecord.ControllerRegistration r) {
            w.putInt(r.controllerId());
            w.putUuid(r.directoryId());
            w.putString(r.endpoint().name());
            w.putString(r.endpoint().host());
            w.putInt(r.endpoint().port());
        } else {
            throw new IllegalArgumentException("unknown record " + record);
        }
    }

    private static void brokerAndEpoch(Writer w, int brokerId, long brokerEpoch) {
        w.putInt(brokerId);
        w.putLong(brokerEpoch);
    }

    private static MetadataRecord readPayload(short type, Reader r, short version) {
        switch (type) {
            case 1: {
                int id = r.getInt();
                Uuid incarnation = r.getUuid();
                long epoch = r.getLong();
                int n = r.count(2 + 2 + 4);
                List<Endpoint> endpoints = new ArrayList<>(n);
                for (int i = 0; i < n; i++) {
                    endpoints.add(new Endpoint(r.getString(), r.getString(), r.getInt()));
                }
                return new RegisterBroker(id, incarnation, epoch, endpoints, r.getString(), r.getBool());
            }
            case 2:
                return new FenceBroker(r.getInt(), r.getLong());
            case 3:
                return new UnfenceBroker(r.getInt(), r.getLong());
            case 4:
                return new BeginControlledShutdown(r.getInt(), r.getLong());
            case 5:
                return new UnregisterBroker(r.getInt(), r.getLong());
            case 6:
                return new TopicRecord(r.getString(), r.getUuid());
            case 7: {
                Uuid topicId = r.getUuid();
                int partition = r.getInt();
                List<Integer> replicas = r.getNonNullInts();
                List<Integer> isr = r.getNonNullInts();
                List<Integer> elr = r.getNonNullInts();
                List<Integer> lastKnownElr = r.getNonNullInts();
                int leader = r.getInt();
                int leaderEpoch = r.getInt();
                int partitionEpoch = r.getInt();
                boolean v1 = version < 2;
                List<Integer> adding = v1 ? List.of() : r.getNonNullInts();
                List<Integer> removing = v1 ? List.of() : r.getNonNullInts();
                return new PartitionRecord(topicId, partition, replicas, isr, elr, lastKnownElr, leader, leaderEpoch,
                        partitionEpoch, adding, removing);
            }
            case 8: {
                Uuid topicId = r.getUuid();
                int partition = r.getInt();
                int leader = r.getInt();
                List<Integer> replicas = r.getInts();
                List<Integer> isr = r.getInts();
                List<Integer> elr = r.getInts();
                List<Integer> lastKnownElr = r.getInts();
                boolean v1 = version < 2;
                List<Integer> adding = v1 ? null : r.getInts();
                List<Integer> removing = v1 ? null : r.getInts();
                return new PartitionChange(topicId, partition, leader, replicas, isr, elr, lastKnownElr, adding, removing);
            }
            case 9:
                return new RemoveTopic(r.getUuid());
            case 10: {
                byte typeId = r.getByte();
                ConfigResource.Type resourceType = ConfigResource.Type.forId(typeId);
                return new ConfigRecord(resourceType, r.getString(), r.getString(), r.getString());
            }
            case 11:
                return new ProducerIdBlock(r.getInt(), r.getLong(), r.getLong());
            case 12:
                return new CommandReply(r.getUuid(), r.getBytes());
            case 13:
                return new MetadataRecord.BeginTransaction(r.getString());
            case 14:
                return new MetadataRecord.EndTransaction();
            case 15:
                return new MetadataRecord.AbortTransaction(r.getString());
            case 16:
                return new MetadataRecord.UserScramCredential(r.getString(), r.getByte(), r.getBytes(), r.getBytes(),
                        r.getBytes(), r.getInt());
            case 17:
                return new MetadataRecord.RemoveUserScramCredential(r.getString(), r.getByte());
            case 18:
                return new MetadataRecord.AclRecord(r.getUuid(), r.getByte(), r.getString(), r.getByte(), r.getString(),
                        r.getString(), r.getByte(), r.getByte());
            case 19:
                return new MetadataRecord.RemoveAcl(r.getUuid());
            case 20: {
                int n = r.count(4);
                java.util.SortedMap<String, String> entity = new java.util.TreeMap<>();
                for (int i = 0; i < n; i++) {
                    String entityType = r.getString();
                    if (entityType == null) {
                        throw new CorruptMetadataException("a quota entity type is null");
                    }
                    entity.put(entityType, r.getString());
                }
                return new MetadataRecord.ClientQuota(entity, r.getString(), Double.longBitsToDouble(r.getLong()), r.getBool());
            }
            case 22:
                return new MetadataRecord.FeatureLevel(r.getString(), r.getShort(), r.getLong());
            case 21:
                return new MetadataRecord.ControllerRegistration(r.getInt(), r.getUuid(),
                        new Endpoint(r.getString(), r.getString(), r.getInt()));
            default:
                throw new CorruptMetadataException("unknown metadata record type " + type);
        }
    }

    /** Growable big-endian writer (no java.io). */
    private static final class Writer {
        private ByteBuffer buf;

        Writer(int initialBytes) {
            buf = ByteBuffer.allocate(Math.max(64, initialBytes));
        }

        private void ensure(int bytes) {
            if (buf.remaining() < bytes) {
                long needed = (long) buf.position() + bytes;
                long capacity = Math.max(needed, (long) buf.capacity() * 2);
                if (capacity > Integer.MAX_VALUE - 16) {
                    throw new IllegalArgumentException("metadata batch larger than 2 GiB");
                }
                ByteBuffer bigger = ByteBuffer.allocate((int) capacity);
                buf.flip();
                bigger.put(buf);
                buf = bigger;
            }
        }

        int position() {
            return buf.position();
        }

        void putByte(byte v) {
            ensure(1);
            buf.put(v);
        }

        void putBool(boolean v) {
            putByte((byte) (v ? 1 : 0));
        }

        void putShort(short v) {
            ensure(2);
            buf.putShort(v);
        }

        void putInt(int v) {
            ensure(4);
            buf.putInt(v);
        }

        void patchInt(int at, int v) {
            buf.putInt(at, v);
        }

        void putLong(long v) {
            ensure(8);
            buf.putLong(v);
        }

        void putUuid(Uuid u) {
            putLong(u.getMostSignificantBits());
            putLong(u.getLeastSignificantBits());
        }

        void putString(String s) {
            if (s == null) {
                putShort((short) -1);
                return;
            }
            byte[] b = s.getBytes(StandardCharsets.UTF_8);
            if (b.length > Short.MAX_VALUE) {
                throw new IllegalArgumentException("string of " + b.length + " bytes is too long for a metadata record");
            }
            putShort((short) b.length);
            ensure(b.length);
            buf.put(b);
        }

        void putBytes(byte[] b) {
            putInt(b.length);
            ensure(b.length);
            buf.put(b);
        }

        void putInts(List<Integer> ints) {
            if (ints == null) {
                putInt(-1);
                return;
            }
            putInt(ints.size());
            ensure(4 * ints.size());
            for (int v : ints) {
                buf.putInt(v);
            }
        }

        byte[] toArray() {
            return Arrays.copyOf(buf.array(), buf.position());
        }
    }

    /** Bounds-checked reader over one record's payload. */
    private static final class Reader {
        private final ByteBuffer buf;

        Reader(ByteBuffer buf) {
            this.buf = buf;
        }

        byte getByte() {
            return buf.get();
        }

        boolean getBool() {
            byte b = buf.get();
            if (b != 0 && b != 1) {
                throw new CorruptMetadataException("boolean byte " + b);
            }
            return b == 1;
        }

        short getShort() {
            return buf.getShort();
        }

        int getInt() {
            return buf.getInt();
        }

        long getLong() {
            return buf.getLong();
        }

        Uuid getUuid() {
            return new Uuid(buf.getLong(), buf.getLong());
        }

        /** A count of elements of at least {@code minElementBytes} each, checked against the bytes left. */
        int count(int minElementBytes) {
            int n = buf.getInt();
            if (n < 0 || (long) n * minElementBytes > buf.remaining()) {
                throw new CorruptMetadataException("count " + n + " does not fit the " + buf.remaining() + " bytes left");
            }
            return n;
        }

        String getString() {
            short len = buf.getShort();
            if (len == -1) {
                return null;
            }
            if (len < 0 || len > buf.remaining()) {
                throw new CorruptMetadataException("string length " + len + " exceeds the " + buf.remaining() + " bytes left");
            }
            ByteBuffer slice = buf.slice(buf.position(), len);
            buf.position(buf.position() + len);
            try {
                return StandardCharsets.UTF_8.newDecoder()
                        .onMalformedInput(CodingErrorAction.REPORT)
                        .onUnmappableCharacter(CodingErrorAction.REPORT)
                        .decode(slice).toString();
            } catch (CharacterCodingException e) {
                throw new CorruptMetadataException("string is not valid UTF-8");
            }
        }

        byte[] getBytes() {
            int n = buf.getInt();
            if (n < 0 || n > buf.remaining()) {
                throw new CorruptMetadataException("byte string length " + n + " exceeds the " + buf.remaining() + " bytes left");
            }
            byte[] b = new byte[n];
            buf.get(b);
            return b;
        }

        List<Integer> getInts() {
            int n = buf.getInt();
            if (n == -1) {
                return null;
            }
            if (n < 0 || (long) n * 4 > buf.remaining()) {
                throw new CorruptMetadataException("int list count " + n + " does not fit the " + buf.remaining() + " bytes left");
            }
            Integer[] values = new Integer[n];
            for (int i = 0; i < n; i++) {
                values[i] = buf.getInt();
            }
            return List.of(values);
        }

        List<Integer> getNonNullInts() {
            List<Integer> v = getInts();
            if (v == null) {
                throw new CorruptMetadataException("null list where one is required");
            }
            return v;
        }
    }
}
