package dev.varve.broker.cluster;

import dev.varve.metadata.MetadataRecord;
import org.apache.kafka.clients.ClientResponse;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.common.utils.internals.LogContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

/**
 * Requests from this broker to other brokers, as Kafka's {@code InterBrokerSendThread}s send them: one
 * sender thread per destination broker, each with one connection over the inter-broker listener
 * (reopened when the broker's endpoint changes), sending one request at a time that batches every item
 * queued for that broker. Subclasses say how items become a request and how its answer (or a failure:
 * NETWORK_EXCEPTION, LEADER_NOT_AVAILABLE for a broker not registered, BROKER_NOT_AVAILABLE once
 * closed) reaches each item. No request thread ever waits here.
 *
 * @param <T> one queued item (it carries its own completion)
 */
public abstract class InterBrokerChannel<T> implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(InterBrokerChannel.class);

    private final String purpose;
    private final int localId;
    private final ClusterReplicaManager replicas;
    private final String listenerName;
    private final int timeoutMs;
    private final Time time;
    private final Map<Integer, Sender> senders = new ConcurrentHashMap<>();
    private volatile boolean closed;
    private volatile InterBrokerTransport transport = InterBrokerTransport.PLAINTEXT;

    protected InterBrokerChannel(String purpose, int localId, ClusterReplicaManager replicas, String listenerName,
                                 int timeoutMs, Time time) {
        this.purpose = purpose;
        this.localId = localId;
        this.replicas = replicas;
        this.listenerName = listenerName;
        this.timeoutMs = timeoutMs;
        this.time = time;
    }

    /** How connections to other brokers are made (the inter-broker listener's protocol); plaintext until set. */
    public void setTransport(InterBrokerTransport transport) {
        this.transport = transport;
    }

    /** Items per request at most. */
    protected abstract int maxBatch();

    /**
     * The items of {@code batch} that go into the next request; the others are handed to {@code later}
     * (queued for the request after it).
     */
    protected abstract List<T> select(List<T> batch, Consumer<T> later);

    protected abstract AbstractRequest.Builder<?> request(List<T> items);

    /** The destination answered {@code response} (of the request's type) for {@code items}. */
    protected abstract void answer(List<T> items, AbstractResponse response);

    /** The request for {@code items} could not be made or answered. */
    protected abstract void fail(List<T> items, Errors error);

    /** Queues {@code item} for broker {@code brokerId}. */
    protected final void enqueue(int brokerId, T item) {
        if (closed) {
            fail(List.of(item), Errors.BROKER_NOT_AVAILABLE);
            return;
        }
        Sender s = senders.computeIfAbsent(brokerId, Sender::new);
        s.queue.add(item);
        if (closed && s.queue.remove(item)) { // raced with close: nobody drains the queue any more
            fail(List.of(item), Errors.BROKER_NOT_AVAILABLE);
        }
    }

    @Override
    public void close() {
        closed = true;
        senders.values().forEach(Sender::stop);
    }

    private final class Sender implements Runnable {
        final int brokerId;
        final LinkedBlockingQueue<T> queue = new LinkedBlockingQueue<>();
        final Thread thread;
        volatile boolean running = true;
        LeaderConnection connection;
        Node node;

        Sender(int brokerId) {
            this.brokerId = brokerId;
            this.thread = new Thread(this, purpose + "-sender-" + localId + "-to-" + brokerId);
            thread.setDaemon(true);
            thread.start();
        }

        void stop() {
            running = false;
            LeaderConnection c = connection;
            if (c != null) {
                c.wakeup();
            }
        }

        @Override
        public void run() {
            try {
                while (running) {
                    T first = queue.poll(100, TimeUnit.MILLISECONDS);
                    if (first == null) {
                        continue;
                    }
                    List<T> batch = new ArrayList<>();
                    batch.add(first);
                    queue.drainTo(batch, maxBatch() - 1);
                    send(select(batch, queue::add));
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                if (connection != null) {
                    connection.close();
                }
                List<T> left = new ArrayList<>();
                queue.drainTo(left);
                if (!left.isEmpty()) {
                    fail(left, Errors.BROKER_NOT_AVAILABLE);
                }
            }
        }

        private void send(List<T> items) {
            if (items.isEmpty()) {
                return;
            }
            Optional<Node> target = endpoint();
            if (target.isEmpty()) {
                fail(items, Errors.LEADER_NOT_AVAILABLE);
                return;
            }
            if (!target.get().equals(node)) {
                if (connection != null) {
                    connection.close();
                }
                node = target.get();
                connection = new LeaderConnection(node, "broker-" + localId + "-" + purpose, timeoutMs, time,
                        new LogContext("[" + purpose + " " + localId + " to " + brokerId + "] "), transport);
            }
            if (!connection.awaitReady(() -> running)) {
                fail(items, Errors.NETWORK_EXCEPTION);
                return;
            }
            ClientResponse response = connection.roundTrip(request(items), () -> running);
            if (response == null || response.wasDisconnected() || response.versionMismatch() != null
                    || response.responseBody() == null) {
                LOG.debug("{} request to broker {} failed: {}", purpose, brokerId, response);
                fail(items, Errors.NETWORK_EXCEPTION);
                return;
            }
            answer(items, response.responseBody());
        }

        private Optional<Node> endpoint() {
            Optional<MetadataRecord.Endpoint> ep = replicas.image().broker(brokerId)
                    .filter(b -> !b.fenced())
                    .flatMap(b -> b.endpoint(listenerName));
            return ep.map(e -> new Node(brokerId, e.host(), e.port()));
        }
    }
}
