package dev.varve.broker.quota;

/**
 * Kafka's sampled Rate: {@code samples} windows of {@code windowMs}; the rate is the total of the
 * live samples over the time they cover, which is never taken as shorter than {@code samples - 1}
 * windows (so a first burst is not judged over a few milliseconds).
 */
public final class SampledRate {
    private final long[] starts;
    private final double[] values;
    private final long windowMs;
    private int current;
    private long lastRecordMs;

    public SampledRate(int samples, long windowMs) {
        this.starts = new long[samples];
        this.values = new double[samples];
        this.windowMs = windowMs;
        java.util.Arrays.fill(starts, Long.MIN_VALUE);
    }

    synchronized long lastRecordMs() {
        return lastRecordMs;
    }

    /** Records and returns the throttle time for {@code quota} (per second), at most {@code maxThrottleMs}. */
    public synchronized long recordAndThrottle(double value, long now, double quota, long maxThrottleMs) {
        lastRecordMs = now;
        if (starts[current] == Long.MIN_VALUE || now >= starts[current] + windowMs) {
            current = (current + 1) % starts.length;
            starts[current] = now;
            values[current] = 0;
        }
        values[current] += value;
        // purge samples older than the whole span
        long span = (long) starts.length * windowMs;
        double total = 0;
        long oldest = now;
        for (int i = 0; i < starts.length; i++) {
            if (starts[i] == Long.MIN_VALUE) {
                continue;
            }
            if (now - starts[i] >= span) {
                starts[i] = Long.MIN_VALUE;
                values[i] = 0;
                continue;
            }
            total += values[i];
            oldest = Math.min(oldest, starts[i]);
        }
        long elapsed = now - oldest;
        long fullWindows = elapsed / windowMs;
        if (fullWindows < starts.length - 1) {
            elapsed += (starts.length - 1 - fullWindows) * windowMs;
        }
        elapsed = Math.max(elapsed, 1);
        double rate = total * 1000.0 / elapsed;
        if (rate <= quota) {
            return 0;
        }
        return Math.min(maxThrottleMs, Math.round((rate - quota) / quota * elapsed));
    }
}
