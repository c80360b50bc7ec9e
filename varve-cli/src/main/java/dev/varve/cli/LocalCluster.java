package dev.varve.cli;

import java.io.IOException;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.lang.ProcessBuilder.Redirect;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Deque;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * A local development cluster: the directory {@code varve cluster up} lays out and the node processes
 * that run from it.
 *
 * <pre>
 * DIR/
 *   node-1/
 *     server.properties   written by every `up` (node.id, listeners, quorum voters, ...)
 *     data/               the node's log.dirs; kept by `down`
 *     server.log          the node's stdout and stderr, appended across restarts
 *     pid                 the running node's process id; removed by `down`
 *   node-2/ ...
 * </pre>
 *
 * <p>Node {@code i} (1-based) listens for clients on {@code basePort + 100*(i-1)} and for the metadata
 * quorum (its CONTROLLER listener, its Raft endpoint) on the port after that, and serves its HTTP admin
 * listener ({@code /metrics}, {@code /health/ready}) on the one after that.
 *
 * <p>A pid file is trusted only while that process's command line names {@link #MAIN_CLASS} and this
 * node's own config file, so a pid the OS has recycled for another process is never signalled.
 * Paths are compared as given: callers pass the cluster directory as a real path
 * ({@link Path#toRealPath}) so every command spells it the same way.
 *
 * <p>Stateless; methods touch the file system and processes only where their names say so.
 */
final class LocalCluster {
    /** The main class every node runs ({@code server --config FILE}). */
    static final String MAIN_CLASS = "dev.varve.cli.VarveCommand";
    static final int MAX_NODES = 9;
    /** Node i's ports are this far above node i-1's. */
    static final int PORT_STRIDE = 100;
    static final String CONTROLLER_LISTENER = "CONTROLLER";
    static final String CLIENT_LISTENER = "PLAINTEXT";

    /** Keys {@code up} sets per node; {@code --config} may not override them. */
    static final Set<String> LAYOUT_KEYS = Set.of("node.id", "process.roles", "controller.quorum.voters",
            "listeners", "advertised.listeners", "controller.listener.names", "log.dirs", "log.dir");

    private static final Pattern NODE_DIR = Pattern.compile("node-([1-9][0-9]*)");

    private LocalCluster() {
    }

    /** One node's place in the cluster directory. */
    record Node(int id, Path dir) {
        Path config() {
            return dir.resolve("server.properties");
        }

        Path dataDir() {
            return dir.resolve("data");
        }

        Path log() {
            return dir.resolve("server.log");
        }

        Path pidFile() {
            return dir.resolve("pid");
        }
    }

    static Node node(Path clusterDir, int id) {
        return new Node(id, clusterDir.resolve("node-" + id));
    }

    /** The nodes that have a config file under {@code clusterDir}, by id; empty when there are none. */
    static List<Node> existingNodes(Path clusterDir) throws IOException {
        if (!Files.isDirectory(clusterDir)) {
            return List.of();
        }
        List<Node> nodes = new ArrayList<>();
        try (Stream<Path> children = Files.list(clusterDir)) {
            for (Path child : (Iterable<Path>) children::iterator) {
                Matcher m = NODE_DIR.matcher(child.getFileName().toString());
                if (m.matches() && m.group(1).length() <= 2 && Files.isRegularFile(child.resolve("server.properties"))) {
                    nodes.add(node(clusterDir, Integer.parseInt(m.group(1))));
                }
            }
        }
        nodes.sort((a, b) -> Integer.compare(a.id(), b.id()));
        return nodes;
    }

    static int clientPort(int basePort, int nodeId) {
        return basePort + PORT_STRIDE * (nodeId - 1);
    }

    static int controllerPort(int basePort, int nodeId) {
        return clientPort(basePort, nodeId) + 1;
    }

    static int adminPort(int basePort, int nodeId) {
        return clientPort(basePort, nodeId) + 2;
    }

    /** {@code host:port}, with an IPv6 literal in brackets. */
    static String address(String host, int port) {
        return (host.contains(":") ? "[" + host + "]" : host) + ":" + port;
    }

    /** {@code controller.quorum.voters} of an n-node cluster: {@code 1@host:port,2@host:port,...}. */
    static String quorumVoters(int nodes, String host, int basePort) {
        List<String> voters = new ArrayList<>();
        for (int id = 1; id <= nodes; id++) {
            voters.add(id + "@" + address(host, controllerPort(basePort, id)));
        }
        return String.join(",", voters);
    }

    /** The clients' bootstrap list: every node's client address, comma-separated. */
    static String bootstrapServers(int nodes, String host, int basePort) {
        List<String> out = new ArrayList<>();
        for (int id = 1; id <= nodes; id++) {
            out.add(address(host, clientPort(basePort, id)));
        }
        return String.join(",", out);
    }

    /**
     * The settings of node {@code id} of an n-node cluster, in file order. Every node is both broker and
     * controller. Topics default to min(3, n) replicas, and to two in-sync replicas from three nodes up
     * (one below: a smaller cluster could not lose a node and still take acks=all writes). {@code extra}
     * replaces generated keys of the same name and is appended otherwise.
     */
    static Map<String, String> nodeConfig(int id, int nodes, String host, int basePort, Path dataDir,
                                          Map<String, String> extra) {
        int replicationFactor = Math.min(3, nodes);
        int minInsync = nodes >= 3 ? 2 : 1;
        Map<String, String> config = new LinkedHashMap<>();
        config.put("node.id", Integer.toString(id));
        config.put("process.roles", "broker,controller");
        config.put("controller.quorum.voters", quorumVoters(nodes, host, basePort));
        config.put("listeners", CLIENT_LISTENER + "://" + address(host, clientPort(basePort, id)) + ","
                + CONTROLLER_LISTENER + "://" + address(host, controllerPort(basePort, id)));
        config.put("advertised.listeners", CLIENT_LISTENER + "://" + address(host, clientPort(basePort, id)));
        config.put("controller.listener.names", CONTROLLER_LISTENER);
        config.put("log.dirs", dataDir.toString());
        config.put("default.replication.factor", Integer.toString(replicationFactor));
        config.put("min.insync.replicas", Integer.toString(minInsync));
        config.put("offsets.topic.replication.factor", Integer.toString(replicationFactor));
        config.put("varve.admin.listener", address(host, adminPort(basePort, id)));
        config.putAll(extra);
        return config;
    }

    /** Writes a node's config file, replacing the previous one. */
    static void writeConfig(Node node, int nodes, Map<String, String> config) throws IOException {
        StringBuilder text = new StringBuilder()
                .append("# Node ").append(node.id()).append(" of a ").append(nodes)
                .append("-node local cluster, written by `varve cluster up`.\n")
                .append("# Rewritten by every `up`: pass extra keys as --config KEY=VALUE.\n");
        config.forEach((k, v) -> text.append(k).append('=').append(escape(v)).append('\n'));
        Files.writeString(node.config(), text, StandardCharsets.UTF_8);
    }

    /** A properties value: backslashes (Windows paths) doubled, a leading space kept. */
    private static String escape(String value) {
        String v = value.replace("\\", "\\\\");
        return v.startsWith(" ") ? "\\" + v : v;
    }

    static Properties readConfig(Node node) throws IOException {
        Properties props = new Properties();
        try (Reader r = Files.newBufferedReader(node.config(), StandardCharsets.UTF_8)) {
            props.load(r);
        }
        return props;
    }

    /** The address clients use for a node: its first advertised (else listened) non-controller listener. */
    static String clientAddress(Properties config) {
        String listeners = config.getProperty("advertised.listeners", config.getProperty("listeners", ""));
        for (String listener : listeners.split(",")) {
            int sep = listener.indexOf("://");
            if (sep > 0 && !listener.trim().startsWith(CONTROLLER_LISTENER + "://")) {
                return listener.substring(sep + 3).trim();
            }
        }
        return "?";
    }

    /** The pid in a node's pid file, if there is one and it holds a number. */
    static OptionalLong pid(Node node) {
        try {
            return OptionalLong.of(Long.parseLong(Files.readString(node.pidFile()).trim()));
        } catch (IOException | NumberFormatException e) {
            return OptionalLong.empty();
        }
    }

    /** The node's live process: the pid file's process, when it is alive and is this node. */
    static Optional<ProcessHandle> running(Node node) {
        OptionalLong pid = pid(node);
        if (pid.isEmpty()) {
            return Optional.empty();
        }
        return ProcessHandle.of(pid.getAsLong()).filter(ProcessHandle::isAlive).filter(h -> isProcessOf(h, node));
    }

    /** Whether a process is this node: its command line names the main class and the node's config file. */
    static boolean isProcessOf(ProcessHandle process, Node node) {
        String commandLine = process.info().commandLine().orElse("");
        return commandLine.contains(MAIN_CLASS) && commandLine.contains(node.config().toString());
    }

    /** Whether nothing listens on host:port (binding it succeeds). */
    static boolean portFree(String host, int port) {
        try (ServerSocket socket = new ServerSocket()) {
            socket.bind(new InetSocketAddress(host, port));
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /** Whether host:port accepts a TCP connection within {@code timeoutMs}. */
    static boolean accepts(String host, int port, int timeoutMs) {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(host, port), timeoutMs);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /**
     * The JVM options of a node: the class-data-sharing archive options this JVM runs with (bin/varve
     * adds them; the node runs the same jar, so the archive fits), then {@code VARVE_JAVA_OPTS} split on
     * whitespace.
     */
    static List<String> nodeJvmOptions(List<String> currentJvmArguments, String varveJavaOpts) {
        List<String> options = new ArrayList<>();
        for (String arg : currentJvmArguments) {
            if (arg.startsWith("-XX:SharedArchiveFile=") || arg.startsWith("-Xshare:")) {
                options.add(arg);
            }
        }
        if (varveJavaOpts != null && !varveJavaOpts.isBlank()) {
            options.addAll(List.of(varveJavaOpts.trim().split("\\s+")));
        }
        return options;
    }

    /**
     * Starts a node as a separate process that outlives this one: {@code java OPTIONS MAIN_CLASS server
     * --config FILE} in the node's directory, output appended to its server.log, and writes its pid file.
     * The class path goes in the CLASSPATH environment variable rather than on the command line: on Linux
     * {@link ProcessHandle.Info} reads only the first 4 KiB of another process's command line, and
     * {@link #isProcessOf} must see the config file's name at its end.
     */
    static Process start(Node node, String java, String classPath, List<String> jvmOptions) throws IOException {
        List<String> command = new ArrayList<>();
        command.add(java);
        command.addAll(jvmOptions);
        command.addAll(List.of(MAIN_CLASS, "server", "--config", node.config().toString()));
        Files.writeString(node.log(), "=== " + Instant.now() + " varve cluster up: " + String.join(" ", command) + "\n",
                StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        ProcessBuilder builder = new ProcessBuilder(command)
                .directory(node.dir().toFile())
                .redirectErrorStream(true)
                .redirectOutput(Redirect.appendTo(node.log().toFile()));
        builder.environment().put("CLASSPATH", classPath);
        Process process = builder.start();
        process.getOutputStream().close(); // a node reads no input
        Files.writeString(node.pidFile(), process.pid() + "\n", StandardCharsets.UTF_8);
        return process;
    }

    /**
     * Stops processes: SIGTERM to all (a node then shuts down cleanly), up to {@code timeout} for them to
     * exit, then SIGKILL to the rest and up to 10 s more.
     *
     * @return the processes still alive at the end (normally none)
     */
    static List<ProcessHandle> stop(Collection<ProcessHandle> processes, Duration timeout) {
        processes.forEach(ProcessHandle::destroy);
        List<ProcessHandle> alive = awaitExit(processes, timeout);
        alive.forEach(ProcessHandle::destroyForcibly);
        return awaitExit(alive, Duration.ofSeconds(10));
    }

    private static List<ProcessHandle> awaitExit(Collection<ProcessHandle> processes, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        List<ProcessHandle> alive = new ArrayList<>();
        for (ProcessHandle process : processes) {
            try {
                process.onExit().get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            } catch (TimeoutException | ExecutionException e) {
                alive.add(process);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                alive.add(process);
            }
        }
        alive.removeIf(p -> !p.isAlive());
        return alive;
    }

    /** The last {@code lines} lines of a file ("" when it cannot be read). */
    static String tail(Path file, int lines) {
        Deque<String> last = new ArrayDeque<>();
        try (Stream<String> all = Files.lines(file, StandardCharsets.UTF_8)) {
            all.forEach(line -> {
                last.addLast(line);
                if (last.size() > lines) {
                    last.removeFirst();
                }
            });
        } catch (IOException | UncheckedIOException e) {
            return "";
        }
        return String.join("\n", last);
    }
}
