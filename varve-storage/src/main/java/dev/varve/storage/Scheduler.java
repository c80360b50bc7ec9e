package dev.varve.storage;

/**
 * Runs background storage tasks (retention, flush-by-time, checkpoints, delayed file deletion).
 * The storage engine has no threads of its own: the broker injects a thread-pool scheduler, tests a
 * manual one driven by a fake clock.
 */
public interface Scheduler {
    /** Runs {@code task} once after {@code delayMs}. */
    void scheduleOnce(String name, Runnable task, long delayMs);

    /** Runs {@code task} every {@code periodMs}, first after {@code delayMs}. */
    void schedulePeriodic(String name, Runnable task, long delayMs, long periodMs);
}
