package dev.varve.tests.chaos;

import dev.varve.tests.chaos.History.OffsetValue;
import dev.varve.tests.chaos.TxnHistory.Outcome;
import dev.varve.tests.chaos.TxnHistory.Write;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static dev.varve.tests.chaos.TxnHistory.INPUT;
import static dev.varve.tests.chaos.TxnHistory.OUTPUT;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Hand-written transactional histories for {@link TxnChecker}: a clean run, then each anomaly injected
 * on its own. Writers are clients 200 and 201, the processor 300, readers 400-402.
 *
 * <p>The clean run's logs (m = a transaction marker):
 * <pre>
 * chaos-txn/p0:     0 a1, 1 m, 2 b1 (aborted), 3 m, 4 c1 (unknown, landed), 5 m, 6 d1 (unknown, not landed), 7 m, 8 f1, 9 m
 * chaos-txn/p1:     0 a2, 1 m, 2 b2 (aborted), 3 m, 4 c2, 5 m, 6 d2, 7 m, 8 f2, 9 m
 * chaos-txn-out/p0: 0 a1=>x1, 1 m, 2 c1=>x2 (aborted), 3 m, 4 c1=>x3, 5 m
 * chaos-txn-out/p1: 0 a2=>x1, 1 m, 2 c2=>x3, 3 m
 * </pre>
 * The group committed chaos-txn p0 and p1 up to 5 (f1 and f2 not yet processed).
 */
class TxnCheckerTest {
    private final TxnHistory history = new TxnHistory();
    private long now = 1_000_000_000L;
    private final Map<String, List<OffsetValue>> finals = new HashMap<>();
    private Map<Integer, Long> groupOffsets = Map.of(0, 5L, 1, 5L);
    private boolean finalComplete = true;

    private long tick() {
        return now += 1_000_000;
    }

    private static Write in(int partition, String value) {
        return new Write(INPUT, partition, value);
    }

    private static Write out(int partition, String value) {
        return new Write(OUTPUT, partition, value);
    }

    private void txn(int process, String name, Outcome outcome, Write... writes) {
        long start = tick();
        history.add(new TxnHistory.Txn(process, name, List.of(writes), outcome, start, tick()));
    }

    private void read(int process, boolean ordered, String topic, int partition, long offset, String value) {
        history.add(new TxnHistory.Read(process, ordered, topic, partition, offset, value, tick()));
    }

    private void reader(String topic, int partition, long offset, String value) {
        read(400, true, topic, partition, offset, value);
    }

    private void finalHas(String topic, int partition, long offset, String value) {
        finals.computeIfAbsent(topic + "/" + partition, k -> new ArrayList<>()).add(new OffsetValue(offset, value));
    }

    private void cleanRun() {
        txn(200, "w1", Outcome.COMMITTED, in(0, "a1"), in(1, "a2"));
        txn(200, "w2", Outcome.ABORTED, in(0, "b1"), in(1, "b2"));
        txn(201, "w3", Outcome.UNKNOWN, in(0, "c1"), in(1, "c2"));
        txn(201, "w4", Outcome.UNKNOWN, in(0, "d1"), in(1, "d2"));
        read(300, false, INPUT, 0, 0, "a1");
        read(300, false, INPUT, 1, 0, "a2");
        txn(300, "x1", Outcome.COMMITTED, out(0, "a1=>x1"), out(1, "a2=>x1"));
        read(300, false, INPUT, 0, 4, "c1");
        txn(300, "x2", Outcome.ABORTED, out(0, "c1=>x2"));
        read(300, false, INPUT, 0, 4, "c1"); // read again after the rewind
        read(300, false, INPUT, 1, 4, "c2");
        txn(300, "x3", Outcome.COMMITTED, out(0, "c1=>x3"), out(1, "c2=>x3"));
        history.add(new TxnHistory.Heal(tick()));
        txn(200, "w5", Outcome.COMMITTED, in(0, "f1"), in(1, "f2"));
        reader(INPUT, 0, 0, "a1");
        reader(INPUT, 0, 4, "c1");
        reader(INPUT, 0, 8, "f1");
        reader(INPUT, 1, 0, "a2");
        reader(OUTPUT, 0, 0, "a1=>x1");
        reader(OUTPUT, 0, 4, "c1=>x3");
        finalHas(INPUT, 0, 0, "a1");
        finalHas(INPUT, 0, 4, "c1");
        finalHas(INPUT, 0, 8, "f1");
        finalHas(INPUT, 1, 0, "a2");
        finalHas(INPUT, 1, 4, "c2");
        finalHas(INPUT, 1, 8, "f2");
        finalHas(OUTPUT, 0, 0, "a1=>x1");
        finalHas(OUTPUT, 0, 4, "c1=>x3");
        finalHas(OUTPUT, 1, 0, "a2=>x1");
        finalHas(OUTPUT, 1, 2, "c2=>x3");
    }

    private TxnReport check() {
        if (groupOffsets != null) {
            history.add(new TxnHistory.GroupOffsets(groupOffsets, tick()));
        }
        for (String topic : List.of(INPUT, OUTPUT)) {
            for (int p = 0; p < 2; p++) {
                history.add(new TxnHistory.FinalRead(topic, p, finals.getOrDefault(topic + "/" + p, List.of()),
                        finalComplete, tick()));
            }
        }
        return TxnChecker.check(history);
    }

    private void removeFinal(String topic, int partition, String value) {
        assertThat(finals.get(topic + "/" + partition).removeIf(r -> r.value().equals(value))).isTrue();
    }

    private static void assertOnly(TxnReport report, TxnAnomaly kind, int count) {
        assertThat(report.found()).as(report.toString()).containsExactly(kind);
        assertThat(report.count(kind)).as(report.toString()).isEqualTo(count);
        assertThat(report.firstExample(kind)).isPresent();
        assertThat(report.toString()).contains("first " + kind + ": ");
    }

    @Test
    void cleanHistoryIsValid() {
        cleanRun();

        TxnReport report = check();

        assertThat(report.valid()).as(report.toString()).isTrue();
        TxnReport.Totals totals = report.totals();
        assertThat(totals.writerCommitted()).isEqualTo(2);
        assertThat(totals.writerAborted()).isEqualTo(1);
        assertThat(totals.writerUnknown()).isEqualTo(2);
        assertThat(totals.processorCommitted()).isEqualTo(2);
        assertThat(totals.processorAborted()).isEqualTo(1);
        assertThat(totals.unknownLanded()).isEqualTo(1);
        assertThat(totals.writerCommittedAfterHeal()).isEqualTo(1);
        assertThat(totals.processorCommittedAfterHeal()).isZero();
        assertThat(totals.finalInputRecords()).isEqualTo(6);
        assertThat(totals.finalOutputRecords()).isEqualTo(4);
        assertThat(totals.finalComplete()).isTrue();
        assertThat(totals.offsetsChecked()).isTrue();
    }

    @Test
    void abortedValueReadByAReader() {
        cleanRun();
        reader(INPUT, 1, 2, "b2");

        assertOnly(check(), TxnAnomaly.ABORTED_READ, 1);
    }

    @Test
    void abortedValueInTheFinalRead() {
        cleanRun();
        finalHas(OUTPUT, 0, 2, "c1=>x2"); // the processor's aborted output
        finals.get(OUTPUT + "/0").sort(java.util.Comparator.comparingLong(OffsetValue::offset));

        TxnReport report = check();

        // c1 now has two derived records in the output as well
        assertThat(report.found()).as(report.toString()).containsExactlyInAnyOrder(TxnAnomaly.ABORTED_READ, TxnAnomaly.DUPLICATE);
        assertThat(report.firstExample(TxnAnomaly.ABORTED_READ).orElseThrow()).contains("c1=>x2", "aborted");
    }

    @Test
    void valueNoTransactionWroteOrInAnotherPartition() {
        cleanRun();
        reader(OUTPUT, 1, 5, "zz");
        read(401, true, OUTPUT, 1, 7, "d1"); // d1 was written to chaos-txn/p0

        assertOnly(check(), TxnAnomaly.ABORTED_READ, 2);
    }

    @Test
    void unknownTransactionPartlyLandedIsTorn() {
        // reader 400 read chaos-txn/p0 @4 and @8: a d1 at @6 would also be a SKIPPED_READ; d2 is past its reads
        cleanRun();
        finalHas(INPUT, 1, 6, "d2"); // d1 did not land
        finals.get(INPUT + "/1").sort(java.util.Comparator.comparingLong(OffsetValue::offset));

        TxnReport report = check();

        assertOnly(report, TxnAnomaly.TORN_TRANSACTION, 1);
        assertThat(report.firstExample(TxnAnomaly.TORN_TRANSACTION).orElseThrow()).contains("w4", "d1", "d2");
    }

    @Test
    void committedTransactionPartlyLandedIsTornAndLost() {
        cleanRun();
        removeFinal(INPUT, 1, "f2");

        TxnReport report = check();

        assertThat(report.found()).as(report.toString()).containsExactlyInAnyOrder(TxnAnomaly.TORN_TRANSACTION, TxnAnomaly.LOST_WRITE);
        assertThat(report.count(TxnAnomaly.LOST_WRITE)).isEqualTo(1);
    }

    @Test
    void committedTransactionMissingEntirelyIsLost() {
        cleanRun();
        txn(201, "w6", Outcome.COMMITTED, in(0, "g1"), in(1, "g2"));

        assertOnly(check(), TxnAnomaly.LOST_WRITE, 2);
    }

    @Test
    void valueReadCommittedThenMissingIsLost() {
        cleanRun();
        read(401, true, INPUT, 1, 6, "d2"); // unknown w4 seen committed by a reader, absent from the final read

        TxnReport report = check();

        assertOnly(report, TxnAnomaly.LOST_WRITE, 1);
        assertThat(report.firstExample(TxnAnomaly.LOST_WRITE).orElseThrow()).contains("d2", "consumer 401");
    }

    @Test
    void valueAtTwoPositionsIsADuplicate() {
        cleanRun();
        finalHas(INPUT, 1, 10, "a2");

        assertOnly(check(), TxnAnomaly.DUPLICATE, 1);
    }

    @Test
    void inputProcessedTwiceIsADuplicate() {
        cleanRun();
        txn(300, "x4", Outcome.COMMITTED, out(1, "a2=>x4"));
        finalHas(OUTPUT, 1, 4, "a2=>x4");

        TxnReport report = check();

        assertOnly(report, TxnAnomaly.DUPLICATE, 1);
        assertThat(report.firstExample(TxnAnomaly.DUPLICATE).orElseThrow()).contains("a2=>x1", "a2=>x4");
    }

    @Test
    void readerSkippingACommittedRecord() {
        cleanRun();
        read(401, true, INPUT, 0, 0, "a1");
        read(401, true, INPUT, 0, 8, "f1"); // c1 at 4 skipped

        TxnReport report = check();

        assertOnly(report, TxnAnomaly.SKIPPED_READ, 1);
        assertThat(report.firstExample(TxnAnomaly.SKIPPED_READ).orElseThrow()).contains("c1", "@4");
    }

    @Test
    void unorderedConsumersMaySkipAndRereadAndReadersMayStopAnywhere() {
        cleanRun();
        read(300, false, INPUT, 0, 8, "f1"); // a processor after a rebalance: not ordered
        read(402, true, INPUT, 1, 4, "c2");  // a reader that started late or stopped early
        read(402, true, INPUT, 1, 8, "f2");
        read(402, true, INPUT, 1, 4, "c2");  // re-read after an offset reset

        TxnReport report = check();

        assertThat(report.valid()).as(report.toString()).isTrue();
    }

    @Test
    void offsetsCommittedForRecordsNotProduced() {
        cleanRun();
        groupOffsets = Map.of(0, 9L, 1, 5L); // covers f1 at 8, which has no output

        TxnReport report = check();

        assertOnly(report, TxnAnomaly.OFFSET_WITHOUT_OUTPUT, 1);
        assertThat(report.firstExample(TxnAnomaly.OFFSET_WITHOUT_OUTPUT).orElseThrow()).contains("f1");
    }

    @Test
    void outputLostWhileItsOffsetsCommitted() {
        cleanRun();
        removeFinal(OUTPUT, 0, "c1=>x3");
        removeFinal(OUTPUT, 1, "c2=>x3");

        TxnReport report = check();

        // the whole committed processor transaction x3 is gone: lost, and its offsets cover c1 and c2
        assertThat(report.found()).as(report.toString())
                .containsExactlyInAnyOrder(TxnAnomaly.LOST_WRITE, TxnAnomaly.OFFSET_WITHOUT_OUTPUT);
        assertThat(report.count(TxnAnomaly.OFFSET_WITHOUT_OUTPUT)).isEqualTo(2);
    }

    @Test
    void outputForRecordsBeyondTheCommittedOffset() {
        cleanRun();
        groupOffsets = Map.of(0, 3L, 1, 5L); // c1 at 4 has its output, but the group's offset stops at 3

        TxnReport report = check();

        assertOnly(report, TxnAnomaly.OUTPUT_WITHOUT_OFFSET, 1);
        assertThat(report.firstExample(TxnAnomaly.OUTPUT_WITHOUT_OFFSET).orElseThrow()).contains("c1=>x3");
    }

    @Test
    void outputWithoutAnyCommittedOffset() {
        cleanRun();
        groupOffsets = Map.of(0, 5L);

        assertOnly(check(), TxnAnomaly.OUTPUT_WITHOUT_OFFSET, 2);
    }

    @Test
    void withoutTheGroupsOffsetsTheOffsetChecksAreSkipped() {
        cleanRun();
        groupOffsets = null;
        finalHas(INPUT, 1, 12, "h2");
        txn(201, "w7", Outcome.COMMITTED, in(1, "h2"));

        TxnReport report = check();

        assertThat(report.valid()).as(report.toString()).isTrue();
        assertThat(report.totals().offsetsChecked()).isFalse();
    }

    @Test
    void incompleteFinalReadsAreNotJudged() {
        cleanRun();
        removeFinal(INPUT, 0, "f1");
        removeFinal(OUTPUT, 0, "c1=>x3");
        finalComplete = false;

        TxnReport report = check();

        assertThat(report.valid()).as(report.toString()).isTrue();
        assertThat(report.totals().finalComplete()).isFalse();
        assertThat(report.totals().offsetsChecked()).isFalse();
    }

    @Test
    void valueWrittenTwiceIsMalformed() {
        txn(200, "w1", Outcome.COMMITTED, in(0, "a1"));
        txn(200, "w2", Outcome.COMMITTED, in(1, "a1"));

        assertThatThrownBy(() -> TxnChecker.check(history)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("written twice");
    }

    @Test
    void emptyHistoryIsValid() {
        TxnReport report = TxnChecker.check(new TxnHistory());

        assertThat(report.valid()).isTrue();
        assertThat(report.totals().finalComplete()).isFalse();
    }
}
