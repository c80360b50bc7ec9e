package dev.varve.broker.group;

import org.apache.kafka.common.protocol.Errors;

/**
 * Whether this broker coordinates a group right now. In a cluster a group belongs to the leader of its
 * {@code __consumer_offsets} partition, and only once that partition's records are loaded: the answer is
 * NONE, COORDINATOR_LOAD_IN_PROGRESS (loading; the client retries) or NOT_COORDINATOR (the client looks
 * the coordinator up again). A single node coordinates every group.
 */
@FunctionalInterface
public interface CoordinatorGate {
    CoordinatorGate ALWAYS = groupId -> Errors.NONE;

    Errors check(String groupId);

    /**
     * As {@link #check}, for the groups of one {@code __consumer_offsets} partition: what a transaction
     * marker for that partition should get before it is written and {@link
     * TransactionalOffsets#completeTransaction} is called (a partition still loading would miss it).
     */
    default Errors checkPartition(int offsetsPartition) {
        return Errors.NONE;
    }
}
