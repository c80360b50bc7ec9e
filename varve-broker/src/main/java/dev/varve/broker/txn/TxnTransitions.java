package dev.varve.broker.txn;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.record.internal.RecordBatch;

import java.util.HashSet;
import java.util.Optional;
import java.util.Set;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The transitions of a transactional id's {@link TxnMetadata}, with Kafka's semantics (its
 * {@code TransactionMetadata.prepare*}): each returns the metadata to write to
 * {@code __transaction_state}; the coordinator makes it current once the write is committed.
 * Pure; {@code TxnTransitionsProperties} runs random histories through these and through Kafka's
 * own {@code TransactionMetadata} and compares every field.
 *
 * <ul>
 *   <li><b>InitProducerId</b> on an id with no transaction in flight bumps the epoch
 *       ({@link #incrementProducerEpoch}), or rotates to a new producer id once the epoch is
 *       exhausted ({@link #rotateProducerId}); on an Ongoing one it first fences the old producer
 *       ({@link #fenceProducerEpoch}) and aborts its transaction.</li>
 *   <li><b>AddPartitionsToTxn</b> (or a V2 produce) opens or extends the transaction ({@link #addPartitions}).</li>
 *   <li><b>EndTxn</b> prepares the commit or abort ({@link #prepareEnd}); once every partition has its
 *       marker, {@link #complete} finishes it.</li>
 * </ul>
 */
public final class TxnTransitions {
    private static final Logger LOG = LoggerFactory.getLogger(TxnTransitions.class);
    private TxnTransitions() {
    }

    /** Whether a producer at {@code epoch} can be bumped no further: Kafka keeps the last value for fencing. */
    public static boolean isEpochExhausted(short epoch) {
        return epoch >= Short.MAX_VALUE - 1;
    }

    private static TxnMetadata to(TxnMetadata m, TransactionState state, long producerId, long previousProducerId,
                                  long nextProducerId, short epoch, short lastEpoch, int timeoutMs,
                                  Set<TopicPartition> partitions, long startMs, long nowMs, short clientVersion) {
        if (epoch < 0 && state != TransactionState.DEAD) {
            throw new IllegalArgumentException("illegal new producer epoch " + epoch + " for " + m.transactionalId());
        }
        m.checkTransition(state);
        // Kafka records, at every transition, the producer id before it as the previous one
        previousProducerId = m.producerId();
        return new TxnMetadata(m.transactionalId(), producerId, previousProducerId, nextProducerId, epoch,
                m.nextProducerEpoch(), lastEpoch, timeoutMs, state, partitions, startMs, nowMs, clientVersion);
    }

    /**
     * InitProducerId: the next epoch of the same producer id, Empty. With KIP-360's expected epoch, a
     * retry of a bump that already happened gets the same epoch again.
     *
     * @throws ProducerFencedException the expected epoch is neither the current nor the previous one
     * @throws IllegalStateException   the epoch is exhausted (rotate the producer id instead)
     */
    public static TxnMetadata incrementProducerEpoch(TxnMetadata m, int timeoutMs, Optional<Short> expectedEpoch, long nowMs) {
        if (isEpochExhausted(m.producerEpoch())) {
            throw new IllegalStateException("cannot bump the exhausted epoch " + m.producerEpoch() + " of " + m.transactionalId());
        }
        short bumped = (short) (m.producerEpoch() + 1);
        short epoch;
        short last;
        if (expectedEpoch.isEmpty()) {
            epoch = bumped;
            last = RecordBatch.NO_PRODUCER_EPOCH;
        } else if (m.producerEpoch() == RecordBatch.NO_PRODUCER_EPOCH || expectedEpoch.get() == m.producerEpoch()) {
            epoch = bumped;
            last = m.producerEpoch();
        } else if (expectedEpoch.get() == m.lastProducerEpoch()) {
            epoch = m.producerEpoch();
            last = m.lastProducerEpoch();
        } else {
            throw new ProducerFencedException("producer epoch " + expectedEpoch.get() + " of " + m.transactionalId()
                    + " is neither the current " + m.producerEpoch() + " nor the last " + m.lastProducerEpoch());
        }
        return to(m, TransactionState.EMPTY, m.producerId(), m.producerId(), m.nextProducerId(), epoch, last,
                timeoutMs, Set.of(), -1L, nowMs, m.clientTransactionVersion());
    }

    /** InitProducerId once the epoch is exhausted: a new producer id at epoch 0, Empty. */
    public static TxnMetadata rotateProducerId(TxnMetadata m, long newProducerId, int timeoutMs, long nowMs,
                                               boolean recordLastEpoch) {
        if (m.state() != TransactionState.EMPTY && m.state() != TransactionState.COMPLETE_COMMIT
                && m.state() != TransactionState.COMPLETE_ABORT) {
            throw new IllegalStateException("cannot rotate the producer id of " + m.transactionalId() + " in " + m.state().stateName());
        }
        return to(m, TransactionState.EMPTY, newProducerId, m.producerId(), RecordBatch.NO_PRODUCER_ID, (short) 0,
                recordLastEpoch ? m.producerEpoch() : RecordBatch.NO_PRODUCER_EPOCH, timeoutMs, Set.of(), -1L, nowMs,
                m.clientTransactionVersion());
    }

    /**
     * A new producer fences the one with a transaction Ongoing: epoch + 1, PrepareEpochFence (an
     * abort follows); the update time stays, as in Kafka.
     */
    public static TxnMetadata fenceProducerEpoch(TxnMetadata m) {
        if (m.producerEpoch() == Short.MAX_VALUE) {
            throw new IllegalStateException("cannot fence " + m.transactionalId() + " at epoch " + Short.MAX_VALUE);
        }
        short bumped = (short) (m.producerEpoch() + 1);
        return to(m, TransactionState.PREPARE_EPOCH_FENCE, m.producerId(), m.previousProducerId(), m.nextProducerId(),
                bumped, m.lastProducerEpoch(), m.timeoutMs(), m.partitions(), m.startTimestampMs(),
                m.lastUpdateTimestampMs(), m.clientTransactionVersion());
    }

    /** AddPartitionsToTxn: Ongoing with these partitions too; a new transaction starts its clock now. */
    public static TxnMetadata addPartitions(TxnMetadata m, Set<TopicPartition> added, long nowMs, short clientVersion) {
        boolean starting = m.state() == TransactionState.EMPTY || m.state() == TransactionState.COMPLETE_COMMIT
                || m.state() == TransactionState.COMPLETE_ABORT;
        Set<TopicPartition> partitions = new HashSet<>(starting ? Set.of() : m.partitions());
        partitions.addAll(added);
        return to(m, TransactionState.ONGOING, m.producerId(), m.previousProducerId(), m.nextProducerId(), m.producerEpoch(),
                m.lastProducerEpoch(), m.timeoutMs(), partitions, starting ? nowMs : m.startTimestampMs(), nowMs, clientVersion);
    }

    /**
     * EndTxn: PrepareCommit or PrepareAbort. A V2 client's end bumps the epoch (KIP-890); when that
     * exhausts it, {@code nextProducerId} is the id the producer continues with.
     */
    public static TxnMetadata prepareEnd(TxnMetadata m, boolean commit, short clientVersion, long nextProducerId, long nowMs,
                                         boolean noPartitionAdded) {
        TransactionState next = commit ? TransactionState.PREPARE_COMMIT : TransactionState.PREPARE_ABORT;
        boolean v2 = clientVersion >= 2;
        short epoch = m.producerEpoch();
        short last = m.lastProducerEpoch();
        if (v2) {
            last = m.producerEpoch();
            if (m.producerEpoch() == Short.MAX_VALUE && !commit) {
                // Kafka 4.4 aborts at the last epoch without a bump (and logs it as a bug that must not happen:
                // the epoch is exhausted before it gets there), rather than wrapping it
                LOG.error("Aborting producer {} of {} at epoch {}: the epoch should have been exhausted before",
                        m.producerId(), m.transactionalId(), Short.MAX_VALUE);
            } else {
                epoch = (short) (m.producerEpoch() + 1);
            }
        }
        long start = noPartitionAdded ? nowMs : m.startTimestampMs();
        return to(m, next, m.producerId(), m.previousProducerId(), nextProducerId, epoch, last,
                m.timeoutMs(), m.partitions(), start, nowMs, clientVersion);
    }

    /** Every marker is written: CompleteCommit or CompleteAbort, no partitions. */
    public static TxnMetadata complete(TxnMetadata m, long nowMs) {
        TransactionState next = switch (m.state()) {
            case PREPARE_COMMIT -> TransactionState.COMPLETE_COMMIT;
            case PREPARE_ABORT -> TransactionState.COMPLETE_ABORT;
            default -> throw new IllegalStateException("cannot complete " + m.transactionalId() + " in " + m.state().stateName());
        };
        long producerId = m.producerId();
        long previous = m.previousProducerId();
        short epoch = m.producerEpoch();
        short last = m.lastProducerEpoch();
        long nextId = RecordBatch.NO_PRODUCER_ID;
        if (m.nextProducerId() != RecordBatch.NO_PRODUCER_ID && m.usesTransactionsV2()) {
            producerId = m.nextProducerId();
            // the V2 epoch bump exhausted the epoch: the producer continues with the next id
            previous = m.producerId();
            epoch = 0; // the last epoch stays, as in Kafka
        }
        return to(m, next, producerId, previous, nextId, epoch, last, m.timeoutMs(), Set.of(), m.startTimestampMs(), nowMs,
                m.clientTransactionVersion());
    }

    /** transactional.id.expiration.ms: the id is removed (a tombstone follows); its update time stays. */
    public static TxnMetadata dead(TxnMetadata m) {
        return to(m, TransactionState.DEAD, m.producerId(), m.previousProducerId(), m.nextProducerId(), m.producerEpoch(),
                m.lastProducerEpoch(), m.timeoutMs(), Set.of(), m.startTimestampMs(), m.lastUpdateTimestampMs(),
                m.clientTransactionVersion());
    }
}
