package dev.varve.broker;

import org.apache.kafka.common.errors.CoordinatorLoadInProgressException;
import org.apache.kafka.common.errors.NotControllerException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Producer ids from controller blocks without ever waiting for the controller, and from a file on one node. */
class ProducerIdManagerTest {
    private final ManualTime time = new ManualTime(0);
    /** The requests sent to the controller, each answered when the test says so. */
    private final List<CompletableFuture<long[]>> requests = new ArrayList<>();
    private final ProducerIdManager ids = new ProducerIdManager(() -> {
        CompletableFuture<long[]> f = new CompletableFuture<>();
        requests.add(f);
        return f;
    }, time);

    @Test
    void theFirstCallerIsToldToRetryWhileOneRequestGoesToTheController() {
        assertThatThrownBy(ids::nextProducerId).isInstanceOf(CoordinatorLoadInProgressException.class);
        assertThatThrownBy(ids::nextProducerId).isInstanceOf(CoordinatorLoadInProgressException.class);
        assertThat(requests).hasSize(1); // a controller that does not answer is asked once, and nobody waits
        requests.get(0).complete(new long[]{5000, 10});
        assertThat(ids.nextProducerId()).isEqualTo(5000);
        assertThat(ids.nextProducerId()).isEqualTo(5001);
    }

    @Test
    void theNextBlockIsFetchedBeforeTheCurrentOneRunsOutSoIdsNeverStop() {
        assertThatThrownBy(ids::nextProducerId).isInstanceOf(CoordinatorLoadInProgressException.class);
        requests.get(0).complete(new long[]{0, 10});
        Set<Long> seen = new HashSet<>();
        for (int i = 0; i < 9; i++) {
            seen.add(ids.nextProducerId());
        }
        assertThat(requests).hasSize(2); // 90% used: the next block is on its way
        requests.get(1).complete(new long[]{100, 10});
        for (int i = 0; i < 11; i++) {
            seen.add(ids.nextProducerId());
        }
        assertThat(seen).hasSize(20).contains(9L, 100L, 109L).doesNotContain(10L);
        assertThat(requests).hasSize(3);
    }

    @Test
    void aFailedRequestIsRetriedAfterABackoff() {
        assertThatThrownBy(ids::nextProducerId).isInstanceOf(CoordinatorLoadInProgressException.class);
        requests.get(0).completeExceptionally(new NotControllerException("moved"));
        assertThatThrownBy(ids::nextProducerId).isInstanceOf(CoordinatorLoadInProgressException.class);
        assertThat(requests).hasSize(1);
        time.sleep(ProducerIdManager.RETRY_BACKOFF_MS);
        assertThatThrownBy(ids::nextProducerId).isInstanceOf(CoordinatorLoadInProgressException.class);
        assertThat(requests).hasSize(2);
        requests.get(1).complete(new long[]{7, 3});
        assertThat(ids.nextProducerId()).isEqualTo(7);
    }

    @Test
    void aSingleNodeNeverReusesAnIdAcrossARestart(@TempDir File dir) throws Exception {
        ProducerIdManager first = new ProducerIdManager(dir);
        long a = first.nextProducerId();
        long b = first.nextProducerId();
        ProducerIdManager restarted = new ProducerIdManager(dir);
        assertThat(restarted.nextProducerId()).isGreaterThan(Math.max(a, b));
    }
}
