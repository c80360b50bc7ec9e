package dev.varve.tests;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Many transactional producers at once against one node: {@value #PRODUCERS} Kafka producers, each
 * with its own transactional id, run {@value #TRANSACTIONS} transactions each over a topic of
 * {@value #PARTITIONS} partitions, aborting every fourth. A read_committed reader then sees every
 * record of every committed transaction exactly once, in each producer's order within a partition,
 * and none of an aborted one.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class ConcurrentTransactionsTest {
    private static final int PRODUCERS = 12;
    private static final int TRANSACTIONS = 25;
    private static final int RECORDS = 12;
    private static final int PARTITIONS = 48;

    @TempDir
    Path dir;

    @Test
    void everyCommittedRecordIsReadOnceAndNoAbortedOne() throws Exception {
        try (TestBroker broker = TestBroker.start(dir.resolve("data"), Map.of("transaction.state.log.num.partitions", "5"))) {
            String topic = TestBroker.unique("many-txns");
            Clients.createTopic(broker.bootstrap(), topic, PARTITIONS, Map.of());
            Set<String> expected = Collections.synchronizedSet(new HashSet<>());
            ConcurrentLinkedQueue<String> aborted = new ConcurrentLinkedQueue<>();
            ExecutorService pool = Executors.newFixedThreadPool(PRODUCERS);
            long start = System.nanoTime();
            try {
                List<Future<?>> runs = new ArrayList<>();
                for (int p = 0; p < PRODUCERS; p++) {
                    int producerIndex = p;
                    runs.add(pool.submit(() -> {
                        run(broker.bootstrap(), topic, producerIndex, expected, aborted);
                        return null;
                    }));
                }
                for (Future<?> f : runs) {
                    f.get(150, TimeUnit.SECONDS);
                }
            } finally {
                pool.shutdownNow();
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            System.out.printf("%d transactions by %d producers in %.1f s (%.0f per s)%n", PRODUCERS * TRANSACTIONS, PRODUCERS,
                    seconds, PRODUCERS * TRANSACTIONS / seconds);

            Map<Integer, List<String>> read = readCommitted(broker.bootstrap(), topic);
            List<String> all = new ArrayList<>();
            read.values().forEach(all::addAll);
            assertThat(all).as("no record twice").doesNotHaveDuplicates();
            assertThat(new HashSet<>(all)).as("exactly the committed records").isEqualTo(expected);
            assertThat(all).as("nothing aborted").doesNotContainAnyElementsOf(aborted);
            // within a partition, each producer's records come in the order it sent them
            for (List<String> values : read.values()) {
                Map<String, Integer> lastSeen = new HashMap<>();
                for (String v : values) {
                    String[] parts = v.split("-"); // p<producer>-t<txn>-r<record>
                    int order = Integer.parseInt(parts[1].substring(1)) * RECORDS + Integer.parseInt(parts[2].substring(1));
                    Integer before = lastSeen.put(parts[0], order);
                    assertThat(before == null || before < order).as("order of %s in %s", v, values).isTrue();
                }
            }
        }
    }

    private static void run(String bootstrap, String topic, int index, Set<String> expected, ConcurrentLinkedQueue<String> aborted) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "txn-producer-" + index);
        p.put(ProducerConfig.LINGER_MS_CONFIG, 0);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p, new StringSerializer(), new StringSerializer())) {
            producer.initTransactions();
            for (int t = 0; t < TRANSACTIONS; t++) {
                producer.beginTransaction();
                List<String> values = new ArrayList<>();
                for (int r = 0; r < RECORDS; r++) {
                    String value = "p" + index + "-t" + t + "-r" + r;
                    values.add(value);
                    // each transaction spans several partitions; the same producer's partitions differ per transaction
                    int partition = (index * 7 + t * 3 + r) % PARTITIONS;
                    producer.send(new ProducerRecord<>(topic, partition, null, value));
                }
                if ((index + t) % 4 == 3) {
                    producer.flush(); // the records are in the log: the abort must hide them
                    producer.abortTransaction();
                    aborted.addAll(values);
                } else {
                    producer.commitTransaction();
                    expected.addAll(values);
                }
            }
        }
    }

    private static Map<Integer, List<String>> readCommitted(String bootstrap, String topic) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 5_000);
        Map<Integer, List<String>> out = new HashMap<>();
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p, new StringDeserializer(), new StringDeserializer())) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int i = 0; i < PARTITIONS; i++) {
                tps.add(new TopicPartition(topic, i));
                out.put(i, new ArrayList<>());
            }
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps);
            long deadline = System.currentTimeMillis() + 60_000;
            while (tps.stream().anyMatch(tp -> c.position(tp) < end.get(tp)) && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    out.get(r.partition()).add(r.value());
                }
            }
            for (TopicPartition tp : tps) {
                assertThat(c.position(tp)).as("position of %s", tp).isEqualTo(end.get(tp));
            }
        }
        return out;
    }
}
