package dev.varve.broker.api;

import dev.varve.broker.BrokerContext;
import dev.varve.broker.TopicRegistry.TopicInfo;
import dev.varve.broker.group.GroupOffsets;
import dev.varve.broker.group.GroupRecords;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.message.OffsetFetchRequestData;
import org.apache.kafka.common.message.OffsetFetchResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.OffsetFetchRequest;
import org.apache.kafka.common.requests.OffsetFetchResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;

/**
 * OffsetFetch: committed offsets of the named partitions (-1 and empty metadata where none is
 * committed) or of all partitions (topics null); one group (v0-7) or several (v8+); topics named
 * (v0-9) or identified (v10+, unknown ids get UNKNOWN_TOPIC_ID). With require_stable (v7+), a
 * partition that a transaction has a pending offset for answers UNSTABLE_OFFSET_COMMIT (the client
 * retries); without it, the committed offset.
 */
public final class OffsetFetchHandler extends AllVersionsHandler {
    private final BrokerContext broker;
    private final GroupOffsets offsets;

    public OffsetFetchHandler(BrokerContext broker, GroupOffsets offsets) {
        super(ApiKeys.OFFSET_FETCH);
        this.broker = broker;
        this.offsets = offsets;
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        OffsetFetchRequest req = (OffsetFetchRequest) request;
        boolean byId = OffsetFetchRequest.useTopicIds(req.version());
        List<OffsetFetchResponseData.OffsetFetchResponseGroup> groups = new ArrayList<>();
        boolean requireStable = req.data().requireStable();
        for (OffsetFetchRequestData.OffsetFetchRequestGroup g : req.groups()) {
            if (!authorizer().authorize(context, AclOperation.DESCRIBE, ResourceType.GROUP, g.groupId())) {
                groups.add(new OffsetFetchResponseData.OffsetFetchResponseGroup().setGroupId(g.groupId())
                        .setErrorCode(Errors.GROUP_AUTHORIZATION_FAILED.code()));
                continue;
            }
            if (req.version() >= 9) { // a member of a KIP-848 group names itself and its epoch
                Errors member = offsets.validateFetch(g.groupId(), g.memberId(), g.memberEpoch());
                if (member != Errors.NONE) {
                    groups.add(new OffsetFetchResponseData.OffsetFetchResponseGroup().setGroupId(g.groupId())
                            .setErrorCode(member.code()));
                    continue;
                }
            }
            groups.add(OffsetFetchRequest.requestAllOffsets(g) ? all(context, g.groupId(), byId, requireStable)
                    : some(context, g, byId, requireStable));
        }
        return CompletableFuture.completedFuture(new OffsetFetchResponse.Builder(groups).build(req.version()));
    }

    private dev.varve.broker.security.AclAuthorizer authorizer() {
        return broker.authorizer();
    }

    /** DESCRIBE on the topic: without it a topic's offsets are not the principal's to see, as in Kafka. */
    private boolean describable(RequestContext context, String topic) {
        return authorizer().authorize(context, AclOperation.DESCRIBE, ResourceType.TOPIC, topic);
    }

    private OffsetFetchResponseData.OffsetFetchResponseGroup some(RequestContext context, OffsetFetchRequestData.OffsetFetchRequestGroup g,
                                                                  boolean byId, boolean requireStable) {
        OffsetFetchResponseData.OffsetFetchResponseGroup out =
                new OffsetFetchResponseData.OffsetFetchResponseGroup().setGroupId(g.groupId());
        List<TopicPartition> wanted = new ArrayList<>();
        for (OffsetFetchRequestData.OffsetFetchRequestTopics t : g.topics()) {
            String name = byId ? broker.topics().get(t.topicId()).map(TopicInfo::name).orElse(null) : t.name();
            if (name != null && describable(context, name)) {
                t.partitionIndexes().forEach(p -> wanted.add(new TopicPartition(name, p)));
            }
        }
        GroupOffsets.Fetched fetched = offsets.fetch(g.groupId(), wanted, requireStable);
        Map<TopicPartition, GroupRecords.OffsetValue> committed = fetched.committed();
        for (OffsetFetchRequestData.OffsetFetchRequestTopics t : g.topics()) {
            String name = byId ? broker.topics().get(t.topicId()).map(TopicInfo::name).orElse(null) : t.name();
            OffsetFetchResponseData.OffsetFetchResponseTopics rt = topic(t.name(), t.topicId(), byId);
            for (int p : t.partitionIndexes()) {
                if (name == null) {
                    rt.partitions().add(partition(p, null).setErrorCode(Errors.UNKNOWN_TOPIC_ID.code()));
                } else if (!describable(context, name)) {
                    rt.partitions().add(partition(p, null).setErrorCode(Errors.TOPIC_AUTHORIZATION_FAILED.code()));
                } else {
                    TopicPartition tp = new TopicPartition(name, p);
                    rt.partitions().add(fetched.unstable().contains(tp) ? unstable(p) : partition(p, committed.get(tp)));
                }
            }
            out.topics().add(rt);
        }
        return out;
    }

    private OffsetFetchResponseData.OffsetFetchResponseGroup all(RequestContext context, String groupId, boolean byId,
                                                                 boolean requireStable) {
        OffsetFetchResponseData.OffsetFetchResponseGroup out =
                new OffsetFetchResponseData.OffsetFetchResponseGroup().setGroupId(groupId);
        Map<String, Map<Integer, GroupRecords.OffsetValue>> byTopic = new TreeMap<>();
        GroupOffsets.Fetched fetched = offsets.fetch(groupId, null, requireStable);
        fetched.committed().forEach((tp, v) ->
                byTopic.computeIfAbsent(tp.topic(), t -> new TreeMap<>()).put(tp.partition(), v));
        byTopic.forEach((name, partitions) -> {
            Optional<TopicInfo> info = broker.topics().get(name);
            if (byId && info.isEmpty()) {
                return; // a deleted topic has no id to name it by
            }
            if (!describable(context, name)) {
                return; // left out, as Kafka does
            }
            OffsetFetchResponseData.OffsetFetchResponseTopics rt =
                    topic(name, info.map(TopicInfo::id).orElse(Uuid.ZERO_UUID), byId);
            partitions.forEach((p, v) -> rt.partitions().add(
                    fetched.unstable().contains(new TopicPartition(name, p)) ? unstable(p) : partition(p, v)));
            out.topics().add(rt);
        });
        return out;
    }

    private static OffsetFetchResponseData.OffsetFetchResponseTopics topic(String name, Uuid id, boolean byId) {
        OffsetFetchResponseData.OffsetFetchResponseTopics rt = new OffsetFetchResponseData.OffsetFetchResponseTopics();
        if (byId) {
            rt.setTopicId(id == null ? Uuid.ZERO_UUID : id);
        } else {
            rt.setName(name);
        }
        return rt;
    }

    private static OffsetFetchResponseData.OffsetFetchResponsePartitions unstable(int index) {
        return partition(index, null).setErrorCode(Errors.UNSTABLE_OFFSET_COMMIT.code());
    }

    private static OffsetFetchResponseData.OffsetFetchResponsePartitions partition(int index, GroupRecords.OffsetValue v) {
        return new OffsetFetchResponseData.OffsetFetchResponsePartitions()
                .setPartitionIndex(index)
                .setCommittedOffset(v == null ? OffsetFetchResponse.INVALID_OFFSET : v.offset())
                .setCommittedLeaderEpoch(v == null ? -1 : v.leaderEpoch())
                .setMetadata(v == null ? OffsetFetchResponse.NO_METADATA : v.metadata())
                .setErrorCode(Errors.NONE.code());
    }
}
