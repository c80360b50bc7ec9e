package dev.varve.tests;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.GroupState;
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
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * kcat (librdkafka, a C client) against an in-process broker: 1000 keyed lines produced with
 * {@code kcat -P} under every compression codec (and once with librdkafka's idempotent producer)
 * come back identical from {@code kcat -C -o beginning -e} and from the Java consumer, with
 * contiguous offsets per partition; {@code kcat -L} lists the topic and its partitions; {@code kcat -G}
 * (librdkafka's balanced consumer) consumes a topic in a group, commits, resumes where it committed,
 * and two of them share the partitions. With {@code -Dvarve.tests.bootstrap} the tests run against that
 * broker instead (see {@link TestBroker}).
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
    private static TestBroker broker;
    private static String bootstrap;

    /** One message as kcat and the Java consumer see it. */
    record Message(int partition, long offset, String key, String value) {
    }

    @BeforeAll
    static void startBroker() throws Exception {
        assumeTrue(dev.varve.storage.testing.Capabilities.require(kcatAvailable(), "kcat on the PATH"),
                "kcat is not on the PATH (apt-get install kcat)");
        broker = TestBroker.start(tmp.resolve("data"), Map.of());
        bootstrap = broker.bootstrap();
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

    /**
     * {@code kcat -G}: librdkafka's balanced consumer (classic group protocol) reads every record once,
     * commits on exit, and a second run in the same group reads only what arrived since. Then two
     * {@code kcat -G} processes in one group split the partitions and together read each new record once.
     */
    @Test
    void kcatBalancedConsumersShareATopicInAGroup() throws Exception {
        String topic = TestBroker.unique("kcat-group");
        String group = TestBroker.unique("kcat-group");
        int partitions = 4;
        Clients.createTopic(bootstrap, topic, partitions, Map.of());
        List<Message> batch1 = produceLines(topic, partitions, 0, 400);

        List<String> balanced = List.of("kcat", "-b", bootstrap, "-G", group, topic, "-q",
                "-f", "%p|%o|%k|%s\\n", "-X", "session.timeout.ms=6000", "-X", "heartbeat.interval.ms=1000",
                "-X", "auto.commit.interval.ms=500", "-X", "auto.offset.reset=earliest");
        // Not "-o beginning": in -G mode kcat 1.7 applies it to every assigned partition, over the commits.
        List<String> untilEnd = new ArrayList<>(balanced);
        untilEnd.add("-e");
        Result first = kcat(untilEnd, null);
        assertThat(first.exitCode()).as("kcat -G -e: %s", first).isZero();
        assertThat(parse(first.stdout())).as(first.toString()).containsExactlyInAnyOrderElementsOf(batch1);
        try (Admin admin = Clients.admin(bootstrap)) {
            assertThat(GroupAssertions.committed(admin, group)).as("kcat committed on exit")
                    .isEqualTo(ends(topic, partitions, 400));
        }

        // Same group again: it resumes at the committed offsets.
        List<Message> batch2 = produceLines(topic, partitions, 400, 500);
        Result second = kcat(untilEnd, null);
        assertThat(second.exitCode()).as("kcat -G -e: %s", second).isZero();
        assertThat(parse(second.stdout())).as(second.toString()).containsExactlyInAnyOrderElementsOf(batch2);

        // Two members split the partitions; each new record is read once.
        Process one = null;
        Process two = null;
        Path out1 = tmp.resolve(group + "-1.out");
        Path out2 = tmp.resolve(group + "-2.out");
        try (Admin admin = Clients.admin(bootstrap)) {
            one = new ProcessBuilder(balanced).redirectOutput(out1.toFile())
                    .redirectError(tmp.resolve(group + "-1.err").toFile()).start();
            two = new ProcessBuilder(balanced).redirectOutput(out2.toFile())
                    .redirectError(tmp.resolve(group + "-2.err").toFile()).start();
            await("two kcat members with two partitions each").atMost(GroupAssertions.SETTLE)
                    .pollInterval(Duration.ofMillis(200)).untilAsserted(() -> {
                        ConsumerGroupDescription d = GroupAssertions.describe(admin, group);
                        assertThat(d.groupState()).as("%s", d).isEqualTo(GroupState.STABLE);
                        assertThat(d.members()).as("%s", d).hasSize(2);
                        assertThat(d.members()).as("%s", d)
                                .allSatisfy(m -> assertThat(m.assignment().topicPartitions()).hasSize(2));
                    });
            List<Message> batch3 = produceLines(topic, partitions, 500, 700);
            await("kcat members commit everything").atMost(GroupAssertions.SETTLE).pollInterval(Duration.ofMillis(200))
                    .untilAsserted(() -> assertThat(GroupAssertions.committed(admin, group))
                            .isEqualTo(ends(topic, partitions, 700)));
            stop(one);
            stop(two);
            List<Message> read1 = parse(Files.readString(out1, StandardCharsets.UTF_8));
            List<Message> read2 = parse(Files.readString(out2, StandardCharsets.UTF_8));
            assertThat(read1).as("the first member read something").isNotEmpty();
            assertThat(read2).as("the second member read something").isNotEmpty();
            assertThat(read1.stream().map(Message::partition).distinct())
                    .as("the members read disjoint partitions")
                    .doesNotContainAnyElementsOf(read2.stream().map(Message::partition).distinct().toList());
            List<Message> both = new ArrayList<>(read1);
            both.addAll(read2);
            assertThat(both).containsExactlyInAnyOrderElementsOf(batch3);
        } finally {
            for (Process p : new Process[]{one, two}) {
                if (p != null && p.isAlive()) {
                    p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
                }
            }
        }
    }

    /** Records {@code [from, to)}: record i is key-i:line i, in partition i % partitions. */
    private static List<Message> produceLines(String topic, int partitions, int from, int to) throws Exception {
        List<Message> out = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> producer = Clients.producer(bootstrap, Map.of())) {
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = from; i < to; i++) {
                sent.add(producer.send(new ProducerRecord<>(topic, i % partitions,
                        ("key-" + i).getBytes(StandardCharsets.UTF_8), ("line " + i).getBytes(StandardCharsets.UTF_8))));
            }
            for (int i = from; i < to; i++) {
                RecordMetadata md = sent.get(i - from).get(30, TimeUnit.SECONDS);
                out.add(new Message(md.partition(), md.offset(), "key-" + i, "line " + i));
            }
        }
        return out;
    }

    private static Map<TopicPartition, Long> ends(String topic, int partitions, int count) {
        Map<TopicPartition, Long> out = new HashMap<>();
        for (int p = 0; p < partitions; p++) {
            out.put(new TopicPartition(topic, p), (long) (count / partitions + (p < count % partitions ? 1 : 0)));
        }
        return out;
    }

    private static List<Message> parse(String output) {
        List<Message> out = new ArrayList<>();
        for (String line : output.split("\n")) {
            if (!line.isEmpty()) {
                String[] f = line.split("\\|", 4);
                assertThat(f).as("kcat output line %s", line).hasSize(4);
                out.add(new Message(Integer.parseInt(f[0]), Long.parseLong(f[1]), f[2], f[3]));
            }
        }
        return out;
    }

    /** SIGTERM: kcat closes its consumer (commits, leaves the group) and exits. */
    private static void stop(Process p) throws InterruptedException {
        p.destroy();
        if (!p.waitFor(30, TimeUnit.SECONDS)) {
            p.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            throw new AssertionError("kcat did not exit within 30 s of SIGTERM");
        }
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
