package dev.varve.broker.replication;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Checks on the simulation itself: it really exercises leader changes, ISR changes, truncation and
 * faults, metadata deltas and AlterPartition requests of several partitions, incremental fetch sessions
 * and their errors; a seed replays exactly; and its invariants are strong enough to catch broken
 * protocols (mutants), which proves they can fail.
 */
class ReplicationSimulationTest {

    @Test
    void theSimulationExercisesLeaderChangesTruncationFaultsBatchesAndFetchSessions() {
        int leaderChanges = 0;
        int belowHw = 0;
        int torn = 0;
        int losses = 0;
        int power = 0;
        int cuts = 0;
        long committed = 0;
        long acked = 0;
        int batchedDeltas = 0;
        int batchedTransitions = 0;
        int batchedAlterPartitions = 0;
        long incremental = 0;
        long omitted = 0;
        long evicted = 0;
        int sessionNotFound = 0;
        for (long seed = 0; seed < 40; seed++) {
            ReplicationSimulation sim = ReplicationSimulation.runAndHeal(seed,
                    ReplicationSimulation.Options.defaults(2).withEvents(ReplicationProperties.EVENTS));
            leaderChanges += sim.leaderChanges;
            belowHw += sim.truncationsBelowHighWatermark;
            torn += sim.tornBatches;
            losses += sim.unflushedLosses;
            power += sim.powerFailures;
            cuts += sim.linkCuts;
            committed += sim.invariants.committedCount();
            acked += sim.invariants.ackedCount();
            batchedDeltas += sim.batchedDeltas;
            batchedTransitions += sim.batchedTransitions;
            batchedAlterPartitions += sim.batchedAlterPartitions;
            incremental += sim.incrementalFetches();
            omitted += sim.omittedPartitions();
            evicted += sim.sessionEvictions();
            sessionNotFound += sim.sessionNotFound;
        }
        assertThat(leaderChanges).isGreaterThan(100);
        assertThat(power).isGreaterThan(20);
        assertThat(losses).isGreaterThan(10);
        assertThat(torn).isGreaterThan(2);
        assertThat(cuts).isGreaterThan(100);
        assertThat(committed).isGreaterThan(1000);
        assertThat(acked).isGreaterThan(500);
        // With clean elections a follower never has to cut below its HW.
        assertThat(belowHw).isZero();
        // One delta changes several partitions on a broker, and moves several of them (a failover, an election).
        assertThat(batchedDeltas).isGreaterThan(200);
        assertThat(batchedTransitions).isGreaterThan(100);
        assertThat(batchedAlterPartitions).isGreaterThan(20);
        // Incremental fetches that left partitions out; sessions evicted, and refused sessions recovered from.
        assertThat(incremental).isGreaterThan(2_000);
        assertThat(omitted).isGreaterThan(1_000);
        assertThat(evicted).isGreaterThan(20);
        assertThat(sessionNotFound).isGreaterThan(3);
    }

    @Test
    void aSeedReplaysTheSameEventTrace() {
        for (long seed : new long[] {3, -77, 123456789}) {
            ReplicationSimulation.Options o = ReplicationSimulation.Options.defaults(2).withEvents(1_500);
            List<String> first = new ArrayList<>();
            ReplicationSimulation a = new ReplicationSimulation(seed, o, first::add);
            a.runChecked();
            List<String> second = new ArrayList<>();
            ReplicationSimulation b = new ReplicationSimulation(seed, o, second::add);
            b.runChecked();
            assertThat(second).isEqualTo(first);
            assertThat(b.traceHash()).isEqualTo(a.traceHash());
            assertThat(first.size()).isGreaterThan(200);
        }
    }

    /**
     * Found by the simulation (this seed, with one partition; its history has changed with the simulation
     * since, and it stays as a long single-partition history): the controller accepted a late copy of an AlterPartition the
     * leader had already given up on (refused INELIGIBLE_REPLICA, replaced by a new proposal). The leader
     * state ignored that answer, but the broker (ClusterReplicaManager.onIsrAnswer; now PartitionReplica.onIsrAnswer, which the simulation runs)
     * took its partition epoch as known, so the metadata image with that epoch was never passed on and
     * the new proposal, refused INVALID_UPDATE_VERSION, waited for it forever: no ISR change again in
     * that leader epoch, no convergence. The broker now follows the leader state's partition epoch.
     */
    @Test
    void aLateAnswerToASupersededAlterPartitionDoesNotStallTheIsr() {
        ReplicationSimulation sim = ReplicationSimulation.runAndHeal(100_078, ReplicationSimulation.Options.defaults(2).withPartitions(1)
                .withEvents(12_000));
        assertThat(sim.controller.partition(0).isr()).hasSize(ReplicationSimulation.REPLICA_COUNT);
    }

    /**
     * Found by ReplicationProperties with a fresh jqwik seed: the controller channel resent an
     * AlterPartition EXPAND; its first copy was refused (INELIGIBLE_REPLICA: the new member was fenced)
     * and the leader reverted to its committed ISR, then the second copy arrived once the member was
     * eligible and the controller applied it. The controller's ISR then held a replica the leader's high
     * watermark had not waited for (it lacked committed records). The quorum controller now commits the
     * answer of a refused AlterPartition, so a resent copy gets the refusal
     * ({@code QuorumControllerTest.aRefusedAlterPartitionRetriedAfterTheReplicaBecameEligibleGetsTheRefusal});
     * the simulated controller answers by request id the same way.
     */
    @Test
    void aResentCopyOfARefusedAlterPartitionGetsTheRefusal() {
        ReplicationSimulation.runAndHeal(-7_079_667, ReplicationSimulation.Options.defaults(1).withPartitions(3)
                .withEvents(ReplicationProperties.EVENTS));
    }

    /** The mutant: a new follower truncates to its high watermark, as before KIP-101. */
    @Test
    void truncatingToTheHighWatermarkIsCaught() {
        assertCaught(ReplicationSimulation.Options.defaults(2).withPolicy(ReplicationSimulation.TruncationPolicy.HIGH_WATERMARK),
                "lacks committed records", "diverges", "committed", "acknowledged", "same offset and epoch");
    }

    /** The mutant: a leader's HW is its log end, without waiting for the ISR. */
    @Test
    void aHighWatermarkThatIgnoresTheIsrIsCaught() {
        assertCaught(ReplicationSimulation.Options.defaults(2).withHwIgnoringIsr(), "lacks committed records", "diverges", "committed");
    }

    /** The mutant: elections ignore the ISR (unclean.leader.election.enable=true, the real controller code). */
    @Test
    void uncleanElectionsAreCaught() {
        assertCaught(ReplicationSimulation.Options.defaults(2).withUncleanElection(), "lacks committed records", "diverges",
                "committed", "acknowledged");
    }

    /**
     * The mutant: incremental fetch answers lose every partition whose only news is the high watermark
     * (a broken mustRespond). Followers then never learn the last high watermark of an idle partition,
     * and the replicas do not converge after healing.
     */
    @Test
    void aFetchSessionThatDropsHighWatermarkOnlyAnswersIsCaught() {
        assertCaught(ReplicationSimulation.Options.defaults(2).withHwOnlyAnswersDropped(), "no convergence");
    }

    private static void assertCaught(ReplicationSimulation.Options mutant, String... expected) {
        int caught = 0;
        int runs = 0;
        String example = null;
        for (long seed = 0; seed < 60 && caught < 5; seed++) {
            runs++;
            try {
                ReplicationSimulation.runAndHeal(seed, mutant.withEvents(ReplicationProperties.EVENTS));
            } catch (ReplicationSimulation.InvariantViolation e) {
                caught++;
                if (example == null) {
                    example = e.getMessage();
                }
            }
        }
        assertThat(caught).as("histories (of %d) where the mutant breaks an invariant", runs).isGreaterThanOrEqualTo(5);
        assertThat(example).containsAnyOf(expected).contains("replay:");
    }
}
