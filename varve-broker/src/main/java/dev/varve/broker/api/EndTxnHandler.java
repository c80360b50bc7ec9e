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
 * PrepareCommit or PrepareAbort (the markers follow). Versions 0-4 are the transactions V1 protocol;
 * version 5 is transactions V2 (KIP-890 part 2): the epoch is bumped with every end and the answer
 * carries the producer id and epoch the producer continues with.
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
        return 5;
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        EndTxnRequestData data = ((EndTxnRequest) request).data();
        short clientVersion = request.version() >= 5 ? (short) 2 : (short) 0;
        return coordinator.endTransaction(data.transactionalId(), data.producerId(), data.producerEpoch(), data.committed(),
                        clientVersion)
                .thenApply(result -> new EndTxnResponse(new EndTxnResponseData()
                        .setErrorCode(ProducerFencedError.forVersion(result.error(), request.version(),
                                ProducerFencedError.END_TXN).code())
                        .setProducerId(result.producerId())
                        .setProducerEpoch(result.producerEpoch())));
    }
}
