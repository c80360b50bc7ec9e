package dev.varve.broker.cluster;

import org.apache.kafka.clients.ApiVersions;
import org.apache.kafka.clients.BootstrapConfiguration;
import org.apache.kafka.clients.ClientRequest;
import org.apache.kafka.clients.ClientResponse;
import org.apache.kafka.clients.ManualMetadataUpdater;
import org.apache.kafka.clients.MetadataRecoveryStrategy;
import org.apache.kafka.clients.NetworkClient;
import org.apache.kafka.clients.NetworkClientUtils;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.network.ChannelBuilder;
import org.apache.kafka.common.network.Selectable;
import org.apache.kafka.common.network.Selector;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.common.utils.internals.LogContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.List;
import java.util.function.BooleanSupplier;

/**
 * One fetcher thread's connection to its leader: kafka-clients' own {@link NetworkClient} over a
 * plaintext {@link Selector}, with ApiVersions negotiation on connect (so requests go out at the highest
 * version both sides know), one request in flight, and the request timeout of
 * {@code replica.socket.timeout.ms}. A lost connection is reopened by the next {@link #awaitReady}.
 *
 * <p>Blocking calls return early (false or null) once {@code running} turns false; {@link #wakeup()}
 * interrupts a poll in progress, so a closing thread does not wait for a response.
 *
 * <p>Thread-safety: used by its fetcher thread only, except {@link #wakeup()} (synchronized with
 * {@link #close()}, so it never touches a closed selector).
 */
final class LeaderConnection implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(LeaderConnection.class);
    /** Kafka's {@code replica.socket.receive.buffer.bytes} default. */
    private static final int SOCKET_RECEIVE_BUFFER_BYTES = 65_536;
    /** Kafka's {@code connections.max.idle.ms} default (a fetcher is never idle that long anyway). */
    private static final long CONNECTION_MAX_IDLE_MS = 600_000;

    private final Node node;
    private final Time time;
    private final int timeoutMs;
    private final Metrics metrics;
    private final NetworkClient client;
    private boolean closed;

    LeaderConnection(Node node, String clientId, int timeoutMs, Time time, LogContext logContext) {
        this(node, clientId, timeoutMs, time, logContext, InterBrokerTransport.PLAINTEXT);
    }

    LeaderConnection(Node node, String clientId, int timeoutMs, Time time, LogContext logContext, InterBrokerTransport transport) {
        this.node = node;
        this.time = time;
        this.timeoutMs = timeoutMs;
        // Own registry per connection: the selector's metrics then never clash between threads.
        this.metrics = new Metrics(time);
        ChannelBuilder channels = transport.channelBuilder(logContext);
        Selector selector = new Selector(CONNECTION_MAX_IDLE_MS, metrics, time, "replica-fetcher", channels, logContext);
        // Reconnect backoff 0: the fetcher thread backs off by replica.fetch.backoff.ms itself.
        this.client = new NetworkClient(selector, new ManualMetadataUpdater(List.of(node)), clientId, 1, 0, 0,
                Selectable.USE_DEFAULT_BUFFER_SIZE, SOCKET_RECEIVE_BUFFER_BYTES, timeoutMs, timeoutMs, timeoutMs, time,
                true, new ApiVersions(), logContext, MetadataRecoveryStrategy.NONE, BootstrapConfiguration.DISABLED, false);
    }

    /**
     * Connects (if needed) and waits until the connection is ready for requests (ApiVersions done).
     *
     * @return false when the connection failed, timed out or {@code running} turned false
     */
    boolean awaitReady(BooleanSupplier running) {
        long now = time.milliseconds();
        if (NetworkClientUtils.isReady(client, node, now)) {
            return true;
        }
        long deadline = now + timeoutMs;
        client.ready(node, now); // starts connecting; called once, or a refused connection would be retried at once
        while (running.getAsBoolean()) {
            now = time.milliseconds();
            if (client.isReady(node, now)) {
                return true;
            }
            if (client.connectionFailed(node)) {
                return false;
            }
            if (now >= deadline) {
                LOG.debug("connection to {} not ready after {} ms", node, timeoutMs);
                client.disconnect(node.idString());
                return false;
            }
            client.poll(deadline - now, now);
        }
        return false;
    }

    /**
     * Sends one request on a ready connection and waits for its response: a disconnection, a timeout
     * or a version mismatch comes back as a {@link ClientResponse} saying so.
     *
     * @return the response, or null when {@code running} turned false first
     */
    ClientResponse roundTrip(AbstractRequest.Builder<?> request, BooleanSupplier running) {
        long now = time.milliseconds();
        ClientRequest sent = client.newClientRequest(node.idString(), request, now, true, timeoutMs, null);
        client.send(sent, now);
        while (running.getAsBoolean()) {
            for (ClientResponse response : client.poll(timeoutMs, time.milliseconds())) {
                if (response.requestHeader().correlationId() == sent.correlationId()) {
                    return response;
                }
            }
        }
        return null;
    }

    /** Interrupts a blocking poll (from any thread); nothing once closed. */
    synchronized void wakeup() {
        if (!closed) {
            client.wakeup();
        }
    }

    @Override
    public synchronized void close() {
        if (closed) {
            return;
        }
        closed = true;
        try {
            client.close();
        } catch (Exception e) {
            LOG.warn("closing the connection to {} failed", node, e);
        }
        metrics.close();
    }
}
