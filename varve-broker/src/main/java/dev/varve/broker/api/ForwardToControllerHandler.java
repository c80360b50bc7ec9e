package dev.varve.broker.api;

import dev.varve.broker.cluster.ControllerChannel;
import org.apache.kafka.common.message.AlterConfigsResponseData;
import org.apache.kafka.common.message.CreatePartitionsResponseData;
import org.apache.kafka.common.message.CreateTopicsResponseData;
import org.apache.kafka.common.message.DeleteTopicsResponseData;
import org.apache.kafka.common.message.ElectLeadersResponseData;
import org.apache.kafka.common.message.IncrementalAlterConfigsResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.AlterConfigsResponse;
import org.apache.kafka.common.requests.CreatePartitionsResponse;
import org.apache.kafka.common.requests.CreateTopicsResponse;
import org.apache.kafka.common.requests.DeleteTopicsResponse;
import org.apache.kafka.common.requests.ElectLeadersResponse;
import org.apache.kafka.common.requests.IncrementalAlterConfigsResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.util.concurrent.CompletableFuture;

/**
 * Cluster mode: a request that changes cluster metadata (CreateTopics, DeleteTopics, CreatePartitions,
 * AlterConfigs, IncrementalAlterConfigs, ElectLeaders, AlterPartitionReassignments, AlterUserScramCredentials, AlterClientQuotas, CreateAcls, DeleteAcls; also
 * ListPartitionReassignments, which the controller answers from its image, and DescribeQuorum, AddRaftVoter and
 * RemoveRaftVoter, which it answers from and with Raft) goes to the active controller as the client sent
 * it, at the client's version; the controller's answer goes back once this broker's own metadata image
 * includes the change, so the client's next Metadata request here sees it.
 */
public final class ForwardToControllerHandler extends AllVersionsHandler {
    private final java.util.function.Supplier<ControllerChannel> channel;

    /** @param channel the channel; null until the broker's listeners are bound (requests then get NOT_CONTROLLER) */
    public ForwardToControllerHandler(ApiKeys key, java.util.function.Supplier<ControllerChannel> channel) {
        super(key);
        this.channel = channel;
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        ApiKeys key = apiKey();
        short version = request.version();
        ControllerChannel controller = channel.get();
        if (controller == null) {
            return CompletableFuture.failedFuture(new org.apache.kafka.common.errors.NotControllerException("starting up"));
        }
        if (key == ApiKeys.DESCRIBE_QUORUM || key == ApiKeys.ADD_RAFT_VOTER || key == ApiKeys.REMOVE_RAFT_VOTER) {
            // the quorum's state or membership (a Raft configuration change, answered once committed): no
            // metadata for this broker's image to catch up with first
            return controller.send(key, version, request.data()).thenApply(reply -> wrap(key, version, reply.response()));
        }
        return controller.send(key, version, request.data())
                .thenCompose(reply -> controller.awaitMetadata(reply.metadataOffset())
                        .exceptionally(e -> null) // answer anyway: the change is committed
                        .thenApply(v -> wrap(key, version, reply.response())));
    }

    private static AbstractResponse wrap(ApiKeys key, short version, ApiMessage data) {
        return switch (key) {
            case CREATE_TOPICS -> new CreateTopicsResponse((CreateTopicsResponseData) data);
            case DESCRIBE_QUORUM -> new org.apache.kafka.common.requests.DescribeQuorumResponse(
                    (org.apache.kafka.common.message.DescribeQuorumResponseData) data);
            case ADD_RAFT_VOTER -> new org.apache.kafka.common.requests.AddRaftVoterResponse(
                    (org.apache.kafka.common.message.AddRaftVoterResponseData) data);
            case REMOVE_RAFT_VOTER -> new org.apache.kafka.common.requests.RemoveRaftVoterResponse(
                    (org.apache.kafka.common.message.RemoveRaftVoterResponseData) data);
            case DELETE_TOPICS -> new DeleteTopicsResponse((DeleteTopicsResponseData) data);
            case CREATE_PARTITIONS -> new CreatePartitionsResponse((CreatePartitionsResponseData) data);
            case ALTER_CONFIGS -> new AlterConfigsResponse((AlterConfigsResponseData) data);
            case INCREMENTAL_ALTER_CONFIGS -> new IncrementalAlterConfigsResponse((IncrementalAlterConfigsResponseData) data);
            case ELECT_LEADERS -> new ElectLeadersResponse((ElectLeadersResponseData) data);
            case ALTER_PARTITION_REASSIGNMENTS -> new org.apache.kafka.common.requests.AlterPartitionReassignmentsResponse(
                    (org.apache.kafka.common.message.AlterPartitionReassignmentsResponseData) data);
            case LIST_PARTITION_REASSIGNMENTS -> new org.apache.kafka.common.requests.ListPartitionReassignmentsResponse(
                    (org.apache.kafka.common.message.ListPartitionReassignmentsResponseData) data);
            case ALTER_USER_SCRAM_CREDENTIALS -> new org.apache.kafka.common.requests.AlterUserScramCredentialsResponse(
                    (org.apache.kafka.common.message.AlterUserScramCredentialsResponseData) data);
            case ALTER_CLIENT_QUOTAS -> new org.apache.kafka.common.requests.AlterClientQuotasResponse(
                    (org.apache.kafka.common.message.AlterClientQuotasResponseData) data);
            case UPDATE_FEATURES -> new org.apache.kafka.common.requests.UpdateFeaturesResponse(
                    (org.apache.kafka.common.message.UpdateFeaturesResponseData) data);
            case CREATE_ACLS -> new org.apache.kafka.common.requests.CreateAclsResponse(
                    (org.apache.kafka.common.message.CreateAclsResponseData) data);
            case DELETE_ACLS -> new org.apache.kafka.common.requests.DeleteAclsResponse(
                    (org.apache.kafka.common.message.DeleteAclsResponseData) data, version);
            default -> throw new IllegalArgumentException("not forwarded: " + key);
        };
    }
}
