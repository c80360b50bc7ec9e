package dev.varve.broker.metrics;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * How idle a set of event-loop threads is, for Kafka's
 * {@code kafka.network:type=SocketServer,name=NetworkProcessorAvgIdlePercent}: the fraction (0 to 1) of
 * wall time the threads did not spend on the CPU, averaged over them, between two {@link #sample}s.
 * Kafka's processors time their own select loop; Varve's network threads are Netty event loops, whose
 * time off the CPU is their time waiting in epoll, so their CPU time is the busy time. Threads are the
 * ones {@link #factory} made (alive ones only).
 */
public final class ThreadsIdle {
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    private final List<Thread> threads = new CopyOnWriteArrayList<>();
    private final String prefix;
    private final AtomicInteger next = new AtomicInteger();
    // guarded by this
    private long lastWallNanos = System.nanoTime();
    private long lastCpuNanos;
    private volatile double idle = 1.0;

    public ThreadsIdle(String prefix) {
        this.prefix = prefix;
    }

    /** A thread factory whose threads (Netty's, daemons, named {@code prefix-N}) are measured. */
    public ThreadFactory factory() {
        return r -> {
            // Netty's own thread class, so its FastThreadLocals (buffer caches) keep their fast path
            Thread t = new io.netty.util.concurrent.FastThreadLocalThread(r, prefix + "-" + next.incrementAndGet());
            t.setDaemon(true);
            threads.add(t);
            return t;
        };
    }

    private long cpuNanos() {
        long sum = 0;
        for (Thread t : threads) {
            if (!t.isAlive()) {
                continue;
            }
            long cpu = THREADS.isThreadCpuTimeSupported() ? THREADS.getThreadCpuTime(t.getId()) : -1;
            if (cpu > 0) {
                sum += cpu;
            }
        }
        return sum;
    }

    /** Measures the idle fraction since the previous sample. */
    public synchronized void sample() {
        long now = System.nanoTime();
        long cpu = cpuNanos();
        long alive = threads.stream().filter(Thread::isAlive).count();
        long wall = (now - lastWallNanos) * Math.max(1, alive);
        if (wall > 0) {
            idle = Math.max(0.0, Math.min(1.0, 1.0 - (double) (cpu - lastCpuNanos) / wall));
        }
        lastWallNanos = now;
        lastCpuNanos = cpu;
    }

    /** The idle fraction measured by the last {@link #sample}. */
    public double idle() {
        return idle;
    }
}
