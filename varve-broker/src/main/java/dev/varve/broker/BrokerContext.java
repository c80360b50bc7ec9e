package dev.varve.broker;

import org.apache.kafka.common.TopicPartition;

import java.util.Map;
import java.util.Optional;

/** What API handlers need from the broker: configuration, identity, topics and partitions. */
public final class BrokerContext {
    private final BrokerConfig config;
    private final String clusterId;
    private final TopicRegistry topics;
    private final ReplicaManager replicaManager;
    private final ProducerIdManager producerIds;
    private volatile java.util.List<BrokerConfig.Endpoint> advertised;

    public BrokerContext(BrokerConfig config, String clusterId, TopicRegistry topics, ReplicaManager replicaManager,
                         ProducerIdManager producerIds) {
        this.config = config;
        this.clusterId = clusterId;
        this.topics = topics;
        this.replicaManager = replicaManager;
        this.producerIds = producerIds;
        this.advertised = config.advertisedListeners();
    }

    /** Sets the endpoints clients are told, once ports configured as 0 are bound. */
    void setAdvertised(java.util.List<BrokerConfig.Endpoint> endpoints) {
        this.advertised = java.util.List.copyOf(endpoints);
    }

    public BrokerConfig config() {
        return config;
    }

    public int nodeId() {
        return config.nodeId();
    }

    public String rack() {
        return config.rack();
    }

    public String clusterId() {
        return clusterId;
    }

    public TopicRegistry topics() {
        return topics;
    }

    public ReplicaManager replicaManager() {
        return replicaManager;
    }

    public ProducerIdManager producerIds() {
        return producerIds;
    }

    /** The advertised endpoint of the listener a request came in on (or the first one). */
    public Optional<BrokerConfig.Endpoint> advertisedEndpoint(String listenerName) {
        java.util.List<BrokerConfig.Endpoint> endpoints = advertised;
        return endpoints.stream()
                .filter(e -> e.listenerName().equals(listenerName))
                .findFirst()
                .or(() -> endpoints.stream().findFirst());
    }

    /** Creates a topic and its partition logs. */
    public synchronized TopicRegistry.TopicInfo createTopic(String name, int partitions, Map<String, String> configs) {
        TopicRegistry.TopicInfo t = topics.create(name, partitions, configs);
        for (int p = 0; p < partitions; p++) {
            replicaManager.log(new TopicPartition(name, p));
        }
        return t;
    }
}
