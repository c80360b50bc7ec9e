package dev.varve.broker.api;

import dev.varve.broker.BrokerContext;
import dev.varve.broker.TopicRegistry.TopicInfo;
import dev.varve.broker.group.GroupConfig;
import dev.varve.broker.group.GroupOffsets;
import dev.varve.broker.group.GroupRecords;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.OffsetCommitRequestData;
import org.apache.kafka.common.message.OffsetCommitResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.OffsetCommitRequest;
import org.apache.kafka.common.requests.OffsetCommitResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * OffsetCommit: partitions of unknown topics get UNKNOWN_TOPIC_OR_PARTITION (UNKNOWN_TOPIC_ID when
 * named by id), metadata over {@code offset.metadata.max.bytes} OFFSET_METADATA_TOO_LARGE; the rest
 * are committed together (one batch in the offsets topic) or not at all, with the group's error.
 * The v2-4 retention time is ignored: retention is the broker's {@code offsets.retention.minutes}.
 */
public final class OffsetCommitHandler extends AllVersionsHandler {
    private final BrokerContext broker;
    private final GroupOffsets offsets;
    private final GroupConfig config;

    public OffsetCommitHandler(BrokerContext broker, GroupOffsets offsets, GroupConfig config) {
        super(ApiKeys.OFFSET_COMMIT);
        this.broker = broker;
        this.offsets = offsets;
        this.config = config;
    }

    private record Slot(OffsetCommitResponseData.OffsetCommitResponsePartition response, TopicPartition tp) {
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        OffsetCommitRequestData req = ((OffsetCommitRequest) request).data();
        OffsetCommitResponseData out = new OffsetCommitResponseData();
        Map<TopicPartition, GroupRecords.OffsetValue> valid = new LinkedHashMap<>();
        List<Slot> pending = new ArrayList<>();
        for (OffsetCommitRequestData.OffsetCommitRequestTopic topic : req.topics()) {
            boolean byId = topic.name() == null || topic.name().isEmpty();
            Optional<TopicInfo> info = byId ? broker.topics().get(topic.topicId()) : broker.topics().get(topic.name());
            OffsetCommitResponseData.OffsetCommitResponseTopic rt = new OffsetCommitResponseData.OffsetCommitResponseTopic()
                    .setName(topic.name() == null ? "" : topic.name())
                    .setTopicId(topic.topicId() == null ? Uuid.ZERO_UUID : topic.topicId());
            for (OffsetCommitRequestData.OffsetCommitRequestPartition p : topic.partitions()) {
                OffsetCommitResponseData.OffsetCommitResponsePartition rp =
                        new OffsetCommitResponseData.OffsetCommitResponsePartition().setPartitionIndex(p.partitionIndex());
                rt.partitions().add(rp);
                String name = info.map(TopicInfo::name).orElse(byId ? null : topic.name());
                if (name != null && !broker.authorizer().authorize(context, org.apache.kafka.common.acl.AclOperation.READ,
                        org.apache.kafka.common.resource.ResourceType.TOPIC, name)) {
                    // READ on the topic (READ on the group: AuthorizingHandler), checked before existence as in Kafka
                    rp.setErrorCode(Errors.TOPIC_AUTHORIZATION_FAILED.code());
                } else if (info.isEmpty()) {
                    rp.setErrorCode((byId ? Errors.UNKNOWN_TOPIC_ID : Errors.UNKNOWN_TOPIC_OR_PARTITION).code());
                } else if (p.partitionIndex() < 0 || p.partitionIndex() >= info.get().partitions()) {
                    rp.setErrorCode(Errors.UNKNOWN_TOPIC_OR_PARTITION.code());
                } else if (p.committedMetadata() != null && p.committedMetadata().length() > config.offsetMetadataMaxBytes()) {
                    rp.setErrorCode(Errors.OFFSET_METADATA_TOO_LARGE.code());
                } else {
                    TopicPartition tp = new TopicPartition(info.get().name(), p.partitionIndex());
                    valid.put(tp, new GroupRecords.OffsetValue(p.committedOffset(), p.committedLeaderEpoch(),
                            p.committedMetadata() == null ? "" : p.committedMetadata(), 0));
                    pending.add(new Slot(rp, tp));
                }
            }
            out.topics().add(rt);
        }
        if (valid.isEmpty() && !req.topics().isEmpty()) {
            return CompletableFuture.completedFuture(new OffsetCommitResponse(out));
        }
        // an empty request still validates the member (and keeps it alive), as Kafka does
        return offsets.commit(req.groupId(), req.generationIdOrMemberEpoch(), req.memberId(), req.groupInstanceId(), valid,
                        request.version())
                .thenApply(stored -> {
                    // Kafka answers a commit to a group that does not exist GROUP_ID_NOT_FOUND from v9 on
                    Errors error = stored == Errors.GROUP_ID_NOT_FOUND && request.version() < 9
                            ? Errors.ILLEGAL_GENERATION : stored;
                    pending.forEach(s -> s.response().setErrorCode(error.code()));
                    return new OffsetCommitResponse(out);
                });
    }
}
