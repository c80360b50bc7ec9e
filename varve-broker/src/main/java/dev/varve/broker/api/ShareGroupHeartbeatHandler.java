package dev.varve.broker.api;

import dev.varve.broker.group.ShareGroupCoordinator;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.RequestContext;
import org.apache.kafka.common.requests.ShareGroupHeartbeatRequest;
import org.apache.kafka.common.requests.ShareGroupHeartbeatResponse;

import java.util.concurrent.CompletableFuture;

/** ShareGroupHeartbeat (KIP-932): join, stay in and leave a share group, and learn the partitions to fetch from. */
public final class ShareGroupHeartbeatHandler extends AllVersionsHandler {
    private final ShareGroupCoordinator groups;

    public ShareGroupHeartbeatHandler(ShareGroupCoordinator groups) {
        super(ApiKeys.SHARE_GROUP_HEARTBEAT);
        this.groups = groups;
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        ShareGroupHeartbeatRequest req = (ShareGroupHeartbeatRequest) request;
        return groups.heartbeat(req.data(), context.clientId(), clientHost(context)).thenApply(ShareGroupHeartbeatResponse::new);
    }
}
