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
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.KafkaStorageException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A single-node broker whose log directory is a 2 MiB tmpfs: once it is full, a stock producer
 * (retries off, so the error is visible) gets KafkaStorageException — KAFKA_STORAGE_ERROR — for the
 * partition, the broker keeps serving everything it acknowledged, and when space returns the same
 * producer's next sends succeed without a restart. Skipped where tmpfs cannot be mounted.
 */
class DiskFullBrokerTest {
    @TempDir
    File tmp;
    private File mount;
    private boolean mounted;
    private Broker broker;

    @BeforeEach
    void start() throws Exception {
        mount = new File(tmp, "tiny");
        Files.createDirectories(mount.toPath());
        mounted = run("mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", mount.getAbsolutePath());
        Assumptions.assumeTrue(dev.varve.storage.testing.Capabilities.require(mounted, "a tmpfs mount (needs root)"),
                "cannot mount a tmpfs here (needs root)");
        broker = Broker.start(BrokerConfig.from(Map.of(
                "listeners", "PLAINTEXT://127.0.0.1:0",
                "log.dirs", new File(mount, "data").getAbsolutePath())));
    }

    @AfterEach
    void stop() throws Exception {
        if (broker != null) {
            broker.close();
        }
        if (mounted) {
            run("umount", "-l", mount.getAbsolutePath());
        }
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

    @Test
    void aFullDiskAnswersKafkaStorageErrorKeepsWhatWasWrittenAndRecoversWhenSpaceReturns() throws Exception {
        String bootstrap = broker.bootstrapServers();
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            admin.createTopics(List.of(new NewTopic("full", 1, (short) 1).configs(Map.of("segment.bytes", "262144"))))
                    .all().get(30, TimeUnit.SECONDS);
        }
        File filler = new File(mount, "filler");
        Files.write(filler.toPath(), new byte[512 * 1024]);

        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        pp.put(ProducerConfig.ACKS_CONFIG, "all");
        pp.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, false);
        pp.put(ProducerConfig.RETRIES_CONFIG, 0);
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        List<String> acked = new ArrayList<>();
        Throwable failure = null;
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp)) {
            for (int i = 0; i < 2_000 && failure == null; i++) {
                String value = i + "-" + "y".repeat(8_000);
                try {
                    producer.send(new ProducerRecord<>("full", 0, "k" + i, value)).get(30, TimeUnit.SECONDS);
                    acked.add(value);
                } catch (ExecutionException e) {
                    failure = e.getCause();
                }
            }
            assertThat(failure).as("the disk fills up").isInstanceOf(KafkaStorageException.class);
            assertThat(acked.size()).isGreaterThan(20);
            assertThat(broker.context().replicaManager().logManager().failedLogDirs()).hasSize(1);
            assertThat(readAll(bootstrap)).isEqualTo(acked);

            Files.delete(filler.toPath()); // space returns
            for (int i = 0; i < 10; i++) {
                String value = "after-" + i;
                producer.send(new ProducerRecord<>("full", 0, "k", value)).get(30, TimeUnit.SECONDS);
                acked.add(value);
            }
        }
        assertThat(readAll(bootstrap)).isEqualTo(acked);
    }

    private static List<String> readAll(String bootstrap) {
        Properties cp = new Properties();
        cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        List<String> values = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(cp)) {
            TopicPartition tp = new TopicPartition("full", 0);
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            long end = consumer.endOffsets(List.of(tp)).get(tp);
            long deadline = System.currentTimeMillis() + 30_000;
            while (consumer.position(tp) < end && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                    assertThat(r.offset()).isEqualTo(values.size());
                    values.add(r.value());
                }
            }
        }
        return values;
    }
}
