package dev.varve.broker.api;

import dev.varve.broker.BrokerContext;
import dev.varve.broker.TopicConfigs;
import dev.varve.broker.TopicRegistry.TopicInfo;
import dev.varve.metadata.ManualAssignments;
import dev.varve.storage.LogConfig;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.InvalidReplicationFactorException;
import org.apache.kafka.common.message.CreateTopicsRequestData;
import org.apache.kafka.common.message.CreateTopicsResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.ApiError;
import org.apache.kafka.common.requests.CreateTopicsRequest;
import org.apache.kafka.common.requests.CreateTopicsResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * CreateTopics on a single node (validate-only too): checks name, partition count, replication factor (at
 * most the number of brokers: one) and configs, then creates the topic and its partition logs. A manual
 * assignment is checked by Kafka's rules ({@link ManualAssignments}) with this node as the only broker, so
 * only {@code [[this node], [this node], ...]} passes; it sets the partition count.
 * Results carry the topic id, the partition count and (v5+) the effective configs.
 *
 * <p>One request creates at most {@link CreatePartitionsHandler#MAX_NEW_PARTITIONS_PER_REQUEST}
 * partitions across its topics, so a bad partition count (up to 2^31-1) cannot have the broker create
 * logs until its disk or file handles run out; topics past the limit get INVALID_PARTITIONS.
 */
public final class CreateTopicsHandler extends AllVersionsHandler {
    private final BrokerContext broker;

    public CreateTopicsHandler(BrokerContext broker) {
        super(ApiKeys.CREATE_TOPICS);
        this.broker = broker;
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        CreateTopicsRequest req = (CreateTopicsRequest) request;
        CreateTopicsRequestData data = req.data();
        CreateTopicsResponseData response = new CreateTopicsResponseData();
        Set<String> seen = new HashSet<>();
        Set<String> duplicates = new HashSet<>();
        for (CreateTopicsRequestData.CreatableTopic t : data.topics()) {
            if (!seen.add(t.name())) {
                duplicates.add(t.name());
            }
        }
        int budget = CreatePartitionsHandler.MAX_NEW_PARTITIONS_PER_REQUEST;
        for (CreateTopicsRequestData.CreatableTopic t : data.topics()) {
            CreateTopicsResponseData.CreatableTopicResult result = new CreateTopicsResponseData.CreatableTopicResult()
                    .setName(t.name()).setTopicId(Uuid.ZERO_UUID).setNumPartitions(-1).setReplicationFactor((short) -1);
            if (duplicates.contains(t.name())) {
                result.setErrorCode(Errors.INVALID_REQUEST.code()).setErrorMessage("Create topics request from client "
                        + "contains multiple entries for the topic " + t.name());
            } else {
                budget -= create(t, data.validateOnly(), result, req.version(), budget);
            }
            response.topics().add(result);
        }
        return CompletableFuture.completedFuture(new CreateTopicsResponse(response));
    }

    /** Creates one topic (or checks that it could be); returns the number of partitions it takes from the budget. */
    private int create(CreateTopicsRequestData.CreatableTopic t, boolean validateOnly,
                       CreateTopicsResponseData.CreatableTopicResult result, short version, int budget) {
        try {
            Map<String, String> configs = new LinkedHashMap<>();
            for (CreateTopicsRequestData.CreatableTopicConfig c : t.configs()) {
                if (c.value() != null) {
                    configs.put(c.name(), c.value());
                }
            }
            int partitions;
            short rf;
            if (!t.assignments().isEmpty()) {
                // as Kafka's controller: name, existence and configs first, then the assignment
                broker.topics().validateCreate(t.name(), 1, configs);
                List<ManualAssignments.PartitionReplicas> entries = new ArrayList<>(t.assignments().size());
                for (CreateTopicsRequestData.CreatableReplicaAssignment a : t.assignments()) {
                    entries.add(new ManualAssignments.PartitionReplicas(a.partitionIndex(), a.brokerIds()));
                }
                List<List<Integer>> assignment = ManualAssignments.forNewTopic(t.numPartitions(), t.replicationFactor(), entries,
                        ManualAssignments.Brokers.single(broker.nodeId()));
                partitions = assignment.size();
                rf = (short) assignment.get(0).size(); // 1: this node is the only broker
            } else {
                partitions = t.numPartitions() == -1 ? broker.config().numPartitions() : t.numPartitions();
                rf = t.replicationFactor() == -1 ? (short) broker.config().defaultReplicationFactor() : t.replicationFactor();
                if (rf < 1 || rf > 1) {
                    throw new InvalidReplicationFactorException("Replication factor: " + rf
                            + " larger than available brokers: 1.");
                }
            }
            if (partitions > budget) {
                broker.topics().validateCreate(t.name(), partitions, configs); // its errors come first
                throw new org.apache.kafka.common.errors.InvalidPartitionsException("Cannot create " + partitions
                        + " partitions: one request may create at most "
                        + CreatePartitionsHandler.MAX_NEW_PARTITIONS_PER_REQUEST + " in total.");
            }
            TopicInfo created;
            if (validateOnly) {
                broker.topics().validateCreate(t.name(), partitions, configs);
                created = new TopicInfo(t.name(), Uuid.ZERO_UUID, partitions, configs);
            } else {
                created = broker.createTopic(t.name(), partitions, configs);
            }
            result.setErrorCode(Errors.NONE.code());
            if (version >= 5) {
                result.setNumPartitions(partitions).setReplicationFactor(rf);
            }
            if (version >= 7) {
                result.setTopicId(created.id());
            }
            if (version >= 5) {
                LogConfig effective = broker.topics().brokerDefaults().with(TopicConfigs.logConfigKeys(configs));
                effective.toMap().forEach((k, v) -> result.configs().add(new CreateTopicsResponseData.CreatableTopicConfigs()
                        .setName(k).setValue(String.valueOf(v)).setReadOnly(false)
                        .setConfigSource((byte) (configs.containsKey(k) ? 1 : 5)).setIsSensitive(false)));
            }
            return Math.max(0, partitions);
        } catch (RuntimeException e) {
            ApiError error = ApiError.fromThrowable(e);
            result.setErrorCode(error.error().code()).setErrorMessage(error.message());
            return 0;
        }
    }
}
