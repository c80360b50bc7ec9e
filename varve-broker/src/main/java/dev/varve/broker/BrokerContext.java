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
    private final java.util.List<java.util.function.Consumer<String>> topicDeletionListeners =
            new java.util.concurrent.CopyOnWriteArrayList<>();

    public BrokerContext(BrokerConfig config, String clusterId, TopicRegistry topics, ReplicaManager replicaManager,
                         ProducerIdManager producerIds) {
        this.config = config;
        this.clusterId = clusterId;
        this.topics = topics;
        this.replicaManager = replicaManager;
        this.producerIds = producerIds;
        this.advertised = config.advertisedListeners();
        this.fetchSessions = new FetchSessions(config.intValue(BrokerConfig.MAX_INCREMENTAL_FETCH_SESSION_CACHE_SLOTS),
                org.apache.kafka.common.utils.Time.SYSTEM);
        this.groupConfigs = new dev.varve.broker.group.GroupConfigs(config.groupConfigDefaults());
    }

    private final dev.varve.broker.group.GroupConfigs groupConfigs;
    private volatile LocalGroupConfigStore groupConfigStore;

    /** Group configs (KIP-848/932): the keys, their validation and every group's effective settings. */
    public dev.varve.broker.group.GroupConfigs groupConfigs() {
        return groupConfigs;
    }

    /** A single node's group config overrides; null in a cluster (they are in the metadata image). */
    public LocalGroupConfigStore groupConfigStore() {
        return groupConfigStore;
    }

    void setGroupConfigStore(LocalGroupConfigStore store) {
        this.groupConfigStore = store;
    }

    private final FetchSessions fetchSessions;
    private volatile dev.varve.broker.security.AclAuthorizer authorizer = dev.varve.broker.security.AclAuthorizer.NONE;

    private volatile dev.varve.broker.quota.ClientQuotaManager quotas;

    private volatile dev.varve.broker.metrics.BrokerMetrics metrics = dev.varve.broker.metrics.BrokerMetrics.DETACHED;

    /** The broker's Kafka-named metrics. */
    public dev.varve.broker.metrics.BrokerMetrics metrics() {
        return metrics;
    }

    void setMetrics(dev.varve.broker.metrics.BrokerMetrics metrics) {
        this.metrics = metrics;
    }

    /** Client quotas (null before the broker sets them up). */
    public dev.varve.broker.quota.ClientQuotaManager quotas() {
        return quotas;
    }

    public void setQuotas(dev.varve.broker.quota.ClientQuotaManager quotas) {
        this.quotas = quotas;
    }

    private volatile dev.varve.broker.security.DynamicTls dynamicTls;

    /** The listeners' TLS settings changed without a restart (null before the listeners exist). */
    public dev.varve.broker.security.DynamicTls dynamicTls() {
        return dynamicTls;
    }

    void setDynamicTls(dev.varve.broker.security.DynamicTls dynamicTls) {
        this.dynamicTls = dynamicTls;
    }

    /** Who may do what (everything without an authorizer). */
    public dev.varve.broker.security.AclAuthorizer authorizer() {
        return authorizer;
    }

    public void setAuthorizer(dev.varve.broker.security.AclAuthorizer authorizer) {
        this.authorizer = authorizer;
    }

    /** The incremental fetch sessions (KIP-227) of consumers and followers. */
    public FetchSessions fetchSessions() {
        return fetchSessions;
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

    /** Single node: creates a topic and its partition logs, here and now. */
    public TopicRegistry.TopicInfo createTopic(String name, int partitions, Map<String, String> configs) {
        if (cluster != null) {
            throw new IllegalStateException("in a cluster, topics are created by the controller: use createTopicAsync");
        }
        synchronized (topics) { // the lock ReplicaManager takes before creating a log
            TopicRegistry.TopicInfo t = topics.create(name, partitions, configs);
            for (int p = 0; p < partitions; p++) {
                replicaManager.log(new TopicPartition(name, p));
            }
            return t;
        }
    }

    /**
     * Creates an internal topic, replicated as widely as {@code offsets.topic.replication.factor}
     * and the brokers present allow; completes once this broker's metadata has it (exceptionally when the controller refused
     * or did not answer). Never waits on the calling thread: in a cluster the controller decides.
     */
    public java.util.concurrent.CompletableFuture<Void> createTopicAsync(String name, int partitions,
                                                                         Map<String, String> configs) {
        return createTopicAsync(name, partitions, (short) config.intValue(BrokerConfig.OFFSETS_TOPIC_REPLICATION_FACTOR),
                configs);
    }

    /** {@link #createTopicAsync(String, int, Map)} with {@code replicationFactor} (capped at the brokers present). */
    public java.util.concurrent.CompletableFuture<Void> createTopicAsync(String name, int partitions, short replicationFactor,
                                                                         Map<String, String> configs) {
        dev.varve.broker.cluster.ClusterServices c = cluster;
        if (c == null) {
            try {
                createTopic(name, partitions, configs);
            } catch (org.apache.kafka.common.errors.TopicExistsException e) {
                // created concurrently
            } catch (RuntimeException e) {
                return java.util.concurrent.CompletableFuture.failedFuture(e);
            }
            return java.util.concurrent.CompletableFuture.completedFuture(null);
        }
        int alive = (int) replicaManager.cluster().image().brokers().values().stream().filter(b -> !b.fenced()).count();
        short rf = (short) Math.max(1, Math.min(replicationFactor, alive));
        return c.createTopic(name, partitions, rf, configs);
    }

    private volatile java.util.function.Consumer<String> autoCreate;

    /** Cluster mode: how Metadata's auto-creation reaches the controller. */
    public void setAutoCreate(java.util.function.Consumer<String> autoCreate) {
        this.autoCreate = autoCreate;
    }

    /** Cluster mode: asks the controller to create {@code name} with the defaults, without waiting. */
    public void forwardCreateTopic(String name) {
        java.util.function.Consumer<String> c = autoCreate;
        if (c != null) {
            c.accept(name);
        }
    }

    /** Cluster mode: tells the deletion listeners that the metadata image no longer has {@code name}. */
    public void fireTopicDeleted(String name) {
        for (java.util.function.Consumer<String> listener : topicDeletionListeners) {
            listener.accept(name);
        }
    }

    private volatile dev.varve.broker.cluster.ClusterServices cluster;

    /** Cluster mode: topic changes go to the controller. */
    public void setCluster(dev.varve.broker.cluster.ClusterServices cluster) {
        this.cluster = cluster;
    }

    /** The cluster services, or null on a single node. */
    public dev.varve.broker.cluster.ClusterServices cluster() {
        return cluster;
    }

    /** Called with a topic's name after it is deleted (outside the topic lock), e.g. to drop its offsets. */
    public void onTopicDeleted(java.util.function.Consumer<String> listener) {
        topicDeletionListeners.add(listener);
    }

    /** The endpoints clients are told, with ports configured as 0 resolved. */
    public java.util.List<BrokerConfig.Endpoint> advertisedEndpoints() {
        return advertised;
    }

    /**
     * Deletes a topic: first from the registry (so no new request resolves it), then its partition
     * logs (renamed for background removal). Serialized with topic creation, so a topic re-created
     * under the same name starts from new, empty logs. Known gap: {@link ReplicaManager#log} checks the
     * registry and then opens the log without this lock, so a produce racing the deletion can re-create
     * an empty log of the deleted partition (holding that produce's records).
     *
     * @throws org.apache.kafka.common.errors.UnknownTopicOrPartitionException when it does not exist
     * @throws org.apache.kafka.common.errors.KafkaStorageException when a log could not be removed
     *         (the topic is gone from the registry; the other logs are deleted)
     */
    public TopicRegistry.TopicInfo deleteTopic(String name) {
        TopicRegistry.TopicInfo deleted = deleteTopicLocked(name);
        for (java.util.function.Consumer<String> listener : topicDeletionListeners) {
            listener.accept(name);
        }
        return deleted;
    }

    private TopicRegistry.TopicInfo deleteTopicLocked(String name) {
        synchronized (topics) { // the lock ReplicaManager takes before creating a log
            TopicRegistry.TopicInfo t = topics.delete(name);
            RuntimeException failure = null;
            for (int p = 0; p < t.partitions(); p++) {
                try {
                    replicaManager.logManager().deleteLog(new TopicPartition(name, p));
                } catch (RuntimeException e) {
                    if (failure == null) {
                        failure = e;
                    } else {
                        failure.addSuppressed(e);
                    }
                }
            }
            if (failure != null) {
                throw failure;
            }
            return t;
        }
    }

    /**
     * Grows a topic to {@code partitions} partitions and creates the new logs. The caller checks that
     * this is an increase.
     */
    public TopicRegistry.TopicInfo createPartitions(String name, int partitions) {
        synchronized (topics) { // the lock ReplicaManager takes before creating a log
            TopicRegistry.TopicInfo before = topics.get(name).orElseThrow(() ->
                    new org.apache.kafka.common.errors.UnknownTopicOrPartitionException("Topic '" + name + "' does not exist."));
            if (partitions <= before.partitions()) {
                throw new org.apache.kafka.common.errors.InvalidPartitionsException("Topic '" + name + "' already has "
                        + before.partitions() + " partition(s); " + partitions + " would not be an increase.");
            }
            TopicRegistry.TopicInfo after = topics.setPartitions(name, partitions);
            for (int p = before.partitions(); p < partitions; p++) {
                replicaManager.log(new TopicPartition(name, p));
            }
            return after;
        }
    }

    /**
     * Replaces a topic's config overrides with {@code change} applied to the current ones: validated
     * (unknown key or bad value: {@link org.apache.kafka.common.errors.InvalidConfigurationException}),
     * then, unless {@code validateOnly}, persisted and applied to the topic's open logs. Serialized,
     * so two concurrent changes of one topic never lose each other's keys.
     *
     * @return the overrides after the change (what they would be, when validating only)
     */
    public Map<String, String> alterTopicConfigs(String name,
                                                             java.util.function.UnaryOperator<Map<String, String>> change,
                                                             boolean validateOnly) {
        synchronized (topics) { // the lock ReplicaManager takes before creating a log
            TopicRegistry.TopicInfo t = topics.get(name).orElseThrow(() ->
                    new org.apache.kafka.common.errors.UnknownTopicOrPartitionException("Topic '" + name + "' does not exist."));
            Map<String, String> updated = Map.copyOf(change.apply(new java.util.HashMap<>(t.configs())));
            topics.validateConfigs(updated);
            if (!validateOnly) {
                topics.setConfigs(name, updated);
                replicaManager.logManager().updateTopicConfig(name, topics.logConfig(name));
            }
            return updated;
        }
    }
}
