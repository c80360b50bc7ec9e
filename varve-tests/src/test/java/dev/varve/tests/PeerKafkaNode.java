package dev.varve.tests;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListTopicsOptions;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * Node 1 of the Apache Kafka peer that {@code ../shared/peer/kafka start 1} runs, driven through the
 * same script ({@code node-kill}, {@code node-start}), so that restart tests can be checked against
 * Kafka first: {@code -Dvarve.tests.bootstrap=127.0.0.1:19092 -Dvarve.tests.peer=/path/to/peer/kafka}.
 */
final class PeerKafkaNode implements BrokerProcess {
    /** The peer script, or empty when restart tests cannot drive an external broker. */
    static final String SCRIPT = System.getProperty("varve.tests.peer", "").trim();
    private static final long TIMEOUT_MS = 120_000;

    private final String bootstrap;

    PeerKafkaNode(String bootstrap) {
        this.bootstrap = bootstrap;
    }

    static boolean available() {
        return !SCRIPT.isEmpty() && Files.isExecutable(Path.of(SCRIPT));
    }

    @Override
    public String bootstrap() {
        return bootstrap;
    }

    @Override
    public int stop() throws Exception {
        long pid = pid();
        script("node-kill", "1", "TERM");
        awaitExit(pid);
        return 0;
    }

    @Override
    public void kill() throws Exception {
        long pid = pid();
        script("node-kill", "1", "KILL");
        awaitExit(pid);
    }

    @Override
    public void restart() throws Exception {
        script("node-start", "1");
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) TIMEOUT_MS))) {
            admin.listTopics(new ListTopicsOptions().listInternal(true)).names().get(TIMEOUT_MS, TimeUnit.MILLISECONDS);
        }
    }

    @Override
    public String log() {
        return "(the peer's log is in $PEER_DATA/node1/out.log)";
    }

    @Override
    public void close() {
        // The peer belongs to whoever started it; a test leaves it running (restarting it if it is down).
        try {
            if (ProcessHandle.of(pid()).map(ProcessHandle::isAlive).orElse(false)) {
                return;
            }
            restart();
        } catch (Exception e) {
            throw new AssertionError("could not bring the peer back", e);
        }
    }

    private long pid() throws IOException, InterruptedException {
        return Long.parseLong(script("node-pid", "1").trim());
    }

    private static void awaitExit(long pid) throws InterruptedException {
        Optional<ProcessHandle> handle = ProcessHandle.of(pid);
        long deadline = System.currentTimeMillis() + TIMEOUT_MS;
        while (handle.map(ProcessHandle::isAlive).orElse(false)) {
            if (System.currentTimeMillis() > deadline) {
                throw new AssertionError("peer node (pid " + pid + ") did not exit");
            }
            Thread.sleep(100);
        }
    }

    private static String script(String... args) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>(List.of(SCRIPT));
        command.addAll(List.of(args));
        Path out = Files.createTempFile("peer", ".out");
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(out.toFile())
                    .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null"))).start();
            if (!p.waitFor(60, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new AssertionError(command + " did not finish");
            }
            String output = Files.readString(out, StandardCharsets.UTF_8);
            if (p.exitValue() != 0) {
                throw new AssertionError(command + " failed with " + p.exitValue() + ": " + output);
            }
            return output;
        } finally {
            Files.deleteIfExists(out);
        }
    }
}
