package dev.varve.broker.replication;

import org.apache.kafka.common.protocol.Errors;

/**
 * Where an {@code acks=all} produce request stands once its batches are in the leader's log
 * ({@link LeaderState#ackStatus(long)}).
 */
public enum AckStatus {
    /** The high watermark has not reached the batches yet: keep the request in the purgatory. */
    PENDING(Errors.NONE),
    /** Every member of the ISR has the batches and the ISR is at least {@code min.insync.replicas}. */
    DONE(Errors.NONE),
    /**
     * The batches are committed (below the high watermark) but the ISR shrank below
     * {@code min.insync.replicas} before the answer: Kafka's NOT_ENOUGH_REPLICAS_AFTER_APPEND (the
     * client retries; an idempotent producer's retry is deduplicated).
     */
    NOT_ENOUGH_REPLICAS_AFTER_APPEND(Errors.NOT_ENOUGH_REPLICAS_AFTER_APPEND),
    /**
     * The replica no longer leads in the leader epoch of the append ({@link PartitionReplica#ackStatus}):
     * the batches may have been truncated away and their offsets reused by a later epoch, so no later
     * high watermark may acknowledge them. The client retries.
     */
    NOT_LEADER(Errors.NOT_LEADER_OR_FOLLOWER);

    private final Errors error;

    AckStatus(Errors error) {
        this.error = error;
    }

    /** The error code to answer with once the request is complete ({@link Errors#NONE} for DONE). */
    public Errors error() {
        return error;
    }

    public boolean isComplete() {
        return this != PENDING;
    }
}
