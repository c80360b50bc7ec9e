package dev.varve.broker.network;

import dev.varve.broker.api.ApiHandler;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.message.ApiVersionsResponseData;
import org.apache.kafka.common.network.ClientInformation;
import org.apache.kafka.common.network.ListenerName;
import org.apache.kafka.common.network.Send;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.RequestAndSize;
import org.apache.kafka.common.requests.RequestContext;
import org.apache.kafka.common.requests.RequestHeader;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.auth.SecurityProtocol;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.util.Collection;
import java.util.EnumMap;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * Parses a request frame with Kafka's own classes and routes it to the handler of its API.
 *
 * <p>A frame that cannot be parsed — a malformed header, an API key this broker does not
 * implement, a version outside the advertised range, a body that does not decode — is a protocol
 * violation: {@link InvalidRequestException} is thrown and the connection closed, as Kafka does. The
 * one exception is ApiVersions, whose unknown versions get UNSUPPORTED_VERSION with the supported
 * ranges so the client can retry with a version both sides know.
 */
public final class RequestDispatcher {
    private static final Logger LOG = LoggerFactory.getLogger(RequestDispatcher.class);

    private final Map<ApiKeys, ApiHandler> handlers = new EnumMap<>(ApiKeys.class);
    private volatile boolean accepting = true;

    public RequestDispatcher(Collection<ApiHandler> handlers) {
        for (ApiHandler h : handlers) {
            if (this.handlers.put(h.apiKey(), h) != null) {
                throw new IllegalArgumentException("two handlers for " + h.apiKey());
            }
        }
    }

    /**
     * Whether new client connections are taken. A cluster broker refuses them (closes them at once)
     * until it has caught up with the metadata log, as Kafka's brokers enable request processing
     * only then: before, it would answer from a replayed, historical image.
     */
    public boolean accepting() {
        return accepting;
    }

    public void setAccepting(boolean accepting) {
        this.accepting = accepting;
    }

    /** The advertised API versions: exactly the handlers present. */
    public ApiVersionsResponseData.ApiVersionCollection apiVersions() {
        ApiVersionsResponseData.ApiVersionCollection out = new ApiVersionsResponseData.ApiVersionCollection();
        for (ApiHandler h : handlers.values()) {
            out.add(new ApiVersionsResponseData.ApiVersion()
                    .setApiKey(h.apiKey().id).setMinVersion(h.minVersion()).setMaxVersion(h.maxVersion()));
        }
        return out;
    }

    /** Where a connection is, for request contexts. */
    public record Connection(String id, InetSocketAddress remote, ListenerName listener) {
    }

    /** A frame decoded for its handler. */
    public record Parsed(RequestContext context, AbstractRequest request, ApiHandler handler) {
    }

    /**
     * Decodes one frame (the bytes after the size prefix) without handling it: the header, the API
     * and version checks, then the body with Kafka's generated classes, which check every length and
     * count against the bytes present before allocating. Public so that tests can measure what
     * decoding a hostile frame costs; {@link #handle} is the only production caller.
     *
     * @throws InvalidRequestException when the frame is not a request this broker serves (the
     *                                 connection must be closed)
     */
    public Parsed parse(Connection connection, ByteBuffer frame) {
        RequestHeader header;
        try {
            header = RequestHeader.parse(frame);
        } catch (RuntimeException e) {
            throw new InvalidRequestException("malformed request header: " + e.getMessage(), e);
        }
        ApiKeys key = header.apiKey();
        ApiHandler handler = handlers.get(key);
        if (handler == null) {
            throw new InvalidRequestException("API " + key + " is not implemented by this broker");
        }
        RequestContext context = new RequestContext(header, connection.id(), connection.remote().getAddress(),
                Optional.of(connection.remote().getPort()), KafkaPrincipal.ANONYMOUS, connection.listener(),
                SecurityProtocol.PLAINTEXT, ClientInformation.EMPTY, false);
        short version = header.apiVersion();
        boolean apiVersions = key == ApiKeys.API_VERSIONS;
        if (!apiVersions && (version < handler.minVersion() || version > handler.maxVersion())) {
            throw new InvalidRequestException(key + " version " + version + " is not supported (supported: "
                    + handler.minVersion() + "-" + handler.maxVersion() + ")");
        }
        RequestAndSize parsed;
        try {
            parsed = context.parseRequest(frame);
        } catch (RuntimeException e) {
            throw new InvalidRequestException("cannot parse " + key + " v" + version + ": " + e.getMessage(), e);
        }
        return new Parsed(context, parsed.request, handler);
    }

    /**
     * Handles one frame (the bytes after the size prefix).
     *
     * @return the response to send, or a future of null when none is due, or a failed future when
     *         the connection must be closed (a request that failed and gets no response: acks=0)
     * @throws InvalidRequestException when the connection must be closed
     */
    public CompletableFuture<Send> handle(Connection connection, ByteBuffer frame) {
        Parsed parsed = parse(connection, frame);
        RequestContext context = parsed.context();
        AbstractRequest request = parsed.request();
        ApiHandler handler = parsed.handler();
        ApiKeys key = context.header.apiKey();
        CompletableFuture<AbstractResponse> response;
        try {
            response = handler.handle(context, request);
        } catch (RuntimeException e) {
            response = CompletableFuture.failedFuture(e);
        }
        return response.handle((resp, error) -> {
            if (error != null) {
                Throwable cause = error instanceof java.util.concurrent.CompletionException && error.getCause() != null
                        ? error.getCause() : error;
                AbstractResponse errorResponse = request.getErrorResponse(cause);
                if (errorResponse == null) {
                    // no response is due (a produce with acks=0): as in Kafka, closing the connection is
                    // how the client learns that something failed (it then refreshes its metadata)
                    throw new InvalidRequestException(key + " failed and has no response to carry the error ("
                            + cause + "): closing the connection");
                }
                LOG.warn("{} request from {} failed", key, connection.id(), cause);
                return context.buildResponseSend(errorResponse);
            }
            return resp == null ? null : context.buildResponseSend(resp);
        });
    }
}
