package dev.varve.storage;

import org.apache.kafka.common.utils.Time;

import java.util.function.Supplier;

/** A clock that moves only when told to. */
public final class MockTime implements Time {
    private long nowMs;
    private long nanos;

    public MockTime(long startMs) {
        this.nowMs = startMs;
        this.nanos = startMs * 1_000_000L;
    }

    @Override
    public synchronized long milliseconds() {
        return nowMs;
    }

    @Override
    public synchronized long nanoseconds() {
        return nanos;
    }

    @Override
    public synchronized void sleep(long ms) {
        advance(ms);
    }

    public synchronized void advance(long ms) {
        nowMs += ms;
        nanos += ms * 1_000_000L;
    }

    @Override
    public void waitObject(Object obj, Supplier<Boolean> condition, long deadlineMs) {
        throw new UnsupportedOperationException("MockTime does not wait");
    }
}
