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
 * convergence check after healing — every one of them per partition (each partition has its own
 * committed log, acknowledged records, leaders and epochs). Incremental: each log keeps the length of
 * its prefix already known to equal its partition's committed log ({@link SimLog#verifiedPrefix}, cut by
 * truncation and crash recovery), so a check costs the records that changed, not the whole log.
 */
final class SimInvariants {
    /** What is checked of one partition. */
    static final class Partition {
        final int index;
        /** Every record any leader's HW ever passed, by offset. Never rewritten. */
        final List<SimLog.Rec> committed = new ArrayList<>();
        /** Acknowledged acks=all records, in acknowledgement order. */
        final List<SimLog.Rec> acked = new ArrayList<>();
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

        Partition(int index) {
            this.index = index;
        }
    }

    private final ReplicationSimulation sim;
    final List<Partition> partitions = new ArrayList<>();

    SimInvariants(ReplicationSimulation sim, int partitionCount) {
        this.sim = sim;
        for (int p = 0; p < partitionCount; p++) {
            partitions.add(new Partition(p));
        }
    }

    int ackedCount() {
        return partitions.stream().mapToInt(p -> p.acked.size()).sum();
    }

    long committedCount() {
        return partitions.stream().mapToLong(p -> p.committed.size()).sum();
    }

    /** Committed records per partition, for the failure message. */
    String committedCounts() {
        return partitions.stream().map(p -> Integer.toString(p.committed.size())).toList().toString();
    }

    // ---------------------------------------------------------------- event hooks

    /** At most one broker leads a given leader epoch of a partition, ever. */
    void onBecomeLeader(SimBroker b, int partition) {
        Partition c = partitions.get(partition);
        int epoch = b.leader(partition).leaderEpoch();
        Integer previous = c.brokerLeading.putIfAbsent(epoch, b.id);
        if (previous != null && previous != b.id) {
            throw sim.violation("two leaders of p" + partition + " in leader epoch " + epoch + ": b" + previous + " and b" + b.id);
        }
        Integer decided = sim.controller.leaderOfEpoch.get(partition).get(epoch);
        if (decided == null || decided != b.id) {
            throw sim.violation("b" + b.id + " leads p" + partition + " epoch " + epoch + " but the controller gave it to " + decided);
        }
    }

    /** Records of a partition with the same offset and epoch are the same record on every replica. */
    void checkLogMatching(SimBroker b, int partition, List<SimLog.Rec> batch) {
        Partition c = partitions.get(partition);
        for (SimLog.Rec r : batch) {
            long key = r.offset() * 4096 + r.epoch();
            Long value = c.recordByOffsetAndEpoch.putIfAbsent(key, r.value());
            if (value != null && value != r.value()) {
                throw sim.violation("b" + b.id + " writes " + r + " to p" + partition + " but value " + value
                        + " has the same offset and epoch elsewhere");
            }
        }
    }

    /** A leader's HW moved: everything below it is committed, and must agree with what was committed before. */
    void extendCommitted(SimBroker leader, int partition) {
        Partition c = partitions.get(partition);
        SimLog log = leader.log(partition);
        long hw = log.highWatermark;
        verify(c, log);
        if (log.verifiedPrefix < Math.min(hw, c.committed.size())) {
            throw sim.violation("leader b" + leader.id + " of p" + partition + " HW " + hw + " covers "
                    + log.records.get((int) log.verifiedPrefix) + " but " + c.committed.get((int) log.verifiedPrefix) + " was committed");
        }
        for (long o = c.committed.size(); o < hw; o++) {
            c.committed.add(log.records.get((int) o));
        }
        verify(c, log);
    }

    void onAcknowledged(SimBroker b, int partition, List<SimLog.Rec> records) {
        Partition c = partitions.get(partition);
        for (SimLog.Rec r : records) {
            if (r.offset() >= c.committed.size() || !c.committed.get((int) r.offset()).equals(r)) {
                throw sim.violation("b" + b.id + " acknowledged " + r + " of p" + partition + " which is not committed");
            }
            c.acked.add(r);
            c.maxAckedOffset = Math.max(c.maxAckedOffset, r.offset());
        }
    }

    // ---------------------------------------------------------------- after every event

    void checkAll() {
        for (Partition c : partitions) {
            check(c);
        }
    }

    private void check(Partition c) {
        int partition = c.index;
        PartitionState p = sim.controller.partition(partition);
        if (p.leaderEpoch() < c.lastLeaderEpoch || p.partitionEpoch() < c.lastPartitionEpoch) {
            throw sim.violation("controller epochs of p" + partition + " went back: " + c.lastLeaderEpoch + "/" + c.lastPartitionEpoch
                    + " -> " + p);
        }
        c.lastLeaderEpoch = p.leaderEpoch();
        c.lastPartitionEpoch = p.partitionEpoch();
        PartitionState before = c.stateOfPartitionEpoch.putIfAbsent(p.partitionEpoch(), p);
        if (before != null && !before.equals(p)) {
            throw sim.violation("partition epoch " + p.partitionEpoch() + " of p" + partition + " names two states: " + before
                    + " and " + p);
        }
        for (SimBroker b : sim.brokers) {
            if (!b.up) {
                continue;
            }
            SimLog log = b.log(partition);
            LeaderState leader = b.leader(partition);
            if (leader != null) {
                long hw = leader.highWatermark();
                Long last = c.lastLeaderHighWatermark.put(leader, hw);
                if (last != null && hw < last) {
                    throw sim.violation("HW of the leader state of b" + b.id + " of p" + partition + " went back from " + last
                            + " to " + hw);
                }
                if (!sim.options.hwIgnoresIsr() && hw != log.highWatermark) {
                    throw sim.violation("b" + b.id + " p" + partition + " log HW " + log.highWatermark
                            + " differs from its leader state's " + hw);
                }
            }
            if (log.highWatermark > log.leo() || log.highWatermark > c.committed.size()) {
                throw sim.violation("b" + b.id + " p" + partition + " HW " + log.highWatermark
                        + " beyond its log end or the committed log " + c.committed.size());
            }
            verify(c, log);
            if (log.verifiedPrefix < log.highWatermark) {
                throw sim.violation("b" + b.id + " p" + partition + " diverges below its HW at " + log.verifiedPrefix + ": "
                        + log.records.get((int) log.verifiedPrefix) + " vs committed " + c.committed.get((int) log.verifiedPrefix));
            }
            if (!registeredSinceRestart(b)) {
                continue;
            }
            if (p.isr().contains(b.id) && log.verifiedPrefix < c.committed.size()) {
                throw sim.violation("ISR member b" + b.id + " of p" + partition + " lacks committed records: "
                        + (log.verifiedPrefix < log.leo() ? log.records.get((int) log.verifiedPrefix) + " where "
                        + c.committed.get((int) log.verifiedPrefix) + " is committed"
                        : "log end " + log.leo() + " < " + c.committed.size()));
            }
            // Acknowledged records are committed, so a log holds them all when its verified prefix passes the last one.
            if (p.elr().contains(b.id) && log.verifiedPrefix <= c.maxAckedOffset) {
                throw sim.violation("ELR member b" + b.id + " of p" + partition + " lacks acknowledged records: it matches the"
                        + " committed log up to " + log.verifiedPrefix + ", the last acknowledged offset is " + c.maxAckedOffset);
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

    /** Advances the log's verified prefix over records equal to its partition's committed log. */
    private static void verify(Partition c, SimLog log) {
        long limit = Math.min(log.leo(), c.committed.size());
        while (log.verifiedPrefix < limit && log.records.get((int) log.verifiedPrefix).equals(c.committed.get((int) log.verifiedPrefix))) {
            log.verifiedPrefix++;
        }
    }

    // ---------------------------------------------------------------- convergence

    /** Every partition: one leader leading its epoch, ISR of all three, equal logs, HW at the log end everywhere. */
    boolean converged() {
        for (Partition c : partitions) {
            if (!converged(c.index)) {
                return false;
            }
        }
        return true;
    }

    private boolean converged(int partition) {
        PartitionState p = sim.controller.partition(partition);
        if (!p.hasLeader() || p.isr().size() != ReplicationSimulation.REPLICA_COUNT) {
            return false;
        }
        SimBroker leader = sim.brokers.get(p.leader());
        LeaderState state = leader.leader(partition);
        SimLog leaderLog = leader.log(partition);
        if (!leader.up || state == null || state.leaderEpoch() != p.leaderEpoch() || leaderLog.highWatermark != leaderLog.leo()) {
            return false;
        }
        for (SimBroker b : sim.brokers) {
            SimLog log = b.log(partition);
            if (!b.up || !registeredSinceRestart(b) || log.leo() != leaderLog.leo() || log.highWatermark != leaderLog.leo()
                    || !log.records.equals(leaderLog.records)) {
                return false;
            }
        }
        return true;
    }

    /** After convergence: every acknowledged record is on every replica, and the logs hold the committed log. */
    void checkConverged() {
        for (Partition c : partitions) {
            for (SimBroker b : sim.brokers) {
                SimLog log = b.log(c.index);
                verify(c, log);
                if (log.verifiedPrefix < c.committed.size()) {
                    throw sim.violation("after healing b" + b.id + " p" + c.index + " lacks committed records from " + log.verifiedPrefix);
                }
                for (SimLog.Rec r : c.acked) {
                    if (!log.records.get((int) r.offset()).equals(r)) {
                        throw sim.violation("after healing b" + b.id + " p" + c.index + " lost acknowledged " + r);
                    }
                }
            }
        }
    }
}
