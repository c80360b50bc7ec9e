package dev.varve.broker.txn;

import java.util.EnumSet;
import java.util.Set;

/**
 * The states of a transactional id at its coordinator, with Kafka's ids (stored in
 * {@code __transaction_state}) and names (what DescribeTransactions and ListTransactions answer):
 *
 * <pre>
 *   Empty ──AddPartitions──▶ Ongoing ──EndTxn(commit)──▶ PrepareCommit ──markers written──▶ CompleteCommit
 *     ▲                        │   └──EndTxn(abort) / timeout──▶ PrepareAbort ──markers written──▶ CompleteAbort
 *     └── InitProducerId ◀─────┴── (from Empty, CompleteCommit or CompleteAbort)      PrepareEpochFence: a new
 *                                                                                 producer fences an Ongoing one
 * </pre>
 *
 * {@link #validPreviousStates} is Kafka's table; a transition from any other state is a bug in
 * the coordinator, never the client's fault.
 */
public enum TransactionState {
    EMPTY((byte) 0, "Empty", true),
    ONGOING((byte) 1, "Ongoing", false),
    PREPARE_COMMIT((byte) 2, "PrepareCommit", false),
    PREPARE_ABORT((byte) 3, "PrepareAbort", false),
    COMPLETE_COMMIT((byte) 4, "CompleteCommit", true),
    COMPLETE_ABORT((byte) 5, "CompleteAbort", true),
    DEAD((byte) 6, "Dead", false),
    PREPARE_EPOCH_FENCE((byte) 7, "PrepareEpochFence", false);

    private final byte id;
    private final String stateName;
    private final boolean expirationAllowed;

    TransactionState(byte id, String stateName, boolean expirationAllowed) {
        this.id = id;
        this.stateName = stateName;
        this.expirationAllowed = expirationAllowed;
    }

    public byte id() {
        return id;
    }

    /** Kafka's name of the state, as the Admin API reports it. */
    public String stateName() {
        return stateName;
    }

    /** Whether {@code transactional.id.expiration.ms} may remove an id in this state (no transaction in flight). */
    public boolean isExpirationAllowed() {
        return expirationAllowed;
    }

    public Set<TransactionState> validPreviousStates() {
        return switch (this) {
            case EMPTY -> EnumSet.of(EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT);
            case ONGOING -> EnumSet.of(ONGOING, EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT);
            case PREPARE_COMMIT -> EnumSet.of(ONGOING);
            // transactions V2 may abort with nothing open (a client's abort after a failed send)
            case PREPARE_ABORT -> EnumSet.of(ONGOING, PREPARE_EPOCH_FENCE, EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT);
            case COMPLETE_COMMIT -> EnumSet.of(PREPARE_COMMIT);
            case COMPLETE_ABORT -> EnumSet.of(PREPARE_ABORT);
            case DEAD -> EnumSet.of(EMPTY, COMPLETE_COMMIT, COMPLETE_ABORT);
            case PREPARE_EPOCH_FENCE -> EnumSet.of(ONGOING);
        };
    }

    /**
     * The state with this stored id.
     *
     * @throws IllegalArgumentException for an id Kafka does not define
     */
    public static TransactionState fromId(byte id) {
        for (TransactionState s : values()) {
            if (s.id == id) {
                return s;
            }
        }
        throw new IllegalArgumentException("unknown transaction state id " + id);
    }
}
