package dev.varve.broker.replication;

import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.RecordBatch;

/**
 * Fencing by leader epoch: the check a leader makes on the {@code CurrentLeaderEpoch} of a Fetch,
 * OffsetForLeaderEpoch or ListOffsets request (Kafka's {@code Partition.validateLeaderEpoch}, KIP-320).
 * A replica that is not the leader answers NOT_LEADER_OR_FOLLOWER before this check.
 *
 * <p>Thread-safety: stateless.
 */
public final class EpochFencing {
    private EpochFencing() {
    }

    /**
     * @param requestLeaderEpoch the request's current leader epoch, {@code -1} when the client sent none
     * @param localLeaderEpoch   this replica's leader epoch for the partition
     * @return NONE when absent or equal; FENCED_LEADER_EPOCH when the request's epoch is older (the
     *         sender is behind and must refresh its metadata); UNKNOWN_LEADER_EPOCH when it is newer
     *         (this replica is behind, possibly a stale leader: it must not answer)
     */
    public static Errors validate(int requestLeaderEpoch, int localLeaderEpoch) {
        if (requestLeaderEpoch == RecordBatch.NO_PARTITION_LEADER_EPOCH || requestLeaderEpoch == localLeaderEpoch) {
            return Errors.NONE;
        }
        return requestLeaderEpoch < localLeaderEpoch ? Errors.FENCED_LEADER_EPOCH : Errors.UNKNOWN_LEADER_EPOCH;
    }
}
