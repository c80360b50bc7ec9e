package dev.varve.broker.replication;

import dev.varve.storage.LeaderEpochCache.EpochEndOffset;
import org.apache.kafka.common.protocol.Errors;

import java.util.Optional;

/**
 * The follower's side of a replica fetch, over its {@link ReplicaLog}: what one partition of a fetch
 * answer means and what it does to the log. The broker's {@code ReplicaFetcherThread} and the
 * replication simulation both run it; they own the network, the record bytes and the timing.
 *
 * <table>
 *   <caption>per-partition answer</caption>
 *   <tr><th>answer</th><th>here</th></tr>
 *   <tr><td>records</td><td>(the caller appends them) {@link #afterRecords}: HW := min(leader HW, own log end);
 *       the log start follows the leader's, never past the own HW</td></tr>
 *   <tr><td>diverging epoch</td><td>{@link #truncateOnDivergence}: where {@link FollowerTruncation#onLeaderAnswer}
 *       says; the next fetch carries the new last epoch (KIP-279)</td></tr>
 *   <tr><td>OFFSET_OUT_OF_RANGE</td><td>the caller asks the leader's log start and end, then
 *       {@link #resolveOutOfRange}</td></tr>
 *   <tr><td>the leader does not serve it (yet)</td><td>back off until metadata moves the partition</td></tr>
 * </table>
 * Before the first fetch from a leader, {@link #start}: a log with records but no epochs is cut to its
 * high watermark, as Kafka does.
 */
public final class FollowerReplica {
    private FollowerReplica() {
    }

    /** The kinds of per-partition answer. */
    public enum Answer {
        RECORDS,
        DIVERGING,
        OUT_OF_RANGE,
        /** NOT_LEADER_OR_FOLLOWER, FENCED/UNKNOWN_LEADER_EPOCH, UNKNOWN_TOPIC...: the leader has not applied the same metadata. */
        NOT_SERVED_YET,
        /** Anything else: back off and retry. */
        OTHER_ERROR
    }

    /** What {@link #resolveOutOfRange} did. */
    public enum OutOfRange {
        /** Above the leader's log end (it lost records, e.g. an unclean election): truncated to that end. */
        TRUNCATED_TO_LEADER_END,
        /** Below the leader's log start (the records are gone for good): emptied and restarted there. */
        RESTARTED_AT_LEADER_START,
        /** Within the leader's range now (it moved meanwhile): nothing done, retry after a back-off. */
        RETRY
    }

    /** What a divergence did: the step, and whether the log changed at all (if not, back off: asking again gets the same answer). */
    public record Divergence(FollowerTruncation.Step step, long logEndBefore, boolean changed) {
    }

    public static Answer classify(Errors error, boolean diverging) {
        return switch (error) {
            case NONE -> diverging ? Answer.DIVERGING : Answer.RECORDS;
            case OFFSET_OUT_OF_RANGE -> Answer.OUT_OF_RANGE;
            case NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH, UNKNOWN_TOPIC_OR_PARTITION,
                 UNKNOWN_TOPIC_ID, REPLICA_NOT_AVAILABLE, LEADER_NOT_AVAILABLE -> Answer.NOT_SERVED_YET;
            default -> Answer.OTHER_ERROR;
        };
    }

    /** Before the first fetch from a (new) leader; returns the truncation made, if any. */
    public static Optional<FollowerTruncation.Step> start(ReplicaLog log) {
        long leo = log.logEndOffset();
        if (!log.epochEntries().isEmpty() || leo <= log.highWatermark()) {
            return Optional.empty();
        }
        FollowerTruncation.Step step = FollowerTruncation.withoutLocalEpochs(leo, log.highWatermark());
        log.truncateTo(step.truncationOffset());
        return Optional.of(step);
    }

    /** The leader answered that the log diverges from {@code diverging}: truncate where both agree. */
    public static Divergence truncateOnDivergence(ReplicaLog log, EpochEndOffset diverging) {
        long endBefore = log.logEndOffset();
        int latestBefore = log.latestEpoch();
        FollowerTruncation.Step step = FollowerTruncation.onLeaderAnswer(log.epochEntries(), endBefore, log.highWatermark(), diverging);
        if (step.truncationOffset() < 0 || step.truncationOffset() > endBefore) {
            throw new IllegalStateException("truncation " + step + " outside [0, " + endBefore + "]");
        }
        log.truncateTo(step.truncationOffset());
        // a truncation cuts epochs only from the end: if any went, the latest did
        boolean changed = log.logEndOffset() != endBefore || log.latestEpoch() != latestBefore;
        return new Divergence(step, endBefore, changed);
    }

    /**
     * After the caller appended the answer's records: the high watermark is the leader's, capped at the
     * own log end ({@code leaderHighWatermark} &lt; 0: not sent); retention or DeleteRecords on the
     * leader moves the log start here too, never past what is committed here.
     */
    public static void afterRecords(ReplicaLog log, long leaderHighWatermark, long leaderLogStart) {
        if (leaderHighWatermark >= 0) {
            log.updateHighWatermark(Math.min(leaderHighWatermark, log.logEndOffset()));
        }
        long newStart = Math.min(leaderLogStart, log.highWatermark());
        if (newStart > log.logStartOffset()) {
            log.deleteRecordsBefore(newStart);
        }
    }

    /** The leader refused the fetch offset and has {@code [leaderStart, leaderEnd]}: follow it. */
    public static OutOfRange resolveOutOfRange(ReplicaLog log, long leaderStart, long leaderEnd) {
        long localEnd = log.logEndOffset();
        if (leaderEnd < localEnd) {
            log.truncateTo(leaderEnd);
            return OutOfRange.TRUNCATED_TO_LEADER_END;
        }
        if (leaderStart > localEnd) {
            log.truncateFullyAndStartAt(leaderStart);
            return OutOfRange.RESTARTED_AT_LEADER_START;
        }
        return OutOfRange.RETRY;
    }
}
