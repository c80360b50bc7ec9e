package dev.varve.broker;

import dev.varve.broker.share.SharePartitionKey;
import dev.varve.broker.share.ShareStateRecords;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.requests.ShareFetchResponse;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static dev.varve.broker.ShareApisWireTest.Part;
import static dev.varve.broker.ShareApisWireTest.ack;
import static dev.varve.broker.ShareApisWireTest.acquired;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * Share-partition state survives a restart: acknowledged and rejected records are never delivered again,
 * records that were acquired or released come back with their delivery counts, and the state is Kafka's
 * ShareSnapshot records in {@code __share_group_state}.
 */
class ShareStateRestartTest {
    @TempDir
    File dir;

    private Broker start() throws Exception {
        return Broker.start(BrokerConfig.from(Map.of(
                "listeners", "PLAINTEXT://127.0.0.1:0",
                "log.dirs", dir.getAbsolutePath(),
                "group.coordinator.rebalance.protocols", "classic,consumer,share",
                "share.coordinator.state.topic.num.partitions", "2",
                "offsets.topic.num.partitions", "1")));
    }

    @Test
    void acknowledgementsSurviveARestartAndUnackedRecordsComeBackWithTheirDeliveryCounts() throws Exception {
        short v = ApiKeys.SHARE_FETCH.latestVersion();
        Uuid id;
        try (Broker broker = start()) {
            try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers()))) {
                admin.createTopics(List.of(new NewTopic("durable", 1, (short) 1))).all().get();
            }
            id = broker.context().topics().get("durable").orElseThrow().id();
            try (RawKafkaClient c = new RawKafkaClient(broker.boundAddresses().get(0))) {
                ShareApisWireTest.join(c, "g", "m1", "durable");
                ShareApisWireTest.fetch(c, v, "g", "m1", 0, 0, new Part(id, 0));
                try (KafkaProducer<String, String> p = new KafkaProducer<>(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
                        broker.bootstrapServers(), ProducerConfig.LINGER_MS_CONFIG, "50"), new StringSerializer(), new StringSerializer())) {
                    for (int i = 0; i < 6; i++) {
                        p.send(new ProducerRecord<>("durable", 0, "k", "v" + i));
                    }
                    p.flush();
                }
                List<String> ranges = new ArrayList<>();
                int epoch = 1;
                while (ranges.stream().noneMatch(r -> r.startsWith("5-") || r.contains("-5:"))) {
                    ranges.addAll(acquired(ShareApisWireTest.fetch(c, v, "g", "m1", epoch++, 1_000), id, 0));
                }
                // accept 0-1, reject 2, release 3 (delivered once); 4 and 5 stay acquired when the broker stops
                ShareFetchResponse r = ShareApisWireTest.fetch(c, v, "g", "m1", epoch, 0,
                        new Part(id, 0, List.of(ShareApisWireTest.ack(0, 3, (byte) 1, (byte) 1, (byte) 3, (byte) 2))));
                assertThat(ShareApisWireTest.partition(r, id, 0).acknowledgeErrorCode()).isEqualTo(Errors.NONE.code());
                // the release made 3 available: this fetch took it again (its second delivery)
                assertThat(acquired(r, id, 0)).containsExactly("3-3:2");
            }
            assertThat(broker.shareStates().startOffsets("g")).containsEntry(new SharePartitionKey("g", id, 0), 3L);
        }

        try (Broker broker = start()) {
            // the state is in Kafka's ShareSnapshot records
            assertThat(broker.context().topics().get(ShareStateTopic.NAME)).isPresent();
            int snapshots = 0;
            for (int p = 0; p < 2; p++) {
                var log = broker.context().replicaManager().log(new TopicPartition(ShareStateTopic.NAME, p));
                var slice = log.read(log.logStartOffset(), 1 << 20, log.highWatermark(), true);
                for (RecordBatch b : slice.records().batches()) {
                    for (Record rec : b) {
                        ShareStateRecords.Decoded d = ShareStateRecords.decode(rec.key(), rec.hasValue() ? rec.value() : null);
                        assertThat(d).isNotNull();
                        assertThat(d.snapshot()).isTrue();
                        assertThat(d.key()).isEqualTo(new SharePartitionKey("g", id, 0));
                        snapshots++;
                    }
                }
            }
            assertThat(snapshots).isGreaterThan(1);
            assertThat(broker.shareStates().startOffsets("g")).containsEntry(new SharePartitionKey("g", id, 0), 3L);
            try (RawKafkaClient c = new RawKafkaClient(broker.boundAddresses().get(0))) {
                // the old session is gone with the broker: a new one
                assertThat(ShareApisWireTest.fetch(c, v, "g", "m1", 5, 0).error()).isEqualTo(Errors.SHARE_SESSION_NOT_FOUND);
                ShareApisWireTest.join(c, "g", "m2", "durable");
                ShareFetchResponse r = ShareApisWireTest.fetch(c, v, "g", "m2", 0, 0, new Part(id, 0));
                // 0-2 never again; 3 (delivered twice), 4 and 5 (once each) come back with those counts + 1
                assertThat(acquired(r, id, 0)).containsExactly("3-3:3", "4-5:2");
                r = ShareApisWireTest.fetch(c, v, "g", "m2", 1, 0, new Part(id, 0, List.of(ack(3, 5, (byte) 1))));
                assertThat(ShareApisWireTest.partition(r, id, 0).acknowledgeErrorCode()).isEqualTo(Errors.NONE.code());
            }
            assertThat(broker.shareStates().startOffsets("g")).containsEntry(new SharePartitionKey("g", id, 0), 6L);
        }
        try (Broker broker = start()) {
            assertThat(broker.shareStates().startOffsets("g")).containsEntry(new SharePartitionKey("g", id, 0), 6L);
            try (RawKafkaClient c = new RawKafkaClient(broker.boundAddresses().get(0))) {
                ShareApisWireTest.join(c, "g", "m3", "durable");
                assertThat(acquired(ShareApisWireTest.fetch(c, v, "g", "m3", 0, 0, new Part(id, 0)), id, 0)).isEmpty();
            }
            // the admin side: a new start offset (AlterShareGroupOffsets), then the group's state deleted
            assertThat(broker.shareStates().alterStartOffset("g", id, 0, 1)).isEqualTo(Errors.NONE);
            assertThat(broker.shareStates().startOffsets("g")).containsEntry(new SharePartitionKey("g", id, 0), 1L);
            broker.shareStates().deleteState("g");
            assertThat(broker.shareStates().startOffsets("g")).isEmpty();
        }
        try (Broker broker = start()) {
            assertThat(broker.shareStates().startOffsets("g")).isEmpty();
        }
    }
}
