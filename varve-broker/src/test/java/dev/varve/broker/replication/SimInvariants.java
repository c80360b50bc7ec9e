package dev.varve.broker.replication;

import dev.varve.metadata.BrokerRegistration;
import dev.varve.metadata.PartitionState;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * The safety invariants of {@link ReplicationSimulation}, checked after every event, and the
 * convergence check after healing. Incremental: each log keeps the length of its prefix already known
 * to equal the committed log ({@link SimLog#verifiedPrefix}, cut by truncation and crash recovery), so a
 * check costs the records that changed, not the whole log.
 */
final class SimInvariants {
    private final ReplicationSimulation sim;
    /** Every record any leader's HW ever passed, by offset. Never rewritten. */
    final List<SimLog.Rec> committed = new ArrayList<>();
    /** Acknowledged acks=all records, in acknowledgement order. */
    private final List<SimLog.Rec> acked = new ArrayList<>();
    /** Leader epoch to the one broker that ever led in it. */
    private final Map<Integer, Integer> brokerLeading = new HashMap<>();
    /** (offset, epoch) to the value: one leader per epoch means one record per offset and epoch, everywhere. */
    private final Map<Long, Long> recordByOffsetAndEpoch = new HashMap<>();
    private final Map<LeaderState, Long> lastLeaderHighWatermark = new IdentityHashMap<>();
    private long maxAckedOffset = -1;
    /** Partition epoch to the one state the controller committed with it. */
    private final Map<Integer, PartitionState> stateOfPartitionEpoch = new HashMap<>();
    private int lastLeaderEpoch = -1;
    private int lastPartitionEpoch = -1;

    SimInvariants(ReplicationSimulation sim) {
        this.sim = sim;
    }

    int ackedCount() {
        return acked.size();
    }

    List<SimLog.Rec> acked() {
        return acked;
    }

    // ---------------------------------------------------------------- event hooks

    /** At most one broker leads a given leader epoch, ever. */
    void onBecomeLeader(SimBroker b) {
        int epoch = b.leader().leaderEpoch();
        Integer previous = brokerLeading.putIfAbsent(epoch, b.id);
        if (previous != null && previous != b.id) {
            throw sim.violation("two leaders in leader epoch " + epoch + ": b" + previous + " and b" + b.id);
        }
        Integer decided = sim.controller.leaderOfEpoch.get(epoch);
        if (decided == null || decided != b.id) {
            throw sim.violation("b" + b.id + " leads epoch " + epoch + " but the controller gave it to " + decided);
        }
    }

    /** Records with the same offset and epoch are the same record on every replica. */
    void checkLogMatching(SimBroker b, List<SimLog.Rec> batch) {
        for (SimLog.Rec r : batch) {
            long key = r.offset() * 4096 + r.epoch();
            Long value = recordByOffsetAndEpoch.putIfAbsent(key, r.value());
            if (value != null && value != r.value()) {
                throw sim.violation("b" + b.id + " writes " + r + " but value " + value + " has the same offset and epoch elsewhere");
            }
        }
    }

    /** A leader's HW moved: everything below it is committed, and must agree with what was committed before. */
    void extendCommitted(SimBroker leader) {
        SimLog log = leader.log;
        long hw = log.highWatermark;
        verify(log);
        if (log.verifiedPrefix < Math.min(hw, committed.size())) {
            throw sim.violation("leader b" + leader.id + " HW " + hw + " covers " + log.records.get((int) log.verifiedPrefix)
                    + " but " + committed.get((int) log.verifiedPrefix) + " was committed");
        }
        for (long o = committed.size(); o < hw; o++) {
            committed.add(log.records.get((int) o));
        }
        verify(log);
    }

    void onAcknowledged(SimBroker b, List<SimLog.Rec> records) {
        for (SimLog.Rec r : records) {
            if (r.offset() >= committed.size() || !committed.get((int) r.offset()).equals(r)) {
                throw sim.violation("b" + b.id + " acknowledged " + r + " which is not committed");
            }
            acked.add(r);
            maxAckedOffset = Math.max(maxAckedOffset, r.offset());
        }
    }

    // ---------------------------------------------------------------- after every event

    void checkAll() {
        PartitionState p = sim.controller.partition();
        if (p.leaderEpoch() < lastLeaderEpoch || p.partitionEpoch() < lastPartitionEpoch) {
            throw sim.violation("controller epochs went back: " + lastLeaderEpoch + "/" + lastPartitionEpoch + " -> " + p);
        }
        lastLeaderEpoch = p.leaderEpoch();
        lastPartitionEpoch = p.partitionEpoch();
        PartitionState before = stateOfPartitionEpoch.putIfAbsent(p.partitionEpoch(), p);
        if (before != null && !before.equals(p)) {
            throw sim.violation("partition epoch " + p.partitionEpoch() + " names two states: " + before + " and " + p);
        }
        for (SimBroker b : sim.brokers) {
            if (!b.up) {
                continue;
            }
            SimLog log = b.log;
            if (b.leader() != null) {
                long hw = b.leader().highWatermark();
                Long last = lastLeaderHighWatermark.put(b.leader(), hw);
                if (last != null && hw < last) {
                    throw sim.violation("HW of the leader state of b" + b.id + " went back from " + last + " to " + hw);
                }
                if (!sim.options.hwIgnoresIsr() && hw != log.highWatermark) {
                    throw sim.violation("b" + b.id + " log HW " + log.highWatermark + " differs from its leader state's " + hw);
                }
            }
            if (log.highWatermark > log.leo() || log.highWatermark > committed.size()) {
                throw sim.violation("b" + b.id + " HW " + log.highWatermark + " beyond its log end or the committed log "
                        + committed.size());
            }
            verify(log);
            if (log.verifiedPrefix < log.highWatermark) {
                throw sim.violation("b" + b.id + " diverges below its HW at " + log.verifiedPrefix + ": "
                        + log.records.get((int) log.verifiedPrefix) + " vs committed " + committed.get((int) log.verifiedPrefix));
            }
            if (!registeredSinceRestart(b)) {
                continue;
            }
            if (p.isr().contains(b.id) && log.verifiedPrefix < committed.size()) {
                throw sim.violation("ISR member b" + b.id + " lacks committed records: "
                        + (log.verifiedPrefix < log.leo() ? log.records.get((int) log.verifiedPrefix) + " where "
                        + committed.get((int) log.verifiedPrefix) + " is committed" : "log end " + log.leo() + " < " + committed.size()));
            }
            // Acknowledged records are committed, so a log holds them all when its verified prefix passes the last one.
            if (p.elr().contains(b.id) && log.verifiedPrefix <= maxAckedOffset) {
                throw sim.violation("ELR member b" + b.id + " lacks acknowledged records: it matches the committed log up to "
                        + log.verifiedPrefix + ", the last acknowledged offset is " + maxAckedOffset);
            }
        }
    }

    /** Whether the image shows this incarnation's registration (an ISR membership then is about this log). */
    private boolean registeredSinceRestart(SimBroker b) {
        if (b.brokerEpoch < 0) {
            return false;
        }
        BrokerRegistration r = sim.controller.image.broker(b.id).orElse(null);
        return r != null && r.brokerEpoch() == b.brokerEpoch;
    }

    /** Advances the log's verified prefix over records equal to the committed log. */
    private void verify(SimLog log) {
        long limit = Math.min(log.leo(), committed.size());
        while (log.verifiedPrefix < limit && log.records.get((int) log.verifiedPrefix).equals(committed.get((int) log.verifiedPrefix))) {
            log.verifiedPrefix++;
        }
    }

    // ---------------------------------------------------------------- convergence

    boolean converged() {
        PartitionState p = sim.controller.partition();
        if (!p.hasLeader() || p.isr().size() != ReplicationSimulation.REPLICA_COUNT) {
            return false;
        }
        SimBroker leader = sim.brokers.get(p.leader());
        if (!leader.up || leader.leader() == null || leader.leader().leaderEpoch() != p.leaderEpoch()
                || leader.log.highWatermark != leader.log.leo()) {
            return false;
        }
        for (SimBroker b : sim.brokers) {
            if (!b.up || !registeredSinceRestart(b) || b.log.leo() != leader.log.leo() || b.log.highWatermark != leader.log.leo()
                    || !b.log.records.equals(leader.log.records)) {
                return false;
            }
        }
        return true;
    }

    /** After convergence: every acknowledged record is on every replica, and the logs hold the committed log. */
    void checkConverged() {
        for (SimBroker b : sim.brokers) {
            verify(b.log);
            if (b.log.verifiedPrefix < committed.size()) {
                throw sim.violation("after healing b" + b.id + " lacks committed records from " + b.log.verifiedPrefix);
            }
            for (SimLog.Rec r : acked) {
                if (!b.log.records.get((int) r.offset()).equals(r)) {
                    throw sim.violation("after healing b" + b.id + " lost acknowledged " + r);
                }
            }
        }
    }
}
