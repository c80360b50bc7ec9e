package dev.varve.tests.chaos;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/** Recording from many threads at once, and checking a 100k-operation history quickly. */
class HistoryTest {
    private static final int PRODUCERS = 8;
    private static final int SENDS_EACH = 12_500;

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void concurrentRecordingOf100kSendsKeepsEveryEventAndChecksValid() throws Exception {
        History history = new History();
        ExecutorService pool = Executors.newFixedThreadPool(PRODUCERS);
        CountDownLatch start = new CountDownLatch(1);
        List<Future<?>> done = new ArrayList<>();
        for (int p = 0; p < PRODUCERS; p++) {
            int producer = p;
            done.add(pool.submit(() -> {
                start.await();
                for (int seq = 0; seq < SENDS_EACH; seq++) { // partition = producer, so offset = seq
                    String value = producer + "-" + seq;
                    history.sendInvoke(producer, producer, value, System.nanoTime());
                    history.sendOk(producer, producer, value, seq, System.nanoTime());
                    history.poll(100 + producer, producer, seq, value, System.nanoTime());
                }
                return null;
            }));
        }
        start.countDown();
        for (Future<?> f : done) {
            f.get();
        }
        pool.shutdown();
        history.heal(System.nanoTime());
        for (int p = 0; p < PRODUCERS; p++) {
            List<History.OffsetValue> log = new ArrayList<>();
            for (int seq = 0; seq < SENDS_EACH; seq++) {
                log.add(new History.OffsetValue(seq, p + "-" + seq));
            }
            history.finalRead(p, log, System.nanoTime());
        }

        assertThat(history.events()).hasSize(PRODUCERS * SENDS_EACH * 3 + 1 + PRODUCERS);
        Report report = Checker.check(history, Checker.Options.defaults());
        assertThat(report.valid()).as(report.toString()).isTrue();
        assertThat(report.totals().acked()).isEqualTo(PRODUCERS * SENDS_EACH);
        assertThat(report.totals().polls()).isEqualTo(PRODUCERS * SENDS_EACH);
        assertThat(report.liveness().complete()).isTrue();
    }
}
