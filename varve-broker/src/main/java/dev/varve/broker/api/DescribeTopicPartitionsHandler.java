package dev.varve.broker.api;

import dev.varve.broker.BrokerConfig;
import dev.varve.broker.BrokerContext;
import dev.varve.broker.TopicRegistry.TopicInfo;
import dev.varve.broker.security.AclAuthorizer;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.apache.kafka.common.internals.Topic;
import org.apache.kafka.common.message.DescribeTopicPartitionsRequestData;
import org.apache.kafka.common.message.DescribeTopicPartitionsResponseData;
import org.apache.kafka.common.message.DescribeTopicPartitionsResponseData.Cursor;
import org.apache.kafka.common.message.DescribeTopicPartitionsResponseData.DescribeTopicPartitionsResponsePartition;
import org.apache.kafka.common.message.DescribeTopicPartitionsResponseData.DescribeTopicPartitionsResponseTopic;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.DescribeTopicPartitionsRequest;
import org.apache.kafka.common.requests.DescribeTopicPartitionsResponse;
import org.apache.kafka.common.requests.RequestContext;
import org.apache.kafka.common.resource.ResourceType;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;

/**
 * DescribeTopicPartitions (KIP-966): what Kafka 4's Admin client asks for {@code describeTopics} by name
 * (and so {@code kafka-topics.sh --describe}); without it the client falls back to a Metadata request.
 *
 * <p>Kafka's semantics: the topics asked for (none: every topic the principal may describe) in name
 * order, from the cursor's topic and partition on; at most
 * min({@code max.request.partition.size.limit}, the request's ResponsePartitionLimit) partitions per
 * answer, and a NextCursor where the next answer starts when more are left. A named topic that does not
 * exist gets UNKNOWN_TOPIC_OR_PARTITION (INVALID_TOPIC_EXCEPTION for a name no topic can have), one the
 * principal may not describe TOPIC_AUTHORIZATION_FAILED, listed after the others and without its id. A
 * cursor naming a topic the request does not list is INVALID_REQUEST.
 */
public final class DescribeTopicPartitionsHandler extends AllVersionsHandler {
    private final BrokerContext broker;

    public DescribeTopicPartitionsHandler(BrokerContext broker) {
        super(ApiKeys.DESCRIBE_TOPIC_PARTITIONS);
        this.broker = broker;
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        DescribeTopicPartitionsRequestData data = ((DescribeTopicPartitionsRequest) request).data();
        AclAuthorizer auth = broker.authorizer();
        boolean all = data.topics().isEmpty();
        DescribeTopicPartitionsRequestData.Cursor cursor = data.cursor();
        String cursorTopic = cursor == null ? "" : cursor.topicName();
        TreeSet<String> names = new TreeSet<>();
        if (all) {
            for (TopicInfo t : broker.topics().all()) {
                if (t.name().compareTo(cursorTopic) >= 0) {
                    names.add(t.name());
                }
            }
        } else {
            for (DescribeTopicPartitionsRequestData.TopicRequest t : data.topics()) {
                if (t.name() != null && t.name().compareTo(cursorTopic) >= 0) {
                    names.add(t.name());
                }
            }
            if (cursor != null && !names.contains(cursorTopic)) {
                throw new InvalidRequestException(
                        "DescribeTopicPartitionsRequest topic list should contain the cursor topic: " + cursorTopic);
            }
        }
        DescribeTopicPartitionsResponseData response = new DescribeTopicPartitionsResponseData();
        List<DescribeTopicPartitionsResponseTopic> unauthorized = new ArrayList<>();
        int remaining = Math.min(broker.config().intValue(BrokerConfig.MAX_REQUEST_PARTITION_SIZE_LIMIT),
                data.responsePartitionLimit());
        for (String name : names) {
            if (!auth.authorize(context, AclOperation.DESCRIBE, ResourceType.TOPIC, name)) {
                if (!all) {
                    unauthorized.add(new DescribeTopicPartitionsResponseTopic().setName(name).setTopicId(Uuid.ZERO_UUID)
                            .setErrorCode(Errors.TOPIC_AUTHORIZATION_FAILED.code()));
                }
                continue;
            }
            if (remaining <= 0) {
                // the page is full: the next one starts at this topic
                response.setNextCursor(new Cursor().setTopicName(name).setPartitionIndex(0));
                break;
            }
            Optional<TopicInfo> topic = broker.topics().get(name);
            if (topic.isEmpty()) {
                if (!all) {
                    response.topics().add(new DescribeTopicPartitionsResponseTopic().setName(name).setTopicId(Uuid.ZERO_UUID)
                            .setIsInternal(Topic.isInternal(name)).setErrorCode(unknownTopicError(name).code()));
                }
                continue;
            }
            TopicInfo t = topic.get();
            int first = name.equals(cursorTopic) ? Math.max(0, cursor.partitionIndex()) : 0;
            int count = PartitionViews.count(broker, t);
            int upper = (int) Math.min(count, (long) first + remaining);
            List<DescribeTopicPartitionsResponsePartition> partitions = new ArrayList<>(Math.max(0, upper - first));
            for (PartitionViews.PartitionView p : PartitionViews.partitions(broker, t, first, upper)) {
                partitions.add(new DescribeTopicPartitionsResponsePartition()
                        .setPartitionIndex(p.partition())
                        .setLeaderId(p.leader())
                        .setLeaderEpoch(p.leaderEpoch())
                        .setReplicaNodes(p.replicas())
                        .setIsrNodes(p.isr())
                        .setEligibleLeaderReplicas(p.elr())
                        .setLastKnownElr(p.lastKnownElr())
                        .setOfflineReplicas(p.offline()));
            }
            response.topics().add(new DescribeTopicPartitionsResponseTopic()
                    .setName(name)
                    .setTopicId(t.id())
                    .setIsInternal(Topic.isInternal(name))
                    .setErrorCode(Errors.NONE.code())
                    .setPartitions(partitions)
                    .setTopicAuthorizedOperations(auth.authorizedOperations(context, ResourceType.TOPIC, name,
                            AclAuthorizer.TOPIC_OPERATIONS)));
            if (upper < count) {
                response.setNextCursor(new Cursor().setTopicName(name).setPartitionIndex(upper));
                break;
            }
            remaining -= partitions.size();
        }
        response.topics().addAll(unauthorized);
        return CompletableFuture.completedFuture(new DescribeTopicPartitionsResponse(response));
    }

    private static Errors unknownTopicError(String name) {
        try {
            Topic.validate(name);
            return Errors.UNKNOWN_TOPIC_OR_PARTITION;
        } catch (InvalidTopicException e) {
            return Errors.INVALID_TOPIC_EXCEPTION;
        }
    }
}
