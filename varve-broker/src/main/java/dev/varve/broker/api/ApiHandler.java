package dev.varve.broker.api;

import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.util.concurrent.CompletableFuture;

/**
 * Answers one Kafka API. The request body arrives parsed by Kafka's generated message classes; the
 * handler returns the response (or null for a request that gets none, such as a produce with
 * acks=0), possibly later (a fetch waiting for data).
 *
 * <p>Handlers are called one request at a time per connection, in the order requests arrived, on
 * the broker's request threads. An exception completes the response with Kafka's error response for
 * that request (UNKNOWN_SERVER_ERROR unless the exception maps to a Kafka error code).
 */
public interface ApiHandler {
    ApiKeys apiKey();

    /** The oldest version implemented. */
    short minVersion();

    /** The newest version implemented. */
    short maxVersion();

    CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request);
}
