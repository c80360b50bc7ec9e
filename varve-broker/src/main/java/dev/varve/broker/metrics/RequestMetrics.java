package dev.varve.broker.metrics;

import com.yammer.metrics.core.Histogram;
import com.yammer.metrics.core.Meter;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Kafka's {@code kafka.network:type=RequestMetrics} per API ({@code request=Produce}...): requests per
 * second per version, errors per second per error code (NONE included, as Kafka counts it), and the
 * time of each phase in milliseconds, as Kafka measures them:
 * <ul>
 *   <li>RequestQueueTimeMs: read off the socket until a request thread takes it;</li>
 *   <li>LocalTimeMs: the request thread's handling;</li>
 *   <li>RemoteTimeMs: waiting for others (acks=all followers, a fetch's data);</li>
 *   <li>ResponseQueueTimeMs: the answer ready until the network thread takes it;</li>
 *   <li>ResponseSendTimeMs: writing it to the socket;</li>
 *   <li>TotalTimeMs: all of it;</li>
 * </ul>
 * plus RequestBytes. Fetches are also reported as {@code FetchConsumer} or {@code FetchFollower}, as in
 * Kafka.
 */
public final class RequestMetrics {
    public static final String GROUP = "kafka.network";
    public static final String TYPE = "RequestMetrics";
    public static final String FETCH_CONSUMER = "FetchConsumer";
    public static final String FETCH_FOLLOWER = "FetchFollower";

    /** The metrics of one request name. */
    public final class Api {
        private final String request;
        private final Map<Short, Meter> requestRate = new ConcurrentHashMap<>();
        private final Map<Errors, Meter> errorRate = new ConcurrentHashMap<>();
        final Histogram requestQueueTimeMs;
        final Histogram localTimeMs;
        final Histogram remoteTimeMs;
        final Histogram responseQueueTimeMs;
        final Histogram responseSendTimeMs;
        final Histogram totalTimeMs;
        final Histogram requestBytes;

        Api(String request) {
            this.request = request;
            requestQueueTimeMs = histogram("RequestQueueTimeMs");
            localTimeMs = histogram("LocalTimeMs");
            remoteTimeMs = histogram("RemoteTimeMs");
            responseQueueTimeMs = histogram("ResponseQueueTimeMs");
            responseSendTimeMs = histogram("ResponseSendTimeMs");
            totalTimeMs = histogram("TotalTimeMs");
            requestBytes = histogram("RequestBytes");
        }

        private Histogram histogram(String name) {
            return metrics.histogram(KafkaMetrics.name(GROUP, TYPE, name, "request", request));
        }

        void received(short version, int bytes) {
            requestRate.computeIfAbsent(version, v -> metrics.meter(KafkaMetrics.name(GROUP, TYPE, "RequestsPerSec",
                    "request", request, "version", Short.toString(v)), "requests")).mark();
            requestBytes.update(bytes);
        }

        void errors(Map<Errors, Integer> counts) {
            for (Map.Entry<Errors, Integer> e : counts.entrySet()) {
                errorRate.computeIfAbsent(e.getKey(), err -> metrics.meter(KafkaMetrics.name(GROUP, TYPE, "ErrorsPerSec",
                        "request", request, "error", err.name()), "requests")).mark(e.getValue());
            }
        }

        void timed(Timing t) {
            requestQueueTimeMs.update(t.requestQueueMs());
            localTimeMs.update(t.localMs());
            remoteTimeMs.update(t.remoteMs());
            responseQueueTimeMs.update(t.responseQueueMs());
            responseSendTimeMs.update(t.responseSendMs());
            totalTimeMs.update(t.totalMs());
        }
    }

    /** The phases of one request, in milliseconds (see the class comment). */
    public record Timing(long requestQueueMs, long localMs, long remoteMs, long responseQueueMs, long responseSendMs) {
        public long totalMs() {
            return requestQueueMs + localMs + remoteMs + responseQueueMs + responseSendMs;
        }
    }

    private final KafkaMetrics metrics;
    private final Map<String, Api> apis = new ConcurrentHashMap<>();

    public RequestMetrics(KafkaMetrics metrics) {
        this.metrics = metrics;
    }

    private Api api(String request) {
        return apis.computeIfAbsent(request, Api::new);
    }

    /** Kafka's request name for an API ({@code Produce}, {@code ApiVersions}...). */
    public static String requestName(ApiKeys key) {
        return key.name;
    }

    /** A request was read: counts it per version, and its size. */
    public void received(ApiKeys key, short version, int bytes) {
        api(requestName(key)).received(version, bytes);
    }

    /** Its answer's error counts (as Kafka, from the response's own {@code errorCounts()}). */
    public void answered(ApiKeys key, Map<Errors, Integer> errorCounts) {
        api(requestName(key)).errors(errorCounts);
    }

    /** Its phases, once sent; {@code follower} for a follower's fetch. */
    public void completed(ApiKeys key, boolean follower, Timing timing) {
        api(requestName(key)).timed(timing);
        if (key == ApiKeys.FETCH) {
            api(follower ? FETCH_FOLLOWER : FETCH_CONSUMER).timed(timing);
        }
    }
}
