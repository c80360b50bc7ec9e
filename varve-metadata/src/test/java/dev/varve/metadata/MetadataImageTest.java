package dev.varve.metadata;

import dev.varve.metadata.MetadataRecord.ConfigRecord;
import dev.varve.metadata.MetadataRecord.FenceBroker;
import dev.varve.metadata.MetadataRecord.PartitionChange;
import dev.varve.metadata.MetadataRecord.PartitionRecord;
import dev.varve.metadata.MetadataRecord.ProducerIdBlock;
import dev.varve.metadata.MetadataRecord.RemoveTopic;
import dev.varve.metadata.MetadataRecord.TopicRecord;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class MetadataImageTest {
    private static final Uuid BIG = new Uuid(1, 1);
    private static final Uuid SMALL = new Uuid(2, 2);

    private static PartitionRecord partition(Uuid topic, int p) {
        return new PartitionRecord(topic, p, List.of(0, 1), List.of(0, 1), List.of(), List.of(), 0, 0, 0);
    }

    private static MetadataImage twoTopics(int bigPartitions) {
        List<MetadataRecord> records = new ArrayList<>();
        records.add(new TopicRecord("big", BIG));
        for (int p = 0; p < bigPartitions; p++) {
            records.add(partition(BIG, p));
        }
        records.add(new TopicRecord("small", SMALL));
        records.add(partition(SMALL, 0));
        return MetadataImage.EMPTY.apply(0, records);
    }

    @Test
    void aChangeSharesEverythingItDoesNotTouch() {
        MetadataImage before = twoTopics(5_000);
        MetadataImage after = before.apply(1, List.of(new PartitionChange(BIG, 1234, 1, null, List.of(1), null, null)));
        TopicImage b0 = before.topic("big").orElseThrow();
        TopicImage b1 = after.topic("big").orElseThrow();
        assertThat(b1.partition(1234).leader()).isEqualTo(1);
        assertThat(b1.partition(1234).leaderEpoch()).isEqualTo(1);
        assertThat(b1.partition(1234).partitionEpoch()).isEqualTo(1);
        assertThat(b0.partition(1234).leader()).as("the old image is untouched").isZero();
        for (int p = 0; p < 5_000; p++) {
            if (p != 1234) {
                assertThat(b1.partition(p)).isSameAs(b0.partition(p));
            }
        }
        assertThat(after.topic("small").orElseThrow()).isSameAs(before.topic("small").orElseThrow());
        assertThat(after.brokers()).isSameAs(before.brokers());
        assertThat(after.allConfigs()).isSameAs(before.allConfigs());
        assertThat(after.offset()).isEqualTo(1);
    }

    @Test
    void snapshotOfALargeImageReplaysEqual() {
        MetadataImage image = twoTopics(20_000).apply(7, List.of(
                new ConfigRecord(ConfigResource.Type.TOPIC, "big", "retention.ms", "1"),
                new ProducerIdBlock(0, 0, 3000),
                new MetadataRecord.ControllerRegistration(4, new Uuid(4, 4), new MetadataRecord.Endpoint("CONTROLLER", "h4", 9093)),
                new MetadataRecord.FeatureLevel("transaction.version", (short) 1, 1),
                new MetadataRecord.FeatureLevel("group.version", (short) 0, 2)));
        assertThat(image.controllers()).containsOnlyKeys(4);
        assertThat(image.features().levels()).containsExactlyInAnyOrderEntriesOf(
                java.util.Map.of("transaction.version", (short) 1, "group.version", (short) 0));
        assertThat(image.features().epoch()).isEqualTo(2);
        List<MetadataRecord> snapshot = MetadataRecordSerde.deserialize(MetadataRecordSerde.serialize(image.toRecords()));
        assertThat(MetadataImage.fromSnapshot(7, snapshot)).isEqualTo(image);
    }

    @Test
    void removeTopicDropsItsConfigsAndAllowsTheNameAgain() {
        MetadataImage image = twoTopics(3).apply(1, List.of(new ConfigRecord(ConfigResource.Type.TOPIC, "small", "k", "v")));
        Uuid again = new Uuid(3, 3);
        MetadataImage after = image.apply(2, List.of(new RemoveTopic(SMALL), new TopicRecord("small", again), partition(again, 0)));
        assertThat(after.topic("small").orElseThrow().id()).isEqualTo(again);
        assertThat(after.topic(SMALL)).isEmpty();
        assertThat(after.configs(new ConfigResource(ConfigResource.Type.TOPIC, "small"))).isEmpty();
        assertThat(after.topicsById()).hasSize(2);
    }

    @Test
    void contradictionsAreRefused() {
        MetadataImage image = twoTopics(2).apply(1, List.of(new ProducerIdBlock(0, 0, 1000)));
        assertThatThrownBy(() -> image.apply(2, List.of(new PartitionChange(new Uuid(9, 9), 0, 1, null, null, null, null))))
                .isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> image.apply(2, List.of(new PartitionChange(BIG, 5, 1, null, null, null, null))))
                .isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> image.apply(2, List.of(partition(BIG, 4)))).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> image.apply(2, List.of(new TopicRecord("big", new Uuid(5, 5))))).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> image.apply(2, List.of(new FenceBroker(0, 0)))).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> image.apply(2, List.of(new ProducerIdBlock(0, 0, 999)))).isInstanceOf(IllegalStateException.class);
        assertThatThrownBy(() -> image.apply(0, List.of())).isInstanceOf(IllegalArgumentException.class);
    }

    /** However a history's records are grouped into entries, the image is the same. */
    @Property(tries = 60)
    void batchingDoesNotChangeTheImage(@ForAll long seed) {
        Random r = new Random(seed);
        TestCluster c = new TestCluster(ControllerConfig.defaults().withBrokerSessionTimeoutMs(1_000), seed).withBrokers(3, 2);
        c.createTopic("a", 1 + r.nextInt(40), 1 + r.nextInt(3));
        for (int step = 0; step < 40; step++) {
            int b = r.nextInt(3);
            switch (r.nextInt(5)) {
                case 0 -> c.advance(r.nextInt(1_500));
                case 1 -> c.tick();
                case 2 -> c.register(b, "r" + (b % 2), r.nextBoolean());
                case 3 -> c.heartbeat(b);
                default -> c.commit(c.controller.electLeaders(c.image, ElectionType.PREFERRED, null));
            }
        }
        List<MetadataRecord> all = new ArrayList<>();
        c.log.forEach(e -> all.addAll(MetadataRecordSerde.deserialize(e)));
        MetadataImage grouped = MetadataImage.EMPTY;
        int i = 0;
        while (i < all.size()) {
            int n = 1 + r.nextInt(10);
            grouped = grouped.apply(c.image.offset(), all.subList(i, Math.min(all.size(), i + n)));
            i += n;
        }
        assertThat(grouped).isEqualTo(c.image);
        c.checkReplay();
        assertThat(MetadataImage.EMPTY.apply(c.image.offset(), all)).isEqualTo(c.image);
        assertThat(c.image.configs(MetadataImage.CLUSTER_DEFAULTS)).isEqualTo(Map.of());
    }
}
