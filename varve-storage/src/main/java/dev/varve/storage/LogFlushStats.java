package dev.varve.storage;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.LongConsumer;

/**
 * How long each log flush (fsync of a partition's segments and checkpoints) took, for Kafka's
 * {@code kafka.log:type=LogFlushStats,name=LogFlushRateAndTimeMs}. JVM-wide, as Kafka's own: every
 * listener hears every flush of this process.
 */
public final class LogFlushStats {
    private static final List<LongConsumer> LISTENERS = new CopyOnWriteArrayList<>();

    private LogFlushStats() {
    }

    /** {@code listener} gets each flush's duration in nanoseconds. */
    public static void addListener(LongConsumer listener) {
        LISTENERS.add(listener);
    }

    public static void removeListener(LongConsumer listener) {
        LISTENERS.remove(listener);
    }

    static void flushed(long nanos) {
        for (LongConsumer l : LISTENERS) {
            l.accept(nanos);
        }
    }
}
