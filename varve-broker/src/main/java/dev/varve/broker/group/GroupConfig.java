package dev.varve.broker.group;

/**
 * The coordinator's settings, under Kafka's broker keys.
 *
 * @param offsetsTopicNumPartitions       {@code offsets.topic.num.partitions}: partitions of {@code __consumer_offsets}
 * @param offsetsTopicSegmentBytes        {@code offsets.topic.segment.bytes}
 * @param initialRebalanceDelayMs         {@code group.initial.rebalance.delay.ms}: how long the first rebalance
 *                                        of an empty group waits for more members
 * @param minSessionTimeoutMs             {@code group.min.session.timeout.ms}
 * @param maxSessionTimeoutMs             {@code group.max.session.timeout.ms}
 * @param maxSize                         {@code group.max.size}: members per group
 * @param offsetsRetentionMs              {@code offsets.retention.minutes} in ms: how long an empty group's
 *                                        offsets (and a simple consumer's) are kept after the last commit
 * @param offsetsRetentionCheckIntervalMs {@code offsets.retention.check.interval.ms}
 * @param offsetMetadataMaxBytes          {@code offset.metadata.max.bytes}
 */
public record GroupConfig(int offsetsTopicNumPartitions, int offsetsTopicSegmentBytes, long initialRebalanceDelayMs,
                          int minSessionTimeoutMs, int maxSessionTimeoutMs, int maxSize, long offsetsRetentionMs,
                          long offsetsRetentionCheckIntervalMs, int offsetMetadataMaxBytes) {
    /** Kafka's defaults. */
    public static GroupConfig defaults() {
        return new GroupConfig(50, 100 * 1024 * 1024, 3000, 6000, 1_800_000, Integer.MAX_VALUE,
                7L * 24 * 60 * 60 * 1000, 600_000, 4096);
    }
}
