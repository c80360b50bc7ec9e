package dev.varve.tests;

import dev.varve.broker.Broker;
import dev.varve.broker.BrokerConfig;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.AcknowledgeType;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaShareConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Share groups (KIP-932, "queues for Kafka") with stock {@link KafkaShareConsumer}s on a single Varve
 * node: several consumers take records from one topic together, in explicit and implicit
 * acknowledgement modes. Every record is delivered; each accepted record is accepted once across the
 * consumers; released records come back (with their delivery count raised), rejected ones never; and
 * the records of a consumer that stops mid-batch go to the others when their acquisition lock expires.
 */
@Timeout(180)
class ShareConsumerTest {
    private static final long LOCK_MS = 4_000;

    @TempDir
    static Path dir;
    static Broker broker;
    static KafkaProducer<String, String> producer;

    @BeforeAll
    static void start() throws Exception {
        broker = Broker.start(BrokerConfig.from(Map.of(
                "listeners", "PLAINTEXT://127.0.0.1:0",
                "log.dirs", dir.toString(),
                "group.coordinator.rebalance.protocols", "classic,consumer,share",
                "group.share.min.record.lock.duration.ms", "1000",
                "group.share.record.lock.duration.ms", Long.toString(LOCK_MS),
                "offsets.topic.num.partitions", "3",
                "share.coordinator.state.topic.num.partitions", "3")));
        producer = new KafkaProducer<>(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers()),
                new StringSerializer(), new StringSerializer());
    }

    @AfterAll
    static void stop() throws Exception {
        producer.close();
        broker.close();
    }

    static void createTopic(String name, int partitions) throws Exception {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers()))) {
            admin.createTopics(List.of(new NewTopic(name, partitions, (short) 1))).all().get();
        }
    }

    static KafkaShareConsumer<String, String> consumer(String group, String mode) {
        return new KafkaShareConsumer<>(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers(),
                ConsumerConfig.GROUP_ID_CONFIG, group,
                ConsumerConfig.SHARE_ACKNOWLEDGEMENT_MODE_CONFIG, mode,
                ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 50), new StringDeserializer(), new StringDeserializer());
    }

    static void produce(String topic, int from, int to) {
        for (int i = from; i < to; i++) {
            producer.send(new ProducerRecord<>(topic, Integer.toString(i), Integer.toString(i)));
        }
        producer.flush();
    }

    /**
     * Waits until the group's share-partitions of the topic exist: share.auto.offset.reset is latest, so a
     * share-partition starts at the end of its log when a member first fetches it.
     */
    static void awaitShareStates(String group, int partitions) {
        await().atMost(Duration.ofSeconds(60)).until(() -> broker.shareStates().startOffsets(group).size() == partitions);
    }

    /** A polling loop on its own thread; {@code onRecord} decides each record's fate. */
    static final class Poller implements AutoCloseable {
        final KafkaShareConsumer<String, String> consumer;
        final AtomicBoolean running = new AtomicBoolean(true);
        final Thread thread;
        final List<Throwable> failures = new CopyOnWriteArrayList<>();

        Poller(String name, KafkaShareConsumer<String, String> consumer, String topic,
               BiConsumer<KafkaShareConsumer<String, String>, ConsumerRecord<String, String>> onRecord) {
            this.consumer = consumer;
            this.thread = new Thread(() -> {
                try {
                    consumer.subscribe(List.of(topic));
                    while (running.get()) {
                        for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                            onRecord.accept(consumer, r);
                        }
                    }
                } catch (Throwable t) {
                    failures.add(t);
                }
            }, name);
            thread.start();
        }

        void stopPolling() throws InterruptedException {
            running.set(false);
            thread.join(30_000);
        }

        @Override
        public void close() throws InterruptedException {
            stopPolling();
            consumer.close(Duration.ofSeconds(10));
            assertThat(failures).isEmpty();
        }
    }

    @Test
    void explicitAcknowledgementAcrossThreeConsumers() throws Exception {
        String topic = "queue-explicit";
        String group = "share-explicit";
        int n = 600;
        createTopic(topic, 3);
        Map<String, AtomicInteger> accepted = new ConcurrentHashMap<>();
        Map<String, AtomicInteger> rejected = new ConcurrentHashMap<>();
        Map<String, List<Short>> deliveries = new ConcurrentHashMap<>();
        Set<String> released = ConcurrentHashMap.newKeySet();
        BiConsumer<KafkaShareConsumer<String, String>, ConsumerRecord<String, String>> decide = (c, r) -> {
            deliveries.computeIfAbsent(r.value(), k -> new CopyOnWriteArrayList<>()).add(r.deliveryCount().orElse((short) -1));
            int v = Integer.parseInt(r.value());
            if (v % 10 == 3 && released.add(r.value())) {
                c.acknowledge(r, AcknowledgeType.RELEASE); // once: it must come back
            } else if (v % 10 == 7) {
                c.acknowledge(r, AcknowledgeType.REJECT); // never again
                rejected.computeIfAbsent(r.value(), k -> new AtomicInteger()).incrementAndGet();
            } else {
                c.acknowledge(r, AcknowledgeType.ACCEPT);
                accepted.computeIfAbsent(r.value(), k -> new AtomicInteger()).incrementAndGet();
            }
        };
        List<Poller> pollers = new ArrayList<>();
        try {
            for (int i = 0; i < 3; i++) {
                pollers.add(new Poller("explicit-" + i, consumer(group, "explicit"), topic, decide));
            }
            awaitShareStates(group, 3);
            produce(topic, 0, n);
            await().atMost(Duration.ofSeconds(90)).until(() -> accepted.size() + rejected.size() == n);
        } finally {
            for (Poller p : pollers) {
                p.close();
            }
        }
        assertThat(accepted.values()).as("each accepted record accepted once across the consumers").allMatch(c -> c.get() == 1);
        assertThat(rejected.values()).allMatch(c -> c.get() == 1);
        for (int v = 0; v < n; v++) {
            List<Short> counts = deliveries.get(Integer.toString(v));
            assertThat(counts).as("record %d delivered", v).isNotNull();
            if (v % 10 == 3) {
                assertThat(counts).as("released record %d came back with its second delivery", v).containsExactly((short) 1, (short) 2);
            } else {
                assertThat(counts).as("record %d delivered once", v).containsExactly((short) 1);
            }
        }
    }

    @Test
    void implicitAcknowledgementDeliversEveryRecordOnce() throws Exception {
        String topic = "queue-implicit";
        String group = "share-implicit";
        int n = 500;
        createTopic(topic, 2);
        Map<String, AtomicInteger> seen = new ConcurrentHashMap<>();
        List<Poller> pollers = new ArrayList<>();
        try {
            for (int i = 0; i < 2; i++) {
                pollers.add(new Poller("implicit-" + i, consumer(group, "implicit"), topic,
                        (c, r) -> seen.computeIfAbsent(r.value(), k -> new AtomicInteger()).incrementAndGet()));
            }
            awaitShareStates(group, 2);
            produce(topic, 0, n);
            await().atMost(Duration.ofSeconds(60)).until(() -> seen.size() == n);
        } finally {
            for (Poller p : pollers) {
                p.close();
            }
        }
        assertThat(seen.values()).as("every record delivered once").allMatch(c -> c.get() == 1);
        // everything acknowledged: the share-partitions start past the last record
        assertThat(broker.shareStates().startOffsets(group).values().stream().mapToLong(Long::longValue).sum()).isEqualTo(n);
    }

    @Test
    void aConsumerThatStopsMidBatchHasItsRecordsRedeliveredAfterTheLockTimeout() throws Exception {
        String topic = "queue-stuck";
        String group = "share-stuck";
        int n = 200;
        createTopic(topic, 1);
        Set<String> stuck = ConcurrentHashMap.newKeySet();
        Map<String, List<Short>> healthy = new ConcurrentHashMap<>();
        // the stuck consumer takes one batch and never acknowledges it (explicit mode, polling stops)
        KafkaShareConsumer<String, String> stuckConsumer = consumer(group, "explicit");
        AtomicBoolean took = new AtomicBoolean();
        Poller stuckPoller = new Poller("stuck", stuckConsumer, topic, (c, r) -> {
            stuck.add(r.value());
            took.set(true);
        });
        Poller healthyPoller = null;
        try {
            awaitShareStates(group, 1);
            produce(topic, 0, n);
            await().atMost(Duration.ofSeconds(30)).until(took::get);
            stuckPoller.stopPolling(); // mid-batch: what it holds stays acquired, nothing acknowledged
            long stoppedAt = System.nanoTime();
            healthyPoller = new Poller("healthy", consumer(group, "explicit"), topic, (c, r) -> {
                healthy.computeIfAbsent(r.value(), k -> new CopyOnWriteArrayList<>()).add(r.deliveryCount().orElse((short) -1));
                c.acknowledge(r, AcknowledgeType.ACCEPT);
            });
            await().atMost(Duration.ofSeconds(60)).until(() -> healthy.keySet().containsAll(stuck) && healthy.size() == n);
            long tookMs = (System.nanoTime() - stoppedAt) / 1_000_000;
            assertThat(tookMs).as("the stuck records came back only when their lock expired").isGreaterThanOrEqualTo(LOCK_MS / 2);
        } finally {
            if (healthyPoller != null) {
                healthyPoller.close();
            }
            stuckConsumer.close(Duration.ofSeconds(10));
        }
        assertThat(stuck).isNotEmpty();
        for (Map.Entry<String, List<Short>> e : healthy.entrySet()) {
            if (stuck.contains(e.getKey())) {
                assertThat(e.getValue()).as("stuck record %s redelivered as its second delivery", e.getKey()).containsExactly((short) 2);
            } else {
                // delivered once to the healthy consumer (a record the stuck one had fetched but not yet handed
                // to its application comes back as its second delivery too)
                assertThat(e.getValue()).as("record %s delivered once", e.getKey()).hasSize(1);
                assertThat(e.getValue().get(0)).isBetween((short) 1, (short) 2);
            }
        }
    }

    /**
     * kafka-share-groups.sh against the group: --list, --describe (start offsets), --reset-offsets refused
     * while a member is active and applied once it left (the records are delivered again from the new
     * start), --delete-offsets, --delete.
     */
    @Test
    void kafkaShareGroupsDescribesResetsAndDeletes() throws Exception {
        String topic = "tools-sq";
        String group = "tools-sg";
        createTopic(topic, 2);
        java.util.Set<String> seen = java.util.concurrent.ConcurrentHashMap.newKeySet();
        Poller p = new Poller("tools-1", consumer(group, "implicit"), topic, (c, r) -> seen.add(r.value()));
        awaitShareStates(group, 2);
        produce(topic, 0, 20);
        await().atMost(Duration.ofSeconds(60)).until(() -> seen.size() == 20);

        KafkaTool.Result list = shareGroups("--list");
        assertThat(list.exitCode()).as(list.toString()).isZero();
        assertThat(list.stdout()).as(list.toString()).contains(group);
        KafkaTool.Result describe = shareGroups("--describe", "--group", group);
        assertThat(describe.exitCode()).as(describe.toString()).isZero();
        assertThat(describe.stdout()).as(describe.toString()).contains(topic);
        KafkaTool.Result members = shareGroups("--describe", "--group", group, "--members");
        assertThat(members.exitCode()).as(members.toString()).isZero();
        assertThat(members.stdout()).as(members.toString()).contains("consumer-tools-sg").containsPattern(topic + ":\\d");
        KafkaTool.Result refused = shareGroups("--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute");
        assertThat(refused.exitCode()).as(refused.toString()).isNotZero();
        assertThat(refused.all()).as(refused.toString()).contains("Share group '" + group + "' is not empty.");
        assertThat(broker.shareStates().startOffsets(group).values()).as("nothing reset").containsOnly(10L);
        p.close();

        KafkaTool.Result reset = shareGroups("--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute");
        assertThat(reset.exitCode()).as(reset.toString()).isZero();
        await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(broker.shareStates().startOffsets(group).values())
                .as("both partitions start at 0 again").containsOnly(0L).hasSize(2));
        java.util.Set<String> again = java.util.concurrent.ConcurrentHashMap.newKeySet();
        try (Poller second = new Poller("tools-2", consumer(group, "implicit"), topic, (c, r) -> again.add(r.value()))) {
            await().atMost(Duration.ofSeconds(60)).until(() -> again.size() == 20);
        }

        KafkaTool.Result deleteOffsets = shareGroups("--delete-offsets", "--group", group, "--topic", topic);
        assertThat(deleteOffsets.exitCode()).as(deleteOffsets.toString()).isZero();
        assertThat(broker.shareStates().startOffsets(group)).as("the topic's state deleted").isEmpty();
        KafkaTool.Result delete = shareGroups("--delete", "--group", group);
        assertThat(delete.exitCode()).as(delete.toString()).isZero();
        KafkaTool.Result after = shareGroups("--list");
        assertThat(after.stdout()).as(after.toString()).doesNotContain(group);
    }

    private static KafkaTool.Result shareGroups(String... args) throws Exception {
        List<String> all = new java.util.ArrayList<>(List.of("--bootstrap-server", broker.bootstrapServers()));
        all.addAll(List.of(args));
        KafkaTool.Result r = KafkaTool.run(dir, "org.apache.kafka.tools.consumer.group.ShareGroupCommand", all);
        System.out.println("kafka-share-groups " + String.join(" ", args) + "\n" + r.all());
        return r;
    }
}
