package dev.varve.storage;

import java.util.ArrayList;
import java.util.List;

/** A scheduler whose tasks run only when {@link #tick} advances its {@link MockTime}. */
public final class ManualScheduler implements Scheduler {
    private record Task(String name, Runnable task, long dueMs, long periodMs) {
    }

    private final MockTime time;
    private final List<Task> tasks = new ArrayList<>();

    public ManualScheduler(MockTime time) {
        this.time = time;
    }

    @Override
    public synchronized void scheduleOnce(String name, Runnable task, long delayMs) {
        tasks.add(new Task(name, task, time.milliseconds() + delayMs, -1));
    }

    @Override
    public synchronized void schedulePeriodic(String name, Runnable task, long delayMs, long periodMs) {
        tasks.add(new Task(name, task, time.milliseconds() + delayMs, periodMs));
    }

    /** Advances the clock by {@code ms} and runs every task that became due, in due order. */
    public void tick(long ms) {
        time.advance(ms);
        runDue();
    }

    public void runDue() {
        while (true) {
            Task next;
            synchronized (this) {
                next = tasks.stream().filter(t -> t.dueMs <= time.milliseconds())
                        .min((a, b) -> Long.compare(a.dueMs, b.dueMs)).orElse(null);
                if (next == null) {
                    return;
                }
                tasks.remove(next);
                if (next.periodMs > 0) {
                    tasks.add(new Task(next.name, next.task, next.dueMs + next.periodMs, next.periodMs));
                }
            }
            next.task.run();
        }
    }

    public synchronized int pending(String namePrefix) {
        return (int) tasks.stream().filter(t -> t.name.startsWith(namePrefix)).count();
    }
}
