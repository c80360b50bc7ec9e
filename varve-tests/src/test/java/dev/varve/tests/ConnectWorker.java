package dev.varve.tests;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

/**
 * A Kafka Connect distributed worker ({@code org.apache.kafka.connect.cli.ConnectDistributed}) as a
 * child JVM on this test's classpath, as an operator would run it from Kafka's distribution: a
 * properties file, logs to a file, its REST API on a port of its own. It can be killed with SIGKILL
 * and started again with the same configuration.
 */
final class ConnectWorker implements AutoCloseable {
    private static final ObjectMapper JSON = new ObjectMapper();

    final String name;
    final int restPort;
    private final Path config;
    private final Path log;
    private final Path logback;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private Process process;

    ConnectWorker(Path dir, String name, Map<String, String> settings) throws IOException {
        this.name = name;
        Files.createDirectories(dir);
        this.restPort = freePort();
        this.config = dir.resolve(name + ".properties");
        this.log = dir.resolve(name + ".log");
        this.logback = dir.resolve(name + "-logback.xml");
        Map<String, String> cfg = new TreeMap<>(settings);
        cfg.put("listeners", "http://127.0.0.1:" + restPort);
        cfg.put("rest.advertised.host.name", "127.0.0.1");
        cfg.put("rest.advertised.port", Integer.toString(restPort));
        StringBuilder text = new StringBuilder();
        cfg.forEach((k, v) -> text.append(k).append('=').append(v).append('\n'));
        Files.writeString(config, text, StandardCharsets.UTF_8);
        // INFO from Connect (rebalances, fencing, task lifecycle), without the config dumps of every client
        Files.writeString(logback, """
                <configuration>
                  <appender name="OUT" class="ch.qos.logback.core.ConsoleAppender">
                    <encoder><pattern>%d{HH:mm:ss.SSS} %-5level [%thread] %logger{30} - %msg%n</pattern></encoder>
                  </appender>
                  <logger name="org.apache.kafka.common.config.AbstractConfig" level="WARN"/>
                  <logger name="org.apache.kafka.common.utils.AppInfoParser" level="WARN"/>
                  <logger name="org.apache.kafka.common.metrics" level="WARN"/>
                  <logger name="org.apache.kafka.connect.runtime.isolation" level="WARN"/>
                  <logger name="org.reflections" level="ERROR"/>
                  <logger name="org.eclipse.jetty" level="WARN"/>
                  <logger name="org.glassfish" level="WARN"/>
                  <root level="INFO"><appender-ref ref="OUT"/></root>
                </configuration>
                """, StandardCharsets.UTF_8);
    }

    void start() throws IOException {
        if (process != null && process.isAlive()) {
            throw new IllegalStateException(name + " is running");
        }
        Files.writeString(log, "----- start " + name + "\n", StandardCharsets.UTF_8,
                StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        ProcessBuilder pb = new ProcessBuilder(java, "-Xmx384m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
                "-Dlogback.configurationFile=" + logback, "org.apache.kafka.connect.cli.ConnectDistributed",
                config.toString())
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()))
                .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
        // Surefire sets java.class.path to the real test classpath; CLASSPATH keeps the command line short.
        pb.environment().put("CLASSPATH", System.getProperty("java.class.path"));
        process = pb.start();
    }

    /** SIGKILL and wait: no task stops, no producer closes, no group leave. */
    void kill() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(60, TimeUnit.SECONDS);
    }

    /** The worker id Connect reports in statuses: the advertised REST host:port. */
    String id() {
        return "127.0.0.1:" + restPort;
    }

    /** SIGSTOP: the process stays, its threads stop (a long GC pause, a frozen VM). */
    void pause() throws IOException, InterruptedException {
        signal("STOP");
    }

    /** SIGCONT. */
    void resume() throws IOException, InterruptedException {
        signal("CONT");
    }

    private void signal(String sig) throws IOException, InterruptedException {
        Process p = new ProcessBuilder("kill", "-" + sig, Long.toString(process.pid())).inheritIO().start();
        if (p.waitFor() != 0) {
            throw new AssertionError("kill -" + sig + " " + name + " failed");
        }
    }

    boolean alive() {
        return process != null && process.isAlive();
    }

    String url(String path) {
        return "http://127.0.0.1:" + restPort + path;
    }

    /** GET {@code path}: the status code and the body parsed as JSON (null when the body is not JSON). */
    Response get(String path) throws IOException, InterruptedException {
        return send(HttpRequest.newBuilder(URI.create(url(path))).GET());
    }

    Response post(String path, Object body) throws IOException, InterruptedException {
        return send(HttpRequest.newBuilder(URI.create(url(path)))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(body))));
    }

    Response put(String path, Object body) throws IOException, InterruptedException {
        return send(HttpRequest.newBuilder(URI.create(url(path)))
                .header("Content-Type", "application/json")
                .PUT(HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(body))));
    }

    private Response send(HttpRequest.Builder request) throws IOException, InterruptedException {
        HttpResponse<String> r = http.send(request.timeout(Duration.ofSeconds(30)).build(),
                HttpResponse.BodyHandlers.ofString());
        JsonNode json;
        try {
            json = JSON.readTree(r.body());
        } catch (IOException e) {
            json = null;
        }
        return new Response(r.statusCode(), r.body(), json);
    }

    record Response(int status, String body, JsonNode json) {
    }

    /** The last {@code lines} lines of the worker's log (all its runs). */
    String logTail(int lines) {
        try {
            List<String> all = Files.readAllLines(log, StandardCharsets.UTF_8);
            return "----- " + name + " log (" + log + "), last " + Math.min(lines, all.size()) + " of " + all.size()
                    + " lines -----\n" + String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Every line of the worker's log that matches {@code regex}. */
    List<String> logLines(String regex) {
        try {
            return Files.readAllLines(log, StandardCharsets.UTF_8).stream().filter(l -> l.matches(".*" + regex + ".*")).toList();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public void close() {
        if (process != null && process.isAlive()) {
            try {
                resume(); // in case it is stopped
            } catch (IOException | InterruptedException | AssertionError e) {
                // it is ending anyway
            }
            process.destroy();
            try {
                if (!process.waitFor(30, TimeUnit.SECONDS)) {
                    process.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }
}
