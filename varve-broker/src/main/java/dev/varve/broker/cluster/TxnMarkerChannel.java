package dev.varve.broker.cluster;

import dev.varve.metadata.MetadataRecord;
import org.apache.kafka.clients.ClientResponse;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.message.WriteTxnMarkersRequestData;
import org.apache.kafka.common.message.WriteTxnMarkersResponseData;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.WriteTxnMarkersRequest;
import org.apache.kafka.common.requests.WriteTxnMarkersResponse;
import org.apache.kafka.common.utils.internals.LogContext;
import org.apache.kafka.common.utils.Time;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * Sends transaction markers to the brokers that lead their partitions (WriteTxnMarkers, as Kafka's
 * {@code TransactionMarkerChannelManager} does): one sender thread per destination broker, each with
 * one connection over the inter-broker listener, batching the markers queued for that broker into one
 * request (at most one entry per producer id per request, since the answer is keyed by producer id).
 * Each marker's future completes with the leader's error code for its partition, or
 * NETWORK_EXCEPTION / LEADER_NOT_AVAILABLE when the request could not be made; retrying is the
 * caller's decision. No request thread ever waits here.
 */
public final class TxnMarkerChannel implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(TxnMarkerChannel.class);
    /** Markers per request at most. */
    private static final int MAX_BATCH = 1_000;

    /** One partition's marker. */
    public record Marker(long producerId, short producerEpoch, int coordinatorEpoch, boolean commit, TopicPartition tp) {
    }

    private record Pending(Marker marker, CompletableFuture<Errors> result) {
    }

    private final int localId;
    private final ClusterReplicaManager replicas;
    private final String listenerName;
    private final int timeoutMs;
    private final Time time;
    private final Map<Integer, Sender> senders = new ConcurrentHashMap<>();
    private volatile boolean closed;

    public TxnMarkerChannel(int localId, ClusterReplicaManager replicas, String listenerName, int timeoutMs, Time time) {
        this.localId = localId;
        this.replicas = replicas;
        this.listenerName = listenerName;
        this.timeoutMs = timeoutMs;
        this.time = time;
    }

    /** Queues {@code marker} for broker {@code brokerId}; completes with that broker's answer for the partition. */
    public CompletableFuture<Errors> send(int brokerId, Marker marker) {
        CompletableFuture<Errors> f = new CompletableFuture<>();
        if (closed) {
            f.complete(Errors.BROKER_NOT_AVAILABLE);
            return f;
        }
        senders.computeIfAbsent(brokerId, Sender::new).queue.add(new Pending(marker, f));
        if (closed) { // raced with close: nobody drains the queue any more
            f.complete(Errors.BROKER_NOT_AVAILABLE);
        }
        return f;
    }

    @Override
    public void close() {
        closed = true;
        senders.values().forEach(Sender::stop);
    }

    private final class Sender implements Runnable {
        final int brokerId;
        final LinkedBlockingQueue<Pending> queue = new LinkedBlockingQueue<>();
        final Thread thread;
        volatile boolean running = true;
        LeaderConnection connection;
        Node node;

        Sender(int brokerId) {
            this.brokerId = brokerId;
            this.thread = new Thread(this, "txn-marker-sender-" + localId + "-to-" + brokerId);
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
                    Pending first = queue.poll(100, TimeUnit.MILLISECONDS);
                    if (first == null) {
                        continue;
                    }
                    List<Pending> batch = new ArrayList<>();
                    batch.add(first);
                    queue.drainTo(batch, MAX_BATCH - 1);
                    sendBatch(batch);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                if (connection != null) {
                    connection.close();
                }
                List<Pending> left = new ArrayList<>();
                queue.drainTo(left);
                left.forEach(p -> p.result().complete(Errors.BROKER_NOT_AVAILABLE));
            }
        }

        private void sendBatch(List<Pending> batch) {
            // one entry per producer id per request: the answer is keyed by producer id
            Map<Long, Marker> entryOf = new HashMap<>();
            List<Pending> now = new ArrayList<>();
            for (Pending p : batch) {
                Marker m = p.marker();
                Marker first = entryOf.putIfAbsent(m.producerId(), m);
                if (first == null || sameEntry(first, m)) {
                    now.add(p);
                } else {
                    queue.add(p); // the next request takes it
                }
            }
            Optional<Node> target = endpoint();
            if (target.isEmpty()) {
                now.forEach(p -> p.result().complete(Errors.LEADER_NOT_AVAILABLE));
                return;
            }
            if (!target.get().equals(node)) {
                if (connection != null) {
                    connection.close();
                }
                node = target.get();
                connection = new LeaderConnection(node, "broker-" + localId + "-txn-markers", timeoutMs, time,
                        new LogContext("[TxnMarkerSender " + localId + " to " + brokerId + "] "));
            }
            if (!connection.awaitReady(() -> running)) {
                now.forEach(p -> p.result().complete(Errors.NETWORK_EXCEPTION));
                return;
            }
            ClientResponse response = connection.roundTrip(new WriteTxnMarkersRequest.Builder(request(now)), () -> running);
            if (response == null || response.wasDisconnected() || response.versionMismatch() != null
                    || !(response.responseBody() instanceof WriteTxnMarkersResponse body)) {
                LOG.debug("WriteTxnMarkers to broker {} failed: {}", brokerId, response);
                now.forEach(p -> p.result().complete(Errors.NETWORK_EXCEPTION));
                return;
            }
            Map<Long, Map<TopicPartition, Errors>> errors = body.errorsByProducerId();
            for (Pending p : now) {
                Map<TopicPartition, Errors> ofProducer = errors.get(p.marker().producerId());
                Errors e = ofProducer == null ? null : ofProducer.get(p.marker().tp());
                p.result().complete(e == null ? Errors.UNKNOWN_SERVER_ERROR : e);
            }
        }

        private Optional<Node> endpoint() {
            Optional<MetadataRecord.Endpoint> ep = replicas.image().broker(brokerId)
                    .filter(b -> !b.fenced())
                    .flatMap(b -> b.endpoint(listenerName));
            return ep.map(e -> new Node(brokerId, e.host(), e.port()));
        }
    }

    private static boolean sameEntry(Marker a, Marker b) {
        return a.producerEpoch() == b.producerEpoch() && a.commit() == b.commit() && a.coordinatorEpoch() == b.coordinatorEpoch();
    }

    private static WriteTxnMarkersRequestData request(List<Pending> batch) {
        Map<Long, WriteTxnMarkersRequestData.WritableTxnMarker> byProducer = new LinkedHashMap<>();
        Map<Long, Map<String, List<Integer>>> partitions = new HashMap<>();
        for (Pending p : batch) {
            Marker m = p.marker();
            byProducer.computeIfAbsent(m.producerId(), id -> new WriteTxnMarkersRequestData.WritableTxnMarker()
                    .setProducerId(m.producerId()).setProducerEpoch(m.producerEpoch())
                    .setTransactionResult(m.commit()).setCoordinatorEpoch(m.coordinatorEpoch()));
            partitions.computeIfAbsent(m.producerId(), id -> new LinkedHashMap<>())
                    .computeIfAbsent(m.tp().topic(), t -> new ArrayList<>()).add(m.tp().partition());
        }
        WriteTxnMarkersRequestData data = new WriteTxnMarkersRequestData();
        byProducer.forEach((id, marker) -> {
            List<WriteTxnMarkersRequestData.WritableTxnMarkerTopic> topics = new ArrayList<>();
            partitions.get(id).forEach((topic, ids) -> topics.add(new WriteTxnMarkersRequestData.WritableTxnMarkerTopic()
                    .setName(topic).setPartitionIndexes(ids)));
            data.markers().add(marker.setTopics(topics));
        });
        return data;
    }
}
