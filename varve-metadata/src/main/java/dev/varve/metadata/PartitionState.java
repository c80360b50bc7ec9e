package dev.varve.metadata;

import dev.varve.metadata.MetadataRecord.PartitionChange;
import dev.varve.metadata.MetadataRecord.PartitionRecord;
import org.apache.kafka.common.Uuid;

import java.util.ArrayList;
import java.util.List;

/**
 * One partition's replication state in the metadata image. Immutable.
 *
 * <p>Invariants the controller keeps (and the property tests check): the ISR, ELR and last-known-ELR
 * are disjoint subsets of the replicas; the leader is -1 or an ISR member; epochs never decrease;
 * adding and removing replicas are disjoint subsets of the replicas.
 *
 * <h2>Reassignment (KIP-455)</h2>
 * While a reassignment is in progress ({@link #isReassigning()}) {@code replicas} is the target
 * followed by the old replicas the target drops ({@code removingReplicas}); {@code addingReplicas} are
 * the target replicas the partition did not have. Followers fetch for every replica; the reassignment
 * completes (replicas become the target, removing replicas leave the ISR) once every adding replica is in
 * the ISR and some target replica is in it ({@link PartitionUpdate}).
 *
 * @param replicas         the assigned replicas; the first is the preferred leader
 * @param isr              in-sync replicas: hold every committed record. Never emptied by fencing: when its
 *                         last member fails, that member stays so it can lead again when it returns
 * @param elr              eligible leader replicas (KIP-966): removed from the ISR while it was below
 *                         {@code min.insync.replicas}, so they hold every record acknowledged to {@code acks=all}
 * @param lastKnownElr     last ISR/ELR members that came back after an unclean shutdown, leaving an ISR below
 *                         {@code min.insync.replicas}; cleared when the ISR is back at it (see {@link LeaderElection})
 * @param leader           broker id, or {@link MetadataRecord#NO_LEADER}
 * @param leaderEpoch      bumped by every leader change (including to and from no leader), and when a
 *                         reassignment drops replicas
 * @param partitionEpoch   bumped by every change
 * @param addingReplicas   replicas an ongoing reassignment adds (in target order); empty when none
 * @param removingReplicas replicas an ongoing reassignment removes (in old replica order); empty when none
 */
public record PartitionState(int partition, List<Integer> replicas, List<Integer> isr, List<Integer> elr,
                             List<Integer> lastKnownElr, int leader, int leaderEpoch, int partitionEpoch,
                             List<Integer> addingReplicas, List<Integer> removingReplicas) {
    public PartitionState {
        replicas = List.copyOf(replicas);
        isr = List.copyOf(isr);
        elr = List.copyOf(elr);
        lastKnownElr = List.copyOf(lastKnownElr);
        addingReplicas = List.copyOf(addingReplicas);
        removingReplicas = List.copyOf(removingReplicas);
    }

    /** A partition with no reassignment in progress. */
    public PartitionState(int partition, List<Integer> replicas, List<Integer> isr, List<Integer> elr,
                          List<Integer> lastKnownElr, int leader, int leaderEpoch, int partitionEpoch) {
        this(partition, replicas, isr, elr, lastKnownElr, leader, leaderEpoch, partitionEpoch, List.of(), List.of());
    }

    static PartitionState of(PartitionRecord r) {
        return new PartitionState(r.partition(), r.replicas(), r.isr(), r.elr(), r.lastKnownElr(), r.leader(),
                r.leaderEpoch(), r.partitionEpoch(), r.addingReplicas(), r.removingReplicas());
    }

    PartitionRecord toRecord(Uuid topicId) {
        return new PartitionRecord(topicId, partition, replicas, isr, elr, lastKnownElr, leader, leaderEpoch, partitionEpoch,
                addingReplicas, removingReplicas);
    }

    /** This state with {@code change} applied: partition epoch + 1, leader epoch + 1 when the leader is set. */
    PartitionState apply(PartitionChange change) {
        boolean newLeader = change.changesLeader();
        return new PartitionState(partition,
                change.replicas() != null ? change.replicas() : replicas,
                change.isr() != null ? change.isr() : isr,
                change.elr() != null ? change.elr() : elr,
                change.lastKnownElr() != null ? change.lastKnownElr() : lastKnownElr,
                newLeader ? change.leader() : leader,
                newLeader ? leaderEpoch + 1 : leaderEpoch,
                partitionEpoch + 1,
                change.addingReplicas() != null ? change.addingReplicas() : addingReplicas,
                change.removingReplicas() != null ? change.removingReplicas() : removingReplicas);
    }

    public boolean hasLeader() {
        return leader != MetadataRecord.NO_LEADER;
    }

    /** The first assigned replica: where preferred-leader election moves leadership. */
    public int preferredLeader() {
        return replicas.isEmpty() ? MetadataRecord.NO_LEADER : replicas.get(0);
    }

    /** True while a reassignment is in progress (Kafka's rule: something is being added or removed). */
    public boolean isReassigning() {
        return !addingReplicas.isEmpty() || !removingReplicas.isEmpty();
    }

    /** The replicas the partition will have once any reassignment completes: {@code replicas} minus the removing ones. */
    public List<Integer> targetReplicas() {
        if (removingReplicas.isEmpty()) {
            return replicas;
        }
        List<Integer> out = new ArrayList<>(replicas.size());
        for (int r : replicas) {
            if (!removingReplicas.contains(r)) {
                out.add(r);
            }
        }
        return List.copyOf(out);
    }
}
