package dev.varve.metadata;

import dev.varve.metadata.ClusterControl.BrokerHeartbeatReply;
import dev.varve.metadata.ClusterControl.BrokerRegistrationReply;
import dev.varve.metadata.MetadataRecord.Endpoint;
import dev.varve.metadata.PartitionControl.AlterPartitionReply;
import dev.varve.metadata.TopicControl.CreateTopicResult;
import org.apache.kafka.clients.admin.AlterConfigOp.OpType;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.message.AllocateProducerIdsRequestData;
import org.apache.kafka.common.message.AllocateProducerIdsResponseData;
import org.apache.kafka.common.message.AlterConfigsRequestData;
import org.apache.kafka.common.message.AlterConfigsResponseData;
import org.apache.kafka.common.message.AlterPartitionReassignmentsRequestData;
import org.apache.kafka.common.message.AlterPartitionReassignmentsResponseData;
import org.apache.kafka.common.message.AlterPartitionRequestData;
import org.apache.kafka.common.message.AlterPartitionResponseData;
import org.apache.kafka.common.message.BrokerHeartbeatRequestData;
import org.apache.kafka.common.message.BrokerHeartbeatResponseData;
import org.apache.kafka.common.message.BrokerRegistrationRequestData;
import org.apache.kafka.common.message.BrokerRegistrationResponseData;
import org.apache.kafka.common.message.CreatePartitionsRequestData;
import org.apache.kafka.common.message.CreatePartitionsResponseData;
import org.apache.kafka.common.message.CreateTopicsRequestData;
import org.apache.kafka.common.message.CreateTopicsResponseData;
import org.apache.kafka.common.message.DeleteTopicsRequestData;
import org.apache.kafka.common.message.DeleteTopicsResponseData;
import org.apache.kafka.common.message.ElectLeadersRequestData;
import org.apache.kafka.common.message.ElectLeadersResponseData;
import org.apache.kafka.common.message.IncrementalAlterConfigsRequestData;
import org.apache.kafka.common.message.IncrementalAlterConfigsResponseData;
import org.apache.kafka.common.message.ListPartitionReassignmentsRequestData;
import org.apache.kafka.common.message.ListPartitionReassignmentsResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.ApiError;
import org.apache.kafka.common.requests.DescribeConfigsResponse.ConfigSource;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.function.Function;

/**
 * Kafka's controller RPCs over {@link ControllerLogic}: each request body (the kafka-clients generated
 * {@code XxxRequestData}, as {@link ControllerEnvelope} decodes it) becomes one decision, returned as
 * the records to commit in one Raft entry and the {@code XxxResponseData} to send once they are
 * committed.
 *
 * <p>Responses are built with every field of the latest version set; the fields older versions lack
 * are all ignorable, so the caller encodes the response at the version of its request.
 *
 * <p>Config changes are computed here against the image's dynamic configs of each resource (see
 * {@link ConfigChanges}); a topic's resulting overrides are checked with the rules and the
 * {@link TopicControl.TopicConfigValidator} of CreateTopics. Broker config values are not validated
 * (the controller has no broker config schema).
 *
 * <p>Not thread-safe (ControllerLogic keeps heartbeat sessions): call from the active controller's single
 * event thread, on the image including its not-yet-committed proposals.
 */
public final class ControllerApis {
    private final ControllerLogic logic;

    public ControllerApis(ControllerLogic logic) {
        this.logic = Objects.requireNonNull(logic, "logic");
    }

    /**
     * Decides one controller command.
     *
     * @param request the {@code XxxRequestData} of {@code key}
     * @param nowMs   the controller's monotonic clock (broker sessions)
     * @return the records to commit (possibly none) and the {@code XxxResponseData}
     * @throws InvalidRequestException when {@code key} is not a controller command ({@link ControllerEnvelope#SUPPORTED_KEYS})
     *                                 or {@code request} is not its request class
     */
    public ControllerResult<ApiMessage> handle(MetadataImage image, ApiKeys key, ApiMessage request, long nowMs) {
        if (key == null || !ControllerEnvelope.SUPPORTED_KEYS.contains(key)) {
            throw new InvalidRequestException("The controller does not handle " + (key == null ? "a null api key" : key.name));
        }
        if (request == null || request.getClass() != key.messageType.newRequest().getClass()) {
            throw new InvalidRequestException(key.name + " needs a " + key.messageType.newRequest().getClass().getSimpleName()
                    + ", got " + (request == null ? "null" : request.getClass().getSimpleName()));
        }
        return switch (key) {
            case BROKER_REGISTRATION -> brokerRegistration(image, (BrokerRegistrationRequestData) request, nowMs);
            case BROKER_HEARTBEAT -> brokerHeartbeat(image, (BrokerHeartbeatRequestData) request, nowMs);
            case ALTER_PARTITION -> alterPartition(image, (AlterPartitionRequestData) request);
            case CREATE_TOPICS -> createTopics(image, (CreateTopicsRequestData) request);
            case DELETE_TOPICS -> deleteTopics(image, (DeleteTopicsRequestData) request);
            case CREATE_PARTITIONS -> createPartitions(image, (CreatePartitionsRequestData) request);
            case INCREMENTAL_ALTER_CONFIGS -> incrementalAlterConfigs(image, (IncrementalAlterConfigsRequestData) request);
            case ALTER_CONFIGS -> alterConfigs(image, (AlterConfigsRequestData) request);
            case ALLOCATE_PRODUCER_IDS -> allocateProducerIds(image, (AllocateProducerIdsRequestData) request);
            case ELECT_LEADERS -> electLeaders(image, (ElectLeadersRequestData) request);
            case ALTER_PARTITION_REASSIGNMENTS -> alterPartitionReassignments(image, (AlterPartitionReassignmentsRequestData) request);
            case LIST_PARTITION_REASSIGNMENTS -> listPartitionReassignments(image, (ListPartitionReassignmentsRequestData) request);
            case CREATE_ACLS -> {
                var decided = AclRequests.create(image.acls(), (org.apache.kafka.common.message.CreateAclsRequestData) request,
                        logic::newId);
                yield result(decided.records(), decided.response());
            }
            case DELETE_ACLS -> {
                var decided = AclRequests.delete(image.acls(), (org.apache.kafka.common.message.DeleteAclsRequestData) request);
                yield result(decided.records(), decided.response());
            }
            case ALTER_CLIENT_QUOTAS -> {
                var decided = image.quotas().alter((org.apache.kafka.common.message.AlterClientQuotasRequestData) request);
                yield result(decided.records(), decided.response());
            }
            case ALTER_USER_SCRAM_CREDENTIALS -> {
                var decided = image.scram().alter(
                        (org.apache.kafka.common.message.AlterUserScramCredentialsRequestData) request);
                yield result(decided.records(), decided.response());
            }
            case UPDATE_FEATURES -> {
                // levels not finalized yet are judged against Varve's defaults (the brokers' own settings)
                var decided = image.features().update((org.apache.kafka.common.message.UpdateFeaturesRequestData) request,
                        FinalizedFeatures.DEFAULTS, FinalizedFeatures.CLUSTER_MAX_LEVELS);
                yield result(decided.records(), decided.response());
            }
            default -> throw new IllegalStateException("supported but unhandled: " + key);
        };
    }

    // ---- brokers

    /** A registration with no listeners, a bad listener (empty name or host) or a repeated listener name is INVALID_REGISTRATION. */
    private ControllerResult<ApiMessage> brokerRegistration(MetadataImage image, BrokerRegistrationRequestData req, long nowMs) {
        List<Endpoint> listeners = new ArrayList<>();
        Set<String> names = new HashSet<>();
        for (BrokerRegistrationRequestData.Listener l : req.listeners()) {
            try {
                listeners.add(new Endpoint(l.name(), l.host(), l.port()));
            } catch (IllegalArgumentException e) {
                return registrationFailed();
            }
            if (!names.add(l.name())) {
                return registrationFailed();
            }
        }
        if (req.incarnationId() == null) {
            return registrationFailed();
        }
        ControllerResult<BrokerRegistrationReply> r = logic.registerBroker(image, new ClusterControl.BrokerRegistrationRequest(
                req.brokerId(), req.incarnationId(), listeners, req.rack(), req.previousBrokerEpoch()), nowMs);
        return result(r.records(), new BrokerRegistrationResponseData()
                .setErrorCode(r.response().error().code())
                .setBrokerEpoch(r.response().brokerEpoch()));
    }

    private static ControllerResult<ApiMessage> registrationFailed() {
        return result(List.of(), new BrokerRegistrationResponseData().setErrorCode(Errors.INVALID_REGISTRATION.code()).setBrokerEpoch(-1));
    }

    private ControllerResult<ApiMessage> brokerHeartbeat(MetadataImage image, BrokerHeartbeatRequestData req, long nowMs) {
        ControllerResult<BrokerHeartbeatReply> r = logic.heartbeat(image, new ClusterControl.BrokerHeartbeatRequest(req.brokerId(),
                req.brokerEpoch(), req.currentMetadataOffset(), req.wantFence(), req.wantShutDown()), nowMs);
        BrokerHeartbeatReply reply = r.response();
        return result(r.records(), new BrokerHeartbeatResponseData()
                .setErrorCode(reply.error().code())
                .setIsCaughtUp(reply.isCaughtUp())
                .setIsFenced(reply.isFenced())
                .setShouldShutDown(reply.shouldShutDown()));
    }

    private ControllerResult<ApiMessage> allocateProducerIds(MetadataImage image, AllocateProducerIdsRequestData req) {
        ControllerResult<ControllerLogic.ProducerIdsReply> r = logic.allocateProducerIds(image, req.brokerId(), req.brokerEpoch());
        return result(r.records(), new AllocateProducerIdsResponseData()
                .setErrorCode(r.response().error().code())
                .setProducerIdStart(r.response().firstProducerId())
                .setProducerIdLen(r.response().size()));
    }

    // ---- partitions

    /**
     * AlterPartition: an unknown sender or a stale broker epoch fails the whole request
     * (STALE_BROKER_EPOCH at the top, as Kafka does); otherwise each partition is decided on the image
     * with the changes before it applied. ISR members sent with a broker epoch (v3) that is not their
     * current one make the change INELIGIBLE_REPLICA (KIP-903: a restarted replica may have lost data).
     */
    private ControllerResult<ApiMessage> alterPartition(MetadataImage image, AlterPartitionRequestData req) {
        AlterPartitionResponseData response = new AlterPartitionResponseData();
        BrokerRegistration sender = image.broker(req.brokerId()).orElse(null);
        if (sender == null || sender.brokerEpoch() != req.brokerEpoch()) {
            return result(List.of(), response.setErrorCode(Errors.STALE_BROKER_EPOCH.code()));
        }
        List<MetadataRecord> records = new ArrayList<>();
        MetadataImage current = image;
        for (AlterPartitionRequestData.TopicData topic : req.topics()) {
            AlterPartitionResponseData.TopicData topicResponse = new AlterPartitionResponseData.TopicData().setTopicId(topic.topicId());
            for (AlterPartitionRequestData.PartitionData p : topic.partitions()) {
                ControllerResult<AlterPartitionReply> r = logic.alterPartition(current, new PartitionControl.AlterPartitionRequest(
                        req.brokerId(), req.brokerEpoch(), topic.topicId(), p.partitionIndex(), p.leaderEpoch(),
                        p.partitionEpoch(), newIsr(p)));
                AlterPartitionReply reply = r.response();
                boolean accepted = reply.error() == Errors.NONE || reply.error() == Errors.NEW_LEADER_ELECTED;
                if (accepted && hasStaleMemberEpoch(current, p)) {
                    reply = new AlterPartitionReply(Errors.INELIGIBLE_REPLICA, null);
                } else if (!r.records().isEmpty()) {
                    records.addAll(r.records());
                    current = current.apply(current.offset(), r.records());
                }
                topicResponse.partitions().add(partitionResponse(p.partitionIndex(), reply));
            }
            response.topics().add(topicResponse);
        }
        return result(records, response);
    }

    /** The requested ISR: v3 sends brokers with epochs, v2 bare ids. */
    private static List<Integer> newIsr(AlterPartitionRequestData.PartitionData p) {
        if (p.newIsrWithEpochs().isEmpty()) {
            return p.newIsr();
        }
        List<Integer> ids = new ArrayList<>(p.newIsrWithEpochs().size());
        p.newIsrWithEpochs().forEach(b -> ids.add(b.brokerId()));
        return ids;
    }

    private static boolean hasStaleMemberEpoch(MetadataImage image, AlterPartitionRequestData.PartitionData p) {
        for (AlterPartitionRequestData.BrokerState b : p.newIsrWithEpochs()) {
            if (b.brokerEpoch() != -1) {
                BrokerRegistration r = image.broker(b.brokerId()).orElse(null);
                if (r == null || r.brokerEpoch() != b.brokerEpoch()) {
                    return true;
                }
            }
        }
        return false;
    }

    private static AlterPartitionResponseData.PartitionData partitionResponse(int index, AlterPartitionReply reply) {
        AlterPartitionResponseData.PartitionData out = new AlterPartitionResponseData.PartitionData()
                .setPartitionIndex(index)
                .setErrorCode(reply.error().code());
        if (reply.error() == Errors.NONE) {
            PartitionState s = reply.state();
            out.setLeaderId(s.leader())
                    .setLeaderEpoch(s.leaderEpoch())
                    .setIsr(new ArrayList<>(s.isr()))
                    .setPartitionEpoch(s.partitionEpoch());
        }
        return out;
    }

    /** ElectLeaders: an unknown election type is INVALID_REQUEST for the whole request; null partitions mean all. */
    private ControllerResult<ApiMessage> electLeaders(MetadataImage image, ElectLeadersRequestData req) {
        ElectionType type;
        try {
            type = ElectionType.valueOf(req.electionType());
        } catch (IllegalArgumentException e) {
            return result(List.of(), new ElectLeadersResponseData().setErrorCode(Errors.INVALID_REQUEST.code()));
        }
        List<TopicPartition> wanted = null;
        if (req.topicPartitions() != null) {
            wanted = new ArrayList<>();
            for (ElectLeadersRequestData.TopicPartitions t : req.topicPartitions()) {
                for (int p : t.partitions()) {
                    wanted.add(new TopicPartition(t.topic(), p));
                }
            }
        }
        ControllerResult<Map<TopicPartition, ApiError>> r = logic.electLeaders(image, type, wanted);
        Map<String, ElectLeadersResponseData.ReplicaElectionResult> byTopic = new LinkedHashMap<>();
        r.response().forEach((tp, error) -> byTopic
                .computeIfAbsent(tp.topic(), t -> new ElectLeadersResponseData.ReplicaElectionResult().setTopic(t))
                .partitionResult().add(new ElectLeadersResponseData.PartitionResult()
                        .setPartitionId(tp.partition())
                        .setErrorCode(error.error().code())
                        .setErrorMessage(message(error))));
        return result(r.records(), new ElectLeadersResponseData().setReplicaElectionResults(new ArrayList<>(byTopic.values())));
    }

    /**
     * AlterPartitionReassignments: the top-level error is always NONE; each partition gets its own result, in
     * request order ({@link ReassignmentControl#alterPartitionReassignments}). {@code allowReplicationFactorChange}
     * is echoed, which tells v1 clients it was honoured (KIP-860).
     */
    private ControllerResult<ApiMessage> alterPartitionReassignments(MetadataImage image, AlterPartitionReassignmentsRequestData req) {
        List<ReassignmentControl.Reassignment> wanted = new ArrayList<>();
        for (AlterPartitionReassignmentsRequestData.ReassignableTopic t : req.topics()) {
            for (AlterPartitionReassignmentsRequestData.ReassignablePartition p : t.partitions()) {
                wanted.add(new ReassignmentControl.Reassignment(new TopicPartition(t.name(), p.partitionIndex()), p.replicas()));
            }
        }
        ControllerResult<List<ApiError>> r = logic.alterPartitionReassignments(image, wanted, req.allowReplicationFactorChange());
        AlterPartitionReassignmentsResponseData response = new AlterPartitionReassignmentsResponseData()
                .setAllowReplicationFactorChange(req.allowReplicationFactorChange())
                .setErrorCode(Errors.NONE.code())
                .setErrorMessage(null);
        int i = 0;
        for (AlterPartitionReassignmentsRequestData.ReassignableTopic t : req.topics()) {
            AlterPartitionReassignmentsResponseData.ReassignableTopicResponse topic =
                    new AlterPartitionReassignmentsResponseData.ReassignableTopicResponse().setName(t.name());
            for (AlterPartitionReassignmentsRequestData.ReassignablePartition p : t.partitions()) {
                ApiError error = r.response().get(i++);
                topic.partitions().add(new AlterPartitionReassignmentsResponseData.ReassignablePartitionResponse()
                        .setPartitionIndex(p.partitionIndex())
                        .setErrorCode(error.error().code())
                        .setErrorMessage(message(error)));
            }
            response.responses().add(topic);
        }
        return result(r.records(), response);
    }

    /** ListPartitionReassignments: the ongoing reassignments among the named partitions (null topics: all), grouped by topic. */
    private ControllerResult<ApiMessage> listPartitionReassignments(MetadataImage image, ListPartitionReassignmentsRequestData req) {
        List<TopicPartition> wanted = null;
        if (req.topics() != null) {
            wanted = new ArrayList<>();
            for (ListPartitionReassignmentsRequestData.ListPartitionReassignmentsTopics t : req.topics()) {
                for (int p : t.partitionIndexes()) {
                    wanted.add(new TopicPartition(t.name(), p));
                }
            }
        }
        Map<String, ListPartitionReassignmentsResponseData.OngoingTopicReassignment> byTopic = new LinkedHashMap<>();
        logic.listPartitionReassignments(image, wanted).forEach((tp, p) -> byTopic
                .computeIfAbsent(tp.topic(), t -> new ListPartitionReassignmentsResponseData.OngoingTopicReassignment().setName(t))
                .partitions().add(new ListPartitionReassignmentsResponseData.OngoingPartitionReassignment()
                        .setPartitionIndex(tp.partition())
                        .setReplicas(new ArrayList<>(p.replicas()))
                        .setAddingReplicas(new ArrayList<>(p.addingReplicas()))
                        .setRemovingReplicas(new ArrayList<>(p.removingReplicas()))));
        return result(List.of(), new ListPartitionReassignmentsResponseData()
                .setErrorCode(Errors.NONE.code())
                .setErrorMessage(null)
                .setTopics(new ArrayList<>(byTopic.values())));
    }

    // ---- topics

    /**
     * CreateTopics. A repeated config name is INVALID_REQUEST; the rest, manual assignments included
     * ({@link ManualAssignments}), is {@link TopicControl#createTopics}. A created (or, with validateOnly,
     * creatable) topic's result carries its config overrides.
     */
    private ControllerResult<ApiMessage> createTopics(MetadataImage image, CreateTopicsRequestData req) {
        List<TopicControl.CreatableTopic> valid = new ArrayList<>();
        List<CreateTopicsResponseData.CreatableTopicResult> refused = new ArrayList<>(); // null: decided by TopicControl
        for (CreateTopicsRequestData.CreatableTopic t : req.topics()) {
            List<ManualAssignments.PartitionReplicas> assignments = new ArrayList<>(t.assignments().size());
            for (CreateTopicsRequestData.CreatableReplicaAssignment a : t.assignments()) {
                assignments.add(new ManualAssignments.PartitionReplicas(a.partitionIndex(), a.brokerIds()));
            }
            Map<String, String> configs = uniqueMap(t.configs(),
                    CreateTopicsRequestData.CreatableTopicConfig::name, CreateTopicsRequestData.CreatableTopicConfig::value);
            if (configs == null) {
                refused.add(topicFailed(t.name(), new ApiError(Errors.INVALID_REQUEST, "A config name appears more than once.")));
            } else {
                valid.add(new TopicControl.CreatableTopic(t.name(), t.numPartitions(), t.replicationFactor(), assignments, configs));
                refused.add(null);
            }
        }
        ControllerResult<List<CreateTopicResult>> r = logic.createTopics(image, valid, req.validateOnly());
        CreateTopicsResponseData response = new CreateTopicsResponseData();
        int next = 0;
        for (CreateTopicsResponseData.CreatableTopicResult failed : refused) {
            if (failed != null) {
                response.topics().add(failed);
            } else {
                response.topics().add(topicResult(valid.get(next), r.response().get(next)));
                next++;
            }
        }
        return result(r.records(), response);
    }

    private static CreateTopicsResponseData.CreatableTopicResult topicResult(TopicControl.CreatableTopic topic, CreateTopicResult r) {
        if (r.error().isFailure()) {
            return topicFailed(r.name(), r.error());
        }
        CreateTopicsResponseData.CreatableTopicResult out = new CreateTopicsResponseData.CreatableTopicResult()
                .setName(r.name())
                .setTopicId(r.topicId())
                .setErrorCode(Errors.NONE.code())
                .setErrorMessage(null)
                .setNumPartitions(r.numPartitions())
                .setReplicationFactor(r.replicationFactor());
        topic.configs().forEach((k, v) -> out.configs().add(new CreateTopicsResponseData.CreatableTopicConfigs()
                .setName(k)
                .setValue(v)
                .setReadOnly(false)
                .setConfigSource(ConfigSource.TOPIC_CONFIG.id())
                .setIsSensitive(false)));
        return out;
    }

    private static CreateTopicsResponseData.CreatableTopicResult topicFailed(String name, ApiError error) {
        return new CreateTopicsResponseData.CreatableTopicResult()
                .setName(name)
                .setErrorCode(error.error().code())
                .setErrorMessage(message(error))
                .setNumPartitions(-1)
                .setReplicationFactor((short) -1);
    }

    /**
     * DeleteTopics by name ({@code topicNames} before v6, {@code topics} entries with a name) and by id.
     * An entry naming both or neither is INVALID_REQUEST. A topic named both ways in one request is
     * reported once, by name (the result carries its id too).
     */
    private ControllerResult<ApiMessage> deleteTopics(MetadataImage image, DeleteTopicsRequestData req) {
        DeleteTopicsResponseData response = new DeleteTopicsResponseData();
        List<String> names = new ArrayList<>(req.topicNames());
        List<Uuid> ids = new ArrayList<>();
        for (DeleteTopicsRequestData.DeleteTopicState s : req.topics()) {
            boolean hasId = !Uuid.ZERO_UUID.equals(s.topicId());
            if ((s.name() != null) == hasId) {
                response.responses().add(new DeleteTopicsResponseData.DeletableTopicResult()
                        .setName(s.name())
                        .setTopicId(s.topicId())
                        .setErrorCode(Errors.INVALID_REQUEST.code())
                        .setErrorMessage(hasId ? "Give a topic name or a topic id, not both." : "Neither a topic name nor a topic id was given."));
            } else if (hasId) {
                ids.add(s.topicId());
            } else {
                names.add(s.name());
            }
        }
        ControllerResult<Map<String, ApiError>> byName = logic.deleteTopics(image, names);
        byName.response().forEach((name, error) -> response.responses().add(new DeleteTopicsResponseData.DeletableTopicResult()
                .setName(name)
                .setTopicId(image.topic(name).map(TopicImage::id).orElse(Uuid.ZERO_UUID))
                .setErrorCode(error.error().code())
                .setErrorMessage(message(error))));
        List<Uuid> idsLeft = new ArrayList<>();
        for (Uuid id : ids) {
            if (image.topic(id).filter(t -> byName.response().containsKey(t.name())).isEmpty()) {
                idsLeft.add(id);
            }
        }
        MetadataImage projected = image.apply(image.offset(), byName.records());
        ControllerResult<Map<Uuid, ApiError>> byId = logic.deleteTopicsById(projected, idsLeft);
        byId.response().forEach((id, error) -> response.responses().add(new DeleteTopicsResponseData.DeletableTopicResult()
                .setName(image.topic(id).map(TopicImage::name).orElse(null))
                .setTopicId(id)
                .setErrorCode(error.error().code())
                .setErrorMessage(message(error))));
        List<MetadataRecord> records = new ArrayList<>(byName.records());
        records.addAll(byId.records());
        return result(records, response);
    }

    /** CreatePartitions: one result per distinct topic, in request order. */
    private ControllerResult<ApiMessage> createPartitions(MetadataImage image, CreatePartitionsRequestData req) {
        List<TopicControl.CreatePartitionsTopic> topics = new ArrayList<>();
        for (CreatePartitionsRequestData.CreatePartitionsTopic t : req.topics()) {
            List<List<Integer>> assignments = null;
            if (t.assignments() != null) {
                assignments = new ArrayList<>();
                for (CreatePartitionsRequestData.CreatePartitionsAssignment a : t.assignments()) {
                    assignments.add(a.brokerIds());
                }
            }
            topics.add(new TopicControl.CreatePartitionsTopic(t.name(), t.count(), assignments));
        }
        ControllerResult<Map<String, ApiError>> r = logic.createPartitions(image, topics, req.validateOnly());
        CreatePartitionsResponseData response = new CreatePartitionsResponseData();
        Set<String> reported = new HashSet<>();
        for (TopicControl.CreatePartitionsTopic t : topics) {
            if (reported.add(t.name())) {
                ApiError error = r.response().get(t.name());
                response.results().add(new CreatePartitionsResponseData.CreatePartitionsTopicResult()
                        .setName(t.name())
                        .setErrorCode(error.error().code())
                        .setErrorMessage(message(error)));
            }
        }
        return result(r.records(), response);
    }

    // ---- configs

    /** One resource of an AlterConfigs-style request: how to turn its current configs into key changes. */
    private record ResourceChange(ConfigResource resource, Function<Map<String, String>, Map<String, String>> changes) {
    }

    private ControllerResult<ApiMessage> incrementalAlterConfigs(MetadataImage image, IncrementalAlterConfigsRequestData req) {
        List<ResourceChange> changes = new ArrayList<>();
        for (IncrementalAlterConfigsRequestData.AlterConfigsResource r : req.resources()) {
            ConfigResource resource = new ConfigResource(ConfigResource.Type.forId(r.resourceType()), r.resourceName());
            List<ConfigChanges.Op> ops = new ArrayList<>();
            r.configs().forEach(c -> ops.add(new ConfigChanges.Op(c.name(), OpType.forId(c.configOperation()), c.value())));
            changes.add(new ResourceChange(resource, current -> ConfigChanges.incremental(resource.type(), current, ops)));
        }
        ControllerResult<List<ApiError>> r = decideConfigs(image, changes, req.validateOnly());
        IncrementalAlterConfigsResponseData response = new IncrementalAlterConfigsResponseData();
        int i = 0;
        for (IncrementalAlterConfigsRequestData.AlterConfigsResource res : req.resources()) {
            ApiError error = r.response().get(i++);
            response.responses().add(new IncrementalAlterConfigsResponseData.AlterConfigsResourceResponse()
                    .setResourceType(res.resourceType())
                    .setResourceName(res.resourceName())
                    .setErrorCode(error.error().code())
                    .setErrorMessage(message(error)));
        }
        return result(r.records(), response);
    }

    private ControllerResult<ApiMessage> alterConfigs(MetadataImage image, AlterConfigsRequestData req) {
        List<ResourceChange> changes = new ArrayList<>();
        for (AlterConfigsRequestData.AlterConfigsResource r : req.resources()) {
            ConfigResource resource = new ConfigResource(ConfigResource.Type.forId(r.resourceType()), r.resourceName());
            Map<String, String> wanted = uniqueMap(r.configs(), AlterConfigsRequestData.AlterableConfig::name,
                    AlterConfigsRequestData.AlterableConfig::value);
            changes.add(new ResourceChange(resource, current -> {
                if (wanted == null) {
                    throw new InvalidRequestException("A config name appears more than once.");
                }
                return ConfigChanges.replacement(current, wanted);
            }));
        }
        ControllerResult<List<ApiError>> r = decideConfigs(image, changes, req.validateOnly());
        AlterConfigsResponseData response = new AlterConfigsResponseData();
        int i = 0;
        for (AlterConfigsRequestData.AlterConfigsResource res : req.resources()) {
            ApiError error = r.response().get(i++);
            response.responses().add(new AlterConfigsResponseData.AlterConfigsResourceResponse()
                    .setResourceType(res.resourceType())
                    .setResourceName(res.resourceName())
                    .setErrorCode(error.error().code())
                    .setErrorMessage(message(error)));
        }
        return result(r.records(), response);
    }

    /**
     * Decides config changes; one result per requested resource, in order. A resource named twice is
     * INVALID_REQUEST; an existing topic's overrides after the change must pass
     * {@link ControllerLogic#validateTopicConfigs}, a group's {@link ControllerLogic#validateGroupConfigs}
     * (a group need not exist: Kafka keeps configs of groups to come); existence and resource types are
     * {@link ControllerLogic#alterConfigs}'s checks. With {@code validateOnly} nothing is written.
     */
    private ControllerResult<List<ApiError>> decideConfigs(MetadataImage image, List<ResourceChange> requested, boolean validateOnly) {
        Map<ConfigResource, Integer> occurrences = new HashMap<>();
        requested.forEach(rc -> occurrences.merge(rc.resource(), 1, Integer::sum));
        Map<ConfigResource, ApiError> refused = new HashMap<>();
        Map<ConfigResource, Map<String, String>> changes = new LinkedHashMap<>();
        for (ResourceChange rc : requested) {
            ConfigResource resource = rc.resource();
            if (occurrences.get(resource) > 1) {
                refused.put(resource, new ApiError(Errors.INVALID_REQUEST, "Resource " + resource + " appears more than once."));
                continue;
            }
            try {
                Map<String, String> current = image.configs(resource);
                Map<String, String> delta = rc.changes().apply(current);
                boolean topic = resource.type() == ConfigResource.Type.TOPIC && image.topic(resource.name()).isPresent();
                boolean group = resource.type() == ConfigResource.Type.GROUP && !resource.name().isEmpty();
                if (topic || group) {
                    Map<String, String> after = new HashMap<>(current);
                    delta.forEach((k, v) -> {
                        if (v == null) {
                            after.remove(k);
                        } else {
                            after.put(k, v);
                        }
                    });
                    if (topic) {
                        logic.validateTopicConfigs(resource.name(), after);
                    } else {
                        logic.validateGroupConfigs(resource.name(), after);
                    }
                }
                changes.put(resource, delta);
            } catch (ApiException e) {
                refused.put(resource, ApiError.fromThrowable(e));
            }
        }
        ControllerResult<Map<ConfigResource, ApiError>> decided = logic.alterConfigs(image, changes);
        List<ApiError> results = new ArrayList<>(requested.size());
        for (ResourceChange rc : requested) {
            ApiError error = refused.get(rc.resource());
            results.add(error != null ? error : decided.response().get(rc.resource()));
        }
        return new ControllerResult<>(validateOnly ? List.of() : decided.records(), results);
    }

    // ---- helpers

    private static ControllerResult<ApiMessage> result(List<MetadataRecord> records, ApiMessage response) {
        return new ControllerResult<>(records, response);
    }

    /** The error message for a response: null on success, else the message or the error's default one. */
    private static String message(ApiError error) {
        return error.isSuccess() ? null : error.messageWithFallback();
    }

    /** The items as a map in their order (null values kept), or null when a key repeats. */
    private static <T, K, V> Map<K, V> uniqueMap(Iterable<T> items, Function<T, K> key, Function<T, V> value) {
        Map<K, V> out = new LinkedHashMap<>();
        for (T item : items) {
            K k = key.apply(item);
            if (out.containsKey(k)) {
                return null;
            }
            out.put(k, value.apply(item));
        }
        return out;
    }
}
