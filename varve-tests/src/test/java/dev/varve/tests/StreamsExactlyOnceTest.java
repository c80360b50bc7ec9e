package dev.varve.tests;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListOffsetsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.StringJoiner;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A Kafka Streams 4.4 application with {@code processing.guarantee=exactly_once_v2}, unchanged, run as
 * a process of its own ({@link StreamsWordCountApp}): a word count over lines of words with null or
 * line-number keys, so the words are re-keyed through a repartition topic and counted in a state store
 * with a transactional changelog (the input offsets committed with the output through
 * {@code sendOffsetsToTransaction}). The application is killed with SIGKILL while lines are still
 * being produced and its transactions are open (checked: a partition's last stable offset is below its
 * high watermark right after the kill), then replaced by a new instance, on the same state directory
 * (same process id, so the same transactional id: its {@code initTransactions} fences and aborts the
 * dead one's transaction at once) or on an empty one (the store is restored from the changelog; the
 * dead instance's transaction is aborted by the coordinator when {@code transaction.timeout.ms}, 10 s
 * in Streams, has passed). This on one node, after a clean restart too, and on three broker processes
 * (RF 3) where a broker is killed with SIGKILL mid-run before the application is. A read_committed
 * reader of the output sees, for every word, counts that only rise and end at the word's number of
 * occurrences in the lines produced: nothing counted twice, nothing lost.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class StreamsExactlyOnceTest {
    private static final int WORDS = 20;
    private static final int PARTITIONS = 3;
    /** Abort timed-out transactions within a second of their timeout rather than within 10 s. */
    private static final Map<String, String> BROKER = Map.of(
            "transaction.state.log.num.partitions", "3",
            "transaction.abort.timed.out.transaction.cleanup.interval.ms", "1000");

    @TempDir
    Path dir;

    /** Line {@code i}: one to four words of {@code w0..w19}, sometimes one twice. */
    static String line(int i) {
        StringJoiner words = new StringJoiner(" ");
        for (int k = 0; k <= i % 4; k++) {
            words.add("w" + ((i * 7 + k * 10) % WORDS));
        }
        return words.toString();
    }

    /** Every word's number of occurrences in lines {@code 0..lines-1}. */
    static Map<String, Long> expected(int lines) {
        Map<String, Long> counts = new TreeMap<>();
        for (int i = 0; i < lines; i++) {
            for (String w : line(i).split(" ")) {
                counts.merge(w, 1L, Long::sum);
            }
        }
        return counts;
    }

    /**
     * Produces lines {@code from, from+1, ...}, keys alternately null and the line number, with an
     * idempotent producer (acks=all): {@link #produce} a fixed range, or {@link #start} producing in
     * the background until {@link #stop}.
     */
    private static final class Lines implements AutoCloseable {
        private final KafkaProducer<byte[], byte[]> producer;
        private final String topic;
        private final AtomicInteger next;
        private final AtomicReference<Exception> failure = new AtomicReference<>();
        private volatile boolean stopping;
        private Thread thread;

        Lines(String bootstrap, String topic, int from) {
            this.producer = Clients.producer(bootstrap, Map.of(ProducerConfig.ACKS_CONFIG, "all",
                    ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true, ProducerConfig.LINGER_MS_CONFIG, 5,
                    ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 120_000));
            this.topic = topic;
            this.next = new AtomicInteger(from);
        }

        private void send() {
            int i = next.getAndIncrement();
            byte[] key = i % 2 == 0 ? null : Integer.toString(i).getBytes(StandardCharsets.UTF_8);
            producer.send(new ProducerRecord<>(topic, key, line(i).getBytes(StandardCharsets.UTF_8)), (md, e) -> {
                if (e != null) {
                    failure.compareAndSet(null, e);
                }
            });
        }

        /** Produces up to line {@code to} (exclusive) and waits until all are acknowledged. */
        void produce(int to) {
            while (next.get() < to) {
                send();
            }
            flush();
        }

        /** Produces about 1,000 lines a second in the background. */
        void start() {
            stopping = false;
            thread = new Thread(() -> {
                while (!stopping) {
                    for (int k = 0; k < 20; k++) {
                        send();
                    }
                    try {
                        Thread.sleep(20);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            }, "lines");
            thread.start();
        }

        /** Stops the background producer, waits until every line sent is acknowledged; returns the next line's number. */
        int stop() throws InterruptedException {
            stopping = true;
            thread.join(30_000);
            flush();
            return next.get();
        }

        int next() {
            return next.get();
        }

        private void flush() {
            producer.flush();
            if (failure.get() != null) {
                throw new AssertionError("a line was not produced", failure.get());
            }
        }

        @Override
        public void close() {
            stopping = true;
            producer.close(Duration.ofSeconds(10));
        }
    }

    /** One instance of {@link StreamsWordCountApp} in a child JVM; its output goes to {@code log}. */
    private final class App implements AutoCloseable {
        final String name;
        final Path log;
        final Process process;

        App(String name, String bootstrap, String id, Path stateDir, String in, String out, int replication)
                throws IOException {
            this.name = name;
            this.log = dir.resolve(name + ".log");
            String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
            ProcessBuilder pb = new ProcessBuilder(java, "-Xmx256m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
                    StreamsWordCountApp.class.getName(), bootstrap, id, stateDir.toString(), in, out,
                    Integer.toString(replication))
                    .redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
                    .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
            // as KafkaTool: surefire's java.class.path is the test classpath
            pb.environment().put("CLASSPATH", System.getProperty("java.class.path"));
            this.process = pb.start();
        }

        /** SIGKILL, and wait until it is gone. */
        void kill() throws InterruptedException {
            assertThat(process.isAlive()).as("%s is running before it is killed\n%s", name, tail()).isTrue();
            process.destroyForcibly();
            assertThat(process.waitFor(30, TimeUnit.SECONDS)).as("%s gone after SIGKILL", name).isTrue();
        }

        /** SIGTERM: Streams closes cleanly (shutdown hook). */
        void stop() throws InterruptedException {
            process.destroy();
            assertThat(process.waitFor(60, TimeUnit.SECONDS)).as("%s stops within 60 s of SIGTERM\n%s", name, tail())
                    .isTrue();
        }

        void assertRunning() {
            if (!process.isAlive()) {
                throw new AssertionError(name + " exited with " + process.exitValue() + "\n" + tail());
            }
        }

        /** The end of what the process printed. */
        String tail() {
            try {
                String s = Files.readString(log, StandardCharsets.UTF_8);
                return "----- " + name + " (" + log + "), last 6000 chars -----\n"
                        + (s.length() <= 6000 ? s : s.substring(s.length() - 6000));
            } catch (IOException e) {
                return "(no output of " + name + ": " + e + ")";
            }
        }

        @Override
        public void close() throws InterruptedException {
            if (process.isAlive()) {
                process.destroyForcibly();
                process.waitFor(30, TimeUnit.SECONDS);
            }
        }
    }

    /** The counts of every word, in the order a read_committed reader of the output sees them. */
    private static Map<String, List<Long>> readCounts(String bootstrap, String topic) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        Map<String, List<Long>> counts = new HashMap<>();
        try (KafkaConsumer<String, Long> c = new KafkaConsumer<>(p, new StringDeserializer(), new LongDeserializer())) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int i = 0; i < PARTITIONS; i++) {
                tps.add(new TopicPartition(topic, i));
            }
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps);
            long deadline = System.currentTimeMillis() + 30_000;
            while (tps.stream().anyMatch(tp -> c.position(tp) < end.get(tp)) && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, Long> r : c.poll(Duration.ofMillis(100))) {
                    counts.computeIfAbsent(r.key(), k -> new ArrayList<>()).add(r.value());
                }
            }
        }
        return counts;
    }

    private static long last(List<Long> counts) {
        return counts == null || counts.isEmpty() ? 0 : counts.get(counts.size() - 1);
    }

    private static Map<String, Long> lastCounts(String bootstrap, String out) {
        Map<String, Long> last = new TreeMap<>();
        readCounts(bootstrap, out).forEach((w, l) -> last.put(w, last(l)));
        return last;
    }

    /** Waits (checking that the app runs) until every word's last committed count is what lines {@code 0..lines-1} give. */
    private static void awaitCounts(String bootstrap, String out, int lines, App app) throws InterruptedException {
        Map<String, Long> want = expected(lines);
        Map<String, Long> seen = Map.of();
        long deadline = System.currentTimeMillis() + 120_000;
        while (System.currentTimeMillis() < deadline) {
            app.assertRunning();
            seen = lastCounts(bootstrap, out);
            if (seen.equals(want)) {
                return;
            }
            Thread.sleep(500);
        }
        throw new AssertionError("counts of " + lines + " lines not reached in 120 s: want " + want + ", last seen "
                + seen + "\n" + app.tail());
    }

    /** Waits until the committed counts add up to more than {@code lines} lines' words: the app commits output of newer lines. */
    private static void awaitProgressPast(String bootstrap, String out, int lines, App app) throws InterruptedException {
        long words = expected(lines).values().stream().mapToLong(Long::longValue).sum();
        long deadline = System.currentTimeMillis() + 120_000;
        while (System.currentTimeMillis() < deadline) {
            app.assertRunning();
            if (lastCounts(bootstrap, out).values().stream().mapToLong(Long::longValue).sum() > words) {
                return;
            }
            Thread.sleep(200);
        }
        throw new AssertionError("no counts past " + lines + " lines committed in 120 s\n" + app.tail());
    }

    /** Every word's counts, as read_committed sees them, rise by at least one each time and end at their occurrences in {@code lines} lines. */
    private static void assertExact(String bootstrap, String out, int lines, App app) {
        Map<String, List<Long>> counts = readCounts(bootstrap, out);
        Map<String, Long> want = expected(lines);
        assertThat(counts.keySet()).as("words counted\n%s", app.tail()).isEqualTo(want.keySet());
        for (Map.Entry<String, List<Long>> e : counts.entrySet()) {
            List<Long> seen = e.getValue();
            for (int i = 1; i < seen.size(); i++) {
                assertThat(seen.get(i)).as("counts of %s rise, never repeat or fall: %s", e.getKey(), seen)
                        .isGreaterThan(seen.get(i - 1));
            }
            assertThat(last(seen)).as("final count of %s (%s lines)", e.getKey(), lines).isEqualTo(want.get(e.getKey()));
        }
    }

    /**
     * The partitions of the output, repartition and changelog topics whose last stable offset is below
     * their high watermark: an open transaction holds them back.
     */
    private static Map<TopicPartition, String> openTransactions(Admin admin, String id, String out) throws Exception {
        Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
        for (String topic : List.of(out, id + "-" + StreamsWordCountApp.REPARTITION + "-repartition",
                id + "-" + StreamsWordCountApp.STORE + "-changelog")) {
            for (int p = 0; p < PARTITIONS; p++) {
                latest.put(new TopicPartition(topic, p), OffsetSpec.latest());
            }
        }
        var stable = admin.listOffsets(latest, new ListOffsetsOptions(IsolationLevel.READ_COMMITTED)).all()
                .get(60, TimeUnit.SECONDS);
        var high = admin.listOffsets(latest, new ListOffsetsOptions(IsolationLevel.READ_UNCOMMITTED)).all()
                .get(60, TimeUnit.SECONDS);
        Map<TopicPartition, String> open = new TreeMap<>((a, b) -> a.toString().compareTo(b.toString()));
        stable.forEach((tp, lso) -> {
            long hw = high.get(tp).offset();
            if (lso.offset() < hw) {
                open.put(tp, "LSO " + lso.offset() + " < HW " + hw);
            }
        });
        return open;
    }

    /**
     * With lines being produced, waits until {@code app} has committed counts of lines produced after
     * {@code since} and has a transaction open, kills it with SIGKILL and checks that the transaction
     * is still open (the app commits every second, so the kill lands well inside it); more lines are
     * produced after the kill.
     */
    private static Set<String> killMidRun(String bootstrap, String id, String out, Lines lines, int since, App app)
            throws Exception {
        awaitProgressPast(bootstrap, out, since, app);
        try (Admin admin = Clients.admin(bootstrap)) {
            long deadline = System.currentTimeMillis() + 60_000;
            while (openTransactions(admin, id, out).isEmpty()) {
                app.assertRunning();
                assertThat(System.currentTimeMillis()).as("a transaction of %s open within 60 s\n%s", app.name,
                        app.tail()).isLessThan(deadline);
                Thread.sleep(20);
            }
            app.kill();
            int atKill = lines.next();
            Map<TopicPartition, String> open = openTransactions(admin, id, out);
            assertThat(open).as("the killed instance left a transaction open (lines produced so far: %s)\n%s", atKill,
                    app.tail()).isNotEmpty();
            Set<String> ongoing = transactionalIds(admin, id, true);
            assertThat(ongoing).as("the killed instance's transactional id, its transaction ongoing").hasSize(1);
            System.out.println(app.name + " (" + ongoing + ") killed with lines up to " + atKill
                    + " produced, transactions open on " + open);
            Thread.sleep(1_000);
            assertThat(lines.next()).as("lines produced after the kill").isGreaterThan(atKill);
            return ongoing;
        }
    }

    /** The application's transactional ids the coordinator knows, or only those with a transaction ongoing. */
    private static Set<String> transactionalIds(Admin admin, String id, boolean ongoing) throws Exception {
        return admin.listTransactions().all().get(60, TimeUnit.SECONDS).stream()
                .filter(t -> t.transactionalId().startsWith(id + "-"))
                .filter(t -> !ongoing || t.state() == TransactionState.ONGOING)
                .map(TransactionListing::transactionalId)
                .collect(Collectors.toCollection(TreeSet::new));
    }

    /** Checks which transactional ids the application has used. */
    private static void assertTransactionalIds(String bootstrap, String id, Set<String> expected) throws Exception {
        try (Admin admin = Clients.admin(bootstrap)) {
            assertThat(transactionalIds(admin, id, false)).isEqualTo(expected);
        }
    }

    /** The new instance has a transactional id of its own besides the killed one's. */
    private static void assertNewTransactionalId(String bootstrap, String id, Set<String> killed) throws Exception {
        try (Admin admin = Clients.admin(bootstrap)) {
            Set<String> all = transactionalIds(admin, id, false);
            assertThat(all).containsAll(killed).hasSize(killed.size() + 1);
        }
    }

    /**
     * A second instance on an empty state directory after the first was killed with {@code killed}
     * transactional ids: it catches up to {@code end} lines with a new transactional id, then counts 300
     * more, and every count is exact.
     */
    private void replaceOnEmptyStateDir(String bootstrap, String id, String in, String out, int replication, Lines lines,
                                        int end, Set<String> killed) throws Exception {
        try (App second = new App("app-2", bootstrap, id, dir.resolve("state-2"), in, out, replication)) {
            long started = System.currentTimeMillis();
            awaitCounts(bootstrap, out, end, second);
            System.out.println("app-2 caught up in " + (System.currentTimeMillis() - started) + " ms");
            assertNewTransactionalId(bootstrap, id, killed);
            lines.produce(end + 300);
            awaitCounts(bootstrap, out, end + 300, second);
            assertExact(bootstrap, out, end + 300, second);
        }
    }

    @Test
    void onOneNodeTheCountsStayExactAcrossACleanRestartAndAKillOfTheAppRestartedOnItsStateDir() throws Exception {
        try (TestBroker broker = TestBroker.start(dir.resolve("data"), BROKER)) {
            String bootstrap = broker.bootstrap();
            String in = TestBroker.unique("eos-in");
            String out = TestBroker.unique("eos-out");
            String id = TestBroker.unique("eos-app");
            Clients.createTopic(bootstrap, in, PARTITIONS, Map.of());
            Clients.createTopic(bootstrap, out, PARTITIONS, Map.of());
            Path state = dir.resolve("state");
            try (Lines lines = new Lines(bootstrap, in, 0)) {
                lines.produce(600);
                try (App first = new App("app-1", bootstrap, id, state, in, out, 1)) {
                    awaitCounts(bootstrap, out, 600, first);
                    first.stop(); // clean: the group left, the transaction committed
                }
                lines.produce(1_200);
                int end;
                Set<String> killed;
                try (App second = new App("app-2", bootstrap, id, state, in, out, 1)) {
                    awaitCounts(bootstrap, out, 1_200, second);
                    lines.start();
                    killed = killMidRun(bootstrap, id, out, lines, 1_200, second);
                    end = lines.stop();
                }
                // the same state directory: the same process id and transactional id
                try (App third = new App("app-3", bootstrap, id, state, in, out, 1)) {
                    long started = System.currentTimeMillis();
                    awaitCounts(bootstrap, out, end, third);
                    System.out.println("app-3 caught up in " + (System.currentTimeMillis() - started) + " ms");
                    lines.produce(end + 300);
                    awaitCounts(bootstrap, out, end + 300, third);
                    assertExact(bootstrap, out, end + 300, third);
                    assertTransactionalIds(bootstrap, id, killed);
                }
            }
        }
    }

    @Test
    void onOneNodeTheCountsStayExactWhenTheKilledAppIsReplacedOnAnEmptyStateDir() throws Exception {
        try (TestBroker broker = TestBroker.start(dir.resolve("data"), BROKER)) {
            String bootstrap = broker.bootstrap();
            String in = TestBroker.unique("eos-in");
            String out = TestBroker.unique("eos-out");
            String id = TestBroker.unique("eos-app");
            Clients.createTopic(bootstrap, in, PARTITIONS, Map.of());
            Clients.createTopic(bootstrap, out, PARTITIONS, Map.of());
            try (Lines lines = new Lines(bootstrap, in, 0)) {
                lines.produce(600);
                int end;
                Set<String> killed;
                try (App first = new App("app-1", bootstrap, id, dir.resolve("state-1"), in, out, 1)) {
                    awaitCounts(bootstrap, out, 600, first);
                    lines.start();
                    killed = killMidRun(bootstrap, id, out, lines, 600, first);
                    end = lines.stop();
                }
                // an empty state directory: the store restored from its changelog, a new transactional id
                replaceOnEmptyStateDir(bootstrap, id, in, out, 1, lines, end, killed);
            }
        }
    }

    @Test
    void onThreeBrokersTheCountsStayExactWhenABrokerAndThenTheAppAreKilledMidRun() throws Exception {
        Map<String, String> config = new HashMap<>(BROKER);
        config.put("offsets.topic.num.partitions", "3");
        config.put("group.initial.rebalance.delay.ms", "0");
        try (TestCluster cluster = TestCluster.start(dir, 3, config); Admin admin = cluster.admin()) {
            String bootstrap = cluster.allBootstrap();
            String in = "eos-in";
            String out = "eos-out";
            String id = "eos-cluster-app";
            for (String topic : List.of(in, out)) {
                TestCluster.createAndAwaitInSync(admin, new NewTopic(topic, PARTITIONS, (short) 3)
                        .configs(Map.of("min.insync.replicas", "2")), Duration.ofSeconds(60));
            }
            try (Lines lines = new Lines(bootstrap, in, 0)) {
                lines.produce(600);
                int end;
                Set<String> killed;
                try (App first = new App("app-1", bootstrap, id, dir.resolve("state-1"), in, out, 3)) {
                    awaitCounts(bootstrap, out, 600, first);
                    lines.start();
                    awaitProgressPast(bootstrap, out, 600, first);
                    cluster.node(2).kill(); // while the app is processing
                    int atBrokerKill = lines.next();
                    killed = killMidRun(bootstrap, id, out, lines, atBrokerKill, first);
                    end = lines.stop();
                }
                // an empty state directory, two brokers left: the store restored from the changelog
                replaceOnEmptyStateDir(bootstrap, id, in, out, 3, lines, end, killed);
            }
        }
    }
}
