package dev.varve.tests;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The records one idempotent producer was told are written (its acknowledgements), per partition, and
 * the check of a read-back against them: every acknowledged record exactly once, and every partition's
 * records in the order they were sent. Values are {@link #value(long) "v-" + send sequence}.
 *
 * <p>Not checked: that records sit in the order their acknowledgements arrived. Across a failover the
 * producer may get a batch's acknowledgement after a later batch's (the first was written, its answer
 * lost, the retry answered as a duplicate), and Kafka makes no promise about that order; the log order
 * is what it promises. Thread-safe (producer callbacks add, the test reads).
 */
final class AckedRecords {
    private final Map<Integer, List<String>> byPartition = new HashMap<>();

    /** The value of the {@code seq}-th record sent. */
    static String value(long seq) {
        return "v-" + seq;
    }

    private static long sequenceOf(String value) {
        return Long.parseLong(value.substring(value.lastIndexOf('-') + 1));
    }

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

    /**
     * Partitions 0 .. {@code partitions}-1 of {@code read}: no duplicates, every acknowledged record
     * present, and the records in send order (an idempotent producer's records keep their order).
     */
    synchronized void assertReadBack(Map<Integer, List<String>> read, int partitions) {
        for (int p = 0; p < partitions; p++) {
            List<String> got = read.getOrDefault(p, List.of());
            List<String> want = byPartition.getOrDefault(p, List.of());
            assertThat(got).as("partition %d has no duplicates", p).doesNotHaveDuplicates();
            assertThat(got).as("partition %d holds every acknowledged record", p).containsAll(want);
            assertThat(got.stream().map(AckedRecords::sequenceOf).toList()).as("partition %d in send order", p).isSorted();
        }
    }
}
