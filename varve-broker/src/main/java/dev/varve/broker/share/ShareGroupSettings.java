package dev.varve.broker.share;

/**
 * The per-group settings of a share group the data path needs (Kafka's group configs): where a
 * share-partition without state starts ({@code share.auto.offset.reset}: latest, earliest or
 * by_duration:ISO-8601 duration) and whether it delivers only committed records
 * ({@code share.isolation.level}).
 */
public interface ShareGroupSettings {
    String autoOffsetReset(String groupId);

    boolean readCommitted(String groupId);

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
