package dev.varve.broker.replication;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.ShrinkingMode;
import net.jqwik.api.constraints.IntRange;

/**
 * Seeded simulations of replication and controller decisions ({@link ReplicationSimulation}): random
 * histories of produces, fetches in incremental fetch sessions, ISR changes, fencing, elections, lost and
 * reordered messages, network partitions, crashes, power failures with torn batches and clean shutdowns,
 * with the safety invariants checked after every event and convergence checked after healing. One
 * property per {@code min.insync.replicas}, 3,000 seeds in all, each a topic of three partitions (so that
 * a failover moves several leaders in one metadata delta) and {@value #EVENTS} events; and 600 more seeds
 * with 1 to 8 partitions. About 25 s on two busy cores (the single-partition simulation took about 10 s
 * for the first 3,000 seeds; the cost per event grew with the partitions, the wire objects and the
 * sessions, the number of events per seed did not: a fetch carries every partition of its leader).
 *
 * <p>jqwik picks fresh seeds every run (a failed one is tried first on the next run). A fresh seed
 * found the refused-AlterPartition duplicate (simulation seed -7079667, now a regression seed of
 * {@code ReplicationSimulationTest}). A failure names the
 * simulation seed and the command that replays it ({@link ReplicationReplay}); shrinking is off (a
 * "smaller" seed is just another history).
 */
class ReplicationProperties {
    static final int EVENTS = 3_000;

    @Property(tries = 600, shrinking = ShrinkingMode.OFF)
    void minIsr1(@ForAll long seed) {
        ReplicationSimulation.runAndHeal(seed, ReplicationSimulation.Options.defaults(1).withEvents(EVENTS));
    }

    @Property(tries = 1500, shrinking = ShrinkingMode.OFF)
    void minIsr2(@ForAll long seed) {
        ReplicationSimulation.runAndHeal(seed, ReplicationSimulation.Options.defaults(2).withEvents(EVENTS));
    }

    @Property(tries = 900, shrinking = ShrinkingMode.OFF)
    void minIsr3(@ForAll long seed) {
        ReplicationSimulation.runAndHeal(seed, ReplicationSimulation.Options.defaults(3).withEvents(EVENTS));
    }

    /** One partition (the single-partition simulation) up to eight (bigger deltas, AlterPartitions and sessions). */
    @Property(tries = 600, shrinking = ShrinkingMode.OFF)
    void partitionCounts(@ForAll long seed, @ForAll @IntRange(min = 1, max = 8) int partitions) {
        ReplicationSimulation.runAndHeal(seed, ReplicationSimulation.Options.defaults(2).withPartitions(partitions).withEvents(EVENTS));
    }
}
