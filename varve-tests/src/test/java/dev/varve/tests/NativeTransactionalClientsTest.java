package dev.varve.tests;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.varve.storage.testing.Capabilities;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Transactional producers of two non-Java clients against an in-process broker, the transactions V1
 * protocol as they speak it: librdkafka 2.0.2 through python3-confluent-kafka 1.7.0
 * ({@code src/test/python/confluent_kafka_transactions.py}, run with {@code /usr/bin/python3}) and
 * kafkajs 2.2.4 ({@code src/test/js/kafkajs_transactions.js}, run with {@code /usr/bin/node}). The
 * scripts print what they did and what the broker answered as JSON lines; the test judges the topics
 * with Kafka's Java consumer:
 * <ul>
 *   <li>20 transactions of 50 records over 6 partitions, 8 of them aborted (two pairs back to back,
 *   the last one too): read_committed reads exactly the committed records, byte for byte, in order
 *   per partition, and stops at the same end as read_uncommitted (nothing left open);
 *   read_uncommitted reads every record, aborted ones included, at the offset the client was told.</li>
 *   <li>Fencing: a second producer with the same transactional.id fences the first; the first's next
 *   produce and commit (or its commit alone) fail with the client's fencing error, its open
 *   transaction is aborted before the second writes, and nothing it sent after the fence is in the log.</li>
 *   <li>Consume-transform-produce: a group consumer (read_committed) over an input topic that holds
 *   an aborted transaction of its own writes each record transformed to an output topic and commits
 *   its offsets in the producer's transaction (librdkafka's {@code send_offsets_to_transaction},
 *   kafkajs' {@code transaction.sendOffsets}); one transaction is aborted on purpose and redone. The
 *   group's committed offsets are the input's end offsets, and read_committed reads exactly one
 *   transformed copy of each committed input record, in order per partition.</li>
 * </ul>
 *
 * <p>Skipped when a client is missing; {@code .ci/run} installs both (Debian package
 * {@code python3-confluent-kafka}; {@code npm ci} in {@code src/test/js}), and with {@code CI=true}
 * a missing client fails the run. With {@code -Dvarve.tests.bootstrap} the tests run against that
 * broker instead (see {@link TestBroker}).
 */
@Timeout(180)
class NativeTransactionalClientsTest {
    private static final Path SRC = Path.of(System.getProperty("varve.tests.src", "src/test"));
    /** Bounds one script run; each script bounds its own waits at 30 s and its whole run at 60 s. */
    private static final long SCRIPT_TIMEOUT_SECONDS = 90;
    private static final ObjectMapper JSON = new ObjectMapper();

    private static final int PARTITIONS = 6;
    private static final int TRANSACTIONS = 20;
    private static final int RECORDS = 50;
    private static final Set<Integer> ABORTED = Set.of(1, 4, 5, 9, 12, 13, 17, 19);

    /** A non-Java client and how to run its script. */
    enum Client {
        LIBRDKAFKA("/usr/bin/python3", "python/confluent_kafka_transactions.py",
                List.of("/usr/bin/python3", "-c", "import confluent_kafka"),
                "python3-confluent-kafka for /usr/bin/python3 (apt-get install python3-confluent-kafka)"),
        KAFKAJS("/usr/bin/node", "js/kafkajs_transactions.js",
                List.of("/usr/bin/node", "-e", "require('kafkajs')"),
                "kafkajs for /usr/bin/node (npm ci in varve-tests/src/test/js)");

        final String interpreter;
        final String script;
        final List<String> probe;
        final String what;

        Client(String interpreter, String script, List<String> probe, String what) {
            this.interpreter = interpreter;
            this.script = script;
            this.probe = probe;
            this.what = what;
        }
    }

    @TempDir
    static Path tmp;
    private static TestBroker broker;
    private static String bootstrap;
    private static final Map<Client, Boolean> AVAILABLE = new EnumMap<>(Client.class);

    @BeforeAll
    static void startBroker() throws Exception {
        for (Client c : Client.values()) {
            AVAILABLE.put(c, probe(c));
        }
        broker = TestBroker.start(tmp.resolve("data"), Map.of("transaction.state.log.num.partitions", "5"));
        bootstrap = broker.bootstrap();
    }

    @AfterAll
    static void stopBroker() throws Exception {
        if (broker != null) {
            broker.close();
        }
    }

    private static void requireClient(Client c) {
        assumeTrue(Capabilities.require(AVAILABLE.get(c), c.what), c.what + " is missing");
    }

    // ---------------------------------------------------------------------------------------------
    // Committed and aborted transactions over several partitions
    // ---------------------------------------------------------------------------------------------

    @ParameterizedTest(name = "{0}")
    @EnumSource(Client.class)
    void readCommittedSeesExactlyTheCommittedTransactionsAndReadUncommittedSeesAll(Client client) throws Exception {
        requireClient(client);
        String topic = TestBroker.unique("native-txn-" + client.name().toLowerCase());
        Clients.createTopic(bootstrap, topic, PARTITIONS, Map.of());
        List<String> abort = ABORTED.stream().sorted().map(String::valueOf).toList();
        Run run = run(client, "transactions", "--bootstrap", bootstrap, "--topic", topic,
                "--partitions", Integer.toString(PARTITIONS), "--transactional-id", topic,
                "--transactions", Integer.toString(TRANSACTIONS), "--records", Integer.toString(RECORDS),
                "--abort", String.join(",", abort));

        List<String> outcomes = run.ofType("transaction").stream()
                .map(n -> n.get("t").asInt() + ":" + n.get("outcome").asText()).toList();
        List<String> expectedOutcomes = new ArrayList<>();
        for (int t = 0; t < TRANSACTIONS; t++) {
            expectedOutcomes.add(t + ":" + (ABORTED.contains(t) ? "aborted" : "committed"));
        }
        assertThat(outcomes).as("what the client reported per transaction\n%s", run).isEqualTo(expectedOutcomes);

        // Where the client was told each record landed: every record once, in the partition it chose.
        Map<TopicPartition, Map<Long, Rec>> delivered = new HashMap<>();
        for (JsonNode d : run.ofType("delivered")) {
            int t = d.get("t").asInt();
            int r = d.get("r").asInt();
            TopicPartition tp = new TopicPartition(topic, d.get("partition").asInt());
            assertThat(tp.partition()).as("partition of t%d r%d", t, r).isEqualTo(partitionOf(t, r));
            Rec previous = delivered.computeIfAbsent(tp, x -> new TreeMap<>())
                    .put(d.get("offset").asLong(), Rec.of(tp.partition(), d.get("offset").asLong(), "txn", t, r));
            assertThat(previous).as("two records reported at %s offset %d\n%s", tp, d.get("offset").asLong(), run).isNull();
        }
        assertThat(delivered.values().stream().mapToInt(Map::size).sum()).as("records reported delivered\n%s", run)
                .isEqualTo(TRANSACTIONS * RECORDS);

        // read_uncommitted: every record, aborted ones too, at the offset the client was told, byte for byte.
        Read uncommitted = read(topic, PARTITIONS, "read_uncommitted");
        for (int p = 0; p < PARTITIONS; p++) {
            TopicPartition tp = new TopicPartition(topic, p);
            assertThat(uncommitted.records(p)).as("read_uncommitted %s", tp)
                    .containsExactlyElementsOf(delivered.getOrDefault(tp, Map.of()).values());
        }

        // read_committed: exactly the committed records, in transaction order per partition, and the
        // same end as read_uncommitted (the last transaction was aborted, so nothing may stay open).
        Read committed = read(topic, PARTITIONS, "read_committed");
        assertThat(committed.ends()).as("read_committed end offsets (LSO) vs the log end").isEqualTo(uncommitted.ends());
        int total = 0;
        for (int p = 0; p < PARTITIONS; p++) {
            List<Rec> expected = new ArrayList<>();
            for (Rec rec : uncommitted.records(p)) {
                if (!ABORTED.contains(rec.t())) {
                    expected.add(rec);
                }
            }
            assertThat(committed.records(p)).as("read_committed partition %d", p).containsExactlyElementsOf(expected);
            assertThat(committed.records(p)).extracting(Rec::t).as("partition %d in transaction order", p).isSorted();
            total += expected.size();
        }
        assertThat(total).isEqualTo((TRANSACTIONS - ABORTED.size()) * RECORDS);
    }

    // ---------------------------------------------------------------------------------------------
    // Fencing
    // ---------------------------------------------------------------------------------------------

    static Stream<Arguments> fencing() {
        return Stream.of(Client.values()).flatMap(c -> Stream.of(Arguments.of(c, "produce"), Arguments.of(c, "commit")));
    }

    @ParameterizedTest(name = "{0} then {1}")
    @MethodSource("fencing")
    void aSecondProducerWithTheSameTransactionalIdFencesTheFirst(Client client, String then) throws Exception {
        requireClient(client);
        String topic = TestBroker.unique("native-fence-" + client.name().toLowerCase() + "-" + then);
        Clients.createTopic(bootstrap, topic, PARTITIONS, Map.of());
        Run run = run(client, "fencing", "--bootstrap", bootstrap, "--topic", topic,
                "--partitions", Integer.toString(PARTITIONS), "--transactional-id", topic, "--then", then);

        List<JsonNode> fenced = run.ofType("fenced");
        assertThat(fenced).as(run.toString()).hasSize(1);
        JsonNode f = fenced.get(0);
        if (client == Client.LIBRDKAFKA) {
            // librdkafka turns the broker's INVALID_PRODUCER_EPOCH (to Produce, or to EndTxn v1) into its
            // fatal _FENCED: the instance is unusable, as with Kafka.
            assertThat(f.get("commit_error").path("name").asText()).as("commit error\n%s", run).isEqualTo("_FENCED");
            assertThat(f.get("commit_error").path("fatal").asBoolean()).as("fatal\n%s", run).isTrue();
            assertThat(f.get("produce_error").isNull()).as("produce() queues; the failure comes with the commit\n%s", run)
                    .isTrue();
        } else {
            // kafkajs 2.2.4 speaks EndTxn v1, which predates PRODUCER_FENCED: INVALID_PRODUCER_EPOCH (Kafka's answer).
            assertThat(f.get("commit_error").path("type").asText()).as("commit error\n%s", run)
                    .isEqualTo("INVALID_PRODUCER_EPOCH");
            if (then.equals("produce")) {
                assertThat(f.get("produce_error").path("type").asText()).as("send error\n%s", run)
                        .isEqualTo("INVALID_PRODUCER_EPOCH");
            } else {
                assertThat(f.get("produce_error").isNull()).as(run.toString()).isTrue();
            }
        }

        Map<String, Rec> deliveredByPrefix = new HashMap<>();
        for (JsonNode d : run.ofType("delivered")) {
            Rec rec = Rec.of(d.get("partition").asInt(), d.get("offset").asLong(), d.get("prefix").asText(), 0, d.get("r").asInt());
            deliveredByPrefix.put(d.get("prefix").asText() + "/" + rec.partition(), rec);
        }
        Read uncommitted = read(topic, PARTITIONS, "read_uncommitted");
        Read committed = read(topic, PARTITIONS, "read_committed");
        assertThat(committed.ends()).as("nothing left open").isEqualTo(uncommitted.ends());
        for (int p = 0; p < PARTITIONS; p++) {
            Rec open = Rec.of(p, 0, "a-open", 0, p);
            Rec second = Rec.of(p, 2, "b", 0, p);
            // A's record, the marker that aborted A's transaction (offset 1), then B's record: the
            // coordinator finished the abort before B could write. Nothing A sent after the fence.
            assertThat(uncommitted.records(p)).as("read_uncommitted partition %d\n%s", p, run).containsExactly(open, second);
            assertThat(committed.records(p)).as("read_committed partition %d", p).containsExactly(second);
            assertThat(deliveredByPrefix.get("a-open/" + p)).as("reported offset of a-open/%d", p).isEqualTo(open);
            assertThat(deliveredByPrefix.get("b/" + p)).as("reported offset of b/%d", p).isEqualTo(second);
            assertThat(deliveredByPrefix).as("nothing of A's after the fence was acknowledged").doesNotContainKey("a-late/" + p);
        }
    }

    // ---------------------------------------------------------------------------------------------
    // Consume-transform-produce
    // ---------------------------------------------------------------------------------------------

    @ParameterizedTest(name = "{0}")
    @EnumSource(Client.class)
    void consumeTransformProduceCommitsTheGroupsOffsetsInTheTransaction(Client client) throws Exception {
        requireClient(client);
        String name = TestBroker.unique("native-ctp-" + client.name().toLowerCase());
        String input = name + "-in";
        String output = name + "-out";
        int partitions = 3;
        Clients.createTopic(bootstrap, input, partitions, Map.of());
        Clients.createTopic(bootstrap, output, partitions, Map.of());

        // The input: 300 committed records, 100 aborted, 300 committed, over every partition. The
        // script's read_committed consumer must skip the aborted ones.
        List<List<Rec>> committedInput = new ArrayList<>();
        for (int p = 0; p < partitions; p++) {
            committedInput.add(new ArrayList<>());
        }
        try (KafkaProducer<byte[], byte[]> producer = Clients.producer(bootstrap, Map.of(
                ProducerConfig.TRANSACTIONAL_ID_CONFIG, name + "-input", ProducerConfig.MAX_BLOCK_MS_CONFIG, 30_000))) {
            producer.initTransactions();
            int[][] ranges = {{0, 300}, {300, 400}, {400, 700}};
            for (int[] range : ranges) {
                boolean abort = range[0] == 300;
                producer.beginTransaction();
                for (int i = range[0]; i < range[1]; i++) {
                    int p = i % partitions;
                    Rec rec = Rec.of(p, -1, abort ? "in-aborted" : "in", 0, i);
                    producer.send(new ProducerRecord<>(input, p, rec.keyBytes(), rec.valueBytes()));
                    if (!abort) {
                        committedInput.get(p).add(rec);
                    }
                }
                if (abort) {
                    producer.flush();
                    producer.abortTransaction();
                } else {
                    producer.commitTransaction();
                }
            }
        }
        int expected = committedInput.stream().mapToInt(List::size).sum();
        assertThat(expected).isEqualTo(600);

        Run run = run(client, "ctp", "--bootstrap", bootstrap, "--input", input, "--output", output,
                "--group", name, "--transactional-id", name, "--expected", Integer.toString(expected));
        List<JsonNode> transactions = run.ofType("transaction");
        assertThat(transactions).as(run.toString()).isNotEmpty();
        assertThat(transactions.get(0).get("outcome").asText()).as("the first transaction is aborted on purpose\n%s", run)
                .isEqualTo("aborted");
        int abortedOutput = transactions.get(0).get("records").asInt();
        assertThat(abortedOutput).isPositive();
        assertThat(transactions.subList(1, transactions.size())).as(run.toString())
                .allSatisfy(t -> assertThat(t.get("outcome").asText()).isEqualTo("committed"));
        assertThat(transactions.subList(1, transactions.size()).stream().mapToInt(t -> t.get("records").asInt()).sum())
                .as("records in committed transactions\n%s", run).isEqualTo(expected);
        assertThat(run.ofType("done").get(0).get("processed").asInt()).isEqualTo(expected);

        try (Admin admin = Clients.admin(bootstrap)) {
            Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
            for (int p = 0; p < partitions; p++) {
                latest.put(new TopicPartition(input, p), OffsetSpec.latest());
            }
            Map<TopicPartition, Long> inputEnds = new HashMap<>();
            admin.listOffsets(latest).all().get(30, TimeUnit.SECONDS).forEach((tp, info) -> inputEnds.put(tp, info.offset()));
            Map<TopicPartition, Long> groupOffsets = new HashMap<>();
            Map<TopicPartition, OffsetAndMetadata> committedOffsets = admin.listConsumerGroupOffsets(name)
                    .partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
            committedOffsets.forEach((tp, om) -> groupOffsets.put(tp, om.offset()));
            assertThat(groupOffsets).as("the group's committed offsets are the input's ends (markers included)\n%s", run)
                    .isEqualTo(inputEnds);
        }

        Read outCommitted = read(output, partitions, "read_committed");
        Read outUncommitted = read(output, partitions, "read_uncommitted");
        assertThat(outCommitted.ends()).as("nothing left open").isEqualTo(outUncommitted.ends());
        int uncommittedTotal = 0;
        for (int p = 0; p < partitions; p++) {
            List<String> expectedOut = new ArrayList<>();
            for (Rec in : committedInput.get(p)) {
                expectedOut.add(in.key() + "=" + HexFormat.of().formatHex("out:".getBytes(StandardCharsets.US_ASCII))
                        + in.valueHex());
            }
            assertThat(outCommitted.records(p)).extracting(r -> r.key() + "=" + r.valueHex())
                    .as("read_committed output partition %d: one transformed copy of each committed input, in order", p)
                    .containsExactlyElementsOf(expectedOut);
            assertThat(outUncommitted.records(p)).extracting(r -> r.key() + "=" + r.valueHex())
                    .as("read_uncommitted output partition %d holds only transformed inputs", p)
                    .allMatch(expectedOut::contains);
            uncommittedTotal += outUncommitted.records(p).size();
        }
        assertThat(uncommittedTotal).as("read_uncommitted output: every committed copy plus the aborted transaction's")
                .isEqualTo(expected + abortedOutput);
    }

    // ---------------------------------------------------------------------------------------------
    // Records, reading, running the scripts
    // ---------------------------------------------------------------------------------------------

    static int partitionOf(int t, int r) {
        return (7 * t + r) % PARTITIONS;
    }

    /**
     * A record as the test compares it: partition, offset (-1 when not compared), key text, value bytes
     * in hex, and the transaction and index it came from (parsed back from the key).
     */
    record Rec(int partition, long offset, String key, String valueHex, int t) {
        /** The scripts' record {@code r} of transaction {@code t}, with the same bytes they write. */
        static Rec of(int partition, long offset, String prefix, int t, int r) {
            return new Rec(partition, offset, prefix + "-k-" + t + "-" + r, HexFormat.of().formatHex(value(prefix, t, r)), t);
        }

        static Rec read(ConsumerRecord<byte[], byte[]> r) {
            String key = new String(r.key(), StandardCharsets.US_ASCII);
            String[] parts = key.split("-k-")[1].split("-");
            return new Rec(r.partition(), r.offset(), key, HexFormat.of().formatHex(r.value()), Integer.parseInt(parts[0]));
        }

        /** Text, a separator and r % 23 bytes of every value, as the scripts build it. */
        static byte[] value(String prefix, int t, int r) {
            byte[] text = String.format("%s-t%02d-r%02d|", prefix, t, r).getBytes(StandardCharsets.US_ASCII);
            byte[] out = new byte[text.length + r % 23];
            System.arraycopy(text, 0, out, 0, text.length);
            for (int i = 0; i < r % 23; i++) {
                out[text.length + i] = (byte) ((t * 31 + r * 7 + i) % 256);
            }
            return out;
        }

        byte[] keyBytes() {
            return key.getBytes(StandardCharsets.US_ASCII);
        }

        byte[] valueBytes() {
            return HexFormat.of().parseHex(valueHex);
        }
    }

    /** What one consumer read: records by partition, and the end offsets it read up to. */
    record Read(Map<Integer, List<Rec>> byPartition, Map<TopicPartition, Long> ends) {
        List<Rec> records(int partition) {
            return byPartition.getOrDefault(partition, List.of());
        }
    }

    /** Reads every partition from the beginning to the end offsets this isolation level sees. */
    private static Read read(String topic, int partitions, String isolation) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        p.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 50);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        Map<Integer, List<Rec>> out = new TreeMap<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int i = 0; i < partitions; i++) {
                tps.add(new TopicPartition(topic, i));
            }
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            Map<TopicPartition, Long> ends = consumer.endOffsets(tps, Duration.ofSeconds(30));
            long deadline = System.currentTimeMillis() + 30_000;
            while (tps.stream().anyMatch(tp -> consumer.position(tp) < ends.get(tp))) {
                assertThat(System.currentTimeMillis()).as("%s consumer of %s reaching %s", isolation, topic, ends)
                        .isLessThan(deadline);
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(100))) {
                    out.computeIfAbsent(r.partition(), x -> new ArrayList<>()).add(Rec.read(r));
                }
            }
            for (TopicPartition tp : tps) {
                assertThat(consumer.position(tp)).as("%s position of %s", isolation, tp).isEqualTo(ends.get(tp));
            }
            return new Read(out, new HashMap<>(ends));
        }
    }

    /** One script run: its JSON lines and its stderr. */
    record Run(List<JsonNode> lines, String stdout, String stderr) {
        List<JsonNode> ofType(String type) {
            return lines.stream().filter(n -> type.equals(n.path("type").asText())).toList();
        }

        @Override
        public String toString() {
            return "--- stdout ---\n" + tail(stdout) + "\n--- stderr ---\n" + tail(stderr);
        }

        private static String tail(String s) {
            return s.length() <= 6000 ? s : "[... " + (s.length() - 6000) + " chars]\n" + s.substring(s.length() - 6000);
        }
    }

    /** Runs the client's script with {@code args}; fails with its output if it exits non-zero or times out. */
    private static Run run(Client client, String... args) throws IOException, InterruptedException {
        return run(tmp, client, client.script, args);
    }

    /**
     * Runs {@code script} (under src/test) with the client's interpreter, its output kept in {@code workDir};
     * as {@link #run(Client, String...)}.
     */
    static Run run(Path workDir, Client client, String script, String... args) throws IOException, InterruptedException {
        Path out = Files.createTempFile(workDir, client.name(), ".out");
        Path err = Files.createTempFile(workDir, client.name(), ".err");
        List<String> command = new ArrayList<>(List.of(client.interpreter, SRC.resolve(script).toString()));
        command.addAll(List.of(args));
        ProcessBuilder builder = new ProcessBuilder(command)
                .directory(SRC.resolve(script).getParent().toFile())
                .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
                .redirectOutput(out.toFile())
                .redirectError(err.toFile());
        builder.environment().put("KAFKAJS_NO_PARTITIONER_WARNING", "1");
        builder.environment().put("PYTHONUNBUFFERED", "1");
        builder.environment().put("PYTHONDONTWRITEBYTECODE", "1"); // no __pycache__ in the source tree
        Process process = builder.start();
        if (!process.waitFor(SCRIPT_TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
            process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            throw new AssertionError(command + " did not finish in " + SCRIPT_TIMEOUT_SECONDS + " s\n"
                    + new Run(List.of(), Files.readString(out), Files.readString(err)));
        }
        Run run = new Run(List.of(), Files.readString(out, StandardCharsets.UTF_8), Files.readString(err, StandardCharsets.UTF_8));
        if (process.exitValue() != 0) {
            throw new AssertionError(command + " exited with " + process.exitValue() + "\n" + run);
        }
        List<JsonNode> lines = new ArrayList<>();
        for (String line : run.stdout().split("\n")) {
            if (!line.isBlank()) {
                lines.add(JSON.readTree(line));
            }
        }
        Run parsed = new Run(lines, run.stdout(), run.stderr());
        assertThat(parsed.ofType("client")).as("the script names its client\n%s", parsed).hasSize(1);
        assertThat(parsed.ofType("done")).as("the script ran to its end\n%s", parsed).hasSize(1);
        return parsed;
    }

    static boolean probe(Client client) {
        try {
            Process p = new ProcessBuilder(client.probe).directory(SRC.resolve(client.script).getParent().toFile())
                    .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            if (!p.waitFor(30, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return false;
            }
            return p.exitValue() == 0;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }
}
