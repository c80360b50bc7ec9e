package dev.varve.metadata;

import dev.varve.metadata.MetadataRecord.ConfigRecord;
import dev.varve.metadata.MetadataRecord.ProducerIdBlock;
import dev.varve.metadata.MetadataRecord.UnregisterBroker;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.ApiError;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Supplier;

/**
 * The controller's decisions, in one place for the quorum to call: each method takes the image the
 * decision is made on plus a command and returns the records to commit (one Raft entry) and the
 * response. Concerns live in {@link ClusterControl} (brokers), {@link TopicControl} (topics),
 * {@link PartitionControl} (leaders and ISRs) and {@link ReassignmentControl} (moving replicas);
 * producer-id blocks and config changes are small enough
 * to live here.
 *
 * <p><b>Which image.</b> Decide on the latest image <em>including records proposed but not yet
 * committed</em> ({@code image.apply(image.offset(), pending)}), or propose one decision at a time,
 * or two decisions can contradict each other (two topics with one name, two blocks of producer ids).
 *
 * <p>Not thread-safe: call from the active controller's single event thread (heartbeat sessions are
 * kept here). Time is the caller's monotonic {@code nowMs}; no clock, no I/O.
 */
public final class ControllerLogic {
    public record ProducerIdsReply(Errors error, long firstProducerId, int size) {
    }

    private final ControllerConfig config;
    private final PartitionControl partitions;
    private final ClusterControl cluster;
    private final TopicControl topics;
    private final ReassignmentControl reassignments;

    /** New ids (topics, ACLs). */
    private final Supplier<Uuid> ids;

    /** A new id (an ACL's), from the same source as topic ids. */
    Uuid newId() {
        return ids.get();
    }

    /**
     * Checks a group's complete config overrides after an AlterConfigs (the broker passes its
     * {@code GroupConfigs} rules: known keys, values within its group.* bounds); throws an
     * {@link org.apache.kafka.common.errors.ApiException}.
     */
    @FunctionalInterface
    public interface GroupConfigValidator {
        void validate(String groupId, Map<String, String> configs);

        /** Group configs are not offered: every change is refused. */
        GroupConfigValidator NONE = (groupId, configs) -> {
            throw new org.apache.kafka.common.errors.InvalidRequestException("Unsupported resource type GROUP");
        };
    }

    private final GroupConfigValidator groupConfigValidator;

    /** As {@link #ControllerLogic(ControllerConfig, Supplier, TopicControl.TopicConfigValidator, GroupConfigValidator)}, without group configs. */
    public ControllerLogic(ControllerConfig config, Supplier<Uuid> topicIds, TopicControl.TopicConfigValidator configValidator) {
        this(config, topicIds, configValidator, GroupConfigValidator.NONE);
    }

    /**
     * @param topicIds             new topic ids ({@code Uuid::randomUuid} in production)
     * @param configValidator      checks topic config overrides at CreateTopics (throws an ApiException)
     * @param groupConfigValidator checks a group's config overrides after a change (throws an ApiException)
     */
    public ControllerLogic(ControllerConfig config, Supplier<Uuid> topicIds, TopicControl.TopicConfigValidator configValidator,
                           GroupConfigValidator groupConfigValidator) {
        this.groupConfigValidator = groupConfigValidator;
        this.config = config;
        this.partitions = new PartitionControl(config);
        this.cluster = new ClusterControl(config, partitions);
        this.topics = new TopicControl(config, topicIds, configValidator);
        this.ids = topicIds;
        this.reassignments = new ReassignmentControl(partitions);
    }

    public ControllerConfig config() {
        return config;
    }

    public PartitionControl partitions() {
        return partitions;
    }

    // ---- brokers

    public ControllerResult<ClusterControl.BrokerRegistrationReply> registerBroker(
            MetadataImage image, ClusterControl.BrokerRegistrationRequest request, long nowMs) {
        return cluster.register(image, request, nowMs);
    }

    public ControllerResult<ClusterControl.BrokerHeartbeatReply> heartbeat(
            MetadataImage image, ClusterControl.BrokerHeartbeatRequest request, long nowMs) {
        return cluster.heartbeat(image, request, nowMs);
    }

    /** Fences brokers whose sessions expired; call periodically (e.g. every second). The response is the ids fenced. */
    public ControllerResult<Set<Integer>> tick(MetadataImage image, long nowMs) {
        return cluster.tick(image, nowMs);
    }

    /** {@link ClusterControl#tick(MetadataImage, long, Map)}: also fences silent brokers a probe found gone. */
    public ControllerResult<Set<Integer>> tick(MetadataImage image, long nowMs, Map<Integer, Long> refused) {
        return cluster.tick(image, nowMs, refused);
    }

    /** {@link ClusterControl#silentBrokers}. */
    public List<BrokerRegistration> silentBrokers(MetadataImage image, long nowMs) {
        return cluster.silentBrokers(image, nowMs);
    }

    /** Removes a broker id from the cluster (decommissioning): fenced first, leaderships moved, then unregistered. */
    public ControllerResult<Errors> unregisterBroker(MetadataImage image, int brokerId) {
        BrokerRegistration b = image.broker(brokerId).orElse(null);
        if (b == null) {
            return ControllerResult.of(Errors.BROKER_ID_NOT_REGISTERED);
        }
        List<MetadataRecord> records = new ArrayList<>();
        if (!b.fenced()) {
            records.add(new MetadataRecord.FenceBroker(brokerId, b.brokerEpoch()));
            records.addAll(partitions.brokersLeft(image.apply(image.offset(), records), Set.of(brokerId), Set.of()));
        }
        records.add(new UnregisterBroker(brokerId, b.brokerEpoch()));
        cluster.forget(brokerId);
        return new ControllerResult<>(records, Errors.NONE);
    }

    // ---- topics

    public ControllerResult<List<TopicControl.CreateTopicResult>> createTopics(
            MetadataImage image, List<TopicControl.CreatableTopic> request, boolean validateOnly) {
        return topics.createTopics(image, request, validateOnly);
    }

    public ControllerResult<Map<String, ApiError>> deleteTopics(MetadataImage image, List<String> names) {
        return topics.deleteTopics(image, names);
    }

    public ControllerResult<Map<Uuid, ApiError>> deleteTopicsById(MetadataImage image, List<Uuid> ids) {
        return topics.deleteTopicsById(image, ids);
    }

    public ControllerResult<Map<String, ApiError>> createPartitions(
            MetadataImage image, List<TopicControl.CreatePartitionsTopic> request, boolean validateOnly) {
        return topics.createPartitions(image, request, validateOnly);
    }

    /**
     * Checks a topic's complete set of config overrides (after an AlterConfigs) with the rules CreateTopics
     * applies, including the {@link TopicControl.TopicConfigValidator} this controller was built with.
     *
     * @throws org.apache.kafka.common.errors.ApiException naming the offending key
     */
    public void validateTopicConfigs(String topic, Map<String, String> configs) {
        topics.validateConfigs(topic, configs);
    }

    /**
     * Checks a group's complete set of config overrides (after an AlterConfigs) with the
     * {@link GroupConfigValidator} this controller was built with.
     *
     * @throws org.apache.kafka.common.errors.ApiException naming the offending key
     */
    public void validateGroupConfigs(String groupId, Map<String, String> configs) {
        groupConfigValidator.validate(groupId, configs);
    }

    // ---- partitions

    public ControllerResult<PartitionControl.AlterPartitionReply> alterPartition(
            MetadataImage image, PartitionControl.AlterPartitionRequest request) {
        return partitions.alterPartition(image, request);
    }

    /** ElectLeaders; {@code partitions} null means all. Preferred election with null is the periodic rebalance. */
    public ControllerResult<Map<TopicPartition, ApiError>> electLeaders(
            MetadataImage image, ElectionType type, Collection<TopicPartition> partitionsToElect) {
        return partitions.electLeaders(image, type, partitionsToElect);
    }

    /** AlterPartitionReassignments: starts (target replicas) or cancels (null) reassignments; one result per entry. */
    public ControllerResult<List<ApiError>> alterPartitionReassignments(
            MetadataImage image, List<ReassignmentControl.Reassignment> request, boolean allowReplicationFactorChange) {
        return reassignments.alterPartitionReassignments(image, request, allowReplicationFactorChange);
    }

    /** ListPartitionReassignments: the partitions of {@code wanted} (null: all) with a reassignment in progress. No records. */
    public Map<TopicPartition, PartitionState> listPartitionReassignments(MetadataImage image, Collection<TopicPartition> wanted) {
        return reassignments.listPartitionReassignments(image, wanted);
    }

    // ---- producer ids

    /** AllocateProducerIds: the next block of {@link ControllerConfig#producerIdBlockSize()} ids for a registered broker. */
    public ControllerResult<ProducerIdsReply> allocateProducerIds(MetadataImage image, int brokerId, long brokerEpoch) {
        BrokerRegistration b = image.broker(brokerId).orElse(null);
        if (b == null) {
            return ControllerResult.of(new ProducerIdsReply(Errors.BROKER_ID_NOT_REGISTERED, -1, 0));
        }
        if (b.brokerEpoch() != brokerEpoch) {
            return ControllerResult.of(new ProducerIdsReply(Errors.STALE_BROKER_EPOCH, -1, 0));
        }
        long first = image.nextProducerId();
        int size = config.producerIdBlockSize();
        if (first > Long.MAX_VALUE - size) {
            return ControllerResult.of(new ProducerIdsReply(Errors.UNKNOWN_SERVER_ERROR, -1, 0));
        }
        return new ControllerResult<>(List.of(new ProducerIdBlock(brokerId, brokerEpoch, first + size)),
                new ProducerIdsReply(Errors.NONE, first, size));
    }

    // ---- configs

    /**
     * Sets (non-null value) or deletes (null value) dynamic config keys; values are validated by the
     * caller. Topic resources must exist (UNKNOWN_TOPIC_OR_PARTITION); broker resources are a broker id
     * or "" for the cluster default (INVALID_REQUEST otherwise). When the change may make leaderless
     * partitions electable (e.g. {@code unclean.leader.election.enable=true}), elections follow in the
     * same entry.
     */
    public ControllerResult<Map<ConfigResource, ApiError>> alterConfigs(MetadataImage image,
                                                                        Map<ConfigResource, Map<String, String>> changes) {
        List<MetadataRecord> records = new ArrayList<>();
        Map<ConfigResource, ApiError> results = new LinkedHashMap<>();
        Set<String> topicsTouched = new HashSet<>();
        boolean clusterWide = false;
        for (Map.Entry<ConfigResource, Map<String, String>> e : changes.entrySet()) {
            ConfigResource r = e.getKey();
            ApiError error = checkResource(image, r);
            results.put(r, error);
            if (error.isFailure()) {
                continue;
            }
            Map<String, String> sorted = new TreeMap<>();
            e.getValue().forEach(sorted::put);
            sorted.forEach((k, v) -> records.add(new ConfigRecord(r.type(), r.name(), k, v)));
            if (r.type() == ConfigResource.Type.TOPIC) {
                topicsTouched.add(r.name());
            } else if (r.type() == ConfigResource.Type.BROKER) {
                clusterWide = true;
            } // a group's configs decide nothing about partitions
        }
        if (!records.isEmpty()) {
            boolean all = clusterWide;
            MetadataImage projected = image.apply(image.offset(), records);
            records.addAll(partitions.electLeaderless(projected, t -> all || topicsTouched.contains(t.name())));
        }
        return new ControllerResult<>(records, results);
    }

    private static ApiError checkResource(MetadataImage image, ConfigResource r) {
        if (r.type() == ConfigResource.Type.TOPIC) {
            return image.topic(r.name()).isPresent() ? ApiError.NONE
                    : new ApiError(Errors.UNKNOWN_TOPIC_OR_PARTITION, "Topic " + r.name() + " does not exist.");
        }
        if (r.type() == ConfigResource.Type.BROKER) {
            if (r.name().isEmpty()) {
                return ApiError.NONE;
            }
            try {
                if (Integer.parseInt(r.name()) >= 0) {
                    return ApiError.NONE;
                }
            } catch (NumberFormatException e) {
                // fall through
            }
            return new ApiError(Errors.INVALID_REQUEST, "Invalid broker name " + r.name());
        }
        if (r.type() == ConfigResource.Type.GROUP) {
            // Kafka's answer; a group need not exist to have configs
            return r.name().isEmpty() ? new ApiError(Errors.INVALID_REQUEST, "Default group resources are not allowed.")
                    : ApiError.NONE;
        }
        return new ApiError(Errors.INVALID_REQUEST, "Unsupported resource type " + r.type());
    }
}
