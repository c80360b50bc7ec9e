package dev.varve.broker;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.InvalidRecordException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

/**
 * Compaction through the broker, with stock clients: a compacted topic keeps the latest value of
 * each key (tombstoned keys disappear), keyless records are refused, a transactional one keeps the
 * latest committed value and loses its aborted records, and {@code __consumer_offsets} itself is
 * compacted while committed offsets stay right across a restart.
 */
class CompactedTopicTest {
    @TempDir
    File dir;
    private Broker broker;

    private Broker startBroker() throws Exception {
        return Broker.start(BrokerConfig.from(Map.of(
                "listeners", "PLAINTEXT://127.0.0.1:0",
                "log.dirs", dir.getAbsolutePath(),
                "offsets.topic.num.partitions", "1",
                "offsets.topic.segment.bytes", "4096",
                "group.initial.rebalance.delay.ms", "0",
                "log.cleaner.backoff.ms", "50",
                "log.cleaner.min.cleanable.ratio", "0.01",
                "log.cleaner.delete.retention.ms", "0",
                "transaction.state.log.num.partitions", "1")));
    }

    @BeforeEach
    void start() throws Exception {
        broker = startBroker();
    }

    @AfterEach
    void stop() throws Exception {
        broker.close();
    }

    private KafkaProducer<String, String> producer() {
        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.LINGER_MS_CONFIG, "0");
        pp.put(ProducerConfig.BATCH_SIZE_CONFIG, "512");
        return new KafkaProducer<>(pp);
    }

    private Map<String, String> readAll(String topic, long endOffset) {
        Properties cp = new Properties();
        cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        Map<String, String> latest = new HashMap<>();
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cp)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            long deadline = System.currentTimeMillis() + 30_000;
            while (c.position(tp) < endOffset && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(100))) {
                    if (r.value() == null) {
                        latest.remove(r.key());
                    } else {
                        latest.put(r.key(), r.value());
                    }
                }
            }
            assertThat(c.position(tp)).isGreaterThanOrEqualTo(endOffset);
        }
        return latest;
    }

    private long logBytes(String topic) {
        return broker.context().replicaManager().log(new TopicPartition(topic, 0)).size();
    }

    @Test
    void aCompactedTopicKeepsTheLatestValueOfEveryKey() throws Exception {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers()))) {
            admin.createTopics(List.of(new NewTopic("accounts", 1, (short) 1).configs(Map.of(
                    "cleanup.policy", "compact", "segment.bytes", "2048")))).all().get();
        }
        Map<String, String> expected = new HashMap<>();
        try (KafkaProducer<String, String> p = producer()) {
            for (int i = 0; i < 3000; i++) {
                String key = "acct-" + (i % 50);
                String value = (i % 7 == 0) ? null : "balance-" + i;
                p.send(new ProducerRecord<>("accounts", 0, key, value)).get();
                if (value == null) {
                    expected.remove(key);
                } else {
                    expected.put(key, value);
                }
            }
            assertThatThrownBy(() -> p.send(new ProducerRecord<>("accounts", 0, null, "no key")).get())
                    .isInstanceOf(ExecutionException.class).hasCauseInstanceOf(InvalidRecordException.class);
        }
        // 3000 one-record batches take at least 60 bytes each; compacted, far less is left (the cleaner
        // may already be at work while the records arrive, so no "size before" is measured)
        await().atMost(30, TimeUnit.SECONDS).until(() -> logBytes("accounts") < 3000 * 60 / 5);
        assertThat(readAll("accounts", 3000)).isEqualTo(expected);
    }

    /** Every value in the log of partition 0 of {@code topic}, read from the broker's storage. */
    private List<String> valuesInLog(String topic) {
        dev.varve.storage.PartitionLog log = broker.context().replicaManager().log(new TopicPartition(topic, 0));
        List<String> values = new java.util.ArrayList<>();
        long next = log.logStartOffset();
        while (next < log.logEndOffset()) {
            long last = next;
            for (org.apache.kafka.common.record.internal.RecordBatch b
                    : log.read(next, 1 << 20, log.logEndOffset(), true).records().batches()) {
                if (!b.isControlBatch()) {
                    for (org.apache.kafka.common.record.internal.Record r : b) {
                        values.add(r.hasValue() ? java.nio.charset.StandardCharsets.UTF_8.decode(r.value()).toString() : null);
                    }
                }
                last = b.lastOffset();
            }
            next = last + 1;
        }
        return values;
    }

    private Map<String, String> readLatest(String topic, String isolation, List<String> seen) {
        Properties cp = new Properties();
        cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
        cp.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        Map<String, String> latest = new HashMap<>();
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cp)) {
            TopicPartition tp = new TopicPartition(topic, 0);
            c.assign(List.of(tp));
            c.seekToBeginning(List.of(tp));
            long end = c.endOffsets(List.of(tp)).get(tp);
            long deadline = System.currentTimeMillis() + 30_000;
            while (c.position(tp) < end && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(100))) {
                    seen.add(r.value());
                    latest.put(r.key(), r.value());
                }
            }
            assertThat(c.position(tp)).isEqualTo(end);
        }
        return latest;
    }

    @Test
    void aCompactedTransactionalTopicKeepsTheLatestCommittedValuesAndLosesItsAbortedRecords() throws Exception {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers()))) {
            admin.createTopics(List.of(new NewTopic("ledger", 1, (short) 1).configs(Map.of(
                    "cleanup.policy", "compact", "segment.bytes", "1024")))).all().get();
        }
        Map<String, String> expected = new HashMap<>();
        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
        pp.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "ledger-writer");
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        try (KafkaProducer<String, String> p = new KafkaProducer<>(pp)) {
            p.initTransactions();
            for (int t = 0; t < 60; t++) {
                boolean abort = t < 40 && t % 3 == 0; // then committed ones only, so none is left in the active segment
                p.beginTransaction();
                for (int i = 0; i < 4; i++) {
                    String key = t < 40 ? "k" + ((t * 4 + i) % 10) : "filler-" + t + "-" + i;
                    String value = (abort ? "aborted-" : t < 40 ? "committed-" : "filler-") + t + "-" + i;
                    p.send(new ProducerRecord<>("ledger", 0, key, value));
                    if (!abort) {
                        expected.put(key, value);
                    }
                }
                if (abort) {
                    p.abortTransaction();
                } else {
                    p.commitTransaction();
                }
            }
        }
        // the cleaner removes the aborted records (and the superseded committed ones)
        await().atMost(30, TimeUnit.SECONDS).until(() -> {
            List<String> values = valuesInLog("ledger");
            return values.stream().noneMatch(v -> v.startsWith("aborted-"))
                    && values.stream().filter(v -> v.startsWith("committed-")).count() == 10;
        });
        List<String> committedSeen = new java.util.ArrayList<>();
        assertThat(readLatest("ledger", "read_committed", committedSeen)).isEqualTo(expected);
        List<String> uncommittedSeen = new java.util.ArrayList<>();
        assertThat(readLatest("ledger", "read_uncommitted", uncommittedSeen)).as("nothing aborted is left to read")
                .isEqualTo(expected);
        assertThat(uncommittedSeen).noneMatch(v -> v.startsWith("aborted-"));
    }

    @Test
    void theOffsetsTopicIsCompactedAndCommittedOffsetsSurviveARestart() throws Exception {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers()))) {
            admin.createTopics(List.of(new NewTopic("events", 2, (short) 1))).all().get();
        }
        Properties cp = new Properties();
        cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
        cp.put(ConsumerConfig.GROUP_ID_CONFIG, "committer");
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        TopicPartition e0 = new TopicPartition("events", 0);
        TopicPartition e1 = new TopicPartition("events", 1);
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cp)) {
            c.assign(List.of(e0, e1));
            for (int i = 1; i <= 400; i++) {
                c.commitSync(Map.of(e0, new OffsetAndMetadata(i), e1, new OffsetAndMetadata(1000 + i)));
            }
        }
        // 400 commits of two offsets, each a batch of at least 60 bytes per record
        await().atMost(30, TimeUnit.SECONDS).until(() -> logBytes("__consumer_offsets") < 800 * 60 / 5);
        broker.close();
        broker = startBroker();
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers()))) {
            Map<TopicPartition, OffsetAndMetadata> committed =
                    admin.listConsumerGroupOffsets("committer").partitionsToOffsetAndMetadata().get();
            assertThat(committed.get(e0).offset()).isEqualTo(400);
            assertThat(committed.get(e1).offset()).isEqualTo(1400);
        }
    }
}
