package dev.varve.broker.api;

import dev.varve.broker.BrokerContext;
import dev.varve.broker.txn.TransactionCoordinator;
import org.apache.kafka.common.message.InitProducerIdRequestData;
import org.apache.kafka.common.message.InitProducerIdResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.InitProducerIdRequest;
import org.apache.kafka.common.requests.InitProducerIdResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.util.concurrent.CompletableFuture;

/**
 * InitProducerId for idempotent producers: a new producer id (epoch 0), or — when a producer that
 * already has an id asks again after an error (KIP-360) — the same id with the next epoch, or a new
 * id once the epoch would overflow. With a transactional id, the transaction coordinator answers
 * (a new id, or the next epoch of the id's producer, fencing an older instance).
 */
public final class InitProducerIdHandler extends AllVersionsHandler {
    private final BrokerContext broker;
    private final TransactionCoordinator transactions;

    public InitProducerIdHandler(BrokerContext broker, TransactionCoordinator transactions) {
        super(ApiKeys.INIT_PRODUCER_ID);
        this.broker = broker;
        this.transactions = transactions;
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        InitProducerIdRequestData data = ((InitProducerIdRequest) request).data();
        InitProducerIdResponseData response = new InitProducerIdResponseData();
        if (data.transactionalId() != null) {
            return transactions.initProducerId(data.transactionalId(), data.transactionTimeoutMs(), data.producerId(),
                    data.producerEpoch()).thenApply(r -> new InitProducerIdResponse(response.setErrorCode(
                    ProducerFencedError.forVersion(r.error(), request.version(), ProducerFencedError.INIT_PRODUCER_ID).code())
                    .setProducerId(r.producerId()).setProducerEpoch(r.producerEpoch())));
        }
        if (data.producerId() >= 0 && data.producerEpoch() >= 0 && data.producerEpoch() < Short.MAX_VALUE - 1) {
            response.setProducerId(data.producerId()).setProducerEpoch((short) (data.producerEpoch() + 1));
        } else {
            try {
                response.setProducerId(broker.producerIds().nextProducerId()).setProducerEpoch((short) 0);
            } catch (org.apache.kafka.common.errors.CoordinatorLoadInProgressException e) {
                // no id at hand until the controller's next block arrives: the client retries
                response.setErrorCode(Errors.COORDINATOR_LOAD_IN_PROGRESS.code())
                        .setProducerId(RecordBatch.NO_PRODUCER_ID).setProducerEpoch(RecordBatch.NO_PRODUCER_EPOCH);
            }
        }
        return CompletableFuture.completedFuture(new InitProducerIdResponse(response));
    }
}
