package dev.varve.broker.network;

import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Executor;
import java.util.function.Supplier;

/**
 * Runs tasks one at a time, in submission order, on a shared pool. A task may hold back the ones
 * after it until a stage it returns completes ({@link #submit}); no pool thread waits meanwhile.
 */
final class SerialExecutor implements Executor {
    private final ArrayDeque<Supplier<? extends CompletionStage<?>>> tasks = new ArrayDeque<>();
    private final Executor pool;
    private boolean running;

    SerialExecutor(Executor pool) {
        this.pool = pool;
    }

    @Override
    public void execute(Runnable task) {
        submit(() -> {
            task.run();
            return null;
        });
    }

    /**
     * Queues {@code task}; the next task starts once it has run and the stage it returned (if not
     * null) has completed, normally or not.
     */
    synchronized void submit(Supplier<? extends CompletionStage<?>> task) {
        tasks.add(task);
        if (!running) {
            running = true;
            pool.execute(this::drain);
        }
    }

    private void drain() {
        while (true) {
            Supplier<? extends CompletionStage<?>> next;
            synchronized (this) {
                next = tasks.poll();
                if (next == null) {
                    running = false;
                    return;
                }
            }
            CompletionStage<?> gate = null;
            try {
                gate = next.get();
            } catch (RuntimeException | LinkageError | StackOverflowError e) {
                // The task reports its own failures through its future; keep draining, or every
                // later task of this executor would wait forever.
            }
            if (gate != null) {
                CompletableFuture<?> held = gate.toCompletableFuture();
                if (!held.isDone()) {
                    // still "running": later submissions queue up until the gate opens
                    held.whenComplete((ignored, error) -> pool.execute(this::drain));
                    return;
                }
            }
        }
    }
}
