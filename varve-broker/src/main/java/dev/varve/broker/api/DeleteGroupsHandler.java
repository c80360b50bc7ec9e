package dev.varve.broker.api;

import dev.varve.broker.group.GroupOffsets;
import org.apache.kafka.common.message.DeleteGroupsResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.DeleteGroupsRequest;
import org.apache.kafka.common.requests.DeleteGroupsResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.util.concurrent.CompletableFuture;

/** DeleteGroups: removes empty groups and their committed offsets (NON_EMPTY_GROUP while members remain). */
public final class DeleteGroupsHandler extends AllVersionsHandler {
    private final GroupOffsets groups;

    public DeleteGroupsHandler(GroupOffsets groups) {
        super(ApiKeys.DELETE_GROUPS);
        this.groups = groups;
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        DeleteGroupsRequest req = (DeleteGroupsRequest) request;
        return groups.deleteGroups(req.data().groupsNames()).thenApply(results -> {
            DeleteGroupsResponseData out = new DeleteGroupsResponseData();
            results.forEach((id, error) -> out.results().add(
                    new DeleteGroupsResponseData.DeletableGroupResult().setGroupId(id).setErrorCode(error.code())));
            return new DeleteGroupsResponse(out);
        });
    }
}
