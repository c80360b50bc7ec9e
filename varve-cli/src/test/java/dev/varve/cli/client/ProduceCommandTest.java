package dev.varve.cli.client;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static dev.varve.cli.client.IoTestSupport.createTopic;
import static dev.varve.cli.client.IoTestSupport.readAll;
import static dev.varve.cli.client.IoTestSupport.utf8;
import static dev.varve.cli.client.IoTestSupport.withStdin;
import static org.assertj.core.api.Assertions.assertThat;

/** {@code varve produce} end to end against a real broker: what arrives is checked with a plain consumer. */
class ProduceCommandTest {
    static CliHarness cli;

    @BeforeAll
    static void start() throws Exception {
        cli = new CliHarness();
    }

    @AfterAll
    static void stop() throws Exception {
        cli.close();
    }

    private static List<String> values(List<ConsumerRecord<byte[], byte[]>> records) {
        return records.stream().map(r -> utf8(r.value())).toList();
    }

    private static Map<String, String> headers(ConsumerRecord<byte[], byte[]> r) {
        Map<String, String> m = new java.util.LinkedHashMap<>();
        for (Header h : r.headers()) {
            m.put(h.key(), utf8(h.value()));
        }
        return m;
    }

    @Test
    void linesOfStdinBecomeValuesInOrderAndEmptyLinesAreSkippedUnlessAllowed() throws Exception {
        createTopic(cli, "p-lines", 1);
        CliHarness.Result r = withStdin(cli, utf8("one\ntwo\n\nthree héllo\n"), "produce", "p-lines");
        assertThat(r.exit()).as(r.toString()).isZero();
        assertThat(r.out().lines().toList()).containsExactly("Produced to partition 0 at offset 0",
                "Produced to partition 0 at offset 1", "Produced to partition 0 at offset 2");
        assertThat(values(readAll(cli, "p-lines"))).containsExactly("one", "two", "three héllo");

        CliHarness.Result empty = withStdin(cli, utf8("a\n\nb"), "produce", "p-lines", "--allow-empty", "--quiet");
        assertThat(empty.exit()).as(empty.toString()).isZero();
        assertThat(empty.out()).isEqualTo("Produced 3 records to p-lines\n");
        List<ConsumerRecord<byte[], byte[]>> all = readAll(cli, "p-lines");
        assertThat(values(all)).containsExactly("one", "two", "three héllo", "a", "", "b");
        assertThat(all.get(4).value()).isEmpty();
        assertThat(all.get(4).key()).isNull();
    }

    @Test
    void eachLineTypedIsConfirmedBeforeTheNextArrives() throws Exception {
        createTopic(cli, "p-typed", 1);
        java.io.PipedOutputStream typing = new java.io.PipedOutputStream();
        java.io.InputStream old = System.in;
        System.setIn(new java.io.PipedInputStream(typing));
        try (IoTestSupport.Running produce = new IoTestSupport.Running(cli, "produce", "p-typed")) {
            typing.write(utf8("hello\n"));
            typing.flush();
            produce.awaitOutput(o -> o.contains("Produced to partition 0 at offset 0"));
            typing.write(utf8("again\n"));
            typing.flush();
            produce.awaitOutput(o -> o.contains("Produced to partition 0 at offset 1"));
            assertThat(produce.alive()).as("still reading").isTrue();
            typing.close();
            produce.awaitExit();
        } finally {
            System.setIn(old);
        }
        assertThat(values(readAll(cli, "p-typed"))).containsExactly("hello", "again");
    }

    @Test
    void keyValueLinesWithHeadersReportTheirOffsetsAsJson() throws Exception {
        createTopic(cli, "p-kv", 3);
        CliHarness.Result r = withStdin(cli, utf8("k1=v1\nk2=v=2\nk1=v3\n"), "produce", "p-kv", "--format", "key-value",
                "--key-separator", "=", "-H", "trace=abc", "-H", "env=test", "--compression", "gzip", "-o", "json");
        assertThat(r.exit()).as(r.toString()).isZero();
        JsonNode json = r.json();
        assertThat(json).hasSize(3);
        List<ConsumerRecord<byte[], byte[]>> all = readAll(cli, "p-kv");
        assertThat(all).hasSize(3);
        for (int i = 0; i < 3; i++) {
            JsonNode row = json.get(i);
            assertThat(row.get("line").asInt()).isEqualTo(i + 1);
            ConsumerRecord<byte[], byte[]> stored = all.stream().filter(c -> c.partition() == row.get("partition").asInt()
                    && c.offset() == row.get("offset").asLong()).findFirst().orElseThrow();
            assertThat(utf8(stored.key())).isEqualTo(i == 1 ? "k2" : "k1");
            assertThat(utf8(stored.value())).isEqualTo(List.of("v1", "v=2", "v3").get(i));
            assertThat(row.get("timestamp").asLong()).isEqualTo(stored.timestamp());
            assertThat(headers(stored)).containsExactly(Map.entry("trace", "abc"), Map.entry("env", "test"));
        }
        // the same key lands in the same partition
        assertThat(json.get(0).get("partition").asInt()).isEqualTo(json.get(2).get("partition").asInt());
    }

    @Test
    void binaryValuesInBase64AndHexArriveByteForByte() throws Exception {
        createTopic(cli, "p-bin", 2);
        Random random = new Random(42);
        List<byte[]> payloads = new ArrayList<>();
        payloads.add(new byte[] {0, '\n', (byte) 0xff, (byte) 0xfe, '\t', 0});
        for (int i = 0; i < 3; i++) {
            byte[] b = new byte[100 + i * 37];
            random.nextBytes(b);
            payloads.add(b);
        }
        StringBuilder b64 = new StringBuilder();
        payloads.forEach(p -> b64.append(Base64.getEncoder().encodeToString(p)).append('\n'));
        CliHarness.Result r = withStdin(cli, utf8(b64.toString()), "produce", "p-bin", "--value-encoding", "base64",
                "-k", "fixed", "-p", "1", "--acks", "1");
        assertThat(r.exit()).as(r.toString()).isZero();

        StringBuilder hex = new StringBuilder();
        payloads.forEach(p -> hex.append(HexFormat.of().formatHex(p)).append(':').append(HexFormat.of().formatHex(p)).append('\n'));
        r = withStdin(cli, utf8(hex.toString()), "produce", "p-bin", "--format", "key-value", "--key-separator", ":",
                "--key-encoding", "hex", "--value-encoding", "hex", "-p", "0", "-o", "yaml");
        assertThat(r.exit()).as(r.toString()).isZero();
        assertThat(r.yaml()).hasSize(4);

        List<ConsumerRecord<byte[], byte[]>> all = readAll(cli, "p-bin");
        List<ConsumerRecord<byte[], byte[]>> p0 = all.stream().filter(c -> c.partition() == 0).toList();
        List<ConsumerRecord<byte[], byte[]>> p1 = all.stream().filter(c -> c.partition() == 1).toList();
        assertThat(p0).hasSize(4);
        assertThat(p1).hasSize(4);
        for (int i = 0; i < 4; i++) {
            assertThat(p1.get(i).value()).isEqualTo(payloads.get(i));
            assertThat(utf8(p1.get(i).key())).isEqualTo("fixed");
            assertThat(p0.get(i).value()).isEqualTo(payloads.get(i));
            assertThat(p0.get(i).key()).isEqualTo(payloads.get(i));
        }

        CliHarness.Result bad = withStdin(cli, utf8("aGk=\n%%%\n"), "produce", "p-bin", "--value-encoding", "base64");
        assertThat(bad.exit()).isEqualTo(1);
        assertThat(bad.err()).contains("line 2 of stdin").contains("not base64").contains("the 1 records before it were produced");
    }

    @Test
    void readsAFileWithACustomDelimiter() throws Exception {
        createTopic(cli, "p-file", 1);
        Path file = cli.dir.resolve("records.bin");
        Files.write(file, utf8("first\nwith a newline\0second\0\0third"));
        CliHarness.Result r = cli.run("produce", "p-file", "--file", file.toString(), "--delimiter", "\\0", "-o", "yaml");
        assertThat(r.exit()).as(r.toString()).isZero();
        JsonNode yaml = r.yaml();
        assertThat(yaml).hasSize(3);
        assertThat(yaml.get(2).get("line").asInt()).isEqualTo(4); // the empty record 3 was skipped
        assertThat(yaml.get(2).get("offset").asLong()).isEqualTo(2);
        assertThat(values(readAll(cli, "p-file"))).containsExactly("first\nwith a newline", "second", "third");

        Path multi = cli.dir.resolve("records.txt");
        Files.write(multi, utf8("a|||b||c|||"));
        r = cli.run("produce", "p-file", "--file", multi.toString(), "--delimiter", "|||", "-q");
        assertThat(r.exit()).as(r.toString()).isZero();
        assertThat(values(readAll(cli, "p-file"))).endsWith("a", "b||c");

        CliHarness.Result missing = cli.run("produce", "p-file", "--file", cli.dir.resolve("nope.txt").toString());
        assertThat(missing.exit()).isEqualTo(1);
        assertThat(missing.err()).startsWith("error: cannot read --file").contains("no such file");
    }

    @Test
    void jsonLinesSetKeysValuesHeadersPartitionsAndTimestamps() throws Exception {
        createTopic(cli, "p-json", 2);
        String input = """
                {"key":"a","value":"one","headers":{"h1":"x","h2":"y"},"partition":1,"timestamp":1700000000000}
                {"value":"two","partition":0}
                {"key":"c","value":null,"partition":0,"headers":[{"key":"dup","value":"1"},{"key":"dup","value":"2"}]}
                {"value":{"nested":[1,2]},"partition":0,"topic":"ignored","offset":99}
                """;
        CliHarness.Result r = withStdin(cli, utf8(input), "produce", "p-json", "--format", "json", "-o", "json");
        assertThat(r.exit()).as(r.toString()).isZero();
        assertThat(r.json()).hasSize(4);
        assertThat(r.json().get(0).get("timestamp").asLong()).isEqualTo(1700000000000L);

        List<ConsumerRecord<byte[], byte[]>> all = readAll(cli, "p-json");
        ConsumerRecord<byte[], byte[]> one = all.stream().filter(c -> c.partition() == 1).findFirst().orElseThrow();
        assertThat(utf8(one.key())).isEqualTo("a");
        assertThat(utf8(one.value())).isEqualTo("one");
        assertThat(one.timestamp()).isEqualTo(1700000000000L);
        assertThat(headers(one)).containsExactly(Map.entry("h1", "x"), Map.entry("h2", "y"));
        List<ConsumerRecord<byte[], byte[]>> p0 = all.stream().filter(c -> c.partition() == 0).toList();
        assertThat(p0).hasSize(3);
        assertThat(p0.get(0).key()).isNull();
        assertThat(utf8(p0.get(0).value())).isEqualTo("two");
        assertThat(p0.get(1).value()).as("a tombstone").isNull();
        assertThat(p0.get(1).headers().headers("dup")).extracting(h -> utf8(h.value())).containsExactly("1", "2");
        assertThat(utf8(p0.get(2).value())).isEqualTo("{\"nested\":[1,2]}");
    }

    @Test
    void anInvalidJsonLineStopsTheCommandAndSaysWhichLine() throws Exception {
        createTopic(cli, "p-badjson", 1);
        CliHarness.Result r = withStdin(cli, utf8("{\"value\":\"a\"}\n{\"value\": nope}\n{\"value\":\"c\"}\n"),
                "produce", "p-badjson", "--format", "json");
        assertThat(r.exit()).as(r.toString()).isEqualTo(1);
        assertThat(r.err()).startsWith("error: line 2 of stdin: invalid JSON").contains("the 1 records before it were produced");
        assertThat(r.err().lines().count()).isEqualTo(1);
        assertThat(values(readAll(cli, "p-badjson"))).containsExactly("a");

        CliHarness.Result noValue = withStdin(cli, utf8("{\"key\":\"k\"}\n"), "produce", "p-badjson", "--format", "json");
        assertThat(noValue.exit()).isEqualTo(1);
        assertThat(noValue.err()).contains("line 1 of stdin").contains("no \"value\" field").contains("nothing was produced");

        CliHarness.Result typo = withStdin(cli, utf8("{\"vlaue\":\"k\"}\n"), "produce", "p-badjson", "--format", "json");
        assertThat(typo.err()).contains("unknown field \"vlaue\"");

        CliHarness.Result badPartition = withStdin(cli, utf8("{\"value\":\"k\",\"partition\":5}\n"), "produce", "p-badjson", "--format", "json");
        assertThat(badPartition.exit()).isEqualTo(1);
        assertThat(badPartition.err()).contains("has no partition 5");
        assertThat(values(readAll(cli, "p-badjson"))).containsExactly("a");
    }

    @Test
    void aRecordTheBrokerRejectsFailsTheCommandWithTheReason() throws Exception {
        cli.admin.createTopics(List.of(new org.apache.kafka.clients.admin.NewTopic("p-small", 1, (short) 1)
                .configs(Map.of("max.message.bytes", "1000")))).all().get();
        String big = "x".repeat(5000);
        CliHarness.Result r = withStdin(cli, utf8("small\n" + big + "\nsmall again\n"), "produce", "p-small");
        assertThat(r.exit()).as(r.toString()).isEqualTo(1);
        assertThat(r.out()).contains("Produced to partition 0 at offset 0");
        assertThat(r.err()).contains("error: not produced: line 2:").contains("1 of 3 records were not produced");
        assertThat(values(readAll(cli, "p-small"))).containsExactly("small", "small again");
    }

    @Test
    void anUnknownTopicIsAnErrorAndIsNotCreated() throws Exception {
        CliHarness.Result r = withStdin(cli, utf8("x\n"), "produce", "no-such-topic");
        assertThat(r.exit()).isEqualTo(1);
        assertThat(r.err()).isEqualTo("error: topic 'no-such-topic' does not exist: create it with"
                + " `varve topic create no-such-topic` (list topics with `varve topic list`)\n");
        assertThat(cli.admin.listTopics().names().get()).doesNotContain("no-such-topic");
    }

    @Test
    void badOptionsAreUsageErrors() throws Exception {
        createTopic(cli, "p-usage", 1);
        CliHarness.Result acks = withStdin(cli, utf8("x\n"), "produce", "p-usage", "--acks", "2");
        assertThat(acks.exit()).isEqualTo(2);
        assertThat(acks.err()).contains("use --acks all, 1 or 0, not '2'");
        CliHarness.Result both = withStdin(cli, utf8("x\n"), "produce", "p-usage", "-k", "a", "--format", "key-value");
        assertThat(both.exit()).isEqualTo(2);
        assertThat(both.err()).contains("--key and --format key-value both set the key");
        CliHarness.Result partition = withStdin(cli, utf8("x\n"), "produce", "p-usage", "-p", "3");
        assertThat(partition.exit()).isEqualTo(1);
        assertThat(partition.err()).contains("topic 'p-usage' has no partition 3: it has 1");
        CliHarness.Result noSep = withStdin(cli, utf8("novalue\n"), "produce", "p-usage", "--format", "key-value");
        assertThat(noSep.exit()).isEqualTo(1);
        assertThat(noSep.err()).contains("line 1 of stdin: no key separator");
        assertThat(readAll(cli, "p-usage")).isEmpty();
    }
}
