package dev.varve.metadata.quorum;

import java.nio.ByteBuffer;

import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.protocol.Errors;

/**
 * The reply to one controller command, as it travels back to the broker: an error code (NONE when the
 * command was decided), the metadata offset at which its records are committed (the broker waits for
 * its own image to reach it before answering its client, so the client then sees its change), and the
 * Kafka response bytes.
 *
 * <p>{@link Errors#NOT_CONTROLLER} means "ask again": the node answering was not (or no longer) the
 * active controller.
 */
public record ControllerReply(Errors error, String message, long metadataOffset, byte[] response) {
    private static final int MAX_MESSAGE_CHARS = 4096;

    public ControllerReply {
        message = message == null ? "" : message.length() > MAX_MESSAGE_CHARS ? message.substring(0, MAX_MESSAGE_CHARS) : message;
        response = response == null ? new byte[0] : response;
    }

    public static ControllerReply ok(long metadataOffset, byte[] response) {
        return new ControllerReply(Errors.NONE, "", metadataOffset, response);
    }

    public static ControllerReply error(Errors error, String message) {
        return new ControllerReply(error, message, -1, new byte[0]);
    }

    public byte[] encode() {
        byte[] msg = message.getBytes(java.nio.charset.StandardCharsets.UTF_8);
        ByteBuffer b = ByteBuffer.allocate(2 + 8 + 4 + msg.length + 4 + response.length);
        b.putShort(error.code()).putLong(metadataOffset).putInt(msg.length).put(msg).putInt(response.length).put(response);
        return b.array();
    }

    /** @throws InvalidRequestException when the bytes are not a reply */
    public static ControllerReply decode(byte[] bytes) {
        try {
            ByteBuffer b = ByteBuffer.wrap(bytes);
            Errors error = Errors.forCode(b.getShort());
            long offset = b.getLong();
            byte[] msg = new byte[checkedLength(b)];
            b.get(msg);
            byte[] response = new byte[checkedLength(b)];
            b.get(response);
            if (b.hasRemaining()) {
                throw new InvalidRequestException("controller reply has " + b.remaining() + " trailing bytes");
            }
            return new ControllerReply(error, new String(msg, java.nio.charset.StandardCharsets.UTF_8), offset, response);
        } catch (java.nio.BufferUnderflowException e) {
            throw new InvalidRequestException("truncated controller reply of " + bytes.length + " bytes");
        }
    }

    private static int checkedLength(ByteBuffer b) {
        int n = b.getInt();
        if (n < 0 || n > b.remaining()) {
            throw new InvalidRequestException("controller reply claims " + n + " bytes; " + b.remaining() + " present");
        }
        return n;
    }
}
