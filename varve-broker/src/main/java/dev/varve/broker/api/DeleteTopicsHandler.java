package dev.varve.broker.api;

import dev.varve.broker.BrokerContext;
import dev.varve.broker.TopicRegistry.TopicInfo;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.DeleteTopicsRequestData.DeleteTopicState;
import org.apache.kafka.common.message.DeleteTopicsResponseData;
import org.apache.kafka.common.message.DeleteTopicsResponseData.DeletableTopicResult;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.ApiError;
import org.apache.kafka.common.requests.DeleteTopicsRequest;
import org.apache.kafka.common.requests.DeleteTopicsResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * DeleteTopics, by name and (v6+) by topic id: removes the topic from the registry, then its
 * partition logs (renamed {@code *-delete} at once, removed in the background). The deletion is
 * complete when the response is sent, so the topic can be re-created immediately.
 *
 * <p>Errors, per topic, as Kafka's controller answers: an unknown name gets
 * UNKNOWN_TOPIC_OR_PARTITION, an unknown id UNKNOWN_TOPIC_ID; a name and an id together, neither,
 * or the same topic twice get INVALID_REQUEST (one result per duplicated topic); with
 * {@code delete.topic.enable=false} every topic gets TOPIC_DELETION_DISABLED (INVALID_REQUEST before
 * v3, which cannot express it).
 */
public final class DeleteTopicsHandler extends AllVersionsHandler {
    private final BrokerContext broker;

    public DeleteTopicsHandler(BrokerContext broker) {
        super(ApiKeys.DELETE_TOPICS);
        this.broker = broker;
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        DeleteTopicsRequest req = (DeleteTopicsRequest) request;
        DeleteTopicsResponseData response = new DeleteTopicsResponseData();
        List<DeleteTopicState> topics = req.topics();
        if (!broker.config().deleteTopicEnable()) {
            Errors error = req.version() < 3 ? Errors.INVALID_REQUEST : Errors.TOPIC_DELETION_DISABLED;
            for (DeleteTopicState t : topics) {
                response.responses().add(result(t.name(), t.topicId(), error, "Topic deletion is disabled."));
            }
            return done(response);
        }

        Set<String> names = new LinkedHashSet<>();
        Set<String> duplicateNames = new LinkedHashSet<>();
        Set<Uuid> ids = new LinkedHashSet<>();
        Set<Uuid> duplicateIds = new LinkedHashSet<>();
        List<DeleteTopicState> valid = new ArrayList<>();
        for (DeleteTopicState t : topics) {
            Uuid id = t.topicId() == null ? Uuid.ZERO_UUID : t.topicId();
            if (t.name() == null) {
                if (id.equals(Uuid.ZERO_UUID)) {
                    response.responses().add(result(null, id, Errors.INVALID_REQUEST,
                            "Neither topic name nor id were specified."));
                } else if (!ids.add(id)) {
                    duplicateIds.add(id);
                } else {
                    valid.add(t);
                }
            } else if (!id.equals(Uuid.ZERO_UUID)) {
                response.responses().add(result(t.name(), id, Errors.INVALID_REQUEST,
                        "You may not specify both topic name and topic id."));
            } else if (!names.add(t.name())) {
                duplicateNames.add(t.name());
            } else {
                valid.add(t);
            }
        }
        for (DeleteTopicState t : valid) {
            if (t.name() != null ? duplicateNames.contains(t.name()) : duplicateIds.contains(t.topicId())) {
                continue;
            }
            response.responses().add(delete(t));
        }
        duplicateNames.forEach(n -> response.responses().add(
                result(n, Uuid.ZERO_UUID, Errors.INVALID_REQUEST, "Duplicate topic name.")));
        duplicateIds.forEach(id -> response.responses().add(
                result(null, id, Errors.INVALID_REQUEST, "Duplicate topic id.")));
        return done(response);
    }

    private DeletableTopicResult delete(DeleteTopicState t) {
        String name = t.name();
        Uuid id = t.name() == null ? t.topicId() : Uuid.ZERO_UUID;
        if (name == null) {
            Optional<TopicInfo> found = broker.topics().get(id);
            if (found.isEmpty()) {
                return result(null, id, Errors.UNKNOWN_TOPIC_ID, "Topic id " + id + " does not exist.");
            }
            name = found.get().name();
        }
        if (org.apache.kafka.common.internals.Topic.isInternal(name)) {
            // the group coordinator's state lives there: deleting it would lose every committed offset
            return result(name, id, Errors.INVALID_TOPIC_EXCEPTION, "Internal topic " + name + " cannot be deleted.");
        }
        try {
            TopicInfo deleted = broker.deleteTopic(name);
            return result(name, deleted.id(), Errors.NONE, null);
        } catch (RuntimeException e) {
            ApiError error = ApiError.fromThrowable(e);
            // A topic found by id but deleted meanwhile is still an unknown id to this client.
            Errors code = t.name() == null && error.error() == Errors.UNKNOWN_TOPIC_OR_PARTITION
                    ? Errors.UNKNOWN_TOPIC_ID : error.error();
            return result(name, id, code, error.message());
        }
    }

    private static DeletableTopicResult result(String name, Uuid id, Errors error, String message) {
        return new DeletableTopicResult().setName(name).setTopicId(id == null ? Uuid.ZERO_UUID : id)
                .setErrorCode(error.code()).setErrorMessage(message);
    }

    private static CompletableFuture<AbstractResponse> done(DeleteTopicsResponseData data) {
        return CompletableFuture.completedFuture(new DeleteTopicsResponse(data));
    }
}
