package dev.varve.broker.replication;

import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * An ISR change the leader asks the controller to commit (the body of one AlterPartition entry).
 * The leader relies on a change only once it is committed: see {@link LeaderState}.
 *
 * <p>Identity matters: {@link LeaderState#onIsrCommitted} and {@link LeaderState#onIsrRejected}
 * take the proposal object they answer, so a late answer to a superseded proposal is ignored.
 *
 * @param kind           expansion (one replica joins) or shrink (lagging replicas leave)
 * @param leaderId       the proposing leader
 * @param leaderEpoch    the leader epoch the proposal was made in (the controller fences older ones)
 * @param partitionEpoch the partition epoch the proposal is based on (the controller refuses stale ones
 *                       with INVALID_UPDATE_VERSION)
 * @param newIsr         the proposed ISR with each member's broker epoch as last seen by the leader
 *                       (KIP-903: {@code -1} when unknown; the controller refuses a member whose broker
 *                       restarted since, with INELIGIBLE_REPLICA)
 * @param changed        the replicas added (expansion) or removed (shrink)
 */
public record IsrChangeProposal(Kind kind, int leaderId, int leaderEpoch, int partitionEpoch,
                                List<IsrMember> newIsr, Set<Integer> changed) {

    public enum Kind { EXPAND, SHRINK }

    /** One proposed ISR member: broker id and broker epoch ({@code -1} if unknown). */
    public record IsrMember(int brokerId, long brokerEpoch) {
    }

    public IsrChangeProposal {
        newIsr = List.copyOf(newIsr);
        changed = java.util.Collections.unmodifiableSet(new TreeSet<>(changed));
        if (changed.isEmpty()) {
            throw new IllegalArgumentException("a proposal must change the ISR");
        }
    }

    /** The proposed ISR's broker ids, sorted. */
    public Set<Integer> newIsrIds() {
        return newIsr.stream().map(IsrMember::brokerId).collect(Collectors.toCollection(TreeSet::new));
    }

    // Identity semantics on purpose: two proposals with equal contents made at different times are
    // different requests, and an answer belongs to exactly one of them.
    @Override
    public boolean equals(Object o) {
        return this == o;
    }

    @Override
    public int hashCode() {
        return System.identityHashCode(this);
    }
}
