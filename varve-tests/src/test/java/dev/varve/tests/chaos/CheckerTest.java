package dev.varve.tests.chaos;

import dev.varve.tests.chaos.History.OffsetValue;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Hand-written histories: a clean one, then each anomaly injected on its own into it. Producers are
 * processes 1 and 2, the consumer is process 100; every event is 1 ms after the previous one.
 */
class CheckerTest {
    private final History history = new History();
    private long now = 1_000_000_000L;

    private long tick() {
        return now += 1_000_000;
    }

    private void acked(int producer, int partition, String value, long offset) {
        history.sendInvoke(producer, partition, value, tick());
        history.sendOk(producer, partition, value, offset, tick());
    }

    private void failed(int producer, int partition, String value, boolean definite) {
        history.sendInvoke(producer, partition, value, tick());
        history.sendFail(producer, partition, value, definite, tick());
    }

    private void polled(int partition, long offset, String value) {
        history.poll(100, partition, offset, value, tick());
    }

    /** {@code finalRead(0, "a", "b")}: p0 holds a at 0 and b at 1. */
    private void finalRead(int partition, String... values) {
        List<OffsetValue> records = new ArrayList<>();
        for (int offset = 0; offset < values.length; offset++) {
            records.add(new OffsetValue(offset, values[offset]));
        }
        history.finalRead(partition, records, tick());
    }

    private Report check() {
        return Checker.check(history, Checker.Options.defaults());
    }

    /**
     * Producer 1 acked a0, a1 on p0, then c timed out (indefinite) but landed; producer 2 acked b0 on p1,
     * then d failed definitely; the consumer polled p0 up to offset 1. Healed, then read.
     */
    private void cleanRun() {
        acked(1, 0, "a0", 0);
        acked(1, 0, "a1", 1);
        acked(2, 1, "b0", 0);
        failed(1, 0, "c", false);
        failed(2, 1, "d", true);
        polled(0, 0, "a0");
        polled(0, 1, "a1");
        history.heal(tick());
    }

    private void cleanFinalRead() {
        finalRead(0, "a0", "a1", "c");
        finalRead(1, "b0");
    }

    @Test
    void cleanHistoryIsValid() {
        cleanRun();
        cleanFinalRead();

        Report report = check();

        assertThat(report.valid()).as(report.toString()).isTrue();
        assertThat(report.found()).isEmpty();
        assertThat(report.totals()).isEqualTo(new Report.Totals(5, 3, 1, 1, 0, 1, 2, new TreeMap<>(Map.of(0, 3, 1, 1))));
        assertThat(report.liveness().complete()).isTrue();
        assertThat(report.liveness().violated()).isFalse();
        assertThat(report.liveness().healToFinalReadMs()).hasValue(1);
        assertThat(report.toString()).startsWith("VALID").contains("LOST", "liveness: complete");
    }

    @Test
    void indefiniteSendsMayOrMayNotLand() {
        acked(1, 0, "a0", 0);
        failed(1, 0, "landed", false);
        failed(1, 0, "vanished", false);
        history.sendInvoke(2, 0, "unresolvedLanded", tick());
        history.sendInvoke(2, 0, "unresolvedVanished", tick());
        polled(0, 1, "landed");
        finalRead(0, "a0", "landed", "unresolvedLanded");

        Report report = check();

        assertThat(report.valid()).as(report.toString()).isTrue();
        assertThat(report.totals().failedIndefinite()).isEqualTo(2);
        assertThat(report.totals().unresolved()).isEqualTo(2);
        assertThat(report.totals().indefiniteLanded()).isEqualTo(2);
    }

    @Test
    void lostAckedValues() {
        cleanRun();
        acked(2, 1, "b1", 1);
        acked(2, 1, "b2", 2);
        cleanFinalRead(); // p1 holds only b0

        Report report = check();

        assertThat(report.found()).containsExactly(Anomaly.LOST);
        assertThat(report.count(Anomaly.LOST)).isEqualTo(2);
        assertThat(report.firstExample(Anomaly.LOST)).hasValueSatisfying(example -> assertThat(example)
                .contains("b1 acked to producer 2 at p1@1", "nothing", "last offset 0"));
        assertThat(report.liveness().complete()).isFalse();
        assertThat(report.liveness().ackedMissing()).isEqualTo(2);
        assertThat(report.toString()).startsWith("INVALID").contains("first LOST: b1");
    }

    @Test
    void duplicateInTheFinalRead() {
        cleanRun();
        finalRead(0, "a0", "a1", "c", "a1");
        finalRead(1, "b0");

        Report report = check();

        assertThat(report.found()).containsExactly(Anomaly.DUPLICATE);
        assertThat(report.count(Anomaly.DUPLICATE)).isEqualTo(1);
        assertThat(report.firstExample(Anomaly.DUPLICATE)).hasValueSatisfying(example -> assertThat(example)
                .contains("a1 at 2 positions", "p0@1 (acked to producer 1", "polled by consumer 100", "p0@3 (final read)"));
    }

    @Test
    void duplicatePolledThenTruncatedIsAlsoALostRead() {
        cleanRun();
        polled(0, 3, "a0"); // redelivered at offset 3, gone from the final read
        cleanFinalRead();

        Report report = check();

        assertThat(report.found()).containsExactlyInAnyOrder(Anomaly.DUPLICATE, Anomaly.LOST_READ);
        assertThat(report.firstExample(Anomaly.DUPLICATE)).hasValueSatisfying(example -> assertThat(example)
                .contains("a0 at 2 positions", "p0@0", "p0@3"));
    }

    @Test
    void reorderOfSequentialSends() {
        cleanRun();
        acked(1, 1, "x", 2);
        acked(1, 1, "y", 1); // invoked after x was acked, yet lands before it
        finalRead(0, "a0", "a1", "c");
        finalRead(1, "b0", "y", "x");

        Report report = check();

        assertThat(report.found()).containsExactly(Anomaly.REORDER);
        assertThat(report.count(Anomaly.REORDER)).isEqualTo(1);
        assertThat(report.firstExample(Anomaly.REORDER)).hasValueSatisfying(example -> assertThat(example)
                .contains("producer 1 on p1", "x acked", "final offset 2", "but y invoked later", "final offset 1"));
    }

    @Test
    void concurrentSendsMayLandInEitherOrder() {
        cleanRun();
        history.sendInvoke(1, 1, "x", tick());
        history.sendInvoke(1, 1, "y", tick()); // in flight together with x
        history.sendOk(1, 1, "y", 1, tick());
        history.sendOk(1, 1, "x", 2, tick());
        finalRead(0, "a0", "a1", "c");
        finalRead(1, "b0", "y", "x");

        assertThat(check().valid()).isTrue();
    }

    @Test
    void ackedOffsetDisagreesWithTheLog() {
        cleanRun();
        acked(2, 1, "b1", 0); // the ack says 0, which holds b0; the log has b1 at 1
        finalRead(0, "a0", "a1", "c");
        finalRead(1, "b0", "b1");

        Report report = check();

        assertThat(report.found()).containsExactly(Anomaly.INCONSISTENT_OFFSET);
        assertThat(report.count(Anomaly.INCONSISTENT_OFFSET)).isEqualTo(1);
        assertThat(report.firstExample(Anomaly.INCONSISTENT_OFFSET)).hasValueSatisfying(example -> assertThat(example)
                .contains("p1@0 holds 2 values", "b0 (acked to producer 2", "final read", "b1 (acked to producer 2"));
    }

    @Test
    void readAboveCommittedThenTruncated() {
        cleanRun();
        failed(2, 0, "z", false);
        polled(0, 3, "z");
        polled(0, 3, "z"); // the same read again counts once
        cleanFinalRead();

        Report report = check();

        assertThat(report.found()).containsExactly(Anomaly.LOST_READ);
        assertThat(report.count(Anomaly.LOST_READ)).isEqualTo(1);
        assertThat(report.firstExample(Anomaly.LOST_READ)).hasValueSatisfying(example -> assertThat(example)
                .contains("z polled by consumer 100 at p0@3", "nothing", "last offset 2"));
    }

    @Test
    void neverSentAndDefinitelyFailedValuesAreUnexpected() {
        cleanRun();
        polled(1, 1, "d"); // failed definitely, yet read
        finalRead(0, "a0", "a1", "c", "ghost");
        finalRead(1, "b0", "d");

        Report report = check();

        assertThat(report.found()).containsExactly(Anomaly.UNEXPECTED);
        assertThat(report.count(Anomaly.UNEXPECTED)).isEqualTo(2);
        assertThat(report.firstExample(Anomaly.UNEXPECTED)).hasValueSatisfying(example -> assertThat(example)
                .contains("d: its send by producer 2 failed definitely", "p1@1 (polled by consumer 100"));
        assertThat(report.toString()).contains("UNEXPECTED", "2");
    }

    @Test
    void valueInAnotherPartitionIsUnexpected() {
        cleanRun();
        finalRead(0, "a0", "a1");
        finalRead(1, "b0", "c"); // c was sent to p0 (indefinite)

        Report report = check();

        assertThat(report.found()).containsExactly(Anomaly.UNEXPECTED);
        assertThat(report.firstExample(Anomaly.UNEXPECTED)).hasValueSatisfying(example -> assertThat(example)
                .contains("c: sent to p0 only", "p1@1 (final read)"));
    }

    @Test
    void unreadPartitionIsALivenessQuestionNotALoss() {
        cleanRun();
        finalRead(0, "a0", "a1", "c"); // p1 never read

        Report report = check();

        assertThat(report.valid()).isTrue();
        Report.Liveness liveness = report.liveness();
        assertThat(liveness.complete()).isFalse();
        assertThat(liveness.unreadPartitions()).containsExactly(1);
        assertThat(liveness.ackedUnread()).isEqualTo(1);
        assertThat(liveness.healToFinalReadMs()).hasValue(1);
        assertThat(liveness.violated()).as("read 1 ms after heal, bound 30 s").isFalse();
        assertThat(liveness.verdict()).startsWith("inconclusive");

        Report strict = Checker.check(history, new Checker.Options(1));
        assertThat(strict.liveness().violated()).isTrue();
        assertThat(strict.toString()).contains("liveness: VIOLATED");
    }

    @Test
    void incompleteReadWithoutHealViolatesLiveness() {
        acked(1, 0, "a0", 0);
        finalRead(0);

        Report report = check();

        assertThat(report.found()).containsExactly(Anomaly.LOST);
        assertThat(report.liveness().healToFinalReadMs()).isEmpty();
        assertThat(report.liveness().violated()).isTrue();
    }

    @Test
    void malformedHistoriesAreRejected() {
        History twice = History.of(List.of(new History.SendInvoke(1, 0, "a", 1), new History.SendInvoke(1, 0, "a", 2)));
        History orphan = History.of(List.of(new History.SendOk(1, 0, "a", 0, 1)));
        History twoOutcomes = History.of(List.of(new History.SendInvoke(1, 0, "a", 1),
                new History.SendOk(1, 0, "a", 0, 2), new History.SendFail(1, 0, "a", true, 3)));
        History otherPartition = History.of(List.of(new History.SendInvoke(1, 0, "a", 1), new History.SendOk(1, 1, "a", 0, 2)));
        History beforeInvoke = History.of(List.of(new History.SendInvoke(1, 0, "a", 5), new History.SendOk(1, 0, "a", 0, 2)));

        for (History bad : List.of(twice, orphan, twoOutcomes, otherPartition, beforeInvoke)) {
            assertThatThrownBy(() -> Checker.check(bad, Checker.Options.defaults()))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageStartingWith("malformed history");
        }
    }

    @Test
    void emptyHistoryIsValidAndComplete() {
        Report report = check();

        assertThat(report.valid()).isTrue();
        assertThat(report.liveness().complete()).isTrue();
        assertThat(report.totals().sendsInvoked()).isZero();
    }
}
