package dev.varve.broker.cluster;

import dev.varve.metadata.MetadataImage;
import dev.varve.metadata.quorum.MetadataLoader;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Images reach the broker's listeners off the caller's thread, in offset order, each listener with
 * the same (last delivered, newest) pair; images that arrive during a slow delivery are coalesced into
 * one delta; a failing listener does not stop the others.
 */
class MetadataPublisherTest {
    private final MetadataPublisher publisher = new MetadataPublisher("test-publisher");

    @AfterEach
    void close() {
        publisher.close();
    }

    private static MetadataImage at(long offset) {
        return MetadataImage.fromSnapshot(offset, List.of());
    }

    @Test
    void imagesArrivingDuringASlowDeliveryAreAppliedAsOneDelta() throws Exception {
        CountDownLatch release = new CountDownLatch(1);
        List<long[]> seen = new CopyOnWriteArrayList<>();
        List<String> threads = new CopyOnWriteArrayList<>();
        publisher.addListener((previous, next) -> {
            threads.add(Thread.currentThread().getName());
            seen.add(new long[]{previous.offset(), next.offset()});
            if (next.offset() == 1) {
                try {
                    release.await(10, TimeUnit.SECONDS); // a delta that creates thousands of logs
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        });
        List<long[]> second = new CopyOnWriteArrayList<>();
        publisher.addListener((previous, next) -> second.add(new long[]{previous.offset(), next.offset()}));
        publisher.addListener((previous, next) -> {
            throw new IllegalStateException("a broken listener");
        });
        publisher.onImage(MetadataImage.EMPTY, at(1));
        await().atMost(Duration.ofSeconds(10)).until(() -> seen.size() == 1);
        // the caller is never held up by the slow listener
        for (long o = 2; o <= 50; o++) {
            publisher.onImage(at(o - 1), at(o));
        }
        assertThat(publisher.published().offset()).as("not published before every listener saw it").isLessThan(1);
        release.countDown();
        await().atMost(Duration.ofSeconds(10)).until(() -> publisher.published().offset() == 50);
        assertThat(seen).hasSize(2);
        assertThat(seen.get(0)).containsExactly(-1, 1);
        assertThat(seen.get(1)).as("49 entries, one delta").containsExactly(1, 50);
        assertThat(second).hasSize(2);
        assertThat(second.get(1)).containsExactly(1, 50);
        assertThat(threads).allSatisfy(t -> assertThat(t).isEqualTo("test-publisher"));
    }

    @Test
    void anOlderImageNeverReplacesANewerOne() {
        List<Long> seen = new CopyOnWriteArrayList<>();
        publisher.addListener((previous, next) -> seen.add(next.offset()));
        publisher.onImage(MetadataImage.EMPTY, at(5));
        publisher.onImage(MetadataImage.EMPTY, at(3));
        await().atMost(Duration.ofSeconds(10)).until(() -> publisher.published().offset() == 5);
        assertThat(seen).doesNotContain(3L);
        assertThat(seen).isSorted();
    }

    @Test
    void leadershipChangesArePassedOnAtOnce() {
        List<Boolean> leads = new CopyOnWriteArrayList<>();
        publisher.addListener(new MetadataLoader.ImageListener() {
            @Override
            public void onImage(MetadataImage previous, MetadataImage next) {
            }

            @Override
            public void onLeadershipChange(java.util.OptionalInt leaderId, boolean thisNodeLeads, long term) {
                leads.add(thisNodeLeads);
            }
        });
        publisher.onLeadershipChange(java.util.OptionalInt.of(1), true, 3);
        assertThat(leads).containsExactly(true);
    }
}
