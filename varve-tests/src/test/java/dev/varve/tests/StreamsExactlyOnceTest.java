package dev.varve.tests;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
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
 * A Kafka Streams 4.4 application with {@code processing.guarantee=exactly_once_v2}, unchanged: a
 * word count (a state store with a transactional changelog, offsets committed with the output through
 * {@code sendOffsetsToTransaction}) on a Varve node across a restart of the application, and on three
 * broker processes (RF 3) while one broker is killed with SIGKILL mid-run. A read_committed reader of
 * its output sees, for every word, counts that only rise and end at the word's number of occurrences:
 * nothing counted twice, nothing lost.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class StreamsExactlyOnceTest {
    private static final int WORDS = 20;
    private static final int PARTITIONS = 3;

    @TempDir
    Path dir;

    private KafkaStreams app(String bootstrap, int replication, String id, String in, String out) {
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(in, Consumed.with(Serdes.String(), Serdes.String()))
                .groupByKey()
                .count()
                .toStream()
                .to(out, Produced.with(Serdes.String(), Serdes.Long()));
        Properties p = new Properties();
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, id);
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        p.put(StreamsConfig.STATE_DIR_CONFIG, dir.resolve("state-" + System.nanoTime()).toString());
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, replication);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 10_000);
        return new KafkaStreams(builder.build(), p);
    }

    private static void produceWords(String bootstrap, String topic, int from, int to) {
        try (KafkaProducer<byte[], byte[]> producer = Clients.producer(bootstrap, Map.of(ProducerConfig.ACKS_CONFIG, "all",
                ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 120_000))) {
            for (int i = from; i < to; i++) {
                String word = "w" + (i % WORDS);
                producer.send(new ProducerRecord<>(topic, word.getBytes(StandardCharsets.UTF_8),
                        ("line " + i).getBytes(StandardCharsets.UTF_8)));
            }
            producer.flush();
        }
    }

    /** The counts of every word, in the order a read_committed reader of the output sees them. */
    private static Map<String, List<Long>> readCounts(String bootstrap, String topic) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
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

    /** Waits until every word's last count read_committed is {@code count}. */
    private static void awaitCounts(String bootstrap, String out, long count) {
        await().atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(500)).until(() -> {
            Map<String, List<Long>> counts = readCounts(bootstrap, out);
            return counts.size() == WORDS && counts.values().stream().allMatch(l -> last(l) == count);
        });
    }

    /** Every word's counts, as read_committed sees them, rise by at least one each time and end at {@code count}. */
    private static void assertExact(String bootstrap, String out, long count) {
        Map<String, List<Long>> counts = readCounts(bootstrap, out);
        assertThat(counts).hasSize(WORDS);
        for (Map.Entry<String, List<Long>> e : counts.entrySet()) {
            List<Long> seen = e.getValue();
            for (int i = 1; i < seen.size(); i++) {
                assertThat(seen.get(i)).as("counts of %s rise, never repeat or fall: %s", e.getKey(), seen)
                        .isGreaterThan(seen.get(i - 1));
            }
            assertThat(last(seen)).as("final count of %s", e.getKey()).isEqualTo(count);
        }
    }

    @Test
    void aWordCountWithExactlyOnceV2CountsEveryLineOnceAcrossARestart() throws Exception {
        try (TestBroker broker = TestBroker.start(dir.resolve("data"), Map.of("transaction.state.log.num.partitions", "3"))) {
            String bootstrap = broker.bootstrap();
            String in = TestBroker.unique("eos-in");
            String out = TestBroker.unique("eos-out");
            String id = TestBroker.unique("eos-app");
            Clients.createTopic(bootstrap, in, PARTITIONS, Map.of());
            Clients.createTopic(bootstrap, out, PARTITIONS, Map.of());
            int half = 1_000;
            produceWords(bootstrap, in, 0, half);
            KafkaStreams first = app(bootstrap, 1, id, in, out);
            first.start();
            awaitCounts(bootstrap, out, half / WORDS);
            first.close(Duration.ofSeconds(30));

            produceWords(bootstrap, in, half, 2 * half);
            KafkaStreams second = app(bootstrap, 1, id, in, out);
            second.start();
            try {
                awaitCounts(bootstrap, out, 2L * half / WORDS);
            } finally {
                second.close(Duration.ofSeconds(30));
            }
            assertExact(bootstrap, out, 2L * half / WORDS);
        }
    }

    @Test
    void onThreeBrokersTheCountsStayExactWhenABrokerIsKilledMidRun() throws Exception {
        try (TestCluster cluster = TestCluster.start(dir, 3, Map.of("transaction.state.log.num.partitions", "3",
                "offsets.topic.num.partitions", "3", "group.initial.rebalance.delay.ms", "0"));
             org.apache.kafka.clients.admin.Admin admin = cluster.admin()) {
            String bootstrap = cluster.allBootstrap();
            String in = "eos-in";
            String out = "eos-out";
            for (String topic : List.of(in, out)) {
                TestCluster.createAndAwaitInSync(admin, new org.apache.kafka.clients.admin.NewTopic(topic, PARTITIONS, (short) 3)
                        .configs(Map.of("min.insync.replicas", "2")), Duration.ofSeconds(60));
            }
            int third = 600;
            produceWords(bootstrap, in, 0, third);
            KafkaStreams app = app(bootstrap, 3, "eos-cluster-app", in, out);
            app.start();
            try {
                awaitCounts(bootstrap, out, third / WORDS);
                produceWords(bootstrap, in, third, 2 * third);
                cluster.node(2).kill(); // while the app is processing the second third
                produceWords(bootstrap, in, 2 * third, 3 * third);
                awaitCounts(bootstrap, out, 3L * third / WORDS);
            } finally {
                app.close(Duration.ofSeconds(30));
            }
            assertExact(bootstrap, out, 3L * third / WORDS);
        }
    }
}
