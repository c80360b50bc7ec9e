package dev.varve.broker.api;

import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * Answers one Kafka API. The request body arrives parsed by Kafka's generated message classes; the
 * handler returns the response (or null for a request that gets none, such as a produce with
 * acks=0), possibly later (a fetch waiting for data).
 *
 * <p>Handlers are called one request at a time per connection, in the order requests arrived, on
 * the broker's request threads. An exception completes the response with Kafka's error response for
 * that request (UNKNOWN_SERVER_ERROR unless the exception maps to a Kafka error code).
 *
 * <p>A handler whose effects happen after it returns (a transactional produce appends only once the
 * coordinator has verified the partitions) overrides {@link #start} to say when they are in place:
 * the connection's next request is handled only then, so a producer's pipelined batches reach the
 * log in the order sent, as Kafka guarantees by muting the channel until a request is answered.
 */
public interface ApiHandler {
    ApiKeys apiKey();

    /** The oldest version implemented. */
    short minVersion();

    /** The newest version implemented. */
    short maxVersion();

    CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request);

    /**
     * A request being handled: its response, and when what it does that the connection's later
     * requests must see (an append) is done; {@code applied} is null when that is so on return.
     */
    record Started(CompletableFuture<AbstractResponse> response, CompletionStage<?> applied) {
    }

    /** As {@link #handle}, telling also when the request's effects are in place (at once, unless overridden). */
    default Started start(RequestContext context, AbstractRequest request) {
        return new Started(handle(context, request), null);
    }
}
