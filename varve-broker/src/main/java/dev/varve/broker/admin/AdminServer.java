package dev.varve.broker.admin;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.prometheus.metrics.exporter.httpserver.MetricsHandler;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.Supplier;

/**
 * The broker's HTTP admin listener ({@code varve.admin.listener}): {@code /metrics} in the Prometheus text
 * format (OpenMetrics when the scraper asks for it), {@code /health/live} (the process answers) and
 * {@code /health/ready} (200 once the broker serves: caught up with the metadata, listeners bound, no
 * log directory offline; 503 with the reasons otherwise), and the web console: its page at {@code /ui}
 * and its JSON API at {@code /api} ({@link dev.varve.broker.admin.console.Console}). The JDK's own HTTP
 * server, two threads: a scrape never takes a request thread of the Kafka listeners, and the console's
 * API calls run on the console's own threads, so a slow one never holds up a scrape.
 */
public final class AdminServer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(AdminServer.class);

    /** Why the broker is not ready; empty when it is. */
    public interface Readiness extends Supplier<List<String>> {
    }

    private final HttpServer server;
    private final ExecutorService threads;
    private final dev.varve.broker.admin.console.Console console;

    /** Without the web console. */
    public AdminServer(InetSocketAddress address, PrometheusRegistry registry, Readiness readiness) throws IOException {
        this(address, registry, readiness, null);
    }

    /** With the web console at /ui and its API at /api when {@code consoleHost} is not null. */
    public AdminServer(InetSocketAddress address, PrometheusRegistry registry, Readiness readiness,
                       dev.varve.broker.admin.console.ConsoleHost consoleHost) throws IOException {
        this(address, registry, readiness, consoleHost, "auto");
    }

    /**
     * @param consoleWrites {@code varve.admin.console.writes}: auto (the console may change the cluster only
     *                      when this listener is on a loopback address), true or false
     */
    public AdminServer(InetSocketAddress address, PrometheusRegistry registry, Readiness readiness,
                       dev.varve.broker.admin.console.ConsoleHost consoleHost, String consoleWrites) throws IOException {
        server = HttpServer.create(address, 16);
        threads = Executors.newFixedThreadPool(2, r -> {
            Thread t = new Thread(r, "varve-admin-http");
            t.setDaemon(true);
            return t;
        });
        server.setExecutor(threads);
        server.createContext("/metrics", new MetricsHandler(registry));
        server.createContext("/health/live", exchange -> respond(exchange, 200, "live\n"));
        server.createContext("/health/ready", exchange -> {
            List<String> why;
            try {
                why = readiness.get();
            } catch (RuntimeException e) {
                why = List.of("readiness check failed: " + e);
            }
            respond(exchange, why.isEmpty() ? 200 : 503, why.isEmpty() ? "ready\n" : String.join("\n", why) + "\n");
        });
        boolean loopback = server.getAddress().getAddress() != null && server.getAddress().getAddress().isLoopbackAddress();
        boolean writes = "true".equals(consoleWrites) || ("auto".equals(consoleWrites) && loopback);
        console = consoleHost == null ? null : new dev.varve.broker.admin.console.Console(consoleHost, registry, writes, loopback);
        if (console != null) {
            console.register(server);
        }
        server.createContext("/", exchange -> {
            if (console != null && "/".equals(exchange.getRequestURI().getPath())) {
                try (exchange) {
                    exchange.getResponseHeaders().set("Location", "/ui/");
                    exchange.sendResponseHeaders(302, -1);
                }
                return;
            }
            respond(exchange, 404, "not found: try " + (console != null ? "/ui, " : "") + "/metrics, /health/live or /health/ready\n");
        });
        server.start();
        LOG.info("admin listener on http://{}:{} ({}/metrics, /health/live, /health/ready)",
                address.getHostString(), server.getAddress().getPort(), console != null ? "/ui, " : "");
    }

    /** The bound address (its port when 0 was asked for). */
    public InetSocketAddress address() {
        return server.getAddress();
    }

    private static void respond(HttpExchange exchange, int status, String body) throws IOException {
        try (exchange) {
            byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().set("Content-Type", "text/plain; charset=utf-8");
            if ("HEAD".equals(exchange.getRequestMethod())) {
                exchange.sendResponseHeaders(status, -1);
                return;
            }
            exchange.sendResponseHeaders(status, bytes.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(bytes);
            }
        }
    }

    @Override
    public void close() {
        server.stop(0);
        threads.shutdownNow();
        if (console != null) {
            console.close();
        }
    }
}
