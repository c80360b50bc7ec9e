package dev.varve.metadata;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.ObjectSerializationCache;

import java.nio.ByteBuffer;
import java.util.Collections;
import java.util.EnumSet;
import java.util.Set;

/**
 * The bytes of one controller command and its reply as they travel from a broker to the active
 * controller (over Ratis): Kafka's own controller RPC bodies, encoded by the kafka-clients message
 * classes at the version the sender chose.
 *
 * <pre>
 *   request:  [int16 -2 | uuid requestId] int16 apiKey | int16 version | XxxRequestData written at that version
 *   response:                                XxxResponseData written at the request's version
 * </pre>
 *
 * <p>The request id (optional; absent means {@link Uuid#ZERO_UUID}) names one command across all its
 * attempts: the sender picks it once and sends it again with every retry, and the controller answers a
 * command it already decided with that first answer ({@link dev.varve.metadata.MetadataRecord.CommandReply}).
 *
 * <p>The response has no header: the caller knows the key and version it asked with. Decoding trusts
 * nothing: an unsupported key or version, a count or length larger than the bytes present, a buffer cut
 * short or followed by extra bytes all raise {@link InvalidRequestException} (the generated readers check
 * every count against the remaining bytes before allocating).
 *
 * <p>Stateless and thread-safe.
 */
public final class ControllerEnvelope {
    /** The commands the controller accepts (see {@link ControllerApis}). */
    public static final Set<ApiKeys> SUPPORTED_KEYS = Collections.unmodifiableSet(EnumSet.of(
            ApiKeys.BROKER_REGISTRATION, ApiKeys.BROKER_HEARTBEAT, ApiKeys.ALTER_PARTITION, ApiKeys.CREATE_TOPICS,
            ApiKeys.DELETE_TOPICS, ApiKeys.CREATE_PARTITIONS, ApiKeys.INCREMENTAL_ALTER_CONFIGS, ApiKeys.ALTER_CONFIGS,
            ApiKeys.ALLOCATE_PRODUCER_IDS, ApiKeys.ELECT_LEADERS, ApiKeys.ALTER_PARTITION_REASSIGNMENTS,
            ApiKeys.LIST_PARTITION_REASSIGNMENTS, ApiKeys.ALTER_USER_SCRAM_CREDENTIALS, ApiKeys.CREATE_ACLS,
            ApiKeys.DELETE_ACLS, ApiKeys.ALTER_CLIENT_QUOTAS, ApiKeys.DESCRIBE_QUORUM, ApiKeys.UPDATE_FEATURES,
            ApiKeys.ADD_RAFT_VOTER, ApiKeys.REMOVE_RAFT_VOTER));

    /** Size of the request header: api key and version. */
    static final int HEADER_BYTES = 4;
    /** The first two bytes of a request that carries a request id (no api key is negative). */
    static final short REQUEST_ID_MARKER = -2;
    static final int REQUEST_ID_BYTES = 2 + 16;

    /** One decoded command: the request body read at {@code version}; {@code requestId} is ZERO_UUID when none was sent. */
    public record Request(ApiKeys key, short version, ApiMessage data, Uuid requestId) {
        public boolean hasRequestId() {
            return !Uuid.ZERO_UUID.equals(requestId);
        }
    }

    private ControllerEnvelope() {
    }

    /**
     * Encodes a command.
     *
     * @throws InvalidRequestException  when the key is not a controller command or the version is not one kafka-clients knows
     * @throws IllegalArgumentException when {@code data} is not the request class of {@code key}
     * @throws org.apache.kafka.common.errors.UnsupportedVersionException when {@code data} sets a field the version cannot carry
     */
    public static byte[] encodeRequest(ApiKeys key, short version, ApiMessage data) {
        return encodeRequest(key, version, data, Uuid.ZERO_UUID);
    }

    /** Encodes a command with the request id all its attempts share (ZERO_UUID: none). */
    public static byte[] encodeRequest(ApiKeys key, short version, ApiMessage data, Uuid requestId) {
        checkSupported(key, version);
        checkClass(key.messageType.newRequest(), data, key);
        ObjectSerializationCache cache = new ObjectSerializationCache();
        int size = data.size(cache, version);
        boolean withId = requestId != null && !Uuid.ZERO_UUID.equals(requestId);
        ByteBuffer buf = ByteBuffer.allocate((withId ? REQUEST_ID_BYTES : 0) + HEADER_BYTES + size);
        if (withId) {
            buf.putShort(REQUEST_ID_MARKER);
            buf.putLong(requestId.getMostSignificantBits());
            buf.putLong(requestId.getLeastSignificantBits());
        }
        buf.putShort(key.id);
        buf.putShort(version);
        data.write(new ByteBufferAccessor(buf), cache, version);
        assert !buf.hasRemaining() : "message wrote fewer bytes than its size";
        return buf.array();
    }

    /**
     * Decodes a command.
     *
     * @throws InvalidRequestException on anything but exactly one well-formed request of a supported key and version
     */
    public static Request decodeRequest(byte[] bytes) {
        if (bytes == null || bytes.length < HEADER_BYTES) {
            throw new InvalidRequestException("Controller request of " + (bytes == null ? 0 : bytes.length)
                    + " bytes is shorter than its " + HEADER_BYTES + "-byte header");
        }
        ByteBuffer buf = ByteBuffer.wrap(bytes);
        Uuid requestId = Uuid.ZERO_UUID;
        if (buf.getShort(0) == REQUEST_ID_MARKER) {
            if (bytes.length < REQUEST_ID_BYTES + HEADER_BYTES) {
                throw new InvalidRequestException("Controller request of " + bytes.length + " bytes is shorter than its "
                        + (REQUEST_ID_BYTES + HEADER_BYTES) + "-byte header");
            }
            buf.getShort();
            requestId = new Uuid(buf.getLong(), buf.getLong());
            if (Uuid.ZERO_UUID.equals(requestId)) {
                throw new InvalidRequestException("Controller request with a zero request id");
            }
        }
        short id = buf.getShort();
        short version = buf.getShort();
        if (!ApiKeys.hasId(id)) {
            throw new InvalidRequestException("Unknown api key " + id + " in controller request");
        }
        ApiKeys key = ApiKeys.forId(id);
        checkSupported(key, version);
        ApiMessage data = key.messageType.newRequest();
        read(data, key, version, buf, "request");
        return new Request(key, version, data, requestId);
    }

    /**
     * Encodes a reply at the version of its request.
     *
     * @throws InvalidRequestException  when the key is not a controller command or the version is not one kafka-clients knows
     * @throws IllegalArgumentException when {@code data} is not the response class of {@code key}
     * @throws org.apache.kafka.common.errors.UnsupportedVersionException when {@code data} sets a field the version cannot carry
     */
    public static byte[] encodeResponse(ApiKeys key, short version, ApiMessage data) {
        checkSupported(key, version);
        checkClass(key.messageType.newResponse(), data, key);
        ObjectSerializationCache cache = new ObjectSerializationCache();
        ByteBuffer buf = ByteBuffer.allocate(data.size(cache, version));
        data.write(new ByteBufferAccessor(buf), cache, version);
        assert !buf.hasRemaining() : "message wrote fewer bytes than its size";
        return buf.array();
    }

    /**
     * Decodes a reply to a request of {@code key} at {@code version}.
     *
     * @throws InvalidRequestException on anything but exactly one well-formed response
     */
    public static ApiMessage decodeResponse(ApiKeys key, short version, byte[] bytes) {
        checkSupported(key, version);
        if (bytes == null) {
            throw new InvalidRequestException("Missing " + key.name + " response");
        }
        ApiMessage data = key.messageType.newResponse();
        read(data, key, version, ByteBuffer.wrap(bytes), "response");
        return data;
    }

    private static void checkSupported(ApiKeys key, short version) {
        if (key == null || !SUPPORTED_KEYS.contains(key)) {
            throw new InvalidRequestException("The controller does not accept " + (key == null ? "a null api key" : key.name));
        }
        if (!key.isVersionSupported(version)) {
            throw new InvalidRequestException("Unsupported " + key.name + " version " + version + " (supported: "
                    + key.oldestVersion() + "-" + key.latestVersion() + ")");
        }
    }

    private static void checkClass(ApiMessage expected, ApiMessage data, ApiKeys key) {
        if (data == null || data.getClass() != expected.getClass()) {
            throw new IllegalArgumentException(key.name + " needs " + expected.getClass().getSimpleName() + ", got "
                    + (data == null ? "null" : data.getClass().getSimpleName()));
        }
    }

    /** Reads exactly the remaining bytes of {@code buf} into {@code data}; any failure becomes an InvalidRequestException. */
    private static void read(ApiMessage data, ApiKeys key, short version, ByteBuffer buf, String what) {
        ByteBufferAccessor in = new ByteBufferAccessor(buf);
        try {
            data.read(in, version);
        } catch (RuntimeException e) {
            // The generated readers throw plain RuntimeExceptions (bad lengths and counts) and the buffer
            // BufferUnderflowException (cut short): all mean the same thing to the sender.
            throw new InvalidRequestException("Malformed " + key.name + " v" + version + " " + what + ": "
                    + (e.getMessage() != null ? e.getMessage() : e.getClass().getSimpleName()), e);
        }
        if (in.remaining() != 0) {
            throw new InvalidRequestException("Malformed " + key.name + " v" + version + " " + what + ": "
                    + in.remaining() + " unexpected trailing byte(s)");
        }
    }
}
