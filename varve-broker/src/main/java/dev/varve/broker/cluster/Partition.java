package dev.varve.broker.cluster;

import dev.varve.broker.replication.LeaderState;
import dev.varve.storage.PartitionLog;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.protocol.Errors;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * One partition this broker holds a replica of, in cluster mode: its log and its current role. As
 * leader it carries a {@link LeaderState} and the {@code acks=all} requests waiting for the high
 * watermark; as follower it is fed by a replica fetcher.
 *
 * <p>Guarded by its own monitor: every role change, leader append and follower-fetch update holds it,
 * so an append always carries the leader epoch the partition has at that moment.
 */
final class Partition {
    enum Role { LEADER, FOLLOWER }

    /** An acks=all request part waiting for the high watermark to reach {@code requiredOffset}. */
    static final class PendingAck {
        final long requiredOffset;
        final CompletableFuture<Errors> future = new CompletableFuture<>();

        PendingAck(long requiredOffset) {
            this.requiredOffset = requiredOffset;
        }
    }

    final TopicPartition tp;
    final Uuid topicId;
    final PartitionLog log;
    Role role;
    int leaderId;
    int leaderEpoch;
    int partitionEpoch;
    /** Non-null while leader. */
    LeaderState leader;
    final List<PendingAck> pendingAcks = new ArrayList<>();

    Partition(TopicPartition tp, Uuid topicId, PartitionLog log) {
        this.tp = tp;
        this.topicId = topicId;
        this.log = log;
    }

    /** Completes and removes the waiting acks the leader state now allows; returns them to complete outside the lock. */
    List<Runnable> completableAcks() {
        List<Runnable> done = new ArrayList<>();
        if (leader == null) {
            return done;
        }
        pendingAcks.removeIf(a -> {
            var status = leader.ackStatus(a.requiredOffset);
            if (status.isComplete()) {
                done.add(() -> a.future.complete(status.error()));
                return true;
            }
            return false;
        });
        return done;
    }

    /** Fails every waiting ack (leadership lost). */
    List<Runnable> failAcks(Errors error) {
        List<Runnable> done = new ArrayList<>();
        for (PendingAck a : pendingAcks) {
            done.add(() -> a.future.complete(error));
        }
        pendingAcks.clear();
        return done;
    }

    @Override
    public String toString() {
        return tp + "{" + role + ", leader=" + leaderId + ", epoch=" + leaderEpoch + "}";
    }
}
