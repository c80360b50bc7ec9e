package dev.varve.broker.metrics;

import com.yammer.metrics.core.Meter;

import java.util.concurrent.ConcurrentHashMap;

/**
 * Kafka's {@code kafka.server:type=BrokerTopicMetrics} meters: for all topics (no tag) and per topic
 * ({@code topic=NAME}, created at a topic's first use and removed with it), as Kafka's brokers report
 * them. Replication bytes are counted for all topics only, as in Kafka.
 */
public final class BrokerTopicStats {
    public static final String GROUP = "kafka.server";
    public static final String TYPE = "BrokerTopicMetrics";

    /** One topic's meters, or the all-topics ones. */
    public static final class Meters {
        public final Meter messagesIn;
        public final Meter bytesIn;
        public final Meter bytesOut;
        public final Meter bytesRejected;
        public final Meter failedProduceRequests;
        public final Meter failedFetchRequests;
        public final Meter totalProduceRequests;
        public final Meter totalFetchRequests;
        /** The names registered for these meters (what a deleted topic's removal removes). */
        private final java.util.List<com.yammer.metrics.core.MetricName> names = new java.util.ArrayList<>();

        Meters(KafkaMetrics metrics, String topic) {
            messagesIn = meter(metrics, "MessagesInPerSec", "messages", topic);
            bytesIn = meter(metrics, "BytesInPerSec", "bytes", topic);
            bytesOut = meter(metrics, "BytesOutPerSec", "bytes", topic);
            bytesRejected = meter(metrics, "BytesRejectedPerSec", "bytes", topic);
            failedProduceRequests = meter(metrics, "FailedProduceRequestsPerSec", "requests", topic);
            failedFetchRequests = meter(metrics, "FailedFetchRequestsPerSec", "requests", topic);
            totalProduceRequests = meter(metrics, "TotalProduceRequestsPerSec", "requests", topic);
            totalFetchRequests = meter(metrics, "TotalFetchRequestsPerSec", "requests", topic);
        }

        private Meter meter(KafkaMetrics metrics, String name, String eventType, String topic) {
            com.yammer.metrics.core.MetricName n = KafkaMetrics.name(GROUP, TYPE, name, "topic", topic);
            names.add(n);
            return metrics.meter(n, eventType);
        }
    }

    private final KafkaMetrics metrics;
    private final Meters all;
    private final Meter replicationBytesIn;
    private final Meter replicationBytesOut;
    private final ConcurrentHashMap<String, Meters> topics = new ConcurrentHashMap<>();

    public BrokerTopicStats(KafkaMetrics metrics) {
        this.metrics = metrics;
        this.all = new Meters(metrics, null);
        this.replicationBytesIn = metrics.meter(KafkaMetrics.name(GROUP, TYPE, "ReplicationBytesInPerSec"), "bytes");
        this.replicationBytesOut = metrics.meter(KafkaMetrics.name(GROUP, TYPE, "ReplicationBytesOutPerSec"), "bytes");
    }

    public Meters all() {
        return all;
    }

    public Meters topic(String topic) {
        return topics.computeIfAbsent(topic, t -> new Meters(metrics, t));
    }

    /** A produce to {@code topic} appended {@code records} records of {@code bytes} bytes. */
    public void produced(String topic, int records, long bytes) {
        Meters t = topic(topic);
        t.totalProduceRequests.mark();
        all.totalProduceRequests.mark();
        t.messagesIn.mark(records);
        all.messagesIn.mark(records);
        t.bytesIn.mark(bytes);
        all.bytesIn.mark(bytes);
    }

    /** A produce to {@code topic} failed ({@code bytes} of it refused). */
    public void produceFailed(String topic, long bytes) {
        Meters t = topic(topic);
        t.totalProduceRequests.mark();
        all.totalProduceRequests.mark();
        t.failedProduceRequests.mark();
        all.failedProduceRequests.mark();
        if (bytes > 0) {
            t.bytesRejected.mark(bytes);
            all.bytesRejected.mark(bytes);
        }
    }

    /** A fetch read a partition of {@code topic}: {@code bytes} to a consumer, or to a follower. */
    public void fetched(String topic, long bytes, boolean follower) {
        Meters t = topic(topic);
        t.totalFetchRequests.mark();
        all.totalFetchRequests.mark();
        if (follower) {
            replicationBytesOut.mark(bytes);
        } else if (bytes > 0) {
            t.bytesOut.mark(bytes);
            all.bytesOut.mark(bytes);
        }
    }

    public void fetchFailed(String topic) {
        Meters t = topic(topic);
        t.totalFetchRequests.mark();
        all.totalFetchRequests.mark();
        t.failedFetchRequests.mark();
        all.failedFetchRequests.mark();
    }

    /** A follower here appended {@code bytes} fetched from a leader. */
    public void replicated(long bytes) {
        replicationBytesIn.mark(bytes);
    }

    /** Forgets a deleted topic's meters. */
    public void removeTopic(String topic) {
        Meters removed = topics.remove(topic);
        if (removed != null) {
            removed.names.forEach(metrics::remove);
        }
    }
}
