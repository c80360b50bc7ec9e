package dev.varve.broker.group;

import org.apache.kafka.common.TopicPartition;

import java.nio.BufferUnderflowException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * The records of the {@code __consumer_offsets} topic, byte for byte in Kafka's layout, so Kafka's
 * own tools (the offsets message formatter, DumpLogSegments --offsets-decoder) read Varve's files.
 *
 * <pre>
 *   key   = int16 version, then
 *           version 0/1 (offset commit): string group, string topic, int32 partition
 *           version 2   (group metadata): string group
 *   value = null (a tombstone: the offset or group is deleted), or
 *           offset commit v3:  int16 3, int64 offset, int32 leaderEpoch, string metadata, int64 commitTimestamp
 *           group metadata v3: int16 3, string protocolType, int32 generation, nullable string protocol,
 *                              nullable string leader, int64 currentStateTimestamp,
 *                              int32 count, count x member
 *           member v3:         string memberId, nullable string groupInstanceId, string clientId,
 *                              string clientHost, int32 rebalanceTimeout, int32 sessionTimeout,
 *                              bytes subscription, bytes assignment
 * </pre>
 *
 * Strings are int16-length-prefixed UTF-8 (-1 = null), bytes int32-length-prefixed. Writers emit
 * version 3 values; readers accept versions 0-3. Decoding checks every length against the bytes
 * present and throws {@link CorruptGroupRecordException} instead of allocating for a lying length.
 */
public final class GroupRecords {
    public static final short OFFSET_COMMIT_KEY_VERSION = 1;
    public static final short GROUP_METADATA_KEY_VERSION = 2;
    public static final short VALUE_VERSION = 3;

    private GroupRecords() {
    }

    /** A decoded key: either an offset commit (partition set) or group metadata (partition null). */
    public record Key(String groupId, TopicPartition partition) {
        public boolean isOffsetCommit() {
            return partition != null;
        }
    }

    /** A committed offset as stored. */
    public record OffsetValue(long offset, int leaderEpoch, String metadata, long commitTimestampMs) {
    }

    /** One member as stored in a group metadata value. */
    public record MemberValue(String memberId, String groupInstanceId, String clientId, String clientHost,
                              int rebalanceTimeoutMs, int sessionTimeoutMs, byte[] subscription, byte[] assignment) {
    }

    /** A group's membership state as stored after each completed generation. */
    public record GroupValue(String protocolType, int generationId, String protocolName, String leaderId,
                             long currentStateTimestampMs, List<MemberValue> members) {
    }

    /** A stored record that cannot be decoded. */
    public static final class CorruptGroupRecordException extends RuntimeException {
        CorruptGroupRecordException(String message) {
            super(message);
        }
    }

    public static byte[] offsetCommitKey(String groupId, TopicPartition tp) {
        Writer w = new Writer();
        w.int16(OFFSET_COMMIT_KEY_VERSION).string(groupId).string(tp.topic()).int32(tp.partition());
        return w.bytes();
    }

    public static byte[] groupMetadataKey(String groupId) {
        Writer w = new Writer();
        w.int16(GROUP_METADATA_KEY_VERSION).string(groupId);
        return w.bytes();
    }

    public static byte[] offsetValue(OffsetValue v) {
        Writer w = new Writer();
        w.int16(VALUE_VERSION).int64(v.offset()).int32(v.leaderEpoch())
                .string(v.metadata() == null ? "" : v.metadata()).int64(v.commitTimestampMs());
        return w.bytes();
    }

    public static byte[] groupValue(GroupValue g) {
        Writer w = new Writer();
        w.int16(VALUE_VERSION).string(g.protocolType() == null ? "" : g.protocolType()).int32(g.generationId())
                .string(g.protocolName()).string(g.leaderId()).int64(g.currentStateTimestampMs())
                .int32(g.members().size());
        for (MemberValue m : g.members()) {
            w.string(m.memberId()).string(m.groupInstanceId()).string(m.clientId()).string(m.clientHost())
                    .int32(m.rebalanceTimeoutMs()).int32(m.sessionTimeoutMs())
                    .bytes(m.subscription()).bytes(m.assignment());
        }
        return w.bytes();
    }

    public static Key readKey(ByteBuffer key) {
        Reader r = new Reader(key);
        short version = r.int16();
        switch (version) {
            case 0, 1 -> {
                String group = r.string(false);
                String topic = r.string(false);
                int partition = r.int32();
                return new Key(group, new TopicPartition(topic, partition));
            }
            case 2 -> {
                return new Key(r.string(false), null);
            }
            default -> throw new CorruptGroupRecordException("unknown key version " + version);
        }
    }

    public static OffsetValue readOffsetValue(ByteBuffer value) {
        Reader r = new Reader(value);
        short version = r.int16();
        if (version < 0 || version > 3) {
            throw new CorruptGroupRecordException("unknown offset commit value version " + version);
        }
        long offset = r.int64();
        int leaderEpoch = version >= 3 ? r.int32() : -1;
        String metadata = r.string(false);
        long commitTimestamp = r.int64();
        if (version == 1) {
            r.int64(); // expireTimestamp: retention is the broker's offsets.retention.minutes
        }
        return new OffsetValue(offset, leaderEpoch, metadata, commitTimestamp);
    }

    public static GroupValue readGroupValue(ByteBuffer value) {
        Reader r = new Reader(value);
        short version = r.int16();
        if (version < 0 || version > 3) {
            throw new CorruptGroupRecordException("unknown group metadata value version " + version);
        }
        String protocolType = r.string(false);
        int generation = r.int32();
        String protocol = r.string(true);
        String leader = r.string(true);
        long stateTimestamp = version >= 2 ? r.int64() : -1L;
        int count = r.int32();
        // every member takes at least 18 bytes (version 0): a count beyond that is a lie, not an allocation
        if (count < 0 || count > r.remaining() / 18) {
            throw new CorruptGroupRecordException("member count " + count + " exceeds the bytes present");
        }
        List<MemberValue> members = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            String memberId = r.string(false);
            String instanceId = version >= 3 ? r.string(true) : null;
            String clientId = r.string(false);
            String clientHost = r.string(false);
            int rebalanceTimeout = version >= 1 ? r.int32() : -1;
            int sessionTimeout = r.int32();
            if (version == 0) {
                rebalanceTimeout = sessionTimeout;
            }
            members.add(new MemberValue(memberId, instanceId, clientId, clientHost, rebalanceTimeout, sessionTimeout,
                    r.bytes(), r.bytes()));
        }
        return new GroupValue(protocolType, generation, protocol, leader, stateTimestamp, members);
    }

    private static final class Writer {
        private final java.io.ByteArrayOutputStream out = new java.io.ByteArrayOutputStream(64);
        private final java.io.DataOutputStream data = new java.io.DataOutputStream(out);

        Writer int16(int v) {
            try {
                data.writeShort(v);
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
            return this;
        }

        Writer int32(int v) {
            try {
                data.writeInt(v);
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
            return this;
        }

        Writer int64(long v) {
            try {
                data.writeLong(v);
            } catch (java.io.IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
            return this;
        }

        Writer string(String s) {
            if (s == null) {
                return int16(-1);
            }
            byte[] b = s.getBytes(StandardCharsets.UTF_8);
            if (b.length > Short.MAX_VALUE) {
                throw new IllegalArgumentException("string of " + b.length + " bytes is too long for the offsets topic");
            }
            int16(b.length);
            out.write(b, 0, b.length);
            return this;
        }

        Writer bytes(byte[] b) {
            byte[] v = b == null ? new byte[0] : b;
            int32(v.length);
            out.write(v, 0, v.length);
            return this;
        }

        byte[] bytes() {
            return out.toByteArray();
        }
    }

    private static final class Reader {
        private final ByteBuffer buf;

        Reader(ByteBuffer buf) {
            this.buf = buf.duplicate();
        }

        int remaining() {
            return buf.remaining();
        }

        short int16() {
            try {
                return buf.getShort();
            } catch (BufferUnderflowException e) {
                throw new CorruptGroupRecordException("record ends early");
            }
        }

        int int32() {
            try {
                return buf.getInt();
            } catch (BufferUnderflowException e) {
                throw new CorruptGroupRecordException("record ends early");
            }
        }

        long int64() {
            try {
                return buf.getLong();
            } catch (BufferUnderflowException e) {
                throw new CorruptGroupRecordException("record ends early");
            }
        }

        String string(boolean nullable) {
            short len = int16();
            if (len < 0) {
                if (nullable) {
                    return null;
                }
                throw new CorruptGroupRecordException("null where a string is required");
            }
            if (len > buf.remaining()) {
                throw new CorruptGroupRecordException("string length " + len + " exceeds the bytes present");
            }
            byte[] b = new byte[len];
            buf.get(b);
            return new String(b, StandardCharsets.UTF_8);
        }

        byte[] bytes() {
            int len = int32();
            if (len < 0 || len > buf.remaining()) {
                throw new CorruptGroupRecordException("byte length " + len + " exceeds the bytes present");
            }
            byte[] b = new byte[len];
            buf.get(b);
            return b;
        }
    }
}
