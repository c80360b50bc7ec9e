package dev.varve.broker.api;

import dev.varve.broker.group.ConsumerGroupCoordinator;
import org.apache.kafka.common.message.ConsumerGroupDescribeResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.ConsumerGroupDescribeRequest;
import org.apache.kafka.common.requests.ConsumerGroupDescribeResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.util.concurrent.CompletableFuture;

/**
 * ConsumerGroupDescribe (KIP-848): a consumer group's epochs, state, assignor and members with their
 * current and target assignments. A classic group is GROUP_ID_NOT_FOUND ("not a consumer group"), as
 * in Kafka, which is how the Admin client knows to describe it with DescribeGroups instead.
 */
public final class ConsumerGroupDescribeHandler extends AllVersionsHandler {
    private static final int ALL_GROUP_OPERATIONS = dev.varve.broker.security.AclAuthorizer.GROUP_OPERATIONS.stream()
            .mapToInt(op -> 1 << op.code()).reduce(0, (a, b) -> a | b);
    private final ConsumerGroupCoordinator groups;

    public ConsumerGroupDescribeHandler(ConsumerGroupCoordinator groups) {
        super(ApiKeys.CONSUMER_GROUP_DESCRIBE);
        this.groups = groups;
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        ConsumerGroupDescribeRequest req = (ConsumerGroupDescribeRequest) request;
        ConsumerGroupDescribeResponseData out = new ConsumerGroupDescribeResponseData();
        for (String groupId : req.data().groupIds()) {
            ConsumerGroupDescribeResponseData.DescribedGroup g = groups.describe(groupId);
            if (req.data().includeAuthorizedOperations() && g.errorCode() == Errors.NONE.code()) {
                // Kafka without an authorizer reports every group operation (AuthorizingHandler narrows it with one)
                g.setAuthorizedOperations(ALL_GROUP_OPERATIONS);
            }
            out.groups().add(g);
        }
        return CompletableFuture.completedFuture(new ConsumerGroupDescribeResponse(out));
    }
}
