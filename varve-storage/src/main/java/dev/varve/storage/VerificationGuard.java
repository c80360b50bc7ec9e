package dev.varve.storage;

/**
 * Proof that a leader asked the transaction coordinator about a producer's first transactional write
 * to a partition (KIP-890 part 1), handed out by {@link PartitionLog#startTransactionVerification} and
 * presented again with the append. The partition remembers one guard per producer until the
 * producer's transaction starts there or a marker for it is written: a marker written while the
 * coordinator was being asked invalidates the guard, so a late write of a finished transaction is
 * refused (INVALID_TXN_STATE) instead of opening a transaction nobody will ever close. One marker
 * does not: under transactions V2 ({@link #supportsEpochBump()}) the coordinator writes the markers
 * of a transaction with the epoch it bumped to, which is the epoch of the producer's next
 * transaction; that transaction's first write may reach the leader before the previous one's marker
 * (the coordinator then answers its add CONCURRENT_TRANSACTIONS until the markers are out) and is no
 * late write, so a marker at the guard's own epoch leaves a V2 guard valid (as Kafka does).
 *
 * <p>Guards are compared by identity. {@link #NONE} is what a producer that already has a transaction
 * open at its epoch gets: nothing to verify.
 */
public final class VerificationGuard {
    /** No verification needed: the producer's transaction is already open in the partition. */
    public static final VerificationGuard NONE = new VerificationGuard(Short.MIN_VALUE, false);

    private final short producerEpoch;
    private final boolean supportsEpochBump;

    VerificationGuard(short producerEpoch, boolean supportsEpochBump) {
        this.producerEpoch = producerEpoch;
        this.supportsEpochBump = supportsEpochBump;
    }

    /** Whether the write comes from a transactions V2 client (Produce v12+), whose epoch every end bumps. */
    public boolean supportsEpochBump() {
        return supportsEpochBump;
    }

    /** The producer epoch the verification was started for. */
    public short producerEpoch() {
        return producerEpoch;
    }

    @Override
    public String toString() {
        return this == NONE ? "VerificationGuard(none)" : "VerificationGuard(epoch " + producerEpoch
                + (supportsEpochBump ? ", V2" : "") + ")";
    }
}
