package dev.varve.broker.replication;

import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Seeded simulations of the replication core over three replicas ({@link ReplicationSimulation}):
 * random interleavings of produces, fetches, truncation rounds, ISR changes through a controller,
 * late metadata, crashes that lose unflushed tails, restarts and leader changes, with the safety
 * invariants checked after every step and convergence checked at the end.
 *
 * <p>The jqwik seed is fixed, so every run explores the same histories; a failure prints the
 * simulation seed, which replays with {@code new ReplicationSimulation(seed, options)}.
 */
class ReplicationProperties {

    @Property(tries = 300, seed = "7301")
    void safetyInvariantsHoldAndReplicasConverge(@ForAll long seed, @ForAll @IntRange(min = 1, max = 3) int minIsr) {
        ReplicationSimulation sim = new ReplicationSimulation(seed, ReplicationSimulation.Options.defaults(minIsr));
        try {
            sim.run(400);
            sim.heal(200);
        } catch (AssertionError e) {
            throw new AssertionError("simulation seed " + seed + ", minIsr " + minIsr + ": " + e.getMessage(), e);
        }
        assertThat(sim.committed.size()).isGreaterThanOrEqualTo(sim.acked.size());
    }
}
