package dev.varve.metadata.quorum;

import dev.varve.metadata.MetadataImage;
import dev.varve.metadata.MetadataRecord;
import dev.varve.metadata.MetadataRecordSerde;
import org.apache.kafka.common.Uuid;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Metadata transactions (KIP-868) in the loader: a decision's records spread over several entries reach
 * the image together at the end, or never when aborted; no image, snapshot or fetch answer ever shows
 * part of one.
 */
class MetadataLoaderTransactionTest {
    private final MetadataLoader loader = new MetadataLoader();
    private final List<MetadataImage> published = new ArrayList<>();

    MetadataLoaderTransactionTest() {
        loader.addListener((previous, next) -> published.add(next));
    }

    private void commit(long index, MetadataRecord... records) {
        loader.onCommitted(index, 1, MetadataRecordSerde.serialize(List.of(records)));
    }

    @Test
    void recordsSplitOverEntriesApplyTogetherAtTheEnd() {
        Uuid a = Uuid.randomUuid();
        Uuid b = Uuid.randomUuid();
        Uuid reply = Uuid.randomUuid();
        commit(1, new MetadataRecord.TopicRecord("before", Uuid.randomUuid()));
        commit(2, new MetadataRecord.BeginTransaction("big"), new MetadataRecord.TopicRecord("a", a));
        commit(3, new MetadataRecord.TopicRecord("b", b), new MetadataRecord.CommandReply(reply, new byte[] {1}));
        assertThat(loader.inTransaction()).isTrue();
        assertThat(loader.image().offset()).isEqualTo(1);
        assertThat(loader.image().topic("a")).isEmpty();
        assertThat(loader.replyTo(reply)).as("an answer is visible only once its records are").isEmpty();
        assertThat(loader.snapshotAt(3)).as("no snapshot inside a transaction").isNull();
        assertThat(loader.lastIndex()).isEqualTo(3);
        assertThat(loader.entriesAfter(1, 1 << 20).entries()).extracting(MetadataFetch.Entry::index).containsExactly(2L, 3L);
        assertThat(published).hasSize(1);

        commit(4, new MetadataRecord.EndTransaction());
        assertThat(loader.inTransaction()).isFalse();
        assertThat(published).hasSize(2);
        MetadataImage image = loader.image();
        assertThat(image.offset()).isEqualTo(4);
        assertThat(image.topic("a")).isPresent();
        assertThat(image.topic("b")).isPresent();
        assertThat(loader.replyTo(reply)).hasValueSatisfying(r -> assertThat(r.offset()).isEqualTo(4));
        assertThat(loader.snapshotAt(4)).isNotNull();
    }

    @Test
    void anAbortedTransactionLeavesNoTrace() {
        Uuid reply = Uuid.randomUuid();
        commit(1, new MetadataRecord.BeginTransaction("big"), new MetadataRecord.TopicRecord("half", Uuid.randomUuid()),
                new MetadataRecord.CommandReply(reply, new byte[] {1}));
        commit(2, new MetadataRecord.AbortTransaction("controller 2 took over"), new MetadataRecord.TopicRecord("next", Uuid.randomUuid()));
        assertThat(loader.inTransaction()).isFalse();
        assertThat(loader.image().offset()).isEqualTo(2);
        assertThat(loader.image().topic("half")).isEmpty();
        assertThat(loader.image().topic("next")).isPresent();
        assertThat(loader.replyTo(reply)).isEmpty();
    }

    @Test
    void aFollowerReplayingTheSameEntriesGetsTheSameImages() {
        commit(1, new MetadataRecord.BeginTransaction("big"), new MetadataRecord.TopicRecord("a", Uuid.randomUuid()));
        commit(2, new MetadataRecord.TopicRecord("b", Uuid.randomUuid()), new MetadataRecord.EndTransaction());
        MetadataLoader follower = new MetadataLoader();
        for (MetadataFetch.Entry e : loader.entriesAfter(-1, 1 << 20).entries()) {
            follower.onCommitted(e.index(), 0, e.bytes());
        }
        assertThat(follower.image().toRecords()).isEqualTo(loader.image().toRecords());
        assertThat(follower.image().offset()).isEqualTo(2);
    }
}
