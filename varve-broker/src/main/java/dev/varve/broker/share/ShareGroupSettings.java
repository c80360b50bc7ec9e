package dev.varve.broker.share;

/**
 * The per-group settings of a share group the data path needs (Kafka's group configs): where a
 * share-partition without state starts ({@code share.auto.offset.reset}: latest, earliest or
 * by_duration:ISO-8601 duration), whether it delivers only committed records
 * ({@code share.isolation.level}) and how long an acquisition lock lasts
 * ({@code share.record.lock.duration.ms}).
 */
public interface ShareGroupSettings {
    String autoOffsetReset(String groupId);

    boolean readCommitted(String groupId);

    /** The group's acquisition lock duration; 0 or less: the broker's {@code group.share.record.lock.duration.ms}. */
    default long recordLockDurationMs(String groupId) {
        return 0;
    }

    /** Kafka's defaults: latest, read_uncommitted. */
    ShareGroupSettings DEFAULTS = new ShareGroupSettings() {
        @Override
        public String autoOffsetReset(String groupId) {
            return "latest";
        }

        @Override
        public boolean readCommitted(String groupId) {
            return false;
        }
    };
}
