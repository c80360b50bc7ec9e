package dev.varve.cli.client;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static dev.varve.cli.client.IoTestSupport.createTopic;
import static dev.varve.cli.client.IoTestSupport.producer;
import static dev.varve.cli.client.IoTestSupport.utf8;
import static dev.varve.cli.client.IoTestSupport.withStdin;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code varve consume} end to end against a real broker. The topic "c-data" has two partitions of five
 * records each, produced by a plain producer: key "kP-I", value "vP-I", header h=I, timestamp T0 + I s.
 */
class ConsumeCommandTest {
    static final long T0 = 1_700_000_000_000L;
    static CliHarness cli;

    @BeforeAll
    static void start() throws Exception {
        cli = new CliHarness();
        createTopic(cli, "c-data", 2);
        try (KafkaProducer<byte[], byte[]> p = producer(cli)) {
            for (int part = 0; part < 2; part++) {
                for (int i = 0; i < 5; i++) {
                    p.send(new ProducerRecord<>("c-data", part, T0 + i * 1000L, utf8("k" + part + "-" + i), utf8("v" + part + "-" + i),
                            List.of(new RecordHeader("h", utf8(Integer.toString(i)))))).get();
                }
            }
        }
    }

    @AfterAll
    static void stop() throws Exception {
        cli.close();
    }

    private static List<String> lines(CliHarness.Result r) {
        assertThat(r.exit()).as(r.toString()).isZero();
        return r.out().lines().toList();
    }

    private static List<JsonNode> jsonLines(CliHarness.Result r) throws Exception {
        List<JsonNode> docs = new ArrayList<>();
        for (String line : lines(r)) {
            docs.add(new ObjectMapper().readTree(line));
        }
        return docs;
    }

    private static List<String> expected(int part, int from, int to) {
        List<String> v = new ArrayList<>();
        for (int i = from; i < to; i++) {
            v.add("v" + part + "-" + i);
        }
        return v;
    }

    private static List<String> both(int from, int to) {
        List<String> v = new ArrayList<>(expected(0, from, to));
        v.addAll(expected(1, from, to));
        return v;
    }

    @Test
    void readsEveryRecordFromTheStartAndExitsAtTheEnd() throws Exception {
        assertThat(lines(cli.run("consume", "c-data"))).containsExactlyInAnyOrderElementsOf(both(0, 5));
        List<String> p0 = lines(cli.run("consume", "c-data", "-p", "0", "--print", "partition,offset,key,value,headers,timestamp,topic"));
        assertThat(p0).hasSize(5);
        assertThat(p0.get(3)).isEqualTo("0\t3\tk0-3\tv0-3\th=3\t" + (T0 + 3000) + "\tc-data");
    }

    @Test
    void jsonPrintsOneObjectALineWithEveryField() throws Exception {
        List<JsonNode> docs = jsonLines(cli.run("consume", "c-data", "-p", "1", "-o", "json"));
        assertThat(docs).hasSize(5);
        JsonNode d = docs.get(2);
        assertThat(d.get("topic").asText()).isEqualTo("c-data");
        assertThat(d.get("partition").asInt()).isEqualTo(1);
        assertThat(d.get("offset").asLong()).isEqualTo(2);
        assertThat(d.get("timestamp").asLong()).isEqualTo(T0 + 2000);
        assertThat(d.get("key").asText()).isEqualTo("k1-2");
        assertThat(d.get("value").asText()).isEqualTo("v1-2");
        assertThat(d.get("headers").get(0).get("key").asText()).isEqualTo("h");
        assertThat(d.get("headers").get(0).get("value").asText()).isEqualTo("2");
        assertThat(docs).extracting(n -> n.get("offset").asLong()).containsExactly(0L, 1L, 2L, 3L, 4L);
    }

    @Test
    void theOffsetOptionPicksWhereEachPartitionStarts() throws Exception {
        assertThat(cli.run("consume", "c-data", "-O", "end").out()).isEmpty();
        assertThat(lines(cli.run("consume", "c-data", "-O", "3", "-p", "0"))).containsExactly("v0-3", "v0-4");
        assertThat(lines(cli.run("consume", "c-data", "--offset", "-2"))).containsExactlyInAnyOrderElementsOf(both(3, 5));
        assertThat(lines(cli.run("consume", "c-data", "-O", "+4"))).containsExactlyInAnyOrderElementsOf(both(4, 5));
        assertThat(lines(cli.run("consume", "c-data", "-O", "@" + (T0 + 2500)))).containsExactlyInAnyOrderElementsOf(both(3, 5));
        assertThat(lines(cli.run("consume", "c-data", "-O", "@" + (T0 + 60_000)))).isEmpty();
        assertThat(lines(cli.run("consume", "c-data", "-O", "100", "-p", "1"))).as("past the end: nothing").isEmpty();
        assertThat(lines(cli.run("consume", "c-data", "-O", "-100", "-p", "1"))).as("before the start: all").isEqualTo(expected(1, 0, 5));
        assertThat(lines(cli.run("consume", "c-data", "-n", "3", "-p", "0"))).containsExactly("v0-0", "v0-1", "v0-2");
    }

    @Test
    void binaryKeysAndValuesComeOutByteForByteInBase64AndHex() throws Exception {
        createTopic(cli, "c-bin", 1);
        Random random = new Random(7);
        List<byte[]> payloads = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            byte[] b = new byte[64 + i];
            random.nextBytes(b);
            b[0] = (byte) 0xff; // never valid UTF-8
            payloads.add(b);
        }
        StringBuilder in = new StringBuilder();
        for (byte[] p : payloads) {
            in.append(Base64.getEncoder().encodeToString(p)).append(' ').append(Base64.getEncoder().encodeToString(p)).append('\n');
        }
        // produced through the CLI too: bytes in, bytes out
        CliHarness.Result produced = withStdin(cli, utf8(in.toString()), "produce", "c-bin", "--format", "key-value",
                "--key-separator", " ", "--key-encoding", "base64", "--value-encoding", "base64", "-H", "origin=test");
        assertThat(produced.exit()).as(produced.toString()).isZero();

        CliHarness.Result yaml = cli.run("consume", "c-bin", "--decode", "base64", "-o", "yaml");
        assertThat(yaml.exit()).as(yaml.toString()).isZero();
        assertThat(yaml.out()).startsWith("---");
        List<JsonNode> docs = new YAMLMapper().readerFor(JsonNode.class).<JsonNode>readValues(yaml.out()).readAll();
        assertThat(docs).hasSize(4);
        for (int i = 0; i < 4; i++) {
            assertThat(Base64.getDecoder().decode(docs.get(i).get("value").asText())).isEqualTo(payloads.get(i));
            assertThat(Base64.getDecoder().decode(docs.get(i).get("key").asText())).isEqualTo(payloads.get(i));
            assertThat(docs.get(i).get("headers").get(0).get("key").asText()).isEqualTo("origin");
            assertThat(docs.get(i).get("headers").get(0).get("value").asText()).isEqualTo("test");
        }
        List<String> hex = lines(cli.run("consume", "c-bin", "--decode", "hex", "--print", "value"));
        for (int i = 0; i < 4; i++) {
            assertThat(java.util.HexFormat.of().parseHex(hex.get(i))).isEqualTo(payloads.get(i));
        }
        assertThat(lines(cli.run("consume", "c-bin", "-n", "1")).get(0)).as("invalid UTF-8 as \\xNN").startsWith("\\xff");
    }

    @Test
    void aGroupCommitsWhatItPrintedAndTheNextRunContinuesThere() throws Exception {
        createTopic(cli, "c-group", 1);
        try (KafkaProducer<byte[], byte[]> p = producer(cli)) {
            for (int i = 0; i < 6; i++) {
                p.send(new ProducerRecord<>("c-group", utf8("g" + i))).get();
            }
        }
        TopicPartition tp = new TopicPartition("c-group", 0);
        assertThat(lines(cli.run("consume", "c-group", "-g", "cli-group", "-n", "2"))).containsExactly("g0", "g1");
        assertThat(committed("cli-group").get(tp).offset()).isEqualTo(2);
        assertThat(lines(cli.run("consume", "c-group", "-g", "cli-group", "-O", "end"))).as("-O only where the group has no offset")
                .containsExactly("g2", "g3", "g4", "g5");
        assertThat(committed("cli-group").get(tp).offset()).isEqualTo(6);
        assertThat(lines(cli.run("consume", "c-group", "-g", "cli-group"))).isEmpty();
        assertThat(group("cli-group").groupState()).isEqualTo(GroupState.EMPTY);

        assertThat(lines(cli.run("consume", "c-group", "--group", "other-group", "-O", "-1"))).containsExactly("g5");
        assertThat(committed("other-group").get(tp).offset()).isEqualTo(6);
    }

    @Test
    void followReceivesRecordsProducedAfterItStartedUntilInterrupted() throws Exception {
        createTopic(cli, "c-follow", 2);
        try (KafkaProducer<byte[], byte[]> p = producer(cli)) {
            p.send(new ProducerRecord<>("c-follow", 0, null, utf8("before"))).get();
            try (IoTestSupport.Running consume = new IoTestSupport.Running(cli, "consume", "c-follow", "-f", "-g", "follower", "-o", "json")) {
                consume.awaitOutput(o -> o.contains("\"before\""));
                // the command is running: these come after it started and after it reached the end
                p.send(new ProducerRecord<>("c-follow", 1, null, utf8("after-1"))).get();
                p.send(new ProducerRecord<>("c-follow", 0, null, utf8("after-2"))).get();
                consume.awaitOutput(o -> o.contains("\"after-1\"") && o.contains("\"after-2\""));
                assertThat(consume.alive()).isTrue();
                CliHarness.Result r = consume.stop();
                assertThat(r.exit()).as(r.toString()).isZero();
                assertThat(r.err()).isEmpty();
                assertThat(jsonLines(r)).extracting(n -> n.get("value").asText()).containsExactlyInAnyOrder("before", "after-1", "after-2");
            }
        }
        // stopped cleanly: what it printed is committed and it left the group
        Map<TopicPartition, OffsetAndMetadata> committed = committed("follower");
        assertThat(committed.get(new TopicPartition("c-follow", 0)).offset()).isEqualTo(2);
        assertThat(committed.get(new TopicPartition("c-follow", 1)).offset()).isEqualTo(1);
        ConsumerGroupDescription g = group("follower");
        assertThat(g.members()).isEmpty();
        assertThat(g.groupState()).isEqualTo(GroupState.EMPTY);
    }

    @Test
    void ctrlCStopsAFollowingConsumerCleanly() throws Exception {
        createTopic(cli, "c-sigint", 1);
        try (KafkaProducer<byte[], byte[]> p = producer(cli)) {
            p.send(new ProducerRecord<>("c-sigint", utf8("first"))).get();
            p.send(new ProducerRecord<>("c-sigint", utf8("second"))).get();
        }
        // the real command in its own JVM, as typed in a terminal; Ctrl-C is SIGINT to it
        String javaBin = java.nio.file.Path.of(System.getProperty("java.home"), "bin", "java").toString();
        ProcessBuilder pb = new ProcessBuilder(javaBin, "-cp", System.getProperty("java.class.path"), "dev.varve.cli.VarveCommand",
                "consume", "c-sigint", "--follow", "-g", "sigint-group", "-b", cli.bootstrap());
        pb.environment().put("VARVE_CONFIG", cli.profiles.toString());
        pb.redirectError(cli.dir.resolve("sigint-stderr.txt").toFile());
        Process process = pb.start();
        try {
            java.io.BufferedReader out = new java.io.BufferedReader(new java.io.InputStreamReader(process.getInputStream(),
                    java.nio.charset.StandardCharsets.UTF_8));
            assertThat(out.readLine()).isEqualTo("first");
            assertThat(out.readLine()).isEqualTo("second");
            TopicPartition tp = new TopicPartition("c-sigint", 0);
            long deadline = System.nanoTime() + java.time.Duration.ofSeconds(10).toNanos();
            while (!committed("sigint-group").containsKey(tp) && System.nanoTime() < deadline) {
                Thread.sleep(50);
            }
            assertThat(group("sigint-group").members()).hasSize(1);

            Process kill = new ProcessBuilder("kill", "-INT", Long.toString(process.pid())).inheritIO().start();
            assertThat(kill.waitFor()).isZero();
            assertThat(process.waitFor(20, java.util.concurrent.TimeUnit.SECONDS)).as("stopped by SIGINT").isTrue();
            assertThat(process.exitValue()).isEqualTo(130);
            assertThat(out.readLine()).isNull();
            assertThat(java.nio.file.Files.readString(cli.dir.resolve("sigint-stderr.txt"))).isEmpty();
            assertThat(committed("sigint-group").get(tp).offset()).isEqualTo(2);
            ConsumerGroupDescription g = group("sigint-group");
            assertThat(g.members()).as("left the group on the way out").isEmpty();
        } finally {
            process.destroyForcibly();
        }
    }

    @Test
    void readCommittedSkipsAbortedTransactions() throws Exception {
        createTopic(cli, "c-tx", 1);
        try (KafkaProducer<byte[], byte[]> tx = new KafkaProducer<>(Map.of("bootstrap.servers", cli.bootstrap(),
                "key.serializer", org.apache.kafka.common.serialization.ByteArraySerializer.class,
                "value.serializer", org.apache.kafka.common.serialization.ByteArraySerializer.class,
                "transactional.id", "cli-consume-test"))) {
            tx.initTransactions();
            tx.beginTransaction();
            tx.send(new ProducerRecord<>("c-tx", utf8("aborted")));
            tx.flush();
            tx.abortTransaction();
            tx.beginTransaction();
            tx.send(new ProducerRecord<>("c-tx", utf8("committed")));
            tx.commitTransaction();
        }
        assertThat(lines(cli.run("consume", "c-tx", "--isolation", "read_committed"))).containsExactly("committed");
        assertThat(lines(cli.run("consume", "c-tx"))).containsExactly("aborted", "committed");
    }

    @Test
    void errorsSayWhatIsWrong() throws Exception {
        CliHarness.Result unknown = cli.run("consume", "c-data", "no-such-topic");
        assertThat(unknown.exit()).isEqualTo(1);
        assertThat(unknown.out()).isEmpty();
        assertThat(unknown.err()).isEqualTo("error: topic 'no-such-topic' does not exist (list topics with `varve topic list`)\n");
        assertThat(cli.admin.listTopics().names().get()).doesNotContain("no-such-topic");

        CliHarness.Result badOffset = cli.run("consume", "c-data", "-O", "soon");
        assertThat(badOffset.exit()).isEqualTo(2);
        assertThat(badOffset.err()).contains("'soon' is not an offset: use start, end, N, +N, -N or @TIMESTAMP_MS");
        assertThat(cli.run("consume", "c-data", "-O", "@yesterday").exit()).isEqualTo(2);

        CliHarness.Result partition = cli.run("consume", "c-data", "-p", "7");
        assertThat(partition.exit()).isEqualTo(1);
        assertThat(partition.err()).contains("topic 'c-data' has no partition 7: it has 2 (0-1)");

        CliHarness.Result groupAndPartition = cli.run("consume", "c-data", "-g", "x", "-p", "0");
        assertThat(groupAndPartition.exit()).isEqualTo(2);
        assertThat(groupAndPartition.err()).contains("--partition and --group do not go together");

        CliHarness.Result print = cli.run("consume", "c-data", "--print", "value,colour");
        assertThat(print.exit()).isEqualTo(2);
        assertThat(print.err()).contains("unknown field 'colour'");
    }

    private static Map<TopicPartition, OffsetAndMetadata> committed(String group) throws Exception {
        return cli.admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get();
    }

    private static ConsumerGroupDescription group(String group) throws Exception {
        return cli.admin.describeConsumerGroups(List.of(group)).all().get().get(group);
    }
}
