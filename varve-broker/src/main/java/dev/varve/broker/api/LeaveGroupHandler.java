package dev.varve.broker.api;

import dev.varve.broker.group.GroupCoordinator;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.LeaveGroupRequest;
import org.apache.kafka.common.requests.LeaveGroupResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.util.concurrent.CompletableFuture;

/** LeaveGroup: one member (v0-2) or several by member or instance id (v3+) leave at once. */
public final class LeaveGroupHandler extends AllVersionsHandler {
    private final GroupCoordinator coordinator;

    public LeaveGroupHandler(GroupCoordinator coordinator) {
        super(ApiKeys.LEAVE_GROUP);
        this.coordinator = coordinator;
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        LeaveGroupRequest req = (LeaveGroupRequest) request;
        var results = coordinator.leaveGroup(req.data().groupId(), req.members());
        // before v3 the single member's error is the top-level error (the constructor folds it in)
        return CompletableFuture.completedFuture(new LeaveGroupResponse(results, Errors.NONE, 0, req.version()));
    }
}
