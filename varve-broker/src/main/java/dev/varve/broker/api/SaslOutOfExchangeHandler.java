package dev.varve.broker.api;

import org.apache.kafka.common.errors.IllegalSaslStateException;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.util.concurrent.CompletableFuture;

/**
 * SaslHandshake and SaslAuthenticate outside a SASL exchange: on a connection already authenticated or
 * on a listener without SASL, Kafka answers ILLEGAL_SASL_STATE; so does Varve. (During an exchange the
 * connection's {@code SaslAuthenticator} answers them.) SaslHandshake v0 is advertised, as Kafka does
 * (librdkafka checks for it before using v1), but the unframed tokens a v0-only client (Kafka before 1.0)
 * would send next are not served: such a connection is closed.
 */
public final class SaslOutOfExchangeHandler implements ApiHandler {
    private final ApiKeys key;

    public SaslOutOfExchangeHandler(ApiKeys key) {
        if (key != ApiKeys.SASL_HANDSHAKE && key != ApiKeys.SASL_AUTHENTICATE) {
            throw new IllegalArgumentException(key + " is not a SASL API");
        }
        this.key = key;
    }

    @Override
    public ApiKeys apiKey() {
        return key;
    }

    @Override
    public short minVersion() {
        return key.oldestVersion();
    }

    @Override
    public short maxVersion() {
        return key.latestVersion();
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        return CompletableFuture.completedFuture(request.getErrorResponse(0,
                new IllegalSaslStateException(key + " received outside a SASL exchange (the connection is authenticated"
                        + " or its listener is not SASL)")));
    }
}
