package dev.varve.broker.api;

import dev.varve.broker.BrokerContext;
import dev.varve.broker.TopicRegistry;
import dev.varve.broker.txn.TransactionCoordinator;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.internals.Topic;
import org.apache.kafka.common.message.AddPartitionsToTxnRequestData;
import org.apache.kafka.common.message.AddPartitionsToTxnResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.AddPartitionsToTxnRequest;
import org.apache.kafka.common.requests.AddPartitionsToTxnResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * AddPartitionsToTxn from a producer (versions 0-3, the ones Kafka's clients send): adds partitions to
 * its transaction before it writes to them. As in Kafka, a partition that does not exist (or an
 * internal topic's) fails the request: it gets UNKNOWN_TOPIC_OR_PARTITION (or
 * TOPIC_AUTHORIZATION_FAILED) and the others OPERATION_NOT_ATTEMPTED; otherwise every partition
 * gets the coordinator's one answer. Versions 4-5 come from partition leaders (KIP-890, see
 * {@link dev.varve.broker.TxnPartitionVerifier}): several transactions per request, each verified or added.
 */
public final class AddPartitionsToTxnHandler implements ApiHandler {
    private final BrokerContext broker;
    private final TransactionCoordinator coordinator;

    public AddPartitionsToTxnHandler(BrokerContext broker, TransactionCoordinator coordinator) {
        this.broker = broker;
        this.coordinator = coordinator;
    }

    @Override
    public ApiKeys apiKey() {
        return ApiKeys.ADD_PARTITIONS_TO_TXN;
    }

    @Override
    public short minVersion() {
        return ApiKeys.ADD_PARTITIONS_TO_TXN.oldestVersion();
    }

    @Override
    public short maxVersion() {
        return 5;
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        AddPartitionsToTxnRequestData data = ((AddPartitionsToTxnRequest) request).data();
        if (request.version() >= 4) {
            return fromBroker(context, data);
        }
        String id = data.v3AndBelowTransactionalId();
        List<TopicPartition> partitions = AddPartitionsToTxnRequest.getPartitions(data.v3AndBelowTopics());
        Map<TopicPartition, Errors> refused = new HashMap<>();
        for (TopicPartition tp : partitions) {
            if (Topic.isInternal(tp.topic())) {
                refused.put(tp, Errors.TOPIC_AUTHORIZATION_FAILED); // only coordinators write internal topics
                continue;
            }
            if (!broker.authorizer().authorize(context, org.apache.kafka.common.acl.AclOperation.WRITE,
                    org.apache.kafka.common.resource.ResourceType.TOPIC, tp.topic())) {
                refused.put(tp, Errors.TOPIC_AUTHORIZATION_FAILED); // WRITE on the topic, checked before existence
                continue;
            }
            Optional<TopicRegistry.TopicInfo> topic = broker.topics().get(tp.topic());
            if (topic.isEmpty() || tp.partition() < 0 || tp.partition() >= topic.get().partitions()) {
                refused.put(tp, Errors.UNKNOWN_TOPIC_OR_PARTITION);
            }
        }
        if (!refused.isEmpty()) {
            Map<TopicPartition, Errors> all = new HashMap<>();
            for (TopicPartition tp : partitions) {
                all.put(tp, refused.getOrDefault(tp, Errors.OPERATION_NOT_ATTEMPTED));
            }
            return CompletableFuture.completedFuture(response(id, all));
        }
        Set<TopicPartition> set = new HashSet<>(partitions);
        return coordinator.addPartitions(id, data.v3AndBelowProducerId(), data.v3AndBelowProducerEpoch(), set)
                .thenApply(error -> {
                    Errors answer = ProducerFencedError.forVersion(error, request.version(),
                            ProducerFencedError.ADD_PARTITIONS_TO_TXN);
                    Map<TopicPartition, Errors> all = new HashMap<>();
                    set.forEach(tp -> all.put(tp, answer));
                    return response(id, all);
                });
    }

    /**
     * Versions 4-5, from partition leaders (KIP-890): per transaction, verify that the partitions are in
     * it (VerifyOnly) or add them (a transactions V2 produce or TxnOffsetCommit). Taken only from the
     * cluster's brokers (Kafka: ClusterAction), else CLUSTER_AUTHORIZATION_FAILED for the request.
     */
    private CompletableFuture<AbstractResponse> fromBroker(RequestContext context, AddPartitionsToTxnRequestData data) {
        AddPartitionsToTxnResponseData out = new AddPartitionsToTxnResponseData();
        Errors source = WriteTxnMarkersHandler.brokerSourceCheck(broker, context);
        if (source != Errors.NONE) {
            return CompletableFuture.completedFuture(new AddPartitionsToTxnResponse(out.setErrorCode(source.code())));
        }
        List<CompletableFuture<AddPartitionsToTxnResponseData.AddPartitionsToTxnResult>> results = new java.util.ArrayList<>();
        for (AddPartitionsToTxnRequestData.AddPartitionsToTxnTransaction txn : data.transactions()) {
            Set<TopicPartition> set = new HashSet<>();
            for (AddPartitionsToTxnRequestData.AddPartitionsToTxnTopic t : txn.topics()) {
                for (int p : t.partitions()) {
                    set.add(new TopicPartition(t.name(), p));
                }
            }
            CompletableFuture<Map<TopicPartition, Errors>> answer;
            if (txn.verifyOnly()) {
                answer = CompletableFuture.completedFuture(coordinator.verifyPartitions(txn.transactionalId(),
                        txn.producerId(), txn.producerEpoch(), set));
            } else {
                answer = coordinator.addPartitions(txn.transactionalId(), txn.producerId(), txn.producerEpoch(), set,
                        (short) 2).thenApply(error -> {
                            Map<TopicPartition, Errors> all = new HashMap<>();
                            set.forEach(tp -> all.put(tp, error));
                            return all;
                        });
            }
            results.add(answer.thenApply(errors -> AddPartitionsToTxnResponse.resultForTransaction(txn.transactionalId(), errors)));
        }
        return CompletableFuture.allOf(results.toArray(CompletableFuture[]::new)).thenApply(v -> {
            AddPartitionsToTxnResponseData.AddPartitionsToTxnResultCollection collection =
                    new AddPartitionsToTxnResponseData.AddPartitionsToTxnResultCollection();
            results.forEach(r -> collection.add(r.join()));
            return new AddPartitionsToTxnResponse(out.setResultsByTransaction(collection));
        });
    }

    private static AbstractResponse response(String id, Map<TopicPartition, Errors> errors) {
        AddPartitionsToTxnResponseData.AddPartitionsToTxnResult result = AddPartitionsToTxnResponse.resultForTransaction(id, errors);
        return new AddPartitionsToTxnResponse(new AddPartitionsToTxnResponseData()
                .setResultsByTopicV3AndBelow(result.topicResults()));
    }
}
