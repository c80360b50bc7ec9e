package dev.varve.broker.replication;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Replays one simulation seed and prints its whole event trace. A failing property prints the command,
 * for example:
 * <pre>
 *   ./mvnw -o -q -pl varve-broker -am test -Dtest=ReplicationReplay -Dsurefire.failIfNoSpecifiedTests=false \
 *       -Dvarve.sim.seed=-4242 -Dvarve.sim.minIsr=2 -Dvarve.sim.events=3000 -Dvarve.sim.partitions=3
 * </pre>
 * Optional: {@code -Dvarve.sim.policy=HIGH_WATERMARK}, {@code -Dvarve.sim.hwIgnoresIsr=true},
 * {@code -Dvarve.sim.unclean=true}, {@code -Dvarve.sim.hwOnlyAnswersDropped=true} (the mutants). The same seed and options give the same trace, event
 * for event; the trace hash printed at the end tells two runs apart. {@code -Dvarve.sim.soak=N} (with
 * {@code -Dvarve.sim.from=S}) runs N seeds instead, for a longer search than the CI properties.
 */
class ReplicationReplay {

    @Test
    @EnabledIfSystemProperty(named = "varve.sim.seed", matches = "-?\\d+")
    void replay() {
        long seed = Long.parseLong(System.getProperty("varve.sim.seed"));
        ReplicationSimulation.Options options = fromProperties();
        ReplicationSimulation sim = new ReplicationSimulation(seed, options, System.out::println);
        try {
            sim.runChecked();
        } finally {
            System.out.println("seed " + seed + " " + options + ": " + sim.events + " events, trace hash " + sim.traceHash());
        }
    }

    /**
     * A longer local soak: {@code -Dvarve.sim.soak=N} runs N seeds from {@code -Dvarve.sim.from} (default 0)
     * with the options above and lists every failing seed (each replays with {@code -Dvarve.sim.seed}).
     */
    @Test
    @EnabledIfSystemProperty(named = "varve.sim.soak", matches = "\\d+")
    void soak() {
        int count = Integer.getInteger("varve.sim.soak");
        long from = Long.getLong("varve.sim.from", 0L);
        ReplicationSimulation.Options options = fromProperties();
        List<String> failures = new ArrayList<>();
        for (long seed = from; seed < from + count; seed++) {
            try {
                ReplicationSimulation.runAndHeal(seed, options);
            } catch (ReplicationSimulation.InvariantViolation e) {
                failures.add(e.getMessage().lines().limit(4).collect(Collectors.joining("\n")));
            }
        }
        assertThat(failures).as("failing seeds of %d from %d", count, from).isEmpty();
    }

    static ReplicationSimulation.Options fromProperties() {
        ReplicationSimulation.Options o = ReplicationSimulation.Options.defaults(Integer.getInteger("varve.sim.minIsr", 2))
                .withEvents(Integer.getInteger("varve.sim.events", ReplicationProperties.EVENTS))
                .withPolicy(ReplicationSimulation.TruncationPolicy.valueOf(System.getProperty("varve.sim.policy", "LEADER_EPOCH")))
                .withPartitions(Integer.getInteger("varve.sim.partitions", 3));
        if (Boolean.getBoolean("varve.sim.hwIgnoresIsr")) {
            o = o.withHwIgnoringIsr();
        }
        if (Boolean.getBoolean("varve.sim.unclean")) {
            o = o.withUncleanElection();
        }
        if (Boolean.getBoolean("varve.sim.hwOnlyAnswersDropped")) {
            o = o.withHwOnlyAnswersDropped();
        }
        return o;
    }
}
