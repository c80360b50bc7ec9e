package dev.varve.tests;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.utils.Utils;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Transactions on a 3-process cluster with Kafka's own clients: the coordinator (leader of the id's
 * {@code __transaction_state} partition) writes markers to partitions led by every broker through
 * WriteTxnMarkers, and when it is killed with SIGKILL while a transaction is open, the next
 * coordinator loads the id, the producer's next instance fences the old one and the open
 * transaction is aborted on every partition, so read_committed consumers see exactly the committed
 * transactions.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class ClusterTransactionsTest {
    private static final String TOPIC = "ledger";
    private static final int PARTITIONS = 6;
    private static final int TXN_PARTITIONS = 3;
    private static final String ID = "ledger-app";

    @TempDir
    Path dir;

    private static KafkaProducer<String, String> producer(TestCluster cluster) {
        return cluster.producer(Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, ID,
                ProducerConfig.MAX_BLOCK_MS_CONFIG, 90_000,
                ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, 120_000));
    }

    private static void send(KafkaProducer<String, String> producer, String prefix, int count) {
        for (int i = 0; i < count; i++) {
            producer.send(new ProducerRecord<>(TOPIC, i % PARTITIONS, null, prefix + i));
        }
    }

    private static List<String> values(String prefix, int count, int partition) {
        List<String> out = new ArrayList<>();
        for (int i = partition; i < count; i += PARTITIONS) {
            out.add(prefix + i);
        }
        return out;
    }

    /** Every value a read_committed consumer reads, by partition, up to the end offsets it is given (within 60 s). */
    private static Map<Integer, List<String>> readCommitted(TestCluster cluster) {
        Map<String, Object> cfg = new HashMap<>();
        cfg.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.allBootstrap());
        cfg.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        cfg.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        Map<Integer, List<String>> out = new HashMap<>();
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cfg, new StringDeserializer(), new StringDeserializer())) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int p = 0; p < PARTITIONS; p++) {
                tps.add(new TopicPartition(TOPIC, p));
                out.put(p, new ArrayList<>());
            }
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps, Duration.ofSeconds(30));
            long deadline = System.currentTimeMillis() + 60_000;
            while (tps.stream().anyMatch(tp -> c.position(tp) < end.get(tp)) && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    out.get(r.partition()).add(r.value());
                }
            }
            for (TopicPartition tp : tps) {
                assertThat(c.position(tp)).as("read_committed position of %s", tp).isEqualTo(end.get(tp));
            }
        }
        return out;
    }

    @Test
    void markersReachEveryLeaderAndAnOpenTransactionIsAbortedAfterTheCoordinatorIsKilled() throws Exception {
        try (TestCluster cluster = TestCluster.start(dir, 3, Map.of("transaction.state.log.num.partitions",
                Integer.toString(TXN_PARTITIONS))); Admin admin = cluster.admin()) {
            TestCluster.createAndAwaitInSync(admin, new NewTopic(TOPIC, PARTITIONS, (short) 3)
                    .configs(Map.of("min.insync.replicas", "2")), Duration.ofSeconds(60));
            Set<Integer> leaders = TestCluster.describe(admin, TOPIC).stream().map(TestCluster::leaderId).collect(Collectors.toSet());
            assertThat(leaders).as("the topic's partitions are led by more than one broker").hasSizeGreaterThan(1);

            KafkaProducer<String, String> first = producer(cluster);
            first.initTransactions();
            first.beginTransaction();
            send(first, "a", 30);
            first.commitTransaction();
            first.beginTransaction();
            send(first, "x", 12);
            first.flush();
            first.abortTransaction();
            first.beginTransaction();
            send(first, "open", 18);
            first.flush();

            // kill -9 the coordinator: the leader of the id's __transaction_state partition
            int txnPartition = Utils.abs(ID.hashCode()) % TXN_PARTITIONS;
            TopicDescription state = admin.describeTopics(List.of("__transaction_state")).allTopicNames().get(30, TimeUnit.SECONDS)
                    .get("__transaction_state");
            TopicPartitionInfo info = state.partitions().get(txnPartition);
            int coordinator = TestCluster.leaderId(info);
            assertThat(info.replicas()).as("__transaction_state is replicated").hasSize(3);
            cluster.node(coordinator).kill();

            KafkaProducer<String, String> next = producer(cluster);
            next.initTransactions(); // finds the new coordinator, which fences the old instance and aborts its transaction
            next.beginTransaction();
            send(next, "b", 12);
            next.commitTransaction();
            next.close(Duration.ofSeconds(10));

            assertThatThrownBy(first::commitTransaction).isInstanceOf(KafkaException.class);
            first.close(Duration.ZERO);

            Map<Integer, List<String>> committed = readCommitted(cluster);
            for (int p = 0; p < PARTITIONS; p++) {
                List<String> expected = new ArrayList<>(values("a", 30, p));
                expected.addAll(values("b", 12, p));
                assertThat(committed.get(p)).as("partition %d, read_committed", p).containsExactlyElementsOf(expected);
            }
        }
    }

    /**
     * A transactions V2 producer pipelines several batches per partition while each partition's first
     * one of a transaction waits for its leader to add it at the coordinator (on another broker for most
     * partitions): the later batches must not overtake it, or the leader refuses them as out of sequence
     * and the producer fails (as Kafka's ProducerPerformance did against Varve before the fix).
     */
    @Test
    void pipelinedTransactionalBatchesAreAppendedInTheOrderSent() throws Exception {
        try (TestCluster cluster = TestCluster.start(dir, 3, Map.of("transaction.state.log.num.partitions",
                Integer.toString(TXN_PARTITIONS))); Admin admin = cluster.admin()) {
            TestCluster.createAndAwaitInSync(admin, new NewTopic(TOPIC, PARTITIONS, (short) 3)
                    .configs(Map.of("min.insync.replicas", "2")), Duration.ofSeconds(60));
            int transactions = 40;
            int perTransaction = 600;
            String pad = "x".repeat(150);
            try (KafkaProducer<String, String> producer = cluster.producer(Map.of(
                    ProducerConfig.TRANSACTIONAL_ID_CONFIG, "pipelined",
                    ProducerConfig.BATCH_SIZE_CONFIG, 2048, // about ten batches per partition and transaction
                    ProducerConfig.LINGER_MS_CONFIG, 0,
                    ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 5,
                    ProducerConfig.MAX_BLOCK_MS_CONFIG, 90_000))) {
                producer.initTransactions();
                for (int t = 0; t < transactions; t++) {
                    producer.beginTransaction();
                    for (int i = 0; i < perTransaction; i++) {
                        producer.send(new ProducerRecord<>(TOPIC, i % PARTITIONS, null, t + "-" + i + "-" + pad));
                    }
                    producer.commitTransaction(); // throws if any send failed
                }
            }
            Map<Integer, List<String>> committed = readCommitted(cluster);
            for (int p = 0; p < PARTITIONS; p++) {
                List<String> expected = new ArrayList<>();
                for (int t = 0; t < transactions; t++) {
                    for (int i = p; i < perTransaction; i += PARTITIONS) {
                        expected.add(t + "-" + i + "-" + pad);
                    }
                }
                assertThat(committed.get(p)).as("partition %d, read_committed", p).containsExactlyElementsOf(expected);
            }
        }
    }
}
