package dev.varve.broker.network;

import java.util.ArrayDeque;
import java.util.concurrent.Executor;

/** Runs tasks one at a time, in submission order, on a shared pool. */
final class SerialExecutor implements Executor {
    private final ArrayDeque<Runnable> tasks = new ArrayDeque<>();
    private final Executor pool;
    private boolean running;

    SerialExecutor(Executor pool) {
        this.pool = pool;
    }

    @Override
    public synchronized void execute(Runnable task) {
        tasks.add(task);
        if (!running) {
            running = true;
            pool.execute(this::drain);
        }
    }

    private void drain() {
        while (true) {
            Runnable next;
            synchronized (this) {
                next = tasks.poll();
                if (next == null) {
                    running = false;
                    return;
                }
            }
            try {
                next.run();
            } catch (RuntimeException | LinkageError | StackOverflowError e) {
                // The task reports its own failures through its future; keep draining, or every
                // later task of this executor would wait forever.
            }
        }
    }
}
