package dev.varve.broker.cluster;

import dev.varve.metadata.MetadataImage;
import dev.varve.metadata.MetadataRecord;
import dev.varve.metadata.MetadataRecordSerde;
import dev.varve.metadata.quorum.MetadataLoader;
import org.apache.kafka.common.Uuid;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The replica manager must never act on the historical images a node replays at start-up (a
 * whole-cluster crash made replaying brokers lead, and acknowledge writes in, long-gone leader
 * epochs): {@link CatchUpGate} passes on nothing before the catch-up, then the image of that moment
 * once, then every later image.
 */
class CatchUpGateTest {
    private final MetadataLoader loader = new MetadataLoader();
    private final List<long[]> seen = new ArrayList<>(); // {previous offset, next offset}
    private final CompletableFuture<Void> caughtUp = new CompletableFuture<>();

    @Test
    void replayedImagesAreHeldBackAndTheCaughtUpImageIsDeliveredOnce() {
        loader.addListener(new CatchUpGate(loader::image, (previous, next) -> seen.add(new long[]{previous.offset(), next.offset()}), caughtUp));
        for (int id = 1; id <= 3; id++) {
            commit(id, id);
        }
        assertThat(seen).as("nothing while replaying").isEmpty();

        caughtUp.complete(null);
        assertThat(seen).containsExactly(new long[]{MetadataImage.EMPTY.offset(), 3});

        commit(4, 1);
        commit(5, 2);
        assertThat(seen).containsExactly(new long[]{-1, 3}, new long[]{3, 4}, new long[]{4, 5});
    }

    @Test
    void aCatchUpBeforeAnyImageDeliversTheFirstImageWhenItComes() {
        caughtUp.complete(null);
        loader.addListener(new CatchUpGate(loader::image, (previous, next) -> seen.add(new long[]{previous.offset(), next.offset()}), caughtUp));
        commit(1, 1);
        assertThat(seen).containsExactly(new long[]{-1, 1});
    }

    private void commit(long index, int brokerId) {
        MetadataRecord r = new MetadataRecord.RegisterBroker(brokerId, Uuid.randomUuid(), index,
                List.of(new MetadataRecord.Endpoint("PLAINTEXT", "10.0.0." + brokerId, 9092)), null, true);
        loader.onCommitted(index, 1, MetadataRecordSerde.serialize(List.of(r)));
    }
}
