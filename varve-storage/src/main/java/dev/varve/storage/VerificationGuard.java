package dev.varve.storage;

/**
 * Proof that a leader asked the transaction coordinator about a producer's first transactional write
 * to a partition (KIP-890 part 1), handed out by {@link PartitionLog#startTransactionVerification} and
 * presented again with the append. The partition remembers one guard per producer until the
 * producer's transaction starts there or a marker for it is written: a marker written while the
 * coordinator was being asked invalidates the guard, so a late write of a finished transaction is
 * refused (INVALID_TXN_STATE) instead of opening a transaction nobody will ever close.
 *
 * <p>Guards are compared by identity. {@link #NONE} is what a producer that already has a transaction
 * open at its epoch gets: nothing to verify.
 */
public final class VerificationGuard {
    /** No verification needed: the producer's transaction is already open in the partition. */
    public static final VerificationGuard NONE = new VerificationGuard(Short.MIN_VALUE);

    private final short producerEpoch;

    VerificationGuard(short producerEpoch) {
        this.producerEpoch = producerEpoch;
    }

    /** The producer epoch the verification was started for. */
    public short producerEpoch() {
        return producerEpoch;
    }

    @Override
    public String toString() {
        return this == NONE ? "VerificationGuard(none)" : "VerificationGuard(epoch " + producerEpoch + ")";
    }
}
