package dev.varve.broker.metrics;

import com.yammer.metrics.core.Meter;

import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;

/**
 * A fixed pool of request threads that knows how busy it is, for Kafka's
 * {@code kafka.server:type=KafkaRequestHandlerPool,name=RequestHandlerAvgIdlePercent}: a meter of idle
 * nanoseconds per thread, rated per nanosecond, so that its rates are the idle fraction (0 to 1) as in
 * Kafka. {@link #sample} marks the idle time since the previous sample.
 */
public final class MeteredThreadPool extends ThreadPoolExecutor {
    private final int threads;
    private final LongAdder busyNanos = new LongAdder();
    private final ThreadLocal<long[]> started = ThreadLocal.withInitial(() -> new long[1]);
    // guarded by this
    private long lastSampleNanos = System.nanoTime();
    private long lastBusyNanos;

    public MeteredThreadPool(int threads, ThreadFactory factory) {
        super(threads, threads, 0, TimeUnit.MILLISECONDS, new LinkedBlockingQueue<>(), factory);
        this.threads = threads;
    }

    @Override
    protected void beforeExecute(Thread t, Runnable r) {
        started.get()[0] = System.nanoTime();
    }

    @Override
    protected void afterExecute(Runnable r, Throwable t) {
        busyNanos.add(System.nanoTime() - started.get()[0]);
    }

    /** Marks into {@code idle} the idle nanoseconds per thread since the previous sample. */
    public synchronized void sample(Meter idle) {
        long now = System.nanoTime();
        long busy = busyNanos.sum();
        long idleNanos = Math.max(0, (now - lastSampleNanos) * threads - (busy - lastBusyNanos));
        idle.mark(idleNanos / threads);
        lastSampleNanos = now;
        lastBusyNanos = busy;
    }
}
