package dev.varve.broker.api;

import dev.varve.broker.group.ConsumerGroupCoordinator;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.ConsumerGroupHeartbeatRequest;
import org.apache.kafka.common.requests.ConsumerGroupHeartbeatResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.util.concurrent.CompletableFuture;

/** ConsumerGroupHeartbeat (KIP-848): join, stay, reconcile and leave a consumer group, one request for all. */
public final class ConsumerGroupHeartbeatHandler extends AllVersionsHandler {
    private final ConsumerGroupCoordinator groups;

    public ConsumerGroupHeartbeatHandler(ConsumerGroupCoordinator groups) {
        super(ApiKeys.CONSUMER_GROUP_HEARTBEAT);
        this.groups = groups;
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        ConsumerGroupHeartbeatRequest req = (ConsumerGroupHeartbeatRequest) request;
        return groups.heartbeat(req.data(), req.version(), context.clientId(), clientHost(context))
                .thenApply(ConsumerGroupHeartbeatResponse::new);
    }
}
