package dev.varve.broker.admin.console;

import dev.varve.broker.admin.AdminServer;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import org.junit.jupiter.api.Test;

import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A console whose Kafka listener does not answer: every API request ends with a 504 (or a 503 when too many
 * wait) after the deadline instead of hanging, and meanwhile /metrics and /health answer at once.
 */
class ConsoleIsolationTest {
    @Test
    void aStuckClusterNeverHoldsUpMetricsOrHealth() throws Exception {
        int closedPort;
        try (ServerSocket s = new ServerSocket(0)) {
            closedPort = s.getLocalPort(); // nothing listens there once closed
        }
        String bootstrap = "127.0.0.1:" + closedPort;
        ConsoleHost host = new ConsoleHost() {
            @Override
            public int nodeId() {
                return 1;
            }

            @Override
            public String plaintextBootstrap() {
                return bootstrap;
            }

            @Override
            public List<String> notReadyBecause() {
                return List.of();
            }

            @Override
            public OptionalInt activeControllerId() {
                return OptionalInt.empty();
            }
        };
        try (AdminServer server = new AdminServer(new InetSocketAddress("127.0.0.1", 0), new PrometheusRegistry(), List::of, host)) {
            String base = "http://127.0.0.1:" + server.address().getPort();
            HttpClient http = HttpClient.newHttpClient();
            long start = System.nanoTime();
            List<CompletableFuture<HttpResponse<String>>> api = new ArrayList<>();
            for (int i = 0; i < 4; i++) { // one for each of the API's threads
                api.add(http.sendAsync(HttpRequest.newBuilder(URI.create(base + "/api/overview")).timeout(Duration.ofSeconds(60)).build(),
                        HttpResponse.BodyHandlers.ofString()));
            }
            Thread.sleep(300); // the API's four threads are all waiting for the cluster now
            for (String path : List.of("/metrics", "/health/live", "/health/ready", "/ui/")) {
                long t = System.nanoTime();
                HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(base + path)).timeout(Duration.ofSeconds(5)).build(),
                        HttpResponse.BodyHandlers.ofString());
                assertThat(r.statusCode()).as(path).isEqualTo(200);
                assertThat(Duration.ofNanos(System.nanoTime() - t)).as(path).isLessThan(Duration.ofSeconds(2));
            }
            for (CompletableFuture<HttpResponse<String>> f : api) {
                HttpResponse<String> r = f.get(30, TimeUnit.SECONDS);
                assertThat(r.statusCode()).as(r.body()).isIn(503, 504);
                assertThat(r.body()).contains("\"error\"");
            }
            assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(Duration.ofSeconds(20));
        }
    }
}
