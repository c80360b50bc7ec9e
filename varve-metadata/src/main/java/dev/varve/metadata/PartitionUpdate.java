package dev.varve.metadata;

import dev.varve.metadata.MetadataRecord.PartitionChange;
import org.apache.kafka.common.Uuid;

import java.util.ArrayList;
import java.util.List;
import java.util.function.IntPredicate;

/**
 * Builds the {@link PartitionChange} for one partition from a sequence of intentions (a broker left,
 * the leader asked for a new ISR, elect a leader...), keeping the replica-set invariants: ISR, ELR and
 * last-known ELR disjoint; leader -1 or in the ISR; the ISR emptied only by an unclean restart.
 * {@link #build()} emits only the fields that differ from the current state, or nothing.
 *
 * <p>Single-use, not thread-safe.
 */
final class PartitionUpdate {
    private final Uuid topicId;
    private final PartitionState current;
    private final IntPredicate eligible;
    private final boolean uncleanEnabled;
    private final int minIsr;
    private int leader;
    private List<Integer> isr;
    private List<Integer> elr;
    private List<Integer> lastKnownElr;
    private LeaderElection.Kind lastElection = LeaderElection.Kind.UNCHANGED;

    PartitionUpdate(Uuid topicId, PartitionState current, IntPredicate eligible, boolean uncleanEnabled, int minIsr) {
        this.topicId = topicId;
        this.current = current;
        this.eligible = eligible;
        this.uncleanEnabled = uncleanEnabled;
        this.minIsr = minIsr;
        this.leader = current.leader();
        this.isr = current.isr();
        this.elr = current.elr();
        this.lastKnownElr = current.lastKnownElr();
    }

    /**
     * Removes {@code broker} from the ISR unless it is the last member (the ISR never shrinks to empty
     * here); it joins the ELR when the ISR drops below {@code min.insync.replicas}. Does not elect.
     */
    PartitionUpdate removeFromIsr(int broker) {
        if (isr.contains(broker) && isr.size() > 1) {
            setIsr(without(isr, broker));
        }
        return this;
    }

    /** Sets the ISR (AlterPartition, or a shrink): ELR and last-known ELR follow the KIP-966 rules. */
    PartitionUpdate setIsr(List<Integer> newIsr) {
        elr = LeaderElection.elrAfterIsrChange(current.replicas(), isr, newIsr, elr, minIsr);
        lastKnownElr = minus(lastKnownElr, newIsr, elr);
        isr = List.copyOf(newIsr);
        return this;
    }

    /**
     * {@code broker} came back after an unclean shutdown: its log may miss records it acknowledged, so
     * it leaves the ISR (even as the last member) and the ELR, and is remembered in the last-known ELR.
     * Call {@link #electLeader()} afterwards.
     */
    PartitionUpdate uncleanRestart(int broker) {
        boolean wasMember = isr.contains(broker) || elr.contains(broker);
        if (!wasMember) {
            return this;
        }
        isr = without(isr, broker);
        elr = without(elr, broker);
        if (!lastKnownElr.contains(broker)) {
            List<Integer> l = new ArrayList<>(lastKnownElr);
            l.add(broker);
            lastKnownElr = inReplicaOrder(l);
        }
        if (!isr.contains(leader)) {
            leader = MetadataRecord.NO_LEADER;
        }
        return this;
    }

    /** Keeps the leader if it is still an eligible ISR member, otherwise runs {@link LeaderElection}. */
    PartitionUpdate electLeader() {
        LeaderElection.Result r = LeaderElection.elect(working(), eligible, uncleanEnabled, minIsr);
        lastElection = r.kind();
        leader = r.leader();
        isr = r.isr();
        elr = r.elr();
        lastKnownElr = r.lastKnownElr();
        return this;
    }

    /** Moves leadership to the preferred (first) replica; the caller checked it is an eligible ISR member. */
    PartitionUpdate electPreferred() {
        int preferred = current.preferredLeader();
        if (!isr.contains(preferred) || !eligible.test(preferred)) {
            throw new IllegalStateException("preferred replica " + preferred + " is not an eligible ISR member");
        }
        leader = preferred;
        lastKnownElr = List.of();
        lastElection = LeaderElection.Kind.ISR;
        return this;
    }

    /** The state as changed so far (epochs not yet bumped). */
    private PartitionState working() {
        return new PartitionState(current.partition(), current.replicas(), isr, elr, lastKnownElr, leader,
                current.leaderEpoch(), current.partitionEpoch());
    }

    LeaderElection.Kind lastElection() {
        return lastElection;
    }

    int leader() {
        return leader;
    }

    /** The record for everything that changed, or null when nothing did. */
    PartitionChange build() {
        if (leader != MetadataRecord.NO_LEADER && !isr.contains(leader)) {
            throw new IllegalStateException("leader " + leader + " outside ISR " + isr);
        }
        boolean leaderChanged = leader != current.leader();
        List<Integer> newIsr = isr.equals(current.isr()) ? null : isr;
        List<Integer> newElr = elr.equals(current.elr()) ? null : elr;
        List<Integer> newLastKnown = lastKnownElr.equals(current.lastKnownElr()) ? null : lastKnownElr;
        if (!leaderChanged && newIsr == null && newElr == null && newLastKnown == null) {
            return null;
        }
        return new PartitionChange(topicId, current.partition(), leaderChanged ? leader : MetadataRecord.NO_LEADER_CHANGE,
                null, newIsr, newElr, newLastKnown);
    }

    private List<Integer> inReplicaOrder(List<Integer> members) {
        List<Integer> out = new ArrayList<>(members.size());
        for (int r : current.replicas()) {
            if (members.contains(r)) {
                out.add(r);
            }
        }
        return out;
    }

    private static List<Integer> without(List<Integer> list, int broker) {
        if (!list.contains(broker)) {
            return list;
        }
        List<Integer> out = new ArrayList<>(list);
        out.remove(Integer.valueOf(broker));
        return List.copyOf(out);
    }

    private static List<Integer> minus(List<Integer> list, List<Integer> a, List<Integer> b) {
        List<Integer> out = new ArrayList<>(list.size());
        for (int r : list) {
            if (!a.contains(r) && !b.contains(r)) {
                out.add(r);
            }
        }
        return out.size() == list.size() ? list : List.copyOf(out);
    }
}
