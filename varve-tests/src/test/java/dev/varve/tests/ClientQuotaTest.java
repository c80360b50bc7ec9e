package dev.varve.tests;

import dev.varve.broker.Broker;
import dev.varve.broker.BrokerConfig;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Client quotas on a single node, set as a Kafka operator sets them (kafka-configs {@code --entity-type
 * users}/{@code clients}, the Admin API): a producer and a consumer held to a byte rate are slowed to it
 * (the client is told {@code throttle_time_ms} and its connection is muted meanwhile), a user without a
 * quota is not; the quotas survive a restart; an IP quota, which Varve does not enforce yet, is refused.
 * Rates are bounded from one side only (a throttled client cannot be faster than its quota allows), so a
 * slow machine cannot fail the test.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class ClientQuotaTest {
    private static final String JAAS = PlainUsers.jaas(null, "alice", "bob");
    private static final int RECORD = 8 * 1024;
    private static final int RECORDS = 500; // 4 MB
    private static final long QUOTA = 512 * 1024; // bytes per second

    @TempDir
    Path dir;
    private final Closer closing = new Closer();
    private Broker broker;

    @AfterEach
    void close() throws Exception {
        closing.close();
        if (broker != null) {
            broker.close();
        }
    }

    private Broker start() throws Exception {
        Map<String, String> props = new HashMap<>();
        props.put("log.dirs", dir.resolve("data").toString());
        props.put("listeners", "SASL_PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0");
        props.put("sasl.enabled.mechanisms", "PLAIN");
        props.put("listener.name.sasl_plaintext.plain.sasl.jaas.config", JAAS);
        // a short window (3 samples of 1 s) keeps the test short
        props.put("quota.window.num", "3");
        props.put("group.initial.rebalance.delay.ms", "0");
        return Broker.start(BrokerConfig.from(props));
    }

    private static Map<String, Object> user(String name) {
        return PlainUsers.client("SASL_PLAINTEXT", name);
    }

    private Admin admin(String name) {
        Map<String, Object> p = user(name);
        p.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
        Admin admin = Admin.create(p);
        closing.add(admin);
        return admin;
    }

    private KafkaTool.Result kafkaConfigs(String... args) throws Exception {
        Path config = dir.resolve("client.properties");
        java.nio.file.Files.writeString(config, "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\nsasl.jaas.config="
                + user("alice").get("sasl.jaas.config") + "\n");
        List<String> command = new ArrayList<>(List.of("--bootstrap-server", broker.bootstrapServers(),
                "--command-config", config.toString()));
        command.addAll(List.of(args));
        return KafkaTool.run(dir, "org.apache.kafka.tools.ConfigCommand", command);
    }

    /** Sends {@link #RECORDS} records as fast as the client is let; the milliseconds it took and the largest throttle it was told. */
    private long[] produce(String name, String topic) throws Exception {
        Map<String, Object> p = user(name);
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
        p.put(ProducerConfig.CLIENT_ID_CONFIG, name + "-producer");
        p.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        p.put(ProducerConfig.BATCH_SIZE_CONFIG, 64 * 1024);
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer())) {
            producer.partitionsFor(topic);
            long start = System.nanoTime();
            List<Future<?>> sent = new ArrayList<>();
            for (int i = 0; i < RECORDS; i++) {
                sent.add(producer.send(new ProducerRecord<>(topic, 0, null, new byte[RECORD])));
            }
            for (Future<?> f : sent) {
                f.get(120, TimeUnit.SECONDS);
            }
            long ms = (System.nanoTime() - start) / 1_000_000;
            return new long[]{ms, (long) metric(producer.metrics(), "produce-throttle-time-max")};
        }
    }

    private long[] consume(String name, String topic) {
        Map<String, Object> p = user(name);
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
        p.put(ConsumerConfig.CLIENT_ID_CONFIG, name + "-consumer");
        p.put(ConsumerConfig.FETCH_MAX_BYTES_CONFIG, 4 * 1024 * 1024);
        p.put(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, 4 * 1024 * 1024);
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p, new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.assign(List.of(new TopicPartition(topic, 0)));
            consumer.seekToBeginning(List.of(new TopicPartition(topic, 0)));
            long start = System.nanoTime();
            int read = 0;
            long deadline = System.currentTimeMillis() + 120_000;
            while (read < RECORDS && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<byte[], byte[]> ignored : consumer.poll(Duration.ofMillis(200))) {
                    read++;
                }
            }
            assertThat(read).isEqualTo(RECORDS);
            long ms = (System.nanoTime() - start) / 1_000_000;
            return new long[]{ms, (long) metric(consumer.metrics(), "fetch-throttle-time-max")};
        }
    }

    private static double metric(Map<MetricName, ? extends Metric> metrics, String name) {
        return metrics.entrySet().stream().filter(e -> e.getKey().name().equals(name))
                .mapToDouble(e -> ((Number) e.getValue().metricValue()).doubleValue()).filter(v -> !Double.isNaN(v))
                .max().orElse(0);
    }

    @Test
    void producersAndConsumersHeldToAByteRateAreSlowedToItAndOthersAreNot() throws Exception {
        broker = start();
        admin("alice").createTopics(List.of(new NewTopic("metered", 1, (short) 1), new NewTopic("free", 1, (short) 1)))
                .all().get(15, TimeUnit.SECONDS);
        KafkaTool.Result set = kafkaConfigs("--alter", "--add-config", "producer_byte_rate=" + QUOTA + ",consumer_byte_rate=" + QUOTA,
                "--entity-type", "users", "--entity-name", "alice");
        assertThat(set.exitCode()).as(set.toString()).isZero();
        KafkaTool.Result described = kafkaConfigs("--describe", "--entity-type", "users", "--entity-name", "alice");
        assertThat(described.stdout()).as(described.toString()).contains("producer_byte_rate=" + QUOTA + ".0")
                .contains("consumer_byte_rate=" + QUOTA + ".0");

        long[] bob = produce("bob", "free");
        long[] alice = produce("alice", "metered");
        // 4 MB at 512 KB/s with a burst allowance of 2 windows (1 MB): at least ~6 s; asserted loosely
        long atLeast = (RECORDS * (long) RECORD - 2 * QUOTA) * 1000 / QUOTA / 2;
        assertThat(alice[0]).as("alice's 4 MB took %d ms (bob's %d ms)", alice[0], bob[0]).isGreaterThanOrEqualTo(atLeast);
        assertThat(alice[1]).as("alice's producer was told to wait").isPositive();
        assertThat(bob[1]).as("bob has no quota").isZero();

        long[] aliceReads = consume("alice", "metered");
        long[] bobReads = consume("bob", "metered");
        assertThat(aliceReads[0]).as("alice read 4 MB in %d ms (bob in %d ms)", aliceReads[0], bobReads[0])
                .isGreaterThanOrEqualTo(atLeast);
        assertThat(aliceReads[1]).isPositive();
        assertThat(bobReads[1]).isZero();

        // they survive a restart, as read back by the Admin API
        broker.close();
        broker = start();
        Map<ClientQuotaEntity, Map<String, Double>> quotas = admin("bob").describeClientQuotas(ClientQuotaFilter.all())
                .entities().get(15, TimeUnit.SECONDS);
        assertThat(quotas).containsEntry(new ClientQuotaEntity(Map.of("user", "alice")),
                Map.of("producer_byte_rate", (double) QUOTA, "consumer_byte_rate", (double) QUOTA));
        // removing the quota frees alice
        KafkaTool.Result removed = kafkaConfigs("--alter", "--delete-config", "producer_byte_rate,consumer_byte_rate",
                "--entity-type", "users", "--entity-name", "alice");
        assertThat(removed.exitCode()).as(removed.toString()).isZero();
        assertThat(admin("bob").describeClientQuotas(ClientQuotaFilter.all()).entities().get(15, TimeUnit.SECONDS)).isEmpty();
        assertThat(produce("alice", "metered")[1]).isZero();
    }

    /**
     * A client that ignores {@code throttle_time_ms} (it sends its next request as soon as it has an answer)
     * is slowed all the same: the broker reads nothing more from its connection until the throttle passes.
     */
    @Test
    void aClientIgnoringItsThrottleIsHeldBackByTheBroker() throws Exception {
        broker = start();
        admin("alice").createTopics(List.of(new NewTopic("raw", 1, (short) 1))).all().get(15, TimeUnit.SECONDS);
        // the raw client's id, on the PLAINTEXT listener (principal ANONYMOUS)
        admin("alice").alterClientQuotas(List.of(new org.apache.kafka.common.quota.ClientQuotaAlteration(
                new ClientQuotaEntity(Map.of("client-id", "varve-tests-raw")),
                List.of(new org.apache.kafka.common.quota.ClientQuotaAlteration.Op("producer_byte_rate", (double) QUOTA)))))
                .all().get(15, TimeUnit.SECONDS);
        var plaintext = broker.boundAddresses().get(1);
        long throttled = 0;
        long start = System.nanoTime();
        try (RawKafkaClient raw = new RawKafkaClient(plaintext.getHostString() + ":" + plaintext.getPort())) {
            for (int i = 0; i < 64; i++) { // 64 x 64 KiB = 4 MiB, each sent as soon as the last is answered
                org.apache.kafka.common.record.internal.MemoryRecords batch = org.apache.kafka.common.record.internal.MemoryRecords
                        .withRecords(org.apache.kafka.common.compress.Compression.NONE,
                                new org.apache.kafka.common.record.internal.SimpleRecord(new byte[64 * 1024]));
                assertThat(raw.produce("raw", 0, batch).errorCode()).isZero();
            }
        }
        long ms = (System.nanoTime() - start) / 1_000_000;
        long atLeast = (64L * 64 * 1024 - 2 * QUOTA) * 1000 / QUOTA / 2;
        assertThat(ms).as("4 MiB from a client ignoring its throttle took %d ms", ms).isGreaterThanOrEqualTo(atLeast);
    }

    @Test
    void quotasVarveDoesNotEnforceAreRefused() throws Exception {
        broker = start();
        KafkaTool.Result ip = kafkaConfigs("--alter", "--add-config", "connection_creation_rate=5", "--entity-type", "ips",
                "--entity-name", "10.0.0.1");
        assertThat(ip.exitCode()).as(ip.toString()).isNotZero();
        assertThat(ip.all()).contains("not supported");
        KafkaTool.Result unknown = kafkaConfigs("--alter", "--add-config", "producer_byte_rate=10.5", "--entity-type", "clients",
                "--entity-default");
        assertThat(unknown.exitCode()).as(unknown.toString()).isNotZero();
        assertThat(admin("alice").describeClientQuotas(ClientQuotaFilter.all()).entities().get(15, TimeUnit.SECONDS)).isEmpty();
    }
}
