package dev.varve.tests;

import dev.varve.storage.testing.Capabilities;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.File;
import java.io.InputStreamReader;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The web console in a real browser: Debian's Chromium, driven by playwright-core from
 * {@code varve-console/src/test/e2e/console.e2e.mjs}, against the console of node 1 of a two-node cluster
 * of real processes (node 1 a controller and broker, node 2 a broker only, so that killing node 2 leaves
 * the metadata quorum whole). The script creates a topic through the page, changes a config, browses the
 * records this test produces, watches a consumer group's lag fall to zero while this test's consumer
 * reads, resets the group's offsets (refused while the consumer is a member), deletes a topic, and sees
 * node 2 offline once this test kills it. It asks for each of those actions ("@@ STEP" on its stdout) and
 * waits for this test's answer on its stdin. Screenshots go to {@code target/console-screenshots} (or
 * {@code -Dvarve.console.screenshots=DIR}; docs/screenshots holds a committed set).
 *
 * <p>Needs /usr/bin/node, Chromium ({@code /usr/bin/chromium}, or {@code CHROMIUM}) and playwright-core in
 * varve-console/src/main/web/node_modules (varve-console's build installs it); skipped without them, except
 * with CI=true, where that fails.
 */
class ConsoleBrowserTest {
    private static final Path WEB = Path.of("..", "varve-console", "src", "main", "web");
    private static final Path SCRIPT = Path.of("..", "varve-console", "src", "test", "e2e", "console.e2e.mjs");
    private static final Pattern ADMIN = Pattern.compile("admin listener on (http://[^ ]+) ");
    private static final long TIMEOUT_S = 150;

    @TempDir
    Path dir;

    @Test
    void theConsoleInABrowser() throws Exception {
        String chromium = System.getenv().getOrDefault("CHROMIUM", "/usr/bin/chromium");
        assumeTrue(Capabilities.require(new File(chromium).canExecute(), "Chromium at " + chromium + " (apt-get install chromium)"),
                "Chromium is missing at " + chromium + " (apt-get install chromium): the console's browser test is skipped");
        assumeTrue(Capabilities.require(new File("/usr/bin/node").canExecute(), "/usr/bin/node (apt-get install nodejs)"),
                "/usr/bin/node is missing: the console's browser test is skipped");
        assumeTrue(Capabilities.require(Files.isDirectory(WEB.resolve("node_modules/playwright-core")),
                        "playwright-core in " + WEB + "/node_modules (built by varve-console's npm ci)"),
                "playwright-core is not installed in " + WEB + "/node_modules (build varve-console first): skipped");
        Path shots = Path.of(System.getProperty("varve.console.screenshots", "target/console-screenshots"));

        try (TestCluster cluster = TestCluster.start(dir, 1, 1, Map.of());
             Admin admin = cluster.admin();
             Actions actions = new Actions(cluster, admin)) {
            String url = adminUrl(cluster.node(1));
            // the broker-only node's console sees the same cluster, and the controller it follows
            String other = java.net.http.HttpClient.newHttpClient().send(java.net.http.HttpRequest.newBuilder(
                    java.net.URI.create(adminUrl(cluster.node(2)) + "/api/overview")).timeout(Duration.ofSeconds(20)).build(),
                    java.net.http.HttpResponse.BodyHandlers.ofString()).body();
            assertThat(other).contains("\"controllerId\":1,\"nodeId\":2,").containsPattern("(\"status\":\"online\".*){2}");
            ProcessBuilder pb = new ProcessBuilder("/usr/bin/node", SCRIPT.toString(), url, shots.toString(), "2", "2")
                    .redirectErrorStream(true);
            pb.environment().put("NODE_PATH", WEB.resolve("node_modules").toAbsolutePath().normalize().toString());
            pb.environment().put("CHROMIUM", chromium);
            Process node = pb.start();
            StringBuilder output = new StringBuilder();
            Thread watchdog = new Thread(() -> {
                try {
                    if (!node.waitFor(TIMEOUT_S, TimeUnit.SECONDS)) {
                        output.append("\n(killed after ").append(TIMEOUT_S).append(" s)\n");
                        node.destroyForcibly();
                    }
                } catch (InterruptedException e) {
                    node.destroyForcibly();
                }
            });
            watchdog.setDaemon(true);
            watchdog.start();
            try (BufferedReader out = new BufferedReader(new InputStreamReader(node.getInputStream(), StandardCharsets.UTF_8));
                 Writer in = new java.io.OutputStreamWriter(node.getOutputStream(), StandardCharsets.UTF_8)) {
                for (String line; (line = out.readLine()) != null; ) {
                    output.append(line).append('\n');
                    System.out.println("[console e2e] " + line);
                    if (line.startsWith("@@ ")) {
                        actions.run(line.substring(3).trim().split(" "));
                        in.write("ok\n");
                        in.flush();
                    }
                }
            } catch (Throwable t) {
                node.destroyForcibly();
                throw new AssertionError("the browser test's step failed: " + t + "\n" + output, t);
            }
            assertThat(node.waitFor(30, TimeUnit.SECONDS)).isTrue();
            assertThat(node.exitValue()).as("node %s exited with %s; its output:%n%s%s", SCRIPT, node.exitValue(), output,
                    node.exitValue() == 0 ? "" : cluster.node(1).log()).isZero();
            assertThat(output).contains("e2e: all checks passed");
            for (String png : List.of("overview.png", "topics.png", "topic-detail.png", "groups.png", "group-detail.png",
                    "messages.png", "overview-broker-offline.png")) {
                assertThat(shots.resolve(png)).isNotEmptyFile();
            }
        }
    }

    /** The node's admin listener, from what its process logged. */
    private static String adminUrl(TestCluster.Node node) throws InterruptedException {
        long deadline = System.currentTimeMillis() + 30_000;
        while (System.currentTimeMillis() < deadline) {
            Matcher m = ADMIN.matcher(node.log());
            String url = null;
            while (m.find()) {
                url = m.group(1);
            }
            if (url != null) {
                return url;
            }
            Thread.sleep(100);
        }
        throw new AssertionError("node " + node.id + " logged no admin listener\n" + node.log());
    }

    /** What the browser script asks of the Java side. */
    private static final class Actions implements AutoCloseable {
        private final TestCluster cluster;
        private final Admin admin;
        private final AtomicBoolean stop = new AtomicBoolean();
        private final List<Thread> threads = new ArrayList<>();
        private final List<Throwable> failures = new java.util.concurrent.CopyOnWriteArrayList<>();
        private Thread consumer;
        private Thread traffic;
        private final AtomicBoolean consumerStop = new AtomicBoolean();
        private final AtomicBoolean trafficStop = new AtomicBoolean();

        Actions(TestCluster cluster, Admin admin) {
            this.cluster = cluster;
            this.admin = admin;
        }

        void run(String[] step) throws Exception {
            switch (step[0]) {
                case "produce" -> produce(step[1], Integer.parseInt(step[2]), step[3]);
                case "consume" -> consume(step[1], step[2]);
                case "stop-consumer" -> {
                    consumerStop.set(true);
                    consumer.join(30_000);
                    assertThat(consumer.isAlive()).as("the consumer did not stop").isFalse();
                }
                case "traffic" -> traffic(step[1]);
                case "kill" -> {
                    trafficStop.set(true);
                    if (traffic != null) {
                        traffic.join(30_000);
                    }
                    cluster.node(Integer.parseInt(step[1])).kill();
                }
                default -> throw new AssertionError("unknown step " + String.join(" ", step));
            }
            assertThat(failures).isEmpty();
        }

        /** {@code n} records, record i to partition i % 3; then the group committed at 0 everywhere: it lags by all. */
        private void produce(String topic, int n, String group) throws Exception {
            try (KafkaProducer<String, String> p = cluster.producer(Map.of())) {
                for (int i = 0; i < n; i++) {
                    p.send(new ProducerRecord<>(topic, i % 3, "order-" + i, "{\"id\":" + i + ",\"item\":\"widget-" + i + "\"}",
                            List.of(new RecordHeader("source", "e2e".getBytes(StandardCharsets.UTF_8)))));
                }
                p.flush();
            }
            Map<TopicPartition, OffsetAndMetadata> zero = new HashMap<>();
            for (int i = 0; i < 3; i++) {
                zero.put(new TopicPartition(topic, i), new OffsetAndMetadata(0));
            }
            admin.alterConsumerGroupOffsets(group, zero).all().get(30, TimeUnit.SECONDS);
        }

        /** A member of {@code group} that reads and commits until told to stop (then leaves the group). */
        private void consume(String topic, String group) {
            Map<String, Object> cfg = new HashMap<>(cluster.clientSecurity());
            cfg.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.allBootstrap());
            cfg.put(ConsumerConfig.GROUP_ID_CONFIG, group);
            cfg.put(ConsumerConfig.CLIENT_ID_CONFIG, "e2e-consumer");
            cfg.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
            consumer = start("e2e-consumer", () -> {
                try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cfg, new StringDeserializer(), new StringDeserializer())) {
                    c.subscribe(List.of(topic));
                    while (!consumerStop.get() && !stop.get()) {
                        if (!c.poll(Duration.ofMillis(200)).isEmpty()) {
                            c.commitSync(Duration.ofSeconds(10));
                        }
                    }
                }
            });
        }

        /** About 50 records a second until the kill (the overview's charts have something to draw). */
        private void traffic(String topic) {
            traffic = start("e2e-traffic", () -> {
                try (KafkaProducer<String, String> p = cluster.producer(Map.of())) {
                    for (int i = 0; !trafficStop.get() && !stop.get(); i++) {
                        p.send(new ProducerRecord<>(topic, i % 3, null, "tick-" + i));
                        Thread.sleep(20);
                    }
                }
            });
        }

        private interface Body {
            void run() throws Exception;
        }

        private Thread start(String name, Body body) {
            Thread t = new Thread(() -> {
                try {
                    body.run();
                } catch (Throwable e) {
                    failures.add(e);
                }
            }, name);
            t.setDaemon(true);
            t.start();
            threads.add(t);
            return t;
        }

        @Override
        public void close() throws InterruptedException {
            stop.set(true);
            for (Thread t : threads) {
                t.join(15_000);
            }
        }
    }
}
