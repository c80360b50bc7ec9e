package dev.varve.broker.group;

import org.apache.kafka.common.protocol.Errors;

import java.util.concurrent.CompletableFuture;

/**
 * The transaction coordinator's say on a TxnOffsetCommit, asked before its offsets are written: Kafka
 * verifies that the producer's transaction includes the group's {@code __consumer_offsets} partition
 * (and, for transactions V2 clients, TxnOffsetCommit v5+, adds it). The group coordinator does not
 * check the producer id and epoch against the transaction itself.
 */
@FunctionalInterface
public interface TxnOffsetCommitVerifier {
    /** Accepts every request: until the transaction coordinator provides a verifier. */
    TxnOffsetCommitVerifier NONE = (transactionalId, producerId, producerEpoch, groupId, apiVersion) ->
            CompletableFuture.completedFuture(Verified.OK);

    /**
     * The answer: NONE to write the offsets with {@code guard} (the verification of the group's
     * {@code __consumer_offsets} partition the write must still hold; null when nothing was verified), or
     * the error every partition is answered.
     */
    record Verified(Errors error, dev.varve.storage.VerificationGuard guard) {
        public static final Verified OK = new Verified(Errors.NONE, null);

        public static Verified refused(Errors error) {
            return new Verified(error, null);
        }
    }

    /**
     * Never blocks; complete the future on a thread that holds no group's lock (the commit continues on it).
     *
     * @return completes with NONE and the guard to write the offsets with, else with the error every
     *         partition is answered (e.g. INVALID_PRODUCER_EPOCH, PRODUCER_FENCED, INVALID_TXN_STATE,
     *         TRANSACTION_ABORTABLE)
     */
    CompletableFuture<Verified> verify(String transactionalId, long producerId, short producerEpoch, String groupId,
                                     short apiVersion);
}
