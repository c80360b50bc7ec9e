package dev.varve.broker.group;

/**
 * Runs the coordinator's delayed work: session timeouts, rebalance timeouts, the initial rebalance
 * delay. Production uses a hashed timer wheel; tests drive a manual one with a fake clock.
 */
public interface GroupTimer {
    /**
     * Runs {@code task} once after {@code delayMs}.
     *
     * @return cancels the task if it has not run yet (calling it later does nothing)
     */
    Runnable schedule(long delayMs, Runnable task);
}
