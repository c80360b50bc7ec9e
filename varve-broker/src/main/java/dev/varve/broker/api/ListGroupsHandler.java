package dev.varve.broker.api;

import dev.varve.broker.group.GroupOffsets;
import org.apache.kafka.common.message.ListGroupsRequestData;
import org.apache.kafka.common.message.ListGroupsResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.ListGroupsRequest;
import org.apache.kafka.common.requests.ListGroupsResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.util.concurrent.CompletableFuture;

/** ListGroups: every live group, filtered by state (v4+) and type (v5+; all groups are "classic"). */
public final class ListGroupsHandler extends AllVersionsHandler {
    private final GroupOffsets groups;

    public ListGroupsHandler(GroupOffsets groups) {
        super(ApiKeys.LIST_GROUPS);
        this.groups = groups;
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        ListGroupsRequestData req = ((ListGroupsRequest) request).data();
        ListGroupsResponseData out = new ListGroupsResponseData()
                .setGroups(groups.list(req.statesFilter(), req.typesFilter()));
        return CompletableFuture.completedFuture(new ListGroupsResponse(out));
    }
}
