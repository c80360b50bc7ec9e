package dev.varve.broker.group;

import org.apache.kafka.common.record.internal.SimpleRecord;

import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * Where the coordinator writes its records: the {@code __consumer_offsets} partition of a group.
 *
 * <p>An append writes the records to the local log before it returns (callers hold the group's
 * lock, so the stored order is the order of changes) and never waits for other nodes: the returned
 * {@link Write} completes once the records are committed (every in-sync replica has them), or
 * exceptionally with a Kafka exception when they are not. A caller applies a change to memory only
 * when its write completes normally, so what a client was told is what the next coordinator replays.
 * (Transactional offsets are the exception: see {@link TransactionalOffsets}.)
 */
public interface GroupStore {
    /**
     * @throws org.apache.kafka.common.errors.ApiException when the records cannot even be appended
     *         locally (not the leader, the ISR too small, the log offline)
     */
    Write append(String groupId, List<SimpleRecord> records);

    /**
     * As {@link #append}, as one transactional batch of {@code producerId} and {@code producerEpoch}
     * (a TxnOffsetCommit): the records count once the producer's COMMIT marker follows them in the
     * partition, and never after its ABORT marker.
     *
     * @throws org.apache.kafka.common.errors.ApiException as {@link #append}, and
     *         InvalidProducerEpochException when the partition has seen a newer epoch of the producer
     */
    Write appendTransactional(String groupId, long producerId, short producerEpoch, List<SimpleRecord> records);

    /**
     * {@link #appendTransactional(String, long, short, List)} with the verification guard of the
     * transaction's {@code __consumer_offsets} partition (KIP-890; null: not verified): a write whose
     * transaction a marker ended since the verification is refused with INVALID_TXN_STATE.
     */
    default Write appendTransactional(String groupId, long producerId, short producerEpoch, List<SimpleRecord> records,
                                      dev.varve.storage.VerificationGuard guard) {
        return appendTransactional(groupId, producerId, producerEpoch, records);
    }

    /** The {@code __consumer_offsets} partition that holds a group's records. */
    int partitionFor(String groupId);

    /**
     * A local append and its replication.
     *
     * @param lastOffset the offset of the append's last record in the offsets partition: later writes
     *                   have larger ones, which is how a change that completes late knows it was
     *                   superseded
     * @param committed  completes when the records are committed; exceptionally when they will not be
     */
    record Write(long lastOffset, CompletableFuture<Void> committed) {
        public static Write committedAt(long lastOffset) {
            return new Write(lastOffset, CompletableFuture.completedFuture(null));
        }
    }
}
