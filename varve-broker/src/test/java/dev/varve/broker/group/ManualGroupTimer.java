package dev.varve.broker.group;

import org.apache.kafka.common.utils.Time;

import java.util.PriorityQueue;
import java.util.function.Supplier;

/** A fake clock with a timer: tasks run only when the test advances time, in deadline order. */
final class ManualGroupTimer implements GroupTimer, Time {
    private record Task(long dueMs, long seq, Runnable run, boolean[] cancelled) {
    }

    private final PriorityQueue<Task> tasks = new PriorityQueue<>((a, b) -> a.dueMs != b.dueMs
            ? Long.compare(a.dueMs, b.dueMs) : Long.compare(a.seq, b.seq));
    private long nowMs = 1_000_000;
    private long seq;

    @Override
    public synchronized Runnable schedule(long delayMs, Runnable task) {
        boolean[] cancelled = {false};
        tasks.add(new Task(nowMs + Math.max(delayMs, 0), seq++, task, cancelled));
        return () -> cancelled[0] = true;
    }

    /** Moves the clock forward, running every task that falls due on the way. */
    void advance(long ms) {
        long target;
        synchronized (this) {
            target = nowMs + ms;
        }
        while (true) {
            Task next;
            synchronized (this) {
                next = tasks.peek();
                if (next == null || next.dueMs > target) {
                    nowMs = target;
                    return;
                }
                tasks.poll();
                nowMs = Math.max(nowMs, next.dueMs);
            }
            if (!next.cancelled[0]) {
                next.run.run();
            }
        }
    }

    @Override
    public synchronized long milliseconds() {
        return nowMs;
    }

    @Override
    public synchronized long nanoseconds() {
        return nowMs * 1_000_000L;
    }

    @Override
    public void sleep(long ms) {
        advance(ms);
    }

    @Override
    public void waitObject(Object obj, Supplier<Boolean> condition, long deadlineMs) {
        throw new UnsupportedOperationException();
    }
}
