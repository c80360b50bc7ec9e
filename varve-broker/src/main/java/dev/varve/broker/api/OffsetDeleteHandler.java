package dev.varve.broker.api;

import dev.varve.broker.BrokerContext;
import dev.varve.broker.TopicRegistry.TopicInfo;
import dev.varve.broker.group.GroupOffsets;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.message.OffsetDeleteRequestData;
import org.apache.kafka.common.message.OffsetDeleteResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.OffsetDeleteRequest;
import org.apache.kafka.common.requests.OffsetDeleteResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * OffsetDelete: removes a group's committed offsets of partitions it does not consume
 * (GROUP_SUBSCRIBED_TO_TOPIC for a topic an active member subscribes to; GROUP_ID_NOT_FOUND for an
 * unknown group; UNKNOWN_TOPIC_OR_PARTITION for a partition that does not exist).
 */
public final class OffsetDeleteHandler extends AllVersionsHandler {
    private final BrokerContext broker;
    private final GroupOffsets groups;

    public OffsetDeleteHandler(BrokerContext broker, GroupOffsets groups) {
        super(ApiKeys.OFFSET_DELETE);
        this.broker = broker;
        this.groups = groups;
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        OffsetDeleteRequestData req = ((OffsetDeleteRequest) request).data();
        List<TopicPartition> known = new ArrayList<>();
        // READ on each topic (DELETE on the group: AuthorizingHandler), as Kafka checks
        java.util.Set<String> unreadable = new java.util.HashSet<>();
        for (OffsetDeleteRequestData.OffsetDeleteRequestTopic t : req.topics()) {
            if (!broker.authorizer().authorize(context, org.apache.kafka.common.acl.AclOperation.READ,
                    org.apache.kafka.common.resource.ResourceType.TOPIC, t.name())) {
                unreadable.add(t.name());
                continue;
            }
            Optional<TopicInfo> info = broker.topics().get(t.name());
            for (OffsetDeleteRequestData.OffsetDeleteRequestPartition p : t.partitions()) {
                if (info.isPresent() && p.partitionIndex() >= 0 && p.partitionIndex() < info.get().partitions()) {
                    known.add(new TopicPartition(t.name(), p.partitionIndex()));
                }
            }
        }
        return groups.deleteOffsets(req.groupId(), known).thenApply(result -> {
            OffsetDeleteResponseData out = new OffsetDeleteResponseData().setErrorCode(result.groupError().code());
            if (result.groupError() == Errors.NONE) {
                Map<TopicPartition, Errors> errors = result.partitions();
                for (OffsetDeleteRequestData.OffsetDeleteRequestTopic t : req.topics()) {
                    OffsetDeleteResponseData.OffsetDeleteResponseTopic rt =
                            new OffsetDeleteResponseData.OffsetDeleteResponseTopic().setName(t.name());
                    for (OffsetDeleteRequestData.OffsetDeleteRequestPartition p : t.partitions()) {
                        Errors e = unreadable.contains(t.name()) ? Errors.TOPIC_AUTHORIZATION_FAILED
                                : errors.getOrDefault(new TopicPartition(t.name(), p.partitionIndex()),
                                Errors.UNKNOWN_TOPIC_OR_PARTITION);
                        rt.partitions().add(new OffsetDeleteResponseData.OffsetDeleteResponsePartition()
                                .setPartitionIndex(p.partitionIndex()).setErrorCode(e.code()));
                    }
                    out.topics().add(rt);
                }
            }
            return new OffsetDeleteResponse(out);
        });
    }
}
