package dev.varve.metadata;

import dev.varve.metadata.MetadataRecord.PartitionChange;
import org.apache.kafka.common.Uuid;

import java.util.ArrayList;
import java.util.List;
import java.util.function.IntPredicate;

/**
 * Builds the {@link PartitionChange} for one partition from a sequence of intentions (a broker left,
 * the leader asked for a new ISR, elect a leader, start or cancel a reassignment...), keeping the
 * replica-set invariants: ISR, ELR and last-known ELR disjoint subsets of the replicas; leader -1 or in the
 * ISR; the ISR emptied only by an unclean restart (or the cancel of a reassignment that only an unclean
 * election can undo). {@link #build()} emits only the fields that differ from the current state, or nothing.
 *
 * <p><b>Reassignments (KIP-455)</b> complete in {@link #build()}, whatever the intention was, as soon as
 * every adding replica is in the ISR and the ISR keeps at least one target replica (Kafka's rule): the
 * replicas become the target, the ISR, ELR and last-known ELR lose the removing replicas, and a leader being
 * removed hands over to the first eligible target replica in the ISR. Whenever replicas are dropped (a
 * completion that removes some, a cancel) the leader epoch is bumped even if the leader stays, as Kafka does,
 * so that the dropped replicas' fetches are fenced.
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
    private List<Integer> replicas;
    private List<Integer> adding;
    private List<Integer> removing;
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
        this.replicas = current.replicas();
        this.adding = current.addingReplicas();
        this.removing = current.removingReplicas();
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
        elr = LeaderElection.elrAfterIsrChange(replicas, isr, newIsr, elr, minIsr);
        // Back at min.insync.replicas, records are acknowledged without the last-known ELR: they are no
        // longer candidates (Kafka clears it with the ELR).
        lastKnownElr = newIsr.size() >= minIsr ? List.of() : minus(lastKnownElr, newIsr, elr);
        isr = List.copyOf(newIsr);
        return this;
    }

    /**
     * {@code broker} came back after an unclean shutdown: its log may miss records it acknowledged, so
     * it leaves the ISR (even as the last member) and the ELR, and is remembered in the last-known ELR
     * if the ISR left behind is below {@code min.insync.replicas}.
     * Call {@link #electLeader()} afterwards.
     */
    PartitionUpdate uncleanRestart(int broker) {
        boolean wasMember = isr.contains(broker) || elr.contains(broker);
        if (!wasMember) {
            return this;
        }
        isr = without(isr, broker);
        elr = without(elr, broker);
        // A candidate only while the ISR left behind is below min.insync.replicas: its HW is frozen then, so
        // nothing is acknowledged without this broker. An ISR at min.insync.replicas carries on committing
        // without it, and electing it later would lose those records.
        if (isr.size() < minIsr && !lastKnownElr.contains(broker)) {
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

    /**
     * Starts a reassignment to {@code target} (checked by the caller: non-empty, no duplicates). Replicas
     * become the target followed by the current replicas it drops (removing); adding = the target replicas
     * that are not current replicas, or that an ongoing reassignment being replaced was still adding (they
     * may not have caught up; Kafka would sometimes forget them and complete without them). The ISR is
     * unchanged. A target that only drops or reorders replicas completes in {@link #build()} at once (if a
     * target replica is in the ISR).
     */
    PartitionUpdate startReassignment(List<Integer> target) {
        List<Integer> merged = new ArrayList<>(target);
        List<Integer> dropped = new ArrayList<>();
        for (int r : replicas) {
            if (!target.contains(r)) {
                merged.add(r);
                dropped.add(r);
            }
        }
        List<Integer> added = new ArrayList<>();
        for (int r : target) {
            if (!replicas.contains(r) || adding.contains(r)) {
                added.add(r);
            }
        }
        replicas = List.copyOf(merged);
        adding = List.copyOf(added);
        removing = List.copyOf(dropped);
        return this;
    }

    /**
     * Cancels the ongoing reassignment: the adding replicas leave the replicas, ISR, ELR and last-known ELR;
     * the removing ones stay. A leader that was being added hands over ({@link #electLeader()}). The caller
     * checks that an original replica is in the ISR unless unclean election is allowed (the ISR may then
     * become empty and the election unclean).
     */
    PartitionUpdate cancelReassignment() {
        List<Integer> added = adding;
        replicas = without(replicas, added);
        isr = without(isr, added);
        elr = without(elr, added);
        lastKnownElr = without(lastKnownElr, added);
        adding = List.of();
        removing = List.of();
        if (!isr.contains(leader)) {
            leader = MetadataRecord.NO_LEADER;
            electLeader();
        }
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
        return new PartitionState(current.partition(), replicas, isr, elr, lastKnownElr, leader,
                current.leaderEpoch(), current.partitionEpoch(), adding, removing);
    }

    /** Completes the ongoing reassignment when every adding replica is in the ISR and a target replica is (see class doc). */
    private void completeReassignmentIfDone() {
        if (adding.isEmpty() && removing.isEmpty() || !isr.containsAll(adding)) {
            return;
        }
        List<Integer> targetIsr = without(isr, removing);
        if (targetIsr.isEmpty()) {
            return;
        }
        replicas = without(replicas, removing);
        isr = targetIsr;
        elr = without(elr, removing);
        lastKnownElr = without(lastKnownElr, removing);
        adding = List.of();
        removing = List.of();
        if (!isr.contains(leader)) {
            electLeader();
        }
    }

    LeaderElection.Kind lastElection() {
        return lastElection;
    }

    int leader() {
        return leader;
    }

    /** The record for everything that changed (completing a reassignment if it can), or null when nothing did. */
    PartitionChange build() {
        completeReassignmentIfDone();
        if (leader != MetadataRecord.NO_LEADER && !isr.contains(leader)) {
            throw new IllegalStateException("leader " + leader + " outside ISR " + isr);
        }
        if (!replicas.containsAll(isr) || !replicas.containsAll(adding) || !replicas.containsAll(removing)) {
            throw new IllegalStateException("ISR " + isr + ", adding " + adding + " or removing " + removing
                    + " outside replicas " + replicas);
        }
        boolean bumpLeaderEpoch = leader != current.leader() || !replicas.containsAll(current.replicas());
        List<Integer> newReplicas = replicas.equals(current.replicas()) ? null : replicas;
        List<Integer> newIsr = isr.equals(current.isr()) ? null : isr;
        List<Integer> newElr = elr.equals(current.elr()) ? null : elr;
        List<Integer> newLastKnown = lastKnownElr.equals(current.lastKnownElr()) ? null : lastKnownElr;
        List<Integer> newAdding = adding.equals(current.addingReplicas()) ? null : adding;
        List<Integer> newRemoving = removing.equals(current.removingReplicas()) ? null : removing;
        if (!bumpLeaderEpoch && newReplicas == null && newIsr == null && newElr == null && newLastKnown == null
                && newAdding == null && newRemoving == null) {
            return null;
        }
        return new PartitionChange(topicId, current.partition(), bumpLeaderEpoch ? leader : MetadataRecord.NO_LEADER_CHANGE,
                newReplicas, newIsr, newElr, newLastKnown, newAdding, newRemoving);
    }

    private List<Integer> inReplicaOrder(List<Integer> members) {
        List<Integer> out = new ArrayList<>(members.size());
        for (int r : replicas) {
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

    /** {@code list} without the members of {@code gone}, in its order; the same list when nothing is removed. */
    private static List<Integer> without(List<Integer> list, List<Integer> gone) {
        List<Integer> out = new ArrayList<>(list.size());
        for (int r : list) {
            if (!gone.contains(r)) {
                out.add(r);
            }
        }
        return out.size() == list.size() ? list : List.copyOf(out);
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
