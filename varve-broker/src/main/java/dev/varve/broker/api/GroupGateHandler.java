package dev.varve.broker.api;

import dev.varve.broker.group.CoordinatorGate;
import org.apache.kafka.common.message.DeleteGroupsRequestData;
import org.apache.kafka.common.message.DescribeGroupsRequestData;
import org.apache.kafka.common.message.HeartbeatRequestData;
import org.apache.kafka.common.message.JoinGroupRequestData;
import org.apache.kafka.common.message.LeaveGroupRequestData;
import org.apache.kafka.common.message.OffsetCommitRequestData;
import org.apache.kafka.common.message.OffsetDeleteRequestData;
import org.apache.kafka.common.message.OffsetFetchRequestData;
import org.apache.kafka.common.message.SyncGroupRequestData;
import org.apache.kafka.common.message.TxnOffsetCommitRequestData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * Cluster mode: a group request reaches the group handlers only if this broker coordinates every group
 * it names (see {@link CoordinatorGate}); otherwise the whole request gets NOT_COORDINATOR or
 * COORDINATOR_LOAD_IN_PROGRESS, which make clients look the coordinator up again or retry.
 */
public final class GroupGateHandler implements ApiHandler {
    private final ApiHandler delegate;
    private final CoordinatorGate gate;

    public GroupGateHandler(ApiHandler delegate, CoordinatorGate gate) {
        this.delegate = delegate;
        this.gate = gate;
    }

    /** The APIs whose requests name groups. */
    public static boolean gates(ApiKeys key) {
        return switch (key) {
            case JOIN_GROUP, SYNC_GROUP, HEARTBEAT, LEAVE_GROUP, OFFSET_COMMIT, OFFSET_FETCH, OFFSET_DELETE,
                 DESCRIBE_GROUPS, DELETE_GROUPS, TXN_OFFSET_COMMIT, CONSUMER_GROUP_HEARTBEAT, CONSUMER_GROUP_DESCRIBE,
                 SHARE_GROUP_HEARTBEAT, SHARE_GROUP_DESCRIBE -> true;
            default -> false;
        };
    }

    @Override
    public ApiKeys apiKey() {
        return delegate.apiKey();
    }

    @Override
    public short minVersion() {
        return delegate.minVersion();
    }

    @Override
    public short maxVersion() {
        return delegate.maxVersion();
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        for (String groupId : groupIds(request.data())) {
            Errors e = groupId == null || groupId.isEmpty() ? Errors.NONE : gate.check(groupId);
            if (e != Errors.NONE) {
                return CompletableFuture.completedFuture(request.getErrorResponse(0, e.exception()));
            }
        }
        return delegate.handle(context, request);
    }

    private static List<String> groupIds(ApiMessage data) {
        List<String> ids = new ArrayList<>();
        if (data instanceof JoinGroupRequestData d) {
            ids.add(d.groupId());
        } else if (data instanceof SyncGroupRequestData d) {
            ids.add(d.groupId());
        } else if (data instanceof HeartbeatRequestData d) {
            ids.add(d.groupId());
        } else if (data instanceof LeaveGroupRequestData d) {
            ids.add(d.groupId());
        } else if (data instanceof OffsetCommitRequestData d) {
            ids.add(d.groupId());
        } else if (data instanceof TxnOffsetCommitRequestData d) {
            ids.add(d.groupId());
        } else if (data instanceof OffsetDeleteRequestData d) {
            ids.add(d.groupId());
        } else if (data instanceof OffsetFetchRequestData d) {
            ids.add(d.groupId());
            d.groups().forEach(g -> ids.add(g.groupId()));
        } else if (data instanceof DescribeGroupsRequestData d) {
            ids.addAll(d.groups());
        } else if (data instanceof DeleteGroupsRequestData d) {
            ids.addAll(d.groupsNames());
        } else if (data instanceof org.apache.kafka.common.message.ConsumerGroupHeartbeatRequestData d) {
            ids.add(d.groupId());
        } else if (data instanceof org.apache.kafka.common.message.ConsumerGroupDescribeRequestData d) {
            ids.addAll(d.groupIds());
        } else if (data instanceof org.apache.kafka.common.message.ShareGroupHeartbeatRequestData d) {
            ids.add(d.groupId());
        } else if (data instanceof org.apache.kafka.common.message.ShareGroupDescribeRequestData d) {
            ids.addAll(d.groupIds());
        }
        return ids;
    }
}
