package dev.varve.broker;

import dev.varve.broker.group.GroupTimer;
import io.netty.util.HashedWheelTimer;
import io.netty.util.Timeout;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.TimeUnit;

/**
 * Delayed tasks on one hashed timer wheel (50 ms ticks: every tick wakes the thread, and group
 * timeouts are seconds): thousands of session timeouts cost
 * entries in the wheel, not threads. Tasks run on the wheel's thread, one at a time.
 */
public final class WheelTimer implements GroupTimer, AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(WheelTimer.class);
    private final HashedWheelTimer wheel;

    public WheelTimer(String threadName) {
        this.wheel = new HashedWheelTimer(r -> {
            Thread t = new Thread(r, threadName);
            t.setDaemon(true);
            return t;
        }, 50, TimeUnit.MILLISECONDS);
    }

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
