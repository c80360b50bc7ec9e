package dev.varve.cli.client;

/**
 * Latencies in microseconds, counted in log-linear buckets as HdrHistogram does with two significant
 * digits: values below 128 exactly, larger ones in 64 buckets per power of two, so a percentile is off
 * by less than 1/64 of its value (never more than the largest value seen). Fixed size (a few KB) however
 * many values are recorded. Not thread-safe: one per recording thread, {@link #add merged} at the end.
 */
final class LatencyHistogram {
    private static final int LINEAR = 128;
    private static final int SUB = 64;
    private static final int BUCKETS = LINEAR + (63 - 7) * SUB;

    private final long[] counts = new long[BUCKETS];
    private long total;
    private long max;
    private long sum;

    void record(long micros) {
        long v = Math.max(0, micros);
        counts[index(v)]++;
        total++;
        sum += v;
        max = Math.max(max, v);
    }

    void add(LatencyHistogram other) {
        for (int i = 0; i < BUCKETS; i++) {
            counts[i] += other.counts[i];
        }
        total += other.total;
        sum += other.sum;
        max = Math.max(max, other.max);
    }

    long count() {
        return total;
    }

    long max() {
        return max;
    }

    double mean() {
        return total == 0 ? 0 : (double) sum / total;
    }

    /** The value at or below which {@code fraction} (0..1) of the values lie: the top of its bucket, at most the maximum. */
    long percentile(double fraction) {
        if (total == 0) {
            return 0;
        }
        long rank = Math.max(1, (long) Math.ceil(fraction * total));
        long seen = 0;
        for (int i = 0; i < BUCKETS; i++) {
            seen += counts[i];
            if (seen >= rank) {
                return Math.min(max, highest(i));
            }
        }
        return max;
    }

    static int index(long v) {
        if (v < LINEAR) {
            return (int) v;
        }
        int exp = 63 - Long.numberOfLeadingZeros(v); // 7..62
        int shift = exp - 6;
        int sub = (int) (v >>> shift); // 64..127
        return LINEAR + (exp - 7) * SUB + (sub - SUB);
    }

    /** The largest value that falls in bucket {@code i}. */
    static long highest(int i) {
        if (i < LINEAR) {
            return i;
        }
        int exp = (i - LINEAR) / SUB + 7;
        int sub = (i - LINEAR) % SUB + SUB;
        int shift = exp - 6;
        return (((long) sub + 1) << shift) - 1;
    }
}
