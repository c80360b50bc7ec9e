package dev.varve.broker.api;

import dev.varve.broker.group.GroupOffsets;
import org.apache.kafka.common.message.DescribeGroupsResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.DescribeGroupsRequest;
import org.apache.kafka.common.requests.DescribeGroupsResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.util.concurrent.CompletableFuture;

/**
 * DescribeGroups: state, protocol and members (with subscriptions and assignments once Stable). A
 * group that does not exist is reported as Dead before v6 and as GROUP_ID_NOT_FOUND from v6 on.
 */
public final class DescribeGroupsHandler extends AllVersionsHandler {
    /** The first version that reports unknown groups with an error instead of the Dead state. */
    private static final short GROUP_NOT_FOUND_MIN_VERSION = 6;
    private static final int ALL_GROUP_OPERATIONS = dev.varve.broker.security.AclAuthorizer.GROUP_OPERATIONS.stream()
            .mapToInt(op -> 1 << op.code()).reduce(0, (a, b) -> a | b);
    private final GroupOffsets groups;

    public DescribeGroupsHandler(GroupOffsets groups) {
        super(ApiKeys.DESCRIBE_GROUPS);
        this.groups = groups;
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        DescribeGroupsRequest req = (DescribeGroupsRequest) request;
        DescribeGroupsResponseData out = new DescribeGroupsResponseData();
        for (String groupId : req.data().groups()) {
            DescribeGroupsResponseData.DescribedGroup g = groups.describe(groupId);
            if (req.version() < GROUP_NOT_FOUND_MIN_VERSION && g.errorCode() == Errors.GROUP_ID_NOT_FOUND.code()) {
                // a group of another type (a KIP-848 consumer group): Dead, as for an unknown one
                g = DescribeGroupsResponse.groupMetadata(groupId, Errors.NONE, "Dead", "", "", java.util.List.of(),
                        DescribeGroupsResponse.AUTHORIZED_OPERATIONS_OMITTED);
            } else if (req.version() >= GROUP_NOT_FOUND_MIN_VERSION && "Dead".equals(g.groupState())) {
                g = DescribeGroupsResponse.groupError(groupId, Errors.GROUP_ID_NOT_FOUND,
                        "Group " + groupId + " not found.");
            }
            if (req.data().includeAuthorizedOperations() && g.errorCode() == Errors.NONE.code()) {
                // Kafka without an authorizer reports every group operation (AuthorizingHandler narrows it with one)
                g.setAuthorizedOperations(ALL_GROUP_OPERATIONS);
            }
            out.groups().add(g);
        }
        return CompletableFuture.completedFuture(new DescribeGroupsResponse(out));
    }
}
