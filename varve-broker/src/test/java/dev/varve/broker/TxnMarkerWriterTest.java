package dev.varve.broker;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.NotCoordinatorException;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The marker writer sends a marker only while its coordinator still coordinates the transactional id
 * in the marker's coordinator epoch: a deposed coordinator's marker, sent or retried late, could land
 * in a partition after the producer's next transaction began there and end it with this one's outcome.
 */
class TxnMarkerWriterTest {
    @Test
    void noMarkerIsSentForACoordinatorEpochNoLongerCoordinatedHere() {
        // no replica manager: a marker that got as far as a partition would fail differently
        TxnMarkerWriter writer = new TxnMarkerWriter(null, null);
        List<String> asked = new ArrayList<>();
        writer.setCoordinating((id, epoch) -> {
            asked.add(id + "@" + epoch);
            return false;
        });
        CompletableFuture<Void> done = writer.write("app", 7, (short) 3, 4, false,
                Set.of(new TopicPartition("orders", 0), new TopicPartition("orders", 1)), (short) 2);
        assertThat(done).isCompletedExceptionally();
        assertThat(done.handle((v, e) -> e.getCause()).join()).isInstanceOf(NotCoordinatorException.class)
                .hasMessageContaining("coordinator epoch 4");
        assertThat(asked).containsExactly("app@4", "app@4");
    }
}
