package dev.varve.storage;

import java.util.List;

/**
 * Decides which of a log's oldest segments may go. Pure: a list of segment facts and a time in, a
 * count out.
 *
 * <p>Each rule deletes the shortest prefix of segments that satisfies it: below the log start
 * offset; newest record older than {@code retention.ms}; the log larger than {@code retention.bytes};
 * more than {@code retention.messages} offsets. Only segments whose every offset is below the high
 * watermark may go (nothing uncommitted is dropped), and an empty active segment never does. With
 * {@code cleanup.policy=compact} (without {@code delete}) only the log-start rule applies, as in Kafka;
 * {@code compact,delete} applies every rule.
 */
public final class RetentionPolicy {
    private RetentionPolicy() {
    }

    /**
     * Facts about one segment.
     *
     * @param baseOffset         first offset
     * @param nextOffset         the next segment's base offset, or the log end offset for the active one
     * @param sizeBytes          file size
     * @param largestTimestampMs newest record timestamp (or file modification time)
     */
    public record SegmentFacts(long baseOffset, long nextOffset, long sizeBytes, long largestTimestampMs) {
    }

    /** The outcome: delete the first {@code count} segments; roll first when that includes the active one. */
    public record Decision(int count, boolean rollFirst) {
        public static final Decision NONE = new Decision(0, false);
    }

    public static Decision decide(List<SegmentFacts> segments, LogConfig config, long nowMs,
                                  long logStartOffset, long highWatermark, long logEndOffset) {
        int n = segments.size();
        // Candidates: the longest prefix that is fully committed, excluding an empty active segment.
        int eligible = 0;
        while (eligible < n) {
            SegmentFacts s = segments.get(eligible);
            boolean emptyActive = eligible == n - 1 && s.sizeBytes() == 0;
            if (emptyActive || s.nextOffset() > highWatermark) {
                break;
            }
            eligible++;
        }
        int count = 0;
        // Below the log start offset.
        while (count < eligible && segments.get(count).nextOffset() <= logStartOffset) {
            count++;
        }
        if (!config.delete()) {
            // cleanup.policy=compact: the cleaner owns what stays; only the log start offset deletes (Kafka's rule).
            return count == 0 ? Decision.NONE : new Decision(count, count == n);
        }
        // By age.
        if (config.retentionMs() >= 0) {
            int byTime = 0;
            while (byTime < eligible && nowMs - segments.get(byTime).largestTimestampMs() > config.retentionMs()) {
                byTime++;
            }
            count = Math.max(count, byTime);
        }
        // By size.
        if (config.retentionBytes() >= 0) {
            long excess = segments.stream().mapToLong(SegmentFacts::sizeBytes).sum() - config.retentionBytes();
            int bySize = 0;
            while (bySize < eligible && excess - segments.get(bySize).sizeBytes() >= 0) {
                excess -= segments.get(bySize).sizeBytes();
                bySize++;
            }
            count = Math.max(count, bySize);
        }
        // By record count: keep at least retention.messages offsets.
        if (config.retentionMessages() >= 0) {
            int byCount = 0;
            while (byCount < eligible && logEndOffset - segments.get(byCount).nextOffset() >= config.retentionMessages()) {
                byCount++;
            }
            count = Math.max(count, byCount);
        }
        if (count == 0) {
            return Decision.NONE;
        }
        return new Decision(count, count == n);
    }
}
