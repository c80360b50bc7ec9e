package dev.varve.broker.cluster;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.message.WriteTxnMarkersRequestData;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.WriteTxnMarkersRequest;
import org.apache.kafka.common.requests.WriteTxnMarkersResponse;
import org.apache.kafka.common.utils.Time;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * Sends transaction markers to the brokers that lead their partitions (WriteTxnMarkers, as Kafka's
 * {@code TransactionMarkerChannelManager} does): one sender thread per destination broker, each with
 * one connection over the inter-broker listener, batching the markers queued for that broker into one
 * request (at most one entry per producer id per request, since the answer is keyed by producer id).
 * Each marker's future completes with the leader's error code for its partition, or
 * NETWORK_EXCEPTION / LEADER_NOT_AVAILABLE when the request could not be made; retrying is the
 * caller's decision. No request thread ever waits here.
 */
public final class TxnMarkerChannel extends InterBrokerChannel<TxnMarkerChannel.Pending> {
    /** Markers per request at most. */
    private static final int MAX_BATCH = 1_000;

    /**
     * One partition's marker; {@code transactionVersion} is its transaction's (WriteTxnMarkers v2,
     * KIP-1228: 2 makes the leader refuse a marker whose epoch is not newer than the producer's).
     */
    public record Marker(long producerId, short producerEpoch, int coordinatorEpoch, boolean commit, TopicPartition tp,
                         short transactionVersion) {
        /** A marker of a transactions V1 transaction (or of a request that does not say). */
        public Marker(long producerId, short producerEpoch, int coordinatorEpoch, boolean commit, TopicPartition tp) {
            this(producerId, producerEpoch, coordinatorEpoch, commit, tp, (short) 0);
        }
    }

    record Pending(Marker marker, CompletableFuture<Errors> result) {
    }

    public TxnMarkerChannel(int localId, ClusterReplicaManager replicas, String listenerName, int timeoutMs, Time time) {
        super("txn-markers", localId, replicas, listenerName, timeoutMs, time);
    }

    /** Queues {@code marker} for broker {@code brokerId}; completes with that broker's answer for the partition. */
    public CompletableFuture<Errors> send(int brokerId, Marker marker) {
        CompletableFuture<Errors> f = new CompletableFuture<>();
        enqueue(brokerId, new Pending(marker, f));
        return f;
    }

    @Override
    protected int maxBatch() {
        return MAX_BATCH;
    }

    @Override
    protected List<Pending> select(List<Pending> batch, java.util.function.Consumer<Pending> later) {
        // one entry per producer id per request: the answer is keyed by producer id
        Map<Long, Marker> entryOf = new HashMap<>();
        List<Pending> now = new ArrayList<>();
        for (Pending p : batch) {
            Marker m = p.marker();
            Marker first = entryOf.putIfAbsent(m.producerId(), m);
            if (first == null || sameEntry(first, m)) {
                now.add(p);
            } else {
                later.accept(p); // the next request takes it
            }
        }
        return now;
    }

    @Override
    protected org.apache.kafka.common.requests.AbstractRequest.Builder<?> request(List<Pending> items) {
        return new WriteTxnMarkersRequest.Builder(request0(items));
    }

    @Override
    protected void answer(List<Pending> items, org.apache.kafka.common.requests.AbstractResponse response) {
        if (!(response instanceof WriteTxnMarkersResponse body)) {
            fail(items, Errors.NETWORK_EXCEPTION);
            return;
        }
        Map<Long, Map<TopicPartition, Errors>> errors = body.errorsByProducerId();
        for (Pending p : items) {
            Map<TopicPartition, Errors> ofProducer = errors.get(p.marker().producerId());
            Errors e = ofProducer == null ? null : ofProducer.get(p.marker().tp());
            p.result().complete(e == null ? Errors.UNKNOWN_SERVER_ERROR : e);
        }
    }

    @Override
    protected void fail(List<Pending> items, Errors error) {
        items.forEach(p -> p.result().complete(error));
    }

    private static boolean sameEntry(Marker a, Marker b) {
        return a.producerEpoch() == b.producerEpoch() && a.commit() == b.commit() && a.coordinatorEpoch() == b.coordinatorEpoch()
                && a.transactionVersion() == b.transactionVersion();
    }

    private static WriteTxnMarkersRequestData request0(List<Pending> batch) {
        Map<Long, WriteTxnMarkersRequestData.WritableTxnMarker> byProducer = new LinkedHashMap<>();
        Map<Long, Map<String, List<Integer>>> partitions = new HashMap<>();
        for (Pending p : batch) {
            Marker m = p.marker();
            byProducer.computeIfAbsent(m.producerId(), id -> new WriteTxnMarkersRequestData.WritableTxnMarker()
                    .setProducerId(m.producerId()).setProducerEpoch(m.producerEpoch())
                    .setTransactionResult(m.commit()).setCoordinatorEpoch(m.coordinatorEpoch())
                    .setTransactionVersion((byte) m.transactionVersion()));
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
