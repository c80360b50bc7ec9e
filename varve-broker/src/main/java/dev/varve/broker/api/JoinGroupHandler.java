package dev.varve.broker.api;

import dev.varve.broker.group.GroupCoordinator;
import org.apache.kafka.common.message.JoinGroupResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.JoinGroupRequest;
import org.apache.kafka.common.requests.JoinGroupResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.util.concurrent.CompletableFuture;

/** JoinGroup: answered when the group's join phase completes (or at once for an error or a rejoin). */
public final class JoinGroupHandler extends AllVersionsHandler {
    private final GroupCoordinator coordinator;

    public JoinGroupHandler(GroupCoordinator coordinator) {
        super(ApiKeys.JOIN_GROUP);
        this.coordinator = coordinator;
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        JoinGroupRequest req = (JoinGroupRequest) request;
        short version = req.version();
        return coordinator.joinGroup(req.data(), version, context.clientId(), clientHost(context))
                .thenApply(data -> {
                    if (version < 7 && data.protocolName() == null) {
                        data.setProtocolName(""); // not nullable before v7
                    }
                    if (version < 9) {
                        data.setSkipAssignment(false);
                    }
                    return new JoinGroupResponse(data, version);
                });
    }
}
