package dev.varve.broker.admin.console;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The web console of the admin listener: its page at {@code /ui} ({@link ConsoleAssets}) and the JSON API
 * the page uses at {@code /api} ({@link ConsoleApi}). API requests run on four threads of their own with a
 * short queue (a full queue answers 503 at once), and every Kafka call they make has a deadline: the admin
 * listener's own threads only hand requests over, so /metrics and /health never wait behind the console.
 */
public final class Console implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(Console.class);
    static final ObjectMapper JSON = new ObjectMapper();
    /** Request bodies are small JSON objects (a topic's settings at most). */
    static final int MAX_BODY_BYTES = 64 * 1024;
    /** Mutating requests must carry this header: a page of another origin cannot send it without CORS, which is never allowed. */
    static final String CSRF_HEADER = "X-Varve-Console";

    private final ThreadPoolExecutor threads;
    private final ConsoleApi api;
    private final ConsoleAssets assets = new ConsoleAssets();

    /** Whether the console may change the cluster ({@code varve.admin.console.writes}). */
    private final boolean writes;
    /** The admin listener is on a loopback address: API requests must name a loopback host (no DNS rebinding). */
    private final boolean loopbackOnly;

    public Console(ConsoleHost host, PrometheusRegistry registry) {
        this(host, registry, true, false);
    }

    public Console(ConsoleHost host, PrometheusRegistry registry, boolean writes, boolean loopbackOnly) {
        this.writes = writes;
        this.loopbackOnly = loopbackOnly;
        AtomicInteger n = new AtomicInteger();
        threads = new ThreadPoolExecutor(4, 4, 30, TimeUnit.SECONDS, new ArrayBlockingQueue<>(32), r -> {
            Thread t = new Thread(r, "varve-console-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
        threads.allowCoreThreadTimeOut(true);
        api = new ConsoleApi(host, registry);
    }

    /** Adds /ui and /api to the admin listener. */
    public void register(HttpServer server) {
        server.createContext("/ui", assets);
        server.createContext("/api", exchange -> {
            try {
                threads.execute(() -> serve(exchange));
            } catch (RejectedExecutionException e) {
                reply(exchange, 503, error("the console is busy (too many requests at once): try again"));
            }
        });
    }

    private void serve(HttpExchange exchange) {
        int status;
        JsonNode body;
        try {
            checkHost(exchange);
            Request request = Request.of(exchange);
            if (!writes && request.body != null) {
                throw new ApiException(403, "this console is read-only: its admin listener is not on a loopback address;"
                        + " set varve.admin.console.writes=true to allow changes from it");
            }
            body = api.handle(request);
            status = "POST".equals(request.method) && body.has("created") ? 201 : 200;
        } catch (ApiException e) {
            status = e.status;
            body = error(e.getMessage());
        } catch (RuntimeException e) {
            LOG.warn("console API {} {} failed", exchange.getRequestMethod(), exchange.getRequestURI().getRawPath(), e);
            status = 500;
            body = error("internal error: " + e);
        }
        reply(exchange, status, body);
    }

    /**
     * On a loopback listener, a request must name a loopback host (localhost, 127.x, [::1]): a page of another
     * site whose name was made to resolve to 127.0.0.1 (DNS rebinding) names its own host and is refused.
     */
    private void checkHost(HttpExchange exchange) {
        if (!loopbackOnly) {
            return;
        }
        String host = exchange.getRequestHeaders().getFirst("Host");
        if (host == null) {
            return; // HTTP/1.0 without Host: not a browser's request
        }
        String name = host.startsWith("[") ? host.substring(1, Math.max(1, host.indexOf(']')))
                : host.contains(":") ? host.substring(0, host.lastIndexOf(':')) : host;
        boolean ok = name.equalsIgnoreCase("localhost") || name.equals("::1") || name.startsWith("127.")
                && name.chars().allMatch(c -> c == '.' || Character.isDigit(c));
        if (!ok) {
            throw new ApiException(403, "requests to this console must name a loopback host (localhost or 127.0.0.1), not " + host);
        }
    }

    static ObjectNode error(String message) {
        ObjectNode o = JSON.createObjectNode();
        o.put("error", message == null ? "error" : message);
        return o;
    }

    private static void reply(HttpExchange exchange, int status, JsonNode body) {
        try (exchange) {
            byte[] bytes = JSON.writeValueAsBytes(body);
            exchange.getResponseHeaders().set("Content-Type", "application/json");
            exchange.getResponseHeaders().set("Cache-Control", "no-store");
            exchange.getResponseHeaders().set("X-Content-Type-Options", "nosniff");
            exchange.sendResponseHeaders(status, bytes.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(bytes);
            }
        } catch (IOException e) {
            LOG.debug("console API answer not sent: {}", e.toString());
        }
    }

    @Override
    public void close() {
        threads.shutdownNow();
        api.close();
    }

    /** One API request: method, decoded path segments after /api, query parameters and (for writes) a JSON body. */
    static final class Request {
        final String method;
        final List<String> path;
        final Map<String, String> query;
        final JsonNode body;

        Request(String method, List<String> path, Map<String, String> query, JsonNode body) {
            this.method = method;
            this.path = path;
            this.query = query;
            this.body = body;
        }

        static Request of(HttpExchange exchange) {
            String method = exchange.getRequestMethod();
            String raw = exchange.getRequestURI().getRawPath();
            List<String> path = new ArrayList<>();
            for (String segment : raw.substring("/api".length()).split("/")) {
                if (!segment.isEmpty()) {
                    path.add(decode(segment));
                }
            }
            Map<String, String> query = new LinkedHashMap<>();
            String q = exchange.getRequestURI().getRawQuery();
            if (q != null && !q.isEmpty()) {
                if (q.length() > 8192) {
                    throw ApiException.badRequest("query string too long");
                }
                for (String pair : q.split("&")) {
                    if (pair.isEmpty()) {
                        continue;
                    }
                    int eq = pair.indexOf('=');
                    String k = decodeQuery(eq < 0 ? pair : pair.substring(0, eq));
                    String v = eq < 0 ? "" : decodeQuery(pair.substring(eq + 1));
                    query.put(k, v);
                }
            }
            JsonNode body = null;
            if (!"GET".equals(method) && !"HEAD".equals(method)) {
                if (exchange.getRequestHeaders().getFirst(CSRF_HEADER) == null) {
                    throw new ApiException(403, method + " requests need the " + CSRF_HEADER + " header (any value)");
                }
                body = readBody(exchange);
            }
            return new Request(method, path, query, body);
        }

        private static JsonNode readBody(HttpExchange exchange) {
            try (InputStream in = exchange.getRequestBody()) {
                byte[] bytes = in.readNBytes(MAX_BODY_BYTES + 1);
                if (bytes.length > MAX_BODY_BYTES) {
                    throw new ApiException(413, "request body over " + MAX_BODY_BYTES + " bytes");
                }
                if (bytes.length == 0) {
                    return JSON.createObjectNode();
                }
                JsonNode node = JSON.readTree(bytes);
                if (node == null || !node.isObject()) {
                    throw ApiException.badRequest("the request body must be a JSON object");
                }
                return node;
            } catch (com.fasterxml.jackson.core.JacksonException e) {
                throw ApiException.badRequest("the request body is not JSON: " + e.getOriginalMessage());
            } catch (IOException e) {
                throw ApiException.badRequest("cannot read the request body: " + e.getMessage());
            }
        }

        /** A path segment: %XX decoded, '+' kept as it is. */
        private static String decode(String s) {
            try {
                return URLDecoder.decode(s.replace("+", "%2B"), StandardCharsets.UTF_8);
            } catch (IllegalArgumentException e) {
                throw ApiException.badRequest("bad URL encoding in '" + s + "'");
            }
        }

        /** A query value: '+' is a space, %XX decoded. */
        private static String decodeQuery(String s) {
            try {
                return URLDecoder.decode(s, StandardCharsets.UTF_8);
            } catch (IllegalArgumentException e) {
                throw ApiException.badRequest("bad URL encoding in '" + s + "'");
            }
        }

        String segment(int i) {
            return i < path.size() ? path.get(i) : null;
        }

        /** An optional whole-number parameter within [min, max]. */
        Long longParam(String name, long min, long max) {
            String v = query.get(name);
            if (v == null || v.isEmpty()) {
                return null;
            }
            return parseLong(name, v, min, max);
        }

        int intParam(String name, int dflt, int min, int max) {
            Long v = longParam(name, min, max);
            return v == null ? dflt : v.intValue();
        }

        static long parseLong(String name, String v, long min, long max) {
            long n;
            try {
                n = Long.parseLong(v.trim());
            } catch (NumberFormatException e) {
                throw ApiException.badRequest(name + " must be a whole number, not '" + abbreviate(v) + "'");
            }
            if (n < min || n > max) {
                throw ApiException.badRequest(name + " must be between " + min + " and " + max + ", not " + n);
            }
            return n;
        }

        /** One of {@code allowed}, or {@code dflt} when absent. */
        String choice(String name, String dflt, String... allowed) {
            String v = query.get(name);
            if (v == null || v.isEmpty()) {
                return dflt;
            }
            for (String a : allowed) {
                if (a.equals(v)) {
                    return v;
                }
            }
            throw ApiException.badRequest(name + " must be one of " + String.join(", ", allowed) + ", not '" + abbreviate(v) + "'");
        }

        static String abbreviate(String s) {
            return s.length() > 60 ? s.substring(0, 60) + "..." : s;
        }
    }
}
