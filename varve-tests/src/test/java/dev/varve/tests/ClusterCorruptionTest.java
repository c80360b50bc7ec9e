package dev.varve.tests;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.record.internal.FileLogInputStream.FileChannelRecordBatch;
import org.apache.kafka.common.record.internal.FileRecords;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Disk corruption on one node of a 3-process cluster. An RF=3, {@code min.insync.replicas=2}
 * partition whose preferred replica is node 3 takes acks=all writes; node 3 is stopped (SIGTERM,
 * so it even presents a clean-shutdown epoch), and on its disk bytes in the middle of a segment are
 * flipped, another segment is cut mid-batch, an index and a time index are overwritten with
 * garbage and its checkpoint files are mangled. More records are written while it is down. When it
 * starts again it must find the damage (CRC), register as after an unclean shutdown, stay out of the
 * ISR and away from leadership until it has fetched the rest from the leader, and then hold exactly
 * the leader's batches. Auto leader rebalancing then makes it leader again, and every acknowledged
 * record is read back, with its value, from it.
 */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class ClusterCorruptionTest {
    private static final String TOPIC = "corrupt";
    private static final int VICTIM = 3;

    @TempDir
    Path dir;

    @Test
    void aNodeWithCorruptFilesRepairsFromItsPeersBeforeItRejoinsTheIsrOrLeads() throws Exception {
        long startNanos = System.nanoTime();
        try (TestCluster cluster = TestCluster.start(dir, 3, Map.of()); Admin admin = cluster.admin()) {
            admin.createTopics(List.of(new NewTopic(TOPIC, Map.of(0, List.of(VICTIM, 1, 2)))
                    .configs(Map.of("min.insync.replicas", "2", "segment.bytes", "8192", "index.interval.bytes", "256"))))
                    .all().get(30, TimeUnit.SECONDS);
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
                TopicPartitionInfo p = TestCluster.describe(admin, TOPIC).get(0);
                assertThat(p.isr()).hasSize(3);
                assertThat(TestCluster.leaderId(p)).isEqualTo(VICTIM);
            });
            List<String> acked = new ArrayList<>();
            produce(cluster, acked, 0, 1_200);

            // Stop node 3 cleanly: leadership moves to node 1 (controlled shutdown).
            assertThat(cluster.node(VICTIM).stop()).isZero();
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
                TopicPartitionInfo p = TestCluster.describe(admin, TOPIC).get(0);
                assertThat(TestCluster.leaderId(p)).isIn(1, 2);
                assertThat(TestCluster.ids(p.isr())).doesNotContain(VICTIM);
            });
            File victimDir = partitionDir(VICTIM);
            List<File> segments = logFiles(victimDir);
            assertThat(segments.size()).as("segments of node 3").isGreaterThan(6);
            damage(victimDir, segments);

            produce(cluster, acked, 1_200, 500); // while node 3 is down
            int total = acked.size();

            cluster.node(VICTIM).start();
            // Until it holds everything it is neither in the ISR nor leader; then it rejoins.
            await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(100)).untilAsserted(() -> {
                TopicPartitionInfo p = TestCluster.describe(admin, TOPIC).get(0);
                if (!TestCluster.ids(p.isr()).contains(VICTIM)) {
                    assertThat(TestCluster.leaderId(p)).as("a replica outside the ISR never leads").isNotEqualTo(VICTIM);
                }
                assertThat(TestCluster.ids(p.isr())).contains(VICTIM);
            });
            // In the ISR means caught up to the high watermark: every acknowledged batch, the same bytes as the
            // two replicas that were never damaged (node 3 may already lead again: it is the preferred replica)
            int leader = TestCluster.leaderId(TestCluster.describe(admin, TOPIC).get(0));
            await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
                byte[] sound = allBatchBytes(partitionDir(1));
                assertThat(allBatchBytes(partitionDir(2))).isEqualTo(sound);
                assertThat(allBatchBytes(partitionDir(VICTIM))).isEqualTo(sound);
            });
            String log = cluster.node(VICTIM).log();
            assertThat(log).contains("failed verification").contains("were corrupt and are cut")
                    .contains("registering as after an unclean shutdown");

            assertThat(cluster.readPartition(TOPIC, 0)).as("every acknowledged record, read from leader %d", leader).isEqualTo(acked);

            // Node 3 is the preferred replica: auto leader rebalancing hands it the partition back.
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() ->
                    assertThat(TestCluster.leaderId(TestCluster.describe(admin, TOPIC).get(0))).isEqualTo(VICTIM));
            assertThat(cluster.readPartition(TOPIC, 0)).as("every acknowledged record, read from the repaired node 3").hasSize(total)
                    .isEqualTo(acked);
            produce(cluster, acked, 1_700, 100);
            assertThat(cluster.readPartition(TOPIC, 0)).isEqualTo(acked);
            System.out.printf("ClusterCorruptionTest: %d records; %d ms%n", acked.size(),
                    TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNanos));
        }
    }

    private File partitionDir(int node) {
        return dir.resolve("node-" + node).resolve("data").resolve(TOPIC + "-0").toFile();
    }

    private static List<File> logFiles(File partitionDir) {
        File[] files = partitionDir.listFiles((d, name) -> name.endsWith(".log"));
        assertThat(files).isNotNull();
        Arrays.sort(files);
        return List.of(files);
    }

    /**
     * Flips bytes in the middle of the third segment, cuts the fifth mid-batch (it follows the first
     * damage, so the load deletes it with every later segment), overwrites the first segment's index
     * and the second's time index with garbage (rebuilt, nothing cut), and mangles the checkpoints.
     */
    private static void damage(File partitionDir, List<File> segments) throws IOException {
        Random random = new Random(20261130);
        List<int[]> third = batchPositions(segments.get(2));
        int[] middle = third.get(third.size() / 2);
        try (RandomAccessFile raf = new RandomAccessFile(segments.get(2), "rw")) {
            for (int i = 0; i < 4; i++) {
                long pos = middle[0] + middle[1] / 2 + i;
                raf.seek(pos);
                int b = raf.read();
                raf.seek(pos);
                raf.write(b ^ 0xa5);
            }
        }
        List<int[]> fifth = batchPositions(segments.get(4));
        int[] torn = fifth.get(fifth.size() / 2);
        try (RandomAccessFile raf = new RandomAccessFile(segments.get(4), "rw")) {
            raf.setLength(torn[0] + torn[1] / 2);
        }
        garbage(indexOf(segments.get(0), ".index"), random);
        garbage(indexOf(segments.get(1), ".timeindex"), random);
        Files.writeString(new File(partitionDir, "leader-epoch-checkpoint").toPath(), "0\n3\n0 0\nrubbish\n");
        File data = partitionDir.getParentFile();
        Files.writeString(new File(data, "recovery-point-offset-checkpoint").toPath(), "0\n1\ncorrupt 0 x\n");
        Files.write(new File(data, "replication-offset-checkpoint").toPath(), new byte[]{(byte) 0xfe, 0x00, 0x13});
    }

    private static File indexOf(File logFile, String suffix) {
        String name = logFile.getName();
        return new File(logFile.getParentFile(), name.substring(0, name.length() - ".log".length()) + suffix);
    }

    private static void garbage(File file, Random random) throws IOException {
        long length = Math.max(24, file.length());
        byte[] junk = new byte[(int) length];
        random.nextBytes(junk);
        Files.write(file.toPath(), junk);
    }

    /** {position, size} of every batch of a segment. */
    private static List<int[]> batchPositions(File logFile) throws IOException {
        List<int[]> out = new ArrayList<>();
        try (FileRecords records = FileRecords.open(logFile, false)) {
            for (FileChannelRecordBatch b : records.batches()) {
                out.add(new int[]{b.position(), b.sizeInBytes()});
            }
        }
        assertThat(out.size()).isGreaterThan(2);
        return out;
    }

    /** Every batch of the partition's segments, in offset order, byte for byte (CRC-checked). */
    private static byte[] allBatchBytes(File partitionDir) throws IOException {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (File f : logFiles(partitionDir)) {
            try (FileRecords records = FileRecords.open(f, false)) {
                for (FileChannelRecordBatch b : records.batches()) {
                    b.ensureValid();
                    java.nio.ByteBuffer buffer = java.nio.ByteBuffer.allocate(b.sizeInBytes());
                    b.writeTo(buffer);
                    out.write(buffer.array());
                }
            }
        }
        return out.toByteArray();
    }

    private static void produce(TestCluster cluster, List<String> acked, int from, int count) throws Exception {
        Map<String, Object> cfg = new HashMap<>();
        cfg.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.allBootstrap());
        cfg.put(ProducerConfig.ACKS_CONFIG, "all");
        cfg.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        cfg.put(ProducerConfig.LINGER_MS_CONFIG, 2);
        cfg.put(ProducerConfig.BATCH_SIZE_CONFIG, 1024);
        cfg.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 60_000);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(cfg, new StringSerializer(), new StringSerializer())) {
            List<Future<?>> sends = new ArrayList<>();
            List<String> values = new ArrayList<>();
            for (int i = from; i < from + count; i++) {
                String value = "value-" + i + "-" + "x".repeat(20 + i % 37);
                values.add(value);
                sends.add(producer.send(new ProducerRecord<>(TOPIC, 0, "k" + i, value)));
            }
            for (Future<?> f : sends) {
                f.get(60, TimeUnit.SECONDS);
            }
            acked.addAll(values);
        }
    }
}
