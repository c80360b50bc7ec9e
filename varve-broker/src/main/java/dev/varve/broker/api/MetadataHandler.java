package dev.varve.broker.api;

import dev.varve.broker.BrokerContext;
import dev.varve.broker.TopicRegistry.TopicInfo;
import dev.varve.broker.cluster.ClusterReplicaManager;
import dev.varve.metadata.BrokerRegistration;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.message.MetadataRequestData;
import org.apache.kafka.common.message.MetadataResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.MetadataRequest;
import org.apache.kafka.common.requests.MetadataResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * Metadata: this broker (the leader of every partition on a single node), the cluster id and the
 * topics asked for — all, by name, or by id (v12+; a v10-11 request naming a topic id, or no name,
 * gets INVALID_REQUEST, as from Kafka) — with real topic ids. Unknown names are created
 * when both the request and {@code auto.create.topics.enable} allow it.
 */
public final class MetadataHandler implements ApiHandler {
    private final BrokerContext broker;

    public MetadataHandler(BrokerContext broker) {
        this.broker = broker;
    }

    @Override
    public ApiKeys apiKey() {
        return ApiKeys.METADATA;
    }

    @Override
    public short minVersion() {
        return 0;
    }

    @Override
    public short maxVersion() {
        return ApiKeys.METADATA.latestVersion();
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        MetadataRequest req = (MetadataRequest) request;
        MetadataRequestData data = req.data();
        if (data.topics() != null && req.version() < 12) {
            // As Kafka: v10-11 carry a topic id field but lookups by id start at v12, and a v10-11
            // response cannot hold the null name of a topic asked for by id (it failed to serialize).
            for (MetadataRequestData.MetadataRequestTopic rt : data.topics()) {
                if (rt.name() == null) {
                    throw new org.apache.kafka.common.errors.InvalidRequestException(
                            "Topic name can not be null for version " + req.version());
                }
                if (rt.topicId() != null && !Uuid.ZERO_UUID.equals(rt.topicId())) {
                    throw new org.apache.kafka.common.errors.InvalidRequestException(
                            "Topic IDs are not supported in requests for version " + req.version());
                }
            }
        }
        MetadataResponseData response = new MetadataResponseData()
                .setClusterId(broker.clusterId())
                .setControllerId(broker.nodeId());
        ClusterReplicaManager cluster = broker.replicaManager().cluster();
        if (cluster == null) {
            broker.advertisedEndpoint(context.listenerName()).ifPresent(ep -> response.brokers().add(
                    new MetadataResponseData.MetadataResponseBroker()
                            .setNodeId(broker.nodeId()).setHost(ep.host()).setPort(ep.port()).setRack(broker.rack())));
        } else {
            // Brokers the controller has not fenced. The "controller" clients send admin requests to is
            // this broker, which forwards them to the active controller (as Kafka's brokers do).
            for (BrokerRegistration b : cluster.image().brokers().values()) {
                if (b.fenced()) {
                    continue;
                }
                b.endpointForClientsOf(context.listenerName()).ifPresent(ep ->
                        response.brokers().add(new MetadataResponseData.MetadataResponseBroker()
                                .setNodeId(b.id()).setHost(ep.host()).setPort(ep.port()).setRack(b.rack())));
            }
        }
        dev.varve.broker.security.AclAuthorizer auth = broker.authorizer();
        if (data.topics() == null) {
            // every topic the principal may describe; the others are left out, as Kafka does
            for (TopicInfo t : broker.topics().all()) {
                if (describable(context, t.name())) {
                    response.topics().add(describe(t, req.version()));
                }
            }
        } else {
            boolean autoCreate = data.allowAutoTopicCreation() && broker.config().autoCreateTopics();
            boolean clusterCreate = autoCreate && auth.authorizeCluster(context, AclOperation.CREATE);
            for (MetadataRequestData.MetadataRequestTopic rt : data.topics()) {
                String name = !byId(rt) ? rt.name()
                        : broker.topics().get(rt.topicId()).map(TopicInfo::name).orElse(null);
                if (name != null && !describable(context, name)) {
                    // asked for by name or id, not the principal's to describe: Kafka's answer, the name kept
                    // only when the client sent it
                    response.topics().add(new MetadataResponseData.MetadataResponseTopic().setName(rt.name())
                            .setTopicId(rt.topicId() == null ? Uuid.ZERO_UUID : rt.topicId())
                            .setErrorCode(Errors.TOPIC_AUTHORIZATION_FAILED.code()));
                    continue;
                }
                boolean mayCreate = autoCreate && (clusterCreate || name == null
                        || auth.authorize(context, AclOperation.CREATE, ResourceType.TOPIC, name));
                if (autoCreate && !mayCreate && broker.topics().get(name).isEmpty()) {
                    response.topics().add(error(name, Errors.TOPIC_AUTHORIZATION_FAILED));
                    continue;
                }
                response.topics().add(lookup(rt, mayCreate, req.version()));
            }
        }
        if (data.includeTopicAuthorizedOperations()) {
            for (MetadataResponseData.MetadataResponseTopic t : response.topics()) {
                if (t.errorCode() == Errors.NONE.code()) {
                    t.setTopicAuthorizedOperations(auth.authorizedOperations(context, ResourceType.TOPIC, t.name(),
                            dev.varve.broker.security.AclAuthorizer.TOPIC_OPERATIONS));
                }
            }
        }
        if (data.includeClusterAuthorizedOperations()) {
            // v8-10 only (later versions ask DescribeCluster)
            response.setClusterAuthorizedOperations(auth.authorizedOperations(context, ResourceType.CLUSTER,
                    dev.varve.metadata.Acls.CLUSTER_NAME, dev.varve.broker.security.AclAuthorizer.CLUSTER_OPERATIONS));
        }
        return CompletableFuture.completedFuture(new MetadataResponse(response, req.version()));
    }

    private boolean describable(RequestContext context, String topic) {
        return broker.authorizer().authorize(context, AclOperation.DESCRIBE, ResourceType.TOPIC, topic);
    }

    /**
     * A topic asked for by id (v12+): the Java client sends an empty name with the id (the consumer of
     * KIP-848 resolves the ids of its assignment this way), others a null name.
     */
    private static boolean byId(MetadataRequestData.MetadataRequestTopic rt) {
        return rt.name() == null || (rt.name().isEmpty() && rt.topicId() != null && !Uuid.ZERO_UUID.equals(rt.topicId()));
    }

    private MetadataResponseData.MetadataResponseTopic lookup(MetadataRequestData.MetadataRequestTopic rt, boolean autoCreate, short version) {
        if (byId(rt)) {
            Uuid id = rt.topicId();
            Optional<TopicInfo> t = id == null ? Optional.empty() : broker.topics().get(id);
            return t.map(x -> describe(x, version)).orElseGet(() -> new MetadataResponseData.MetadataResponseTopic()
                    .setTopicId(id == null ? Uuid.ZERO_UUID : id).setName(null)
                    .setErrorCode(Errors.UNKNOWN_TOPIC_ID.code()));
        }
        String name = rt.name();
        Optional<TopicInfo> t = broker.topics().get(name);
        if (t.isEmpty() && autoCreate && broker.replicaManager().cluster() != null) {
            // Cluster: ask the controller and tell the client to come back (Kafka answers the same way).
            try {
                org.apache.kafka.common.internals.Topic.validate(name);
            } catch (InvalidTopicException e) {
                return error(name, Errors.INVALID_TOPIC_EXCEPTION);
            }
            broker.forwardCreateTopic(name);
            return error(name, Errors.LEADER_NOT_AVAILABLE);
        }
        if (t.isEmpty() && autoCreate) {
            try {
                t = Optional.of(broker.createTopic(name, broker.config().numPartitions(), Map.of()));
            } catch (InvalidTopicException e) {
                return error(name, Errors.INVALID_TOPIC_EXCEPTION);
            } catch (TopicExistsException e) {
                t = broker.topics().get(name);
            }
        }
        return t.map(x -> describe(x, version)).orElseGet(() -> error(name, Errors.UNKNOWN_TOPIC_OR_PARTITION));
    }

    private static MetadataResponseData.MetadataResponseTopic error(String name, Errors error) {
        return new MetadataResponseData.MetadataResponseTopic().setName(name).setTopicId(Uuid.ZERO_UUID)
                .setErrorCode(error.code());
    }

    private MetadataResponseData.MetadataResponseTopic describe(TopicInfo t, short version) {
        List<MetadataResponseData.MetadataResponsePartition> partitions = new ArrayList<>();
        for (PartitionViews.PartitionView p : PartitionViews.partitions(broker, t, 0, Integer.MAX_VALUE)) {
            partitions.add(new MetadataResponseData.MetadataResponsePartition()
                    .setPartitionIndex(p.partition())
                    .setErrorCode((p.hasLeader() ? Errors.NONE : Errors.LEADER_NOT_AVAILABLE).code())
                    .setLeaderId(p.leader())
                    .setLeaderEpoch(version >= 7 ? p.leaderEpoch() : -1)
                    .setReplicaNodes(p.replicas())
                    .setIsrNodes(p.isr())
                    .setOfflineReplicas(p.offline()));
        }
        return new MetadataResponseData.MetadataResponseTopic()
                .setName(t.name())
                .setTopicId(version >= 10 ? t.id() : Uuid.ZERO_UUID)
                .setErrorCode(Errors.NONE.code())
                .setIsInternal(org.apache.kafka.common.internals.Topic.isInternal(t.name()))
                .setPartitions(partitions);
    }
}
