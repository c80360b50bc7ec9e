package dev.varve.broker.api;

import dev.varve.broker.BrokerContext;
import dev.varve.broker.OffsetsTopic;
import dev.varve.broker.TransactionLog;
import org.apache.kafka.common.message.FindCoordinatorRequestData;
import org.apache.kafka.common.message.FindCoordinatorResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.FindCoordinatorRequest;
import org.apache.kafka.common.requests.FindCoordinatorResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.util.concurrent.CompletableFuture;

/**
 * FindCoordinator: a group's coordinator is the leader of its {@code __consumer_offsets} partition, a
 * transactional id's the leader of its {@code __transaction_state} partition (a single node leads
 * them all); the first lookup creates the topic (COORDINATOR_NOT_AVAILABLE until it exists: the
 * client asks again). v4+ batches several keys.
 */
public final class FindCoordinatorHandler extends AllVersionsHandler {
    private final BrokerContext broker;
    private final OffsetsTopic offsetsTopic;
    private final TransactionLog transactionLog;

    public FindCoordinatorHandler(BrokerContext broker, OffsetsTopic offsetsTopic, TransactionLog transactionLog) {
        super(ApiKeys.FIND_COORDINATOR);
        this.broker = broker;
        this.offsetsTopic = offsetsTopic;
        this.transactionLog = transactionLog;
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        FindCoordinatorRequestData req = ((FindCoordinatorRequest) request).data();
        short version = request.version();
        FindCoordinatorResponseData out = new FindCoordinatorResponseData();
        if (version >= FindCoordinatorRequest.MIN_BATCHED_VERSION) {
            for (String key : req.coordinatorKeys()) {
                out.coordinators().add(coordinator(context, req.keyType(), key));
            }
        } else {
            FindCoordinatorResponseData.Coordinator c = coordinator(context, req.keyType(), req.key());
            out.setErrorCode(c.errorCode()).setNodeId(c.nodeId()).setHost(c.host()).setPort(c.port());
            if (version >= 1) {
                out.setErrorMessage(c.errorMessage());
            }
        }
        return CompletableFuture.completedFuture(new FindCoordinatorResponse(out));
    }

    private FindCoordinatorResponseData.Coordinator coordinator(RequestContext context, byte keyType, String key) {
        FindCoordinatorResponseData.Coordinator c = new FindCoordinatorResponseData.Coordinator()
                .setKey(key).setNodeId(-1).setHost("").setPort(-1);
        boolean transactional = keyType == 1;
        Errors error = switch (keyType) {
            case 0 -> Errors.NONE;
            case 1 -> key == null || key.isEmpty() ? Errors.INVALID_REQUEST : Errors.NONE;
            default -> Errors.INVALID_REQUEST;
        };
        if (error == Errors.NONE && !broker.authorizer().authorize(context, org.apache.kafka.common.acl.AclOperation.DESCRIBE,
                transactional ? org.apache.kafka.common.resource.ResourceType.TRANSACTIONAL_ID
                        : org.apache.kafka.common.resource.ResourceType.GROUP, key)) {
            // DESCRIBE on the group or transactional id, as Kafka checks
            error = transactional ? Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED : Errors.GROUP_AUTHORIZATION_FAILED;
        }
        if (error == Errors.NONE) {
            try {
                if (!(transactional ? transactionLog.ensureExists() : offsetsTopic.ensureExists())) {
                    error = Errors.COORDINATOR_NOT_AVAILABLE; // being created: the client asks again
                }
            } catch (RuntimeException e) {
                error = Errors.COORDINATOR_NOT_AVAILABLE;
            }
        }
        dev.varve.broker.cluster.ClusterReplicaManager cluster = broker.replicaManager().cluster();
        if (error == Errors.NONE && cluster != null) {
            // the coordinator is the leader of the group's __consumer_offsets partition
            var image = cluster.image();
            var topic = image.topic(transactional ? TransactionLog.NAME : OffsetsTopic.NAME);
            int partition = transactional ? transactionLog.partitionFor(key) : offsetsTopic.partitionFor(key);
            var leader = topic.isEmpty() || partition >= topic.get().partitionCount() ? null
                    : image.broker(topic.get().partition(partition).leader()).orElse(null);
            var endpoint = leader == null || leader.fenced() ? java.util.Optional.<dev.varve.metadata.MetadataRecord.Endpoint>empty()
                    : leader.endpointForClientsOf(context.listenerName());
            if (endpoint.isEmpty()) {
                error = Errors.COORDINATOR_NOT_AVAILABLE;
            } else {
                c.setNodeId(leader.id()).setHost(endpoint.get().host()).setPort(endpoint.get().port());
            }
            return c.setErrorCode(error.code()).setErrorMessage(error == Errors.NONE ? null : error.message());
        }
        if (error == Errors.NONE) {
            var endpoint = broker.advertisedEndpoint(context.listenerName());
            if (endpoint.isEmpty()) {
                error = Errors.COORDINATOR_NOT_AVAILABLE;
            } else {
                c.setNodeId(broker.nodeId()).setHost(endpoint.get().host()).setPort(endpoint.get().port());
            }
        }
        return c.setErrorCode(error.code()).setErrorMessage(error == Errors.NONE ? null : error.message());
    }
}
