package dev.varve.metadata.quorum;

import dev.varve.metadata.MetadataRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.function.LongSupplier;

/**
 * The active controller's liveness probe of silent brokers: a TCP connect to each of a broker's
 * registered endpoints, closed at once. When every endpoint refuses the connection (the host answers
 * and nothing listens: the broker process is gone, e.g. {@code kill -9} or a crash), the controller may
 * fence the broker before its session timeout ({@code ClusterControl#tick} with the refused brokers),
 * so its partitions get new leaders in about the probe delay instead of {@code broker.session.timeout.ms}.
 * A connection that is accepted, times out or cannot be routed proves nothing: the broker then keeps its
 * session until it expires, as in Kafka (a dead host or a network partition is decided by the timeout).
 *
 * <p>Probes run on one daemon thread, at most one per broker at a time and one per broker per
 * {@code minIntervalMs}; the controller's event thread never waits for one.
 */
public final class EndpointProbe implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(EndpointProbe.class);

    private final int connectTimeoutMs;
    private final long minIntervalMs;
    private final LongSupplier clockMs;
    private final ExecutorService executor = Executors.newSingleThreadExecutor(r -> {
        Thread t = new Thread(r, "varve-controller-probe");
        t.setDaemon(true);
        return t;
    });
    private final Map<Integer, Long> lastProbeMs = new ConcurrentHashMap<>();
    private final Set<Integer> inFlight = ConcurrentHashMap.newKeySet();

    /**
     * @param connectTimeoutMs how long one connect may take (a timeout counts as "alive or unknown")
     * @param minIntervalMs    at most one probe per broker this often
     */
    public EndpointProbe(int connectTimeoutMs, long minIntervalMs, LongSupplier clockMs) {
        this.connectTimeoutMs = connectTimeoutMs;
        this.minIntervalMs = minIntervalMs;
        this.clockMs = clockMs;
    }

    /** Probes broker {@code brokerId}'s endpoints in the background; {@code onRefused} runs (on the probe thread) when all refuse. */
    public void probe(int brokerId, List<MetadataRecord.Endpoint> endpoints, Runnable onRefused) {
        long now = clockMs.getAsLong();
        Long last = lastProbeMs.get(brokerId);
        if (endpoints.isEmpty() || (last != null && now - last < minIntervalMs) || !inFlight.add(brokerId)) {
            return;
        }
        lastProbeMs.put(brokerId, now);
        try {
            executor.execute(() -> {
                try {
                    if (allRefuse(endpoints)) {
                        LOG.info("Broker {} is silent and nothing listens on {}: its process is gone", brokerId, endpoints);
                        onRefused.run();
                    }
                } finally {
                    inFlight.remove(brokerId);
                }
            });
        } catch (RejectedExecutionException e) {
            inFlight.remove(brokerId); // closed
        }
    }

    private boolean allRefuse(List<MetadataRecord.Endpoint> endpoints) {
        for (MetadataRecord.Endpoint e : endpoints) {
            try (Socket socket = new Socket()) {
                socket.connect(new InetSocketAddress(e.host(), e.port()), connectTimeoutMs);
                return false; // something accepted: alive (or another process on its port; the session decides)
            } catch (ConnectException refused) {
                // nothing listens there (or the connect timed out: see below)
                if (refused.getMessage() == null || !refused.getMessage().toLowerCase(java.util.Locale.ROOT).contains("refused")) {
                    return false;
                }
            } catch (IOException | RuntimeException other) {
                return false; // timed out, unroutable, unresolvable: proves nothing
            }
        }
        return true;
    }

    @Override
    public void close() {
        executor.shutdownNow();
    }
}
