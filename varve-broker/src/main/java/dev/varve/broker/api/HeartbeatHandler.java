package dev.varve.broker.api;

import dev.varve.broker.group.GroupCoordinator;
import org.apache.kafka.common.message.HeartbeatRequestData;
import org.apache.kafka.common.message.HeartbeatResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.HeartbeatRequest;
import org.apache.kafka.common.requests.HeartbeatResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.util.concurrent.CompletableFuture;

/** Heartbeat: keeps a member's session; REBALANCE_IN_PROGRESS tells it to rejoin. */
public final class HeartbeatHandler extends AllVersionsHandler {
    private final GroupCoordinator coordinator;

    public HeartbeatHandler(GroupCoordinator coordinator) {
        super(ApiKeys.HEARTBEAT);
        this.coordinator = coordinator;
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        HeartbeatRequestData req = ((HeartbeatRequest) request).data();
        var error = coordinator.heartbeat(req.groupId(), req.memberId(), req.groupInstanceId(), req.generationId());
        return CompletableFuture.completedFuture(new HeartbeatResponse(new HeartbeatResponseData().setErrorCode(error.code())));
    }
}
