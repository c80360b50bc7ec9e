package dev.varve.tests.chaos;

/**
 * The consumer-group safety violations {@link GroupChecker} looks for in a {@link GroupHistory}. A member's
 * ownership of a partition is an interval of its own clock: from its onPartitionsAssigned to its
 * onPartitionsRevoked or onPartitionsLost, or to the moment it stopped.
 */
public enum GroupAnomaly {
    /**
     * Two members owned a partition at once, and the earlier owner's interval did not end with
     * onPartitionsLost: the coordinator gave the partition away before its owner revoked it, crashed or was
     * fenced (a fenced zombie that learns it late is Kafka's semantics; those overlaps are counted in the
     * report, not here). Count: overlapping pairs of intervals.
     */
    DOUBLE_OWNER,

    /**
     * Two owners that look like a fenced zombie and its successor (the earlier interval ended with
     * onPartitionsLost), except that a commit of the partition by the earlier owner succeeded although it was
     * sent after the later owner had been assigned it: the coordinator either accepted a fenced member's commit,
     * or gave away the partition of a member it still held live (a double owner whose earlier owner happened to
     * be fenced later). Count: such overlapping pairs (the example names the first such commit).
     */
    ZOMBIE_COMMIT,

    /**
     * A partition's committed offset went backwards: a successful commit lower than one that had completed
     * before it was sent; the final committed offset (Admin) lower than a successful commit, or missing; or a
     * member that, newly assigned a partition, was first delivered a record below a commit that had completed
     * before the assignment (the offset it read back went backwards). Count: such observations.
     */
    OFFSET_BACKWARDS,

    /**
     * An acknowledged record below its partition's final committed offset that no member was ever delivered
     * (at that offset, with that value): the group moved past it without reading it. Count: records.
     */
    SKIPPED
}
