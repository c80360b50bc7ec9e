package dev.varve.broker.network;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.net.InetAddress;
import java.util.HashMap;
import java.util.Map;

/**
 * Kafka's connection limits: {@code max.connections.per.ip} (with {@code max.connections.per.ip.overrides},
 * "host:count,..."), past which a new connection from that address is closed at once, and
 * {@code max.connections}, at which the broker stops accepting on its client listeners until a connection
 * closes (clients wait in the listen backlog, as with Kafka's acceptor). The inter-broker listener is exempt
 * from {@code max.connections}, as in Kafka, so replication never starves. Thread-safe.
 */
final class ConnectionLimits {
    private static final Logger LOG = LoggerFactory.getLogger(ConnectionLimits.class);

    private final int maxConnections;
    private final int maxPerIp;
    private final Map<InetAddress, Integer> overrides;
    private final Map<InetAddress, Integer> perIp = new HashMap<>();
    private int counted;
    private Runnable onFull = () -> { };
    private Runnable onRoom = () -> { };

    ConnectionLimits(int maxConnections, int maxPerIp, Map<InetAddress, Integer> overrides) {
        this.maxConnections = maxConnections;
        this.maxPerIp = maxPerIp;
        this.overrides = Map.copyOf(overrides);
    }

    /** What {@link #admit} decided for a new connection. */
    enum Admission { SERVE, WAIT, REFUSE }

    private final java.util.ArrayDeque<Runnable> waiting = new java.util.ArrayDeque<>();

    /**
     * A connection from {@code address} was accepted ({@code counted}: on a listener {@code max.connections}
     * covers). REFUSE: its address is at its limit, close it. SERVE: serve it. WAIT: the broker is at
     * {@code max.connections}; {@code serveLater} runs (on the closing connection's thread) once another
     * connection closes, unless {@link #gaveUp} said first that this one closed while waiting. Every
     * connection not refused must be reported {@link #closed} (SERVE) or {@link #gaveUp} (still waiting).
     */
    synchronized Admission admit(InetAddress address, boolean counted, Runnable serveLater) {
        int limit = overrides.getOrDefault(address, maxPerIp);
        int now = perIp.getOrDefault(address, 0);
        if (now >= limit) {
            LOG.info("Rejected connection from {}, address already has the configured maximum of {} connections", address, limit);
            return Admission.REFUSE;
        }
        perIp.put(address, now + 1);
        if (!counted) {
            return Admission.SERVE;
        }
        if (this.counted >= maxConnections) {
            if (waiting.isEmpty()) {
                LOG.info("max.connections ({}) reached: new connections wait until others close", maxConnections);
            }
            waiting.add(serveLater);
            return Admission.WAIT;
        }
        this.counted++;
        return Admission.SERVE;
    }

    /** A connection told to WAIT closed before it was served. */
    synchronized void gaveUp(InetAddress address, Runnable serveLater) {
        if (waiting.remove(serveLater)) {
            release(address);
        }
    }

    /** A connection that was served closed: a waiting one, if any, is served in its place. */
    void closed(InetAddress address, boolean counted) {
        Runnable next = null;
        synchronized (this) {
            release(address);
            if (counted) {
                next = waiting.poll();
                if (next == null) {
                    this.counted--;
                }
            }
        }
        if (next != null) {
            next.run(); // takes over the closed connection's count
        }
    }

    private void release(InetAddress address) {
        perIp.computeIfPresent(address, (a, n) -> n <= 1 ? null : n - 1);
    }
}
