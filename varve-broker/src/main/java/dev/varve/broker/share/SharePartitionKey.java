package dev.varve.broker.share;

import org.apache.kafka.common.Uuid;

/** A share-partition: a share group and one partition of a topic, named by topic id (as KIP-932's records name it). */
public record SharePartitionKey(String groupId, Uuid topicId, int partition) {
    public SharePartitionKey {
        if (groupId == null || topicId == null) {
            throw new IllegalArgumentException("group id and topic id are required");
        }
    }

    /** Kafka's coordinator key of a share-partition ("group:topicId:partition"), which picks its state partition. */
    public String coordinatorKey() {
        return groupId + ":" + topicId + ":" + partition;
    }
}
