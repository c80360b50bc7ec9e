package dev.varve.broker.network;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Readable;
import org.apache.kafka.common.record.internal.MemoryRecords;

import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;

/**
 * What decoding one request may allocate. kafka-clients' generated readers check every count and
 * length against the bytes present, so a frame cannot claim more than it carries; but an element of
 * one byte on the wire (an empty string, a boolean) is an object of 40-60 bytes on the heap, so a
 * dense 100 MiB frame decodes to about 5.5 GiB. Decoding goes through this {@link Readable}, which
 * every few hundred reads compares what the decoding thread has allocated (HotSpot's per-thread
 * allocation counter) against two limits, and stops the decode with {@link InvalidRequestException}
 * (the connection is closed) past either:
 * <ul>
 *   <li>{@value #BYTES_PER_FRAME_BYTE} bytes per frame byte plus {@value #FIXED_BYTES} bytes: real
 *       requests decode to at most about 5 bytes per byte (records are not copied), only contrived
 *       ones to more;</li>
 *   <li>the {@link RequestMemoryPool}: what the decode allocated is reserved there as it goes, and
 *       a pool that cannot give it stops the decode rather than the broker.</li>
 * </ul>
 * Not thread-safe: one decode, on one thread.
 */
public final class DecodeBudget implements Readable {
    public static final int BYTES_PER_FRAME_BYTE = 16;
    public static final int FIXED_BYTES = 1024 * 1024;
    /** Reads between two looks at the allocation counter. */
    private static final int CHECK_EVERY = 256;
    /** Pool reservations are taken in steps of this much, not per check. */
    private static final long RESERVE_STEP = 256 * 1024;
    private static final com.sun.management.ThreadMXBean THREADS = threads();

    private final ByteBufferAccessor in;
    private final RequestMemoryPool pool;
    private final long limit;
    private final long start;
    private final String what;
    private long reserved;
    private int reads;

    /**
     * @param frame the request's bytes after its header
     * @param frameBytes the whole frame's size, which the limit is proportional to
     */
    public DecodeBudget(ByteBuffer frame, int frameBytes, RequestMemoryPool pool, String what) {
        this.in = new ByteBufferAccessor(frame);
        this.pool = pool;
        this.limit = (long) BYTES_PER_FRAME_BYTE * frameBytes + FIXED_BYTES;
        this.start = THREADS == null ? 0 : THREADS.getCurrentThreadAllocatedBytes();
        this.what = what;
    }

    private static com.sun.management.ThreadMXBean threads() {
        if (ManagementFactory.getThreadMXBean() instanceof com.sun.management.ThreadMXBean t
                && t.isThreadAllocatedMemorySupported()) {
            t.setThreadAllocatedMemoryEnabled(true);
            return t;
        }
        return null; // not HotSpot: the per-frame bound of the generated readers is all there is
    }

    /** A decode stopped by its budget (the frame is refused, its connection closed). */
    public static final class Exceeded extends InvalidRequestException {
        Exceeded(String message) {
            super(message);
        }
    }

    /** Bytes reserved in the pool for this decode so far (the caller gives them back when the request is done). */
    public long reserved() {
        return reserved;
    }

    /** Checks now (also called once the decode is done, so its last allocations are counted). */
    public void check() {
        reads = 0;
        if (THREADS == null) {
            return;
        }
        long allocated = THREADS.getCurrentThreadAllocatedBytes() - start;
        if (allocated > limit) {
            throw new Exceeded(what + " would take more than " + limit + " bytes to decode ("
                    + BYTES_PER_FRAME_BYTE + " per frame byte): refused");
        }
        if (allocated > reserved) {
            long step = Math.max(RESERVE_STEP, allocated - reserved);
            if (!pool.tryReserve(step)) {
                throw new Exceeded(what + " cannot be decoded: the request memory pool "
                        + "(queued.max.request.bytes) has " + pool.free() + " bytes free");
            }
            reserved += step;
        }
    }

    private void tick() {
        if (++reads >= CHECK_EVERY) {
            check();
        }
    }

    private void large(int bytes) {
        if (bytes > 4096) {
            check();
        } else {
            tick();
        }
    }

    @Override
    public byte readByte() {
        tick();
        return in.readByte();
    }

    @Override
    public short readShort() {
        tick();
        return in.readShort();
    }

    @Override
    public int readInt() {
        tick();
        return in.readInt();
    }

    @Override
    public long readLong() {
        tick();
        return in.readLong();
    }

    @Override
    public double readDouble() {
        tick();
        return in.readDouble();
    }

    @Override
    public byte[] readArray(int length) {
        byte[] out = in.readArray(length);
        large(length);
        return out;
    }

    @Override
    public int readUnsignedVarint() {
        tick();
        return in.readUnsignedVarint();
    }

    @Override
    public ByteBuffer readByteBuffer(int length) {
        tick();
        return in.readByteBuffer(length);
    }

    @Override
    public int readVarint() {
        tick();
        return in.readVarint();
    }

    @Override
    public long readVarlong() {
        tick();
        return in.readVarlong();
    }

    @Override
    public int remaining() {
        return in.remaining();
    }

    @Override
    public Readable slice() {
        return in.slice();
    }

    @Override
    public String readString(int length) {
        String out = in.readString(length);
        large(length);
        return out;
    }

    @Override
    public MemoryRecords readRecords(int length) {
        tick();
        return in.readRecords(length);
    }

    @Override
    public Uuid readUuid() {
        tick();
        return in.readUuid();
    }
}
