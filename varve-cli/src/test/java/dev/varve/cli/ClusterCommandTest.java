package dev.varve.cli;

import dev.varve.broker.BrokerConfig;
import dev.varve.cli.LocalCluster.Node;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

class ClusterCommandTest {
    @TempDir
    File tmp;

    @Test
    void oneNodeConfigIsASingleVoterQuorumThatTheBrokerAccepts() {
        Path data = tmp.toPath().resolve("node-1/data");
        Map<String, String> config = LocalCluster.nodeConfig(1, 1, "127.0.0.1", 29092, data, Map.of());

        assertThat(config).containsEntry("node.id", "1")
                .containsEntry("process.roles", "broker,controller")
                .containsEntry("controller.quorum.voters", "1@127.0.0.1:29093")
                .containsEntry("listeners", "PLAINTEXT://127.0.0.1:29092,CONTROLLER://127.0.0.1:29093")
                .containsEntry("advertised.listeners", "PLAINTEXT://127.0.0.1:29092")
                .containsEntry("controller.listener.names", "CONTROLLER")
                .containsEntry("log.dirs", data.toString())
                .containsEntry("default.replication.factor", "1")
                .containsEntry("min.insync.replicas", "1")
                .containsEntry("offsets.topic.replication.factor", "1");
        BrokerConfig parsed = BrokerConfig.from(config);
        assertThat(parsed.unknownKeys()).isEmpty();
        assertThat(parsed.controllerListener()).map(BrokerConfig.Endpoint::port).contains(29093);
        assertThat(parsed.clientListeners()).extracting(BrokerConfig.Endpoint::port).containsExactly(29092);
    }

    @Test
    void threeNodeConfigsSpaceThePortsAndReplicateThrice() {
        String voters = "1@127.0.0.1:29093,2@127.0.0.1:29193,3@127.0.0.1:29293";
        for (int id = 1; id <= 3; id++) {
            Map<String, String> config = LocalCluster.nodeConfig(id, 3, "127.0.0.1", 29092,
                    tmp.toPath().resolve("node-" + id + "/data"), Map.of("log.segment.bytes", "1048576"));
            int client = 29092 + 100 * (id - 1);
            assertThat(config).containsEntry("node.id", Integer.toString(id))
                    .containsEntry("controller.quorum.voters", voters)
                    .containsEntry("listeners", "PLAINTEXT://127.0.0.1:" + client + ",CONTROLLER://127.0.0.1:" + (client + 1))
                    .containsEntry("advertised.listeners", "PLAINTEXT://127.0.0.1:" + client)
                    .containsEntry("default.replication.factor", "3")
                    .containsEntry("min.insync.replicas", "2")
                    .containsEntry("offsets.topic.replication.factor", "3")
                    .containsEntry("log.segment.bytes", "1048576");
            assertThat(BrokerConfig.from(config).unknownKeys()).isEmpty();
        }
        assertThat(LocalCluster.bootstrapServers(3, "127.0.0.1", 29092))
                .isEqualTo("127.0.0.1:29092,127.0.0.1:29192,127.0.0.1:29292");
    }

    @Test
    void twoNodesReplicateTwiceWithOneInSyncReplicaAndConfigOverridesReplaceDefaults() {
        Map<String, String> config = LocalCluster.nodeConfig(2, 2, "::1", 29092, tmp.toPath(),
                Map.of("min.insync.replicas", "2"));
        assertThat(config).containsEntry("default.replication.factor", "2")
                .containsEntry("min.insync.replicas", "2")
                .containsEntry("controller.quorum.voters", "1@[::1]:29093,2@[::1]:29193")
                .containsEntry("advertised.listeners", "PLAINTEXT://[::1]:29192");
        assertThat(LocalCluster.nodeConfig(1, 2, "127.0.0.1", 29092, tmp.toPath(), Map.of()))
                .containsEntry("min.insync.replicas", "1");
    }

    @Test
    void nodesGetTheCdsOptionsOfThisJvmAndVarveJavaOpts() {
        List<String> jvm = List.of("-XX:SharedArchiveFile=/r/varve.jsa", "-Xshare:auto", "-Xmx2g", "-Dx=y");
        assertThat(LocalCluster.nodeJvmOptions(jvm, " -Xmx256m   -Dvarve.a=b "))
                .containsExactly("-XX:SharedArchiveFile=/r/varve.jsa", "-Xshare:auto", "-Xmx256m", "-Dvarve.a=b");
        assertThat(LocalCluster.nodeJvmOptions(List.of(), null)).isEmpty();
    }

    @Test
    void badOptionsAreUsageErrors() {
        assertThat(Run.of("cluster", "up", "--dir", tmp.getPath(), "--nodes", "0").exitCode).isEqualTo(2);
        assertThat(Run.of("cluster", "up", "--dir", tmp.getPath(), "--nodes", "10").err).contains("--nodes must be 1-9");
        assertThat(Run.of("cluster", "up", "--dir", tmp.getPath(), "--base-port", "65400").err)
                .contains("leaves no room for 3 nodes");
        Run layout = Run.of("cluster", "up", "--dir", tmp.getPath(), "--config", "listeners=PLAINTEXT://:1");
        assertThat(layout.exitCode).isEqualTo(2);
        assertThat(layout.err).contains("--config cannot set listeners");
        assertThat(new File(tmp, "node-1")).doesNotExist();
    }

    @Test
    void upRefusesATakenPort() throws Exception {
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            int port = taken.getLocalPort();
            Run run = Run.of("cluster", "up", "--dir", tmp.getPath(), "--nodes", "1", "--base-port", Integer.toString(port));

            assertThat(run.exitCode).isEqualTo(1);
            assertThat(run.err).contains("port " + port + " of node 1 is in use on 127.0.0.1");
            assertThat(run.out).isEmpty();
            assertThat(new File(tmp, "node-1/pid")).doesNotExist();
        }
    }

    @Test
    void upRefusesToChangeTheQuorumOfAnExistingCluster() throws Exception {
        Path root = ClusterCommand.clusterDir(tmp, true);
        for (int id = 1; id <= 3; id++) {
            writeGeneratedConfig(root, id, 3, 29092);
        }
        Run run = Run.of("cluster", "up", "--dir", tmp.getPath(), "--nodes", "1", "--base-port", "29092");

        assertThat(run.exitCode).isEqualTo(1);
        assertThat(run.err).contains("controller.quorum.voters=1@127.0.0.1:29093,2@", "rm -rf " + root);
    }

    @Test
    void upReportsANodeThatExitsEarlyWithItsLogAndCleansUp() throws Exception {
        int base = freeBasePort(1);
        // An invalid value makes the node exit at once (status 2), whatever the server supports.
        Run run = Run.of("cluster", "up", "--dir", tmp.getPath(), "--nodes", "1", "--base-port", Integer.toString(base),
                "--config", "num.partitions=zero", "--timeout-seconds", "60");

        assertThat(run.exitCode).isEqualTo(1);
        assertThat(run.out).isEmpty();
        assertThat(run.err).contains("node 1 exited with status 2", "invalid configuration", "num.partitions");
        assertThat(new File(tmp, "node-1/pid")).doesNotExist();
        assertThat(Files.readString(tmp.toPath().resolve("node-1/server.properties"))).contains("num.partitions=zero");
    }

    /**
     * A real (single-node) broker process started the way {@code up} starts nodes stands in for a running
     * cluster: status shows it, up refuses, down stops it with SIGTERM.
     */
    @Test
    void aRunningNodeIsShownRefusedByUpAndStoppedByDown() throws Exception {
        Path root = ClusterCommand.clusterDir(tmp, true);
        Node node = LocalCluster.node(root, 1);
        Files.createDirectories(node.dataDir());
        LocalCluster.writeConfig(node, 1, Map.of("listeners", "PLAINTEXT://127.0.0.1:0", "log.dirs", node.dataDir().toString()));
        Process process = LocalCluster.start(node, javaCommand(), System.getProperty("java.class.path"), List.of());
        try {
            awaitLog(node, "started in");
            Run status = Run.of("cluster", "status", "--dir", tmp.getPath());
            assertThat(status.exitCode).isZero();
            assertThat(status.out).isEqualTo(String.format("node 1  pid %-7s  running  127.0.0.1:0%n", process.pid()));

            Run up = Run.of("cluster", "up", "--dir", tmp.getPath(), "--nodes", "1");
            assertThat(up.exitCode).isEqualTo(1);
            assertThat(up.err).contains("node 1 is already running (pid " + process.pid() + ")", "already running");
            assertThat(process.isAlive()).isTrue();

            Run down = Run.of("cluster", "down", "--dir", tmp.getPath());
            assertThat(down.exitCode).isZero();
            assertThat(down.err).contains("node 1 stopped", "rm -rf");
            assertThat(process.waitFor(10, TimeUnit.SECONDS)).isTrue();
            assertThat(process.exitValue()).as("a clean shutdown after SIGTERM").isZero();
            assertThat(node.pidFile()).doesNotExist();
            assertThat(Run.of("cluster", "status", "--dir", tmp.getPath()).out).contains("node 1  pid -        stopped");
        } finally {
            process.destroyForcibly();
        }
    }

    @Test
    void downNeverKillsAProcessThatIsNotTheNode() throws Exception {
        Path root = ClusterCommand.clusterDir(tmp, true);
        Node node = writeGeneratedConfig(root, 1, 1, 29092);
        Process sleep = new ProcessBuilder("sleep", "60").start();
        try {
            Files.writeString(node.pidFile(), sleep.pid() + "\n");
            assertThat(Run.of("cluster", "status", "--dir", tmp.getPath()).out)
                    .isEqualTo(String.format("node 1  pid -        stopped  127.0.0.1:29092%n"));

            Run down = Run.of("cluster", "down", "--dir", tmp.getPath(), "--timeout-seconds", "1");

            assertThat(down.exitCode).isZero();
            assertThat(down.err).contains("node 1 was not running (stale pid file removed)");
            assertThat(sleep.isAlive()).isTrue();
            assertThat(node.pidFile()).doesNotExist();
        } finally {
            sleep.destroyForcibly();
        }
    }

    @Test
    void statusAndDownOfADirectoryWithoutACluster() {
        Run status = Run.of("cluster", "status", "--dir", new File(tmp, "none").getPath());
        assertThat(status.exitCode).isEqualTo(1);
        assertThat(status.err).contains("no cluster in");

        Run down = Run.of("cluster", "down", "--dir", new File(tmp, "none").getPath());
        assertThat(down.exitCode).isZero();
        assertThat(down.err).contains("nothing to stop");
    }

    @Test
    void statusListsNodesInIdOrder() throws Exception {
        Path root = ClusterCommand.clusterDir(tmp, true);
        for (int id = 3; id >= 1; id--) {
            writeGeneratedConfig(root, id, 3, 39092);
        }
        Run run = Run.of("cluster", "status", "--dir", tmp.getPath());

        assertThat(run.exitCode).isZero();
        assertThat(run.out.lines()).containsExactly(
                "node 1  pid -        stopped  127.0.0.1:39092",
                "node 2  pid -        stopped  127.0.0.1:39192",
                "node 3  pid -        stopped  127.0.0.1:39292");
    }

    /**
     * A real three-node cluster: up, DescribeCluster, status, down, and a restart on the same data.
     */
    @Test
    void threeNodeClusterComesUpStopsAndRestarts() throws Exception {
        String base = Integer.toString(freeBasePort(3));
        String[] up = {"cluster", "up", "--dir", tmp.getPath(), "--nodes", "3", "--base-port", base,
                "--timeout-seconds", "120"};
        Run first = Run.of(up);
        assertThat(first.exitCode).as(first.err).isZero();
        String bootstrap = first.out.strip();
        assertThat(first.out.lines()).hasSize(1);
        assertThat(bootstrap.split(",")).hasSize(3);
        try {
            Properties props = new Properties();
            props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            try (Admin admin = Admin.create(props)) {
                assertThat(admin.describeCluster().nodes().get(30, TimeUnit.SECONDS)).hasSize(3);
            }
            assertThat(Run.of("cluster", "status", "--dir", tmp.getPath()).out.lines())
                    .hasSize(3).allMatch(line -> line.contains("running"));
            assertThat(Run.of(up).exitCode).as("a running cluster is refused").isEqualTo(1);
        } finally {
            assertThat(Run.of("cluster", "down", "--dir", tmp.getPath()).exitCode).isZero();
        }
        assertThat(Run.of("cluster", "status", "--dir", tmp.getPath()).out.lines())
                .hasSize(3).allMatch(line -> line.contains("stopped"));

        Run again = Run.of(up);
        try {
            assertThat(again.exitCode).as(again.err).isZero();
            assertThat(again.out.strip()).isEqualTo(bootstrap);
        } finally {
            assertThat(Run.of("cluster", "down", "--dir", tmp.getPath()).exitCode).isZero();
        }
    }

    private static Node writeGeneratedConfig(Path root, int id, int nodes, int basePort) throws Exception {
        Node node = LocalCluster.node(root, id);
        Files.createDirectories(node.dataDir());
        LocalCluster.writeConfig(node, nodes,
                LocalCluster.nodeConfig(id, nodes, "127.0.0.1", basePort, node.dataDir(), Map.of()));
        return node;
    }

    /** A base port whose 2n ports are free now (a later clash only fails the test with a clear message). */
    private static int freeBasePort(int nodes) {
        for (int attempt = 0; attempt < 100; attempt++) {
            // below Linux's ephemeral range (32768+), where this JVM's other brokers and clients get their ports
            int base = 20_000 + 2 * ThreadLocalRandom.current().nextInt(6_000);
            boolean free = true;
            for (int id = 1; id <= nodes && free; id++) {
                free = LocalCluster.portFree("127.0.0.1", LocalCluster.clientPort(base, id))
                        && LocalCluster.portFree("127.0.0.1", LocalCluster.controllerPort(base, id))
                        && LocalCluster.portFree("127.0.0.1", LocalCluster.adminPort(base, id));
            }
            if (free) {
                return base;
            }
        }
        throw new AssertionError("no free base port found");
    }

    private static String javaCommand() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    private static void awaitLog(Node node, String text) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (System.nanoTime() < deadline) {
            if (Files.exists(node.log()) && Files.readString(node.log()).contains(text)) {
                return;
            }
            Thread.sleep(50);
        }
        throw new AssertionError("no '" + text + "' in " + node.log() + ":\n" + LocalCluster.tail(node.log(), 30));
    }

    /** One in-process run of the varve command with stdout and stderr captured. */
    private record Run(int exitCode, String out, String err) {
        static Run of(String... args) {
            StringWriter out = new StringWriter();
            StringWriter err = new StringWriter();
            picocli.CommandLine cmd = new picocli.CommandLine(new VarveCommand());
            cmd.setOut(new PrintWriter(out, true));
            cmd.setErr(new PrintWriter(err, true));
            int exitCode = cmd.execute(args);
            return new Run(exitCode, out.toString(), err.toString());
        }
    }
}
