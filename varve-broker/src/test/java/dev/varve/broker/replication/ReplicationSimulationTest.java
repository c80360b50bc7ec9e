package dev.varve.broker.replication;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Checks on the simulation itself: it really exercises leader changes, ISR changes and truncation,
 * and its invariants are strong enough to catch the KIP-101 bug when truncation falls back to the
 * high watermark.
 */
class ReplicationSimulationTest {

    @Test
    void theSimulationExercisesLeaderChangesIsrChangesAndTruncation() {
        int leaderChanges = 0;
        int shrinks = 0;
        int expansions = 0;
        int belowHw = 0;
        long committed = 0;
        long acked = 0;
        for (long seed = 0; seed < 40; seed++) {
            ReplicationSimulation sim = new ReplicationSimulation(seed, ReplicationSimulation.Options.defaults(2));
            sim.run(400);
            sim.heal(200);
            leaderChanges += sim.leaderChanges;
            shrinks += sim.isrShrinks;
            expansions += sim.isrExpansions;
            belowHw += sim.truncationsBelowHighWatermark;
            committed += sim.committed.size();
            acked += sim.acked.size();
        }
        assertThat(leaderChanges).isGreaterThan(100);
        assertThat(shrinks).isGreaterThan(20);
        assertThat(expansions).isGreaterThan(20);
        assertThat(committed).isGreaterThan(500);
        assertThat(acked).isGreaterThan(200);
        // With clean elections a follower never has to cut below its HW.
        assertThat(belowHw).isZero();
    }

    /** The mutant: a new follower truncates to its high watermark, as before KIP-101. */
    @Test
    void truncatingToTheHighWatermarkIsCaughtAsLostCommittedData() {
        int caught = 0;
        String example = null;
        for (long seed = 0; seed < 100; seed++) {
            ReplicationSimulation.Options mutant = new ReplicationSimulation.Options(2, 100,
                    ReplicationSimulation.TruncationPolicy.HIGH_WATERMARK, 3);
            ReplicationSimulation sim = new ReplicationSimulation(seed, mutant);
            try {
                sim.run(400);
                sim.heal(200);
            } catch (ReplicationSimulation.InvariantViolation e) {
                caught++;
                if (example == null) {
                    example = e.getMessage();
                }
            }
        }
        assertThat(caught).as("histories where HW truncation breaks an invariant").isGreaterThan(5);
        assertThat(example).containsAnyOf("lacks committed records", "is committed", "diverges", "acknowledged");
    }
}
