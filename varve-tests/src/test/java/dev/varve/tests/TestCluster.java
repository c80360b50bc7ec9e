package dev.varve.tests;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

/**
 * A Varve cluster of separate operating-system processes on loopback, each node a broker and a
 * metadata voter ({@code process.roles=broker,controller}), started with {@code java -jar varve.jar
 * server --config FILE} as an operator would. Nodes can be stopped (SIGTERM), killed (SIGKILL), paused
 * (SIGSTOP) and resumed (SIGCONT). Timeouts are short so failures are detected in seconds.
 */
public final class TestCluster implements AutoCloseable {
    /**
     * Settings that make failure detection fast enough for tests. The metadata quorum keeps Kafka's
     * default election timeout (1000 ms, randomized up to 2000 ms): with 400 ms, a Raft log fsync that
     * waits behind a catching-up broker's writes (ext4 commits every file's dirty data with it; 0.6-0.8 s
     * measured here during ScaleClusterTest's resync) made leaders step down again and again, and with
     * no controller for a minute or more no ISR could grow back.
     */
    static final Map<String, String> FAST = Map.of(
            "broker.session.timeout.ms", "4000",
            "broker.heartbeat.interval.ms", "300",
            "replica.lag.time.max.ms", "3000",
            "leader.imbalance.check.interval.seconds", "3");

    public final class Node implements AutoCloseable {
        public final int id;
        /** The address the node listens on and advertises. */
        public final String host;
        public final int port;
        public final int raftPort;
        final Path config;
        final Path log;
        Process process;

        Node(int id, String host, int port, int raftPort, Path dir) {
            this.id = id;
            this.host = host;
            this.port = port;
            this.raftPort = raftPort;
            this.config = dir.resolve("server.properties");
            this.log = dir.resolve("server.log");
        }

        public String bootstrap() {
            return host + ":" + port;
        }

        /** The node's data directory (log.dirs). */
        public Path dataDir() {
            return config.getParent().resolve("data");
        }

        public void start() throws IOException {
            if (process != null && process.isAlive()) {
                throw new IllegalStateException("node " + id + " is running");
            }
            String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
            Files.writeString(log, "----- start node " + id + "\n", StandardCharsets.UTF_8,
                    StandardOpenOption.CREATE, StandardOpenOption.APPEND);
            List<String> cmd = new ArrayList<>(network == null ? List.of() : network.exec(id));
            cmd.addAll(List.of(java, "-Xmx384m", "-XX:TieredStopAtLevel=1", "-jar",
                    VarveProcess.jar().toString(), "server", "--config", config.toString()));
            // 'ip netns exec' execs the command in place, so the process is the JVM (signals reach it)
            process = new ProcessBuilder(cmd)
                    .redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
                    .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
                    .start();
        }

        /** SIGKILL and wait. */
        public void kill() throws InterruptedException {
            process.destroyForcibly();
            process.waitFor(60, TimeUnit.SECONDS);
        }

        /** SIGTERM (controlled shutdown) and wait; returns the exit code. */
        public int stop() throws InterruptedException {
            process.destroy();
            if (!process.waitFor(60, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor();
                throw new AssertionError("node " + id + " did not stop within 60 s of SIGTERM\n" + log());
            }
            return process.exitValue();
        }

        public void pause() throws Exception {
            signal("STOP");
        }

        public void resume() throws Exception {
            signal("CONT");
        }

        private void signal(String sig) throws Exception {
            Process p = new ProcessBuilder("kill", "-" + sig, Long.toString(process.pid())).inheritIO().start();
            if (p.waitFor() != 0) {
                throw new AssertionError("kill -" + sig + " failed");
            }
        }

        public boolean alive() {
            return process != null && process.isAlive();
        }

        public String log() {
            try {
                return "----- node " + id + " log (" + log + ") -----\n" + Files.readString(log, StandardCharsets.UTF_8);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }

        @Override
        public void close() {
            if (process != null && process.isAlive()) {
                process.destroyForcibly();
                try {
                    process.waitFor(60, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }
    }

    private final List<Node> nodes = new ArrayList<>();
    /** Controllers started later, outside the initial voters (KIP-853 observers); not in the bootstrap lists. */
    private final List<Node> extraControllers = new ArrayList<>();
    /** The controller.quorum.voters every node was given (the cluster's initial voters). */
    private String voters;
    private final VirtualNetwork network;
    /** The client listener's name (and protocol, through Kafka's default map): PLAINTEXT unless set. */
    private String listener = "PLAINTEXT";
    /** Security settings every client of this cluster gets (security.protocol, stores). */
    private Map<String, Object> clientSecurity = Map.of();
    /** Settings of one node only, by id, on top of the shared ones. */
    private java.util.function.IntFunction<Map<String, String>> perNode = id -> Map.of();

    private TestCluster(VirtualNetwork network) {
        this.network = network;
    }

    /**
     * {@code n} nodes whose client (and inter-broker) listener is {@code listener} (SSL: every node needs
     * its own keystore, given by {@code perNode}); clients get {@code clientSecurity}.
     */
    public static TestCluster start(Path dir, int n, Map<String, String> extra, String listener,
                                    java.util.function.IntFunction<Map<String, String>> perNode,
                                    Map<String, Object> clientSecurity) throws Exception {
        TestCluster c = new TestCluster(null);
        c.listener = listener;
        c.perNode = perNode;
        c.clientSecurity = clientSecurity;
        return c.startNodes(dir, n, 0, extra);
    }

    /** The security settings of this cluster's clients (empty for plaintext). */
    public Map<String, Object> clientSecurity() {
        return clientSecurity;
    }

    /** From now on this cluster's clients get {@code security} (say, SCRAM once its users exist). */
    public void useClientSecurity(Map<String, Object> security) {
        this.clientSecurity = Map.copyOf(security);
    }

    /** Writes configs for {@code n} nodes under {@code dir}, starts them all and waits until every broker is unfenced. */
    public static TestCluster start(Path dir, int n, Map<String, String> extra) throws Exception {
        return start(dir, n, 0, extra);
    }

    /**
     * {@code voters} nodes that are brokers and controllers (ids 1..voters) and {@code brokersOnly} more
     * that are brokers only (process.roles=broker; they follow the metadata log from the controller).
     */
    public static TestCluster start(Path dir, int voters, int brokersOnly, Map<String, String> extra) throws Exception {
        return start(dir, voters, brokersOnly, extra, null);
    }

    /**
     * As {@link #start(Path, int, int, Map)}; with a {@code network}, node {@code i} runs on its host
     * {@code i} (a network namespace of its own, ports 9092 and 9093), so the test can cut and slow
     * the links between nodes.
     */
    public static TestCluster start(Path dir, int voters, int brokersOnly, Map<String, String> extra,
                                    VirtualNetwork network) throws Exception {
        return new TestCluster(network).startNodes(dir, voters, brokersOnly, extra);
    }

    private TestCluster startNodes(Path dir, int voters, int brokersOnly, Map<String, String> extra) throws Exception {
        int n = voters + brokersOnly;
        TestCluster c = this;
        try {
            List<Integer> ports = network == null ? freePorts(2 * n) : fixedPorts(n);
            StringBuilder voterList = new StringBuilder();
            for (int i = 0; i < voters; i++) {
                voterList.append(i == 0 ? "" : ",").append(i + 1).append('@').append(host(network, i + 1))
                        .append(':').append(ports.get(2 * i + 1));
            }
            c.voters = voterList.toString();
            c.extra = Map.copyOf(extra);
            for (int i = 0; i < n; i++) {
                int id = i + 1;
                Path nodeDir = dir.resolve("node-" + id);
                Files.createDirectories(nodeDir);
                Node node = c.new Node(id, host(network, id), ports.get(2 * i), ports.get(2 * i + 1), nodeDir);
                Map<String, String> cfg = new TreeMap<>();
                cfg.put("node.id", Integer.toString(id));
                boolean voter = i < voters;
                cfg.put("process.roles", voter ? "broker,controller" : "broker");
                cfg.put("controller.quorum.voters", voterList.toString());
                cfg.put("listeners", c.listener + "://" + node.host + ":" + node.port
                        + (voter ? ",CONTROLLER://" + node.host + ":" + node.raftPort : ""));
                cfg.put("log.dirs", nodeDir.resolve("data").toAbsolutePath().toString());
                cfg.put("default.replication.factor", Integer.toString(Math.min(3, n)));
                cfg.put("advertised.listeners", c.listener + "://" + node.host + ":" + node.port);
                cfg.putIfAbsent("varve.admin.listener", node.host + ":0"); // three nodes on one host
                cfg.put("offsets.topic.replication.factor", Integer.toString(Math.min(3, n)));
                cfg.putAll(FAST);
                cfg.putAll(extra);
                cfg.putAll(c.perNode.apply(id));
                StringBuilder text = new StringBuilder();
                cfg.forEach((k, v) -> text.append(k).append('=').append(v).append('\n'));
                Files.writeString(node.config, text, StandardCharsets.UTF_8);
                c.nodes.add(node);
            }
            for (Node node : c.nodes) {
                node.start();
            }
            c.awaitBrokers(n, 90_000);
            return c;
        } catch (Throwable t) {
            String logs = c.logs();
            c.close();
            throw new AssertionError("the cluster did not start: " + t + "\n" + logs, t);
        }
    }

    public List<Node> nodes() {
        return nodes;
    }

    /** The settings every node of this cluster was started with on top of its own. */
    private Map<String, String> extra = Map.of();

    /**
     * Writes the config of a controller-only node {@code id} outside the initial voters (the same
     * {@code controller.quorum.voters}, its own CONTROLLER listener: KIP-853's new controller) and starts it;
     * it observes the quorum until {@code kafka-metadata-quorum.sh add-controller} makes it a voter. It is
     * not in the clients' bootstrap lists.
     */
    public Node startController(Path dir, int id) throws Exception {
        if (network != null) {
            throw new IllegalStateException("extra controllers run on loopback only");
        }
        List<Integer> ports = freePorts(2);
        Path nodeDir = dir.resolve("node-" + id);
        Files.createDirectories(nodeDir);
        Node node = new Node(id, host(null, id), ports.get(0), ports.get(1), nodeDir);
        Map<String, String> cfg = new TreeMap<>();
        cfg.put("node.id", Integer.toString(id));
        cfg.put("process.roles", "controller");
        cfg.put("controller.quorum.voters", voters);
        cfg.put("controller.listener.names", "CONTROLLER");
        cfg.put("listeners", listener + "://" + node.host + ":" + node.port + ",CONTROLLER://" + node.host + ":" + node.raftPort);
        cfg.put("log.dirs", nodeDir.resolve("data").toAbsolutePath().toString());
        cfg.put("varve.admin.listener", node.host + ":0");
        cfg.putAll(FAST);
        cfg.putAll(extra);
        StringBuilder text = new StringBuilder();
        cfg.forEach((k, v) -> text.append(k).append('=').append(v).append('\n'));
        Files.writeString(node.config, text, StandardCharsets.UTF_8);
        extraControllers.add(node);
        node.start();
        return node;
    }

    /** The config file a node was started with (kafka-metadata-quorum.sh add-controller reads it). */
    public static Path configOf(Node node) {
        return node.config;
    }

    public Node node(int id) {
        return nodes.get(id - 1);
    }

    /** Bootstrap list of the nodes running now. */
    String bootstrap() {
        return nodes.stream().filter(Node::alive).map(Node::bootstrap).collect(Collectors.joining(","));
    }

    /** Bootstrap list of all nodes (clients skip the dead ones). */
    public String allBootstrap() {
        return nodes.stream().map(Node::bootstrap).collect(Collectors.joining(","));
    }

    public Admin admin() {
        Map<String, Object> cfg = new HashMap<>(clientSecurity);
        cfg.putAll(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, allBootstrap(),
                AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30_000,
                AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000));
        return Admin.create(cfg);
    }

    /**
     * An idempotent acks=all producer of strings to every node, with {@code overrides} on top; long
     * delivery timeout, so that it rides out failovers.
     */
    public KafkaProducer<String, String> producer(Map<String, Object> overrides) {
        Map<String, Object> cfg = new HashMap<>(clientSecurity);
        cfg.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, allBootstrap());
        cfg.put(ProducerConfig.ACKS_CONFIG, "all");
        cfg.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        cfg.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 120_000);
        cfg.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
        cfg.putAll(overrides);
        return new KafkaProducer<>(cfg, new StringSerializer(), new StringSerializer());
    }

    /**
     * Every value of one partition, from its start to the end offset seen when reading began (within
     * 60 s); the offsets must follow each other with no gap (no compaction or deleted records here).
     */
    public List<String> readPartition(String topic, int partition) {
        return read(List.of(new TopicPartition(topic, partition)), Duration.ofSeconds(60), false).getOrDefault(partition, List.of());
    }

    /**
     * As {@link #readPartition} for partitions 0 .. {@code partitions}-1 of {@code topic}, with one
     * consumer; every partition must be read to its end within 120 s.
     */
    public Map<Integer, List<String>> readPartitions(String topic, int partitions) {
        List<TopicPartition> all = new ArrayList<>();
        for (int p = 0; p < partitions; p++) {
            all.add(new TopicPartition(topic, p));
        }
        return read(all, Duration.ofSeconds(120), true);
    }

    /**
     * Values by partition of one topic's {@code tps}, each from its start to its end offset when reading
     * began; with {@code requireEnd}, a partition not read to that end within the time fails.
     */
    private Map<Integer, List<String>> read(List<TopicPartition> tps, Duration within, boolean requireEnd) {
        Map<String, Object> cfg = new HashMap<>(clientSecurity);
        cfg.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, allBootstrap());
        cfg.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        cfg.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 10_000);
        Map<Integer, List<String>> out = new HashMap<>();
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cfg, new StringDeserializer(), new StringDeserializer())) {
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps, Duration.ofSeconds(60));
            long deadline = System.currentTimeMillis() + within.toMillis();
            while (System.currentTimeMillis() < deadline && tps.stream().anyMatch(tp -> c.position(tp) < end.get(tp))) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                    List<String> values = out.computeIfAbsent(r.partition(), k -> new ArrayList<>());
                    if (r.offset() != values.size()) {
                        throw new AssertionError(r.topic() + "-" + r.partition() + ": offset " + r.offset() + " read where "
                                + values.size() + " was due");
                    }
                    values.add(r.value());
                }
            }
            for (TopicPartition tp : tps) {
                if (requireEnd && c.position(tp) < end.get(tp)) {
                    throw new AssertionError(tp + " read to " + c.position(tp) + ", not to its end " + end.get(tp));
                }
            }
        }
        return out;
    }

    /** Waits until {@code n} brokers are registered and unfenced (visible in Metadata). */
    void awaitBrokers(int n, long timeoutMs) throws Exception {
        long deadline = System.currentTimeMillis() + timeoutMs;
        Throwable last = null;
        while (System.currentTimeMillis() < deadline) {
            for (Node node : nodes) {
                if (node.process != null && !node.process.isAlive()) {
                    throw new AssertionError("node " + node.id + " exited with " + node.process.exitValue());
                }
            }
            if (nodes.stream().allMatch(TestCluster::accepts)) {
                try (Admin admin = admin()) {
                    if (admin.describeCluster().nodes().get(10, TimeUnit.SECONDS).size() >= n) {
                        return;
                    }
                } catch (Exception e) {
                    last = e;
                }
            }
            Thread.sleep(200);
        }
        throw new AssertionError(n + " brokers not unfenced within " + timeoutMs + " ms", last);
    }

    /** Creates {@code topic} and waits until every partition has a leader and {@code rf} replicas in sync. */
    public static void createAndAwaitInSync(Admin admin, org.apache.kafka.clients.admin.NewTopic topic, Duration within)
            throws Exception {
        admin.createTopics(List.of(topic)).all().get(within.toMillis(), TimeUnit.MILLISECONDS);
        int rf = topic.replicationFactor();
        org.awaitility.Awaitility.await().atMost(within).pollInterval(Duration.ofMillis(200)).untilAsserted(() ->
                org.assertj.core.api.Assertions.assertThat(describe(admin, topic.name())).allSatisfy(p -> {
                    org.assertj.core.api.Assertions.assertThat(leaderId(p)).isNotEqualTo(-1);
                    org.assertj.core.api.Assertions.assertThat(p.isr()).hasSize(rf);
                }));
    }

    /** The partitions of {@code topic} as the cluster describes them. */
    public static List<TopicPartitionInfo> describe(Admin admin, String topic) throws Exception {
        TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get(10, TimeUnit.SECONDS).get(topic);
        return d.partitions();
    }

    public static Set<Integer> ids(java.util.Collection<org.apache.kafka.common.Node> nodes) {
        return nodes.stream().map(org.apache.kafka.common.Node::id).collect(Collectors.toSet());
    }

    public static int leaderId(TopicPartitionInfo p) {
        org.apache.kafka.common.Node l = p.leader();
        return l == null || l.isEmpty() ? -1 : l.id();
    }

    private static boolean accepts(Node node) {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(node.host, node.port), 500);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    public String logs() {
        StringBuilder b = new StringBuilder();
        List<Node> all = new ArrayList<>(nodes);
        all.addAll(extraControllers);
        for (Node n : all) {
            try {
                b.append(n.log()).append('\n');
            } catch (UncheckedIOException e) {
                // not started
            }
        }
        return b.toString();
    }

    private static String host(VirtualNetwork network, int id) {
        return network == null ? "127.0.0.1" : network.address(id);
    }

    /** Every host has its own address, so every node can use Kafka's usual ports. */
    private static List<Integer> fixedPorts(int n) {
        List<Integer> ports = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            ports.add(9092);
            ports.add(9093);
        }
        return ports;
    }

    private static List<Integer> freePorts(int n) throws IOException {
        List<ServerSocket> sockets = new ArrayList<>();
        try {
            for (int i = 0; i < n; i++) {
                ServerSocket s = new ServerSocket();
                s.setReuseAddress(true);
                s.bind(new InetSocketAddress("127.0.0.1", 0));
                sockets.add(s);
            }
            return sockets.stream().map(ServerSocket::getLocalPort).toList();
        } finally {
            for (ServerSocket s : sockets) {
                s.close();
            }
        }
    }

    /** Stops every node and keeps their logs under target/cluster-logs/ for a failed test's post-mortem. */
    @Override
    public void close() {
        for (Node n : extraControllers) {
            n.close();
        }
        for (Node n : nodes) {
            n.close();
        }
        try {
            Path keep = Path.of("target", "cluster-logs", String.valueOf(System.currentTimeMillis()));
            Files.createDirectories(keep);
            List<Node> all = new ArrayList<>(nodes);
            all.addAll(extraControllers);
            for (Node n : all) {
                if (Files.exists(n.log)) {
                    Files.copy(n.log, keep.resolve("node-" + n.id + ".log"));
                }
            }
        } catch (IOException e) {
            // logs are a convenience
        }
    }
}
