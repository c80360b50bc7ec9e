package dev.varve.broker.api;

import dev.varve.broker.BrokerContext;
import dev.varve.broker.TopicRegistry.TopicInfo;
import dev.varve.broker.share.SharePartition;
import dev.varve.broker.share.SharePartitionManager;
import dev.varve.broker.share.ShareSessions;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.message.ShareFetchRequestData;
import org.apache.kafka.common.message.ShareFetchResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.RequestContext;
import org.apache.kafka.common.requests.ShareFetchRequest;
import org.apache.kafka.common.requests.ShareFetchResponse;
import org.apache.kafka.common.resource.ResourceType;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * ShareFetch (KIP-932, v1-2): the share-session step ({@link ShareSessions}), the piggy-backed
 * acknowledgements (each partition's AcknowledgeErrorCode), then records acquired for the member from
 * every partition of its session. When nothing can be acquired the request waits in the fetch
 * purgatory, woken by appends to its partitions and by records becoming available again (release, lock
 * expiry, a member leaving), and is answered as soon as something is acquired or at MaxWaitMs: no
 * thread waits. A final-epoch (-1) request only acknowledges and closes the session (the member's
 * remaining records go back without counting a delivery).
 */
public final class ShareFetchHandler extends AllVersionsHandler {
    /** MaxRecords when a request gives none that is positive (the share consumer's max.poll.records default). */
    static final int DEFAULT_MAX_RECORDS = 500;
    /** ShareAcquireMode record_limit (v2): exactly MaxRecords at most; 0 is batch_optimized. */
    static final byte RECORD_LIMIT = 1;

    private final BrokerContext broker;
    private final SharePartitionManager shares;

    public ShareFetchHandler(BrokerContext broker, SharePartitionManager shares) {
        super(ApiKeys.SHARE_FETCH);
        this.broker = broker;
        this.shares = shares;
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        ShareFetchRequest req = (ShareFetchRequest) request;
        ShareFetchRequestData d = req.data();
        short version = req.version();
        String group = d.groupId();
        String member = d.memberId();
        if (group == null || group.isEmpty() || member == null || member.isEmpty()) {
            return error(Errors.INVALID_REQUEST);
        }
        if (!broker.authorizer().authorize(context, AclOperation.READ, ResourceType.GROUP, group)) {
            return error(Errors.GROUP_AUTHORIZATION_FAILED);
        }
        int epoch = d.shareSessionEpoch();
        List<TopicIdPartition> requested = new ArrayList<>();
        Map<TopicIdPartition, List<SharePartition.AckBatch>> acks = new LinkedHashMap<>();
        for (ShareFetchRequestData.FetchTopic t : d.topics()) {
            for (ShareFetchRequestData.FetchPartition p : t.partitions()) {
                TopicIdPartition tip = tip(t.topicId(), p.partitionIndex());
                requested.add(tip);
                if (!p.acknowledgementBatches().isEmpty()) {
                    List<SharePartition.AckBatch> batches = new ArrayList<>(p.acknowledgementBatches().size());
                    for (ShareFetchRequestData.AcknowledgementBatch b : p.acknowledgementBatches()) {
                        batches.add(new SharePartition.AckBatch(b.firstOffset(), b.lastOffset(), types(b.acknowledgeTypes())));
                    }
                    acks.put(tip, batches);
                }
            }
        }
        if (epoch == ShareSessions.INITIAL_EPOCH && !acks.isEmpty()) {
            // acknowledgements need the session the records were fetched in: an opening fetch cannot carry any
            return error(Errors.INVALID_REQUEST);
        }
        ShareSessions.Key key = new ShareSessions.Key(group, member);
        ShareSessions.View view = null;
        if (epoch == ShareSessions.FINAL_EPOCH) {
            if (!shares.sessions().exists(key)) {
                return error(Errors.SHARE_SESSION_NOT_FOUND);
            }
        } else {
            Errors m = shares.membership().checkMember(group, member);
            if (m != Errors.NONE) {
                return error(m);
            }
            List<TopicIdPartition> forgotten = new ArrayList<>();
            for (ShareFetchRequestData.ForgottenTopic f : d.forgottenTopicsData()) {
                for (Integer p : f.partitions()) {
                    forgotten.add(tip(f.topicId(), p));
                }
            }
            view = epoch == ShareSessions.INITIAL_EPOCH ? shares.sessions().open(key, requested)
                    : shares.sessions().next(key, epoch, requested, forgotten);
            if (view.error() != Errors.NONE) {
                return error(view.error());
            }
        }

        // acknowledgements first: what they release may be fetched at once
        Map<TopicIdPartition, ShareFetchResponseData.PartitionData> acked = new LinkedHashMap<>();
        for (TopicIdPartition tip : requested) {
            acked.put(tip, empty(tip.partition()));
        }
        for (Map.Entry<TopicIdPartition, List<SharePartition.AckBatch>> e : acks.entrySet()) {
            ShareFetchResponseData.PartitionData pd = acked.get(e.getKey());
            Errors error = acknowledge(context, group, member, e.getKey(), e.getValue(), version >= 2);
            pd.setAcknowledgeErrorCode(error.code());
        }
        if (epoch == ShareSessions.FINAL_EPOCH) {
            shares.releaseSession(group, member);
            return done(response(group, acked, Map.of()));
        }
        List<TopicIdPartition> session = view.partitions();
        if (d.isRenewAck() || session.isEmpty()) {
            // a renewing request fetches nothing new (KIP-1222); a session of no partition has nothing to wait for
            return done(response(group, acked, Map.of()));
        }
        Read first = read(context, d, version, group, member, session);
        CompletableFuture<AbstractResponse> result = new CompletableFuture<>();
        if (first.acquired() || first.errors() || d.maxWaitMs() <= 0) {
            result.complete(response(group, acked, first.partitions()));
            return result;
        }
        List<TopicPartition> watched = new ArrayList<>();
        for (TopicIdPartition tip : session) {
            if (tip.topic() != null) {
                watched.add(tip.topicPartition());
            }
        }
        AtomicBoolean answered = new AtomicBoolean();
        broker.replicaManager().purgatory().watch(watched, d.maxWaitMs(), () -> {
            try {
                Read again = read(context, d, version, group, member, session);
                if (!again.acquired() && !again.errors()) {
                    return false;
                }
                if (answered.compareAndSet(false, true)) {
                    result.complete(response(group, acked, again.partitions()));
                }
            } catch (RuntimeException e) {
                result.completeExceptionally(e);
            }
            return true;
        }, () -> {
            if (answered.compareAndSet(false, true)) {
                try {
                    result.complete(response(group, acked, read(context, d, version, group, member, session).partitions()));
                } catch (RuntimeException e) {
                    result.completeExceptionally(e);
                }
            }
        });
        return result;
    }

    private record Read(Map<TopicIdPartition, ShareFetchResponseData.PartitionData> partitions, boolean acquired, boolean errors) {
    }

    /** One pass over the session's partitions: acquire what is available, within MaxBytes and MaxRecords. */
    private Read read(RequestContext context, ShareFetchRequestData d, short version, String group, String member,
                      List<TopicIdPartition> session) {
        long remainingBytes = d.maxBytes() <= 0 ? Integer.MAX_VALUE : d.maxBytes();
        int remainingRecords = d.maxRecords() > 0 ? d.maxRecords() : DEFAULT_MAX_RECORDS;
        boolean strict = version >= 2 && d.shareAcquireMode() == RECORD_LIMIT;
        Map<TopicIdPartition, ShareFetchResponseData.PartitionData> out = new LinkedHashMap<>();
        boolean acquired = false;
        boolean errors = false;
        long total = 0;
        for (TopicIdPartition tip : session) {
            ShareFetchResponseData.PartitionData pd = empty(tip.partition());
            Errors error = check(context, tip);
            if (error != Errors.NONE) {
                out.put(tip, pd.setErrorCode(error.code()));
                errors = true;
                continue;
            }
            if (remainingRecords <= 0) {
                continue;
            }
            SharePartitionManager.PartitionFetch f;
            try {
                f = shares.fetch(group, tip.topicId(), new TopicPartition(topicName(tip), tip.partition()), member,
                        (int) Math.min(Integer.MAX_VALUE, remainingBytes), total == 0, remainingRecords, strict);
            } catch (RuntimeException e) {
                out.put(tip, pd.setErrorCode(Errors.forException(e).code()));
                errors = true;
                continue;
            }
            if (f.error() != Errors.NONE) {
                out.put(tip, pd.setErrorCode(f.error().code()));
                errors = true;
                continue;
            }
            if (f.acquired().isEmpty()) {
                continue;
            }
            List<ShareFetchResponseData.AcquiredRecords> ranges = new ArrayList<>(f.acquired().size());
            for (SharePartition.Acquired a : f.acquired()) {
                ranges.add(new ShareFetchResponseData.AcquiredRecords().setFirstOffset(a.firstOffset())
                        .setLastOffset(a.lastOffset()).setDeliveryCount(a.deliveryCount()));
                remainingRecords -= (int) Math.min(Integer.MAX_VALUE, a.lastOffset() - a.firstOffset() + 1);
            }
            pd.setRecords(f.records()).setAcquiredRecords(ranges);
            out.put(tip, pd);
            acquired = true;
            total += f.bytes();
            remainingBytes = Math.max(0, remainingBytes - f.bytes());
        }
        return new Read(out, acquired, errors);
    }

    /** The error of a partition the member may not read or that does not exist; NONE when it can be read. */
    private Errors check(RequestContext context, TopicIdPartition tip) {
        Optional<TopicInfo> info = broker.topics().get(tip.topicId());
        if (info.isEmpty()) {
            return Errors.UNKNOWN_TOPIC_ID;
        }
        if (!broker.authorizer().authorize(context, AclOperation.READ, ResourceType.TOPIC, info.get().name())) {
            return Errors.TOPIC_AUTHORIZATION_FAILED;
        }
        if (tip.partition() < 0 || tip.partition() >= info.get().partitions()) {
            return Errors.UNKNOWN_TOPIC_OR_PARTITION;
        }
        return Errors.NONE;
    }

    /** Checks and applies one partition's acknowledgements; the error to answer for them. */
    Errors acknowledge(RequestContext context, String group, String member, TopicIdPartition tip,
                       List<SharePartition.AckBatch> batches, boolean renewAllowed) {
        Errors error = check(context, tip);
        if (error != Errors.NONE) {
            return error;
        }
        error = SharePartition.validate(batches, renewAllowed);
        if (error != Errors.NONE) {
            return error;
        }
        try {
            return shares.acknowledge(group, tip.topicId(), new TopicPartition(topicName(tip), tip.partition()), member, batches);
        } catch (RuntimeException e) {
            return Errors.forException(e);
        }
    }

    private String topicName(TopicIdPartition tip) {
        return broker.topics().get(tip.topicId()).map(TopicInfo::name).orElseThrow(
                () -> new org.apache.kafka.common.errors.UnknownTopicIdException("unknown topic id " + tip.topicId()));
    }

    private TopicIdPartition tip(Uuid topicId, int partition) {
        String name = broker.topics().get(topicId).map(TopicInfo::name).orElse(null);
        return new TopicIdPartition(topicId, partition, name);
    }

    private ShareFetchResponse response(String group, Map<TopicIdPartition, ShareFetchResponseData.PartitionData> acked,
                                        Map<TopicIdPartition, ShareFetchResponseData.PartitionData> fetched) {
        LinkedHashMap<TopicIdPartition, ShareFetchResponseData.PartitionData> all = new LinkedHashMap<>();
        for (Map.Entry<TopicIdPartition, ShareFetchResponseData.PartitionData> e : acked.entrySet()) {
            all.put(e.getKey(), e.getValue().duplicate());
        }
        for (Map.Entry<TopicIdPartition, ShareFetchResponseData.PartitionData> e : fetched.entrySet()) {
            ShareFetchResponseData.PartitionData pd = e.getValue();
            ShareFetchResponseData.PartitionData ack = all.get(e.getKey());
            if (ack != null) {
                pd.setAcknowledgeErrorCode(ack.acknowledgeErrorCode());
            }
            all.put(e.getKey(), pd);
        }
        return ShareFetchResponse.of(Errors.NONE, 0, all, List.of(), (int) shares.lockDurationMs(group));
    }

    private int lockMs() {
        return (int) shares.config().partition().lockDurationMs();
    }

    /** A response with a top-level error only. */
    private CompletableFuture<AbstractResponse> error(Errors error) {
        return CompletableFuture.completedFuture(ShareFetchResponse.of(error, 0, new LinkedHashMap<>(), List.of(), lockMs()));
    }

    private CompletableFuture<AbstractResponse> done(ShareFetchResponse response) {
        return CompletableFuture.completedFuture(response);
    }

    private static ShareFetchResponseData.PartitionData empty(int partition) {
        return new ShareFetchResponseData.PartitionData().setPartitionIndex(partition).setErrorCode(Errors.NONE.code())
                .setAcknowledgeErrorCode(Errors.NONE.code()).setRecords(MemoryRecords.EMPTY);
    }

    static byte[] types(List<Byte> types) {
        byte[] out = new byte[types.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = types.get(i);
        }
        return out;
    }
}
