package dev.varve.broker.api;

import dev.varve.broker.group.GroupCoordinator;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.RequestContext;
import org.apache.kafka.common.requests.SyncGroupRequest;
import org.apache.kafka.common.requests.SyncGroupResponse;

import java.util.concurrent.CompletableFuture;

/** SyncGroup: the leader hands in the assignment; every member gets its share once it is stored. */
public final class SyncGroupHandler extends AllVersionsHandler {
    private final GroupCoordinator coordinator;

    public SyncGroupHandler(GroupCoordinator coordinator) {
        super(ApiKeys.SYNC_GROUP);
        this.coordinator = coordinator;
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        SyncGroupRequest req = (SyncGroupRequest) request;
        short version = req.version();
        return coordinator.syncGroup(req.data()).thenApply(data -> {
            if (version < 5) {
                data.setProtocolType(null).setProtocolName(null);
            }
            return new SyncGroupResponse(data);
        });
    }
}
