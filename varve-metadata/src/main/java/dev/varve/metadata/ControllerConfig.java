package dev.varve.metadata;

/**
 * The controller's settings, under Kafka's key names.
 *
 * @param brokerSessionTimeoutMs              {@code broker.session.timeout.ms}: a broker silent this long is fenced
 * @param defaultNumPartitions                {@code num.partitions}: CreateTopics with -1 partitions
 * @param defaultReplicationFactor            {@code default.replication.factor}: CreateTopics with -1
 * @param defaultMinInsyncReplicas            {@code min.insync.replicas} when neither topic nor cluster default sets it
 * @param defaultUncleanLeaderElectionEnable  {@code unclean.leader.election.enable} likewise (false, as in Kafka)
 * @param deleteTopicEnable                   {@code delete.topic.enable}
 * @param producerIdBlockSize                 producer ids handed to a broker per AllocateProducerIds (Kafka: 1000)
 */
public record ControllerConfig(long brokerSessionTimeoutMs, int defaultNumPartitions, short defaultReplicationFactor,
                               int defaultMinInsyncReplicas, boolean defaultUncleanLeaderElectionEnable,
                               boolean deleteTopicEnable, int producerIdBlockSize) {
    public static final long DEFAULT_BROKER_SESSION_TIMEOUT_MS = 9_000;
    public static final int DEFAULT_PRODUCER_ID_BLOCK_SIZE = 1000;

    public ControllerConfig {
        if (brokerSessionTimeoutMs < 1 || defaultNumPartitions < 1 || defaultReplicationFactor < 1
                || defaultMinInsyncReplicas < 1 || producerIdBlockSize < 1) {
            throw new IllegalArgumentException("controller settings must be positive");
        }
    }

    /** Kafka's defaults: 9 s sessions, 1 partition, RF 1, min ISR 1, unclean election off, deletion on, blocks of 1000. */
    public static ControllerConfig defaults() {
        return new ControllerConfig(DEFAULT_BROKER_SESSION_TIMEOUT_MS, 1, (short) 1, 1, false, true, DEFAULT_PRODUCER_ID_BLOCK_SIZE);
    }

    public ControllerConfig withBrokerSessionTimeoutMs(long timeoutMs) {
        return new ControllerConfig(timeoutMs, defaultNumPartitions, defaultReplicationFactor, defaultMinInsyncReplicas,
                defaultUncleanLeaderElectionEnable, deleteTopicEnable, producerIdBlockSize);
    }

    public ControllerConfig withDefaultReplicationFactor(short rf) {
        return new ControllerConfig(brokerSessionTimeoutMs, defaultNumPartitions, rf, defaultMinInsyncReplicas,
                defaultUncleanLeaderElectionEnable, deleteTopicEnable, producerIdBlockSize);
    }

    public ControllerConfig withDefaultMinInsyncReplicas(int minIsr) {
        return new ControllerConfig(brokerSessionTimeoutMs, defaultNumPartitions, defaultReplicationFactor, minIsr,
                defaultUncleanLeaderElectionEnable, deleteTopicEnable, producerIdBlockSize);
    }

    public ControllerConfig withDeleteTopicEnable(boolean enable) {
        return new ControllerConfig(brokerSessionTimeoutMs, defaultNumPartitions, defaultReplicationFactor,
                defaultMinInsyncReplicas, defaultUncleanLeaderElectionEnable, enable, producerIdBlockSize);
    }
}
