package dev.varve.tests;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The control plane at scale, on a real 3-process cluster secured as users run one (SASL_SSL between
 * clients and brokers and between brokers, the metadata quorum on mutual TLS, ACLs on, the application a
 * user of its own): one CreateTopics of 1,000 partitions with
 * RF=3 (answered NONE on its first try, every partition led with 3 in sync), acks=all producing over
 * all of them, kill -9 of a broker (every partition led elsewhere), its restart (every partition back
 * to 3 in sync), and every acknowledged record read back exactly once, in order. The brokers' logs
 * stay short: one line per metadata delta, not one per partition.
 */
@Timeout(value = 480, unit = TimeUnit.SECONDS)
class ScaleClusterTest {
    private static final String TOPIC = "scale";
    private static final int PARTITIONS = 1_000;
    private static final Duration ACK_WAIT = Duration.ofSeconds(90);
    /**
     * How long the restarted broker may take to be back in every ISR, and what the producer's
     * delivery timeout allows. Measured on the shared 2-core machine with three brokers and the
     * producer on it (2026-12-03): 6 s alone, 19-21 s with three such clusters at once; 108-120 s
     * before index appends stopped faulting on fresh mapped pages (docs/reliability.md, Known limits).
     * A bound that catches a resync that never ends, not a speed target: that is
     * bench/scale-side-by-side.sh's.
     */
    private static final Duration RESYNC_BOUND = Duration.ofSeconds(240);

    @TempDir
    Path dir;

    @Test
    void aThousandPartitionsSurviveKillAndRestartWithoutLosingAnAcknowledgedRecord() throws Exception {
        // the producer's own account (retried errors, epoch bumps), printed only if the test fails
        ch.qos.logback.classic.Logger clientLog = (ch.qos.logback.classic.Logger)
                org.slf4j.LoggerFactory.getLogger("org.apache.kafka.clients.producer.internals");
        ch.qos.logback.core.read.ListAppender<ch.qos.logback.classic.spi.ILoggingEvent> clientEvents =
                new ch.qos.logback.core.read.ListAppender<>();
        clientEvents.start();
        ch.qos.logback.classic.Level clientLevel = clientLog.getLevel();
        // logback-test.xml quiets the Sender (retried errors are what fault tests cause); here they are the evidence
        ch.qos.logback.classic.Logger senderLog = (ch.qos.logback.classic.Logger)
                org.slf4j.LoggerFactory.getLogger("org.apache.kafka.clients.producer.internals.Sender");
        ch.qos.logback.classic.Level senderLevel = senderLog.getLevel();
        senderLog.setLevel(ch.qos.logback.classic.Level.INFO);
        clientLog.setLevel(ch.qos.logback.classic.Level.INFO);
        clientLog.setAdditive(false);
        clientLog.addAppender(clientEvents);
        try {
            run(clientEvents);
        } finally {
            clientLog.detachAppender(clientEvents);
            clientLog.setAdditive(true);
            clientLog.setLevel(clientLevel);
            senderLog.setLevel(senderLevel);
        }
    }

    private void run(ch.qos.logback.core.read.ListAppender<ch.qos.logback.classic.spi.ILoggingEvent> clientEvents)
            throws Exception {
        // Kafka's liveness defaults: broker session 9 s, heartbeat every 2 s, replica.lag.time.max.ms 30 s.
        // With the tests' usual 4 s and 3 s, three brokers resyncing 1,000 partitions on two cores that also
        // run the producer missed heartbeats and fell 3 s behind while alive: they were fenced and shrunk
        // out of hundreds of ISRs, each time moving leaders again (seen while index appends still faulted
        // on fresh mapped pages and the resync took 110-120 s; not re-checked with the fast values since
        // that fix). The killed broker is still fenced at once (the controller finds nothing
        // listening on its endpoints) and leaves the ISRs with it; the restarted one rejoins as soon as
        // it has caught up, whatever the lag time.
        Map<String, String> kafkaLiveness = Map.of("broker.session.timeout.ms", "9000", "broker.heartbeat.interval.ms", "2000",
                "replica.lag.time.max.ms", "30000");
        // as users run at scale: every listener secured (SASL_SSL for clients and brokers, the metadata quorum on
        // mutual TLS), ACLs on, the brokers super users; the application writes and reads as a user of its own
        TestPki ca = TestPki.create(dir.resolve("pki"), "scale");
        Map<String, String> secured = new HashMap<>(kafkaLiveness);
        secured.put("listener.security.protocol.map", "SASL_SSL:SASL_SSL,CONTROLLER:SSL");
        secured.put("sasl.enabled.mechanisms", "PLAIN");
        secured.put("sasl.mechanism.inter.broker.protocol", "PLAIN");
        secured.put("listener.name.sasl_ssl.plain.sasl.jaas.config", PlainUsers.jaas("broker", "broker", "operator", "app"));
        secured.put("authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer");
        // the brokers as SASL users, and as the quorum's TLS peers (their certificates' names)
        secured.put("super.users", "User:broker;User:operator;User:O=varve,CN=broker-1;User:O=varve,CN=broker-2;User:O=varve,CN=broker-3");
        try (TestCluster cluster = TestCluster.start(dir.resolve("nodes"), 3, secured, "SASL_SSL",
                id -> ca.brokerSsl("", ca.pkcs12(ca.issue("CN=broker-" + id + ",O=varve"), "broker-" + id + ".p12")),
                user(ca, "operator"));
             Admin admin = cluster.admin()) {
            cluster.useClientSecurity(user(ca, "app"));
            try {
                phases(cluster, admin, user(ca, "operator"), clientEvents);
            } catch (Throwable t) {
                keepLogs(cluster); // whatever failed: a wait for the resync as much as a producer error
                throw t;
            }
        }
    }

    private static Map<String, Object> user(TestPki ca, String name) {
        return PlainUsers.overTls(ca, name);
    }

    private void phases(TestCluster cluster, Admin admin, Map<String, Object> operator,
                        ch.qos.logback.core.read.ListAppender<ch.qos.logback.classic.spi.ILoggingEvent> clientEvents)
            throws Exception {
        long t0 = System.nanoTime();
        // the first answer is the one that counts: a retried command must not say TOPIC_ALREADY_EXISTS
        TestCluster.createAndAwaitInSync(admin, new NewTopic(TOPIC, PARTITIONS, (short) 3)
                .configs(Map.of("min.insync.replicas", "2")), Duration.ofSeconds(60));
        assertThat(TestCluster.describe(admin, TOPIC)).hasSize(PARTITIONS);
        // the application's grant (the admin client is the operator's, a super user)
        admin.createAcls(List.of(new org.apache.kafka.common.acl.AclBinding(
                new org.apache.kafka.common.resource.ResourcePattern(org.apache.kafka.common.resource.ResourceType.TOPIC, TOPIC,
                        org.apache.kafka.common.resource.PatternType.LITERAL),
                new org.apache.kafka.common.acl.AccessControlEntry("User:app", "*", org.apache.kafka.common.acl.AclOperation.ALL,
                        org.apache.kafka.common.acl.AclPermissionType.ALLOW)))).all().get(30, TimeUnit.SECONDS);
        // every broker has it before the application starts (a refusal is not retried by the producer)
        for (TestCluster.Node node : cluster.nodes()) {
            Map<String, Object> only = new HashMap<>(operator);
            only.put(org.apache.kafka.clients.admin.AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, node.bootstrap());
            try (Admin one = Admin.create(only)) {
                await().atMost(Duration.ofSeconds(30)).ignoreExceptions().untilAsserted(() -> assertThat(
                        one.describeAcls(org.apache.kafka.common.acl.AclBindingFilter.ANY).values().get(10, TimeUnit.SECONDS))
                        .hasSize(1));
            }
        }
        System.out.printf("%d partitions led with 3 in sync %d ms after CreateTopics%n", PARTITIONS,
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - t0));

        AckedRecords acked = new AckedRecords();
        ConcurrentLinkedQueue<Throwable> failures = new ConcurrentLinkedQueue<>();
        AtomicBoolean running = new AtomicBoolean(true);
        Thread producer = new Thread(() -> produce(cluster, acked, failures, running), "scale-producer");
        producer.start();
        System.out.println(java.time.LocalTime.now() + " producing");
        int victim;
        try {
            acked.awaitAtLeast(3 * PARTITIONS, ACK_WAIT);
            System.out.println(java.time.LocalTime.now() + " " + acked.count() + " acknowledged");
            // kill -9 the broker leading the most partitions
            Map<Integer, Integer> led = new HashMap<>();
            TestCluster.describe(admin, TOPIC).forEach(p -> led.merge(TestCluster.leaderId(p), 1, Integer::sum));
            victim = led.entrySet().stream().max(Map.Entry.comparingByValue()).orElseThrow().getKey();
            System.out.println(java.time.LocalTime.now() + " kill -9 of broker " + victim);
            cluster.node(victim).kill();
            long killed = System.nanoTime();
            await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(200)).untilAsserted(() ->
                    assertThat(TestCluster.describe(admin, TOPIC)).allSatisfy(p ->
                            assertThat(TestCluster.leaderId(p)).isNotEqualTo(victim).isNotEqualTo(-1)));
            System.out.printf("every partition of broker %d (%d led) led elsewhere %d ms after kill -9%n", victim,
                    led.get(victim), TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killed));
            acked.awaitAtLeast(acked.count() + PARTITIONS, ACK_WAIT);

            System.out.println(java.time.LocalTime.now() + " restart of broker " + victim);
            cluster.node(victim).start();
            long restarted = System.nanoTime();
            await().atMost(RESYNC_BOUND).pollInterval(Duration.ofMillis(200)).untilAsserted(() ->
                    assertThat(TestCluster.describe(admin, TOPIC)).allSatisfy(p -> assertThat(p.isr()).hasSize(3)));
            System.out.printf("every partition back to 3 in sync %d ms after the restart%n",
                    TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - restarted));
            acked.awaitAtLeast(acked.count() + PARTITIONS, ACK_WAIT);
        } finally {
            running.set(false);
            producer.join(RESYNC_BOUND.toMillis() + 90_000);
        }
        if (!failures.isEmpty()) {
            printDiagnosis(cluster, admin, failures, clientEvents);
        }
        assertThat(failures).as("producer errors").isEmpty();

        acked.assertReadBack(cluster.readPartitions(TOPIC, PARTITIONS), PARTITIONS);
        System.out.printf("acknowledged %d records over %d partitions%n", acked.count(), PARTITIONS);

        // Summaries, not a line per partition transition (the scale issue saw 54,800 lines in 10 minutes).
        for (TestCluster.Node node : cluster.nodes()) {
            List<String> lines = Files.readAllLines(node.log);
            // the most frequent kinds of line (the logger and the first words), for the failure message
            Map<String, Long> kinds = new java.util.TreeMap<>();
            for (String line : lines) {
                String kind = line.replaceAll("^[0-9:.]+ ", "").replaceAll("[0-9]+", "N");
                kinds.merge(kind.length() > 100 ? kind.substring(0, 100) : kind, 1L, Long::sum);
            }
            String top = kinds.entrySet().stream().sorted(Map.Entry.<String, Long>comparingByValue().reversed()).limit(5)
                    .map(e -> e.getValue() + " x " + e.getKey()).collect(java.util.stream.Collectors.joining("\n"));
            assertThat(lines.size()).as("log lines of node %d; most frequent:%n%s", node.id, top).isLessThan(PARTITIONS);
        }
    }

    private static final java.util.regex.Pattern PARTITION_NAME = java.util.regex.Pattern.compile(TOPIC + "-[0-9]+");

    /**
     * What the brokers and the producer said about the partitions whose batches failed (the failure
     * shows under load and in some CI runs, rarely alone), and the brokers' whole logs kept under target/.
     */
    private static void printDiagnosis(TestCluster cluster, Admin admin, ConcurrentLinkedQueue<Throwable> failures,
                                       ch.qos.logback.core.read.ListAppender<ch.qos.logback.classic.spi.ILoggingEvent> clientEvents)
            throws Exception {
        java.util.Set<String> stuck = new java.util.TreeSet<>();
        for (Throwable f : failures) {
            PARTITION_NAME.matcher(String.valueOf(f.getMessage())).results().forEach(r -> stuck.add(r.group()));
        }
        System.out.println("---- partitions whose batches failed: " + stuck);
        TestCluster.describe(admin, TOPIC).stream()
                .filter(p -> stuck.contains(TOPIC + "-" + p.partition()))
                .limit(10).forEach(p -> System.out.println("now: " + p));
        for (TestCluster.Node node : cluster.nodes()) {
            System.out.println("---- node " + node.id + ": WARN/ERROR/closing lines and lines naming those partitions (first 100)");
            node.log().lines().filter(l -> l.contains(" WARN ") || l.contains(" ERROR ")
                            || l.contains("closing connection") || namesAny(l, stuck))
                    .limit(100).forEach(System.out::println);
        }
        failures.stream().map(Throwable::toString).distinct().limit(5).forEach(System.out::println);
        // a few of them: at the start every partition is retried once while the brokers open their logs
        List<String> firstStuck = stuck.stream().limit(3).toList();
        System.out.println("---- the producer's log: epoch and producer-id lines, and lines naming " + firstStuck + " (first 150)");
        List<ch.qos.logback.classic.spi.ILoggingEvent> events;
        synchronized (clientEvents) { // the appender appends under its own lock
            events = List.copyOf(clientEvents.list);
        }
        events.stream().map(e -> java.time.Instant.ofEpochMilli(e.getTimeStamp()) + " " + e.getLevel() + " "
                        + e.getLoggerName().replaceAll(".*[.]", "") + " - " + e.getFormattedMessage())
                .filter(l -> l.contains("poch") || l.contains("roducerId") || l.contains("equence") || namesAny(l, firstStuck))
                .limit(150).forEach(System.out::println);
        System.out.println("(" + events.size() + " producer log lines in all)");
    }

    /** The whole broker logs, for a reading after the run (target/ survives the test's temporary directory). */
    private static void keepLogs(TestCluster cluster) throws IOException {
        Path keep = Path.of("target", "scale-cluster-failure");
        Files.createDirectories(keep);
        for (TestCluster.Node node : cluster.nodes()) {
            Files.copy(node.log, keep.resolve("node-" + node.id + ".log"), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        }
        System.out.println("node logs kept in " + keep.toAbsolutePath());
    }

    /** Whether {@code line} names one of {@code partitions} (scale-1 and not scale-10). */
    private static boolean namesAny(String line, java.util.Collection<String> partitions) {
        return PARTITION_NAME.matcher(line).results().anyMatch(r -> partitions.contains(r.group()));
    }

    private static void produce(TestCluster cluster, AckedRecords acked, ConcurrentLinkedQueue<Throwable> failures,
                                AtomicBoolean running) {
        try (KafkaProducer<String, String> producer = cluster.producer(Map.of(ProducerConfig.LINGER_MS_CONFIG, 20,
                // a batch waits out the resync rather than expire during it (nothing is lost either way:
                // an expired batch is a test failure, not a silent gap)
                ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, (int) RESYNC_BOUND.toMillis() + 60_000,
                ProducerConfig.MAX_BLOCK_MS_CONFIG, RESYNC_BOUND.toMillis() + 60_000))) {
            long seq = 0;
            while (running.get()) {
                int partition = (int) (seq % PARTITIONS);
                String value = AckedRecords.value(seq++);
                producer.send(new ProducerRecord<>(TOPIC, partition, null, value), (md, e) -> {
                    if (e != null) {
                        if (failures.isEmpty()) {
                            System.out.println(java.time.LocalTime.now() + " first producer error: " + e);
                        }
                        failures.add(e);
                    } else {
                        acked.add(md.partition(), value);
                    }
                });
                if (seq % PARTITIONS == 0) {
                    Thread.sleep(20); // about 40,000 records/s at most: keep the machine able to run three brokers
                }
            }
            producer.flush();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            failures.add(e);
        }
    }
}
