package dev.varve.broker;

import dev.varve.broker.api.AddOffsetsToTxnHandler;
import dev.varve.broker.api.AddPartitionsToTxnHandler;
import dev.varve.broker.api.AlterConfigsHandler;
import dev.varve.broker.api.ApiHandler;
import dev.varve.broker.api.ApiVersionsHandler;
import dev.varve.broker.api.CreatePartitionsHandler;
import dev.varve.broker.api.CreateTopicsHandler;
import dev.varve.broker.api.DeleteGroupsHandler;
import dev.varve.broker.api.DeleteRecordsHandler;
import dev.varve.broker.api.DeleteTopicsHandler;
import dev.varve.broker.api.DescribeClusterHandler;
import dev.varve.broker.api.DescribeConfigsHandler;
import dev.varve.broker.api.DescribeGroupsHandler;
import dev.varve.broker.api.DescribeLogDirsHandler;
import dev.varve.broker.api.DescribeProducersHandler;
import dev.varve.broker.api.DescribeTransactionsHandler;
import dev.varve.broker.api.EndTxnHandler;
import dev.varve.broker.api.WriteTxnMarkersHandler;
import dev.varve.broker.api.FetchHandler;
import dev.varve.broker.api.FindCoordinatorHandler;
import dev.varve.broker.api.HeartbeatHandler;
import dev.varve.broker.api.IncrementalAlterConfigsHandler;
import dev.varve.broker.api.InitProducerIdHandler;
import dev.varve.broker.api.JoinGroupHandler;
import dev.varve.broker.api.LeaveGroupHandler;
import dev.varve.broker.api.ListGroupsHandler;
import dev.varve.broker.api.ListOffsetsHandler;
import dev.varve.broker.api.ListTransactionsHandler;
import dev.varve.broker.api.MetadataHandler;
import dev.varve.broker.api.OffsetCommitHandler;
import dev.varve.broker.api.OffsetDeleteHandler;
import dev.varve.broker.api.OffsetFetchHandler;
import dev.varve.broker.api.OffsetForLeaderEpochHandler;
import dev.varve.broker.api.ProduceHandler;
import dev.varve.broker.api.SyncGroupHandler;
import dev.varve.broker.api.TxnOffsetCommitHandler;
import dev.varve.broker.group.GroupConfig;
import dev.varve.broker.group.GroupCoordinator;
import dev.varve.broker.group.GroupOffsets;
import dev.varve.broker.group.TxnOffsetCommitVerifier;
import dev.varve.broker.network.KafkaServer;
import dev.varve.broker.network.RequestDispatcher;
import dev.varve.broker.txn.TransactionCoordinator;
import dev.varve.storage.ExecutorScheduler;
import dev.varve.storage.LogManager;
import dev.varve.storage.LogManagerConfig;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.utils.Time;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.File;
import java.io.IOException;
import java.io.Reader;
import java.io.Writer;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A single-node Varve broker: storage, topics, partitions, the API handlers and the network
 * listener, started and stopped in order.
 *
 * <p>Shutdown is clean: stop accepting connections, let in-flight requests finish, close
 * connections, flush every log, write checkpoints and the clean-shutdown marker.
 */
public final class Broker implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Broker.class);
    public static final String META_PROPERTIES = "meta.properties";

    private final BrokerConfig config;
    private final ExecutorScheduler scheduler;
    private final LogManager logManager;
    private final FetchPurgatory purgatory;
    private final dev.varve.broker.metrics.MeteredThreadPool requestThreads;
    private final KafkaServer server;
    private final dev.varve.broker.security.ListenerSecurity security;
    private final BrokerContext context;
    /** The broker's one timer wheel: group timeouts, controller retries, acks=all timeouts, ISR checks. */
    private final WheelTimer timer;
    /** The transaction coordinator's partitions and marker writes. */
    private final TransactionPartitions transactionPartitions;
    private final TxnMarkerWriter markerWriter;
    /** Cluster mode: markers to partitions other brokers lead. */
    private final dev.varve.broker.cluster.TxnMarkerChannel markerChannel;
    private final dev.varve.broker.cluster.AddPartitionsChannel addPartitionsChannel;
    /** Applies the outcome of __consumer_offsets writes that complete after their request (see GroupCoordinator#write). */
    private final java.util.concurrent.ExecutorService groupCallbacks;
    private final dev.varve.broker.cluster.ClusterServices cluster;
    private final CoordinatorPartitions coordinatorPartitions;
    private final GroupOffsets groupOffsets;
    /** Share groups' data path (KIP-932), or null when they are not offered. */
    private final dev.varve.broker.share.SharePartitionManager shares;
    private final RequestDispatcher dispatcher;
    private final dev.varve.broker.metrics.BrokerMetrics metrics;
    private final dev.varve.broker.metrics.LogMetrics logMetrics;
    private volatile java.util.function.LongConsumer flushTimer;
    /** The HTTP admin listener (metrics, health), or null when {@code varve.admin.listener} is empty. */
    private volatile dev.varve.broker.admin.AdminServer admin;

    private Broker(BrokerConfig config) throws IOException, InterruptedException {
        this.config = config;
        File firstDir = config.logDirs().get(0);
        Files.createDirectories(firstDir.toPath());
        boolean clustered = config.clustered();
        MetaProperties metaProperties = loadOrCreateMetaProperties(firstDir, config.nodeId(),
                clustered ? dev.varve.broker.cluster.ClusterServices.clusterId(config) : null);
        String clusterId = metaProperties.clusterId();
        // In a cluster the topics come from the metadata image; a single node keeps them in a file.
        TopicRegistry topics = clustered ? TopicRegistry.fromMetadata(config.defaultLogConfig())
                : new TopicRegistry(firstDir, config.defaultLogConfig());
        // two threads for retention, flushes and checkpoints, plus one per cleaner thread (a cleaning
        // round holds its thread for its whole length)
        this.scheduler = new ExecutorScheduler(2 + config.cleanerConfig().threads(), "varve-scheduler");
        LogManagerConfig lmc = new LogManagerConfig(config.logDirs(),
                config.longValue(BrokerConfig.RETENTION_CHECK_INTERVAL_MS),
                config.longValue(BrokerConfig.FLUSH_SCHEDULER_INTERVAL_MS),
                config.longValue(BrokerConfig.FLUSH_OFFSET_CHECKPOINT_INTERVAL_MS),
                config.longValue(BrokerConfig.FLUSH_START_OFFSET_CHECKPOINT_INTERVAL_MS),
                config.longValue(BrokerConfig.HW_CHECKPOINT_INTERVAL_MS))
                .withProducerIdExpiration(config.longValue(BrokerConfig.PRODUCER_ID_EXPIRATION_MS),
                        config.longValue(BrokerConfig.PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS))
                .withCleaner(config.cleanerConfig())
                .withStartupVerification(config.startupVerification())
                .withRecoveryThreadsPerDataDir(config.intValue(BrokerConfig.NUM_RECOVERY_THREADS_PER_DATA_DIR))
                .withReplicaMoveBytesPerSecond(config.longValue(BrokerConfig.REPLICA_ALTER_LOG_DIRS_IO_MAX_BYTES_PER_SECOND));
        this.logManager = new LogManager(lmc, topics::logConfig, Time.SYSTEM, scheduler);
        logManager.startup();
        this.purgatory = new FetchPurgatory();
        ReplicaManager replicaManager = new ReplicaManager(logManager, topics, purgatory);
        BrokerContext[] self = new BrokerContext[1];
        ProducerIdManager producerIds = clustered
                ? new ProducerIdManager(() -> self[0].cluster().allocateProducerIds(), Time.SYSTEM)
                : new ProducerIdManager(firstDir);
        this.context = new BrokerContext(config, clusterId, topics, replicaManager, producerIds);
        self[0] = context;
        // group configs (KIP-848/932): in the metadata image of a cluster, in a file of a single node
        LocalGroupConfigStore groupConfigStore = clustered ? null : new LocalGroupConfigStore(firstDir);
        context.setGroupConfigStore(groupConfigStore);
        context.groupConfigs().setOverrides(groupConfigStore != null ? groupConfigStore::get : groupId -> {
            dev.varve.broker.cluster.ClusterReplicaManager c = replicaManager.cluster();
            return c == null ? java.util.Map.<String, String>of() : c.image().configs(new org.apache.kafka.common.config.ConfigResource(
                    org.apache.kafka.common.config.ConfigResource.Type.GROUP, groupId));
        });
        this.metrics = new dev.varve.broker.metrics.BrokerMetrics(new dev.varve.broker.metrics.KafkaMetrics(true));
        context.setMetrics(metrics);
        context.onTopicDeleted(metrics.topics()::removeTopic);
        this.logMetrics = new dev.varve.broker.metrics.LogMetrics(metrics.registry(), logManager::allLogs);
        if (!clustered) {
            // On a single node every stored record is committed.
            logManager.allLogs().forEach(log -> log.updateHighWatermark(log.logEndOffset()));
        }

        // Groups: replay __consumer_offsets before the first request can reach the coordinator.
        GroupConfig groupConfig = config.groupConfig();
        OffsetsTopic offsetsTopic = new OffsetsTopic(context, groupConfig);
        this.timer = new WheelTimer("broker-timer");
        this.groupCallbacks = java.util.concurrent.Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "group-coordinator-writes");
            t.setDaemon(true);
            return t;
        });
        GroupCoordinator coordinator = new GroupCoordinator(groupConfig, Time.SYSTEM, timer, offsetsTopic,
                groupCallbacks);
        GroupOffsets groupOffsets = new GroupOffsets(coordinator);
        // KIP-848 consumer groups, over the same groups and offsets partitions (before replay: it installs them)
        dev.varve.broker.group.ConsumerGroupCoordinator consumerGroups = config.consumerProtocolEnabled()
                ? new dev.varve.broker.group.ConsumerGroupCoordinator(coordinator,
                        new dev.varve.broker.group.ConsumerGroupLogic(config.consumerGroupConfig()), groupTopics(context.topics()))
                : null;
        // KIP-932 share groups' membership (single node; the share partitions are the fetch path's)
        dev.varve.broker.group.ShareGroupCoordinator shareGroups = config.shareProtocolEnabled()
                ? new dev.varve.broker.group.ShareGroupCoordinator(coordinator,
                        new dev.varve.broker.group.ShareGroupLogic(config.shareGroupConfig()), groupTopics(context.topics()))
                : null;
        if (consumerGroups != null) {
            consumerGroups.setGroupConfigs(context.groupConfigs());
        }
        if (shareGroups != null) {
            shareGroups.setGroupConfigs(context.groupConfigs());
        }
        this.groupOffsets = groupOffsets;
        CoordinatorPartitions coordinatorPartitions = null;
        if (!clustered) {
            offsetsTopic.load(groupOffsets);
        } else {
            // groups are loaded partition by partition as this broker becomes leader of __consumer_offsets
            coordinatorPartitions = new CoordinatorPartitions(offsetsTopic, groupOffsets);
        }
        this.coordinatorPartitions = coordinatorPartitions;
        context.onTopicDeleted(groupOffsets::removeOffsetsOfTopic);
        scheduler.schedulePeriodic("offsets-retention", groupOffsets::expireOffsets,
                groupConfig.offsetsRetentionCheckIntervalMs(), groupConfig.offsetsRetentionCheckIntervalMs());

        // Transactions: the coordinator serves the __transaction_state partitions this broker leads (a single
        // node leads them all); markers go to partitions led here directly, to others as WriteTxnMarkers.
        TransactionLog transactionLog = new TransactionLog(context);
        this.markerWriter = new TxnMarkerWriter(replicaManager, timer);
        TransactionCoordinator transactions = new TransactionCoordinator(new TransactionCoordinator.Config(
                config.intValue(BrokerConfig.TRANSACTION_MAX_TIMEOUT_MS),
                config.intValue(BrokerConfig.TRANSACTIONAL_ID_EXPIRATION_MS)),
                transactionLog, markerWriter, () -> context.producerIds().nextProducerId(), Time.SYSTEM);
        markerWriter.setCoordinating(transactions::coordinates);
        this.transactionPartitions = new TransactionPartitions(transactionLog, transactions, timer);
        TxnPartitionVerifier txnVerifier = new TxnPartitionVerifier(context, transactions, transactionLog, timer);
        TxnOffsetCommitVerifier offsetsVerifier = (txnId, producerId, epoch, groupId, version) ->
                txnVerifier.verifyOffsetCommit(txnId, producerId, epoch, new org.apache.kafka.common.TopicPartition(
                        OffsetsTopic.NAME, offsetsTopic.partitionFor(groupId)), version);
        dev.varve.broker.group.CoordinatorGate groupGate = coordinatorPartitions != null ? coordinatorPartitions
                : dev.varve.broker.group.CoordinatorGate.ALWAYS;
        markerWriter.setOffsetsListener(new TxnMarkerWriter.OffsetsMarkerListener() {
            @Override
            public org.apache.kafka.common.protocol.Errors check(int offsetsPartition) {
                return groupGate.checkPartition(offsetsPartition);
            }

            @Override
            public void onMarker(int offsetsPartition, long producerId, boolean commit, long markerOffset) {
                groupOffsets.transactional().completeTransaction(offsetsPartition, producerId, commit, markerOffset);
            }
        });
        if (!clustered) {
            transactionPartitions.loadAll();
        }
        transactionPartitions.startPeriodicWork(
                config.intValue(BrokerConfig.TRANSACTION_ABORT_TIMED_OUT_CLEANUP_INTERVAL_MS),
                config.intValue(BrokerConfig.TRANSACTION_REMOVE_EXPIRED_CLEANUP_INTERVAL_MS));

        List<ApiHandler> handlers = new ArrayList<>(List.of(
                new MetadataHandler(context),
                new dev.varve.broker.api.DescribeTopicPartitionsHandler(context),
                new ProduceHandler(context, txnVerifier),
                new FetchHandler(context),
                new ListOffsetsHandler(context),
                new CreateTopicsHandler(context),
                new InitProducerIdHandler(context, transactions),
                new DeleteTopicsHandler(context),
                new CreatePartitionsHandler(context),
                new DeleteRecordsHandler(context),
                new DescribeConfigsHandler(context),
                new AlterConfigsHandler(context),
                new IncrementalAlterConfigsHandler(context),
                new DescribeClusterHandler(context),
                new DescribeLogDirsHandler(context),
                new dev.varve.broker.api.AlterReplicaLogDirsHandler(context),
                dev.varve.broker.api.SingleNodeLeadershipHandlers.electLeaders(context),
                dev.varve.broker.api.SingleNodeLeadershipHandlers.listReassignments(),
                dev.varve.broker.api.SingleNodeLeadershipHandlers.alterReassignments(context),
                new FindCoordinatorHandler(context, offsetsTopic, transactionLog),
                new JoinGroupHandler(coordinator),
                new SyncGroupHandler(coordinator),
                new HeartbeatHandler(coordinator),
                new LeaveGroupHandler(coordinator),
                new OffsetCommitHandler(context, groupOffsets, groupConfig),
                new OffsetFetchHandler(context, groupOffsets),
                new ListGroupsHandler(groupOffsets),
                new DescribeGroupsHandler(groupOffsets),
                new DeleteGroupsHandler(groupOffsets),
                new OffsetDeleteHandler(context, groupOffsets),
                new TxnOffsetCommitHandler(context, groupOffsets.transactional(), offsetsVerifier),
                new OffsetForLeaderEpochHandler(context)));
        if (shareGroups != null) {
            handlers.add(new dev.varve.broker.api.ShareGroupHeartbeatHandler(shareGroups));
            handlers.add(new dev.varve.broker.api.ShareGroupDescribeHandler(shareGroups));
        }
        if (consumerGroups != null) {
            handlers.add(new dev.varve.broker.api.ConsumerGroupHeartbeatHandler(consumerGroups));
            handlers.add(new dev.varve.broker.api.ConsumerGroupDescribeHandler(consumerGroups));
        }
        handlers.add(new AddPartitionsToTxnHandler(context, transactions));
        handlers.add(new AddOffsetsToTxnHandler(transactions, offsetsTopic));
        handlers.add(new EndTxnHandler(transactions));
        handlers.add(new WriteTxnMarkersHandler(context, markerWriter));
        handlers.add(new DescribeTransactionsHandler(transactions));
        handlers.add(new ListTransactionsHandler(transactions, Time.SYSTEM));
        handlers.add(new DescribeProducersHandler(context));
        // Share groups (KIP-932), single node only: state in __share_group_state, replayed here
        this.shares = shareGroups != null && !clustered ? shareGroups(replicaManager, shareGroups) : null;
        if (shares != null) {
            dev.varve.broker.api.ShareFetchHandler shareFetch = new dev.varve.broker.api.ShareFetchHandler(context, shares);
            handlers.add(shareFetch);
            handlers.add(new dev.varve.broker.api.ShareAcknowledgeHandler(context, shares, shareFetch));
            handlers.add(dev.varve.broker.api.ShareGroupOffsetsHandlers.describe(context, shareGroups, shares));
            handlers.add(dev.varve.broker.api.ShareGroupOffsetsHandlers.alter(context, shareGroups, shares));
            handlers.add(dev.varve.broker.api.ShareGroupOffsetsHandlers.delete(context, shareGroups, shares));
            shareGroups.onGroupDeleted(shares::deleteState);
            dev.varve.broker.group.GroupConfigs groupConfigs = context.groupConfigs();
            shares.setGroupSettings(new dev.varve.broker.share.ShareGroupSettings() {
                @Override
                public String autoOffsetReset(String groupId) {
                    return groupConfigs.shareAutoOffsetReset(groupId);
                }

                @Override
                public boolean readCommitted(String groupId) {
                    return groupConfigs.shareReadCommitted(groupId);
                }

                @Override
                public long recordLockDurationMs(String groupId) {
                    return groupConfigs.shareRecordLockDurationMs(groupId);
                }
            });
        }
        // client quotas: in the metadata image of a cluster, in a file of a single node
        dev.varve.broker.security.LocalQuotaStore quotaStore = clustered ? null
                : new dev.varve.broker.security.LocalQuotaStore(firstDir);
        java.util.function.Supplier<dev.varve.metadata.ClientQuotas> quotas = quotaStore != null ? quotaStore::quotas
                : fromImage(replicaManager, dev.varve.metadata.MetadataImage::quotas, dev.varve.metadata.ClientQuotas.EMPTY);
        handlers.add(dev.varve.broker.api.ClientQuotasHandler.describe(quotas));
        if (quotaStore != null) {
            handlers.add(dev.varve.broker.api.ClientQuotasHandler.alter(quotaStore));
        }
        context.setQuotas(new dev.varve.broker.quota.ClientQuotaManager(quotas, Time.SYSTEM,
                config.intValue(BrokerConfig.QUOTA_WINDOW_NUM), 1000L * config.intValue(BrokerConfig.QUOTA_WINDOW_SIZE_SECONDS)));
        // ACLs: in the metadata image of a cluster, in a file of a single node
        dev.varve.broker.security.LocalAclStore aclStore = clustered ? null : new dev.varve.broker.security.LocalAclStore(firstDir);
        java.util.function.Supplier<dev.varve.metadata.Acls> acls = aclStore != null ? aclStore::acls
                : fromImage(replicaManager, dev.varve.metadata.MetadataImage::acls, dev.varve.metadata.Acls.EMPTY);
        context.setAuthorizer(config.authorizer(acls));
        boolean authorizer = context.authorizer().enabled();
        if (!authorizer) {
            // Kafka's answer without an authorizer
            dev.varve.broker.api.AclsDisabledHandler.KEYS.forEach(k -> handlers.add(new dev.varve.broker.api.AclsDisabledHandler(k)));
        } else {
            handlers.add(dev.varve.broker.api.AclsHandler.describe(acls));
            if (aclStore != null) {
                handlers.add(dev.varve.broker.api.AclsHandler.change(org.apache.kafka.common.protocol.ApiKeys.CREATE_ACLS, aclStore));
                handlers.add(dev.varve.broker.api.AclsHandler.change(org.apache.kafka.common.protocol.ApiKeys.DELETE_ACLS, aclStore));
            }
        }
        // answered here only outside an exchange: a SASL connection's authenticator answers them before
        handlers.add(new dev.varve.broker.api.SaslOutOfExchangeHandler(org.apache.kafka.common.protocol.ApiKeys.SASL_HANDSHAKE));
        handlers.add(new dev.varve.broker.api.SaslOutOfExchangeHandler(org.apache.kafka.common.protocol.ApiKeys.SASL_AUTHENTICATE));
        // SCRAM credentials: in the metadata image of a cluster, in a file of a single node
        dev.varve.broker.security.LocalScramStore scramStore = clustered ? null
                : new dev.varve.broker.security.LocalScramStore(firstDir);
        java.util.function.Supplier<dev.varve.metadata.ScramCredentials> scram = scramStore != null ? scramStore::credentials
                : fromImage(replicaManager, dev.varve.metadata.MetadataImage::scram, dev.varve.metadata.ScramCredentials.EMPTY);
        handlers.add(dev.varve.broker.api.ScramCredentialsHandler.describe(scram));
        if (scramStore != null) {
            handlers.add(dev.varve.broker.api.ScramCredentialsHandler.alter(scramStore));
        }
        // finalized feature levels (UpdateFeatures): in the metadata image of a cluster, in a file of a single node
        dev.varve.broker.security.LocalFeatureStore featureStore = clustered ? null
                : new dev.varve.broker.security.LocalFeatureStore(firstDir);
        java.util.function.Supplier<dev.varve.metadata.FinalizedFeatures> finalizedFeatures = featureStore != null
                ? featureStore::features
                : fromImage(replicaManager, dev.varve.metadata.MetadataImage::features, dev.varve.metadata.FinalizedFeatures.EMPTY);
        RequestDispatcher[] dispatcher = new RequestDispatcher[1];
        ApiVersionsHandler apiVersions = new ApiVersionsHandler(() -> dispatcher[0].apiVersions(),
                (short) config.intValue(BrokerConfig.TRANSACTION_VERSION), consumerGroups != null, finalizedFeatures,
                clustered);
        if (featureStore != null) {
            handlers.add(new dev.varve.broker.api.UpdateFeaturesHandler(featureStore, apiVersions::levels, apiVersions::maxLevels));
        }
        if (shareGroups != null) {
            apiVersions.setShareGroups(true);
            // share.version 0 (kafka-features disable) turns share groups off
            shareGroups.setEnabled(() -> apiVersions.features().stream()
                    .anyMatch(f -> f.name().equals("share.version") && f.finalizedLevel() >= 1));
        }
        if (consumerGroups != null) {
            // group.version 0 (kafka-features disable) turns the consumer protocol off
            consumerGroups.setEnabled(() -> apiVersions.features().stream()
                    .anyMatch(f -> f.name().equals("group.version") && f.finalizedLevel() >= 1));
        }
        dev.varve.broker.cluster.ControllerChannel[] channel = new dev.varve.broker.cluster.ControllerChannel[1];
        if (clustered) {
            // Metadata changes are decided by the controller: forward them as the client sent them.
            handlers.removeIf(h -> FORWARDED.contains(h.apiKey()));
            CoordinatorPartitions gate = coordinatorPartitions;
            handlers.replaceAll(h -> dev.varve.broker.api.GroupGateHandler.gates(h.apiKey())
                    ? new dev.varve.broker.api.GroupGateHandler(h, gate) : h);
            for (org.apache.kafka.common.protocol.ApiKeys key : FORWARDED) {
                handlers.add(new dev.varve.broker.api.ForwardToControllerHandler(key, () -> channel[0]));
            }
            // the metadata quorum's state, as the active controller (Ratis' leader) sees it; a single node
            // has no quorum to describe and does not offer it
            handlers.add(new dev.varve.broker.api.ForwardToControllerHandler(org.apache.kafka.common.protocol.ApiKeys.DESCRIBE_QUORUM,
                    () -> channel[0]));
            // KIP-853: the quorum's membership (kafka-metadata-quorum.sh add-controller/remove-controller)
            handlers.add(new dev.varve.broker.api.ForwardToControllerHandler(org.apache.kafka.common.protocol.ApiKeys.ADD_RAFT_VOTER,
                    () -> channel[0]));
            handlers.add(new dev.varve.broker.api.ForwardToControllerHandler(org.apache.kafka.common.protocol.ApiKeys.REMOVE_RAFT_VOTER,
                    () -> channel[0]));
            if (authorizer) {
                handlers.add(new dev.varve.broker.api.ForwardToControllerHandler(org.apache.kafka.common.protocol.ApiKeys.CREATE_ACLS,
                        () -> channel[0]));
                handlers.add(new dev.varve.broker.api.ForwardToControllerHandler(org.apache.kafka.common.protocol.ApiKeys.DELETE_ACLS,
                        () -> channel[0]));
            }
        }
        // every API behind Kafka's authorization checks (nothing changes without an authorizer)
        handlers.replaceAll(h -> dev.varve.broker.api.AuthorizingHandler.wrap(h, context));
        handlers.add(apiVersions);
        dispatcher[0] = new RequestDispatcher(handlers);
        dispatcher[0].setQuotas(context.quotas());
        dispatcher[0].setMetrics(metrics.requests());
        this.dispatcher = dispatcher[0];
        // A cluster broker serves clients only once caught up with the metadata log (see below).
        boolean servesOnlyWhenCaughtUp = clustered && config.processRoles().contains("broker");
        dispatcher[0].setAccepting(!servesOnlyWhenCaughtUp);

        AtomicInteger n = new AtomicInteger();
        this.requestThreads = new dev.varve.broker.metrics.MeteredThreadPool(config.numIoThreads(), r -> {
            Thread t = new Thread(r, "varve-request-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
        this.security = config.listenerSecurity();
        security.setScramCredentials(scram);
        // the metadata quorum's peers: with an authorizer, super users or principals granted CLUSTER_ACTION
        security.setQuorumPeers(context.authorizer()::authorizeQuorumPeer);
        try {
            // KIP-226: keystores and truststores changed without a restart (a single node's are applied again now)
            context.setDynamicTls(new dev.varve.broker.security.DynamicTls(security, clustered ? null : firstDir));
        } catch (IOException | RuntimeException e) {
            security.close();
            throw e;
        }
        try {
            this.server = new KafkaServer(config, security, dispatcher[0], requestThreads);
        } catch (InterruptedException | RuntimeException e) {
            security.close();
            throw e;
        }
        // A listener on port 0 got a free port: advertise that one.
        List<BrokerConfig.Endpoint> advertised = new ArrayList<>();
        List<BrokerConfig.Endpoint> listeners = config.clientListeners();
        for (BrokerConfig.Endpoint e : config.advertisedListeners()) {
            int port = e.port();
            if (port == 0) {
                for (int i = 0; i < listeners.size(); i++) {
                    if (listeners.get(i).listenerName().equals(e.listenerName())) {
                        port = server.boundAddresses().get(i).getPort();
                    }
                }
            }
            advertised.add(new BrokerConfig.Endpoint(e.listenerName(), e.host(), port));
        }
        context.setAdvertised(advertised);
        if (clustered) {
            try {
                this.cluster = new dev.varve.broker.cluster.ClusterServices(config, security, clusterId,
                        metaProperties.directoryId(), context, logManager, advertised,
                        List.of(coordinatorPartitions, transactionPartitions), timer);
            } catch (IOException | RuntimeException e) {
                server.close();
                security.close();
                timer.close();
                logManager.close();
                throw e;
            }
            context.setCluster(cluster);
            channel[0] = cluster.channel();
            this.markerChannel = new dev.varve.broker.cluster.TxnMarkerChannel(config.nodeId(), replicaManager.cluster(),
                    security.interBrokerListener(), MARKER_REQUEST_TIMEOUT_MS, Time.SYSTEM);
            markerChannel.setTransport(security::interBrokerChannelBuilder);
            markerWriter.setChannel(markerChannel);
            this.addPartitionsChannel = new dev.varve.broker.cluster.AddPartitionsChannel(config.nodeId(),
                    replicaManager.cluster(), security.interBrokerListener(), MARKER_REQUEST_TIMEOUT_MS,
                    Time.SYSTEM);
            addPartitionsChannel.setTransport(security::interBrokerChannelBuilder);
            txnVerifier.setChannel(addPartitionsChannel);
            if (servesOnlyWhenCaughtUp) {
                cluster.lifecycle().caughtUp().thenRun(() -> dispatcher[0].setAccepting(true));
            }
        } else {
            this.cluster = null;
            this.markerChannel = null;
            this.addPartitionsChannel = null;
        }
    }

    /** Part of the cluster's current metadata image ({@code empty} until the cluster services exist). */
    private static <T> java.util.function.Supplier<T> fromImage(ReplicaManager replicaManager,
                                                                java.util.function.Function<dev.varve.metadata.MetadataImage, T> part, T empty) {
        return () -> {
            dev.varve.broker.cluster.ClusterReplicaManager c = replicaManager.cluster();
            return c == null ? empty : part.apply(c.image());
        };
    }

    /** Kafka's {@code request.timeout.ms} for the coordinator's WriteTxnMarkers requests. */
    private static final int MARKER_REQUEST_TIMEOUT_MS = 30_000;

    private static final java.util.Set<org.apache.kafka.common.protocol.ApiKeys> FORWARDED = java.util.EnumSet.of(
            org.apache.kafka.common.protocol.ApiKeys.CREATE_TOPICS, org.apache.kafka.common.protocol.ApiKeys.DELETE_TOPICS,
            org.apache.kafka.common.protocol.ApiKeys.CREATE_PARTITIONS, org.apache.kafka.common.protocol.ApiKeys.ALTER_CONFIGS,
            org.apache.kafka.common.protocol.ApiKeys.INCREMENTAL_ALTER_CONFIGS, org.apache.kafka.common.protocol.ApiKeys.ELECT_LEADERS,
            org.apache.kafka.common.protocol.ApiKeys.ALTER_PARTITION_REASSIGNMENTS,
            org.apache.kafka.common.protocol.ApiKeys.LIST_PARTITION_REASSIGNMENTS,
            org.apache.kafka.common.protocol.ApiKeys.ALTER_USER_SCRAM_CREDENTIALS,
            org.apache.kafka.common.protocol.ApiKeys.ALTER_CLIENT_QUOTAS, org.apache.kafka.common.protocol.ApiKeys.UPDATE_FEATURES);


    /**
     * Starts a broker; returns once it accepts connections. In a cluster it then registers with the
     * controller in the background: {@link #awaitUnfenced} waits until it serves its partitions.
     */
    public static Broker start(BrokerConfig config) throws IOException, InterruptedException {
        return start(config, false);
    }

    /**
     * As {@link #start(BrokerConfig)}; with {@code adminListenerOptional} (the admin listener is a default,
     * not the operator's setting) an admin address already in use is logged and the broker runs without it.
     */
    public static Broker start(BrokerConfig config, boolean adminListenerOptional) throws IOException, InterruptedException {
        for (String key : config.unknownKeys()) {
            LOG.warn("ignoring unknown configuration key {}", key);
        }
        Broker broker = new Broker(config);
        try {
            broker.registerGauges();
            try {
                broker.startAdminListener();
            } catch (java.net.BindException e) {
                if (!adminListenerOptional) {
                    throw e;
                }
                LOG.warn("no HTTP admin listener: {} is in use ({}); set {} to another HOST:PORT, or to nothing for none",
                        config.adminListener(), e.getMessage(), BrokerConfig.ADMIN_LISTENER);
            }
        } catch (IOException e) {
            broker.close();
            throw new IOException("cannot start the admin listener " + config.adminListener() + ": " + e.getMessage(), e);
        } catch (RuntimeException e) {
            broker.close();
            throw e;
        }
        return broker;
    }

    /** Cluster mode: waits until the controller has unfenced this broker. */
    public boolean awaitUnfenced(long timeoutMs) throws InterruptedException {
        if (cluster == null) {
            return true;
        }
        try {
            cluster.lifecycle().unfenced().get(timeoutMs, TimeUnit.MILLISECONDS);
            return true;
        } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
            return false;
        }
    }

    /** The cluster services, or null on a single node. */
    public dev.varve.broker.cluster.ClusterServices cluster() {
        return cluster;
    }

    /** The request decoder and router of the listeners (for tests that decode frames directly). */
    RequestDispatcher dispatcher() {
        return dispatcher;
    }

    /** The group coordinator's transactional offsets (the WriteTxnMarkers path ends their transactions). */
    public dev.varve.broker.group.TransactionalOffsets transactionalOffsets() {
        return groupOffsets.transactional();
    }

    /** Whether this broker coordinates a group, or the groups of an offsets partition, now. */
    public dev.varve.broker.group.CoordinatorGate coordinatorGate() {
        return coordinatorPartitions != null ? coordinatorPartitions : dev.varve.broker.group.CoordinatorGate.ALWAYS;
    }

    /** The share-partition states (admin operations of share groups), or null when share groups are not offered. */
    public dev.varve.broker.share.ShareStates shareStates() {
        return shares;
    }

    /** The share-group data path: its state replayed from __share_group_state, its lock-expiry sweep started. */
    private dev.varve.broker.share.SharePartitionManager shareGroups(ReplicaManager replicaManager,
                                                                     dev.varve.broker.share.ShareGroupMembership shareMembership) {
        ShareStateTopic stateTopic = new ShareStateTopic(context, config.intValue(BrokerConfig.SHARE_COORDINATOR_STATE_TOPIC_NUM_PARTITIONS),
                config.intValue(BrokerConfig.SHARE_COORDINATOR_STATE_TOPIC_SEGMENT_BYTES), Time.SYSTEM);
        dev.varve.broker.share.ShareLogs logs = new dev.varve.broker.share.ShareLogs() {
            @Override
            public dev.varve.storage.PartitionLog log(org.apache.kafka.common.TopicPartition tp) {
                return replicaManager.log(tp);
            }

            @Override
            public String topicName(Uuid topicId) {
                return context.topics().get(topicId).map(TopicRegistry.TopicInfo::name).orElse(null);
            }

            @Override
            public void wake(org.apache.kafka.common.TopicPartition tp) {
                purgatory.wake(tp);
            }
        };
        dev.varve.broker.share.SharePartitionManager manager = new dev.varve.broker.share.SharePartitionManager(
                config.shareConfig(), stateTopic, shareMembership, logs, Time.SYSTEM);
        context.onTopicDeleted(manager::topicDeleted);
        // acquisition locks expire within a tenth of a second of their time
        scheduler.schedulePeriodic("share-lock-expiry", manager::expireLocks, 100, 100);
        return manager;
    }

    public BrokerContext context() {
        return context;
    }

    public List<InetSocketAddress> boundAddresses() {
        return server.boundAddresses();
    }

    /** host:port of the first listener, for clients' bootstrap.servers. */
    public String bootstrapServers() {
        InetSocketAddress a = server.boundAddresses().get(0);
        return a.getHostString() + ":" + a.getPort();
    }

    /**
     * What {@code meta.properties} of the first log directory says (Kafka's format, version 1): the cluster
     * id and this directory's {@code directory.id}, which Kafka's {@code kafka-metadata-quorum.sh add-controller}
     * reads to name the controller it adds.
     */
    record MetaProperties(String clusterId, Uuid directoryId) {
    }

    /**
     * Reads {@code meta.properties} of {@code dir}, refusing another node's or another cluster's; writes it
     * at the first start, and adds a {@code directory.id} (a random Uuid, kept from then on) to one written
     * before Varve had them.
     */
    static MetaProperties loadOrCreateMetaProperties(File dir, int nodeId, String expected) throws IOException {
        File meta = new File(dir, META_PROPERTIES);
        Properties props = new Properties();
        String id = null;
        if (meta.exists()) {
            try (Reader r = Files.newBufferedReader(meta.toPath())) {
                props.load(r);
            }
            id = props.getProperty("cluster.id");
            String node = props.getProperty("node.id");
            if (node != null && !node.equals(Integer.toString(nodeId))) {
                throw new IllegalStateException(meta + " belongs to node " + node + ", not node.id=" + nodeId);
            }
            if (id != null && expected != null && !id.equals(expected)) {
                throw new IllegalStateException(meta + " belongs to cluster " + id + ", but controller.quorum.voters "
                        + "make cluster " + expected + ": refusing to mix data of two clusters");
            }
        }
        Uuid directory = null;
        String d = props.getProperty("directory.id");
        if (d != null) {
            try {
                directory = Uuid.fromString(d.trim());
            } catch (IllegalArgumentException e) {
                throw new IllegalStateException(meta + " has an invalid directory.id '" + d + "'", e);
            }
        }
        if (id != null && directory != null) {
            return new MetaProperties(id, directory);
        }
        if (id == null) {
            id = expected != null ? expected : Uuid.randomUuid().toString();
        }
        if (directory == null) {
            directory = Uuid.randomUuid();
        }
        props.setProperty("version", "1");
        props.setProperty("cluster.id", id);
        props.setProperty("node.id", Integer.toString(nodeId));
        props.setProperty("directory.id", directory.toString());
        File tmp = new File(dir, META_PROPERTIES + ".tmp");
        try (Writer w = Files.newBufferedWriter(tmp.toPath())) {
            props.store(w, "Varve");
        }
        Files.move(tmp.toPath(), meta.toPath(), java.nio.file.StandardCopyOption.ATOMIC_MOVE);
        return new MetaProperties(id, directory);
    }

    /** Kafka's gauges of this broker's state, read at each scrape. */
    private void registerGauges() {
        dev.varve.broker.metrics.KafkaMetrics m = metrics.registry();
        java.util.function.Supplier<dev.varve.broker.cluster.ClusterReplicaManager.ReplicaCounts> counts = () -> {
            dev.varve.broker.cluster.ClusterReplicaManager c = context.replicaManager().cluster();
            if (c != null) {
                return c.counts();
            }
            int n = logManager.allLogs().size(); // a single node leads every partition, alone
            return new dev.varve.broker.cluster.ClusterReplicaManager.ReplicaCounts(n, n, 0, 0);
        };
        m.gauge(dev.varve.broker.metrics.KafkaMetrics.name("kafka.server", "ReplicaManager", "PartitionCount"), () -> counts.get().partitions());
        m.gauge(dev.varve.broker.metrics.KafkaMetrics.name("kafka.server", "ReplicaManager", "LeaderCount"), () -> counts.get().leaders());
        m.gauge(dev.varve.broker.metrics.KafkaMetrics.name("kafka.server", "ReplicaManager", "UnderReplicatedPartitions"),
                () -> counts.get().underReplicated());
        m.gauge(dev.varve.broker.metrics.KafkaMetrics.name("kafka.server", "ReplicaManager", "UnderMinIsrPartitionCount"),
                () -> counts.get().underMinIsr());
        m.gauge(dev.varve.broker.metrics.KafkaMetrics.name("kafka.controller", "KafkaController", "ActiveControllerCount"),
                () -> cluster == null ? 1 : cluster.isActiveController() ? 1 : 0);
        m.gauge(dev.varve.broker.metrics.KafkaMetrics.name("kafka.server", "DelayedOperationPurgatory", "PurgatorySize",
                "delayedOperation", "Fetch"), purgatory::waiting);
        m.gauge(dev.varve.broker.metrics.KafkaMetrics.name("kafka.server", "DelayedOperationPurgatory", "PurgatorySize",
                "delayedOperation", "Produce"), () -> {
            dev.varve.broker.cluster.ClusterReplicaManager c = context.replicaManager().cluster();
            return c == null ? 0L : c.waitingAcks(); // a single node acknowledges acks=all at once
        });
        m.gauge(dev.varve.broker.metrics.KafkaMetrics.name("kafka.server", "ReplicaFetcherManager", "MaxLag", "clientId", "Replica"),
                () -> cluster == null ? 0L : cluster.replicationMaxLag());
        if (cluster != null) {
            com.yammer.metrics.core.Histogram queueTime = m.histogram(dev.varve.broker.metrics.KafkaMetrics.name(
                    "kafka.controller", "ControllerEventManager", "EventQueueTimeMs"));
            com.yammer.metrics.core.Histogram processingTime = m.histogram(dev.varve.broker.metrics.KafkaMetrics.name(
                    "kafka.controller", "ControllerEventManager", "EventQueueProcessingTimeMs"));
            cluster.setControllerEventTimes((queued, processing) -> {
                queueTime.update(queued);
                processingTime.update(processing);
            });
        }
        if (server != null) {
            dev.varve.broker.metrics.ThreadsIdle network = server.networkIdle();
            m.gauge(dev.varve.broker.metrics.KafkaMetrics.name("kafka.network", "SocketServer", "NetworkProcessorAvgIdlePercent"),
                    network::idle);
            scheduler.schedulePeriodic("network-idle", network::sample, 1_000, 1_000);
        }
        com.yammer.metrics.core.Meter shrinks = m.meter(dev.varve.broker.metrics.KafkaMetrics.name("kafka.server", "ReplicaManager",
                "IsrShrinksPerSec"), "shrinks");
        com.yammer.metrics.core.Meter expands = m.meter(dev.varve.broker.metrics.KafkaMetrics.name("kafka.server", "ReplicaManager",
                "IsrExpandsPerSec"), "expands");
        if (context.replicaManager().cluster() != null) {
            context.replicaManager().cluster().onIsrChanged(kind ->
                    (kind == dev.varve.broker.replication.IsrChangeProposal.Kind.SHRINK ? shrinks : expands).mark());
        }
        // the cluster as the metadata image has it (every node holds the image), Kafka's controller metrics
        m.gauge(dev.varve.broker.metrics.KafkaMetrics.name("kafka.controller", "KafkaController", "OfflinePartitionsCount"),
                () -> imageCount((img, t) -> (int) t.partitions().stream().filter(ps -> !ps.hasLeader()).count()));
        m.gauge(dev.varve.broker.metrics.KafkaMetrics.name("kafka.controller", "KafkaController", "PreferredReplicaImbalanceCount"),
                () -> imageCount((img, t) -> (int) t.partitions().stream()
                        .filter(ps -> ps.hasLeader() && ps.leader() != ps.preferredLeader()).count()));
        m.gauge(dev.varve.broker.metrics.KafkaMetrics.name("kafka.controller", "KafkaController", "GlobalPartitionCount"),
                () -> cluster == null ? logManager.allLogs().size() : imageCount((img, t) -> t.partitionCount()));
        m.gauge(dev.varve.broker.metrics.KafkaMetrics.name("kafka.controller", "KafkaController", "GlobalTopicCount"),
                () -> cluster == null ? context.topics().all().size() : imageCount((img, t) -> 1));
        m.gauge(dev.varve.broker.metrics.KafkaMetrics.name("kafka.controller", "KafkaController", "FencedBrokerCount"),
                () -> cluster == null ? 0 : (int) image().brokers().values().stream().filter(b -> b.fenced()).count());
        m.gauge(dev.varve.broker.metrics.KafkaMetrics.name("kafka.controller", "KafkaController", "ActiveBrokerCount"),
                () -> cluster == null ? 1 : (int) image().brokers().values().stream().filter(b -> !b.fenced()).count());
        m.gauge(dev.varve.broker.metrics.KafkaMetrics.name("kafka.coordinator.group", "GroupMetadataManager", "NumGroups"),
                () -> groupOffsets.list(List.of(), List.of()).size());
        logMetrics.sync();
        scheduler.schedulePeriodic("log-metrics", logMetrics::sync, 30_000, 30_000);
        com.yammer.metrics.core.Meter idle = m.meter(dev.varve.broker.metrics.KafkaMetrics.name("kafka.server",
                "KafkaRequestHandlerPool", "RequestHandlerAvgIdlePercent"), "percent", TimeUnit.NANOSECONDS);
        scheduler.schedulePeriodic("request-handler-idle", () -> requestThreads.sample(idle), 1_000, 1_000);
        com.yammer.metrics.core.Timer flushes = m.timer(dev.varve.broker.metrics.KafkaMetrics.name("kafka.log", "LogFlushStats",
                "LogFlushRateAndTimeMs"));
        flushTimer = nanos -> flushes.update(nanos, TimeUnit.NANOSECONDS);
        dev.varve.storage.LogFlushStats.addListener(flushTimer);
    }

    private dev.varve.metadata.MetadataImage image() {
        dev.varve.broker.cluster.ClusterReplicaManager c = context.replicaManager().cluster();
        return c == null ? dev.varve.metadata.MetadataImage.EMPTY : c.image();
    }

    /** A sum over the topics of the metadata image. */
    private int imageCount(java.util.function.BiFunction<dev.varve.metadata.MetadataImage, dev.varve.metadata.TopicImage, Integer> perTopic) {
        dev.varve.metadata.MetadataImage img = image();
        int n = 0;
        for (dev.varve.metadata.TopicImage t : img.topicsByName().values()) {
            n += perTopic.apply(img, t);
        }
        return n;
    }

    /** Starts the HTTP admin listener when {@code varve.admin.listener} names one. */
    private void startAdminListener() throws IOException {
        String address = config.adminListener();
        if (address.isEmpty()) {
            return;
        }
        int colon = address.lastIndexOf(':');
        if (colon <= 0) {
            throw new org.apache.kafka.common.config.ConfigException(BrokerConfig.ADMIN_LISTENER, address, "expected HOST:PORT");
        }
        String host = address.substring(0, colon);
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        int port = Integer.parseInt(address.substring(colon + 1));
        io.prometheus.metrics.model.registry.PrometheusRegistry registry = new io.prometheus.metrics.model.registry.PrometheusRegistry();
        registry.register(new dev.varve.broker.metrics.KafkaPrometheusCollector(metrics.registry(), logMetrics::sync));
        registry.register(new dev.varve.broker.metrics.ConsumerLagCollector(groupOffsets, logManager::getLog));
        io.prometheus.metrics.instrumentation.jvm.JvmMetrics.builder().register(registry);
        admin = new dev.varve.broker.admin.AdminServer(new java.net.InetSocketAddress(host, port), registry, this::notReadyBecause,
                new ConsoleHostImpl(), config.adminConsoleWrites());
    }

    /** What the web console at /ui asks of this broker (the rest it asks through Kafka's own clients). */
    private final class ConsoleHostImpl implements dev.varve.broker.admin.console.ConsoleHost {
        @Override
        public int nodeId() {
            return config.nodeId();
        }

        @Override
        public String plaintextBootstrap() {
            List<BrokerConfig.Endpoint> listeners = config.clientListeners();
            List<InetSocketAddress> bound = server.boundAddresses();
            for (int i = 0; i < listeners.size() && i < bound.size(); i++) {
                if (security.listener(listeners.get(i).listenerName()).protocol()
                        == org.apache.kafka.common.security.auth.SecurityProtocol.PLAINTEXT) {
                    InetSocketAddress a = bound.get(i);
                    String h = a.getAddress() != null && a.getAddress().isAnyLocalAddress() ? "127.0.0.1" : a.getHostString();
                    return (h.contains(":") ? "[" + h + "]" : h) + ":" + a.getPort();
                }
            }
            throw new IllegalStateException("the console's Kafka clients need a PLAINTEXT listener on this broker, and none of "
                    + listeners.stream().map(BrokerConfig.Endpoint::listenerName).toList() + " is one");
        }

        @Override
        public List<String> notReadyBecause() {
            return Broker.this.notReadyBecause();
        }

        @Override
        public java.util.OptionalInt activeControllerId() {
            return cluster == null ? java.util.OptionalInt.of(config.nodeId()) : cluster.activeControllerId(5_000);
        }
    }

    /** Why this broker is not ready to serve (empty: it is): caught up with the metadata, listeners bound, no log directory offline. */
    private List<String> notReadyBecause() {
        List<String> why = new ArrayList<>();
        if (!dispatcher.accepting()) {
            why.add("not caught up with the cluster metadata yet");
        }
        if (server.boundAddresses().isEmpty()) {
            why.add("no listener bound");
        }
        long offline = logManager.offlinePartitions().size()
                + logManager.allLogs().stream().filter(dev.varve.storage.PartitionLog::isOffline).count();
        if (offline > 0) {
            why.add(offline + " partition(s) offline after a disk failure");
        }
        return why;
    }

    /** The HTTP admin listener's address, or null without one. */
    public java.net.InetSocketAddress adminAddress() {
        dev.varve.broker.admin.AdminServer a = admin;
        return a == null ? null : a.address();
    }

    @Override
    public void close() throws IOException {
        LOG.info("shutting down");
        if (admin != null) {
            admin.close();
        }
        if (cluster != null) {
            cluster.beginShutdown(config.longValue(BrokerConfig.BROKER_SESSION_TIMEOUT_MS));
        }
        server.stopAccepting();
        requestThreads.shutdown();
        try {
            requestThreads.awaitTermination(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        server.close();
        security.close();
        if (cluster != null) {
            cluster.close();
            coordinatorPartitions.close();
        }
        transactionPartitions.close();
        markerWriter.close();
        if (addPartitionsChannel != null) {
            addPartitionsChannel.close();
        }
        if (markerChannel != null) {
            markerChannel.close();
        }
        timer.close();
        groupCallbacks.shutdown();
        purgatory.close();
        logManager.close();
        if (cluster != null) {
            cluster.recordCleanShutdown();
        }
        try {
            scheduler.close();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (flushTimer != null) {
            dev.varve.storage.LogFlushStats.removeListener(flushTimer);
        }
        metrics.close();
        LOG.info("shut down cleanly");
    }


    /** The topics as the consumer-group coordinator reads them. */
    private static dev.varve.broker.group.GroupTopics groupTopics(TopicRegistry topics) {
        return new dev.varve.broker.group.GroupTopics() {
            @Override
            public org.apache.kafka.common.Uuid idOf(String name) {
                return topics.get(name).map(TopicRegistry.TopicInfo::id).orElse(null);
            }

            @Override
            public String nameOf(org.apache.kafka.common.Uuid id) {
                return topics.get(id).map(TopicRegistry.TopicInfo::name).orElse(null);
            }

            @Override
            public int partitions(org.apache.kafka.common.Uuid id) {
                return topics.get(id).map(TopicRegistry.TopicInfo::partitions).orElse(0);
            }

            @Override
            public java.util.Collection<String> names() {
                return topics.all().stream().map(TopicRegistry.TopicInfo::name).toList();
            }

            @Override
            public long version() {
                return topics.version();
            }
        };
    }
}
