package dev.varve.broker;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.message.ApiMessageType;
import org.apache.kafka.common.message.RequestHeaderData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.common.protocol.types.ArrayOf;
import org.apache.kafka.common.protocol.types.BoundField;
import org.apache.kafka.common.protocol.types.CompactArrayOf;
import org.apache.kafka.common.protocol.types.Field;
import org.apache.kafka.common.protocol.types.Schema;
import org.apache.kafka.common.protocol.types.TaggedFields;
import org.apache.kafka.common.protocol.types.Type;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.utils.internals.ByteUtils;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;

/**
 * Request frames for fuzzing: a structurally valid request of any API and version, generated from
 * kafka-clients' own request schemas with random field values, and mutations of it (bit flips,
 * truncation, trailing garbage, and lengths or counts inflated far beyond the bytes present).
 *
 * <p>The generator writes the schema itself rather than through a {@code Struct}, so it knows where
 * every length and count prefix is (array counts, string, bytes and records lengths, tagged-field
 * counts and sizes, in the body and the header): those are what the inflating mutations rewrite.
 * Everything is derived from one {@link Random}, so a frame is reproducible from its seed.
 */
final class FuzzFrames {
    /** How a length or count prefix is encoded. */
    enum LengthKind {
        /** INT16: string lengths of non-flexible versions (-1 = null). */
        INT16,
        /** INT32: array counts, bytes and records lengths of non-flexible versions (-1 = null). */
        INT32,
        /** Unsigned varint of length + 1: compact arrays, strings, bytes, records (0 = null). */
        COMPACT,
        /** Unsigned varint of the value itself: tagged-field counts and sizes. */
        UVARINT
    }

    /** A length or count prefix in a frame. */
    record Marker(int position, int width, LengthKind kind, String what) {
    }

    enum Mutation { NONE, BIT_FLIPS, TRUNCATE, EXTEND, INFLATE_LENGTH, INFLATE_AND_TRUNCATE }

    /**
     * A request frame without its 4-byte size prefix.
     *
     * @param bytes   header and body
     * @param markers every length/count prefix of the unmutated frame (positions into {@code bytes})
     */
    record Frame(ApiKeys key, short version, byte[] bytes, List<Marker> markers, String description) {
        /** The frame as sent: size prefix, then the bytes. */
        byte[] sized() {
            return ByteBuffer.allocate(4 + bytes.length).putInt(bytes.length).put(bytes).array();
        }

        /** The correlation id a response must carry, if the header still has one. */
        Integer correlationId() {
            return bytes.length >= 8 ? ByteBuffer.wrap(bytes).getInt(4) : null;
        }

        @Override
        public String toString() {
            return key + " v" + version + " [" + description + "] " + bytes.length + " bytes: "
                    + HexFormat.of().formatHex(bytes);
        }
    }

    private static final String[] NAMES = {"fuzz", "fuzz", "t", "", "__consumer_offsets", "retention.ms",
            "cleanup.policy", "segment.bytes", "max.message.bytes", "compact", "1", "-1", "group", "member"};

    private final Random random;
    private final List<Uuid> topicIds;

    FuzzFrames(long seed, List<Uuid> topicIds) {
        this.random = new Random(seed);
        this.topicIds = topicIds;
    }

    /** A request of {@code key} at {@code version} that kafka-clients can parse, with random field values. */
    Frame valid(ApiKeys key, short version, int correlationId) {
        RequestHeaderData header = new RequestHeaderData().setRequestApiKey(key.id).setRequestApiVersion(version)
                .setCorrelationId(correlationId).setClientId("fuzz");
        short headerVersion = key.requestHeaderVersion(version);
        ObjectSerializationCache cache = new ObjectSerializationCache();
        ByteBuffer h = ByteBuffer.allocate(header.size(cache, headerVersion));
        header.write(new ByteBufferAccessor(h), cache, headerVersion);
        Out out = new Out();
        out.bytes.write(h.array(), 0, h.capacity());
        out.markers.add(new Marker(8, 2, LengthKind.INT16, "header client id"));
        if (headerVersion >= 2) {
            out.markers.add(new Marker(h.capacity() - 1, 1, LengthKind.UVARINT, "header tagged field count"));
        }
        Schema schema = ApiMessageType.fromApiKey(key.id).requestSchemas()[version];
        write(schema, "request", out, 0);
        return new Frame(key, version, out.bytes.toByteArray(), List.copyOf(out.markers), "valid");
    }

    /** {@code frame} changed by {@code mutation}; the description says exactly how. */
    Frame mutate(Frame frame, Mutation mutation) {
        byte[] b = frame.bytes();
        switch (mutation) {
            case NONE:
                return frame;
            case BIT_FLIPS: {
                byte[] m = b.clone();
                int flips = 1 + random.nextInt(4);
                StringBuilder d = new StringBuilder("bit flips at");
                for (int i = 0; i < flips; i++) {
                    int bit = random.nextInt(m.length * 8);
                    m[bit / 8] ^= (byte) (1 << (bit % 8));
                    d.append(' ').append(bit / 8).append('.').append(bit % 8);
                }
                return new Frame(frame.key(), frame.version(), m, frame.markers(), d.toString());
            }
            case TRUNCATE: {
                int keep = random.nextInt(b.length);
                return new Frame(frame.key(), frame.version(), java.util.Arrays.copyOf(b, keep), frame.markers(),
                        "truncated to " + keep);
            }
            case EXTEND: {
                byte[] garbage = new byte[1 + random.nextInt(64)];
                random.nextBytes(garbage);
                byte[] m = java.util.Arrays.copyOf(b, b.length + garbage.length);
                System.arraycopy(garbage, 0, m, b.length, garbage.length);
                return new Frame(frame.key(), frame.version(), m, frame.markers(), "extended by " + garbage.length);
            }
            case INFLATE_LENGTH:
                return inflate(frame, frame.markers().get(random.nextInt(frame.markers().size())));
            case INFLATE_AND_TRUNCATE: {
                Frame inflated = inflate(frame, frame.markers().get(random.nextInt(frame.markers().size())));
                int keep = inflated.bytes().length - 1 - random.nextInt(Math.max(1, inflated.bytes().length / 4));
                return new Frame(frame.key(), frame.version(), java.util.Arrays.copyOf(inflated.bytes(), keep),
                        frame.markers(), inflated.description() + ", truncated to " + keep);
            }
            default:
                throw new AssertionError(mutation);
        }
    }

    /** Rewrites one length/count prefix to a value far beyond the bytes that follow it. */
    Frame inflate(Frame frame, Marker marker) {
        byte[] b = frame.bytes();
        int after = b.length - marker.position() - marker.width();
        long[] choices = switch (marker.kind()) {
            case INT16 -> new long[]{Short.MAX_VALUE, Math.min(Short.MAX_VALUE, after + 1), -2};
            case INT32 -> new long[]{Integer.MAX_VALUE, after + 1L, -2, Integer.MIN_VALUE, 1 << 30};
            case COMPACT -> new long[]{0x7fffffffL, 0xffffffffL, after + 2L, 0x80000000L};
            case UVARINT -> new long[]{0x7fffffffL, 0xffffffffL, after + 1L, 1 << 24};
        };
        return inflate(frame, marker, choices[random.nextInt(choices.length)]);
    }

    /** Rewrites one length/count prefix to {@code value} (an unsigned 32-bit value for varints). */
    static Frame inflate(Frame frame, Marker marker, long value) {
        byte[] b = frame.bytes();
        ByteBuffer enc = ByteBuffer.allocate(5);
        switch (marker.kind()) {
            case INT16 -> enc.putShort((short) value);
            case INT32 -> enc.putInt((int) value);
            default -> ByteUtils.writeUnsignedVarint((int) value, enc);
        }
        enc.flip();
        byte[] m = new byte[b.length - marker.width() + enc.remaining()];
        System.arraycopy(b, 0, m, 0, marker.position());
        enc.get(m, marker.position(), enc.remaining());
        int tail = marker.position() + marker.width();
        System.arraycopy(b, tail, m, m.length - (b.length - tail), b.length - tail);
        return new Frame(frame.key(), frame.version(), m, frame.markers(),
                marker.what() + " at " + marker.position() + " (" + marker.kind() + ") set to " + value);
    }

    /** Bytes to write; remembers where each length/count prefix starts. */
    private static final class Out {
        final ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        final List<Marker> markers = new ArrayList<>();

        void length(LengthKind kind, long value, String what) {
            ByteBuffer b = ByteBuffer.allocate(5);
            switch (kind) {
                case INT16 -> b.putShort((short) value);
                case INT32 -> b.putInt((int) value);
                case COMPACT -> ByteUtils.writeUnsignedVarint((int) (value + 1), b);
                case UVARINT -> ByteUtils.writeUnsignedVarint((int) value, b);
            }
            markers.add(new Marker(bytes.size(), b.position(), kind, what));
            bytes.write(b.array(), 0, b.position());
        }

        void value(Type type, Object v) {
            ByteBuffer b = ByteBuffer.allocate(type.sizeOf(v));
            type.write(b, v);
            bytes.write(b.array(), 0, b.position());
        }

        void append(Out child) {
            int base = bytes.size();
            for (Marker m : child.markers) {
                markers.add(new Marker(base + m.position(), m.width(), m.kind(), m.what()));
            }
            bytes.write(child.bytes.toByteArray(), 0, child.bytes.size());
        }
    }

    private void write(Type type, String name, Out out, int depth) {
        if (type instanceof Schema schema) {
            if (schema.isNullable()) {
                boolean isNull = random.nextInt(8) == 0;
                out.value(Type.INT8, isNull ? (byte) -1 : (byte) 1);
                if (isNull) {
                    return;
                }
            }
            for (BoundField f : schema.fields()) {
                write(f.def.type, f.def.name, out, depth + 1);
            }
        } else if (type instanceof TaggedFields tagged) {
            writeTaggedFields(tagged, out, depth);
        } else if (type instanceof ArrayOf || type instanceof CompactArrayOf) {
            LengthKind kind = type instanceof CompactArrayOf ? LengthKind.COMPACT : LengthKind.INT32;
            if (type.isNullable() && random.nextInt(10) == 0) {
                out.length(kind, -1, name + " (null array)");
                return;
            }
            int n = random.nextInt(depth > 6 ? 2 : 4);
            out.length(kind, n, name + " array count");
            for (int i = 0; i < n; i++) {
                write(type.arrayElementType().orElseThrow(), name, out, depth + 1);
            }
        } else if (type == Type.STRING || type == Type.NULLABLE_STRING || type == Type.COMPACT_STRING
                || type == Type.COMPACT_NULLABLE_STRING) {
            LengthKind kind = type == Type.STRING || type == Type.NULLABLE_STRING ? LengthKind.INT16 : LengthKind.COMPACT;
            if (type.isNullable() && random.nextInt(8) == 0) {
                out.length(kind, -1, name + " (null string)");
                return;
            }
            byte[] s = string().getBytes(StandardCharsets.UTF_8);
            out.length(kind, s.length, name + " string length");
            out.bytes.write(s, 0, s.length);
        } else if (type == Type.BYTES || type == Type.NULLABLE_BYTES || type == Type.COMPACT_BYTES
                || type == Type.COMPACT_NULLABLE_BYTES) {
            LengthKind kind = type == Type.BYTES || type == Type.NULLABLE_BYTES ? LengthKind.INT32 : LengthKind.COMPACT;
            if (type.isNullable() && random.nextInt(8) == 0) {
                out.length(kind, -1, name + " (null bytes)");
                return;
            }
            byte[] bytes = new byte[random.nextInt(24)];
            random.nextBytes(bytes);
            out.length(kind, bytes.length, name + " bytes length");
            out.bytes.write(bytes, 0, bytes.length);
        } else if (type == Type.RECORDS || type == Type.NULLABLE_RECORDS || type == Type.COMPACT_RECORDS
                || type == Type.COMPACT_NULLABLE_RECORDS) {
            LengthKind kind = type == Type.RECORDS || type == Type.NULLABLE_RECORDS ? LengthKind.INT32 : LengthKind.COMPACT;
            if (type.isNullable() && random.nextInt(10) == 0) {
                out.length(kind, -1, name + " (null records)");
                return;
            }
            ByteBuffer records = records();
            out.length(kind, records.remaining(), name + " records length");
            out.bytes.write(records.array(), records.arrayOffset() + records.position(), records.remaining());
        } else {
            out.value(type, primitive(type, name));
        }
    }

    private void writeTaggedFields(TaggedFields tagged, Out out, int depth) {
        Map<Integer, Out> chosen = new TreeMap<>();
        for (Map.Entry<Integer, Field> e : tagged.fields().entrySet()) {
            if (random.nextInt(3) == 0) {
                Out value = new Out();
                write(e.getValue().type, e.getValue().name, value, depth + 1);
                chosen.put(e.getKey(), value);
            }
        }
        if (random.nextInt(8) == 0) { // a tag this version does not know: kept as an unknown tagged field
            Out value = new Out();
            byte[] raw = new byte[random.nextInt(8)];
            random.nextBytes(raw);
            value.bytes.write(raw, 0, raw.length);
            chosen.put(10_000 + random.nextInt(100), value);
        }
        out.length(LengthKind.UVARINT, chosen.size(), "tagged field count");
        for (Map.Entry<Integer, Out> e : chosen.entrySet()) {
            ByteBuffer tag = ByteBuffer.allocate(5);
            ByteUtils.writeUnsignedVarint(e.getKey(), tag);
            out.bytes.write(tag.array(), 0, tag.position());
            out.length(LengthKind.UVARINT, e.getValue().bytes.size(), "tagged field " + e.getKey() + " size");
            out.append(e.getValue());
        }
    }

    private String string() {
        int c = random.nextInt(10);
        if (c < 5) {
            return NAMES[random.nextInt(NAMES.length)];
        }
        StringBuilder s = new StringBuilder();
        int n = 1 + random.nextInt(12);
        for (int i = 0; i < n; i++) {
            s.append(c < 9 ? (char) ('a' + random.nextInt(26)) : (char) (0x80 + random.nextInt(0x2000)));
        }
        return s.toString();
    }

    private ByteBuffer records() {
        if (random.nextInt(8) == 0) {
            return ByteBuffer.allocate(0);
        }
        SimpleRecord[] records = new SimpleRecord[1 + random.nextInt(3)];
        for (int i = 0; i < records.length; i++) {
            byte[] value = new byte[random.nextInt(16)];
            random.nextBytes(value);
            records[i] = new SimpleRecord(System.currentTimeMillis(), ("k" + i).getBytes(StandardCharsets.UTF_8), value);
        }
        return MemoryRecords.withRecords(Compression.NONE, records).buffer();
    }

    /** Small values mostly (they reach partitions and groups that exist), extremes sometimes. */
    private long number(long min, long max) {
        int c = random.nextInt(10);
        if (c < 6) {
            return Math.max(min, Math.min(max, random.nextInt(10) - 1));
        }
        if (c < 8) {
            long[] extremes = {min, max, -2, 0, 1};
            return Math.max(min, Math.min(max, extremes[random.nextInt(extremes.length)]));
        }
        return min + (long) (random.nextDouble() * ((double) max - min));
    }

    /** The known codes of an ACL enum field (resource and pattern type, operation, permission), or null. */
    private static byte[] aclCodes(String name) {
        java.util.stream.Stream<Byte> codes;
        if (name.equals("resource_type") || name.equals("resource_type_filter")) {
            codes = java.util.Arrays.stream(org.apache.kafka.common.resource.ResourceType.values())
                    .filter(t -> !t.isUnknown()).map(org.apache.kafka.common.resource.ResourceType::code);
        } else if (name.equals("resource_pattern_type") || name.equals("pattern_type_filter")) {
            codes = java.util.Arrays.stream(org.apache.kafka.common.resource.PatternType.values())
                    .filter(t -> !t.isUnknown()).map(org.apache.kafka.common.resource.PatternType::code);
        } else if (name.equals("operation")) {
            codes = java.util.Arrays.stream(org.apache.kafka.common.acl.AclOperation.values())
                    .filter(t -> !t.isUnknown()).map(org.apache.kafka.common.acl.AclOperation::code);
        } else if (name.equals("permission_type")) {
            codes = java.util.Arrays.stream(org.apache.kafka.common.acl.AclPermissionType.values())
                    .filter(t -> !t.isUnknown()).map(org.apache.kafka.common.acl.AclPermissionType::code);
        } else {
            return null;
        }
        List<Byte> list = codes.toList();
        byte[] out = new byte[list.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = list.get(i);
        }
        return out;
    }

    private Object primitive(Type type, String name) {
        // timeouts and waits stay short so that no request can keep its connection busy for long
        boolean time = name.contains("timeout") || name.contains("wait") || name.endsWith("_ms");
        if (type == Type.BOOLEAN) {
            return random.nextBoolean();
        } else if (type == Type.INT8 && aclCodes(name) != null) {
            // the ACL requests' constructors refuse unknown codes (Kafka then closes the connection too)
            byte[] codes = aclCodes(name);
            return codes[random.nextInt(codes.length)];
        } else if (type == Type.INT8) {
            return (byte) number(Byte.MIN_VALUE, Byte.MAX_VALUE);
        } else if (type == Type.INT16) {
            return (short) number(Short.MIN_VALUE, Short.MAX_VALUE);
        } else if (type == Type.UINT16) {
            return (int) number(0, 65535);
        } else if (type == Type.INT32) {
            return time ? random.nextInt(50) - 1 : (int) number(Integer.MIN_VALUE, Integer.MAX_VALUE);
        } else if (type == Type.UNSIGNED_INT32) {
            return number(0, 0xffffffffL);
        } else if (type == Type.INT64) {
            return time ? (long) random.nextInt(50) - 1 : number(Long.MIN_VALUE, Long.MAX_VALUE);
        } else if (type == Type.UUID) {
            int c = random.nextInt(4);
            return c < 2 && !topicIds.isEmpty() ? topicIds.get(random.nextInt(topicIds.size()))
                    : c == 2 ? Uuid.ZERO_UUID : new Uuid(random.nextLong(), random.nextLong());
        } else if (type == Type.FLOAT64) {
            return random.nextDouble();
        } else if (type == Type.VARINT) {
            return (int) number(Integer.MIN_VALUE, Integer.MAX_VALUE);
        } else if (type == Type.VARLONG) {
            return number(Long.MIN_VALUE, Long.MAX_VALUE);
        }
        throw new IllegalArgumentException("no generator for " + type + " (" + name + ")");
    }
}
