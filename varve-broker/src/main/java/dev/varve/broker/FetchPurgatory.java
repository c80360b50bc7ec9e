package dev.varve.broker;

import org.apache.kafka.common.TopicPartition;

import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Fetches waiting for data park here, as Kafka's DelayedFetch does: each time a watched partition gets
 * an append or its high watermark moves, the fetch tries to complete ({@code fetch.min.bytes} readable
 * below the high watermark for consumers, below the log end for followers); it is answered as soon as
 * it can be, or when its {@code max.wait.ms} passes, exactly once. A wake that finds too little keeps
 * the fetch waiting (an acks=all append is not readable by consumers until the followers have it).
 * Timeouts are entries in one scheduler queue (one thread for all waiting fetches, woken only when
 * the next one is due: a ticking timer wheel cost a fifth of an idle broker's CPU, 50 wake-ups a
 * second with nothing to do), not a thread per waiting request.
 */
public final class FetchPurgatory implements AutoCloseable {
    private static final org.slf4j.Logger LOG = org.slf4j.LoggerFactory.getLogger(FetchPurgatory.class);
    private final java.util.concurrent.ScheduledThreadPoolExecutor timer = newTimer();

    private static java.util.concurrent.ScheduledThreadPoolExecutor newTimer() {
        java.util.concurrent.ScheduledThreadPoolExecutor t = new java.util.concurrent.ScheduledThreadPoolExecutor(1, r -> {
            Thread thread = new Thread(r, "fetch-purgatory-timer");
            thread.setDaemon(true);
            return thread;
        });
        t.setRemoveOnCancelPolicy(true); // an answered fetch's timeout leaves the queue at once
        return t;
    }
    private final Map<TopicPartition, Set<Waiter>> watchers = new ConcurrentHashMap<>();
    /** Fetches woken by a change of any partition ({@link #watchAny}). */
    private final Set<Waiter> anyWatchers = ConcurrentHashMap.newKeySet();

    private final class Waiter {
        final AtomicBoolean done = new AtomicBoolean();
        final Collection<TopicPartition> partitions;
        final BooleanSupplier tryComplete;
        final Runnable onTimeout;
        volatile java.util.concurrent.ScheduledFuture<?> timeout;

        Waiter(Collection<TopicPartition> partitions, BooleanSupplier tryComplete, Runnable onTimeout) {
            this.partitions = partitions;
            this.tryComplete = tryComplete;
            this.onTimeout = onTimeout;
        }

        /** Guarded by this: an attempt is running (a follower's re-read can move a HW and wake us again). */
        private boolean attempting;
        private boolean pokedAgain;

        /** A watched partition changed: complete if the condition holds now. */
        void poke() {
            if (done.get()) {
                return;
            }
            synchronized (this) { // one attempt at a time; the condition reads and may answer
                if (attempting) { // re-entered from our own attempt: try once more after it
                    pokedAgain = true;
                    return;
                }
                attempting = true;
                try {
                    do {
                        pokedAgain = false;
                        if (!done.get() && tryComplete.getAsBoolean()) {
                            finish();
                            return;
                        }
                    } while (pokedAgain && !done.get());
                } finally {
                    attempting = false;
                }
            }
        }

        void expire() {
            synchronized (this) {
                if (!done.get()) {
                    finish();
                    try {
                        onTimeout.run();
                    } catch (RuntimeException e) {
                        // the scheduler would keep it in a future nobody reads
                        LOG.error("answering a fetch at its max.wait.ms failed", e);
                    }
                }
            }
        }

        private void finish() {
            done.set(true);
            java.util.concurrent.ScheduledFuture<?> t = timeout;
            if (t != null) {
                t.cancel(false);
            }
            if (partitions == null) {
                anyWatchers.remove(this);
                return;
            }
            for (TopicPartition tp : partitions) {
                Set<Waiter> set = watchers.get(tp);
                if (set != null) {
                    set.remove(this);
                }
            }
        }
    }

    /**
     * Parks a fetch: {@code tryComplete} runs after each append or high-watermark move of any of
     * {@code partitions} and returns true once it answered the fetch; {@code onTimeout} answers it
     * after {@code maxWaitMs} if nothing did before. Exactly one of them answers.
     */
    public void watch(List<TopicPartition> partitions, long maxWaitMs, BooleanSupplier tryComplete, Runnable onTimeout) {
        watch(partitions, maxWaitMs, tryComplete, onTimeout, -1);
    }

    /**
     * {@link #watch(List, long, BooleanSupplier, Runnable)} for a caller whose first read began when
     * {@link #wakes()} was {@code wakesBeforeRead}: if no wake of any partition happened since, the
     * immediate retry that closes the race between that read and the registration is skipped (nothing
     * can have changed), so an idle fetch is read once, not twice.
     */
    public void watch(List<TopicPartition> partitions, long maxWaitMs, BooleanSupplier tryComplete, Runnable onTimeout,
                      long wakesBeforeRead) {
        Waiter w = new Waiter(partitions, tryComplete, onTimeout);
        for (TopicPartition tp : partitions) {
            watchers.computeIfAbsent(tp, k -> ConcurrentHashMap.newKeySet()).add(w);
        }
        arm(w, maxWaitMs, wakesBeforeRead);
    }

    /** Starts a registered waiter's timeout, and tries it at once if a wake may have been missed. */
    private void arm(Waiter w, long maxWaitMs, long wakesBeforeRead) {
        w.timeout = timer.schedule(w::expire, Math.max(1, maxWaitMs), TimeUnit.MILLISECONDS);
        // an append between the first read and the registration must not be missed: a wake counts itself
        // before it looks for waiters, and the registration is done before this reads the count
        if (wakesBeforeRead < 0 || wakes.get() != wakesBeforeRead) {
            w.poke();
        }
    }

    /**
     * Parks a fetch that any change wakes: {@code tryComplete} runs after the next append or high-watermark
     * move of any partition (or metadata wake), {@code onTimeout} after {@code maxWaitMs} if none came.
     * For a fetch that knows nothing changed since {@code wakesBefore} (a session whose last read found
     * nothing): it watches no partition, so parking it costs nothing per partition. If a wake happened
     * since {@code wakesBefore}, it is tried at once.
     */
    public void watchAny(long maxWaitMs, BooleanSupplier tryComplete, Runnable onTimeout, long wakesBefore) {
        Waiter w = new Waiter(null, tryComplete, onTimeout);
        anyWatchers.add(w);
        arm(w, maxWaitMs, wakesBefore);
    }

    /**
     * Tries the any-change fetches on the purgatory's thread, not the waking one: each re-reads a whole
     * session, which must not hold up the append (or metadata delta) that woke it.
     */
    private void pokeAnyWatchers() {
        if (!anyWatchers.isEmpty()) {
            List<Waiter> woken = List.copyOf(anyWatchers);
            try {
                timer.execute(() -> woken.forEach(Waiter::poke));
            } catch (java.util.concurrent.RejectedExecutionException closed) {
                // closing: nothing more is answered
            }
        }
    }

    /** How many wakes there have been (of any partition); see {@link #watch(List, long, BooleanSupplier, Runnable, long)}. */
    public long wakes() {
        return wakes.get();
    }

    private final java.util.concurrent.atomic.AtomicLong wakes = new java.util.concurrent.atomic.AtomicLong();

    /** This thread's wakes held back by {@link #coalescingWakes}, or null outside one. */
    private final ThreadLocal<Set<TopicPartition>> heldWakes = new ThreadLocal<>();

    /**
     * Runs {@code body} with the wakes this thread makes in it held back and delivered at its end by one
     * {@link #wakeAll}: each waiting fetch is tried once, however many of its partitions changed. For
     * work that changes many partitions one by one — a follower's fetch moving the high watermarks of
     * its 2,000 partitions, the answers to an AlterPartition of 2,000 ISR changes — which would otherwise
     * re-read another follower's parked fetch of 2,000 partitions once per partition. Nested calls join
     * the outer one.
     */
    public <T> T coalescingWakes(java.util.function.Supplier<T> body) {
        if (heldWakes.get() != null) {
            return body.get();
        }
        Set<TopicPartition> held = new java.util.HashSet<>();
        heldWakes.set(held);
        try {
            return body.get();
        } finally {
            heldWakes.remove();
            wakeAll(held);
        }
    }

    /** Wakes the fetches waiting on {@code tp} (called after an append or a high watermark move). */
    public void wake(TopicPartition tp) {
        Set<TopicPartition> held = heldWakes.get();
        if (held != null) {
            held.add(tp);
            return;
        }
        wakes.incrementAndGet();
        pokeAnyWatchers();
        Set<Waiter> set = watchers.get(tp);
        if (set == null || set.isEmpty()) {
            return;
        }
        for (Waiter w : List.copyOf(set)) {
            w.poke();
        }
    }

    /**
     * Wakes the fetches waiting on any of {@code partitions}, each fetch once however many of its
     * partitions are named: a metadata delta that changes 2,000 partitions must not re-read a
     * follower's fetch of 1,300 partitions once per partition (that took the replica publisher
     * seconds per delta). Call it after every change it reports is in place.
     */
    public void wakeAll(Collection<TopicPartition> partitions) {
        if (partitions.isEmpty()) {
            return;
        }
        wakes.incrementAndGet();
        pokeAnyWatchers();
        Set<Waiter> distinct = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
        for (TopicPartition tp : partitions) {
            Set<Waiter> set = watchers.get(tp);
            if (set != null) {
                distinct.addAll(set);
            }
        }
        for (Waiter w : distinct) {
            w.poke();
        }
    }

    /** Fetches parked now (metrics and tests). */
    public int waiting() {
        java.util.Set<Waiter> all = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
        watchers.values().forEach(all::addAll);
        all.addAll(anyWatchers);
        return all.size();
    }

    @Override
    public void close() {
        timer.shutdownNow();
    }
}
