package dev.varve.tests;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListTopicsOptions;

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
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

/**
 * A Varve broker as a real operating-system process: {@code java -jar varve.jar server --config FILE},
 * the way an operator runs it. Stdout and stderr of every start go to one log file, shown when a test fails.
 */
final class VarveProcess implements BrokerProcess {
    private static final long START_DEADLINE_MS = 60_000;
    private static final long STOP_TIMEOUT_SECONDS = 60;

    private final Path config;
    private final Path log;
    private final int port;
    private Process process;

    private VarveProcess(Path config, Path log, int port) {
        this.config = config;
        this.log = log;
        this.port = port;
    }

    /** The fat jar; {@code varve.jar} is set by the module's POM. */
    static Path jar() {
        Path jar = Path.of(System.getProperty("varve.jar", "../varve-cli/target/varve.jar"));
        if (!Files.isRegularFile(jar)) {
            throw new AssertionError(jar.toAbsolutePath() + " is missing: build it first (./mvnw -B install -DskipTests)");
        }
        return jar;
    }

    /** Writes a config (a free loopback port, {@code dataDir} as log.dirs) into {@code workDir} and starts the broker. */
    static VarveProcess start(Path workDir, Path dataDir) throws Exception {
        return start(workDir, dataDir, Map.of());
    }

    /** As {@link #start(Path, Path)}, with {@code extraConfig} appended to the config file. */
    static VarveProcess start(Path workDir, Path dataDir, Map<String, String> extraConfig) throws Exception {
        int port = freePort();
        Path config = workDir.resolve("server.properties");
        StringBuilder text = new StringBuilder(String.join("\n",
                "node.id=1",
                "listeners=PLAINTEXT://127.0.0.1:" + port,
                "log.dirs=" + dataDir.toAbsolutePath(),
                ""));
        new TreeMap<>(extraConfig).forEach((k, v) -> text.append(k).append('=').append(v).append('\n'));
        Files.writeString(config, text, StandardCharsets.UTF_8);
        VarveProcess p = new VarveProcess(config, workDir.resolve("varve-server.log"), port);
        p.restart();
        return p;
    }

    @Override
    public String bootstrap() {
        return "127.0.0.1:" + port;
    }

    /** Starts the process again (same config, same port) and waits until it serves requests. */
    @Override
    public void restart() throws Exception {
        if (process != null && process.isAlive()) {
            throw new IllegalStateException("already running");
        }
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        Files.writeString(log, "----- java -jar varve.jar server --config " + config + "\n", StandardCharsets.UTF_8,
                StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        process = new ProcessBuilder(java, "-Xmx512m", "-jar", jar().toString(), "server", "--config", config.toString())
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
                .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")))
                .start();
        awaitServing();
    }

    private void awaitServing() throws Exception {
        long deadline = System.currentTimeMillis() + START_DEADLINE_MS;
        while (!accepts()) {
            if (!process.isAlive()) {
                throw new AssertionError("the broker exited with " + process.exitValue() + " while starting\n" + log());
            }
            if (System.currentTimeMillis() > deadline) {
                throw new AssertionError("the broker did not listen on " + bootstrap() + " in time\n" + log());
            }
            Thread.sleep(50);
        }
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap(),
                AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30_000))) {
            admin.listTopics(new ListTopicsOptions().listInternal(true)).names().get(30, TimeUnit.SECONDS);
        }
    }

    private boolean accepts() {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", port), 1000);
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    /** SIGTERM (what {@link Process#destroy()} sends on Linux); returns the exit code. */
    @Override
    public int stop() throws InterruptedException {
        process.destroy();
        if (!process.waitFor(STOP_TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
            process.destroyForcibly().waitFor();
            throw new AssertionError("the broker did not exit within " + STOP_TIMEOUT_SECONDS + " s of SIGTERM\n" + log());
        }
        return process.exitValue();
    }

    /** SIGKILL: no shutdown code runs; what was written to the page cache stays. */
    @Override
    public void kill() throws InterruptedException {
        process.destroyForcibly();
        if (!process.waitFor(STOP_TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
            throw new AssertionError("the broker survived SIGKILL");
        }
    }

    @Override
    public String log() {
        try {
            return "----- broker log (" + log + ") -----\n" + Files.readString(log, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Kills a broker a failed test left running. */
    @Override
    public void close() {
        if (process != null && process.isAlive()) {
            process.destroyForcibly();
            try {
                process.waitFor(STOP_TIMEOUT_SECONDS, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket()) {
            s.setReuseAddress(true);
            s.bind(new InetSocketAddress("127.0.0.1", 0));
            return s.getLocalPort();
        }
    }
}
