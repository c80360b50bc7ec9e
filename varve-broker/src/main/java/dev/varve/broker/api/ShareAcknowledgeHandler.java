package dev.varve.broker.api;

import dev.varve.broker.BrokerContext;
import dev.varve.broker.share.SharePartition;
import dev.varve.broker.share.SharePartitionManager;
import dev.varve.broker.share.ShareSessions;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.message.ShareAcknowledgeRequestData;
import org.apache.kafka.common.message.ShareAcknowledgeResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.RequestContext;
import org.apache.kafka.common.requests.ShareAcknowledgeRequest;
import org.apache.kafka.common.requests.ShareAcknowledgeResponse;
import org.apache.kafka.common.resource.ResourceType;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * ShareAcknowledge (KIP-932, v1-2): acknowledgements outside a fetch, in the member's share session
 * (epoch 0 is INVALID_SHARE_SESSION_EPOCH: only a ShareFetch opens a session); -1 acknowledges and closes
 * the session. Each partition's ErrorCode is its acknowledgement's outcome; every change is persisted
 * before the answer.
 */
public final class ShareAcknowledgeHandler extends AllVersionsHandler {
    private final BrokerContext broker;
    private final SharePartitionManager shares;
    private final ShareFetchHandler fetch;

    public ShareAcknowledgeHandler(BrokerContext broker, SharePartitionManager shares, ShareFetchHandler fetch) {
        super(ApiKeys.SHARE_ACKNOWLEDGE);
        this.broker = broker;
        this.shares = shares;
        this.fetch = fetch;
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        ShareAcknowledgeRequest req = (ShareAcknowledgeRequest) request;
        ShareAcknowledgeRequestData d = req.data();
        String group = d.groupId();
        String member = d.memberId();
        if (group == null || group.isEmpty() || member == null || member.isEmpty()) {
            return done(top(Errors.INVALID_REQUEST, null));
        }
        if (!broker.authorizer().authorize(context, AclOperation.READ, ResourceType.GROUP, group)) {
            return done(top(Errors.GROUP_AUTHORIZATION_FAILED, null));
        }
        int epoch = d.shareSessionEpoch();
        if (epoch != ShareSessions.FINAL_EPOCH) {
            Errors m = shares.membership().checkMember(group, member);
            if (m != Errors.NONE) {
                return done(top(m, group));
            }
        }
        ShareSessions.Key key = new ShareSessions.Key(group, member);
        Errors session = shares.sessions().acknowledge(key, epoch);
        if (session != Errors.NONE) {
            return done(top(session, group));
        }
        ShareAcknowledgeResponseData data = top(Errors.NONE, group);
        for (ShareAcknowledgeRequestData.AcknowledgeTopic t : d.topics()) {
            ShareAcknowledgeResponseData.ShareAcknowledgeTopicResponse tr =
                    new ShareAcknowledgeResponseData.ShareAcknowledgeTopicResponse().setTopicId(t.topicId());
            String name = broker.topics().get(t.topicId()).map(dev.varve.broker.TopicRegistry.TopicInfo::name).orElse(null);
            for (ShareAcknowledgeRequestData.AcknowledgePartition p : t.partitions()) {
                List<SharePartition.AckBatch> batches = new ArrayList<>(p.acknowledgementBatches().size());
                for (ShareAcknowledgeRequestData.AcknowledgementBatch b : p.acknowledgementBatches()) {
                    batches.add(new SharePartition.AckBatch(b.firstOffset(), b.lastOffset(), ShareFetchHandler.types(b.acknowledgeTypes())));
                }
                Errors error = batches.isEmpty() ? Errors.NONE : fetch.acknowledge(context, group, member,
                        new TopicIdPartition(t.topicId(), p.partitionIndex(), name), batches, req.version() >= 2);
                tr.partitions().add(new ShareAcknowledgeResponseData.PartitionData()
                        .setPartitionIndex(p.partitionIndex()).setErrorCode(error.code()));
            }
            data.responses().add(tr);
        }
        if (epoch == ShareSessions.FINAL_EPOCH) {
            shares.releaseSession(group, member);
        }
        return done(data);
    }

    /** A response with its top-level error and the group's lock duration (the broker's before the group is known). */
    private ShareAcknowledgeResponseData top(Errors error, String group) {
        return new ShareAcknowledgeResponseData().setErrorCode(error.code())
                .setAcquisitionLockTimeoutMs((int) (group == null ? shares.config().partition().lockDurationMs()
                        : shares.lockDurationMs(group)));
    }

    private static CompletableFuture<AbstractResponse> done(ShareAcknowledgeResponseData data) {
        return CompletableFuture.completedFuture(new ShareAcknowledgeResponse(data));
    }
}
