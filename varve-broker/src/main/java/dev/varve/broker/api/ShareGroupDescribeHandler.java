package dev.varve.broker.api;

import dev.varve.broker.group.ShareGroupCoordinator;
import org.apache.kafka.common.message.ShareGroupDescribeResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.RequestContext;
import org.apache.kafka.common.requests.ShareGroupDescribeRequest;
import org.apache.kafka.common.requests.ShareGroupDescribeResponse;

import java.util.concurrent.CompletableFuture;

/** ShareGroupDescribe (KIP-932): a share group's epochs, state and members with their assignments. */
public final class ShareGroupDescribeHandler extends AllVersionsHandler {
    private static final int ALL_GROUP_OPERATIONS = dev.varve.broker.security.AclAuthorizer.GROUP_OPERATIONS.stream()
            .mapToInt(op -> 1 << op.code()).reduce(0, (a, b) -> a | b);
    private final ShareGroupCoordinator groups;

    public ShareGroupDescribeHandler(ShareGroupCoordinator groups) {
        super(ApiKeys.SHARE_GROUP_DESCRIBE);
        this.groups = groups;
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        ShareGroupDescribeRequest req = (ShareGroupDescribeRequest) request;
        ShareGroupDescribeResponseData out = new ShareGroupDescribeResponseData();
        for (String groupId : req.data().groupIds()) {
            ShareGroupDescribeResponseData.DescribedGroup g = groups.describe(groupId);
            if (req.data().includeAuthorizedOperations() && g.errorCode() == Errors.NONE.code()) {
                g.setAuthorizedOperations(ALL_GROUP_OPERATIONS);
            }
            out.groups().add(g);
        }
        return CompletableFuture.completedFuture(new ShareGroupDescribeResponse(out));
    }
}
