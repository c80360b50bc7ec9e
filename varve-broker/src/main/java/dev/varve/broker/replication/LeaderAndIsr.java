package dev.varve.broker.replication;

import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * One partition's leadership as committed by the controller: who leads, in which leader epoch, the
 * partition epoch (bumped by every committed change, Kafka's {@code partitionEpoch}), the assigned
 * replicas and the in-sync replicas.
 *
 * <p>Immutable value; the sets are copied and sorted so equal states compare equal.
 *
 * @param leaderId       the leader's broker id
 * @param leaderEpoch    the leader epoch, bumped on every leader change
 * @param partitionEpoch the partition epoch, bumped on every committed change (ISR or leader)
 * @param replicas       the assigned replicas, leader included, in assignment order
 * @param isr            the committed in-sync replicas, a subset of {@code replicas}, leader included
 */
public record LeaderAndIsr(int leaderId, int leaderEpoch, int partitionEpoch, List<Integer> replicas, Set<Integer> isr) {
    public LeaderAndIsr {
        if (leaderEpoch < 0 || partitionEpoch < 0) {
            throw new IllegalArgumentException("negative epoch: leaderEpoch=" + leaderEpoch + ", partitionEpoch=" + partitionEpoch);
        }
        replicas = List.copyOf(replicas);
        if (replicas.size() != Set.copyOf(replicas).size()) {
            throw new IllegalArgumentException("duplicate replica in " + replicas);
        }
        isr = java.util.Collections.unmodifiableSet(new TreeSet<>(isr));
        if (!replicas.containsAll(isr)) {
            throw new IllegalArgumentException("ISR " + isr + " is not a subset of the replicas " + replicas);
        }
        if (!isr.contains(leaderId)) {
            throw new IllegalArgumentException("leader " + leaderId + " is not in the ISR " + isr);
        }
    }
}
