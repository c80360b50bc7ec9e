package dev.varve.broker;

import dev.varve.broker.group.GroupTimer;
import io.netty.util.HashedWheelTimer;
import io.netty.util.Timeout;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.TimeUnit;

/**
 * A broker's delayed tasks on one hashed timer wheel: group session and rebalance timeouts, controller
 * retries and metadata waits, acks=all timeouts, ISR checks and AlterPartition retries. Thousands of
 * timeouts cost entries in the wheel, not threads; the wheel is O(1) to add to, which matters for the
 * acks=all timeout every produce to a partition adds. Tasks run on the wheel's thread, one at a time, so
 * they must not block.
 *
 * <p>One wheel per broker, with 100 ms ticks: every tick wakes its thread whether or not anything is
 * due, so an idle broker pays per wheel per tick (three 50 ms wheels were about 5% of an idle 3-node
 * cluster's CPU). The shortest delays here are the controller channel's 100 ms retry back-off and
 * 500 ms AlterPartition retries; a timeout fires at most one tick late.
 */
public final class WheelTimer implements GroupTimer, AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(WheelTimer.class);
    private final HashedWheelTimer wheel;

    public WheelTimer(String threadName) {
        this.wheel = new HashedWheelTimer(r -> {
            Thread t = new Thread(r, threadName);
            t.setDaemon(true);
            return t;
        }, 100, TimeUnit.MILLISECONDS);
    }

    /**
     * Runs {@code task} on the timer's thread after {@code delayMs}; a task that throws is logged.
     *
     * @return cancels the task if it has not run yet
     * @throws IllegalStateException once the timer is closed
     */
    @Override
    public Runnable schedule(long delayMs, Runnable task) {
        Timeout timeout = wheel.newTimeout(t -> {
            try {
                task.run();
            } catch (RuntimeException e) {
                LOG.error("timer task failed", e);
            }
        }, Math.max(delayMs, 0), TimeUnit.MILLISECONDS);
        return timeout::cancel;
    }

    @Override
    public void close() {
        wheel.stop();
    }
}
