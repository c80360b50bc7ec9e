package dev.varve.tests;

import dev.varve.broker.Broker;
import dev.varve.broker.BrokerConfig;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.UUID;

/**
 * The broker a test class talks to: an in-process Varve broker, or, with
 * {@code -Dvarve.tests.bootstrap=HOST:PORT}, an external broker that is already running (Apache Kafka
 * from {@code ../shared/peer/kafka start}, say), so that the same assertions are first checked against
 * Kafka itself. Names of topics and groups made with {@link #unique} differ on every run, so a
 * long-lived external broker can run the suite again and again.
 */
final class TestBroker implements AutoCloseable {
    /** The external broker's bootstrap list; empty to start Varve in-process. */
    static final String EXTERNAL_BOOTSTRAP = System.getProperty("varve.tests.bootstrap", "").trim();

    /**
     * Group coordinator settings that keep the group tests fast: no initial rebalance delay (Kafka
     * waits 3 s by default for more members to arrive), few partitions of {@code __consumer_offsets},
     * and short heartbeats and sessions for consumer-protocol members.
     */
    static final Map<String, String> FAST_GROUPS = Map.of(
            "group.initial.rebalance.delay.ms", "0",
            "offsets.topic.num.partitions", Integer.toString(5),
            // KIP-848 groups: the broker sets their members' timing; heartbeats every 500 ms, sessions of 6 s
            "group.consumer.min.heartbeat.interval.ms", "500",
            "group.consumer.heartbeat.interval.ms", "500",
            "group.consumer.min.session.timeout.ms", "6000",
            "group.consumer.session.timeout.ms", "6000");

    /** Partitions of {@code __consumer_offsets} on the broker under test (Kafka's default 50 on an external one). */
    static final int OFFSETS_TOPIC_PARTITIONS = external()
            ? Integer.getInteger("varve.tests.offsets.partitions", 50) : 5;

    private static final String RUN = UUID.randomUUID().toString().substring(0, 8);

    private final Broker broker;
    private final String bootstrap;

    private TestBroker(Broker broker, String bootstrap) {
        this.broker = broker;
        this.bootstrap = bootstrap;
    }

    static boolean external() {
        return !EXTERNAL_BOOTSTRAP.isEmpty();
    }

    /**
     * The external broker, or a new in-process broker on a free loopback port with its data in
     * {@code dataDir}, {@link #FAST_GROUPS} and then {@code config} applied.
     */
    static TestBroker start(Path dataDir, Map<String, String> config) throws Exception {
        if (external()) {
            return new TestBroker(null, EXTERNAL_BOOTSTRAP);
        }
        Map<String, String> all = new HashMap<>(FAST_GROUPS);
        all.put("listeners", "PLAINTEXT://127.0.0.1:0");
        all.put("log.dirs", dataDir.toString());
        all.putAll(config);
        Broker broker = Broker.start(BrokerConfig.from(all));
        return new TestBroker(broker, broker.bootstrapServers());
    }

    String bootstrap() {
        return bootstrap;
    }

    /** {@code prefix} plus a tag of this run, for names that must not exist yet on an external broker. */
    static String unique(String prefix) {
        return prefix + "-" + RUN;
    }

    @Override
    public void close() throws Exception {
        if (broker != null) {
            broker.close();
        }
    }
}
