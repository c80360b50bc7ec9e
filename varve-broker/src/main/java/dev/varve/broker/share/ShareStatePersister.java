package dev.varve.broker.share;

import java.util.Map;

/**
 * Where share-partition state is kept durably (Kafka's Persister). Every method is called with the
 * share-partition's lock held, so the writes of one share-partition are made in the order of its changes.
 */
public interface ShareStatePersister {
    /**
     * Writes the whole state of a share-partition; returns once it is durable as the broker's writes are
     * (a committed append of the state topic), throws if it could not be written (nothing is then changed
     * by the caller: it rolls its state back and answers an error).
     */
    void write(SharePartitionKey key, SharePartition.Snapshot snapshot);

    /** Forgets a share-partition's state (a tombstone). */
    void delete(SharePartitionKey key);

    /** Every share-partition state written and not deleted, as replayed at start-up. */
    Map<SharePartitionKey, SharePartition.Snapshot> load();

    /** A persister that keeps nothing (tests that need no durability). */
    ShareStatePersister NONE = new ShareStatePersister() {
        @Override
        public void write(SharePartitionKey key, SharePartition.Snapshot snapshot) {
        }

        @Override
        public void delete(SharePartitionKey key) {
        }

        @Override
        public Map<SharePartitionKey, SharePartition.Snapshot> load() {
            return Map.of();
        }
    };
}
