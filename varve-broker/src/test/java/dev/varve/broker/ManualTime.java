package dev.varve.broker;

import org.apache.kafka.common.utils.Time;

import java.util.function.LongSupplier;

/**
 * Kafka's {@link Time} over a clock a test owns: one that moves only when told to ({@link
 * #ManualTime(long)}, {@link #sleep}), or a view of another clock that never sleeps ({@link #viewOf}).
 */
public final class ManualTime implements Time {
    private final LongSupplier clock;
    private long nowMs;

    public ManualTime(long startMs) {
        this.nowMs = startMs;
        this.clock = null;
    }

    private ManualTime(LongSupplier clock) {
        this.clock = clock;
    }

    /** A read-only view of {@code clockMs} (e.g. a simulation's event clock): sleeping is refused. */
    public static ManualTime viewOf(LongSupplier clockMs) {
        return new ManualTime(clockMs);
    }

    @Override
    public synchronized long milliseconds() {
        return clock != null ? clock.getAsLong() : nowMs;
    }

    @Override
    public long nanoseconds() {
        return milliseconds() * 1_000_000;
    }

    /** Moves the clock forward; nothing waits. */
    @Override
    public synchronized void sleep(long ms) {
        if (clock != null) {
            throw new UnsupportedOperationException("this clock is a view: it moves with its owner");
        }
        nowMs += ms;
    }
}
