package dev.varve.tests;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The records a producer was told are written (its acknowledgements), per partition in the order they
 * were acknowledged, and the check of a read-back against them: every acknowledged record exactly
 * once, in that order. Thread-safe (producer callbacks add, the test reads).
 */
final class AckedRecords {
    private final Map<Integer, List<String>> byPartition = new HashMap<>();

    synchronized void add(int partition, String value) {
        byPartition.computeIfAbsent(partition, k -> new ArrayList<>()).add(value);
    }

    synchronized int count() {
        return byPartition.values().stream().mapToInt(List::size).sum();
    }

    /** Waits until at least {@code n} records in all are acknowledged. */
    void awaitAtLeast(int n, Duration within) {
        await().atMost(within).until(() -> count() >= n);
    }

    /** Partitions 0 .. {@code partitions}-1 of {@code read}: no duplicates, every acknowledged record in order. */
    synchronized void assertReadBack(Map<Integer, List<String>> read, int partitions) {
        for (int p = 0; p < partitions; p++) {
            List<String> got = read.getOrDefault(p, List.of());
            List<String> want = byPartition.getOrDefault(p, List.of());
            assertThat(got).as("partition %d has no duplicates", p).doesNotHaveDuplicates();
            assertThat(got).as("partition %d holds every acknowledged record in order", p).containsSubsequence(want);
            assertThat(got).as("partition %d holds every acknowledged record", p).containsAll(want);
        }
    }
}
