package dev.varve.broker.cluster;

import dev.varve.broker.replication.AckStatus;
import dev.varve.broker.replication.PartitionReplica;
import dev.varve.storage.PartitionLog;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.protocol.Errors;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * One partition this broker holds a replica of, in cluster mode: its log, its replica state machine
 * ({@link PartitionReplica}: role, epochs, and as leader the ISR and high watermark) and the
 * {@code acks=all} requests waiting for the high watermark; as follower it is fed by a replica fetcher.
 *
 * <p>Guarded by its own monitor: every role change, leader append and follower-fetch update holds it,
 * so an append always carries the leader epoch the partition has at that moment.
 */
final class Partition {
    /** An acks=all request part appended in {@code leaderEpoch}, waiting for the high watermark to reach {@code requiredOffset}. */
    static final class PendingAck {
        final int leaderEpoch;
        final long requiredOffset;
        /** A DeleteRecords waiting for the low watermark (every live replica's log start), not the HW. */
        final boolean lowWatermark;
        final CompletableFuture<Errors> future = new CompletableFuture<>();

        PendingAck(int leaderEpoch, long requiredOffset) {
            this(leaderEpoch, requiredOffset, false);
        }

        PendingAck(int leaderEpoch, long requiredOffset, boolean lowWatermark) {
            this.leaderEpoch = leaderEpoch;
            this.requiredOffset = requiredOffset;
            this.lowWatermark = lowWatermark;
        }

        /** The answer now, or null while it waits. Caller holds the partition. */
        Errors status(PartitionReplica replica) {
            if (lowWatermark) {
                return replica.lowWatermarkStatus(leaderEpoch, requiredOffset);
            }
            AckStatus status = replica.ackStatus(leaderEpoch, requiredOffset);
            return status.isComplete() ? status.error() : null;
        }
    }

    final TopicPartition tp;
    final Uuid topicId;
    final PartitionLog log;
    final PartitionReplica replica;
    final List<PendingAck> pendingAcks = new ArrayList<>();

    Partition(TopicPartition tp, Uuid topicId, PartitionLog log, int localId, long replicaLagTimeMaxMs) {
        this.tp = tp;
        this.topicId = topicId;
        this.log = log;
        this.replica = new PartitionReplica(localId, new StorageReplicaLog(log), replicaLagTimeMaxMs);
    }

    /** Completes and removes the waiting acks the replica now decides; returns them to complete outside the lock. */
    List<Runnable> completableAcks() {
        List<Runnable> done = new ArrayList<>();
        pendingAcks.removeIf(a -> {
            Errors status = a.status(replica);
            if (status != null) {
                done.add(() -> a.future.complete(status));
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
        return tp + "{" + replica + "}";
    }
}
