package dev.varve.tests.chaos;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The fault-injection run ({@link ChaosRunner}) as a test: about a minute and a quarter of faults in the normal
 * suite; {@code -Dvarve.chaos.duration=10m} (or {@code bin/varve-chaos --duration 10m}) for a long run,
 * {@code -Dvarve.chaos.seed=N} to replay a schedule, {@code -Dvarve.chaos.faults=KILL,ISOLATE} to inject only
 * some {@link ChaosRunner.Fault}s, {@code -Dvarve.chaos.group.regex=false} to leave the group's broker-side regex
 * subscriptions out. The network faults need root (network namespaces); without it the
 * run injects the process and disk faults only, and says so. The reports (plain, transactional
 * ({@link TxnWorkload}) and consumer group ({@link GroupWorkload})) are printed either way.
 */
class ChaosTest {
    @TempDir
    Path dir;

    @Test
    @Timeout(value = 4, unit = TimeUnit.HOURS)
    void acknowledgedWritesSurviveKillsPausesAndRestarts() throws Exception {
        long durationMs = parseDuration(System.getProperty("varve.chaos.duration", "75s"));
        long seed = Long.getLong("varve.chaos.seed", System.nanoTime());
        System.out.printf("chaos run: duration %d s, seed %d (replay with -Dvarve.chaos.seed=%d)%n",
                durationMs / 1000, seed, seed);
        ChaosRunner.Settings settings = ChaosRunner.Settings.ci(durationMs, seed);
        String only = System.getProperty("varve.chaos.faults", "");
        if (!only.isBlank()) {
            settings = settings.only(java.util.Arrays.stream(only.split(","))
                    .map(f -> ChaosRunner.Fault.valueOf(f.trim().toUpperCase(java.util.Locale.ROOT))).toList());
        }
        System.out.println("faults: " + settings.faults());
        ChaosRunner.Result result = new ChaosRunner(settings).run(dir);
        System.out.println("faults injected:");
        result.faults().forEach(f -> System.out.println("  " + f));
        System.out.println(result.report());
        System.out.println(result.txnReport());
        System.out.println("consumer-group membership changes:");
        result.groupActions().forEach(a -> System.out.println("  " + a));
        System.out.println(result.groupReport());
        assertThat(result.kinds()).as("every fault kind was injected").containsExactlyInAnyOrderElementsOf(settings.faults());
        assertThat(result.report().valid()).as("no anomaly (seed " + seed + ")\n" + result.report()).isTrue();
        assertThat(result.report().liveness().complete())
                .as("every acknowledged write readable after the faults healed (seed " + seed + ")").isTrue();
        assertThat(result.report().totals().acked()).as("writes were acknowledged").isGreaterThan(100);
        TxnReport txn = result.txnReport();
        assertThat(txn.valid()).as("no transactional anomaly (seed " + seed + ")\n" + txn).isTrue();
        assertThat(txn.totals().finalComplete()).as("both transactional topics read to their ends after the heal").isTrue();
        assertThat(txn.totals().offsetsChecked()).as("the processors stopped cleanly and their offsets were judged").isTrue();
        assertThat(txn.totals().writerCommitted()).as("transactions were committed").isGreaterThan(50);
        assertThat(txn.totals().writerAborted()).as("transactions were aborted").isGreaterThan(5);
        assertThat(txn.totals().processorCommitted()).as("consume-transform-produce transactions were committed").isGreaterThan(10);
        assertThat(txn.totals().writerCommittedAfterHeal()).as("transactions committed after the heal").isGreaterThan(0);
        assertThat(txn.totals().processorCommittedAfterHeal()).as("processor transactions committed after the heal").isGreaterThan(0);
        GroupReport group = result.groupReport();
        GroupReport.Totals g = group.totals();
        assertThat(group.valid()).as("no consumer-group anomaly (seed " + seed + ")\n" + group).isTrue();
        assertThat(g.settled()).as("the group settled after the heal: Stable, every partition owned by one member (seed "
                + seed + ")\n" + group).isTrue();
        assertThat(g.offsetsJudged()).as("the group's final offsets were read").isTrue();
        assertThat(g.finalComplete()).as("the group committed every partition to its end (seed " + seed + ")\n" + group).isTrue();
        assertThat(g.members()).as("members joined").isGreaterThanOrEqualTo(GroupWorkload.INITIAL_MEMBERS + 2);
        if (GroupWorkload.regex(seed)) {
            assertThat(g.bySubscription().getOrDefault(GroupHistory.Subscription.REGEX, 0)).as("regex members").isPositive();
        }
        assertThat(g.stops(GroupHistory.Stop.LEAVE)).as("members left").isPositive();
        assertThat(g.stops(GroupHistory.Stop.CRASH)).as("members crashed").isPositive();
        assertThat(g.stops(GroupHistory.Stop.BOUNCE)).as("the static member restarted").isPositive();
        assertThat(g.stalls()).as("members stalled past their poll interval").isPositive();
        assertThat(g.commitsOk()).as("offsets were committed").isGreaterThan(100);
        assertThat(g.ackedJudged()).as("acknowledged records judged against the final offsets").isGreaterThan(1_000);
    }

    /** "90s", "10m", "2h" or milliseconds. */
    static long parseDuration(String s) {
        String v = s.trim().toLowerCase(java.util.Locale.ROOT);
        long unit = 1;
        if (v.endsWith("ms")) {
            v = v.substring(0, v.length() - 2);
        } else if (v.endsWith("s")) {
            unit = 1000;
            v = v.substring(0, v.length() - 1);
        } else if (v.endsWith("m")) {
            unit = 60_000;
            v = v.substring(0, v.length() - 1);
        } else if (v.endsWith("h")) {
            unit = 3_600_000;
            v = v.substring(0, v.length() - 1);
        }
        return Long.parseLong(v.trim()) * unit;
    }
}
