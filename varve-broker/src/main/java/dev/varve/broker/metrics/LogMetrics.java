package dev.varve.broker.metrics;

import com.yammer.metrics.core.MetricName;
import dev.varve.storage.PartitionLog;
import org.apache.kafka.common.TopicPartition;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/**
 * Kafka's per-partition {@code kafka.log:type=Log} gauges (Size, LogStartOffset, LogEndOffset,
 * NumLogSegments; tags topic and partition) for every log on this broker. Logs come and go with
 * metadata: {@link #sync} registers the gauges of new logs and removes those of logs gone, and runs
 * before each scrape and periodically (for JMX readers).
 */
public final class LogMetrics {
    private static final String GROUP = "kafka.log";
    private static final String TYPE = "Log";
    private static final String[] NAMES = {"Size", "LogStartOffset", "LogEndOffset", "NumLogSegments"};

    private final KafkaMetrics metrics;
    private final Supplier<Collection<PartitionLog>> logs;
    /** The log each partition's gauges read (a log deleted and created again is another object). Guarded by this. */
    private final Map<TopicPartition, PartitionLog> registered = new HashMap<>();

    public LogMetrics(KafkaMetrics metrics, Supplier<Collection<PartitionLog>> logs) {
        this.metrics = metrics;
        this.logs = logs;
    }

    private static MetricName name(String name, TopicPartition tp) {
        return KafkaMetrics.name(GROUP, TYPE, name, "topic", tp.topic(), "partition", Integer.toString(tp.partition()));
    }

    /** Registers the gauges of logs not yet registered, removes those of logs no longer here. */
    public synchronized void sync() {
        Map<TopicPartition, PartitionLog> now = new HashMap<>();
        for (PartitionLog log : logs.get()) {
            now.put(log.topicPartition(), log);
        }
        List<TopicPartition> gone = new ArrayList<>();
        for (Map.Entry<TopicPartition, PartitionLog> e : registered.entrySet()) {
            if (now.get(e.getKey()) != e.getValue()) {
                gone.add(e.getKey());
            }
        }
        for (TopicPartition tp : gone) {
            for (String n : NAMES) {
                metrics.remove(name(n, tp));
            }
            registered.remove(tp);
        }
        Map<PartitionLog, Boolean> seen = new IdentityHashMap<>();
        for (Map.Entry<TopicPartition, PartitionLog> e : now.entrySet()) {
            if (registered.containsKey(e.getKey()) || seen.put(e.getValue(), true) != null) {
                continue;
            }
            TopicPartition tp = e.getKey();
            PartitionLog log = e.getValue();
            metrics.gauge(name("Size", tp), log::size);
            metrics.gauge(name("LogStartOffset", tp), log::logStartOffset);
            metrics.gauge(name("LogEndOffset", tp), log::logEndOffset);
            metrics.gauge(name("NumLogSegments", tp), log::numberOfSegments);
            registered.put(tp, log);
        }
    }
}
