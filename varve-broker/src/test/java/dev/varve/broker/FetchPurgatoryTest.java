package dev.varve.broker;

import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/** A parked fetch completes on its condition (any number of wake-ups), or once at its timeout, never both. */
class FetchPurgatoryTest {
    private final FetchPurgatory purgatory = new FetchPurgatory();
    private final TopicPartition tp = new TopicPartition("t", 0);

    @AfterEach
    void close() {
        purgatory.close();
    }

    @Test
    void aWakeThatFindsTooLittleKeepsTheFetchWaiting() {
        AtomicBoolean enough = new AtomicBoolean();
        AtomicInteger attempts = new AtomicInteger();
        AtomicInteger completed = new AtomicInteger();
        AtomicInteger timedOut = new AtomicInteger();
        purgatory.watch(List.of(tp), 60_000, () -> {
            attempts.incrementAndGet();
            if (enough.get()) {
                completed.incrementAndGet();
                return true;
            }
            return false;
        }, timedOut::incrementAndGet);
        purgatory.wake(tp); // an append the consumer cannot read yet (HW not moved)
        purgatory.wake(tp);
        assertThat(completed).hasValue(0);
        assertThat(purgatory.waiting()).isEqualTo(1);
        enough.set(true); // the HW moved
        purgatory.wake(tp);
        purgatory.wake(tp);
        assertThat(completed).hasValue(1);
        assertThat(attempts.get()).isEqualTo(4); // at registration, two in vain, one that completed
        assertThat(purgatory.waiting()).isZero();
        assertThat(timedOut).hasValue(0);
    }

    @Test
    void theTimeoutAnswersOnceWhenTheConditionNeverHolds() {
        AtomicInteger timedOut = new AtomicInteger();
        purgatory.watch(List.of(tp), 50, () -> false, timedOut::incrementAndGet);
        await().atMost(Duration.ofSeconds(5)).until(() -> timedOut.get() == 1);
        purgatory.wake(tp);
        assertThat(timedOut).hasValue(1);
        assertThat(purgatory.waiting()).isZero();
    }

    @Test
    void aWakeFromInsideAnAttemptIsRetriedNotRunConcurrently() {
        AtomicInteger depth = new AtomicInteger();
        AtomicInteger maxDepth = new AtomicInteger();
        AtomicInteger attempts = new AtomicInteger();
        AtomicInteger completed = new AtomicInteger();
        purgatory.watch(List.of(tp), 60_000, () -> {
            int d = depth.incrementAndGet();
            maxDepth.accumulateAndGet(d, Math::max);
            try {
                int n = attempts.incrementAndGet();
                if (n == 2) {
                    purgatory.wake(tp); // a follower's re-read moved the HW: wakes this very fetch
                    return false;
                }
                if (n == 3) {
                    completed.incrementAndGet();
                    return true;
                }
                return false;
            } finally {
                depth.decrementAndGet();
            }
        }, () -> { });
        purgatory.wake(tp);
        assertThat(maxDepth).hasValue(1);
        assertThat(completed).hasValue(1);
        assertThat(purgatory.waiting()).isZero();
    }
}
