package dev.varve.broker.network;

import java.util.ArrayList;
import java.util.List;

/**
 * The memory requests may hold: {@code queued.max.request.bytes}, Kafka's request memory pool. A
 * frame reserves its size when its size prefix arrives (before any of its bytes are kept), its
 * decoding reserves what it allocates as it goes ({@link DecodeBudget}), and everything is given
 * back when the request is answered. A connection whose frame finds the pool full stops reading
 * until memory is given back (back-pressure through TCP, as Kafka mutes it); a decode that finds it
 * full fails, and its connection is closed.
 *
 * <p>Thread-safe.
 */
public final class RequestMemoryPool {
    private final long capacity;
    private long used;
    private final List<Runnable> waiting = new ArrayList<>();

    /** @param capacity bytes; {@link Long#MAX_VALUE} for no bound */
    public RequestMemoryPool(long capacity) {
        if (capacity <= 0) {
            throw new IllegalArgumentException("capacity must be positive: " + capacity);
        }
        this.capacity = capacity;
    }

    public static RequestMemoryPool unbounded() {
        return new RequestMemoryPool(Long.MAX_VALUE);
    }

    public long capacity() {
        return capacity;
    }

    public synchronized long used() {
        return used;
    }

    /** Reserves {@code bytes} if that many are free; never waits. */
    public synchronized boolean tryReserve(long bytes) {
        if (bytes < 0) {
            throw new IllegalArgumentException("negative reservation " + bytes);
        }
        if (bytes > capacity - used) {
            return false;
        }
        used += bytes;
        return true;
    }

    /** Gives back bytes reserved earlier, and wakes whoever waits for memory. */
    public void release(long bytes) {
        List<Runnable> wake;
        synchronized (this) {
            if (bytes < 0 || bytes > used) {
                throw new IllegalStateException("releasing " + bytes + " bytes of " + used + " reserved");
            }
            used -= bytes;
            if (bytes == 0 || waiting.isEmpty()) {
                return;
            }
            wake = List.copyOf(waiting);
            waiting.clear();
        }
        wake.forEach(Runnable::run);
    }

    /**
     * Runs {@code wake} (once) at the next release, or now if memory was released since the caller's
     * failed {@link #tryReserve} (it then simply tries again).
     */
    public void whenReleased(Runnable wake, long expectedFree) {
        synchronized (this) {
            if (capacity - used <= expectedFree) {
                waiting.add(wake);
                return;
            }
        }
        wake.run();
    }

    /** Bytes free now. */
    public synchronized long free() {
        return capacity - used;
    }
}
