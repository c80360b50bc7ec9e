package dev.varve.cli;

import dev.varve.cli.LocalCluster.Node;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

import java.io.File;
import java.io.IOException;
import java.io.PrintWriter;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;

/**
 * {@code varve cluster up|down|status}: a local development cluster of separate broker+controller
 * processes on one machine (layout and process rules in {@link LocalCluster}).
 *
 * <p>{@code up} prints only the bootstrap servers on stdout, so scripts can write
 * {@code BOOTSTRAP=$(bin/varve cluster up)}; progress and errors go to stderr.
 */
@Command(name = "cluster", mixinStandardHelpOptions = true,
        description = {"Run a local development cluster: one process per node on this machine (up, down, status).",
                "Production clusters run one `varve server --config FILE` per machine (docs/operations.md).",
                "Ask any running cluster about itself: info, metadata, health."},
        subcommands = {ClusterCommand.Up.class, ClusterCommand.Down.class, ClusterCommand.Status.class,
                dev.varve.cli.client.ClusterClientCommands.Info.class, dev.varve.cli.client.ClusterClientCommands.Metadata.class,
                dev.varve.cli.client.ClusterClientCommands.Health.class})
final class ClusterCommand {
    static final String DEFAULT_DIR = "varve-cluster";
    /** Lines of a failed node's server.log shown on stderr. */
    static final int LOG_TAIL_LINES = 30;

    /** The cluster directory as a real path (created when {@code create}), so every command names it alike. */
    static Path clusterDir(File dir, boolean create) throws IOException {
        Path path = dir.toPath().toAbsolutePath().normalize();
        if (create) {
            Files.createDirectories(path);
        }
        return Files.exists(path) ? path.toRealPath() : path;
    }

    @Command(name = "up", mixinStandardHelpOptions = true,
            description = {"Start (or restart) a local cluster and wait until every node serves clients.",
                    "Prints the bootstrap servers (host:port,...) as the only line on stdout.",
                    "Node i listens for clients on PORT+100*(i-1) (--base-port), for the quorum on the port after, "
                            + "and serves /metrics and /health on the one after that.",
                    "An existing DIR is restarted with its data; stopped nodes of a partly running cluster are started."})
    static final class Up implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @Option(names = "--nodes", paramLabel = "N", defaultValue = "3", description = "Number of nodes, 1-9 (default: ${DEFAULT-VALUE}).")
        int nodes;

        @Option(names = "--dir", paramLabel = "DIR", defaultValue = DEFAULT_DIR, description = "Cluster directory (default: ./${DEFAULT-VALUE}).")
        File dir;

        @Option(names = "--base-port", paramLabel = "PORT", defaultValue = "29092", description = "Node 1's client port (default: ${DEFAULT-VALUE}).")
        int basePort;

        @Option(names = "--host", paramLabel = "HOST", defaultValue = "127.0.0.1", description = "Address every node listens on (default: ${DEFAULT-VALUE}).")
        String host;

        @Option(names = "--config", paramLabel = "KEY=VALUE", description = "An extra server setting for every node; repeatable.")
        Map<String, String> extra = new LinkedHashMap<>();

        @Option(names = "--timeout-seconds", paramLabel = "SECONDS", defaultValue = "60", description = "How long to wait for the cluster (default: ${DEFAULT-VALUE}).")
        int timeoutSeconds;

        private PrintWriter err;

        @Override
        public Integer call() throws Exception {
            err = spec.commandLine().getErr();
            validate();
            Path root = clusterDir(dir, true);
            List<Node> all = new ArrayList<>();
            for (int id = 1; id <= nodes; id++) {
                all.add(LocalCluster.node(root, id));
            }
            List<Node> toStart = new ArrayList<>();
            for (Node node : all) {
                Optional<ProcessHandle> live = LocalCluster.running(node);
                if (live.isPresent()) {
                    err.println("node " + node.id() + " is already running (pid " + live.get().pid() + ")");
                } else {
                    toStart.add(node);
                }
            }
            if (toStart.isEmpty()) {
                return fail("the cluster in " + root + " is already running; stop it with: varve cluster down --dir " + root);
            }
            String voters = LocalCluster.quorumVoters(nodes, host, basePort);
            for (Node node : LocalCluster.existingNodes(root)) {
                String existing = LocalCluster.readConfig(node).getProperty("controller.quorum.voters", "");
                if (!existing.equals(voters)) {
                    return fail(root + " holds a cluster with controller.quorum.voters=" + existing + " (" + node.config()
                            + "), not " + voters + ": run up with the --nodes, --host and --base-port it was created "
                            + "with, or wipe it (rm -rf " + root + ")");
                }
            }
            for (Node node : toStart) {
                int[] ports = {LocalCluster.clientPort(basePort, node.id()), LocalCluster.controllerPort(basePort, node.id()),
                        LocalCluster.adminPort(basePort, node.id())};
                for (int port : ports) {
                    if (!LocalCluster.portFree(host, port)) {
                        return fail("port " + port + " of node " + node.id() + " is in use on " + host
                                + ": stop what uses it or choose another --base-port");
                    }
                }
            }
            return startAndAwait(all, toStart);
        }

        private void validate() {
            if (nodes < 1 || nodes > LocalCluster.MAX_NODES) {
                throw usage("--nodes must be 1-" + LocalCluster.MAX_NODES + ", not " + nodes);
            }
            if (basePort < 1 || LocalCluster.controllerPort(basePort, nodes) > 65535) {
                throw usage("--base-port " + basePort + " leaves no room for " + nodes + " nodes (ports up to "
                        + LocalCluster.controllerPort(basePort, nodes) + ")");
            }
            if (timeoutSeconds < 1) {
                throw usage("--timeout-seconds must be at least 1");
            }
            for (String key : extra.keySet()) {
                if (LocalCluster.LAYOUT_KEYS.contains(key.trim())) {
                    throw usage("--config cannot set " + key + ": cluster up sets it for each node");
                }
            }
        }

        private CommandLine.ParameterException usage(String message) {
            return new CommandLine.ParameterException(spec.commandLine(), message);
        }

        private int fail(String message) {
            err.println("varve cluster up: " + message);
            err.flush();
            return 1;
        }

        private int startAndAwait(List<Node> all, List<Node> toStart) throws Exception {
            String java = ProcessHandle.current().info().command()
                    .orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
            List<String> jvmOptions = LocalCluster.nodeJvmOptions(
                    ManagementFactory.getRuntimeMXBean().getInputArguments(), System.getenv("VARVE_JAVA_OPTS"));
            String classPath = absoluteClassPath(System.getProperty("java.class.path"));
            Map<Node, Process> started = new LinkedHashMap<>();
            long startNanos = System.nanoTime();
            try {
                for (Node node : toStart) {
                    Files.createDirectories(node.dataDir());
                    LocalCluster.writeConfig(node, nodes,
                            LocalCluster.nodeConfig(node.id(), nodes, host, basePort, node.dataDir(), extra));
                    Process process = LocalCluster.start(node, java, classPath, jvmOptions);
                    started.put(node, process);
                    err.println("node " + node.id() + ": pid " + process.pid() + ", clients on "
                            + LocalCluster.address(host, LocalCluster.clientPort(basePort, node.id())) + ", log " + node.log());
                }
                err.flush();
                Optional<String> failure = awaitReady(all, started, startNanos + TimeUnit.SECONDS.toNanos(timeoutSeconds));
                if (failure.isEmpty()) {
                    err.printf("cluster of %d node%s up in %.1f s; stop it with: varve cluster down --dir %s%n", nodes,
                            nodes == 1 ? "" : "s",
                            (System.nanoTime() - startNanos) / 1e9, all.get(0).dir().getParent());
                    err.flush();
                    PrintWriter out = spec.commandLine().getOut();
                    out.println(LocalCluster.bootstrapServers(nodes, host, basePort));
                    out.flush();
                    started.clear(); // success: the nodes stay up
                    return 0;
                }
                err.println("varve cluster up: " + failure.get());
                return 1;
            } finally {
                if (!started.isEmpty()) {
                    err.println("stopping the " + started.size() + " node(s) started");
                    List<ProcessHandle> handles = started.values().stream().map(Process::toHandle).toList();
                    List<ProcessHandle> alive = LocalCluster.stop(handles, Duration.ofSeconds(10));
                    for (Map.Entry<Node, Process> e : started.entrySet()) {
                        if (!alive.contains(e.getValue().toHandle())) {
                            Files.deleteIfExists(e.getKey().pidFile());
                        }
                    }
                    err.flush();
                }
            }
        }

        /**
         * Waits until every node's client port accepts connections and the cluster reports all nodes
         * (DescribeCluster), a started node exits, or the deadline passes.
         *
         * @return empty when ready; else what went wrong, with the failed nodes' server.log tails printed
         */
        private Optional<String> awaitReady(List<Node> all, Map<Node, Process> started, long deadlineNanos)
                throws InterruptedException {
            String bootstrap = LocalCluster.bootstrapServers(nodes, host, basePort);
            err.println("waiting up to " + timeoutSeconds + " s for " + nodes + " node(s) at " + bootstrap);
            err.flush();
            Admin admin = null;
            Set<Integer> notReady = new TreeSet<>();
            String reason = "";
            try {
                while (true) {
                    for (Map.Entry<Node, Process> e : started.entrySet()) {
                        if (!e.getValue().isAlive()) {
                            printTail(e.getKey());
                            return Optional.of("node " + e.getKey().id() + " exited with status "
                                    + e.getValue().exitValue() + " before the cluster was up (its log is above)");
                        }
                    }
                    notReady.clear();
                    for (Node node : all) {
                        if (!LocalCluster.accepts(host, LocalCluster.clientPort(basePort, node.id()), 500)) {
                            notReady.add(node.id());
                        }
                    }
                    reason = "client port not accepting connections";
                    if (notReady.isEmpty()) {
                        if (admin == null) {
                            admin = Admin.create(adminConfig(bootstrap));
                        }
                        Set<Integer> reported = new TreeSet<>();
                        try {
                            admin.describeCluster().nodes().get(5, TimeUnit.SECONDS).forEach(n -> reported.add(n.id()));
                            reason = "not among the nodes the cluster reports " + reported;
                        } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
                            reason = "DescribeCluster failed: " + e;
                        }
                        for (Node node : all) {
                            if (!reported.contains(node.id())) {
                                notReady.add(node.id());
                            }
                        }
                        if (notReady.isEmpty()) {
                            return Optional.empty();
                        }
                    }
                    if (System.nanoTime() > deadlineNanos) {
                        for (Node node : all) {
                            if (notReady.contains(node.id())) {
                                printTail(node);
                            }
                        }
                        return Optional.of("node(s) " + notReady + " not ready after " + timeoutSeconds + " s (" + reason + ")");
                    }
                    Thread.sleep(200);
                }
            } finally {
                if (admin != null) {
                    admin.close(Duration.ofSeconds(1));
                }
            }
        }

        private void printTail(Node node) {
            err.println("--- last lines of " + node.log() + " (node " + node.id() + ") ---");
            err.println(LocalCluster.tail(node.log(), LOG_TAIL_LINES));
            err.println("---");
            err.flush();
        }

        private static Properties adminConfig(String bootstrap) {
            Properties props = new Properties();
            props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            props.put(AdminClientConfig.CLIENT_ID_CONFIG, "varve-cluster-up");
            props.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, "3000");
            props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "5000");
            return props;
        }

        /** The class path with every entry made absolute: nodes run in their own directories. */
        private static String absoluteClassPath(String classPath) {
            List<String> entries = new ArrayList<>();
            for (String entry : classPath.split(File.pathSeparator)) {
                if (!entry.isEmpty()) {
                    entries.add(Path.of(entry).toAbsolutePath().toString());
                }
            }
            return String.join(File.pathSeparator, entries);
        }
    }

    @Command(name = "down", mixinStandardHelpOptions = true,
            description = {"Stop every node of a local cluster (SIGTERM, then SIGKILL after the timeout).",
                    "Data is kept; wipe it with rm -rf DIR."})
    static final class Down implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @Option(names = "--dir", paramLabel = "DIR", defaultValue = DEFAULT_DIR, description = "Cluster directory (default: ./${DEFAULT-VALUE}).")
        File dir;

        @Option(names = "--timeout-seconds", paramLabel = "SECONDS", defaultValue = "30",
                description = "How long nodes get to shut down cleanly before they are killed (default: ${DEFAULT-VALUE}).")
        int timeoutSeconds;

        @Override
        public Integer call() throws Exception {
            PrintWriter err = spec.commandLine().getErr();
            Path root = clusterDir(dir, false);
            List<Node> nodes = LocalCluster.existingNodes(root);
            if (nodes.isEmpty()) {
                err.println("no cluster in " + root + "; nothing to stop");
                return 0;
            }
            Map<Node, ProcessHandle> live = new LinkedHashMap<>();
            for (Node node : nodes) {
                Optional<ProcessHandle> process = LocalCluster.running(node);
                if (process.isPresent()) {
                    live.put(node, process.get());
                } else if (Files.deleteIfExists(node.pidFile())) {
                    err.println("node " + node.id() + " was not running (stale pid file removed)");
                }
            }
            if (!live.isEmpty()) {
                err.println("stopping " + live.size() + " node(s)");
                err.flush();
            }
            List<ProcessHandle> alive = LocalCluster.stop(live.values(), Duration.ofSeconds(Math.max(0, timeoutSeconds)));
            int status = 0;
            for (Map.Entry<Node, ProcessHandle> e : live.entrySet()) {
                if (alive.contains(e.getValue())) {
                    err.println("node " + e.getKey().id() + " (pid " + e.getValue().pid() + ") did not stop");
                    status = 1;
                } else {
                    Files.deleteIfExists(e.getKey().pidFile());
                    err.println("node " + e.getKey().id() + " stopped");
                }
            }
            if (status == 0) {
                err.println("cluster in " + root + " is down; its data is kept (wipe it with: rm -rf " + root + ")");
            }
            err.flush();
            return status;
        }
    }

    @Command(name = "status", mixinStandardHelpOptions = true,
            description = {"One line per node of a local cluster: node id, pid, running or stopped, client address.",
                    "Exits 1 when DIR holds no cluster."})
    static final class Status implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @Option(names = "--dir", paramLabel = "DIR", defaultValue = DEFAULT_DIR, description = "Cluster directory (default: ./${DEFAULT-VALUE}).")
        File dir;

        @Override
        public Integer call() throws Exception {
            Path root = clusterDir(dir, false);
            List<Node> nodes = LocalCluster.existingNodes(root);
            if (nodes.isEmpty()) {
                spec.commandLine().getErr().println("no cluster in " + root);
                return 1;
            }
            PrintWriter out = spec.commandLine().getOut();
            for (Node node : nodes) {
                Optional<ProcessHandle> process = LocalCluster.running(node);
                out.printf("node %d  pid %-7s  %-7s  %s%n", node.id(),
                        process.map(p -> Long.toString(p.pid())).orElse("-"),
                        process.isPresent() ? "running" : "stopped",
                        LocalCluster.clientAddress(LocalCluster.readConfig(node)));
            }
            out.flush();
            return 0;
        }
    }
}
