package dev.varve.tests;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DeleteRecordsOptions;
import org.apache.kafka.clients.admin.DeletedRecords;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * DeleteRecords in a cluster is answered once every live replica has moved its log start (as Kafka's
 * DelayedDeleteRecords), so the records stay deleted when a follower takes over: a stopped follower
 * makes it time out; once it is back the deletion completes, and after the leader is killed the new
 * leader's log starts where the deletion said.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class ClusterDeleteRecordsTest {
    private static final String TOPIC = "trimmed";

    @TempDir
    Path dir;

    @Test
    void deletedRecordsStayDeletedAcrossAFailover() throws Exception {
        // the stopped follower stays registered and in the ISR for the whole test: it is live, and waited for
        Map<String, String> extra = Map.of("replica.lag.time.max.ms", "30000", "broker.session.timeout.ms", "30000");
        try (TestCluster cluster = TestCluster.start(dir, 3, extra); Admin admin = cluster.admin()) {
            TestCluster.createAndAwaitInSync(admin, new NewTopic(TOPIC, 1, (short) 3), Duration.ofSeconds(30));
            try (KafkaProducer<String, String> producer = cluster.producer(Map.of())) {
                for (int i = 0; i < 100; i++) {
                    producer.send(new ProducerRecord<>(TOPIC, 0, "k", "v" + i));
                }
                producer.flush();
            }
            TopicPartitionInfo before = TestCluster.describe(admin, TOPIC).get(0);
            int leader = before.leader().id();
            int stopped = before.replicas().stream().mapToInt(n -> n.id()).filter(id -> id != leader).findFirst().orElseThrow();
            TopicPartition tp = new TopicPartition(TOPIC, 0);

            cluster.node(stopped).pause();
            try {
                assertThatThrownBy(() -> admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(50)),
                        new DeleteRecordsOptions().timeoutMs(3_000)).lowWatermarks().get(tp).get(30, TimeUnit.SECONDS))
                        .as("DeleteRecords while a live follower still holds the records")
                        .isInstanceOf(ExecutionException.class).hasCauseInstanceOf(TimeoutException.class);
            } finally {
                cluster.node(stopped).resume();
            }
            DeletedRecords deleted = admin.deleteRecords(Map.of(tp, RecordsToDelete.beforeOffset(50)),
                    new DeleteRecordsOptions().timeoutMs(20_000)).lowWatermarks().get(tp).get(30, TimeUnit.SECONDS);
            assertThat(deleted.lowWatermark()).isEqualTo(50);

            // at once, before anything else can happen: every replica that may lead next already starts at 50
            cluster.node(leader).kill();
            await().atMost(Duration.ofSeconds(60)).until(() -> {
                TopicPartitionInfo p = TestCluster.describe(admin, TOPIC).get(0);
                return p.leader() != null && p.leader().id() != leader;
            });
            long earliest = await().atMost(Duration.ofSeconds(30)).ignoreExceptions().until(() -> admin
                    .listOffsets(Map.of(tp, OffsetSpec.earliest())).partitionResult(tp).get(10, TimeUnit.SECONDS).offset(),
                    o -> o >= 0);
            assertThat(earliest).as("log start on the new leader").isEqualTo(50);
            // a consumer from the beginning starts at the deletion point and reads the rest
            List<String> values = new java.util.ArrayList<>();
            try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(Map.of(
                    ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.allBootstrap(),
                    ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false), new StringDeserializer(), new StringDeserializer())) {
                consumer.assign(List.of(tp));
                consumer.seekToBeginning(List.of(tp));
                assertThat(consumer.position(tp, Duration.ofSeconds(30))).isEqualTo(50);
                long deadline = System.currentTimeMillis() + 30_000;
                while (values.size() < 50 && System.currentTimeMillis() < deadline) {
                    consumer.poll(Duration.ofMillis(500)).forEach(r -> values.add(r.value()));
                }
            }
            assertThat(values).hasSize(50).first().isEqualTo("v50");
        }
    }
}
