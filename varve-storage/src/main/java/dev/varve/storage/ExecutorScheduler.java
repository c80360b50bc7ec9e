package dev.varve.storage;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A {@link Scheduler} on a small pool of daemon threads, for the broker process. A task that throws
 * is logged and (if periodic) keeps its schedule.
 */
public final class ExecutorScheduler implements Scheduler, AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ExecutorScheduler.class);
    private final ScheduledThreadPoolExecutor executor;

    public ExecutorScheduler(int threads, String threadNamePrefix) {
        AtomicInteger n = new AtomicInteger();
        executor = new ScheduledThreadPoolExecutor(threads, r -> {
            Thread t = new Thread(r, threadNamePrefix + "-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
        executor.setRemoveOnCancelPolicy(true);
        executor.setExecuteExistingDelayedTasksAfterShutdownPolicy(false);
    }

    @Override
    public void scheduleOnce(String name, Runnable task, long delayMs) {
        executor.schedule(guarded(name, task), delayMs, TimeUnit.MILLISECONDS);
    }

    @Override
    public void schedulePeriodic(String name, Runnable task, long delayMs, long periodMs) {
        executor.scheduleWithFixedDelay(guarded(name, task), delayMs, periodMs, TimeUnit.MILLISECONDS);
    }

    private static Runnable guarded(String name, Runnable task) {
        return () -> {
            try {
                task.run();
            } catch (RuntimeException | Error e) {
                LOG.error("scheduled task {} failed", name, e);
            }
        };
    }

    @Override
    public void close() throws InterruptedException {
        executor.shutdown();
        executor.awaitTermination(30, TimeUnit.SECONDS);
    }
}
