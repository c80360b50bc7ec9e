package dev.varve.broker.replication;

import dev.varve.storage.EpochEntry;
import dev.varve.storage.LeaderEpochCache.EpochEndOffset;
import org.apache.kafka.common.errors.OffsetOutOfRangeException;
import org.apache.kafka.common.protocol.Errors;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Random;
import java.util.Set;
import java.util.TreeSet;

/**
 * A deterministic, seeded model of one partition replicated over three brokers and a controller,
 * driving the pure replication core ({@link LeaderState}, {@link EpochEndOffsets},
 * {@link FollowerTruncation}, {@link EpochFencing}) with in-memory logs of {@code (offset, epoch, value)}.
 *
 * <p>Events, chosen by a seeded {@link Random}: acks=all produce to whoever believes it leads (stale
 * leaders included), follower fetches (with the fetch-time diverging-epoch check) and
 * OffsetForLeaderEpoch rounds, ISR shrink checks, AlterPartition requests and answers travelling
 * separately (and sometimes failing transiently), metadata reaching each broker late, flushes, clock
 * ticks, crashes (a lossy one loses the unflushed tail, as a power failure does), restarts with a new
 * broker epoch, and controlled leader moves. The controller elects only live ISR members and bumps the
 * leader epoch and partition epoch on every change, as KRaft does.
 *
 * <p>Model assumptions (what the protocol does not promise to survive, written down):
 * <ul>
 *   <li>a lossy crash never takes the last live member of the controller's ISR (durability without
 *       fsync rests on some in-sync copy surviving);</li>
 *   <li>a replica restarting after a lossy crash is removed from the ISR by the controller when it
 *       registers again (KRaft fences a broker that lost its session; KIP-966 treats an unclean
 *       shutdown the same way); one that crashed without loss keeps its ISR membership.</li>
 * </ul>
 *
 * <p>Invariants, checked after every step ({@link #checkInvariants()}): the HW of a leader instance
 * never decreases; the committed log (everything any leader's HW ever passed) is never rewritten;
 * every live replica agrees with it below its own HW; every live member of the controller's ISR holds
 * all of it; every acknowledged acks=all record stays at its offset in the committed log and in the
 * current leader's log. {@link #heal(int)} then repairs everything and checks that the replicas
 * converge (a liveness check: no livelock in truncation or ISR expansion).
 */
final class ReplicationSimulation {
    static final int REPLICA_COUNT = 3;

    /** How a replica that becomes a follower truncates: the real thing, or the pre-KIP-101 rule (a mutant). */
    enum TruncationPolicy { LEADER_EPOCH, HIGH_WATERMARK }

    record Options(int minInsyncReplicas, long replicaLagTimeMaxMs, TruncationPolicy policy, int maxFetchRecords) {
        static Options defaults(int minIsr) {
            return new Options(minIsr, 100, TruncationPolicy.LEADER_EPOCH, 3);
        }
    }

    record Rec(long offset, int epoch, long value) {
    }

    static final class InvariantViolation extends AssertionError {
        InvariantViolation(String message) {
            super(message);
        }
    }

    final class Replica {
        final int id;
        boolean up = true;
        boolean lostDataInCrash;
        long brokerEpoch = 1;
        final List<Rec> log = new ArrayList<>();
        final List<EpochEntry> epochs = new ArrayList<>();
        long highWatermark;
        long flushedOffset;
        int knownLeaderEpoch = -1;
        int knownPartitionEpoch = -1;
        int knownLeader = -1;
        LeaderState leader;
        boolean needsTruncation;

        Replica(int id) {
            this.id = id;
        }

        long leo() {
            return log.size();
        }

        int latestEpochOrUndefined() {
            return epochs.isEmpty() ? EpochEndOffsets.UNDEFINED_EPOCH : epochs.get(epochs.size() - 1).epoch();
        }

        /** LeaderEpochCache.assign. */
        void assignEpoch(int epoch, long startOffset) {
            if (!epochs.isEmpty() && epoch <= epochs.get(epochs.size() - 1).epoch()) {
                return;
            }
            epochs.removeIf(e -> e.startOffset() >= startOffset);
            epochs.add(new EpochEntry(epoch, startOffset));
        }

        void append(Rec rec) {
            if (rec.offset() != leo()) {
                throw new InvariantViolation("replica " + id + " appends offset " + rec.offset() + " at log end " + leo());
            }
            log.add(rec);
            assignEpoch(rec.epoch(), rec.offset());
        }

        /**
         * Truncation to {@code offset}. Unlike the current PartitionLog.truncateTo, the epoch cache is cut
         * at the offset even when the log is not (Kafka's UnifiedLog.truncateTo does this): otherwise a
         * replica that led an epoch without appending anything keeps an entry at its log end that no
         * leader has, its fetches keep "diverging" at that epoch and each truncation is a no-op. With the
         * storage behaviour mirrored here, {@link #heal} fails to converge (seen with seed 1, minIsr 3).
         */
        void truncateTo(long offset) {
            if (offset < leo()) {
                log.subList((int) offset, log.size()).clear();
            }
            epochs.removeIf(e -> e.startOffset() >= offset);
            highWatermark = Math.min(highWatermark, leo());
            flushedOffset = Math.min(flushedOffset, leo());
        }

        @Override
        public String toString() {
            return "r" + id + (up ? "" : "(down)") + " leo=" + leo() + " hw=" + highWatermark + " epochs=" + epochs
                    + " knows=" + knownLeader + "@" + knownLeaderEpoch + (leader != null ? " LEADER " + leader : "")
                    + (needsTruncation ? " needsTruncation" : "");
        }
    }

    /** The controller's committed partition state. leader is -1 while the partition is offline. */
    final class Controller {
        int leader = 0;
        int leaderEpoch = 0;
        int partitionEpoch = 0;
        Set<Integer> isr = new TreeSet<>(List.of(0, 1, 2));

        LeaderAndIsr state() {
            return new LeaderAndIsr(leader, leaderEpoch, partitionEpoch, REPLICA_IDS, isr);
        }

        void changeLeader(int newLeader, Set<Integer> newIsr) {
            leader = newLeader;
            isr = new TreeSet<>(newIsr);
            leaderEpoch++;
            partitionEpoch++;
            log("controller: leader " + leader + " epoch " + leaderEpoch + " isr " + isr);
        }

        /** The leader is gone: elect a live ISR member, or go offline keeping the ISR (no unclean election). */
        void electWithout(int goneLeader) {
            List<Integer> candidates = new ArrayList<>();
            for (int r : isr) {
                if (r != goneLeader && replicas.get(r).up) {
                    candidates.add(r);
                }
            }
            if (candidates.isEmpty()) {
                changeLeader(-1, isr);
            } else {
                Set<Integer> newIsr = new TreeSet<>(isr);
                newIsr.remove(goneLeader);
                changeLeader(candidates.get(random.nextInt(candidates.size())), newIsr);
            }
        }

        Object handle(IsrChangeProposal p) {
            if (random.nextInt(10) == 0) {
                return Errors.REQUEST_TIMED_OUT;
            }
            if (p.leaderEpoch() != leaderEpoch || p.leaderId() != leader) {
                return Errors.FENCED_LEADER_EPOCH;
            }
            if (p.partitionEpoch() != partitionEpoch) {
                return Errors.INVALID_UPDATE_VERSION;
            }
            for (IsrChangeProposal.IsrMember m : p.newIsr()) {
                Replica r = replicas.get(m.brokerId());
                boolean added = !isr.contains(m.brokerId());
                if ((m.brokerEpoch() != -1 && m.brokerEpoch() != r.brokerEpoch) || (added && !r.up)) {
                    return Errors.INELIGIBLE_REPLICA;
                }
            }
            isr = new TreeSet<>(p.newIsrIds());
            partitionEpoch++;
            if (p.kind() == IsrChangeProposal.Kind.SHRINK) {
                isrShrinks++;
            } else {
                isrExpansions++;
            }
            log("controller: AlterPartition " + p.kind() + " -> isr " + isr + " partitionEpoch " + partitionEpoch);
            return state();
        }
    }

    record AlterPartitionMessage(int leaderId, LeaderState sender, IsrChangeProposal proposal, Object answer) {
    }

    record PendingAck(int leaderId, LeaderState leaderState, long offset, long value) {
    }

    static final List<Integer> REPLICA_IDS = List.of(0, 1, 2);

    private final Random random;
    private final Options options;
    private final StringBuilder trace = new StringBuilder();
    final List<Replica> replicas = new ArrayList<>();
    final Controller controller = new Controller();
    long nowMs = 1_000;
    private long nextValue = 1;
    private final List<AlterPartitionMessage> toController = new ArrayList<>();
    private final List<AlterPartitionMessage> toLeaders = new ArrayList<>();
    private final List<PendingAck> pendingAcks = new ArrayList<>();
    /** Every record any leader's high watermark ever passed, by offset. */
    final List<Rec> committed = new ArrayList<>();
    /** Acknowledged acks=all records: offset to value. */
    final Map<Long, Long> acked = new LinkedHashMap<>();
    private final Map<LeaderState, Long> lastHighWatermark = new IdentityHashMap<>();
    int steps;
    int leaderChanges;
    int isrShrinks;
    int isrExpansions;
    int truncationsBelowHighWatermark;

    ReplicationSimulation(long seed, Options options) {
        this.random = new Random(seed);
        this.options = options;
        for (int id : REPLICA_IDS) {
            replicas.add(new Replica(id));
        }
        for (Replica r : replicas) {
            learnMetadata(r);
        }
    }

    // ---------------------------------------------------------------- driver

    void run(int steps) {
        for (int i = 0; i < steps; i++) {
            step();
        }
    }

    void step() {
        steps++;
        int pick = random.nextInt(100);
        if (pick < 22) {
            produce(pickActingLeader());
        } else if (pick < 52) {
            fetch(pickUp());
        } else if (pick < 58) {
            shrinkCheck();
        } else if (pick < 68) {
            deliverAlterPartition();
        } else if (pick < 78) {
            Replica r = pickUp();
            if (r != null) {
                learnMetadata(r);
            }
        } else if (pick < 83) {
            Replica r = pickUp();
            if (r != null) {
                r.flushedOffset = r.leo();
            }
        } else if (pick < 95) {
            nowMs += 1 + random.nextInt(40);
        } else if (pick < 97) {
            Replica r = pickUp();
            if (r != null) {
                crash(r, random.nextBoolean());
            }
        } else if (pick < 99) {
            restart(pickDown());
        } else {
            moveLeader();
        }
        settleAcks();
        checkInvariants();
    }

    /**
     * Repairs everything (restarts, delivers every message, lets metadata reach everyone) and runs
     * fetch rounds until the replicas converge: same log as the leader, ISR of all three, HW at the log
     * end. Fails if that does not happen within {@code maxRounds}.
     */
    void heal(int maxRounds) {
        for (Replica r : replicas) {
            if (!r.up) {
                restart(r);
            }
        }
        for (int round = 0; round < maxRounds; round++) {
            while (!toController.isEmpty() || !toLeaders.isEmpty()) {
                deliverAlterPartition();
            }
            for (Replica r : replicas) {
                learnMetadata(r);
            }
            for (Replica r : replicas) {
                fetch(r);
            }
            nowMs += 10;
            shrinkCheck();
            settleAcks();
            checkInvariants();
            if (converged()) {
                return;
            }
        }
        throw new InvariantViolation("no convergence after " + maxRounds + " rounds: " + state());
    }

    private boolean converged() {
        if (controller.leader < 0 || controller.isr.size() != REPLICA_COUNT) {
            return false;
        }
        Replica leader = replicas.get(controller.leader);
        if (leader.leader == null || leader.leader.highWatermark() != leader.leo()) {
            return false;
        }
        for (Replica r : replicas) {
            if (!r.log.equals(leader.log) || r.highWatermark != leader.leo()) {
                return false;
            }
        }
        return true;
    }

    // ---------------------------------------------------------------- events

    private void produce(Replica r) {
        if (r == null) {
            return;
        }
        LeaderState leader = r.leader;
        if (leader.checkEnoughReplicas() != Errors.NONE) {
            log("produce to " + r.id + ": " + leader.checkEnoughReplicas());
            return;
        }
        Rec rec = new Rec(r.leo(), leader.leaderEpoch(), nextValue++);
        r.append(rec);
        leaderHighWatermarkMaybeMoved(r, leader.onLeaderAppend(r.leo(), nowMs));
        pendingAcks.add(new PendingAck(r.id, leader, rec.offset(), rec.value()));
        log("produce to " + r.id + ": " + rec);
    }

    private void fetch(Replica f) {
        if (f == null || !f.up || f.leader != null || f.knownLeader < 0 || f.knownLeader == f.id) {
            return;
        }
        Replica l = replicas.get(f.knownLeader);
        if (!l.up || l.leader == null) {
            return; // NOT_LEADER_OR_FOLLOWER
        }
        if (EpochFencing.validate(f.knownLeaderEpoch, l.leader.leaderEpoch()) != Errors.NONE) {
            return; // FENCED_LEADER_EPOCH or UNKNOWN_LEADER_EPOCH: someone's metadata is behind
        }
        if (f.needsTruncation) {
            truncationRound(f, l);
            return;
        }
        long fetchOffset = f.leo();
        if (options.policy() == TruncationPolicy.LEADER_EPOCH) {
            Optional<EpochEndOffset> diverging;
            try {
                diverging = EpochEndOffsets.divergingEpoch(List.copyOf(l.epochs), l.leo(), f.latestEpochOrUndefined(), fetchOffset);
            } catch (OffsetOutOfRangeException e) {
                f.needsTruncation = true;
                return;
            }
            if (diverging.isPresent()) {
                FollowerTruncation.Step step = FollowerTruncation.onLeaderAnswer(List.copyOf(f.epochs), f.leo(), f.highWatermark,
                        diverging.get());
                applyTruncation(f, step);
                f.needsTruncation = !step.complete();
                return;
            }
        } else if (fetchOffset > l.leo()) {
            f.needsTruncation = true; // OFFSET_OUT_OF_RANGE
            return;
        }
        LeaderState leader = l.leader;
        leaderHighWatermarkMaybeMoved(l, leader.onFollowerFetch(f.id, fetchOffset, f.brokerEpoch, nowMs));
        leader.isrExpandProposal(f.id).ifPresent(p -> send(l, p));
        long end = Math.min(l.leo(), fetchOffset + 1 + random.nextInt(options.maxFetchRecords()));
        for (long o = fetchOffset; o < end; o++) {
            f.append(l.log.get((int) o));
        }
        f.highWatermark = Math.min(leader.highWatermark(), f.leo());
    }

    private void truncationRound(Replica f, Replica l) {
        FollowerTruncation.Step step;
        if (options.policy() == TruncationPolicy.HIGH_WATERMARK) {
            step = new FollowerTruncation.Step(Math.min(f.highWatermark, f.leo()), true, FollowerTruncation.Reason.NO_LOCAL_EPOCHS, false);
        } else {
            OptionalInt epoch = FollowerTruncation.requestEpoch(List.copyOf(f.epochs));
            if (epoch.isEmpty()) {
                step = FollowerTruncation.withoutLocalEpochs(f.leo(), f.highWatermark);
            } else {
                EpochEndOffset answer = EpochEndOffsets.endOffsetFor(List.copyOf(l.epochs), epoch.getAsInt(), l.leo());
                step = FollowerTruncation.onLeaderAnswer(List.copyOf(f.epochs), f.leo(), f.highWatermark, answer);
            }
        }
        applyTruncation(f, step);
        if (step.complete()) {
            f.needsTruncation = false;
        }
    }

    private void applyTruncation(Replica f, FollowerTruncation.Step step) {
        if (step.truncationOffset() < 0 || step.truncationOffset() > f.leo()) {
            throw new InvariantViolation("truncation offset " + step + " outside [0, " + f.leo() + "] on " + f);
        }
        if (step.belowHighWatermark()) {
            truncationsBelowHighWatermark++;
        }
        log("r" + f.id + " truncates to " + step);
        f.truncateTo(step.truncationOffset());
    }

    private void shrinkCheck() {
        for (Replica r : replicas) {
            if (r.up && r.leader != null) {
                r.leader.isrShrinkProposal(nowMs).ifPresent(p -> send(r, p));
            }
        }
    }

    private void send(Replica leader, IsrChangeProposal p) {
        log("r" + leader.id + " proposes " + p.kind() + " " + p.newIsrIds());
        toController.add(new AlterPartitionMessage(leader.id, leader.leader, p, null));
    }

    private void deliverAlterPartition() {
        boolean toTheController = !toController.isEmpty() && (toLeaders.isEmpty() || random.nextBoolean());
        if (toTheController) {
            AlterPartitionMessage m = toController.remove(random.nextInt(toController.size()));
            toLeaders.add(new AlterPartitionMessage(m.leaderId(), m.sender(), m.proposal(), controller.handle(m.proposal())));
        } else if (!toLeaders.isEmpty()) {
            AlterPartitionMessage m = toLeaders.remove(random.nextInt(toLeaders.size()));
            Replica r = replicas.get(m.leaderId());
            if (!r.up || r.leader != m.sender()) {
                return; // the leader is gone or was replaced: nobody is waiting for this answer
            }
            if (m.answer() instanceof LeaderAndIsr committed) {
                leaderHighWatermarkMaybeMoved(r, r.leader.onIsrCommitted(m.proposal(), committed, nowMs));
            } else {
                LeaderState.RejectionOutcome outcome = r.leader.onIsrRejected(m.proposal(), (Errors) m.answer());
                log("r" + r.id + " AlterPartition " + m.answer() + " -> " + outcome);
                if (outcome == LeaderState.RejectionOutcome.RETRY) {
                    toController.add(new AlterPartitionMessage(m.leaderId(), m.sender(), m.proposal(), null));
                }
            }
        }
    }

    /** The broker applies the controller's current state for the partition. */
    void learnMetadata(Replica r) {
        if (!r.up) {
            return;
        }
        Controller c = controller;
        if (c.leaderEpoch > r.knownLeaderEpoch) {
            r.knownLeaderEpoch = c.leaderEpoch;
            r.knownPartitionEpoch = c.partitionEpoch;
            r.knownLeader = c.leader;
            if (c.leader == r.id) {
                r.assignEpoch(c.leaderEpoch, r.leo());
                r.leader = LeaderState.becomeLeader(r.id, r.brokerEpoch, c.state(), r.leo(), r.highWatermark,
                        options.minInsyncReplicas(), options.replicaLagTimeMaxMs(), nowMs);
                r.needsTruncation = false;
                leaderChanges++;
                r.highWatermark = r.leader.highWatermark();
                extendCommitted(r);
                log("r" + r.id + " becomes leader " + r.leader);
            } else {
                r.leader = null;
                r.needsTruncation = true;
            }
        } else if (c.leaderEpoch == r.knownLeaderEpoch && c.partitionEpoch > r.knownPartitionEpoch) {
            r.knownPartitionEpoch = c.partitionEpoch;
            if (r.leader != null) {
                leaderHighWatermarkMaybeMoved(r, r.leader.onPartitionStateChange(c.state(), nowMs));
            }
        }
    }

    private void crash(Replica r, boolean lossy) {
        if (lossy) {
            boolean anotherLiveIsrMember = controller.isr.stream().anyMatch(id -> id != r.id && replicas.get(id).up);
            lossy = anotherLiveIsrMember; // model assumption: some in-sync copy survives a power failure
        }
        log("crash r" + r.id + (lossy ? " losing the tail above " + r.flushedOffset : ""));
        r.up = false;
        r.leader = null;
        r.needsTruncation = true;
        r.knownLeaderEpoch = -1;
        r.knownPartitionEpoch = -1;
        r.knownLeader = -1;
        if (lossy && r.flushedOffset < r.leo()) {
            r.lostDataInCrash = true;
            r.truncateTo(r.flushedOffset);
        }
        if (controller.leader == r.id) {
            controller.electWithout(r.id); // KRaft fences the broker and moves leadership away
        }
    }

    private void restart(Replica r) {
        if (r == null) {
            return;
        }
        r.up = true;
        r.brokerEpoch++;
        log("restart r" + r.id + " broker epoch " + r.brokerEpoch);
        Controller c = controller;
        if (r.lostDataInCrash && c.isr.contains(r.id) && c.isr.size() > 1) {
            Set<Integer> newIsr = new TreeSet<>(c.isr);
            newIsr.remove(r.id);
            c.isr = newIsr;
            c.partitionEpoch++;
            log("controller: unclean restart of r" + r.id + " -> isr " + c.isr);
        }
        r.lostDataInCrash = false;
        if (c.leader < 0 && c.isr.contains(r.id)) {
            c.changeLeader(r.id, c.isr);
        }
        learnMetadata(r);
    }

    private void moveLeader() {
        Controller c = controller;
        if (c.leader < 0) {
            return;
        }
        List<Integer> candidates = c.isr.stream().filter(id -> id != c.leader && replicas.get(id).up).toList();
        if (!candidates.isEmpty()) {
            c.changeLeader(candidates.get(random.nextInt(candidates.size())), c.isr);
        }
    }

    private void settleAcks() {
        pendingAcks.removeIf(ack -> {
            Replica r = replicas.get(ack.leaderId());
            if (!r.up || r.leader != ack.leaderState()) {
                return true; // NOT_LEADER_OR_FOLLOWER: the producer retries (not modelled)
            }
            AckStatus status = r.leader.ackStatus(ack.offset() + 1);
            if (status == AckStatus.DONE) {
                acked.put(ack.offset(), ack.value());
            }
            return status.isComplete();
        });
    }

    private void leaderHighWatermarkMaybeMoved(Replica r, boolean moved) {
        long hw = r.leader.highWatermark();
        if (hw < r.highWatermark) {
            throw violation("HW of leader r" + r.id + " went back from " + r.highWatermark + " to " + hw);
        }
        if (moved != (hw != r.highWatermark)) {
            throw new InvariantViolation("r" + r.id + " reported moved=" + moved + " but HW went " + r.highWatermark + " -> " + hw);
        }
        r.highWatermark = hw;
        extendCommitted(r);
    }

    /** The committed log is never rewritten, and grows with every leader's HW, the moment it moves. */
    private void extendCommitted(Replica r) {
        long hw = r.leader.highWatermark();
        for (long o = 0; o < hw; o++) {
            Rec rec = r.log.get((int) o);
            if (o < committed.size()) {
                if (!committed.get((int) o).equals(rec)) {
                    throw violation("leader r" + r.id + " HW " + hw + " covers " + rec + " but " + committed.get((int) o) + " was committed");
                }
            } else {
                committed.add(rec);
            }
        }
    }

    // ---------------------------------------------------------------- invariants

    void checkInvariants() {
        for (Replica r : replicas) {
            if (!r.up || r.leader == null) {
                continue;
            }
            long hw = r.leader.highWatermark();
            Long last = lastHighWatermark.put(r.leader, hw);
            if (last != null && hw < last) {
                throw violation("HW of leader r" + r.id + " went back from " + last + " to " + hw);
            }
            if (hw != r.highWatermark) {
                throw violation("r" + r.id + " log HW " + r.highWatermark + " differs from its leader state " + hw);
            }
            extendCommitted(r);
        }
        for (Replica r : replicas) {
            if (!r.up) {
                continue;
            }
            if (r.highWatermark > r.leo() || r.highWatermark > committed.size()) {
                throw violation("r" + r.id + " HW " + r.highWatermark + " beyond its log end or the committed log " + committed.size());
            }
            for (long o = 0; o < r.highWatermark; o++) {
                if (!r.log.get((int) o).equals(committed.get((int) o))) {
                    throw violation("r" + r.id + " diverges below its HW at " + o + ": " + r.log.get((int) o) + " vs " + committed.get((int) o));
                }
            }
            if (controller.isr.contains(r.id)) {
                if (r.leo() < committed.size()) {
                    throw violation("ISR member r" + r.id + " lacks committed records: leo " + r.leo() + " < " + committed.size());
                }
                for (int o = 0; o < committed.size(); o++) {
                    if (!r.log.get(o).equals(committed.get(o))) {
                        throw violation("ISR member r" + r.id + " has " + r.log.get(o) + " where " + committed.get(o) + " is committed");
                    }
                }
            }
        }
        for (Map.Entry<Long, Long> ack : acked.entrySet()) {
            long offset = ack.getKey();
            if (offset >= committed.size() || committed.get((int) offset).value() != ack.getValue()) {
                throw violation("acknowledged record " + ack + " is not in the committed log");
            }
            if (controller.leader >= 0) {
                Replica leader = replicas.get(controller.leader);
                if (leader.up && (offset >= leader.leo() || leader.log.get((int) offset).value() != ack.getValue())) {
                    throw violation("acknowledged record " + ack + " lost on the current leader r" + leader.id);
                }
            }
        }
    }

    private InvariantViolation violation(String message) {
        return new InvariantViolation(message + "\n" + state());
    }

    String state() {
        StringBuilder b = new StringBuilder("step " + steps + " t=" + nowMs + " controller: leader " + controller.leader
                + " epoch " + controller.leaderEpoch + " partitionEpoch " + controller.partitionEpoch + " isr " + controller.isr
                + " committed " + committed.size() + " acked " + acked.size() + "\n");
        for (Replica r : replicas) {
            b.append("  ").append(r).append('\n');
        }
        String t = trace.toString();
        b.append("last events:\n").append(t, Math.max(0, t.length() - 3000), t.length());
        return b.toString();
    }

    private void log(String event) {
        trace.append(steps).append(": ").append(event).append('\n');
        if (trace.length() > 20_000) {
            trace.delete(0, trace.length() - 10_000);
        }
    }

    // ---------------------------------------------------------------- picks

    private Replica pickActingLeader() {
        List<Replica> leaders = replicas.stream().filter(r -> r.up && r.leader != null).toList();
        return leaders.isEmpty() ? null : leaders.get(random.nextInt(leaders.size()));
    }

    private Replica pickUp() {
        List<Replica> up = replicas.stream().filter(r -> r.up).toList();
        return up.isEmpty() ? null : up.get(random.nextInt(up.size()));
    }

    private Replica pickDown() {
        List<Replica> down = replicas.stream().filter(r -> !r.up).toList();
        return down.isEmpty() ? null : down.get(random.nextInt(down.size()));
    }
}
