package dev.varve.broker;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Transactions with Kafka's own clients against one Varve node: a transactional KafkaProducer commits
 * and aborts across partitions, a read_committed consumer sees exactly the committed records (a
 * read_uncommitted one sees all), a second instance with the same transactional id fences the first
 * and aborts its open transaction, the coordinator's state survives a restart, and a transaction left
 * open past its timeout is aborted by the coordinator so consumers move on.
 */
class TransactionalProducerTest {
    private static final String TOPIC = "payments";
    private static final int PARTITIONS = 3;

    @TempDir
    File dir;
    private Broker broker;
    private final List<AutoCloseable> clients = new ArrayList<>();

    @AfterEach
    void stop() throws Exception {
        for (AutoCloseable c : clients) {
            c.close();
        }
        if (broker != null) {
            broker.close();
        }
    }

    private void start(Map<String, String> extra) throws Exception {
        Map<String, String> config = new HashMap<>(Map.of("listeners", "PLAINTEXT://127.0.0.1:0",
                "log.dirs", dir.getAbsolutePath(), "transaction.state.log.num.partitions", "5"));
        config.putAll(extra);
        broker = Broker.start(BrokerConfig.from(config));
    }

    private void createTopic() throws Exception {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers()))) {
            admin.createTopics(List.of(new NewTopic(TOPIC, PARTITIONS, (short) 1))).all().get();
        }
    }

    private KafkaProducer<String, String> producer(String transactionalId, int timeoutMs) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        p.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, timeoutMs);
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 20_000);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        KafkaProducer<String, String> producer = new KafkaProducer<>(p);
        clients.add(producer);
        return producer;
    }

    /** Every value in the topic a consumer with {@code isolation} reads, by partition, up to the end it sees. */
    private Map<Integer, List<String>> readAll(String isolation) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 50);
        Map<Integer, List<String>> out = new HashMap<>();
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(p)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int i = 0; i < PARTITIONS; i++) {
                tps.add(new TopicPartition(TOPIC, i));
                out.put(i, new ArrayList<>());
            }
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps);
            long deadline = System.currentTimeMillis() + 20_000;
            while (tps.stream().anyMatch(tp -> c.position(tp) < end.get(tp)) && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(100))) {
                    out.get(r.partition()).add(r.value());
                }
            }
            for (TopicPartition tp : tps) {
                assertThat(c.position(tp)).as("position of %s", tp).isEqualTo(end.get(tp));
            }
        }
        return out;
    }

    private static void send(KafkaProducer<String, String> producer, String prefix, int count) {
        for (int i = 0; i < count; i++) {
            producer.send(new ProducerRecord<>(TOPIC, i % PARTITIONS, "k" + i, prefix + i));
        }
    }

    private static List<String> values(String prefix, int count, int partition) {
        List<String> out = new ArrayList<>();
        for (int i = partition; i < count; i += PARTITIONS) {
            out.add(prefix + i);
        }
        return out;
    }

    @Test
    void committedRecordsAreReadCommittedAndAbortedOnesAreNot() throws Exception {
        start(Map.of());
        createTopic();
        KafkaProducer<String, String> producer = producer("pay-app", 60_000);
        producer.initTransactions();
        producer.beginTransaction();
        send(producer, "a", 10);
        producer.commitTransaction();
        producer.beginTransaction();
        send(producer, "x", 5);
        producer.flush();
        producer.abortTransaction();
        producer.beginTransaction();
        send(producer, "b", 4);
        producer.commitTransaction();

        Map<Integer, List<String>> committed = readAll("read_committed");
        Map<Integer, List<String>> uncommitted = readAll("read_uncommitted");
        for (int p = 0; p < PARTITIONS; p++) {
            List<String> expected = new ArrayList<>(values("a", 10, p));
            expected.addAll(values("b", 4, p));
            assertThat(committed.get(p)).as("partition %d, read_committed", p).containsExactlyElementsOf(expected);
            List<String> all = new ArrayList<>(values("a", 10, p));
            all.addAll(values("x", 5, p));
            all.addAll(values("b", 4, p));
            assertThat(uncommitted.get(p)).as("partition %d, read_uncommitted", p).containsExactlyElementsOf(all);
        }
    }

    @Test
    void theAdminClientListsAndDescribesTransactionsAndTheProducersOfAPartition() throws Exception {
        start(Map.of());
        createTopic();
        KafkaProducer<String, String> producer = producer("pay-app", 45_000);
        producer.initTransactions();
        producer.beginTransaction();
        send(producer, "a", 2); // partitions 0 and 1
        producer.flush();
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers()))) {
            List<org.apache.kafka.clients.admin.TransactionListing> listed = new ArrayList<>(admin.listTransactions().all().get());
            assertThat(listed).singleElement().satisfies(l -> {
                assertThat(l.transactionalId()).isEqualTo("pay-app");
                assertThat(l.state()).isEqualTo(org.apache.kafka.clients.admin.TransactionState.ONGOING);
            });
            assertThat(admin.listTransactions(new org.apache.kafka.clients.admin.ListTransactionsOptions()
                    .filterStates(List.of(org.apache.kafka.clients.admin.TransactionState.COMPLETE_COMMIT))).all().get()).isEmpty();
            org.apache.kafka.clients.admin.TransactionDescription d = admin.describeTransactions(List.of("pay-app"))
                    .description("pay-app").get();
            assertThat(d.state()).isEqualTo(org.apache.kafka.clients.admin.TransactionState.ONGOING);
            assertThat(d.transactionTimeoutMs()).isEqualTo(45_000);
            assertThat(d.topicPartitions()).containsExactlyInAnyOrder(new TopicPartition(TOPIC, 0), new TopicPartition(TOPIC, 1));
            assertThat(d.transactionStartTimeMs()).isPresent();
            long producerId = d.producerId();

            org.apache.kafka.clients.admin.DescribeProducersResult.PartitionProducerState p0 = admin.describeProducers(List.of(new TopicPartition(TOPIC, 0)))
                    .partitionResult(new TopicPartition(TOPIC, 0)).get();
            assertThat(p0.activeProducers()).singleElement().satisfies(ps -> {
                assertThat(ps.producerId()).isEqualTo(producerId);
                assertThat(ps.currentTransactionStartOffset()).hasValue(0L);
                assertThat(ps.lastSequence()).isZero();
            });
            assertThatThrownBy(() -> admin.describeTransactions(List.of("nobody")).description("nobody").get())
                    .hasCauseInstanceOf(org.apache.kafka.common.errors.TransactionalIdNotFoundException.class);

            producer.commitTransaction();
            org.apache.kafka.clients.admin.TransactionDescription after = admin.describeTransactions(List.of("pay-app"))
                    .description("pay-app").get();
            assertThat(after.state()).isEqualTo(org.apache.kafka.clients.admin.TransactionState.COMPLETE_COMMIT);
            assertThat(after.topicPartitions()).isEmpty();
            // Kafka 4's producer speaks transactions V2 here (transaction.version 2): the commit bumped the epoch
            assertThat(after.producerEpoch()).isEqualTo(d.producerEpoch() + 1);
            assertThat(admin.describeProducers(List.of(new TopicPartition(TOPIC, 0))).partitionResult(new TopicPartition(TOPIC, 0))
                    .get().activeProducers()).singleElement().satisfies(ps ->
                    assertThat(ps.currentTransactionStartOffset()).isEmpty());
        }
    }

    @Test
    void aNewInstanceFencesTheOldOneAndItsOpenTransactionIsAborted() throws Exception {
        start(Map.of());
        createTopic();
        KafkaProducer<String, String> zombie = producer("pay-app", 60_000);
        zombie.initTransactions();
        zombie.beginTransaction();
        send(zombie, "z", 6);
        zombie.flush();

        KafkaProducer<String, String> next = producer("pay-app", 60_000);
        next.initTransactions(); // fences the zombie and aborts its transaction first
        next.beginTransaction();
        send(next, "n", 3);
        next.commitTransaction();

        assertThatThrownBy(zombie::commitTransaction).isInstanceOfAny(ProducerFencedException.class,
                InvalidProducerEpochException.class, KafkaException.class);
        Map<Integer, List<String>> committed = readAll("read_committed");
        for (int p = 0; p < PARTITIONS; p++) {
            assertThat(committed.get(p)).as("partition %d", p).containsExactlyElementsOf(values("n", 3, p));
        }
    }

    @Test
    void theCoordinatorsStateSurvivesARestartAndAnOpenTransactionIsAbortedByTheNextInstance() throws Exception {
        start(Map.of());
        createTopic();
        KafkaProducer<String, String> first = producer("pay-app", 60_000);
        first.initTransactions();
        first.beginTransaction();
        send(first, "a", 6);
        first.commitTransaction();
        first.beginTransaction();
        send(first, "open", 6);
        first.flush();
        // the broker stops with the transaction open; the producer never comes back
        clients.remove(first);
        first.close(Duration.ZERO);
        broker.close();
        start(Map.of());

        KafkaProducer<String, String> second = producer("pay-app", 60_000);
        second.initTransactions();
        second.beginTransaction();
        send(second, "b", 3);
        second.commitTransaction();
        Map<Integer, List<String>> committed = readAll("read_committed");
        for (int p = 0; p < PARTITIONS; p++) {
            List<String> expected = new ArrayList<>(values("a", 6, p));
            expected.addAll(values("b", 3, p));
            assertThat(committed.get(p)).as("partition %d", p).containsExactlyElementsOf(expected);
        }
    }

    @Test
    void aTransactionLeftOpenPastItsTimeoutIsAbortedSoConsumersMoveOn() throws Exception {
        start(Map.of("transaction.abort.timed.out.transaction.cleanup.interval.ms", "200"));
        createTopic();
        KafkaProducer<String, String> abandoned = producer("pay-app", 1_000);
        abandoned.initTransactions();
        abandoned.beginTransaction();
        send(abandoned, "gone", 6);
        abandoned.flush();
        KafkaProducer<String, String> other = producer("other-app", 60_000);
        other.initTransactions();
        other.beginTransaction();
        send(other, "c", 3);
        other.commitTransaction();
        // read_committed reads up to the last stable offset: the abandoned transaction holds it back until
        // the coordinator aborts it. Wait for that (every partition stable up to its log end) before
        // reading, so the read does not race the abort.
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers()))) {
            Map<TopicPartition, org.apache.kafka.clients.admin.OffsetSpec> latest = new HashMap<>();
            for (int p = 0; p < PARTITIONS; p++) {
                latest.put(new TopicPartition(TOPIC, p), org.apache.kafka.clients.admin.OffsetSpec.latest());
            }
            long deadline = System.currentTimeMillis() + 15_000;
            while (true) {
                var stable = admin.listOffsets(latest, new org.apache.kafka.clients.admin.ListOffsetsOptions(
                        org.apache.kafka.common.IsolationLevel.READ_COMMITTED)).all().get();
                var ends = admin.listOffsets(latest).all().get();
                boolean done = latest.keySet().stream().allMatch(tp -> stable.get(tp).offset() == ends.get(tp).offset());
                if (done || System.currentTimeMillis() > deadline) {
                    break;
                }
                Thread.sleep(100);
            }
        }
        Map<Integer, List<String>> committed = readAll("read_committed");
        for (int p = 0; p < PARTITIONS; p++) {
            assertThat(committed.get(p)).as("partition %d", p).containsExactlyElementsOf(values("c", 3, p));
        }
        assertThatThrownBy(abandoned::commitTransaction).isInstanceOf(KafkaException.class);
    }
}
