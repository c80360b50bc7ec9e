package dev.varve.tests;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Produced;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A Kafka Streams 4.4 application with {@code processing.guarantee=exactly_once_v2}, unchanged,
 * against a Varve node: a word count (a state store with a transactional changelog, offsets committed
 * with the output through {@code sendOffsetsToTransaction}) processes its input in two runs of the
 * application, and a read_committed reader of its output sees, for every word, counts that rise by one
 * with no repeat and end at the word's number of occurrences.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class StreamsExactlyOnceTest {
    private static final int WORDS = 20;
    private static final int PARTITIONS = 3;

    @TempDir
    Path dir;
    private TestBroker broker;

    @BeforeEach
    void start() throws Exception {
        broker = TestBroker.start(dir.resolve("data"), Map.of("transaction.state.log.num.partitions", "3"));
    }

    @AfterEach
    void stop() throws Exception {
        broker.close();
    }

    private KafkaStreams app(String id, String in, String out) {
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(in, Consumed.with(Serdes.String(), Serdes.String()))
                .groupByKey()
                .count()
                .toStream()
                .to(out, Produced.with(Serdes.String(), Serdes.Long()));
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, id);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap());
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        p.put(StreamsConfig.STATE_DIR_CONFIG, dir.resolve("state-" + System.nanoTime()).toString());
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, 1);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 10_000);
        return new KafkaStreams(builder.build(), p);
    }

    private void produceWords(String topic, int from, int to) {
        try (KafkaProducer<byte[], byte[]> producer = Clients.producer(broker.bootstrap(), Map.of())) {
            for (int i = from; i < to; i++) {
                String word = "w" + (i % WORDS);
                producer.send(new ProducerRecord<>(topic, word.getBytes(StandardCharsets.UTF_8),
                        ("line " + i).getBytes(StandardCharsets.UTF_8)));
            }
            producer.flush();
        }
    }

    /** The counts of every word, in the order a read_committed reader of the output sees them. */
    private Map<String, List<Long>> readCounts(String topic) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap());
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        Map<String, List<Long>> counts = new HashMap<>();
        try (KafkaConsumer<String, Long> c = new KafkaConsumer<>(p, new StringDeserializer(), new LongDeserializer())) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int i = 0; i < PARTITIONS; i++) {
                tps.add(new TopicPartition(topic, i));
            }
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps);
            long deadline = System.currentTimeMillis() + 30_000;
            while (tps.stream().anyMatch(tp -> c.position(tp) < end.get(tp)) && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, Long> r : c.poll(Duration.ofMillis(100))) {
                    counts.computeIfAbsent(r.key(), k -> new ArrayList<>()).add(r.value());
                }
            }
        }
        return counts;
    }

    private static long last(List<Long> counts) {
        return counts == null || counts.isEmpty() ? 0 : counts.get(counts.size() - 1);
    }

    @Test
    void aWordCountWithExactlyOnceV2CountsEveryLineOnceAcrossARestart() throws Exception {
        String in = TestBroker.unique("eos-in");
        String out = TestBroker.unique("eos-out");
        String id = TestBroker.unique("eos-app");
        Clients.createTopic(broker.bootstrap(), in, PARTITIONS, Map.of());
        Clients.createTopic(broker.bootstrap(), out, PARTITIONS, Map.of());
        int half = 1_000;
        produceWords(in, 0, half);

        KafkaStreams first = app(id, in, out);
        first.start();
        await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(500)).until(() -> {
            Map<String, List<Long>> counts = readCounts(out);
            return counts.size() == WORDS && counts.values().stream().allMatch(l -> last(l) == half / WORDS);
        });
        first.close(Duration.ofSeconds(30));

        produceWords(in, half, 2 * half);
        KafkaStreams second = app(id, in, out);
        second.start();
        try {
            await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(500)).until(() -> {
                Map<String, List<Long>> counts = readCounts(out);
                return counts.size() == WORDS && counts.values().stream().allMatch(l -> last(l) == 2L * half / WORDS);
            });
        } finally {
            second.close(Duration.ofSeconds(30));
        }
        Map<String, List<Long>> counts = readCounts(out);
        for (Map.Entry<String, List<Long>> e : counts.entrySet()) {
            List<Long> seen = e.getValue();
            for (int i = 1; i < seen.size(); i++) {
                assertThat(seen.get(i)).as("counts of %s rise, never repeat or fall: %s", e.getKey(), seen)
                        .isGreaterThan(seen.get(i - 1));
            }
            assertThat(last(seen)).as("final count of %s", e.getKey()).isEqualTo(2L * half / WORDS);
        }
    }
}
