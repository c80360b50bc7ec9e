package dev.varve.tests.chaos;

/**
 * The transactional safety violations {@link TxnChecker} looks for in a {@link TxnHistory}. Every read
 * is read_committed. "Final read" is the read of a partition after the run quiesced; a check that needs
 * it skips partitions whose final read did not complete. Names in brackets are the nearest terms of
 * Jepsen's Kafka queue checker and its Bufstream analysis.
 */
public enum TxnAnomaly {
    /**
     * A value of a transaction we aborted, or that no transaction wrote (or wrote to another partition),
     * received by a consumer or present in the final read. Count: such values. [G1a, aborted read]
     */
    ABORTED_READ,

    /**
     * A committed or unknown transaction whose values are partly in the final read: some present, others
     * missing (an unknown transaction may land or not, but all or nothing). Count: transactions.
     * [torn transaction / G1c-ish "partial"]
     */
    TORN_TRANSACTION,

    /**
     * A value of a committed transaction (commitTransaction returned), or a value a read_committed
     * consumer received, that is missing from the final read. Count: values. [lost-write]
     */
    LOST_WRITE,

    /**
     * A value at two or more positions (across consumers and the final read), or an input value that the
     * final read of the output holds more than one derived record of: processed twice under exactly-once.
     * Count: such values. [duplicate]
     */
    DUPLICATE,

    /**
     * A reader that received offsets {@code a < b} of a partition but not the committed record that the
     * final read has at an offset between them: read_committed skipped a committed record. Count:
     * (reader, position) pairs. [a torn read / nonmonotonic poll]
     */
    SKIPPED_READ,

    /**
     * The group's final committed offset of an input partition covers an input record (below it) whose
     * derived record is not in the final read of the output: offsets committed for records not produced.
     * Count: input values. [offsets committed without writes]
     */
    OFFSET_WITHOUT_OUTPUT,

    /**
     * A derived record in the final read of the output whose input record is at or beyond the group's final
     * committed offset, or not in the final read of the input at all: output produced for records whose
     * offsets were never committed. Count: output values.
     */
    OUTPUT_WITHOUT_OFFSET
}
