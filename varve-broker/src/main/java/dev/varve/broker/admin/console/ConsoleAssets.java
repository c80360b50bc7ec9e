package dev.varve.broker.admin.console;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpHandler;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.regex.Pattern;

/**
 * The console's built files, from the classpath ({@code dev/varve/console/ui/}, put there by the
 * varve-console module): {@code index.html} for {@code /ui} and {@code /ui/}, which is never cached
 * (it names the current build's assets), and {@code /ui/assets/NAME}, whose names carry a hash of
 * their content, cached for a year. Nothing outside that folder can be named.
 */
final class ConsoleAssets implements HttpHandler {
    static final String ROOT = "dev/varve/console/ui/";
    /** A file name: no slash, no leading dot (so no "..", no hidden files). */
    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9_-][A-Za-z0-9._-]{0,200}");
    private static final Map<String, String> TYPES = Map.of(
            "html", "text/html; charset=utf-8",
            "js", "text/javascript; charset=utf-8",
            "css", "text/css; charset=utf-8",
            "svg", "image/svg+xml",
            "png", "image/png",
            "ico", "image/x-icon",
            "json", "application/json",
            "woff2", "font/woff2",
            "txt", "text/plain; charset=utf-8");
    /**
     * Scripts and styles of this origin only (uPlot and Preact set styles through the DOM, which 'unsafe-inline'
     * for style covers); no framing.
     */
    static final String CSP = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
            + "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

    private final ClassLoader loader = ConsoleAssets.class.getClassLoader();
    /** The files read so far (only those that exist). */
    private final Map<String, byte[]> cache = new ConcurrentHashMap<>();

    @Override
    public void handle(HttpExchange exchange) throws IOException {
        try (exchange) {
            String method = exchange.getRequestMethod();
            if (!"GET".equals(method) && !"HEAD".equals(method)) {
                exchange.getResponseHeaders().set("Allow", "GET, HEAD");
                send(exchange, 405, "text/plain; charset=utf-8", "method not allowed\n".getBytes(StandardCharsets.UTF_8), null);
                return;
            }
            String path = exchange.getRequestURI().getPath();
            String file;
            String cacheControl;
            if (path.equals("/ui") || path.equals("/ui/") || path.equals("/ui/index.html")) {
                file = "index.html";
                cacheControl = "no-cache";
            } else if (path.startsWith("/ui/assets/") && NAME.matcher(path.substring("/ui/assets/".length())).matches()) {
                file = "assets/" + path.substring("/ui/assets/".length());
                cacheControl = "public, max-age=31536000, immutable";
            } else if (path.startsWith("/ui/") && NAME.matcher(path.substring("/ui/".length())).matches()) {
                file = path.substring("/ui/".length());
                cacheControl = "public, max-age=3600";
            } else {
                file = null;
                cacheControl = null;
            }
            // only files that exist are cached: a miss must not be remembered, or requests for made-up
            // names would grow the cache without bound
            Optional<byte[]> body = file == null ? Optional.empty() : Optional.ofNullable(cache.get(file));
            if (body.isEmpty() && file != null) {
                body = load(file);
                body.ifPresent(b -> cache.put(file, b));
            }
            if (body.isEmpty()) {
                String why = "index.html".equals(file)
                        ? "this build of Varve has no web console (varve-console was not built into it)\n"
                        : "not found\n";
                send(exchange, 404, "text/plain; charset=utf-8", why.getBytes(StandardCharsets.UTF_8), null);
                return;
            }
            String ext = file.substring(file.lastIndexOf('.') + 1);
            send(exchange, 200, TYPES.getOrDefault(ext, "application/octet-stream"), body.get(), cacheControl);
        }
    }

    private Optional<byte[]> load(String file) {
        try (InputStream in = loader.getResourceAsStream(ROOT + file)) {
            return in == null ? Optional.empty() : Optional.of(in.readAllBytes());
        } catch (IOException e) {
            return Optional.empty();
        }
    }

    private static void send(HttpExchange exchange, int status, String type, byte[] body, String cacheControl) throws IOException {
        exchange.getResponseHeaders().set("Content-Type", type);
        exchange.getResponseHeaders().set("X-Content-Type-Options", "nosniff");
        exchange.getResponseHeaders().set("Content-Security-Policy", CSP);
        exchange.getResponseHeaders().set("Referrer-Policy", "no-referrer");
        if (cacheControl != null) {
            exchange.getResponseHeaders().set("Cache-Control", cacheControl);
        }
        if ("HEAD".equals(exchange.getRequestMethod())) {
            exchange.sendResponseHeaders(status, -1);
            return;
        }
        exchange.sendResponseHeaders(status, body.length);
        try (OutputStream out = exchange.getResponseBody()) {
            out.write(body);
        }
    }
}
