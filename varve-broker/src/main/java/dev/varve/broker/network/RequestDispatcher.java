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
    /** Client quotas; null: none enforced. */
    private volatile dev.varve.broker.quota.ClientQuotaManager quotas;

    /** Enforces client quotas from now on (see {@link dev.varve.broker.quota.ClientQuotaManager}). */
    public void setQuotas(dev.varve.broker.quota.ClientQuotaManager quotas) {
        this.quotas = quotas;
    }

    public RequestDispatcher(Collection<ApiHandler> handlers) {
        for (ApiHandler h : handlers) {
            if (this.handlers.put(h.apiKey(), h) != null) {
                throw new IllegalArgumentException("two handlers for " + h.apiKey());
            }
        }
        warmUp();
    }

    /**
     * Decodes an empty request of every served API and version once, so that loading and
     * initializing their classes (a one-time cost, counted by the allocation counter) never lands in
     * a client's {@link DecodeBudget}.
     */
    private void warmUp() {
        for (ApiHandler h : handlers.values()) {
            for (short v = h.minVersion(); v <= h.maxVersion(); v++) {
                try {
                    org.apache.kafka.common.protocol.ApiMessage empty =
                            org.apache.kafka.common.message.ApiMessageType.fromApiKey(h.apiKey().id).newRequest();
                    ByteBuffer bytes = org.apache.kafka.common.protocol.MessageUtil.toByteBufferAccessor(empty, v).buffer();
                    bytes.rewind();
                    AbstractRequest.parseRequest(h.apiKey(), v, new DecodeBudget(bytes, bytes.remaining(),
                            RequestMemoryPool.unbounded(), "warm-up"));
                } catch (RuntimeException e) {
                    LOG.trace("no warm-up for {} v{}: {}", h.apiKey(), v, e.toString());
                }
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

    /** Where a connection is and who is on it, for request contexts. */
    public record Connection(String id, InetSocketAddress remote, ListenerName listener, SecurityProtocol protocol,
                             KafkaPrincipal principal) {
        /** A plaintext connection of the anonymous principal (tests, fuzzing). */
        public Connection(String id, InetSocketAddress remote, ListenerName listener) {
            this(id, remote, listener, SecurityProtocol.PLAINTEXT, KafkaPrincipal.ANONYMOUS);
        }

        public Connection withPrincipal(KafkaPrincipal authenticated) {
            return new Connection(id, remote, listener, protocol, authenticated);
        }
    }

    /**
     * A frame decoded for its handler; {@code decodeReserved} bytes of the request memory pool were
     * reserved for its decoding (given back by the caller once the request is answered).
     */
    public record Parsed(RequestContext context, AbstractRequest request, ApiHandler handler, long decodeReserved, int bytes) {
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
        return parse(connection, frame, RequestMemoryPool.unbounded());
    }

    /**
     * As {@link #parse(Connection, ByteBuffer)}, decoding within a {@link DecodeBudget} over
     * {@code pool}: a frame whose decoding would allocate too much, or more than the pool has free,
     * is refused with {@link InvalidRequestException}, with nothing left reserved.
     */
    public Parsed parse(Connection connection, ByteBuffer frame, RequestMemoryPool pool) {
        int frameBytes = frame.remaining();
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
                Optional.of(connection.remote().getPort()), connection.principal(), connection.listener(),
                connection.protocol(), ClientInformation.EMPTY, false);
        short version = header.apiVersion();
        boolean apiVersions = key == ApiKeys.API_VERSIONS;
        if (!apiVersions && (version < handler.minVersion() || version > handler.maxVersion())) {
            throw new InvalidRequestException(key + " version " + version + " is not supported (supported: "
                    + handler.minVersion() + "-" + handler.maxVersion() + ")");
        }
        if (apiVersions && !ApiKeys.API_VERSIONS.isVersionSupported(version)) {
            // an ApiVersions of a version unknown here is answered as v0, not parsed (KIP-511)
            return new Parsed(context, context.parseRequest(frame).request, handler, 0, frameBytes);
        }
        DecodeBudget budget = new DecodeBudget(frame, frameBytes, pool, key + " v" + version + " of " + frameBytes + " bytes");
        try {
            AbstractRequest request = AbstractRequest.parseRequest(key, version, budget).request;
            budget.check();
            return new Parsed(context, request, handler, budget.reserved(), frameBytes);
        } catch (RuntimeException e) {
            pool.release(budget.reserved());
            if (e instanceof DecodeBudget.Exceeded) {
                throw e;
            }
            throw new InvalidRequestException("cannot parse " + key + " v" + version + ": " + e.getMessage(), e);
        } catch (Error e) {
            pool.release(budget.reserved());
            throw e;
        }
    }

    /**
     * Handles one frame (the bytes after the size prefix).
     *
     * @return the response to send, or a future of null when none is due, or a failed future when
     *         the connection must be closed (a request that failed and gets no response: acks=0)
     * @throws InvalidRequestException when the connection must be closed
     */
    public CompletableFuture<Send> handle(Connection connection, ByteBuffer frame) {
        return handle(connection, frame, RequestMemoryPool.unbounded());
    }

    /**
     * As {@link #handle(Connection, ByteBuffer)}, decoding within {@code pool}; what the decode
     * reserved there is given back once the response is built (or the request failed).
     */
    public CompletableFuture<Send> handle(Connection connection, ByteBuffer frame, RequestMemoryPool pool) {
        return dispatch(connection, frame, pool).response();
    }

    /**
     * A request dispatched: its response, and when its effects are in place for the connection's next
     * request (null: already), as {@link ApiHandler#start} tells.
     */
    public record Dispatched(CompletableFuture<Send> response, java.util.concurrent.CompletionStage<?> applied,
                             org.apache.kafka.common.protocol.ApiKeys key, boolean follower) {
    }

    /** Kafka's request metrics; null: none kept. */
    private volatile dev.varve.broker.metrics.RequestMetrics metrics;

    /** Kafka's request metrics, or null when none are kept. */
    public dev.varve.broker.metrics.RequestMetrics metrics() {
        return metrics;
    }

    /** Counts requests and their errors in {@code metrics} from now on. */
    public void setMetrics(dev.varve.broker.metrics.RequestMetrics metrics) {
        this.metrics = metrics;
    }

    /** As {@link #handle(Connection, ByteBuffer, RequestMemoryPool)}, with when the request's effects are in place. */
    public Dispatched dispatch(Connection connection, ByteBuffer frame, RequestMemoryPool pool) {
        return dispatch(connection, parse(connection, frame, pool), pool);
    }

    /** Handles a request {@link #parse}d from {@code pool}; its decode reservation is given back once answered. */
    public Dispatched dispatch(Connection connection, Parsed parsed, RequestMemoryPool pool) {
        try {
            Dispatched d = handleParsed(connection, parsed);
            return new Dispatched(d.response().whenComplete((send, error) -> pool.release(parsed.decodeReserved())),
                    d.applied(), d.key(), d.follower());
        } catch (RuntimeException | Error e) {
            pool.release(parsed.decodeReserved());
            throw e;
        }
    }

    /** Requests no quota applies to, as in Kafka: version and SASL exchanges, and what brokers send each other. */
    private static boolean exempt(AbstractRequest request) {
        return switch (request.apiKey()) {
            case API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE, WRITE_TXN_MARKERS -> true;
            case FETCH -> ((org.apache.kafka.common.requests.FetchRequest) request).data().replicaId() >= 0
                    || (((org.apache.kafka.common.requests.FetchRequest) request).data().replicaState() != null
                    && ((org.apache.kafka.common.requests.FetchRequest) request).data().replicaState().replicaId() >= 0);
            case ADD_PARTITIONS_TO_TXN -> request.version() >= 4;
            default -> false;
        };
    }

    private static long produceBytes(org.apache.kafka.common.requests.ProduceRequest request) {
        long bytes = 0;
        for (var topic : request.data().topicData()) {
            for (var partition : topic.partitionData()) {
                if (partition.records() != null) {
                    bytes += partition.records().sizeInBytes();
                }
            }
        }
        return bytes;
    }

    private static long fetchedBytes(org.apache.kafka.common.requests.FetchResponse response) {
        long bytes = 0;
        for (var topic : response.data().responses()) {
            for (var partition : topic.partitions()) {
                if (partition.records() != null) {
                    bytes += partition.records().sizeInBytes();
                }
            }
        }
        return bytes;
    }

    private Dispatched handleParsed(Connection connection, Parsed parsed) {
        RequestContext context = parsed.context();
        AbstractRequest request = parsed.request();
        ApiHandler handler = parsed.handler();
        ApiKeys key = context.header.apiKey();
        dev.varve.broker.metrics.RequestMetrics m = metrics;
        if (m != null) {
            m.received(key, context.header.apiVersion(), parsed.bytes());
        }
        CompletableFuture<AbstractResponse> response;
        java.util.concurrent.CompletionStage<?> applied = null;
        dev.varve.broker.quota.ClientQuotaManager q = quotas;
        boolean quotaed = q != null && q.active() && !exempt(request);
        long startNanos = quotaed ? System.nanoTime() : 0;
        try {
            ApiHandler.Started started = handler.start(context, request);
            response = started.response();
            applied = started.applied();
        } catch (RuntimeException e) {
            response = CompletableFuture.failedFuture(e);
        }
        CompletableFuture<Long> throttled = null;
        if (quotaed) {
            // Kafka's quotas: the request's thread time, its produce or fetch bytes; the answer says how long
            // to wait, and this connection's next request is read only then (as Kafka mutes the channel)
            long threadNanos = System.nanoTime() - startNanos;
            String user = context.principal.getName();
            String clientId = context.clientId() == null ? "" : context.clientId();
            long produced = request instanceof org.apache.kafka.common.requests.ProduceRequest p ? produceBytes(p) : 0;
            throttled = new CompletableFuture<>();
            CompletableFuture<Long> throttle = throttled;
            response = response.thenApply(resp -> {
                long ms = q.record(dev.varve.broker.quota.ClientQuotaManager.Type.REQUEST, user, clientId, threadNanos * 100.0 / 1e9);
                if (produced > 0) {
                    ms = Math.max(ms, q.record(dev.varve.broker.quota.ClientQuotaManager.Type.PRODUCE, user, clientId, produced));
                }
                if (resp instanceof org.apache.kafka.common.requests.FetchResponse f) {
                    ms = Math.max(ms, q.record(dev.varve.broker.quota.ClientQuotaManager.Type.FETCH, user, clientId, fetchedBytes(f)));
                }
                if (resp != null && ms > 0) {
                    resp.maybeSetThrottleTimeMs((int) Math.min(Integer.MAX_VALUE, ms));
                }
                throttle.complete(ms);
                return resp;
            });
            response.whenComplete((r, e) -> throttle.complete(0L));
            CompletableFuture<Void> effects = applied == null ? CompletableFuture.completedFuture(null)
                    : applied.toCompletableFuture().thenApply(v -> (Void) null);
            applied = throttle.thenCompose(ms -> ms <= 0 ? effects : effects.thenCompose(v -> CompletableFuture.runAsync(() -> { },
                    CompletableFuture.delayedExecutor(ms, java.util.concurrent.TimeUnit.MILLISECONDS))));
        }
        return new Dispatched(response.handle((resp, error) -> {
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
            if (m != null && resp != null) {
                m.answered(key, resp.errorCounts());
            }
            return resp == null ? null : context.buildResponseSend(resp);
        }), applied, key, key == ApiKeys.FETCH && exempt(request));
    }
}
