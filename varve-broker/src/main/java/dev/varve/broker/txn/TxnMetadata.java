package dev.varve.broker.txn;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.record.internal.RecordBatch;

import java.util.Collections;
import java.util.Comparator;
import java.util.Set;
import java.util.TreeSet;

/**
 * What a transaction coordinator keeps for one transactional id, as stored in its
 * {@code __transaction_state} record (Kafka's {@code TransactionMetadata} fields). Immutable: a
 * transition is a new value, written to the log before it replaces the old one.
 *
 * @param producerId               the id the producer writes with
 * @param previousProducerId       the id before the last rotation (epoch exhausted), -1 if none
 * @param nextProducerId           transactions V2: the id the coordinator rotates to once the current
 *                                 end completes (its epoch would overflow), -1 if none
 * @param producerEpoch            the current epoch
 * @param nextProducerEpoch        transactions V2: stored with the id rotation, -1 if none
 * @param lastProducerEpoch        the epoch before the last bump (not stored: -1 after a load), so a
 *                                 retried InitProducerId or EndTxn is recognised
 * @param timeoutMs                the producer's {@code transaction.timeout.ms}
 * @param state                    the state
 * @param partitions               the partitions of the ongoing transaction (empty in Empty and Complete*)
 * @param startTimestampMs         when the ongoing transaction started, -1 if none
 * @param lastUpdateTimestampMs    the last transition's time
 * @param clientTransactionVersion the transaction version the producer's last end used (0-1: V1, 2: V2);
 *                                 values are stored in version 1 of the record only with V2
 */
public record TxnMetadata(String transactionalId, long producerId, long previousProducerId, long nextProducerId,
                          short producerEpoch, short nextProducerEpoch, short lastProducerEpoch, int timeoutMs,
                          TransactionState state, Set<TopicPartition> partitions, long startTimestampMs,
                          long lastUpdateTimestampMs, short clientTransactionVersion) {
    private static final Comparator<TopicPartition> ORDER =
            Comparator.comparing(TopicPartition::topic).thenComparingInt(TopicPartition::partition);

    public TxnMetadata {
        if (transactionalId == null || transactionalId.isEmpty()) {
            throw new IllegalArgumentException("a transactional id is required");
        }
        TreeSet<TopicPartition> sorted = new TreeSet<>(ORDER);
        sorted.addAll(partitions);
        partitions = Collections.unmodifiableSet(sorted);
    }

    /** A new id: Empty, no transaction yet. */
    public static TxnMetadata empty(String transactionalId, long producerId, short epoch, int timeoutMs, long nowMs) {
        return new TxnMetadata(transactionalId, producerId, RecordBatch.NO_PRODUCER_ID, RecordBatch.NO_PRODUCER_ID, epoch,
                RecordBatch.NO_PRODUCER_EPOCH, RecordBatch.NO_PRODUCER_EPOCH, timeoutMs, TransactionState.EMPTY, Set.of(),
                -1L, nowMs, (short) 0);
    }

    /** Whether the client ends transactions with the V2 protocol (KIP-890: an epoch bump at every end). */
    public boolean usesTransactionsV2() {
        return clientTransactionVersion >= 2;
    }

    /**
     * This metadata moved to {@code next}.
     *
     * @throws IllegalStateException when Kafka's state table does not allow it
     */
    public TxnMetadata withState(TransactionState next, long nowMs) {
        checkTransition(next);
        return new TxnMetadata(transactionalId, producerId, previousProducerId, nextProducerId, producerEpoch,
                nextProducerEpoch, lastProducerEpoch, timeoutMs, next, partitions, startTimestampMs, nowMs,
                clientTransactionVersion);
    }

    void checkTransition(TransactionState next) {
        if (!next.validPreviousStates().contains(state)) {
            throw new IllegalStateException("transactional id " + transactionalId + " cannot go from " + state.stateName()
                    + " to " + next.stateName());
        }
    }
}
