package dev.varve.broker.network;

import dev.varve.broker.quota.SampledRate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.net.InetAddress;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;

/**
 * Kafka's connection limits:
 * <ul>
 *   <li>{@code max.connections.per.ip} (with {@code max.connections.per.ip.overrides}, "host:count,..."),
 *       past which a new connection from that address is closed at once;</li>
 *   <li>{@code max.connections}, and a listener's own {@code listener.name.<name>.max.connections}: at
 *       the limit a new connection is accepted but nothing is read from it until another closes (clients
 *       wait, as with Kafka's blocked acceptor). The inter-broker listener is exempt from the broker-wide
 *       limit, as in Kafka, so replication never starves;</li>
 *   <li>{@code max.connection.creation.rate}, and a listener's own
 *       {@code listener.name.<name>.max.connection.creation.rate}: new connections per second, measured
 *       as Kafka's quotas are; past it the listener stops accepting for as long as it takes the rate to
 *       fall back (at most one quota window), as Kafka's acceptor does. The inter-broker listener is
 *       exempt from the broker-wide rate.</li>
 * </ul>
 * Thread-safe.
 */
final class ConnectionLimits {
    private static final Logger LOG = LoggerFactory.getLogger(ConnectionLimits.class);

    private final int maxConnections;
    private final int maxPerIp;
    private final Map<InetAddress, Integer> overrides;
    private final Map<String, Integer> listenerMax;
    private final Map<InetAddress, Integer> perIp = new HashMap<>();
    private final Map<String, Integer> perListener = new HashMap<>();
    private int counted;

    private final int brokerRate;
    private final Map<String, Integer> listenerRates;
    private final SampledRate brokerCreations;
    private final Map<String, SampledRate> listenerCreations = new HashMap<>();
    private final int samples;
    private final long windowMs;

    /** A connection waiting for room. */
    private record Waiting(String listener, boolean counted, Runnable serveLater) {
    }

    private final ArrayDeque<Waiting> waiting = new ArrayDeque<>();

    ConnectionLimits(int maxConnections, int maxPerIp, Map<InetAddress, Integer> overrides) {
        this(maxConnections, maxPerIp, overrides, Map.of(), Integer.MAX_VALUE, Map.of(), 11, 1000);
    }

    /**
     * @param listenerMax   listener name to its own max.connections
     * @param brokerRate    max.connection.creation.rate (per second)
     * @param listenerRates listener name to its own max.connection.creation.rate
     * @param samples       quota.window.num
     * @param windowMs      quota.window.size.seconds, in ms
     */
    ConnectionLimits(int maxConnections, int maxPerIp, Map<InetAddress, Integer> overrides, Map<String, Integer> listenerMax,
                     int brokerRate, Map<String, Integer> listenerRates, int samples, long windowMs) {
        this.maxConnections = maxConnections;
        this.maxPerIp = maxPerIp;
        this.overrides = Map.copyOf(overrides);
        this.listenerMax = Map.copyOf(listenerMax);
        this.brokerRate = brokerRate;
        this.listenerRates = Map.copyOf(listenerRates);
        this.samples = samples;
        this.windowMs = windowMs;
        this.brokerCreations = new SampledRate(samples, windowMs);
    }

    /** What {@link #admit} decided for a new connection. */
    enum Admission { SERVE, WAIT, REFUSE }

    /**
     * A connection from {@code address} was accepted on {@code listener} ({@code counted}: a listener
     * {@code max.connections} covers). REFUSE: its address is at its limit, close it. SERVE: serve it.
     * WAIT: the broker or the listener is at its limit; {@code serveLater} runs (on the closing
     * connection's thread) once there is room, unless {@link #gaveUp} said first that this one closed
     * while waiting. Every connection not refused must be reported {@link #closed} (SERVE) or
     * {@link #gaveUp} (still waiting).
     */
    synchronized Admission admit(InetAddress address, String listener, boolean counted, Runnable serveLater) {
        int limit = overrides.getOrDefault(address, maxPerIp);
        int now = perIp.getOrDefault(address, 0);
        if (now >= limit) {
            LOG.info("Rejected connection from {}, address already has the configured maximum of {} connections", address, limit);
            return Admission.REFUSE;
        }
        perIp.put(address, now + 1);
        if (!fits(listener, counted)) {
            if (waiting.isEmpty()) {
                LOG.info("max.connections reached (broker {}, listener {} {}): new connections wait until others close",
                        maxConnections, listener, listenerMax.getOrDefault(listener, Integer.MAX_VALUE));
            }
            waiting.add(new Waiting(listener, counted, serveLater));
            return Admission.WAIT;
        }
        take(listener, counted);
        return Admission.SERVE;
    }

    private boolean fits(String listener, boolean counted) {
        return (!counted || this.counted < maxConnections)
                && perListener.getOrDefault(listener, 0) < listenerMax.getOrDefault(listener, Integer.MAX_VALUE);
    }

    private void take(String listener, boolean counted) {
        if (counted) {
            this.counted++;
        }
        perListener.merge(listener, 1, Integer::sum);
    }

    /** A connection told to WAIT closed before it was served. */
    synchronized void gaveUp(InetAddress address, Runnable serveLater) {
        if (waiting.removeIf(w -> w.serveLater() == serveLater)) {
            release(address);
        }
    }

    /** A connection that was served closed: waiting ones that now fit are served, in the order they came. */
    void closed(InetAddress address, String listener, boolean counted) {
        java.util.List<Runnable> next = new java.util.ArrayList<>();
        synchronized (this) {
            release(address);
            if (counted) {
                this.counted--;
            }
            perListener.computeIfPresent(listener, (l, n) -> n <= 1 ? null : n - 1);
            for (Iterator<Waiting> it = waiting.iterator(); it.hasNext(); ) {
                Waiting w = it.next();
                if (fits(w.listener(), w.counted())) {
                    it.remove();
                    take(w.listener(), w.counted());
                    next.add(w.serveLater());
                }
            }
        }
        next.forEach(Runnable::run);
    }

    /** Until when accepting is paused: broker-wide (counted listeners), and per listener. */
    private long brokerPausedUntil;
    private final Map<String, Long> listenerPausedUntil = new HashMap<>();

    /**
     * A new connection on {@code listener} ({@code counted}: under the broker-wide rate): how long to wait
     * before taking it up, as if the acceptor had paused. Connections are taken up one after the other: each
     * is recorded at the time it is taken up, and when that puts the rate past its limit, accepting pauses
     * for as long as the rate needs to fall back (at most one quota window) before the next one.
     */
    synchronized long creationDelay(String listener, boolean counted, long nowMs) {
        Integer rate = listenerRates.get(listener);
        boolean limited = rate != null && rate != Integer.MAX_VALUE;
        boolean brokerLimited = counted && brokerRate != Integer.MAX_VALUE;
        if (!limited && !brokerLimited) {
            return 0;
        }
        long start = Math.max(nowMs, listenerPausedUntil.getOrDefault(listener, 0L));
        if (counted) {
            start = Math.max(start, brokerPausedUntil);
        }
        if (brokerLimited) {
            brokerPausedUntil = Math.max(brokerPausedUntil, start + brokerCreations.recordAndThrottle(1, start, brokerRate, windowMs));
        }
        if (limited) {
            long pause = listenerCreations.computeIfAbsent(listener, l -> new SampledRate(samples, windowMs))
                    .recordAndThrottle(1, start, rate, windowMs);
            listenerPausedUntil.put(listener, Math.max(listenerPausedUntil.getOrDefault(listener, 0L), start + pause));
        }
        return start - nowMs;
    }

    private void release(InetAddress address) {
        perIp.computeIfPresent(address, (a, n) -> n <= 1 ? null : n - 1);
    }
}
