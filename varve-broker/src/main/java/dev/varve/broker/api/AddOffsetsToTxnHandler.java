package dev.varve.broker.api;

import dev.varve.broker.OffsetsTopic;
import dev.varve.broker.txn.TransactionCoordinator;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.message.AddOffsetsToTxnRequestData;
import org.apache.kafka.common.message.AddOffsetsToTxnResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.AddOffsetsToTxnRequest;
import org.apache.kafka.common.requests.AddOffsetsToTxnResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * AddOffsetsToTxn: adds the group's {@code __consumer_offsets} partition to the producer's transaction,
 * so the offsets it commits there (TxnOffsetCommit) get the transaction's marker.
 */
public final class AddOffsetsToTxnHandler extends AllVersionsHandler {
    private final TransactionCoordinator coordinator;
    private final OffsetsTopic offsetsTopic;

    public AddOffsetsToTxnHandler(TransactionCoordinator coordinator, OffsetsTopic offsetsTopic) {
        super(ApiKeys.ADD_OFFSETS_TO_TXN);
        this.coordinator = coordinator;
        this.offsetsTopic = offsetsTopic;
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        AddOffsetsToTxnRequestData data = ((AddOffsetsToTxnRequest) request).data();
        if (data.groupId() == null || data.groupId().isEmpty()) {
            return CompletableFuture.completedFuture(response(Errors.INVALID_GROUP_ID));
        }
        if (!offsetsTopic.ensureExists()) {
            return CompletableFuture.completedFuture(response(Errors.COORDINATOR_NOT_AVAILABLE));
        }
        TopicPartition tp = new TopicPartition(OffsetsTopic.NAME, offsetsTopic.partitionFor(data.groupId()));
        return coordinator.addPartitions(data.transactionalId(), data.producerId(), data.producerEpoch(), Set.of(tp))
                .thenApply(error -> response(ProducerFencedError.forVersion(error, request.version(),
                        ProducerFencedError.ADD_OFFSETS_TO_TXN)));
    }

    private static AbstractResponse response(Errors error) {
        return new AddOffsetsToTxnResponse(new AddOffsetsToTxnResponseData().setErrorCode(error.code()));
    }
}
