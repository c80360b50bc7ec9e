package dev.varve.broker.txn;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Seeds of {@link TxnSimulation}: the transaction coordinator's state machine under coordinator and
 * partition leader failovers, broker crashes, zombies and abandoned producers.
 * {@code -Dvarve.txnsim.seeds=N} runs more seeds, {@code -Dvarve.txnsim.seed=S} replays one.
 */
class TxnSimulationTest {
    private static final int SEEDS = Integer.getInteger("varve.txnsim.seeds", 150);

    @Test
    void everyTransactionEndsTheSameWayEverywhereAsItsProducerWasTold() {
        Long only = Long.getLong("varve.txnsim.seed");
        long first = only != null ? only : 1;
        int n = only != null ? 1 : SEEDS;
        Map<String, Integer> totals = new HashMap<>();
        List<TxnSimulation.Result> failed = new ArrayList<>();
        for (long seed = first; seed < first + n; seed++) {
            TxnSimulation.Result r = new TxnSimulation(TxnSimulation.Settings.of(seed)).run();
            r.counts().forEach((k, v) -> totals.merge(k, v, Integer::sum));
            if (!r.valid()) {
                failed.add(r);
            }
        }
        System.out.println(n + " seeds: " + new java.util.TreeMap<>(totals));
        assertThat(failed).as("seeds with a broken invariant (replay with -Dvarve.txnsim.seed=S):\n%s",
                failed.stream().limit(3).map(Object::toString).reduce("", String::concat)).isEmpty();
        // the runs did what they are for: transactions of every outcome under every fault
        for (String what : List.of("transactions committed", "transactions aborted", "coordinator failovers",
                "partition leader failovers", "broker crashes", "zombies", "producers abandoned",
                "transactions with committed data", "transactions with aborted data")) {
            assertThat(totals.getOrDefault(what, 0)).as(what).isGreaterThan(n);
        }
    }

    /**
     * The checker sees what verification prevents: with a V1 leader appending without asking the
     * coordinator (Kafka before KIP-890), a write delayed past its transaction's abort opens a
     * transaction nobody ends, and some of these seeds find it.
     */
    @Test
    void withoutPartitionVerificationALateWriteLeavesAHangingTransaction() {
        List<String> found = new ArrayList<>();
        for (long seed = 1; seed <= 60 && found.isEmpty(); seed++) {
            TxnSimulation.Result r = new TxnSimulation(TxnSimulation.Settings.of(seed).withoutVerification()).run();
            r.violations().stream().filter(v -> v.contains("hangs")).forEach(found::add);
        }
        System.out.println("without verification: " + found);
        assertThat(found).as("a hanging transaction without verification").isNotEmpty();
    }
}
