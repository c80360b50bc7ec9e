package dev.varve.broker.api;

import dev.varve.broker.txn.TransactionCoordinator;
import dev.varve.broker.txn.TxnMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.message.DescribeTransactionsRequestData;
import org.apache.kafka.common.message.DescribeTransactionsResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.DescribeTransactionsRequest;
import org.apache.kafka.common.requests.DescribeTransactionsResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * DescribeTransactions (Admin {@code describeTransactions}, {@code kafka-transactions.sh describe}):
 * per transactional id coordinated here, its state, timeout, start time, producer id and epoch and the
 * partitions of its open transaction; NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS or
 * TRANSACTIONAL_ID_NOT_FOUND otherwise, as Kafka answers.
 */
public final class DescribeTransactionsHandler extends AllVersionsHandler {
    private final TransactionCoordinator coordinator;

    public DescribeTransactionsHandler(TransactionCoordinator coordinator) {
        super(ApiKeys.DESCRIBE_TRANSACTIONS);
        this.coordinator = coordinator;
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        DescribeTransactionsRequestData data = ((DescribeTransactionsRequest) request).data();
        DescribeTransactionsResponseData out = new DescribeTransactionsResponseData();
        for (String id : data.transactionalIds()) {
            DescribeTransactionsResponseData.TransactionState state = new DescribeTransactionsResponseData.TransactionState()
                    .setTransactionalId(id).setTransactionState("").setProducerId(-1).setProducerEpoch((short) -1)
                    .setTransactionStartTimeMs(-1);
            Errors error = id == null || id.isEmpty() ? Errors.TRANSACTIONAL_ID_NOT_FOUND : coordinator.check(id);
            Optional<TxnMetadata> m = error == Errors.NONE ? coordinator.describe(id) : Optional.empty();
            if (error == Errors.NONE && m.isEmpty()) {
                error = Errors.TRANSACTIONAL_ID_NOT_FOUND;
            }
            if (m.isPresent()) {
                TxnMetadata t = m.get();
                state.setTransactionState(t.state().stateName()).setTransactionTimeoutMs(t.timeoutMs())
                        .setTransactionStartTimeMs(t.startTimestampMs()).setProducerId(t.producerId())
                        .setProducerEpoch(t.producerEpoch());
                Map<String, List<Integer>> byTopic = new LinkedHashMap<>();
                for (TopicPartition tp : t.partitions()) {
                    byTopic.computeIfAbsent(tp.topic(), k -> new ArrayList<>()).add(tp.partition());
                }
                byTopic.forEach((topic, partitions) -> state.topics().add(
                        new DescribeTransactionsResponseData.TopicData().setTopic(topic).setPartitions(partitions)));
            }
            out.transactionStates().add(state.setErrorCode(error.code()));
        }
        return CompletableFuture.completedFuture(new DescribeTransactionsResponse(out));
    }
}
