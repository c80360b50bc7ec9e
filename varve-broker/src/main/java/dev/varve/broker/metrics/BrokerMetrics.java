package dev.varve.broker.metrics;

/** A broker's metrics: the registry and the groups the request path updates. */
public final class BrokerMetrics implements AutoCloseable {
    /** For a broker context built without a broker around it (tests): counted, never exported. */
    public static final BrokerMetrics DETACHED = new BrokerMetrics(KafkaMetrics.withoutJmx());

    private final KafkaMetrics registry;
    private final BrokerTopicStats topics;
    private final RequestMetrics requests;

    public BrokerMetrics(KafkaMetrics registry) {
        this.registry = registry;
        this.topics = new BrokerTopicStats(registry);
        this.requests = new RequestMetrics(registry);
    }

    public KafkaMetrics registry() {
        return registry;
    }

    /** {@code kafka.server:type=BrokerTopicMetrics}. */
    public BrokerTopicStats topics() {
        return topics;
    }

    /** {@code kafka.network:type=RequestMetrics}. */
    public RequestMetrics requests() {
        return requests;
    }

    @Override
    public void close() {
        if (this != DETACHED) {
            registry.close();
        }
    }
}
