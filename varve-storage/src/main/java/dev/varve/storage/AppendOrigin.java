package dev.varve.storage;

/**
 * Who writes a batch as leader, which decides the producer-state checks it gets (Kafka's
 * {@code AppendOrigin}).
 */
public enum AppendOrigin {
    /** A producer: epoch, sequence and duplicate checks. */
    CLIENT,
    /**
     * A coordinator writing its own partition, such as a transactional offset commit in
     * {@code __consumer_offsets}: the batch carries a producer's id and epoch but not that producer's
     * sequence, so only the epoch is checked (no sequence or duplicate checks).
     */
    COORDINATOR
}
