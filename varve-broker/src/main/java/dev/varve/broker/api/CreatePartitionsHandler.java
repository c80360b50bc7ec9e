package dev.varve.broker.api;

import dev.varve.broker.BrokerContext;
import dev.varve.broker.TopicRegistry.TopicInfo;
import dev.varve.metadata.ManualAssignments;
import org.apache.kafka.common.errors.InvalidPartitionsException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.message.CreatePartitionsRequestData;
import org.apache.kafka.common.message.CreatePartitionsRequestData.CreatePartitionsTopic;
import org.apache.kafka.common.message.CreatePartitionsResponseData;
import org.apache.kafka.common.message.CreatePartitionsResponseData.CreatePartitionsTopicResult;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.ApiError;
import org.apache.kafka.common.requests.CreatePartitionsRequest;
import org.apache.kafka.common.requests.CreatePartitionsResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * CreatePartitions (validate-only too): grows a topic's partition count and creates the new
 * partition logs. Shrinking or keeping the count gets INVALID_PARTITIONS; a manual assignment is checked
 * by Kafka's rules ({@link ManualAssignments}: one per new partition, one replica each, this node, the
 * only broker), then changes nothing else; a topic named twice gets INVALID_REQUEST once.
 *
 * <p>One request adds at most {@link #MAX_NEW_PARTITIONS_PER_REQUEST} partitions across its topics
 * (the limit Kafka's controller puts on records per operation), so a bad count cannot fill the disk
 * with directories; topics past the limit get INVALID_PARTITIONS.
 */
public final class CreatePartitionsHandler extends AllVersionsHandler {
    public static final int MAX_NEW_PARTITIONS_PER_REQUEST = 10_000;

    private final BrokerContext broker;

    public CreatePartitionsHandler(BrokerContext broker) {
        super(ApiKeys.CREATE_PARTITIONS);
        this.broker = broker;
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        CreatePartitionsRequestData data = ((CreatePartitionsRequest) request).data();
        CreatePartitionsResponseData response = new CreatePartitionsResponseData();
        Set<String> seen = new HashSet<>();
        Set<String> duplicates = new LinkedHashSet<>();
        for (CreatePartitionsTopic t : data.topics()) {
            if (!seen.add(t.name())) {
                duplicates.add(t.name());
            }
        }
        int budget = MAX_NEW_PARTITIONS_PER_REQUEST;
        for (CreatePartitionsTopic t : data.topics()) {
            if (duplicates.contains(t.name())) {
                continue;
            }
            CreatePartitionsTopicResult result = new CreatePartitionsTopicResult().setName(t.name());
            try {
                budget -= grow(t, data.validateOnly(), budget);
                result.setErrorCode(Errors.NONE.code());
            } catch (RuntimeException e) {
                ApiError error = ApiError.fromThrowable(e);
                result.setErrorCode(error.error().code()).setErrorMessage(error.message());
            }
            response.results().add(result);
        }
        for (String name : duplicates) {
            response.results().add(new CreatePartitionsTopicResult().setName(name)
                    .setErrorCode(Errors.INVALID_REQUEST.code()).setErrorMessage("Duplicate topic name."));
        }
        return CompletableFuture.completedFuture(new CreatePartitionsResponse(response));
    }

    /** Grows one topic (or checks that it could); returns the number of partitions added. */
    private int grow(CreatePartitionsTopic t, boolean validateOnly, int budget) {
        TopicInfo topic = broker.topics().get(t.name()).orElseThrow(() ->
                new UnknownTopicOrPartitionException("Topic '" + t.name() + "' does not exist."));
        if (org.apache.kafka.common.internals.Topic.isInternal(t.name())) {
            // a group's partition is hash % partition count: growing the topic would move groups
            throw new org.apache.kafka.common.errors.InvalidTopicException("Internal topic " + t.name()
                    + " cannot get more partitions.");
        }
        int current = topic.partitions();
        if (t.count() == current) {
            throw new InvalidPartitionsException("Topic already has " + current + " partition(s).");
        }
        if (t.count() < current) {
            throw new InvalidPartitionsException("The topic " + t.name() + " currently has " + current
                    + " partition(s); " + t.count() + " would not be an increase.");
        }
        if (t.assignments() != null) {
            List<List<Integer>> assignments = new ArrayList<>(t.assignments().size());
            for (CreatePartitionsRequestData.CreatePartitionsAssignment a : t.assignments()) {
                assignments.add(a.brokerIds());
            }
            // every partition here has one replica, this node
            ManualAssignments.forNewPartitions(current, t.count(), 1, assignments, ManualAssignments.Brokers.single(broker.nodeId()));
        }
        long added = (long) t.count() - current;
        if (added > budget) {
            throw new InvalidPartitionsException("Cannot add " + added + " partitions: one request may add at most "
                    + MAX_NEW_PARTITIONS_PER_REQUEST + " in total.");
        }
        if (!validateOnly) {
            broker.createPartitions(t.name(), t.count());
        }
        return (int) added;
    }
}
