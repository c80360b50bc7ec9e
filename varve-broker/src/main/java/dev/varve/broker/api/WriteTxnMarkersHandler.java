package dev.varve.broker.api;

import dev.varve.broker.BrokerContext;
import dev.varve.broker.TxnMarkerWriter;
import dev.varve.broker.cluster.TxnMarkerChannel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.message.WriteTxnMarkersRequestData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.RequestContext;
import org.apache.kafka.common.requests.WriteTxnMarkersRequest;
import org.apache.kafka.common.requests.WriteTxnMarkersResponse;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

/**
 * WriteTxnMarkers, from a transaction coordinator on another broker: appends each marker to the
 * partition this broker leads, as an acks=all append (checked at the transaction version v2 carries,
 * KIP-1228; 0 below v2), and answers per partition once its in-sync
 * replicas have it (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, NOT_ENOUGH_REPLICAS,
 * TRANSACTION_COORDINATOR_FENCED, INVALID_PRODUCER_EPOCH... as Kafka answers; the coordinator retries
 * what can be retried). From an address that is not a broker's: CLUSTER_AUTHORIZATION_FAILED for
 * every partition, nothing written.
 */
public final class WriteTxnMarkersHandler extends AllVersionsHandler {
    private final BrokerContext broker;
    private final TxnMarkerWriter writer;

    public WriteTxnMarkersHandler(BrokerContext broker, TxnMarkerWriter writer) {
        super(ApiKeys.WRITE_TXN_MARKERS);
        this.broker = broker;
        this.writer = writer;
    }

    /**
     * Markers decide what read_committed consumers see, so until ACLs exist (Kafka: ClusterAction) they
     * are taken only from the cluster's brokers: in a cluster, from an address of a registered broker's
     * advertised hosts; on a single node, from an address of this machine (the coordinator writes its
     * own markers without a request, so that is {@code kafka-transactions.sh abort} run on the host).
     */
    private Errors sourceCheck(RequestContext context) {
        return brokerSourceCheck(broker, context);
    }

    /** See {@link #sourceCheck}: also the check of AddPartitionsToTxn v4+ (the partition leaders' versions). */
    static Errors brokerSourceCheck(BrokerContext broker, RequestContext context) {
        var cluster = broker.replicaManager().cluster();
        if (cluster != null) {
            return cluster.checkBrokerSource(context.clientAddress);
        }
        if (!broker.config().replicaFetchVerifySource() || context.clientAddress == null) {
            return Errors.NONE;
        }
        try {
            return java.net.NetworkInterface.getByInetAddress(context.clientAddress) != null
                    ? Errors.NONE : Errors.CLUSTER_AUTHORIZATION_FAILED;
        } catch (java.net.SocketException e) {
            return Errors.CLUSTER_AUTHORIZATION_FAILED;
        }
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        WriteTxnMarkersRequestData data = ((WriteTxnMarkersRequest) request).data();
        Map<Long, Map<TopicPartition, Errors>> errors = new HashMap<>();
        Errors refused = sourceCheck(context);
        if (refused != Errors.NONE) {
            for (WriteTxnMarkersRequestData.WritableTxnMarker marker : data.markers()) {
                Map<TopicPartition, Errors> ofProducer = errors.computeIfAbsent(marker.producerId(), id -> new HashMap<>());
                for (WriteTxnMarkersRequestData.WritableTxnMarkerTopic topic : marker.topics()) {
                    for (int partition : topic.partitionIndexes()) {
                        ofProducer.put(new TopicPartition(topic.name(), partition), refused);
                    }
                }
            }
            return CompletableFuture.completedFuture(new WriteTxnMarkersResponse(errors));
        }
        List<CompletableFuture<?>> waits = new ArrayList<>();
        for (WriteTxnMarkersRequestData.WritableTxnMarker marker : data.markers()) {
            Map<TopicPartition, Errors> ofProducer = errors.computeIfAbsent(marker.producerId(), id -> new HashMap<>());
            for (WriteTxnMarkersRequestData.WritableTxnMarkerTopic topic : marker.topics()) {
                for (int partition : topic.partitionIndexes()) {
                    TopicPartition tp = new TopicPartition(topic.name(), partition);
                    waits.add(writer.writeLocal(new TxnMarkerChannel.Marker(marker.producerId(), marker.producerEpoch(),
                                    marker.coordinatorEpoch(), marker.transactionResult(), tp, marker.transactionVersion()))
                            .thenAccept(error -> {
                                synchronized (ofProducer) {
                                    ofProducer.put(tp, error);
                                }
                            }));
                }
            }
        }
        return CompletableFuture.allOf(waits.toArray(new CompletableFuture[0])).thenApply(v -> {
            Map<Long, Map<TopicPartition, Errors>> copy = new HashMap<>();
            errors.forEach((id, m) -> {
                synchronized (m) {
                    copy.put(id, new HashMap<>(m));
                }
            });
            return new WriteTxnMarkersResponse(copy);
        });
    }
}
