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

    /**
     * A metadata delta that changes thousands of partitions wakes each waiting fetch once, not once per
     * partition it watches (a follower's fetch of 1,300 partitions was re-read 1,300 times per delta), and
     * still completes the one whose condition holds and counts as a wake for the registration race.
     */
    @Test
    void aWakeOfManyPartitionsTriesEachWaitingFetchOnce() {
        List<TopicPartition> many = java.util.stream.IntStream.range(0, 2_000)
                .mapToObj(i -> new TopicPartition("big", i)).toList();
        AtomicInteger followerAttempts = new AtomicInteger();
        AtomicInteger consumerAttempts = new AtomicInteger();
        AtomicInteger consumerCompleted = new AtomicInteger();
        AtomicBoolean enough = new AtomicBoolean();
        purgatory.watch(many.subList(0, 1_300), 60_000, () -> followerAttempts.incrementAndGet() < 0, () -> { }, purgatory.wakes());
        purgatory.watch(many.subList(1_000, 2_000), 60_000, () -> {
            consumerAttempts.incrementAndGet();
            if (enough.get()) {
                consumerCompleted.incrementAndGet();
                return true;
            }
            return false;
        }, () -> { }, purgatory.wakes());
        assertThat(followerAttempts).hasValue(0);

        long before = purgatory.wakes();
        purgatory.wakeAll(many);
        assertThat(followerAttempts).hasValue(1);
        assertThat(consumerAttempts).hasValue(1);
        assertThat(purgatory.wakes()).isGreaterThan(before);

        enough.set(true);
        purgatory.wakeAll(many.subList(1_500, 1_600));
        assertThat(followerAttempts).hasValue(1); // watches none of them
        assertThat(consumerCompleted).hasValue(1);
        assertThat(purgatory.waiting()).isEqualTo(1);
        purgatory.wakeAll(List.of()); // nothing named: nothing tried
        assertThat(followerAttempts).hasValue(1);
    }

    /**
     * Wakes made one partition at a time inside coalescingWakes (a follower's read moving 2,000 high
     * watermarks, the answers to an AlterPartition of 2,000 ISR changes) try each waiting fetch once at
     * the end, not once per partition; a wake counts only when delivered, after the changes it reports;
     * a fetch whose condition holds still completes.
     */
    @Test
    void wakesHeldInACoalescingScopeTryEachWaitingFetchOnceAtItsEnd() {
        List<TopicPartition> many = java.util.stream.IntStream.range(0, 2_000)
                .mapToObj(i -> new TopicPartition("big", i)).toList();
        AtomicInteger followerAttempts = new AtomicInteger();
        purgatory.watch(many, 60_000, () -> followerAttempts.incrementAndGet() < 0, () -> { }, purgatory.wakes());
        AtomicBoolean enough = new AtomicBoolean();
        AtomicInteger consumerCompleted = new AtomicInteger();
        purgatory.watch(List.of(tp), 60_000, () -> enough.get() && consumerCompleted.incrementAndGet() > 0, () -> { },
                purgatory.wakes());
        long before = purgatory.wakes();
        int seenInside = purgatory.coalescingWakes(() -> {
            for (TopicPartition p : many) {
                purgatory.wake(p);
            }
            enough.set(true);
            purgatory.coalescingWakes(() -> { // nested: joins the outer scope
                purgatory.wake(tp);
                return null;
            });
            return followerAttempts.get() + consumerCompleted.get();
        });
        assertThat(seenInside).as("nothing tried while the wakes are held").isZero();
        assertThat(followerAttempts).hasValue(1);
        assertThat(consumerCompleted).hasValue(1);
        assertThat(purgatory.wakes()).isGreaterThan(before);
        // outside a scope each wake is delivered at once
        purgatory.wake(many.get(0));
        purgatory.wake(many.get(1));
        assertThat(followerAttempts).hasValue(3);
    }

    /**
     * The retry at registration closes the race between a fetch's first read and its registration; when
     * no partition was woken since the read began it is skipped (an idle fetch is read once), and a wake
     * in that window, of any partition, still triggers it.
     */
    @Test
    void theRegistrationRetryRunsOnlyWhenSomethingWokeSinceTheFirstRead() {
        AtomicInteger attempts = new AtomicInteger();
        long before = purgatory.wakes();
        purgatory.watch(List.of(tp), 60_000, () -> attempts.incrementAndGet() < 0, () -> { }, before);
        assertThat(attempts).hasValue(0);

        long before2 = purgatory.wakes();
        purgatory.wake(new TopicPartition("other", 3)); // an append somewhere while the first read ran
        AtomicInteger attempts2 = new AtomicInteger();
        purgatory.watch(List.of(tp), 60_000, () -> attempts2.incrementAndGet() < 0, () -> { }, before2);
        assertThat(attempts2).hasValue(1);

        purgatory.wake(tp);
        assertThat(attempts).hasValue(1);
        assertThat(attempts2).hasValue(2);
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
