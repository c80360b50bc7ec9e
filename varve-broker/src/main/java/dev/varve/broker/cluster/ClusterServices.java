package dev.varve.broker.cluster;

import dev.varve.broker.BrokerConfig;
import dev.varve.broker.BrokerContext;
import dev.varve.broker.TopicRegistry;
import dev.varve.broker.WheelTimer;
import dev.varve.metadata.ControllerConfig;
import dev.varve.metadata.ControllerLogic;
import dev.varve.metadata.MetadataImage;
import dev.varve.metadata.MetadataRecord;
import dev.varve.metadata.TopicImage;
import dev.varve.metadata.quorum.ControllerClient;
import dev.varve.metadata.quorum.MetadataLoader;
import dev.varve.metadata.quorum.MetadataQuorum;
import dev.varve.metadata.quorum.QuorumConfig;
import dev.varve.metadata.quorum.QuorumController;
import dev.varve.storage.LogManager;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.message.AllocateProducerIdsRequestData;
import org.apache.kafka.common.message.AllocateProducerIdsResponseData;
import org.apache.kafka.common.message.CreateTopicsRequestData;
import org.apache.kafka.common.message.CreateTopicsResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.utils.Time;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.File;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

/**
 * Everything a node runs in cluster mode, started and stopped in order: the metadata quorum member
 * (Ratis) with its {@link MetadataLoader}, the controller role ({@link QuorumController}) on voters,
 * and the broker role: the topic registry and replicas driven by the image, the controller channel,
 * replica fetchers and the broker lifecycle (registration, heartbeats, controlled shutdown).
 */
public final class ClusterServices implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ClusterServices.class);

    /**
     * How long one attempt to reach the active controller may take before the Ratis client tries
     * another voter. Ratis does not fail a request when its leader's connection dies, so this bounds how
     * long a broker's heartbeats stay lost after the controller dies (it must stay well below
     * broker.session.timeout.ms). Decisions normally take milliseconds; a slower one is asked again.
     */
    static final long CONTROLLER_ATTEMPT_TIMEOUT_MS = 1_000;

    private final BrokerConfig config;
    private final MetadataLoader loader = new MetadataLoader();
    private final MetadataPublisher publisher;
    private final MetadataPublisher replicaPublisher;
    private final ControllerChannel channel;
    private final ClusterReplicaManager replicas;
    private final QuorumController controller;
    private final java.util.function.LongSupplier replicationMaxLag;
    private final BrokerLifecycle lifecycle;
    private final MetadataQuorum quorum;
    private final MetadataFollower follower;
    /** Tells the active controller who this controller is (KIP-853); null on a broker-only node. */
    private ControllerAnnouncer announcer;

    /**
     * The cluster id every node derives from the voters (same voters, same id), in Kafka's Uuid form.
     * Data from another cluster is refused at start-up by the meta.properties check.
     */
    public static String clusterId(BrokerConfig config) {
        StringBuilder voters = new StringBuilder();
        config.quorumVoters().forEach((id, a) -> voters.append(id).append('@').append(a.getHostString()).append(':')
                .append(a.getPort()).append(','));
        UUID u = UUID.nameUUIDFromBytes(("varve-cluster/" + voters).getBytes(StandardCharsets.UTF_8));
        return new Uuid(u.getMostSignificantBits(), u.getLeastSignificantBits()).toString();
    }

    /**
     * @param leadershipListeners told when this broker starts and stops leading partitions (registered
     *                            before the first image arrives)
     */
    public ClusterServices(BrokerConfig config, dev.varve.broker.security.ListenerSecurity security, String clusterId,
                           Uuid directoryId, BrokerContext context, LogManager logManager,
                           List<BrokerConfig.Endpoint> advertised,
                           List<ClusterReplicaManager.LeadershipListener> leadershipListeners, WheelTimer timer)
            throws IOException {
        this.config = config;
        this.publisher = new MetadataPublisher("varve-metadata-publisher-" + config.nodeId());
        this.replicaPublisher = new MetadataPublisher("varve-replica-publisher-" + config.nodeId());
        Map<Integer, InetSocketAddress> voters = config.quorumVoters();
        boolean voter = voters.containsKey(config.nodeId());
        // a controller outside the initial voters is an observer of the quorum until AddRaftVoter (KIP-853)
        boolean observer = !voter && config.processRoles().contains("controller");
        File firstDir = config.logDirs().get(0);
        long electionMs = config.longValue(BrokerConfig.CONTROLLER_QUORUM_ELECTION_TIMEOUT_MS);
        QuorumConfig.Builder qb = !voter && !observer ? null : QuorumConfig.builder(config.nodeId(), voters,
                        new File(firstDir, "__cluster_metadata").toPath())
                .clusterId(clusterId)
                .electionTimeoutMs(electionMs, 2 * electionMs)
                .tls(security.quorumTls());
        if (observer) {
            BrokerConfig.Endpoint raft = config.controllerListener().orElseThrow();
            qb.observerAddress(InetSocketAddress.createUnresolved(raft.host(), raft.port()));
        }
        QuorumConfig qc = qb == null ? null : qb.build();

        TopicRegistry topics = context.topics();
        // The broker's components follow the image on the publisher's thread, never on the quorum's apply
        // thread: commits must not wait for logs to be created.
        loader.addListener(publisher);
        // 1. the topic registry (and log configs) follow the image
        publisher.addListener((previous, next) -> publishTopics(context, logManager, previous, next));
        // 2. replicas follow the image
        this.channel = new ControllerChannel(new ControllerClient(voters, config.quorumBootstrapServers(), clusterId,
                CONTROLLER_ATTEMPT_TIMEOUT_MS, 1_000,
                security.quorumTls()), 30_000, timer);
        this.lifecycle = new BrokerLifecycle(config, channel, loader, advertised, firstDir, !logManager.damagedAtLoad().isEmpty(),
                () -> !logManager.failedLogDirs().isEmpty());
        logManager.addStorageFailureListener(lifecycle::onStorageFailure);
        ReplicaFetcherManager fetchers = new ReplicaFetcherManager(config.nodeId(), lifecycle::brokerEpoch,
                config.replicaFetcherConfig(), Time.SYSTEM);
        fetchers.setAfterTruncation(logManager::checkpointLoweredRecoveryPoints);
        fetchers.setReplicatedBytes(bytes -> context.metrics().topics().replicated(bytes));
        this.replicationMaxLag = fetchers::maxLag;
        fetchers.setHighWatermarksMoved(context.replicaManager().purgatory()::wakeAll);
        fetchers.setTransport(security::interBrokerChannelBuilder);
        String interBroker = security.interBrokerListener();
        this.replicas = new ClusterReplicaManager(config.nodeId(), lifecycle::brokerEpoch, logManager,
                context.replicaManager().purgatory(), fetchers, channel, Time.SYSTEM,
                config.longValue(BrokerConfig.REPLICA_LAG_TIME_MAX_MS), interBroker,
                topic -> minInsyncReplicas(topics, topic), timer);
        leadershipListeners.forEach(replicas::addLeadershipListener);
        replicas.setReplicaSelector(config.replicaSelector());
        replicas.setFollowerIdentity(new FollowerIdentity(config.replicaFetchVerifySource()));
        ReplicationQuotas quotas = new ReplicationQuotas(config.nodeId(), Time.SYSTEM);
        fetchers.setQuotas(quotas);
        replicas.setQuotas(quotas);
        publisher.addListener((previous, next) -> {
            if (!previous.allConfigs().equals(next.allConfigs()) || !previous.topicsByName().keySet().equals(next.topicsByName().keySet())) {
                quotas.update(next);
            }
        });
        // KIP-226: this broker's TLS stores, changed with kafka-configs --entity-type brokers --entity-name <id>
        org.apache.kafka.common.config.ConfigResource self = new org.apache.kafka.common.config.ConfigResource(
                org.apache.kafka.common.config.ConfigResource.Type.BROKER, Integer.toString(config.nodeId()));
        publisher.addListener((previous, next) -> {
            if (context.dynamicTls() != null && !previous.configs(self).equals(next.configs(self))) {
                context.dynamicTls().applyFromMetadata(next.configs(self));
            }
        });
        // replicas act only on the caught-up image, never on the historical ones replayed at start-up
        // 3. Metadata answers show the new image at once, and requests waiting for an offset (a
        //    forwarded CreateTopics) are answered then, before the replicas have created their logs: as
        //    in Kafka, a client may find a new partition whose leader does not serve it yet
        //    (NOT_LEADER_OR_FOLLOWER, retriable), but never a topic the controller created missing here.
        publisher.addListener((previous, next) -> replicas.publishImage(next));
        publisher.addListener(channel);
        // 4. replicas follow the image (acting only on the caught-up one), on a publisher thread of their
        //    own: creating the logs of a 10,000-partition topic must not hold back the next topic's
        //    CreateTopics answer or Metadata
        publisher.addListener(replicaPublisher);
        replicaPublisher.addListener(new CatchUpGate(publisher::published, replicas, lifecycle.caughtUp()));
        context.replicaManager().setCluster(replicas);
        context.setAutoCreate(this::autoCreate);

        if (config.processRoles().contains("controller")) {
            ControllerConfig cc = new ControllerConfig(config.longValue(BrokerConfig.BROKER_SESSION_TIMEOUT_MS),
                    config.numPartitions(), (short) config.defaultReplicationFactor(), config.minInsyncReplicas(),
                    config.uncleanLeaderElectionEnable(),
                    config.deleteTopicEnable(), ControllerConfig.DEFAULT_PRODUCER_ID_BLOCK_SIZE);
            this.controller = new QuorumController(config.nodeId(), loader,
                    () -> new ControllerLogic(cc, Uuid::randomUuid, (topic, configs) -> validateTopicConfigs(topics, configs),
                            (group, configs) -> context.groupConfigs().validate(configs)),
                    Time.SYSTEM, 250, config.preferredElectionIntervalMs());
            if (!config.controllerListenerNames().isEmpty()) {
                controller.setControllerListenerName(config.controllerListenerNames().get(0));
            }
            controller.setClusterId(clusterId);
            if (config.livenessProbeEnable()) {
                controller.setEndpointProbe(new dev.varve.metadata.quorum.EndpointProbe(1_000, 1_000, Time.SYSTEM::milliseconds));
            }
        } else {
            this.controller = null;
        }
        if (qc != null) {
            this.quorum = MetadataQuorum.start(qc, loader, loader);
            this.follower = null;
            if (controller != null) {
                controller.attach(quorum);
                BrokerConfig.Endpoint raft = config.controllerListener().orElseThrow();
                InetSocketAddress raftAddress = voters.getOrDefault(config.nodeId(),
                        InetSocketAddress.createUnresolved(raft.host(), raft.port()));
                this.announcer = new ControllerAnnouncer(channel, quorum, timer, new MetadataRecord.ControllerRegistration(
                        config.nodeId(), directoryId, new MetadataRecord.Endpoint(raft.listenerName(), raftAddress.getHostString(),
                        raftAddress.getPort())));
                announcer.start();
            }
        } else {
            // a broker outside the voters fetches the committed metadata log from the active controller
            this.quorum = null;
            this.follower = new MetadataFollower(channel, loader, config.nodeId());
            follower.start();
        }
        if (config.processRoles().contains("broker")) {
            lifecycle.unfenced().thenRunAsync(replicas::deleteStrayLogs);
            lifecycle.start();
        } // a controller-only node votes and decides but never registers as a broker (it leads no partition)
    }

    private static void validateTopicConfigs(TopicRegistry topics, Map<String, String> configs) {
        Map<String, String> set = new java.util.HashMap<>();
        configs.forEach((k, v) -> {
            if (v != null) {
                set.put(k, v);
            }
        });
        topics.validateConfigs(set);
    }

    private int minInsyncReplicas(TopicRegistry topics, String topic) {
        String v = topics.get(topic).map(t -> t.configs().get(TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG)).orElse(null);
        try {
            return v != null ? Integer.parseInt(v.trim()) : config.minInsyncReplicas();
        } catch (NumberFormatException e) {
            return config.minInsyncReplicas();
        }
    }

    private void publishTopics(BrokerContext context, LogManager logManager, MetadataImage previous, MetadataImage next) {
        if (previous.topicsByName().equals(next.topicsByName()) && previous.allConfigs().equals(next.allConfigs())) {
            return;
        }
        List<TopicRegistry.TopicInfo> infos = new ArrayList<>();
        for (TopicImage t : next.topicsByName().values()) {
            infos.add(new TopicRegistry.TopicInfo(t.name(), t.id(), t.partitionCount(),
                    next.configs(new ConfigResource(ConfigResource.Type.TOPIC, t.name()))));
        }
        Set<String> changed = context.topics().replaceAll(infos);
        for (String name : changed) {
            try {
                logManager.updateTopicConfig(name, context.topics().logConfig(name));
            } catch (RuntimeException e) {
                LOG.error("Could not apply the new config of topic {}", name, e);
            }
        }
        for (String name : previous.topicsByName().keySet()) {
            if (next.topic(name).isEmpty()) {
                context.fireTopicDeleted(name);
            }
        }
    }

    private void autoCreate(String name) {
        CreateTopicsRequestData req = new CreateTopicsRequestData().setTimeoutMs(30_000);
        req.topics().add(new CreateTopicsRequestData.CreatableTopic().setName(name).setNumPartitions(-1)
                .setReplicationFactor((short) -1));
        channel.send(ApiKeys.CREATE_TOPICS, req).whenComplete((reply, error) -> {
            if (error != null) {
                LOG.warn("Auto-creating topic {} failed: {}", name, error.getMessage());
            }
        });
    }

    /**
     * Creates a topic through the controller; completes once this broker's image has it
     * (TOPIC_ALREADY_EXISTS counts as created), exceptionally with the controller's error. Used by the
     * group coordinator for {@code __consumer_offsets}; nothing waits on a request thread.
     */
    public CompletableFuture<Void> createTopic(String name, int partitions, short replicationFactor,
                                               Map<String, String> configs) {
        CreateTopicsRequestData.CreatableTopic topic = new CreateTopicsRequestData.CreatableTopic().setName(name)
                .setNumPartitions(partitions).setReplicationFactor(replicationFactor);
        configs.forEach((k, v) -> topic.configs().add(new CreateTopicsRequestData.CreatableTopicConfig().setName(k).setValue(v)));
        CreateTopicsRequestData req = new CreateTopicsRequestData().setTimeoutMs(30_000);
        req.topics().add(topic);
        return channel.send(ApiKeys.CREATE_TOPICS, req).thenCompose(reply -> {
            CreateTopicsResponseData resp = (CreateTopicsResponseData) reply.response();
            Errors err = Errors.forCode(resp.topics().iterator().next().errorCode());
            if (err != Errors.NONE && err != Errors.TOPIC_ALREADY_EXISTS) {
                throw err.exception();
            }
            return channel.awaitMetadata(reply.metadataOffset());
        }).orTimeout(30, TimeUnit.SECONDS);
    }

    /** Reserves the next block of producer ids with the controller: completes with {first, size}. */
    public CompletableFuture<long[]> allocateProducerIds() {
        AllocateProducerIdsRequestData req = new AllocateProducerIdsRequestData().setBrokerId(config.nodeId())
                .setBrokerEpoch(lifecycle.brokerEpoch());
        return channel.send(ApiKeys.ALLOCATE_PRODUCER_IDS, req).thenApply(reply -> {
            AllocateProducerIdsResponseData resp = (AllocateProducerIdsResponseData) reply.response();
            Errors err = Errors.forCode(resp.errorCode());
            if (err != Errors.NONE) {
                throw err.exception();
            }
            return new long[]{resp.producerIdStart(), resp.producerIdLen()};
        }).orTimeout(30, TimeUnit.SECONDS);
    }

    public ControllerChannel channel() {
        return channel;
    }

    public MetadataLoader loader() {
        return loader;
    }

    public BrokerLifecycle lifecycle() {
        return lifecycle;
    }

    public ClusterReplicaManager replicas() {
        return replicas;
    }

    /**
     * The active controller's node id: as this node's Raft member knows it on a voter; asked of the
     * active controller itself (DescribeQuorum, within {@code timeoutMs}) on a broker-only node, which follows
     * the metadata without taking part in Raft. Empty when no controller answers.
     */
    public java.util.OptionalInt activeControllerId(long timeoutMs) {
        if (quorum != null) {
            return loader.leaderId();
        }
        try {
            org.apache.kafka.common.message.DescribeQuorumRequestData request = org.apache.kafka.common.requests.DescribeQuorumRequest
                    .singletonRequest(new org.apache.kafka.common.TopicPartition("__cluster_metadata", 0));
            ControllerChannel.Reply reply = channel.send(org.apache.kafka.common.protocol.ApiKeys.DESCRIBE_QUORUM, request)
                    .get(timeoutMs, java.util.concurrent.TimeUnit.MILLISECONDS);
            org.apache.kafka.common.message.DescribeQuorumResponseData data =
                    (org.apache.kafka.common.message.DescribeQuorumResponseData) reply.response();
            org.apache.kafka.common.message.DescribeQuorumResponseData.PartitionData p = data.topics().get(0).partitions().get(0);
            return p.errorCode() == 0 && p.leaderId() >= 0 ? java.util.OptionalInt.of(p.leaderId()) : java.util.OptionalInt.empty();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return java.util.OptionalInt.empty();
        } catch (Exception e) {
            return java.util.OptionalInt.empty();
        }
    }

    /** How many messages this broker's most lagging followed partition is behind its leader's high watermark. */
    public long replicationMaxLag() {
        return replicationMaxLag.getAsLong();
    }

    /** Reports the controller's event queue and processing times (no-op on a broker-only node). */
    public void setControllerEventTimes(QuorumController.EventTimes times) {
        if (controller != null) {
            controller.setEventTimes(times);
        }
    }

    /** Whether this node is the active controller now. */
    public boolean isActiveController() {
        return controller != null && controller.isActive();
    }

    /** Controlled shutdown: hand leaderships over while still serving. */
    public void beginShutdown(long timeoutMs) {
        lifecycle.controlledShutdown(timeoutMs);
    }

    @Override
    public void close() {
        if (announcer != null) {
            announcer.close();
        }
        lifecycle.close();
        replicas.close();
        if (controller != null) {
            controller.close();
        }
        if (quorum != null) {
            quorum.close();
        }
        if (follower != null) {
            follower.close();
        }
        publisher.close();
        replicaPublisher.close();
        channel.close();
    }

    /** After the logs are closed: record the clean shutdown. */
    public void recordCleanShutdown() {
        lifecycle.recordCleanShutdown();
    }
}
