package dev.varve.tests.chaos;

/**
 * The safety violations {@link Checker} looks for. A <em>position</em> is a (partition, offset) pair.
 * "Final read" means the records of the {@link History.FinalRead} events of a partition; a kind that
 * needs the final read of a partition skips partitions that were never finally read (the
 * {@link Report.Liveness} flag reports those). Names in brackets are the nearest term of Jepsen's
 * Kafka/Redpanda queue checker. One fault can show up as several kinds: a record read, truncated
 * away and replaced is both a {@link #LOST_READ} and an {@link #INCONSISTENT_OFFSET}.
 */
public enum Anomaly {
    /**
     * An acknowledged value ({@link History.SendOk}) that is absent from the final read of its partition.
     * Count: such values. [lost-write; Jepsen infers it from later polls, we from the final read.]
     */
    LOST,

    /**
     * A value observed at two or more positions, counting polls and the final read (not acks: an ack
     * whose offset disagrees with the log is an {@link #INCONSISTENT_OFFSET}). Reading the same position
     * twice is not a duplicate. Count: such values. [duplicate]
     */
    DUPLICATE,

    /**
     * One producer process, one partition: value {@code a} was acknowledged before the send of value
     * {@code b} was invoked, yet {@code b}'s final offset is lower than {@code a}'s. Sends that were in
     * flight together are not ordered by this check, so it holds whatever {@code max.in.flight} is.
     * Uses the lowest final offset of each value. Count: such values {@code b}. [nonmonotonic-send]
     */
    REORDER,

    /**
     * One position observed with two or more different values, across acknowledged offsets, polls and
     * the final read (e.g. an ack says offset 5 holds {@code a}, the log has {@code b} at 5).
     * Count: such positions. [inconsistent-offsets]
     */
    INCONSISTENT_OFFSET,

    /**
     * A value a consumer polled at a position where the final read does not have it: it was read and
     * then truncated away, i.e. served above the committed offset (high watermark). Count: distinct
     * (position, value) pairs polled. [no direct Jepsen counterpart]
     */
    LOST_READ,

    /**
     * A value polled or in the final read that no send invoked, whose send failed definitely, or that
     * was seen in a partition other than the one it was sent to. Count: such values.
     * [G1a (aborted read) for definite failures]
     */
    UNEXPECTED
}
