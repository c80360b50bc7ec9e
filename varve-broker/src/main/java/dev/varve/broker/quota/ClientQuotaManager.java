package dev.varve.broker.quota;

import dev.varve.metadata.ClientQuotas;
import org.apache.kafka.common.utils.Time;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

/**
 * Enforces client quotas as Kafka's ClientQuotaManager does: each request's bytes (produce: the records
 * sent; fetch: the records returned) or request-thread time is recorded against the entity its quota
 * names (see {@link ClientQuotas#resolve}), as a rate over {@code quota.window.num} samples of
 * {@code quota.window.size.seconds}; when the rate is above the quota the client is told to wait
 * {@code (rate - quota) / quota * window} ms ({@code throttle_time_ms}), and the broker reads nothing
 * more from its connection until then (KIP-219), so a client that ignores the hint is slowed all the same.
 *
 * <p>Thread-safe. Usage of entities unseen for an hour is forgotten.
 */
public final class ClientQuotaManager {
    /** What is measured. */
    public enum Type {
        PRODUCE(ClientQuotas.PRODUCER_BYTE_RATE),
        FETCH(ClientQuotas.CONSUMER_BYTE_RATE),
        /** Request-thread time, recorded in percent-seconds: 100 per second is one thread's whole time. */
        REQUEST(ClientQuotas.REQUEST_PERCENTAGE);

        final String key;

        Type(String key) {
            this.key = key;
        }
    }

    private static final long INACTIVE_MS = 3_600_000;

    private record Key(Type type, String user, String clientId) {
    }

    private final Supplier<ClientQuotas> quotas;
    private final Time time;
    private final int samples;
    private final long windowMs;
    private final Map<Key, SampledRate> rates = new ConcurrentHashMap<>();
    private volatile long lastPurgeMs;

    public ClientQuotaManager(Supplier<ClientQuotas> quotas, Time time, int samples, long windowMs) {
        if (samples < 2 || windowMs < 1) {
            throw new IllegalArgumentException("quota.window.num must be at least 2 and the window at least 1 ms");
        }
        this.quotas = quotas;
        this.time = time;
        this.samples = samples;
        this.windowMs = windowMs;
        this.lastPurgeMs = time.milliseconds();
    }

    /** Whether any quota exists (else recording is skipped). */
    public boolean active() {
        return !quotas.get().isEmpty();
    }

    /**
     * Records {@code value} for the client and returns how long it must wait (0 when within its quota,
     * or when no quota applies).
     */
    public long record(Type type, String user, String clientId, double value) {
        ClientQuotas.Resolved q = quotas.get().resolve(user, clientId, type.key);
        if (q == null) {
            return 0;
        }
        long now = time.milliseconds();
        maybePurge(now);
        SampledRate rate = rates.computeIfAbsent(new Key(type, q.user(), q.clientId()), k -> new SampledRate(samples, windowMs));
        return rate.recordAndThrottle(value, now, q.quota(), type == Type.REQUEST ? windowMs : Long.MAX_VALUE);
    }

    /**
     * The most a single fetch may return to a client held to a consumer quota: one full window's worth,
     * as Kafka caps it, so one response cannot blow far past the quota; {@code Integer.MAX_VALUE} without one.
     */
    public int maxFetchBytes(String user, String clientId) {
        ClientQuotas.Resolved q = quotas.get().resolve(user, clientId, Type.FETCH.key);
        if (q == null) {
            return Integer.MAX_VALUE;
        }
        return (int) Math.max(1, Math.min(Integer.MAX_VALUE, q.quota() * (samples - 1) * windowMs / 1000.0));
    }

    private void maybePurge(long now) {
        if (now - lastPurgeMs < 60_000) {
            return;
        }
        lastPurgeMs = now;
        rates.values().removeIf(r -> r.lastRecordMs() < now - INACTIVE_MS);
    }

    /** Entities whose usage is tracked (tests, metrics). */
    int tracked() {
        return rates.size();
    }
}
