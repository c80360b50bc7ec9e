package dev.varve.metadata.quorum;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

import org.apache.kafka.common.errors.InvalidRequestException;

/**
 * How a broker that is not a voter follows the metadata log: it asks the active controller (through
 * {@link ControllerClient}, like every other command) for the committed entries after the offset of its
 * image; the controller answers with the entries it retains, a snapshot of its image when the broker
 * is further behind than that, or nothing new after waiting briefly for a change.
 *
 * <p>Wire form. Request: int16 {@link #KEY} (not a Kafka API key), int64 after-offset, int32 max
 * bytes. Answer (the response of a {@link ControllerReply}): int8 kind (0 entries, 1 snapshot), then
 * for entries an int32 count and, per entry, int64 index, int32 length and the bytes; for a snapshot
 * int64 offset, int32 length and the bytes. Every length is checked against the bytes present.
 */
public final class MetadataFetch {
    /** The command key, outside Kafka's API key range. */
    public static final short KEY = -100;

    public record Entry(long index, byte[] bytes) {
    }

    /** Either entries (possibly none) or a snapshot at {@code snapshotOffset}. */
    public record Answer(List<Entry> entries, long snapshotOffset, byte[] snapshot) {
        static Answer upToDate() {
            return new Answer(List.of(), -1, null);
        }

        static Answer entries(List<Entry> entries) {
            return new Answer(List.copyOf(entries), -1, null);
        }

        static Answer snapshot(long offset, byte[] bytes) {
            return new Answer(List.of(), offset, bytes);
        }

        public boolean isSnapshot() {
            return snapshot != null;
        }

        public byte[] encode() {
            if (isSnapshot()) {
                return ByteBuffer.allocate(1 + 8 + 4 + snapshot.length).put((byte) 1).putLong(snapshotOffset)
                        .putInt(snapshot.length).put(snapshot).array();
            }
            int size = 1 + 4;
            for (Entry e : entries) {
                size += 8 + 4 + e.bytes().length;
            }
            ByteBuffer b = ByteBuffer.allocate(size).put((byte) 0).putInt(entries.size());
            for (Entry e : entries) {
                b.putLong(e.index()).putInt(e.bytes().length).put(e.bytes());
            }
            return b.array();
        }

        /** @throws InvalidRequestException when the bytes are not an answer */
        public static Answer decode(byte[] bytes) {
            try {
                ByteBuffer b = ByteBuffer.wrap(bytes);
                byte kind = b.get();
                if (kind == 1) {
                    long offset = b.getLong();
                    byte[] snap = new byte[length(b)];
                    b.get(snap);
                    return snapshot(offset, snap);
                }
                if (kind != 0) {
                    throw new InvalidRequestException("unknown metadata fetch answer kind " + kind);
                }
                int count = b.getInt();
                if (count < 0 || count > b.remaining() / 12) {
                    throw new InvalidRequestException("metadata fetch answer claims " + count + " entries");
                }
                List<Entry> out = new ArrayList<>(count);
                for (int i = 0; i < count; i++) {
                    long index = b.getLong();
                    byte[] e = new byte[length(b)];
                    b.get(e);
                    out.add(new Entry(index, e));
                }
                return entries(out);
            } catch (java.nio.BufferUnderflowException e) {
                throw new InvalidRequestException("truncated metadata fetch answer");
            }
        }
    }

    private MetadataFetch() {
    }

    public static byte[] request(long afterOffset, int maxBytes) {
        return ByteBuffer.allocate(2 + 8 + 4).putShort(KEY).putLong(afterOffset).putInt(maxBytes).array();
    }

    /** Whether {@code command} is a metadata fetch (its first two bytes are {@link #KEY}). */
    static boolean isFetch(byte[] command) {
        return command.length >= 2 && ByteBuffer.wrap(command).getShort() == KEY;
    }

    /** The request's (afterOffset, maxBytes). */
    static long[] parse(byte[] command) {
        if (command.length != 14) {
            throw new InvalidRequestException("metadata fetch request of " + command.length + " bytes");
        }
        ByteBuffer b = ByteBuffer.wrap(command);
        b.getShort();
        return new long[]{b.getLong(), b.getInt()};
    }

    private static int length(ByteBuffer b) {
        int n = b.getInt();
        if (n < 0 || n > b.remaining()) {
            throw new InvalidRequestException("metadata fetch answer claims " + n + " bytes; " + b.remaining() + " present");
        }
        return n;
    }
}
