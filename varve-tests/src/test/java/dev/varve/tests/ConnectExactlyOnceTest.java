package dev.varve.tests;

import com.fasterxml.jackson.databind.JsonNode;
import dev.varve.tests.connect.SequenceSourceConnector;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.CleanupMode;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.LongStream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Kafka Connect 4.4 in distributed mode with {@code exactly.once.source.support=enabled} (KIP-618),
 * unchanged, on three Varve broker processes (RF 3; Connect's config, offsets and status topics made
 * by the workers): two worker processes run a source connector with {@code exactly.once.support=required}
 * and {@code transaction.boundary=interval} (1 s), whose two tasks each emit a numbered sequence with
 * source offsets ({@link SequenceSourceConnector}). Mid-run, the worker running task 0 is killed with
 * SIGKILL and started again; the worker running task 1 is stopped with SIGSTOP until its task runs on
 * the other worker, then resumed (a zombie, whose producer must be fenced); then a broker is killed
 * with SIGKILL. A read_committed reader finds every number of every task exactly once and in order in
 * its partition, while the log also holds aborted records; the connector and its tasks are RUNNING and
 * the source offsets Connect committed (in the same transactions, KIP-875's REST API) are the last
 * numbers.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class ConnectExactlyOnceTest {
    private static final int TASKS = 2;
    private static final long RECORDS = 4_000;
    private static final String CONNECTOR = "seq";
    private static final String OUT = "seq-out";

    /** Kept when the test fails: the workers' and brokers' logs are there. */
    @TempDir(cleanup = CleanupMode.ON_SUCCESS)
    Path dir;

    private static Map<String, String> workerConfig(String bootstrap) {
        Map<String, String> c = new HashMap<>();
        c.put("bootstrap.servers", bootstrap);
        c.put("group.id", "varve-connect");
        c.put("exactly.once.source.support", "enabled");
        c.put("config.storage.topic", "connect-configs");
        c.put("offset.storage.topic", "connect-offsets");
        c.put("status.storage.topic", "connect-status");
        c.put("config.storage.replication.factor", "3");
        c.put("offset.storage.replication.factor", "3");
        c.put("status.storage.replication.factor", "3");
        c.put("offset.storage.partitions", "3");
        c.put("status.storage.partitions", "3");
        c.put("key.converter", "org.apache.kafka.connect.storage.StringConverter");
        c.put("value.converter", "org.apache.kafka.connect.storage.StringConverter");
        // a killed worker leaves the group within seconds, and its tasks are reassigned at once
        c.put("session.timeout.ms", "6000");
        c.put("heartbeat.interval.ms", "1000");
        c.put("scheduled.rebalance.max.delay.ms", "2000");
        c.put("offset.flush.interval.ms", "1000");
        c.put("task.shutdown.graceful.timeout.ms", "2000");
        return c;
    }

    private static Map<String, Object> connectorConfig() {
        Map<String, String> c = new HashMap<>();
        c.put("connector.class", SequenceSourceConnector.class.getName());
        c.put("tasks.max", Integer.toString(TASKS));
        c.put("exactly.once.support", "required");
        // transactions of three seconds' records: a worker killed or paused has one open with records sent
        // (with one-second transactions a CI run saw all three faults land with nothing sent since a commit)
        c.put("transaction.boundary", "interval");
        c.put("transaction.boundary.interval.ms", "3000");
        c.put("topic", OUT);
        c.put("records", Long.toString(RECORDS));
        c.put("batch", "5"); // about 100 records a second per task: the run outlasts the faults
        c.put("poll.sleep.ms", "50");
        return Map.of("name", CONNECTOR, "config", c);
    }

    @Test
    void twoWorkersOnThreeBrokersEmitEveryNumberOnceAcrossAWorkerKillAZombieWorkerAndABrokerKill() throws Exception {
        try (TestCluster cluster = TestCluster.start(dir.resolve("cluster"), 3, Map.of(
                "transaction.state.log.num.partitions", "3", "offsets.topic.num.partitions", "3",
                "group.initial.rebalance.delay.ms", "0"));
             Admin admin = cluster.admin()) {
            String bootstrap = cluster.allBootstrap();
            TestCluster.createAndAwaitInSync(admin, new NewTopic(OUT, TASKS, (short) 3)
                    .configs(Map.of("min.insync.replicas", "2")), Duration.ofSeconds(60));
            ConnectWorker a = new ConnectWorker(dir.resolve("connect"), "worker-a", workerConfig(bootstrap));
            ConnectWorker b = new ConnectWorker(dir.resolve("connect"), "worker-b", workerConfig(bootstrap));
            try (a; b) {
                try {
                    run(cluster, a, b);
                } catch (Throwable t) {
                    throw new AssertionError(t + "\n(logs kept in " + dir + ")\n" + a.logTail(150) + "\n" + b.logTail(150), t);
                }
            }
        }
    }

    private void run(TestCluster cluster, ConnectWorker a, ConnectWorker b) throws Exception {
        String bootstrap = cluster.allBootstrap();
        a.start();
        awaitRest(a);
        b.start();
        awaitRest(b);
        ConnectWorker.Response created = a.post("/connectors", connectorConfig());
        assertThat(created.status()).as("POST /connectors: %s", created.body()).isEqualTo(201);
        Map<Integer, String> hosts = awaitRunning(a);
        awaitCommitted(bootstrap, 300);

        // SIGKILL the worker running task 0 mid-transaction; its open transaction must never be read
        ConnectWorker victim = byId(hosts.get(0), a, b);
        assertMidRun(bootstrap, 0);
        victim.kill();
        victim.start();
        awaitRest(victim);
        awaitRunning(other(victim, a, b));
        awaitAdvance(bootstrap, 200);

        // SIGSTOP the worker running task 1 until its task runs elsewhere, then SIGCONT: the zombie's
        // producer must be fenced (KIP-618 zombie fencing through Admin.fenceProducers -> InitProducerId)
        hosts = awaitRunning(a);
        ConnectWorker zombie = byId(hosts.get(1), a, b);
        ConnectWorker survivor = other(zombie, a, b);
        assertMidRun(bootstrap, 1);
        zombie.pause();
        await().atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(500)).ignoreExceptions().untilAsserted(() ->
                assertThat(awaitRunning(survivor).get(1)).as("task 1 moved off the paused worker").isNotEqualTo(zombie.id()));
        awaitAdvance(bootstrap, 100);
        zombie.resume();
        awaitRunning(survivor);
        awaitAdvance(bootstrap, 100);

        assertMidRun(bootstrap, 0, 1);
        cluster.node(2).kill(); // a broker, with whatever partitions and coordinators it had
        await().atMost(Duration.ofSeconds(180)).pollInterval(Duration.ofSeconds(1)).ignoreExceptions().untilAsserted(() ->
                assertThat(lastValues(bootstrap)).as("last committed value per partition")
                        .isEqualTo(expectedLast()));

        Map<Integer, List<String>> read = readCommitted(bootstrap);
        for (int task = 0; task < TASKS; task++) {
            int t = task;
            List<String> expected = LongStream.range(0, RECORDS).mapToObj(n -> t + ":" + n).toList();
            assertThat(read.get(task)).as("partition %d under read_committed: every number once, in order", task)
                    .containsExactlyElementsOf(expected);
        }
        // the faults left transactions open that were aborted (the SIGKILLed task's, the zombie's):
        // their records are in the log, and read_committed skipped them
        Map<Integer, List<String>> all = read(bootstrap, "read_uncommitted");
        long written = all.values().stream().mapToLong(List::size).sum();
        System.err.println("ConnectExactlyOnceTest: " + written + " records in the log, " + TASKS * RECORDS + " committed");
        assertThat(written).as("records written, aborted ones included").isGreaterThan(TASKS * RECORDS);
        awaitRunning(a);
        awaitRunning(b);
        assertThat(committedOffsets(a)).as("source offsets Connect committed").isEqualTo(expectedLast());
    }

    /** The fault about to come hits {@code tasks} still producing: their partitions are not complete yet. */
    private static void assertMidRun(String bootstrap, int... tasks) {
        Map<Integer, Long> last = lastValues(bootstrap);
        System.err.println("ConnectExactlyOnceTest: fault with last committed numbers " + last);
        for (int task : tasks) {
            assertThat(last.get(task)).as("task %d still running when the fault comes", task).isLessThan(RECORDS - 1);
        }
    }

    private static ConnectWorker byId(String workerId, ConnectWorker... workers) {
        for (ConnectWorker w : workers) {
            if (w.id().equals(workerId)) {
                return w;
            }
        }
        throw new AssertionError("no worker " + workerId);
    }

    private static ConnectWorker other(ConnectWorker w, ConnectWorker a, ConnectWorker b) {
        return w == a ? b : a;
    }

    private static Map<Integer, Long> expectedLast() {
        Map<Integer, Long> m = new HashMap<>();
        for (int t = 0; t < TASKS; t++) {
            m.put(t, RECORDS - 1);
        }
        return m;
    }

    private static void awaitRest(ConnectWorker w) {
        await().atMost(Duration.ofSeconds(90)).pollInterval(Duration.ofMillis(500)).ignoreExceptions().until(() -> {
            if (!w.alive()) {
                throw new AssertionError(w.name + " exited");
            }
            return w.get("/connectors").status() == 200;
        });
    }

    /**
     * The connector and all its tasks RUNNING, as the worker's REST API reports them; returns the
     * worker id (host:port) running each task.
     */
    private static Map<Integer, String> awaitRunning(ConnectWorker w) {
        Map<Integer, String> hosts = new HashMap<>();
        await().atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(500)).ignoreExceptions().untilAsserted(() -> {
            ConnectWorker.Response r = w.get("/connectors/" + CONNECTOR + "/status");
            assertThat(r.status()).as(r.body()).isEqualTo(200);
            JsonNode s = r.json();
            assertThat(s.path("connector").path("state").asText()).as(r.body()).isEqualTo("RUNNING");
            assertThat(s.path("tasks")).as(r.body()).hasSize(TASKS);
            for (JsonNode task : s.path("tasks")) {
                assertThat(task.path("state").asText()).as(r.body()).isEqualTo("RUNNING");
                hosts.put(task.path("id").asInt(), task.path("worker_id").asText());
            }
        });
        return hosts;
    }

    /** GET /connectors/seq/offsets (KIP-875): source partition {"task": i} -> offset n. */
    private static Map<Integer, Long> committedOffsets(ConnectWorker w) throws Exception {
        ConnectWorker.Response r = w.get("/connectors/" + CONNECTOR + "/offsets");
        assertThat(r.status()).as(r.body()).isEqualTo(200);
        Map<Integer, Long> m = new HashMap<>();
        for (JsonNode o : r.json().path("offsets")) {
            m.put(o.path("partition").path("task").asInt(), o.path("offset").path("n").asLong());
        }
        return m;
    }

    private static List<TopicPartition> partitions() {
        List<TopicPartition> tps = new ArrayList<>();
        for (int i = 0; i < TASKS; i++) {
            tps.add(new TopicPartition(OUT, i));
        }
        return tps;
    }

    /** Every partition's values under read_committed, up to its last stable offset when reading began. */
    private static Map<Integer, List<String>> readCommitted(String bootstrap) {
        return read(bootstrap, "read_committed");
    }

    /** Every partition's values under {@code isolation}, up to its end offset when reading began. */
    private static Map<Integer, List<String>> read(String bootstrap, String isolation) {
        Map<Integer, List<String>> out = new HashMap<>();
        Map<String, Object> cfg = new HashMap<>();
        cfg.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        cfg.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        cfg.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cfg, new StringDeserializer(), new StringDeserializer())) {
            List<TopicPartition> tps = partitions();
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps, Duration.ofSeconds(30));
            long deadline = System.currentTimeMillis() + 60_000;
            while (tps.stream().anyMatch(tp -> c.position(tp) < end.get(tp))) {
                if (System.currentTimeMillis() > deadline) {
                    throw new AssertionError("read_committed did not reach " + end + " within 60 s");
                }
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    out.computeIfAbsent(r.partition(), k -> new ArrayList<>()).add(r.value());
                }
            }
        }
        return out;
    }

    private static Map<Integer, Long> lastValues(String bootstrap) {
        Map<Integer, Long> last = new HashMap<>();
        readCommitted(bootstrap).forEach((p, values) -> last.put(p,
                Long.parseLong(values.get(values.size() - 1).split(":")[1])));
        return last;
    }

    /** Records per partition below the last stable offset (read_committed end offsets, markers included). */
    private static Map<Integer, Long> committedCounts(String bootstrap) {
        Map<Integer, Long> m = new HashMap<>();
        endOffsets(bootstrap, "read_committed").forEach((tp, o) -> m.put(tp.partition(), o));
        return m;
    }

    /** Waits until every partition's last stable offset moved on by {@code delta} from now. */
    private static void awaitAdvance(String bootstrap, long delta) {
        Map<Integer, Long> from = committedCounts(bootstrap);
        await().atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(500)).ignoreExceptions().untilAsserted(() -> {
            Map<Integer, Long> now = committedCounts(bootstrap);
            for (int p = 0; p < TASKS; p++) {
                assertThat(now.get(p)).as("last stable offset of partition %d, from %d", p, from.get(p))
                        .isGreaterThanOrEqualTo(from.get(p) + delta);
            }
        });
    }

    private static Map<TopicPartition, Long> endOffsets(String bootstrap, String isolation) {
        Map<String, Object> cfg = new HashMap<>();
        cfg.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        cfg.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cfg, new StringDeserializer(), new StringDeserializer())) {
            return c.endOffsets(partitions(), Duration.ofSeconds(30));
        }
    }

    /** Waits until every partition's last stable offset is at least {@code offset}. */
    private static void awaitCommitted(String bootstrap, long offset) {
        await().atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(500)).ignoreExceptions().untilAsserted(() ->
                assertThat(committedCounts(bootstrap).values()).as("last stable offsets").hasSize(TASKS)
                        .allSatisfy(o -> assertThat(o).isGreaterThanOrEqualTo(offset)));
    }
}
