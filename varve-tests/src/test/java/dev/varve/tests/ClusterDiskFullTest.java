package dev.varve.tests;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A full disk on the leader of a 3-process cluster. The partition directory of node 3 (the preferred
 * leader of an RF=3, {@code min.insync.replicas=2} topic) is a 1 MiB tmpfs. An idempotent acks=all
 * producer writes until node 3's disk is full: its append fails with KAFKA_STORAGE_ERROR, node 3 asks
 * the controller to fence it, leadership moves to node 1 or 2, and the producer's retries succeed
 * there — no send fails, no acknowledged record is lost or duplicated. Then the tmpfs grows (space
 * returns) and node 3 is restarted: it rejoins the ISR with the leader's batches and, as preferred
 * replica, leads again with every record. Skipped where tmpfs cannot be mounted.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class ClusterDiskFullTest {
    private static final String TOPIC = "full";
    private static final int VICTIM = 3;

    @TempDir
    Path dir;

    @Test
    void leadershipMovesAwayFromAFullDiskAndTheNodeRejoinsAfterSpaceReturns() throws Exception {
        File mount = null;
        // heartbeats 15 s apart: a broker that waited for its next one would ask to be fenced seconds late
        try (TestCluster cluster = TestCluster.start(dir, 3, Map.of("broker.heartbeat.interval.ms", String.valueOf(HEARTBEAT_MS),
                "broker.session.timeout.ms", "45000")); Admin admin = cluster.admin()) {
            mount = dir.resolve("node-" + VICTIM).resolve("data").resolve(TOPIC + "-0").toFile();
            Files.createDirectories(mount.toPath());
            boolean mounted = run("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", mount.getAbsolutePath());
            if (!mounted) {
                mount = null;
            }
            Assumptions.assumeTrue(dev.varve.storage.testing.Capabilities.require(mounted, "a tmpfs mount (needs root)"),
                    "cannot mount a tmpfs here (needs root)");

            admin.createTopics(List.of(new NewTopic(TOPIC, Map.of(0, List.of(VICTIM, 1, 2)))
                    .configs(Map.of("min.insync.replicas", "2", "segment.bytes", "262144"))))
                    .all().get(30, TimeUnit.SECONDS);
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
                TopicPartitionInfo p = TestCluster.describe(admin, TOPIC).get(0);
                assertThat(p.isr()).hasSize(3);
                assertThat(TestCluster.leaderId(p)).isEqualTo(VICTIM);
            });

            // About 1.6 MB of records: node 3's 1 MiB fills up about half-way.
            List<String> acked = produce(cluster, 0, 400);
            long movedAtNanos = System.nanoTime();
            TopicPartitionInfo after = TestCluster.describe(admin, TOPIC).get(0);
            assertThat(TestCluster.leaderId(after)).as("leadership moved off the full disk").isIn(1, 2);
            assertThat(TestCluster.ids(after.isr())).doesNotContain(VICTIM).hasSize(2);
            assertThat(cluster.node(VICTIM).alive()).as("the broker did not crash").isTrue();
            String log = cluster.node(VICTIM).log();
            assertThat(log).contains("KAFKA_STORAGE_ERROR").contains("asking the controller to fence broker 3");
            // the failed directory is reported at once, not at the next heartbeat
            long failedAt = timeOfFirstLine(log, "its partitions answer KAFKA_STORAGE_ERROR");
            long fenceAskedAt = timeOfFirstLine(log, "asking the controller to fence broker 3");
            assertThat(fenceAskedAt - failedAt).as("ms from the log directory's failure to the fencing heartbeat")
                    .isBetween(0L, 1_000L);
            assertThat(cluster.readPartition(TOPIC, 0)).as("every acknowledged record, once, in order").isEqualTo(acked);

            // Space returns; node 3 is restarted (Kafka's rule too: a failed log directory stays offline until then).
            assertThat(run("mount", "-o", "remount,size=64m", mount.getAbsolutePath())).isTrue();
            assertThat(cluster.node(VICTIM).stop()).isZero();
            cluster.node(VICTIM).start();
            await().atMost(Duration.ofSeconds(60)).untilAsserted(() ->
                    assertThat(TestCluster.ids(TestCluster.describe(admin, TOPIC).get(0).isr())).contains(VICTIM));
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() ->
                    assertThat(TestCluster.leaderId(TestCluster.describe(admin, TOPIC).get(0))).isEqualTo(VICTIM));
            acked.addAll(produce(cluster, 400, 50));
            assertThat(cluster.readPartition(TOPIC, 0)).as("every acknowledged record, read from node 3").isEqualTo(acked);
            System.out.printf("ClusterDiskFullTest: %d records; rejoined %d ms after the move%n", acked.size(),
                    TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - movedAtNanos));
        } finally {
            if (mount != null) {
                run("umount", "-l", mount.getAbsolutePath());
            }
        }
    }

    private static final long HEARTBEAT_MS = 15_000;

    /** Milliseconds of the day of the first log line containing {@code text} (the node logs HH:mm:ss.SSS first). */
    private static long timeOfFirstLine(String log, String text) {
        for (String line : log.split("\n")) {
            if (line.contains(text) && line.length() > 12 && line.charAt(2) == ':') {
                java.time.LocalTime t = java.time.LocalTime.parse(line.substring(0, 12));
                return t.toNanoOfDay() / 1_000_000;
            }
        }
        throw new AssertionError("no log line contains '" + text + "'");
    }

    private static boolean run(String... command) {
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
            return p.waitFor(20, TimeUnit.SECONDS) && p.exitValue() == 0;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** Sends {@code count} records of about 4 KB (one at a time in flight per batch) and returns them once all are acknowledged. */
    private static List<String> produce(TestCluster cluster, int from, int count) throws Exception {
        Map<String, Object> cfg = new HashMap<>();
        cfg.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.allBootstrap());
        cfg.put(ProducerConfig.ACKS_CONFIG, "all");
        cfg.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        cfg.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        cfg.put(ProducerConfig.BATCH_SIZE_CONFIG, 16384);
        cfg.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 90_000);
        cfg.put(ProducerConfig.RETRY_BACKOFF_MS_CONFIG, 200);
        List<String> values = new ArrayList<>();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(cfg, new StringSerializer(), new StringSerializer())) {
            List<Future<RecordMetadata>> sends = new ArrayList<>();
            for (int i = from; i < from + count; i++) {
                String value = "v" + i + "-" + "z".repeat(4_000);
                values.add(value);
                sends.add(producer.send(new ProducerRecord<>(TOPIC, 0, "k" + i, value)));
                if (i % 20 == 19) {
                    Thread.sleep(20);
                }
            }
            for (Future<RecordMetadata> f : sends) {
                f.get(90, TimeUnit.SECONDS); // throws if any send failed
            }
        }
        return values;
    }
}
