package dev.varve.broker.api;

import dev.varve.broker.txn.TransactionCoordinator;
import org.apache.kafka.common.message.EndTxnRequestData;
import org.apache.kafka.common.message.EndTxnResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.EndTxnRequest;
import org.apache.kafka.common.requests.EndTxnResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.util.concurrent.CompletableFuture;

/**
 * EndTxn: the producer commits or aborts its transaction; answered once the coordinator has written
 * PrepareCommit or PrepareAbort (the markers follow). Versions 0-4, the transactions V1 protocol this
 * broker's coordinator speaks (V2 clients, which need version 5, are not offered the feature).
 */
public final class EndTxnHandler implements ApiHandler {
    private final TransactionCoordinator coordinator;

    public EndTxnHandler(TransactionCoordinator coordinator) {
        this.coordinator = coordinator;
    }

    @Override
    public ApiKeys apiKey() {
        return ApiKeys.END_TXN;
    }

    @Override
    public short minVersion() {
        return ApiKeys.END_TXN.oldestVersion();
    }

    @Override
    public short maxVersion() {
        return 4;
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        EndTxnRequestData data = ((EndTxnRequest) request).data();
        return coordinator.endTransaction(data.transactionalId(), data.producerId(), data.producerEpoch(), data.committed())
                .thenApply(error -> new EndTxnResponse(new EndTxnResponseData().setErrorCode(
                        ProducerFencedError.forVersion(error, request.version(), ProducerFencedError.END_TXN).code())));
    }
}
