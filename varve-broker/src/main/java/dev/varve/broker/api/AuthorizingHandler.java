package dev.varve.broker.api;

import dev.varve.broker.BrokerContext;
import dev.varve.broker.security.AclAuthorizer;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.errors.ClusterAuthorizationException;
import org.apache.kafka.common.errors.GroupAuthorizationException;
import org.apache.kafka.common.errors.TransactionalIdAuthorizationException;
import org.apache.kafka.common.message.AlterConfigsRequestData;
import org.apache.kafka.common.message.AlterConfigsResponseData;
import org.apache.kafka.common.message.CreatePartitionsRequestData;
import org.apache.kafka.common.message.CreatePartitionsResponseData;
import org.apache.kafka.common.message.CreateTopicsRequestData;
import org.apache.kafka.common.message.CreateTopicsResponseData;
import org.apache.kafka.common.message.DeleteGroupsRequestData;
import org.apache.kafka.common.message.DeleteGroupsResponseData;
import org.apache.kafka.common.message.DeleteRecordsRequestData;
import org.apache.kafka.common.message.DeleteRecordsResponseData;
import org.apache.kafka.common.message.DeleteTopicsRequestData;
import org.apache.kafka.common.message.DeleteTopicsResponseData;
import org.apache.kafka.common.message.DescribeConfigsRequestData;
import org.apache.kafka.common.message.DescribeConfigsResponseData;
import org.apache.kafka.common.message.DescribeGroupsRequestData;
import org.apache.kafka.common.message.DescribeGroupsResponseData;
import org.apache.kafka.common.message.IncrementalAlterConfigsRequestData;
import org.apache.kafka.common.message.IncrementalAlterConfigsResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.AddOffsetsToTxnRequest;
import org.apache.kafka.common.requests.AlterConfigsRequest;
import org.apache.kafka.common.requests.AlterConfigsResponse;
import org.apache.kafka.common.requests.CreatePartitionsRequest;
import org.apache.kafka.common.requests.CreatePartitionsResponse;
import org.apache.kafka.common.requests.CreateTopicsRequest;
import org.apache.kafka.common.requests.CreateTopicsResponse;
import org.apache.kafka.common.requests.DeleteGroupsRequest;
import org.apache.kafka.common.requests.DeleteGroupsResponse;
import org.apache.kafka.common.requests.DeleteRecordsRequest;
import org.apache.kafka.common.requests.DeleteRecordsResponse;
import org.apache.kafka.common.requests.DeleteTopicsRequest;
import org.apache.kafka.common.requests.DeleteTopicsResponse;
import org.apache.kafka.common.requests.DescribeConfigsRequest;
import org.apache.kafka.common.requests.DescribeConfigsResponse;
import org.apache.kafka.common.requests.DescribeGroupsRequest;
import org.apache.kafka.common.requests.DescribeGroupsResponse;
import org.apache.kafka.common.requests.EndTxnRequest;
import org.apache.kafka.common.requests.HeartbeatRequest;
import org.apache.kafka.common.requests.IncrementalAlterConfigsRequest;
import org.apache.kafka.common.requests.IncrementalAlterConfigsResponse;
import org.apache.kafka.common.requests.InitProducerIdRequest;
import org.apache.kafka.common.requests.JoinGroupRequest;
import org.apache.kafka.common.requests.LeaveGroupRequest;
import org.apache.kafka.common.requests.OffsetCommitRequest;
import org.apache.kafka.common.requests.OffsetDeleteRequest;
import org.apache.kafka.common.requests.RequestContext;
import org.apache.kafka.common.requests.SyncGroupRequest;
import org.apache.kafka.common.requests.TxnOffsetCommitRequest;
import org.apache.kafka.common.resource.ResourceType;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.function.UnaryOperator;

/**
 * Puts Kafka's authorization in front of a handler, for the checks that do not need the handler's
 * state: a request the principal may not make at all is answered with Kafka's error for it (JoinGroup
 * without READ on the group: GROUP_AUTHORIZATION_FAILED; ElectLeaders without ALTER on the cluster:
 * CLUSTER_AUTHORIZATION_FAILED...), and a request naming several resources is split: the handler
 * (or the controller, for a forwarded request) gets only what the principal may touch, and the answer
 * gets Kafka's error for each of the others. Checks that need what the handler knows (each partition of
 * a Produce or Fetch, the topics a Metadata answer lists) are in the handlers.
 *
 * <p>Without an authorizer a handler is used as it is (see {@link #wrap}).
 */
public final class AuthorizingHandler implements ApiHandler {
    private final ApiHandler inner;
    private final BrokerContext broker;

    private AuthorizingHandler(ApiHandler inner, BrokerContext broker) {
        this.inner = inner;
        this.broker = broker;
    }

    /** {@code handler} behind the authorizer's checks, or as it is when no authorizer is configured. */
    public static ApiHandler wrap(ApiHandler handler, BrokerContext broker) {
        return broker.authorizer().enabled() ? new AuthorizingHandler(handler, broker) : handler;
    }

    @Override
    public ApiKeys apiKey() {
        return inner.apiKey();
    }

    @Override
    public short minVersion() {
        return inner.minVersion();
    }

    @Override
    public short maxVersion() {
        return inner.maxVersion();
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        return start(context, request).response();
    }

    @Override
    public Started start(RequestContext context, AbstractRequest request) {
        ApiException refused = refusal(context, request);
        if (refused != null) {
            return new Started(CompletableFuture.completedFuture(request.getErrorResponse(0, refused)), null);
        }
        Split split = split(context, request);
        if (split == null) {
            return inner.start(context, request);
        }
        if (split.allowed() == null) {
            return new Started(CompletableFuture.completedFuture(split.merge().apply(null)), null);
        }
        Started started = inner.start(context, split.allowed());
        return new Started(started.response().thenApply(split.merge()), started.applied());
    }

    // ---- whole requests

    private ApiException refusal(RequestContext ctx, AbstractRequest request) {
        AclAuthorizer auth = broker.authorizer();
        return switch (request.apiKey()) {
            case JOIN_GROUP -> group(ctx, AclOperation.READ, ((JoinGroupRequest) request).data().groupId());
            case SYNC_GROUP -> group(ctx, AclOperation.READ, ((SyncGroupRequest) request).data().groupId());
            case HEARTBEAT -> group(ctx, AclOperation.READ, ((HeartbeatRequest) request).data().groupId());
            case DESCRIBE_SHARE_GROUP_OFFSETS -> {
                ApiException e = null;
                for (var g : ((org.apache.kafka.common.requests.DescribeShareGroupOffsetsRequest) request).data().groups()) {
                    e = e != null ? e : group(ctx, AclOperation.DESCRIBE, g.groupId());
                }
                yield e;
            }
            case ALTER_SHARE_GROUP_OFFSETS -> group(ctx, AclOperation.READ,
                    ((org.apache.kafka.common.requests.AlterShareGroupOffsetsRequest) request).data().groupId());
            case DELETE_SHARE_GROUP_OFFSETS -> group(ctx, AclOperation.DELETE,
                    ((org.apache.kafka.common.requests.DeleteShareGroupOffsetsRequest) request).data().groupId());
            case SHARE_GROUP_HEARTBEAT -> {
                var d = ((org.apache.kafka.common.requests.ShareGroupHeartbeatRequest) request).data();
                yield readGroupDescribeTopics(ctx, d.groupId(), d.subscribedTopicNames());
            }
            case CONSUMER_GROUP_HEARTBEAT -> {
                var d = ((org.apache.kafka.common.requests.ConsumerGroupHeartbeatRequest) request).data();
                yield readGroupDescribeTopics(ctx, d.groupId(), d.subscribedTopicNames());
            }
            case LEAVE_GROUP -> group(ctx, AclOperation.READ, ((LeaveGroupRequest) request).data().groupId());
            case OFFSET_COMMIT -> group(ctx, AclOperation.READ, ((OffsetCommitRequest) request).data().groupId());
            case OFFSET_DELETE -> group(ctx, AclOperation.DELETE, ((OffsetDeleteRequest) request).data().groupId());
            case END_TXN -> txn(ctx, ((EndTxnRequest) request).data().transactionalId());
            case PRODUCE -> {
                var produce = (org.apache.kafka.common.requests.ProduceRequest) request;
                // transactional batches need WRITE on the request's transactional id (each topic's WRITE: ProduceHandler)
                yield !org.apache.kafka.common.requests.RequestUtils.hasTransactionalRecords(produce) ? null
                        : produce.transactionalId() == null ? new TransactionalIdAuthorizationException(
                                "Transactional records without a transactional id") : txn(ctx, produce.transactionalId());
            }
            case ADD_OFFSETS_TO_TXN -> {
                var d = ((AddOffsetsToTxnRequest) request).data();
                ApiException e = txn(ctx, d.transactionalId());
                yield e != null ? e : group(ctx, AclOperation.READ, d.groupId());
            }
            case TXN_OFFSET_COMMIT -> {
                var d = ((TxnOffsetCommitRequest) request).data();
                ApiException e = txn(ctx, d.transactionalId());
                yield e != null ? e : group(ctx, AclOperation.READ, d.groupId());
            }
            case INIT_PRODUCER_ID -> {
                String txnId = ((InitProducerIdRequest) request).data().transactionalId();
                if (txnId != null) {
                    yield txn(ctx, txnId);
                }
                // an idempotent producer: IDEMPOTENT_WRITE on the cluster, or WRITE on any topic (Kafka 3.0+)
                yield auth.authorizeCluster(ctx, AclOperation.IDEMPOTENT_WRITE)
                        || auth.authorizeAnyOfType(ctx, AclOperation.WRITE, ResourceType.TOPIC) ? null
                        : new ClusterAuthorizationException("Not authorized to initialise an idempotent producer: needs "
                        + "IDEMPOTENT_WRITE on the cluster or WRITE on a topic");
            }
            case ADD_PARTITIONS_TO_TXN -> request.version() >= 4 ? cluster(ctx, AclOperation.CLUSTER_ACTION)
                    : txn(ctx, ((org.apache.kafka.common.requests.AddPartitionsToTxnRequest) request).data().v3AndBelowTransactionalId());
            case WRITE_TXN_MARKERS -> cluster(ctx, AclOperation.CLUSTER_ACTION);
            case DESCRIBE_CLIENT_QUOTAS -> cluster(ctx, AclOperation.DESCRIBE_CONFIGS);
            case ALTER_CLIENT_QUOTAS -> cluster(ctx, AclOperation.ALTER_CONFIGS);
            case ELECT_LEADERS, ALTER_PARTITION_REASSIGNMENTS, CREATE_ACLS, DELETE_ACLS, ALTER_USER_SCRAM_CREDENTIALS,
                 ADD_RAFT_VOTER, REMOVE_RAFT_VOTER, UPDATE_FEATURES, ALTER_REPLICA_LOG_DIRS -> cluster(ctx, AclOperation.ALTER);
            case LIST_PARTITION_REASSIGNMENTS, DESCRIBE_ACLS, DESCRIBE_USER_SCRAM_CREDENTIALS, DESCRIBE_LOG_DIRS, DESCRIBE_QUORUM ->
                    cluster(ctx, AclOperation.DESCRIBE);
            default -> null;
        };
    }

    /** Read on the group, and Describe on each topic subscribed by name (the group heartbeats of KIP-848 and KIP-932). */
    private ApiException readGroupDescribeTopics(RequestContext ctx, String groupId, java.util.List<String> topics) {
        ApiException e = group(ctx, AclOperation.READ, groupId);
        if (e == null && topics != null) {
            for (String topic : topics) {
                if (!broker.authorizer().authorize(ctx, AclOperation.DESCRIBE, ResourceType.TOPIC, topic)) {
                    return new org.apache.kafka.common.errors.TopicAuthorizationException("Not authorized to describe topic " + topic);
                }
            }
        }
        return e;
    }

    private ApiException group(RequestContext ctx, AclOperation op, String groupId) {
        return broker.authorizer().authorize(ctx, op, ResourceType.GROUP, groupId) ? null
                : new GroupAuthorizationException("Not authorized to " + op + " group " + groupId);
    }

    private ApiException txn(RequestContext ctx, String transactionalId) {
        return broker.authorizer().authorize(ctx, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, transactionalId) ? null
                : new TransactionalIdAuthorizationException("Not authorized to use transactional id " + transactionalId);
    }

    private ApiException cluster(RequestContext ctx, AclOperation op) {
        return broker.authorizer().authorizeCluster(ctx, op) ? null
                : new ClusterAuthorizationException("Not authorized to " + op + " the cluster");
    }

    // ---- requests split by resource

    /**
     * What the handler gets ({@code allowed}: null when nothing) and how its answer gets the refusals
     * ({@code merge}, given null when the handler was not called).
     */
    private record Split(AbstractRequest allowed, UnaryOperator<AbstractResponse> merge) {
    }

    private Split split(RequestContext ctx, AbstractRequest request) {
        return switch (request.apiKey()) {
            case CREATE_TOPICS -> createTopics(ctx, (CreateTopicsRequest) request);
            case DELETE_TOPICS -> deleteTopics(ctx, (DeleteTopicsRequest) request);
            case CREATE_PARTITIONS -> createPartitions(ctx, (CreatePartitionsRequest) request);
            case DELETE_RECORDS -> deleteRecords(ctx, (DeleteRecordsRequest) request);
            case DESCRIBE_CONFIGS -> describeConfigs(ctx, (DescribeConfigsRequest) request);
            case ALTER_CONFIGS -> alterConfigs(ctx, (AlterConfigsRequest) request);
            case INCREMENTAL_ALTER_CONFIGS -> incrementalAlterConfigs(ctx, (IncrementalAlterConfigsRequest) request);
            case DELETE_GROUPS -> deleteGroups(ctx, (DeleteGroupsRequest) request);
            case DESCRIBE_GROUPS -> describeGroups(ctx, (DescribeGroupsRequest) request);
            case CONSUMER_GROUP_DESCRIBE -> consumerGroupDescribe(ctx,
                    (org.apache.kafka.common.requests.ConsumerGroupDescribeRequest) request);
            case SHARE_GROUP_DESCRIBE -> shareGroupDescribe(ctx, (org.apache.kafka.common.requests.ShareGroupDescribeRequest) request);
            case LIST_GROUPS -> broker.authorizer().authorizeCluster(ctx, AclOperation.DESCRIBE) ? null
                    : new Split(request, response -> {
                        // without DESCRIBE on the cluster, the groups the principal may describe
                        var data = ((org.apache.kafka.common.requests.ListGroupsResponse) response).data();
                        data.groups().removeIf(g -> !broker.authorizer().authorize(ctx, AclOperation.DESCRIBE,
                                ResourceType.GROUP, g.groupId()));
                        return response;
                    });
            case LIST_TRANSACTIONS -> new Split(request, response -> {
                var data = ((org.apache.kafka.common.requests.ListTransactionsResponse) response).data();
                data.transactionStates().removeIf(t -> !broker.authorizer().authorize(ctx, AclOperation.DESCRIBE,
                        ResourceType.TRANSACTIONAL_ID, t.transactionalId()));
                return response;
            });
            case DESCRIBE_TRANSACTIONS -> new Split(request, response -> {
                var data = ((org.apache.kafka.common.requests.DescribeTransactionsResponse) response).data();
                for (var t : data.transactionStates()) {
                    if (!broker.authorizer().authorize(ctx, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID,
                            t.transactionalId())) {
                        t.setErrorCode(Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED.code()).setTransactionState("")
                                .setProducerId(-1).setProducerEpoch((short) -1).setTransactionStartTimeMs(-1)
                                .setTransactionTimeoutMs(0).topics().clear();
                    } else {
                        // the partitions of topics the principal may not describe are left out, as Kafka does
                        t.topics().removeIf(d -> !topic(ctx, AclOperation.DESCRIBE, d.topic()));
                    }
                }
                return response;
            });
            default -> null;
        };
    }

    private boolean topic(RequestContext ctx, AclOperation op, String name) {
        return broker.authorizer().authorize(ctx, op, ResourceType.TOPIC, name);
    }

    private Split createTopics(RequestContext ctx, CreateTopicsRequest request) {
        AclAuthorizer auth = broker.authorizer();
        boolean cluster = auth.authorizeCluster(ctx, AclOperation.CREATE);
        CreateTopicsRequestData allowed = request.data().duplicate();
        allowed.topics().clear();
        List<String> refused = new ArrayList<>();
        for (CreateTopicsRequestData.CreatableTopic t : request.data().topics()) {
            if (cluster || topic(ctx, AclOperation.CREATE, t.name())) {
                allowed.topics().add(t.duplicate());
            } else {
                refused.add(t.name());
            }
        }
        short version = request.version();
        return new Split(allowed.topics().isEmpty() ? null : new CreateTopicsRequest(allowed, version), response -> {
            CreateTopicsResponseData data = response == null ? new CreateTopicsResponseData()
                    : ((CreateTopicsResponse) response).data();
            for (CreateTopicsResponseData.CreatableTopicResult r : data.topics()) {
                if (r.errorCode() == Errors.NONE.code() && !topic(ctx, AclOperation.DESCRIBE_CONFIGS, r.name())) {
                    // created, but its settings are not this principal's to see (as Kafka answers)
                    r.setTopicConfigErrorCode(Errors.TOPIC_AUTHORIZATION_FAILED.code()).setConfigs(null)
                            .setNumPartitions(-1).setReplicationFactor((short) -1);
                }
            }
            for (String name : refused) {
                data.topics().add(new CreateTopicsResponseData.CreatableTopicResult().setName(name)
                        .setErrorCode(Errors.TOPIC_AUTHORIZATION_FAILED.code())
                        .setErrorMessage("Not authorized to create topic " + name));
            }
            return new CreateTopicsResponse(data);
        });
    }

    private Split deleteTopics(RequestContext ctx, DeleteTopicsRequest request) {
        List<DeleteTopicsResponseData.DeletableTopicResult> refused = new ArrayList<>();
        List<DeleteTopicsRequestData.DeleteTopicState> allowed = new ArrayList<>();
        for (DeleteTopicsRequestData.DeleteTopicState t : request.topics()) {
            String name = t.name();
            Uuid id = t.topicId() == null ? Uuid.ZERO_UUID : t.topicId();
            if (name == null && !id.equals(Uuid.ZERO_UUID)) {
                Optional<String> known = broker.topics().get(id).map(dev.varve.broker.TopicRegistry.TopicInfo::name);
                if (known.isEmpty()) {
                    allowed.add(t); // UNKNOWN_TOPIC_ID, from the handler
                    continue;
                }
                if (!topic(ctx, AclOperation.DESCRIBE, known.get())) {
                    refused.add(new DeleteTopicsResponseData.DeletableTopicResult().setName(null).setTopicId(id)
                            .setErrorCode(Errors.TOPIC_AUTHORIZATION_FAILED.code()));
                    continue;
                }
                name = known.get();
            }
            if (name == null || topic(ctx, AclOperation.DELETE, name)) {
                allowed.add(t);
            } else {
                refused.add(new DeleteTopicsResponseData.DeletableTopicResult().setName(t.name()).setTopicId(id)
                        .setErrorCode(Errors.TOPIC_AUTHORIZATION_FAILED.code())
                        .setErrorMessage("Not authorized to delete topic " + name));
            }
        }
        if (refused.isEmpty()) {
            return null;
        }
        short version = request.version();
        DeleteTopicsRequestData data = new DeleteTopicsRequestData().setTimeoutMs(request.data().timeoutMs());
        if (version >= 6) {
            allowed.forEach(t -> data.topics().add(t.duplicate()));
        } else {
            allowed.forEach(t -> data.topicNames().add(t.name()));
        }
        return new Split(allowed.isEmpty() ? null : new DeleteTopicsRequest.Builder(data).build(version), response -> {
            DeleteTopicsResponseData out = response == null ? new DeleteTopicsResponseData()
                    : ((DeleteTopicsResponse) response).data();
            refused.forEach(r -> out.responses().add(r));
            return new DeleteTopicsResponse(out);
        });
    }

    /**
     * Splits the {@code requested} resources of a request: those {@code check} passes (Errors.NONE) go to
     * the handler in the request {@code rebuild} makes of them; each other one becomes the answer entry
     * {@code refusal} makes, added to the handler's answer (or to a new one) by {@code entries}. Null when
     * nothing is refused.
     *
     * @param dataOf the answer's data, or new data when given null (nothing went to the handler)
     */
    private <R, D, E> Split split(java.util.Collection<R> requested, java.util.function.Function<R, Errors> check,
                                  java.util.function.Function<List<R>, AbstractRequest> rebuild,
                                  java.util.function.BiFunction<R, Errors, E> refusal,
                                  java.util.function.Function<AbstractResponse, D> dataOf,
                                  java.util.function.Function<D, ? extends java.util.Collection<E>> entries,
                                  java.util.function.Function<D, AbstractResponse> wrap) {
        List<R> allowed = new ArrayList<>();
        List<E> refused = new ArrayList<>();
        for (R r : requested) {
            Errors e = check.apply(r);
            if (e == Errors.NONE) {
                allowed.add(r);
            } else {
                refused.add(refusal.apply(r, e));
            }
        }
        if (refused.isEmpty()) {
            return null;
        }
        return new Split(allowed.isEmpty() ? null : rebuild.apply(allowed), response -> {
            D data = dataOf.apply(response);
            entries.apply(data).addAll(refused);
            return wrap.apply(data);
        });
    }

    private Errors topicError(RequestContext ctx, AclOperation op, String name) {
        return topic(ctx, op, name) ? Errors.NONE : Errors.TOPIC_AUTHORIZATION_FAILED;
    }

    private Split createPartitions(RequestContext ctx, CreatePartitionsRequest request) {
        return split(request.data().topics(), t -> topicError(ctx, AclOperation.ALTER, t.name()), allowed -> {
            CreatePartitionsRequestData data = request.data().duplicate();
            data.topics().clear();
            allowed.forEach(t -> data.topics().add(t.duplicate()));
            return new CreatePartitionsRequest.Builder(data).build(request.version());
        }, (t, e) -> new CreatePartitionsResponseData.CreatePartitionsTopicResult().setName(t.name()).setErrorCode(e.code())
                .setErrorMessage("Not authorized to alter topic " + t.name()),
                r -> r == null ? new CreatePartitionsResponseData() : ((CreatePartitionsResponse) r).data(),
                CreatePartitionsResponseData::results, CreatePartitionsResponse::new);
    }

    private Split deleteRecords(RequestContext ctx, DeleteRecordsRequest request) {
        return split(request.data().topics(), t -> topicError(ctx, AclOperation.DELETE, t.name()), allowed -> {
            DeleteRecordsRequestData data = request.data().duplicate();
            data.topics().clear();
            allowed.forEach(t -> data.topics().add(t.duplicate()));
            return new DeleteRecordsRequest.Builder(data).build(request.version());
        }, (t, e) -> {
            var result = new DeleteRecordsResponseData.DeleteRecordsTopicResult().setName(t.name());
            t.partitions().forEach(p -> result.partitions().add(new DeleteRecordsResponseData.DeleteRecordsPartitionResult()
                    .setPartitionIndex(p.partitionIndex()).setLowWatermark(-1).setErrorCode(e.code())));
            return result;
        }, r -> r == null ? new DeleteRecordsResponseData() : ((DeleteRecordsResponse) r).data(),
                DeleteRecordsResponseData::topics, DeleteRecordsResponse::new);
    }

    /** Whether the principal may do {@code op} (DESCRIBE_CONFIGS or ALTER_CONFIGS) on a config resource; else its error. */
    private Errors configs(RequestContext ctx, AclOperation op, byte type, String name) {
        AclAuthorizer auth = broker.authorizer();
        return switch (ConfigResource.Type.forId(type)) {
            case TOPIC -> auth.authorize(ctx, op, ResourceType.TOPIC, name) ? Errors.NONE : Errors.TOPIC_AUTHORIZATION_FAILED;
            case GROUP -> auth.authorize(ctx, op, ResourceType.GROUP, name) ? Errors.NONE : Errors.GROUP_AUTHORIZATION_FAILED;
            case BROKER, BROKER_LOGGER, CLIENT_METRICS -> auth.authorizeCluster(ctx, op) ? Errors.NONE
                    : Errors.CLUSTER_AUTHORIZATION_FAILED;
            default -> Errors.NONE; // an unknown type: the handler's INVALID_REQUEST
        };
    }


    private Split describeConfigs(RequestContext ctx, DescribeConfigsRequest request) {
        return split(request.data().resources(), r -> configs(ctx, AclOperation.DESCRIBE_CONFIGS, r.resourceType(), r.resourceName()),
                allowed -> {
                    DescribeConfigsRequestData data = request.data().duplicate();
                    data.resources().clear();
                    allowed.forEach(r -> data.resources().add(r.duplicate()));
                    return new DescribeConfigsRequest.Builder(data).build(request.version());
                }, (r, e) -> new DescribeConfigsResponseData.DescribeConfigsResult().setResourceType(r.resourceType())
                        .setResourceName(r.resourceName()).setErrorCode(e.code()).setErrorMessage(e.message()),
                r -> r == null ? new DescribeConfigsResponseData() : ((DescribeConfigsResponse) r).data(),
                DescribeConfigsResponseData::results, DescribeConfigsResponse::new);
    }

    private Split alterConfigs(RequestContext ctx, AlterConfigsRequest request) {
        return split(request.data().resources(), r -> configs(ctx, AclOperation.ALTER_CONFIGS, r.resourceType(), r.resourceName()),
                allowed -> {
                    AlterConfigsRequestData data = request.data().duplicate();
                    data.resources().clear();
                    allowed.forEach(r -> data.resources().add(r.duplicate()));
                    return new AlterConfigsRequest(data, request.version());
                }, (r, e) -> new AlterConfigsResponseData.AlterConfigsResourceResponse().setResourceType(r.resourceType())
                        .setResourceName(r.resourceName()).setErrorCode(e.code()).setErrorMessage(e.message()),
                r -> r == null ? new AlterConfigsResponseData() : ((AlterConfigsResponse) r).data(),
                AlterConfigsResponseData::responses, AlterConfigsResponse::new);
    }

    private Split incrementalAlterConfigs(RequestContext ctx, IncrementalAlterConfigsRequest request) {
        return split(request.data().resources(), r -> configs(ctx, AclOperation.ALTER_CONFIGS, r.resourceType(), r.resourceName()),
                allowed -> {
                    IncrementalAlterConfigsRequestData data = request.data().duplicate();
                    data.resources().clear();
                    allowed.forEach(r -> data.resources().add(r.duplicate()));
                    return new IncrementalAlterConfigsRequest(data, request.version());
                }, (r, e) -> new IncrementalAlterConfigsResponseData.AlterConfigsResourceResponse().setResourceType(r.resourceType())
                        .setResourceName(r.resourceName()).setErrorCode(e.code()).setErrorMessage(e.message()),
                r -> r == null ? new IncrementalAlterConfigsResponseData() : ((IncrementalAlterConfigsResponse) r).data(),
                IncrementalAlterConfigsResponseData::responses, IncrementalAlterConfigsResponse::new);
    }

    private Split deleteGroups(RequestContext ctx, DeleteGroupsRequest request) {
        return split(request.data().groupsNames(), g -> broker.authorizer().authorize(ctx, AclOperation.DELETE, ResourceType.GROUP, g)
                        ? Errors.NONE : Errors.GROUP_AUTHORIZATION_FAILED,
                allowed -> new DeleteGroupsRequest.Builder(request.data().duplicate().setGroupsNames(new ArrayList<>(allowed)))
                        .build(request.version()),
                (g, e) -> new DeleteGroupsResponseData.DeletableGroupResult().setGroupId(g).setErrorCode(e.code()),
                r -> r == null ? new DeleteGroupsResponseData() : ((DeleteGroupsResponse) r).data(),
                DeleteGroupsResponseData::results, DeleteGroupsResponse::new);
    }

    private Split consumerGroupDescribe(RequestContext ctx, org.apache.kafka.common.requests.ConsumerGroupDescribeRequest request) {
        AclAuthorizer auth = broker.authorizer();
        var allowed = request.data().duplicate();
        allowed.groupIds().clear();
        List<String> refused = new ArrayList<>();
        for (String g : request.data().groupIds()) {
            (auth.authorize(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, g) ? allowed.groupIds() : refused).add(g);
        }
        boolean operations = request.data().includeAuthorizedOperations();
        return new Split(allowed.groupIds().isEmpty() ? null
                : new org.apache.kafka.common.requests.ConsumerGroupDescribeRequest.Builder(allowed).build(request.version()),
                response -> {
                    var out = response == null ? new org.apache.kafka.common.message.ConsumerGroupDescribeResponseData()
                            : ((org.apache.kafka.common.requests.ConsumerGroupDescribeResponse) response).data();
                    if (operations) {
                        out.groups().forEach(g -> g.setAuthorizedOperations(auth.authorizedOperations(ctx, ResourceType.GROUP,
                                g.groupId(), AclAuthorizer.GROUP_OPERATIONS)));
                    }
                    refused.forEach(g -> out.groups().add(
                            new org.apache.kafka.common.message.ConsumerGroupDescribeResponseData.DescribedGroup().setGroupId(g)
                                    .setErrorCode(Errors.GROUP_AUTHORIZATION_FAILED.code())
                                    .setErrorMessage("Not authorized to describe group " + g)));
                    return new org.apache.kafka.common.requests.ConsumerGroupDescribeResponse(out);
                });
    }

    private Split shareGroupDescribe(RequestContext ctx, org.apache.kafka.common.requests.ShareGroupDescribeRequest request) {
        AclAuthorizer auth = broker.authorizer();
        var allowed = request.data().duplicate();
        allowed.groupIds().clear();
        List<String> refused = new ArrayList<>();
        for (String g : request.data().groupIds()) {
            (auth.authorize(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, g) ? allowed.groupIds() : refused).add(g);
        }
        boolean operations = request.data().includeAuthorizedOperations();
        return new Split(allowed.groupIds().isEmpty() ? null
                : new org.apache.kafka.common.requests.ShareGroupDescribeRequest.Builder(allowed).build(request.version()),
                response -> {
                    var out = response == null ? new org.apache.kafka.common.message.ShareGroupDescribeResponseData()
                            : ((org.apache.kafka.common.requests.ShareGroupDescribeResponse) response).data();
                    if (operations) {
                        out.groups().forEach(g -> g.setAuthorizedOperations(auth.authorizedOperations(ctx, ResourceType.GROUP,
                                g.groupId(), AclAuthorizer.GROUP_OPERATIONS)));
                    }
                    refused.forEach(g -> out.groups().add(
                            new org.apache.kafka.common.message.ShareGroupDescribeResponseData.DescribedGroup().setGroupId(g)
                                    .setErrorCode(Errors.GROUP_AUTHORIZATION_FAILED.code())
                                    .setErrorMessage("Not authorized to describe group " + g)));
                    return new org.apache.kafka.common.requests.ShareGroupDescribeResponse(out);
                });
    }

    private Split describeGroups(RequestContext ctx, DescribeGroupsRequest request) {
        AclAuthorizer auth = broker.authorizer();
        DescribeGroupsRequestData allowed = request.data().duplicate();
        allowed.groups().clear();
        List<String> refused = new ArrayList<>();
        for (String g : request.data().groups()) {
            (auth.authorize(ctx, AclOperation.DESCRIBE, ResourceType.GROUP, g) ? allowed.groups() : refused).add(g);
        }
        boolean operations = request.data().includeAuthorizedOperations();
        return new Split(allowed.groups().isEmpty() ? null : new DescribeGroupsRequest.Builder(allowed).build(request.version()),
                response -> {
                    DescribeGroupsResponseData out = response == null ? new DescribeGroupsResponseData()
                            : ((DescribeGroupsResponse) response).data();
                    if (operations) {
                        out.groups().forEach(g -> g.setAuthorizedOperations(auth.authorizedOperations(ctx, ResourceType.GROUP,
                                g.groupId(), AclAuthorizer.GROUP_OPERATIONS)));
                    }
                    refused.forEach(g -> out.groups().add(new DescribeGroupsResponseData.DescribedGroup().setGroupId(g)
                            .setErrorCode(Errors.GROUP_AUTHORIZATION_FAILED.code())));
                    return new DescribeGroupsResponse(out);
                });
    }
}
