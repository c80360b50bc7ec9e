package dev.varve.broker.metrics;

import com.yammer.metrics.core.Gauge;
import com.yammer.metrics.core.Histogram;
import com.yammer.metrics.core.Meter;
import com.yammer.metrics.core.Metric;
import com.yammer.metrics.core.MetricName;
import com.yammer.metrics.core.MetricsRegistry;
import com.yammer.metrics.reporting.JmxReporter;

import javax.management.ObjectName;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.regex.Pattern;

/**
 * A broker's metrics as Apache Kafka keeps its own: Yammer metrics (the library Kafka's brokers use for
 * these metrics) named with Kafka's MBean names ({@code kafka.server:type=BrokerTopicMetrics,name=BytesInPerSec,topic=t}),
 * so that the JMX beans, their attributes (Count, OneMinuteRate, 99thPercentile, Value...) and their
 * semantics (one-, five- and fifteen-minute exponentially weighted rates, exponentially decaying
 * histograms) are Kafka's, and dashboards and exporters built for Kafka read them unchanged.
 *
 * <p>Each broker has its own registry (tests run several brokers in one JVM); with {@code jmx} its
 * metrics are registered as MBeans too, which two brokers of one JVM cannot both do.
 */
public final class KafkaMetrics implements AutoCloseable {
    private static final Pattern PLAIN = Pattern.compile("[A-Za-z0-9_.\\-]*");

    private final MetricsRegistry registry = new MetricsRegistry();
    private final JmxReporter jmx;

    public KafkaMetrics(boolean jmx) {
        if (jmx) {
            this.jmx = new JmxReporter(registry);
            this.jmx.start();
        } else {
            this.jmx = null;
        }
    }

    /** A registry with no MBeans (tests, tools). */
    public static KafkaMetrics withoutJmx() {
        return new KafkaMetrics(false);
    }

    public MetricsRegistry registry() {
        return registry;
    }

    /**
     * Kafka's name for a metric: MBean {@code group:type=TYPE,name=NAME,k1=v1,...} with the tags in the
     * order given (pairs of key and value), empty values left out, a value JMX cannot hold as it is
     * quoted (as Kafka's {@code Sanitizer.jmxSanitize} does).
     */
    public static MetricName name(String group, String type, String name, String... tags) {
        if (tags.length % 2 != 0) {
            throw new IllegalArgumentException("tags come in key-value pairs");
        }
        Map<String, String> t = new LinkedHashMap<>();
        for (int i = 0; i < tags.length; i += 2) {
            if (tags[i + 1] != null && !tags[i + 1].isEmpty()) {
                t.put(tags[i], tags[i + 1]);
            }
        }
        StringBuilder mbean = new StringBuilder(group).append(":type=").append(type).append(",name=").append(name);
        StringBuilder scope = new StringBuilder();
        for (Map.Entry<String, String> e : t.entrySet()) {
            mbean.append(',').append(e.getKey()).append('=').append(jmxValue(e.getValue()));
            if (scope.length() > 0) {
                scope.append('.');
            }
            scope.append(e.getKey()).append('.').append(e.getValue().replace('.', '_'));
        }
        return new MetricName(group, type, name, scope.length() == 0 ? null : scope.toString(), mbean.toString());
    }

    private static String jmxValue(String value) {
        return PLAIN.matcher(value).matches() ? value : ObjectName.quote(value);
    }

    /** A rate of events ({@code eventType}: "bytes", "requests"...) with its count. */
    public Meter meter(MetricName name, String eventType) {
        return registry.newMeter(name, eventType, TimeUnit.SECONDS);
    }

    /** A rate of events per {@code rateUnit} (Kafka's idle-percent meters mark nanoseconds and rate them per nanosecond). */
    public Meter meter(MetricName name, String eventType, TimeUnit rateUnit) {
        return registry.newMeter(name, eventType, rateUnit);
    }

    /** Durations (ms) and their rate, as Kafka's LogFlushRateAndTimeMs. */
    public com.yammer.metrics.core.Timer timer(MetricName name) {
        return registry.newTimer(name, TimeUnit.MILLISECONDS, TimeUnit.SECONDS);
    }

    /** A distribution (biased to the last five minutes, as Kafka's request time histograms). */
    public Histogram histogram(MetricName name) {
        return registry.newHistogram(name, true);
    }

    /** A value read when asked for. */
    public <T> Gauge<T> gauge(MetricName name, Supplier<T> value) {
        return registry.newGauge(name, new Gauge<T>() {
            @Override
            public T value() {
                return value.get();
            }
        });
    }

    /** Forgets a metric (a deleted topic's, a partition no longer here). */
    public void remove(MetricName name) {
        registry.removeMetric(name);
    }

    /** The metrics registered now, by name. */
    public Map<MetricName, Metric> all() {
        return registry.allMetrics();
    }

    @Override
    public void close() {
        if (jmx != null) {
            jmx.shutdown();
        }
        registry.shutdown();
    }
}
