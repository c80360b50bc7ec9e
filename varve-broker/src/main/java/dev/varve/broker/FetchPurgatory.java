package dev.varve.broker;

import io.netty.util.HashedWheelTimer;
import io.netty.util.Timeout;
import org.apache.kafka.common.TopicPartition;

import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Fetches waiting for data ({@code fetch.min.bytes} not reached yet) park here until a watched
 * partition gets an append or their {@code max.wait.ms} passes — whichever comes first, exactly
 * once. Timeouts are entries in one hashed timer wheel, not a thread per waiting request.
 */
public final class FetchPurgatory implements AutoCloseable {
    private final HashedWheelTimer timer = new HashedWheelTimer(r -> {
        Thread t = new Thread(r, "fetch-purgatory-timer");
        t.setDaemon(true);
        return t;
    }, 20, TimeUnit.MILLISECONDS); // each tick wakes the thread: 20 ms bounds max.wait.ms to within 20 ms
    private final Map<TopicPartition, Set<Waiter>> watchers = new ConcurrentHashMap<>();

    private final class Waiter {
        final AtomicBoolean done = new AtomicBoolean();
        final Collection<TopicPartition> partitions;
        final Runnable onWake;
        volatile Timeout timeout;

        Waiter(Collection<TopicPartition> partitions, Runnable onWake) {
            this.partitions = partitions;
            this.onWake = onWake;
        }

        void fire() {
            if (done.compareAndSet(false, true)) {
                Timeout t = timeout;
                if (t != null) {
                    t.cancel();
                }
                for (TopicPartition tp : partitions) {
                    Set<Waiter> set = watchers.get(tp);
                    if (set != null) {
                        set.remove(this);
                    }
                }
                onWake.run();
            }
        }
    }

    /**
     * Runs {@code onWake} once: after the next append to any of {@code partitions}, or after
     * {@code maxWaitMs}.
     */
    public void watch(List<TopicPartition> partitions, long maxWaitMs, Runnable onWake) {
        Waiter w = new Waiter(partitions, onWake);
        for (TopicPartition tp : partitions) {
            watchers.computeIfAbsent(tp, k -> ConcurrentHashMap.newKeySet()).add(w);
        }
        w.timeout = timer.newTimeout(t -> w.fire(), Math.max(1, maxWaitMs), TimeUnit.MILLISECONDS);
    }

    /** Wakes the fetches waiting on {@code tp} (called after an append or a high watermark move). */
    public void wake(TopicPartition tp) {
        Set<Waiter> set = watchers.get(tp);
        if (set == null || set.isEmpty()) {
            return;
        }
        for (Waiter w : List.copyOf(set)) {
            w.fire();
        }
    }

    @Override
    public void close() {
        timer.stop();
    }
}
