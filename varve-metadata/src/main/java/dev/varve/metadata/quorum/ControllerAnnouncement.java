package dev.varve.metadata.quorum;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

import dev.varve.metadata.MetadataRecord;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.InvalidRequestException;

/**
 * How a controller tells the active controller who it is (through {@link ControllerClient}, like every
 * command): its node id, the {@code directory.id} of its metadata log directory and its Raft endpoint. The
 * active controller records it ({@link MetadataRecord.ControllerRegistration}) and, when the controller
 * is outside the Raft configuration, adds it as an observer (a Raft listener) so that it follows the log
 * and can be made a voter (KIP-853's AddRaftVoter). Every controller sends it at start and then now and
 * again, so that an observer dropped while it was away comes back by itself.
 *
 * <p>Wire form: int16 {@link #KEY} (not a Kafka API key), int32 node id, uuid directory id, then the
 * listener name and host (int16 length + UTF-8 each) and an int32 port. The answer is a
 * {@link ControllerReply} without response bytes. Every length is checked against the bytes present.
 */
public final class ControllerAnnouncement {
    /** The command key, outside Kafka's API key range (and apart from {@link MetadataFetch#KEY}). */
    public static final short KEY = -101;
    /** Longest listener name or host accepted. */
    static final int MAX_TEXT_BYTES = 1024;

    private ControllerAnnouncement() {
    }

    public static byte[] request(MetadataRecord.ControllerRegistration r) {
        byte[] name = r.endpoint().name().getBytes(StandardCharsets.UTF_8);
        byte[] host = r.endpoint().host().getBytes(StandardCharsets.UTF_8);
        if (name.length > MAX_TEXT_BYTES || host.length > MAX_TEXT_BYTES) {
            throw new IllegalArgumentException("listener name or host longer than " + MAX_TEXT_BYTES + " bytes");
        }
        return ByteBuffer.allocate(2 + 4 + 16 + 2 + name.length + 2 + host.length + 4)
                .putShort(KEY).putInt(r.controllerId())
                .putLong(r.directoryId().getMostSignificantBits()).putLong(r.directoryId().getLeastSignificantBits())
                .putShort((short) name.length).put(name).putShort((short) host.length).put(host).putInt(r.endpoint().port())
                .array();
    }

    /** Whether {@code command} is an announcement (its first two bytes are {@link #KEY}). */
    static boolean isAnnouncement(byte[] command) {
        return command.length >= 2 && ByteBuffer.wrap(command).getShort() == KEY;
    }

    /** @throws InvalidRequestException when the bytes are not a well-formed announcement */
    static MetadataRecord.ControllerRegistration parse(byte[] command) {
        try {
            ByteBuffer b = ByteBuffer.wrap(command);
            if (b.getShort() != KEY) {
                throw new InvalidRequestException("not a controller announcement");
            }
            int id = b.getInt();
            Uuid directory = new Uuid(b.getLong(), b.getLong());
            String name = text(b);
            String host = text(b);
            int port = b.getInt();
            if (b.hasRemaining()) {
                throw new InvalidRequestException("controller announcement has " + b.remaining() + " trailing bytes");
            }
            return new MetadataRecord.ControllerRegistration(id, directory, new MetadataRecord.Endpoint(name, host, port));
        } catch (java.nio.BufferUnderflowException e) {
            throw new InvalidRequestException("truncated controller announcement of " + command.length + " bytes");
        } catch (IllegalArgumentException | NullPointerException e) {
            throw new InvalidRequestException("invalid controller announcement: " + e.getMessage());
        }
    }

    private static String text(ByteBuffer b) {
        int n = b.getShort();
        if (n < 0 || n > MAX_TEXT_BYTES || n > b.remaining()) {
            throw new InvalidRequestException("controller announcement claims a text of " + n + " bytes; " + b.remaining()
                    + " present");
        }
        byte[] bytes = new byte[n];
        b.get(bytes);
        return new String(bytes, StandardCharsets.UTF_8);
    }
}
