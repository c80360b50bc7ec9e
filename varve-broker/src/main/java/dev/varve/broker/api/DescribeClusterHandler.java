package dev.varve.broker.api;

import dev.varve.broker.BrokerContext;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.message.DescribeClusterRequestData;
import org.apache.kafka.common.message.DescribeClusterResponseData;
import org.apache.kafka.common.message.DescribeClusterResponseData.DescribeClusterBroker;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.DescribeClusterRequest;
import org.apache.kafka.common.requests.DescribeClusterResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.util.concurrent.CompletableFuture;

/**
 * DescribeCluster: the cluster id, this node as controller, and this broker with the advertised
 * endpoint of the listener the request came in on. Fenced brokers do not exist on a single node
 * ({@code isFenced} is false).
 *
 * <p>Endpoint type (v1+): Varve answers as a broker endpoint, like a Kafka broker: a request for
 * controllers gets MISMATCHED_ENDPOINT_TYPE, an unknown type UNSUPPORTED_ENDPOINT_TYPE.
 *
 * <p>Authorized operations: the schema default (not requested) unless the client asks; then, as
 * Kafka, the operations on the cluster the principal may do (every one without an authorizer; none
 * without DESCRIBE on the cluster).
 */
public final class DescribeClusterHandler extends AllVersionsHandler {
    private static final byte BROKERS = 1;
    private static final byte CONTROLLERS = 2;

    private final BrokerContext broker;

    public DescribeClusterHandler(BrokerContext broker) {
        super(ApiKeys.DESCRIBE_CLUSTER);
        this.broker = broker;
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        DescribeClusterRequestData data = ((DescribeClusterRequest) request).data();
        DescribeClusterResponseData response = new DescribeClusterResponseData()
                .setEndpointType(BROKERS)
                .setClusterId(broker.clusterId())
                .setControllerId(broker.nodeId());
        if (data.endpointType() == CONTROLLERS) {
            response.setErrorCode(Errors.MISMATCHED_ENDPOINT_TYPE.code()).setErrorMessage(
                    "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER");
        } else if (data.endpointType() != BROKERS) {
            response.setErrorCode(Errors.UNSUPPORTED_ENDPOINT_TYPE.code())
                    .setErrorMessage("Unsupported endpoint type " + data.endpointType());
        } else {
            response.setErrorCode(Errors.NONE.code());
            dev.varve.broker.cluster.ClusterReplicaManager cluster = broker.replicaManager().cluster();
            if (cluster == null) {
                broker.advertisedEndpoint(context.listenerName()).ifPresent(ep -> response.brokers().add(
                        new DescribeClusterBroker().setBrokerId(broker.nodeId()).setHost(ep.host()).setPort(ep.port())
                                .setRack(broker.rack()).setIsFenced(false)));
            } else {
                // registered brokers; fenced ones only when asked for (v2+), as in Kafka
                for (dev.varve.metadata.BrokerRegistration b : cluster.image().brokers().values()) {
                    if (b.fenced() && !data.includeFencedBrokers()) {
                        continue;
                    }
                    b.endpointForClientsOf(context.listenerName()).ifPresent(ep ->
                            response.brokers().add(new DescribeClusterBroker().setBrokerId(b.id()).setHost(ep.host())
                                    .setPort(ep.port()).setRack(b.rack()).setIsFenced(b.fenced())));
                }
            }
            if (data.includeClusterAuthorizedOperations()) {
                dev.varve.broker.security.AclAuthorizer auth = broker.authorizer();
                response.setClusterAuthorizedOperations(auth.authorizeCluster(context, AclOperation.DESCRIBE)
                        ? auth.authorizedOperations(context, org.apache.kafka.common.resource.ResourceType.CLUSTER,
                        dev.varve.metadata.Acls.CLUSTER_NAME, dev.varve.broker.security.AclAuthorizer.CLUSTER_OPERATIONS) : 0);
            }
        }
        return CompletableFuture.completedFuture(new DescribeClusterResponse(response));
    }
}
