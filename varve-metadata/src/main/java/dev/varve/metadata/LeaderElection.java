package dev.varve.metadata;

import java.util.ArrayList;
import java.util.List;
import java.util.function.IntPredicate;

/**
 * Who may lead a partition. Pure functions over a {@link PartitionState} and a liveness predicate
 * ("eligible": registered, unfenced, not in controlled shutdown).
 *
 * <h2>Order of candidates</h2>
 * Within each step candidates are tried in replica order, except that replicas an ongoing reassignment
 * is removing come last: one is elected only when no other candidate of that step is eligible (Kafka's
 * rule; the current leader may stay even if it is being removed, until the reassignment completes).
 * <ol>
 *   <li>The current leader, if it is still eligible and in the ISR (no change).</li>
 *   <li><b>ISR</b>: the first eligible ISR member in replica order.</li>
 *   <li><b>ELR</b> (KIP-966), when no ISR member is eligible: the first eligible member of the eligible
 *       leader replicas. They left the ISR while it was below {@code min.insync.replicas}, so no
 *       {@code acks=all} write was acknowledged without them. The new ISR is {@code [leader]}; the old
 *       ISR members join the ELR by the same rule.</li>
 *   <li><b>Last replica standing</b>, when the ISR <em>and</em> the ELR are empty: the first eligible
 *       member of the last-known ELR (see below).</li>
 *   <li><b>Unclean</b>, only when {@code unclean.leader.election.enable} is true for the topic: any
 *       eligible replica. ISR becomes {@code [leader]}, ELR and last-known ELR are cleared.</li>
 *   <li>Otherwise no leader (-1): the ISR is kept, so its members can lead again when they return.</li>
 * </ol>
 *
 * <h2>The last replica standing (KIP-966's concern)</h2>
 * Fencing never empties the ISR: its last member stays in it, leaderless, and leads again when it
 * returns. If that return follows an <em>unclean</em> shutdown (its registration does not carry the
 * broker epoch it shut down cleanly with), its log may have lost an unflushed tail that it had
 * acknowledged, so it is moved out of the ISR (and any ELR) into the <em>last-known ELR</em>:
 * <ul>
 *   <li>if some replica is in the ELR, i.e. provably holds every {@code acks=all} record, the
 *       partition waits for that replica rather than trust the survivor;</li>
 *   <li>if nobody is in the ELR (typical with {@code min.insync.replicas=1}, and always with one
 *       replica), no other replica can hold more acknowledged data than the survivor, so it is elected
 *       as soon as it is unfenced: availability is kept, and the records lost are exactly those a
 *       single machine loses in a power failure (acknowledged but not yet fsynced). Refusing it would
 *       keep the partition offline without recovering anything.</li>
 * </ul>
 * A broker that restarted after {@code kill -9} (page cache intact) is treated the same as after a
 * power failure: the controller cannot tell them apart.
 *
 * <p>Stateless; thread-safe.
 */
public final class LeaderElection {
    /** How the leader was chosen. */
    public enum Kind {
        /** The current leader stays. */
        UNCHANGED,
        /** From the ISR. */
        ISR,
        /** From the eligible leader replicas (KIP-966). */
        ELR,
        /** The last replica standing, back after an unclean shutdown with nobody better. */
        LAST_KNOWN_ELR,
        /** From outside the ISR: {@code unclean.leader.election.enable} was on. */
        UNCLEAN,
        /** No candidate: the partition is offline. */
        NONE
    }

    /** The outcome: the new leader (or -1) and the replica sets that go with it. */
    public record Result(int leader, List<Integer> isr, List<Integer> elr, List<Integer> lastKnownElr, Kind kind) {
        public Result {
            isr = List.copyOf(isr);
            elr = List.copyOf(elr);
            lastKnownElr = List.copyOf(lastKnownElr);
        }
    }

    private LeaderElection() {
    }

    /**
     * Elects a leader for {@code p} following the order above.
     *
     * @param eligible       whether a broker may lead (registered, unfenced, not shutting down)
     * @param uncleanEnabled the topic's {@code unclean.leader.election.enable}
     * @param minIsr         the topic's {@code min.insync.replicas}
     */
    public static Result elect(PartitionState p, IntPredicate eligible, boolean uncleanEnabled, int minIsr) {
        if (p.hasLeader() && p.isr().contains(p.leader()) && eligible.test(p.leader())) {
            return new Result(p.leader(), p.isr(), p.elr(), p.lastKnownElr(), Kind.UNCHANGED);
        }
        List<Integer> order = candidateOrder(p);
        int fromIsr = firstEligible(order, p.isr(), eligible);
        if (fromIsr >= 0) {
            return new Result(fromIsr, p.isr(), p.elr(), List.of(), Kind.ISR);
        }
        int fromElr = firstEligible(order, p.elr(), eligible);
        if (fromElr >= 0) {
            List<Integer> isr = List.of(fromElr);
            return new Result(fromElr, isr, elrAfterIsrChange(p.replicas(), p.isr(), isr, p.elr(), minIsr), List.of(), Kind.ELR);
        }
        if (p.isr().isEmpty() && p.elr().isEmpty()) {
            int lastStanding = firstEligible(order, p.lastKnownElr(), eligible);
            if (lastStanding >= 0) {
                return new Result(lastStanding, List.of(lastStanding), List.of(), List.of(), Kind.LAST_KNOWN_ELR);
            }
        }
        if (uncleanEnabled) {
            int any = firstEligible(order, p.replicas(), eligible);
            if (any >= 0) {
                return new Result(any, List.of(any), List.of(), List.of(), Kind.UNCLEAN);
            }
        }
        return new Result(MetadataRecord.NO_LEADER, p.isr(), p.elr(), p.lastKnownElr(), Kind.NONE);
    }

    /**
     * The ELR after the ISR changes from {@code oldIsr} to {@code newIsr}: empty once the new ISR reaches
     * {@code minIsr}; otherwise the old ELR minus new ISR members, plus the members that just left the
     * ISR (they hold everything an {@code acks=all} producer was told is written). In replica order.
     */
    public static List<Integer> elrAfterIsrChange(List<Integer> replicas, List<Integer> oldIsr, List<Integer> newIsr,
                                                  List<Integer> oldElr, int minIsr) {
        if (newIsr.size() >= minIsr) {
            return List.of();
        }
        List<Integer> out = new ArrayList<>();
        for (int r : replicas) {
            boolean left = oldIsr.contains(r) && !newIsr.contains(r);
            boolean stays = oldElr.contains(r) && !newIsr.contains(r);
            if (left || stays) {
                out.add(r);
            }
        }
        return out;
    }

    /** The replicas in the order elections try them: replica order, the ones a reassignment is removing last. */
    static List<Integer> candidateOrder(PartitionState p) {
        if (p.removingReplicas().isEmpty()) {
            return p.replicas();
        }
        List<Integer> out = new ArrayList<>(p.targetReplicas());
        out.addAll(p.removingReplicas());
        return out;
    }

    /** The first replica (in {@code replicas} order) that is in {@code candidates} and eligible, or -1. */
    static int firstEligible(List<Integer> replicas, List<Integer> candidates, IntPredicate eligible) {
        for (int r : replicas) {
            if (candidates.contains(r) && eligible.test(r)) {
                return r;
            }
        }
        return MetadataRecord.NO_LEADER;
    }
}
