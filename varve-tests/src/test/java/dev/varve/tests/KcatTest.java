package dev.varve.tests;

import dev.varve.broker.Broker;
import dev.varve.broker.BrokerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * kcat (librdkafka, a C client) against an in-process broker: 1000 keyed lines produced with
 * {@code kcat -P} under every compression codec (and once with librdkafka's idempotent producer)
 * come back identical from {@code kcat -C -o beginning -e} and from the Java consumer, with
 * contiguous offsets per partition; {@code kcat -L} lists the topic and its partitions.
 *
 * <p>Skipped when {@code kcat} is not on the PATH; {@code .ci/run} installs it (Debian package {@code kcat}).
 */
@Timeout(180)
class KcatTest {
    private static final int LINES = 1000;
    private static final int PARTITIONS = 3;
    private static final long KCAT_TIMEOUT_SECONDS = 60;

    @TempDir
    static Path tmp;
    private static Broker broker;
    private static String bootstrap;

    /** One message as kcat and the Java consumer see it. */
    record Message(int partition, long offset, String key, String value) {
    }

    @BeforeAll
    static void startBroker() throws Exception {
        assumeTrue(kcatAvailable(), "kcat is not on the PATH (apt-get install kcat)");
        broker = Broker.start(BrokerConfig.from(Map.of(
                "listeners", "PLAINTEXT://127.0.0.1:0",
                "log.dirs", tmp.resolve("data").toString())));
        bootstrap = broker.bootstrapServers();
    }

    @AfterAll
    static void stopBroker() throws Exception {
        if (broker != null) {
            broker.close();
        }
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"none", "gzip", "snappy", "lz4", "zstd", "lz4+idempotence"})
    void linesProducedWithKcatComeBackIdentical(String variant) throws Exception {
        String topic = "kcat-" + variant.replace('+', '-');
        Clients.createTopic(bootstrap, topic, PARTITIONS, Map.of());
        List<String> keys = new ArrayList<>();
        List<String> values = new ArrayList<>();
        StringBuilder input = new StringBuilder();
        for (int i = 0; i < LINES; i++) {
            keys.add(String.format("key-%04d", i));
            values.add("line " + i + " of " + variant + " " + "x".repeat(i % 97));
            input.append(keys.get(i)).append(':').append(values.get(i)).append('\n');
        }
        Path in = tmp.resolve(topic + ".in");
        Files.writeString(in, input, StandardCharsets.UTF_8);

        List<String> produce = new ArrayList<>(List.of("kcat", "-P", "-b", bootstrap, "-t", topic, "-K", ":"));
        String codec = variant.replace("+idempotence", "");
        if (!codec.equals("none")) {
            produce.addAll(List.of("-z", codec));
        }
        if (variant.endsWith("+idempotence")) {
            produce.addAll(List.of("-X", "enable.idempotence=true"));
        }
        Result produced = kcat(produce, in);
        assertThat(produced.exitCode()).as("kcat -P: %s", produced).isZero();
        assertThat(produced.stderr()).as("kcat -P: %s", produced).doesNotContainIgnoringCase("error");

        // Consume everything back with kcat: partition|offset|key|value per line.
        Result consumed = kcat(List.of("kcat", "-C", "-b", bootstrap, "-t", topic, "-o", "beginning", "-e", "-q",
                "-f", "%p|%o|%k|%s\\n"), null);
        assertThat(consumed.exitCode()).as("kcat -C: %s", consumed).isZero();
        List<Message> viaKcat = new ArrayList<>();
        for (String line : consumed.stdout().split("\n")) {
            if (!line.isEmpty()) {
                String[] f = line.split("\\|", 4);
                assertThat(f).as("kcat output line %s", line).hasSize(4);
                viaKcat.add(new Message(Integer.parseInt(f[0]), Long.parseLong(f[1]), f[2], f[3]));
            }
        }
        assertThat(viaKcat).as("messages kcat read back").hasSize(LINES);
        Map<Integer, List<Message>> byPartition = new HashMap<>();
        for (Message m : viaKcat) {
            byPartition.computeIfAbsent(m.partition(), p -> new ArrayList<>()).add(m);
        }
        List<String> seenKeys = new ArrayList<>();
        for (Map.Entry<Integer, List<Message>> e : byPartition.entrySet()) {
            List<Message> messages = e.getValue();
            int previous = -1;
            for (int o = 0; o < messages.size(); o++) {
                Message m = messages.get(o);
                assertThat(m.offset()).as("offsets of partition %d are contiguous from 0", e.getKey()).isEqualTo(o);
                int index = Integer.parseInt(m.key().substring("key-".length()));
                assertThat(m.value()).as("value of %s", m.key()).isEqualTo(values.get(index));
                assertThat(index).as("partition %d keeps the produce order", e.getKey()).isGreaterThan(previous);
                previous = index;
                seenKeys.add(m.key());
            }
        }
        assertThat(seenKeys).as("every line exactly once").containsExactlyInAnyOrderElementsOf(keys);
        assertThat(byPartition.keySet()).as("keys hash over all partitions").hasSize(PARTITIONS);

        // The Java consumer reads librdkafka's batches the same way.
        viaKcat.sort(Comparator.comparing(Message::partition).thenComparing(Message::offset));
        assertThat(readWithJava(topic)).isEqualTo(viaKcat);
    }

    @Test
    void kcatListsTheTopicAndItsPartitions() throws Exception {
        Clients.createTopic(bootstrap, "kcat-listed", 4, Map.of());
        Result list = kcat(List.of("kcat", "-L", "-b", bootstrap, "-t", "kcat-listed"), null);
        assertThat(list.exitCode()).as("kcat -L: %s", list).isZero();
        assertThat(list.stdout()).as(list.toString())
                .contains("1 brokers:")
                .contains("topic \"kcat-listed\" with 4 partitions:");
        for (int p = 0; p < 4; p++) {
            assertThat(list.stdout()).as(list.toString())
                    .containsPattern("partition " + p + ", leader 1, replicas: 1, isrs: 1");
        }
        // Without -t: every topic, this one included.
        Result all = kcat(List.of("kcat", "-L", "-b", bootstrap), null);
        assertThat(all.exitCode()).as(all.toString()).isZero();
        assertThat(all.stdout()).as(all.toString()).contains("topic \"kcat-listed\" with 4 partitions:");
    }

    private static List<Message> readWithJava(String topic) {
        List<TopicPartition> tps = new ArrayList<>();
        for (int p = 0; p < PARTITIONS; p++) {
            tps.add(new TopicPartition(topic, p));
        }
        List<Message> out = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> consumer = Clients.consumer(bootstrap)) {
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            Map<TopicPartition, Long> ends = consumer.endOffsets(tps, Duration.ofSeconds(30));
            long deadline = System.currentTimeMillis() + 60_000;
            while (tps.stream().anyMatch(tp -> consumer.position(tp) < ends.get(tp))
                    && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
                    out.add(new Message(r.partition(), r.offset(), new String(r.key(), StandardCharsets.UTF_8),
                            new String(r.value(), StandardCharsets.UTF_8)));
                }
            }
        }
        out.sort(Comparator.comparing(Message::partition).thenComparing(Message::offset));
        return out;
    }

    record Result(int exitCode, String stdout, String stderr) {
        @Override
        public String toString() {
            return "exit code " + exitCode + "\n--- stdout ---\n" + head(stdout) + "\n--- stderr ---\n" + head(stderr);
        }

        private static String head(String s) {
            return s.length() <= 4000 ? s : s.substring(0, 4000) + "\n[... " + (s.length() - 4000) + " more chars]";
        }
    }

    private static Result kcat(List<String> command, Path stdin) throws IOException, InterruptedException {
        Path out = Files.createTempFile(tmp, "kcat", ".out");
        Path err = Files.createTempFile(tmp, "kcat", ".err");
        Process p = new ProcessBuilder(command)
                .redirectInput(stdin == null ? ProcessBuilder.Redirect.from(new File("/dev/null"))
                        : ProcessBuilder.Redirect.from(stdin.toFile()))
                .redirectOutput(out.toFile())
                .redirectError(err.toFile())
                .start();
        if (!p.waitFor(KCAT_TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
            p.destroyForcibly().waitFor();
            throw new AssertionError(command + " did not finish in " + KCAT_TIMEOUT_SECONDS + " s\n"
                    + Files.readString(err, StandardCharsets.UTF_8));
        }
        return new Result(p.exitValue(), Files.readString(out, StandardCharsets.UTF_8),
                Files.readString(err, StandardCharsets.UTF_8));
    }

    private static boolean kcatAvailable() {
        try {
            Process p = new ProcessBuilder("kcat", "-V").redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            return p.waitFor(10, TimeUnit.SECONDS) && p.exitValue() == 0;
        } catch (IOException | InterruptedException e) {
            return false;
        }
    }
}
