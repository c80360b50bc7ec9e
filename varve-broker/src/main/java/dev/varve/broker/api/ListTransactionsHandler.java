package dev.varve.broker.api;

import dev.varve.broker.txn.TransactionCoordinator;
import dev.varve.broker.txn.TransactionState;
import dev.varve.broker.txn.TxnMetadata;
import org.apache.kafka.common.message.ListTransactionsRequestData;
import org.apache.kafka.common.message.ListTransactionsResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.ListTransactionsRequest;
import org.apache.kafka.common.requests.ListTransactionsResponse;
import org.apache.kafka.common.requests.RequestContext;
import org.apache.kafka.common.utils.Time;

import java.util.EnumSet;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * ListTransactions (Admin {@code listTransactions}, {@code kafka-transactions.sh list}; the Admin
 * client asks every broker): the transactional ids coordinated here, filtered as Kafka filters them
 * by state names (unknown names are echoed in {@code unknownStateFilters}), producer ids, how long the
 * transaction has been open (v1) and a regular expression on the id (v2; an invalid one gets
 * INVALID_REGULAR_EXPRESSION). COORDINATOR_LOAD_IN_PROGRESS while a partition is loading.
 */
public final class ListTransactionsHandler extends AllVersionsHandler {
    private final TransactionCoordinator coordinator;
    private final Time time;

    public ListTransactionsHandler(TransactionCoordinator coordinator, Time time) {
        super(ApiKeys.LIST_TRANSACTIONS);
        this.coordinator = coordinator;
        this.time = time;
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        ListTransactionsRequestData data = ((ListTransactionsRequest) request).data();
        ListTransactionsResponseData out = new ListTransactionsResponseData();
        if (coordinator.anyLoading()) {
            return done(out.setErrorCode(Errors.COORDINATOR_LOAD_IN_PROGRESS.code()));
        }
        Pattern pattern = null;
        String regex = data.transactionalIdPattern();
        if (regex != null && !regex.isEmpty()) {
            try {
                pattern = Pattern.compile(regex);
            } catch (PatternSyntaxException e) {
                return done(out.setErrorCode(Errors.INVALID_REGULAR_EXPRESSION.code()));
            }
        }
        Set<TransactionState> states = EnumSet.noneOf(TransactionState.class);
        for (String name : data.stateFilters()) {
            TransactionState match = null;
            for (TransactionState s : TransactionState.values()) {
                if (s.stateName().equals(name)) {
                    match = s;
                }
            }
            if (match == null) {
                out.unknownStateFilters().add(name);
            } else {
                states.add(match);
            }
        }
        boolean filterStates = !data.stateFilters().isEmpty();
        Set<Long> producerIds = new HashSet<>(data.producerIdFilters());
        long duration = data.durationFilter();
        long now = time.milliseconds();
        Pattern idPattern = pattern;
        for (TxnMetadata m : coordinator.list(m -> m.state() != TransactionState.DEAD
                && (producerIds.isEmpty() || producerIds.contains(m.producerId()))
                && (!filterStates || states.contains(m.state()))
                && (duration < 0 || now - m.startTimestampMs() > duration)
                && (idPattern == null || idPattern.matcher(m.transactionalId()).matches()))) {
            out.transactionStates().add(new ListTransactionsResponseData.TransactionState()
                    .setTransactionalId(m.transactionalId()).setProducerId(m.producerId())
                    .setTransactionState(m.state().stateName()));
        }
        return done(out);
    }

    private static CompletableFuture<AbstractResponse> done(ListTransactionsResponseData data) {
        return CompletableFuture.completedFuture(new ListTransactionsResponse(data));
    }
}
