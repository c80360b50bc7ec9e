package dev.varve.broker.metrics;

import com.yammer.metrics.core.Counter;
import com.yammer.metrics.core.Gauge;
import com.yammer.metrics.core.Metered;
import com.yammer.metrics.core.Metric;
import com.yammer.metrics.core.MetricName;
import com.yammer.metrics.core.Sampling;
import com.yammer.metrics.core.Summarizable;
import com.yammer.metrics.stats.Snapshot;
import io.prometheus.metrics.model.registry.MultiCollector;
import io.prometheus.metrics.model.snapshots.CounterSnapshot;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot;
import io.prometheus.metrics.model.snapshots.Labels;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;

import javax.management.MalformedObjectNameException;
import javax.management.ObjectName;
import java.util.ArrayList;
import java.util.Hashtable;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The broker's Kafka-named metrics in the Prometheus format, named as the Prometheus JMX exporter
 * (1.x) names Kafka's MBeans with its Kafka example rules ({@code example_configs/kafka-2_0_0.yml}), so a
 * dashboard built on Kafka with that exporter reads Varve unchanged, without a JMX exporter to run:
 * <ul>
 *   <li>a meter {@code kafka.G:type=T,name=NPerSec,k=v} is the counter {@code kafka_g_t_n_total{k="v"}}
 *       (another meter, or a counter: {@code kafka_g_t_n_count_total});</li>
 *   <li>a gauge is {@code kafka_g_t_n{k="v"}};</li>
 *   <li>a histogram or timer is the gauge {@code kafka_g_t_n{k="v",quantile="0.50"}} (0.50, 0.75, 0.95,
 *       0.98, 0.99, 0.999, over the last five minutes as Kafka's) and the counter
 *       {@code kafka_g_t_n_count_total};</li>
 * </ul>
 * all names lower case, the MBean's tags as labels. Read straight from the registry, not through JMX:
 * a scrape of a broker with thousands of partitions costs milliseconds.
 */
public final class KafkaPrometheusCollector implements MultiCollector {
    private static final String[] QUANTILE_LABELS = {"0.50", "0.75", "0.95", "0.98", "0.99", "0.999"};
    private static final double[] QUANTILES = {0.50, 0.75, 0.95, 0.98, 0.99, 0.999};

    private final KafkaMetrics metrics;
    private final Runnable beforeScrape;
    /** Per metric name: its Prometheus name stem and labels (parsed once). */
    private final Map<MetricName, Parsed> parsed = new ConcurrentHashMap<>();

    private record Parsed(String stem, boolean perSec, Labels labels) {
    }

    public KafkaPrometheusCollector(KafkaMetrics metrics) {
        this(metrics, () -> { });
    }

    /** @param beforeScrape brings dynamic metrics up to date first (the logs' gauges) */
    public KafkaPrometheusCollector(KafkaMetrics metrics, Runnable beforeScrape) {
        this.metrics = metrics;
        this.beforeScrape = beforeScrape;
    }

    private static Parsed parse(MetricName n) {
        String group = n.getGroup().startsWith("kafka.") ? n.getGroup().substring("kafka.".length()) : n.getGroup();
        String name = n.getName();
        boolean perSec = name.contains("PerSec");
        String stem = perSec ? name.substring(0, name.indexOf("PerSec")) : name;
        String full = ("kafka_" + group + "_" + n.getType() + "_" + stem).toLowerCase(Locale.ROOT).replaceAll("[^a-z0-9_:]", "_");
        List<String> pairs = new ArrayList<>();
        try {
            Hashtable<String, String> props = new ObjectName(n.getMBeanName()).getKeyPropertyList();
            for (Map.Entry<String, String> e : new TreeMap<>(props).entrySet()) {
                if (e.getKey().equals("type") || e.getKey().equals("name")) {
                    continue;
                }
                String v = e.getValue();
                if (v.length() >= 2 && v.startsWith("\"") && v.endsWith("\"")) {
                    v = ObjectName.unquote(v);
                }
                pairs.add(e.getKey().replaceAll("[^A-Za-z0-9_]", "_"));
                pairs.add(v);
            }
        } catch (MalformedObjectNameException e) {
            // every name here is built by KafkaMetrics.name: cannot happen
            throw new IllegalStateException("bad metric name " + n.getMBeanName(), e);
        }
        return new Parsed(full, perSec, Labels.of(pairs.toArray(String[]::new)));
    }

    @Override
    public MetricSnapshots collect() {
        beforeScrape.run();
        Map<String, CounterSnapshot.Builder> counters = new TreeMap<>();
        Map<String, GaugeSnapshot.Builder> gauges = new TreeMap<>();
        Map<MetricName, Metric> all = metrics.all();
        for (Map.Entry<MetricName, Metric> e : all.entrySet()) {
            Parsed p = parsed.computeIfAbsent(e.getKey(), KafkaPrometheusCollector::parse);
            Metric m = e.getValue();
            if (m instanceof Sampling sampling && m instanceof Summarizable) { // histograms and timers
                Snapshot s = sampling.getSnapshot();
                GaugeSnapshot.Builder g = gauges.computeIfAbsent(p.stem(), n -> GaugeSnapshot.builder().name(n)
                        .help("Kafka's " + e.getKey().getType() + " " + e.getKey().getName() + ", percentiles of the last five minutes"));
                for (int i = 0; i < QUANTILES.length; i++) {
                    g.dataPoint(GaugeSnapshot.GaugeDataPointSnapshot.builder().value(s.getValue(QUANTILES[i]))
                            .labels(p.labels().add("quantile", QUANTILE_LABELS[i])).build());
                }
                long count = m instanceof Metered metered ? metered.count() : ((com.yammer.metrics.core.Histogram) m).count();
                counter(counters, p.stem() + "_count", e.getKey(), p.labels(), count);
            } else if (m instanceof Metered meter) {
                counter(counters, p.perSec() ? p.stem() : p.stem() + "_count", e.getKey(), p.labels(), meter.count());
            } else if (m instanceof Counter c) {
                counter(counters, p.stem() + "_count", e.getKey(), p.labels(), c.count());
            } else if (m instanceof Gauge<?> gauge) {
                Object v;
                try {
                    v = gauge.value();
                } catch (RuntimeException ex) {
                    continue; // a gauge of something being closed: left out of this scrape
                }
                double value;
                if (v instanceof Number num) {
                    value = num.doubleValue();
                } else if (v instanceof Boolean b) {
                    value = b ? 1 : 0;
                } else {
                    continue;
                }
                gauges.computeIfAbsent(p.stem(), n -> GaugeSnapshot.builder().name(n)
                        .help("Kafka's " + e.getKey().getType() + " " + e.getKey().getName()))
                        .dataPoint(GaugeSnapshot.GaugeDataPointSnapshot.builder().value(value).labels(p.labels()).build());
            }
        }
        if (parsed.size() > 2 * all.size() + 100) { // names of metrics since removed (deleted topics)
            parsed.keySet().retainAll(all.keySet());
        }
        MetricSnapshots.Builder out = MetricSnapshots.builder();
        counters.values().forEach(b -> out.metricSnapshot(b.build()));
        gauges.values().forEach(b -> out.metricSnapshot(b.build()));
        return out.build();
    }

    private static void counter(Map<String, CounterSnapshot.Builder> counters, String name, MetricName source, Labels labels,
                                double value) {
        counters.computeIfAbsent(name, n -> CounterSnapshot.builder().name(n)
                        .help("Kafka's " + source.getType() + " " + source.getName()))
                .dataPoint(CounterSnapshot.CounterDataPointSnapshot.builder().value(value).labels(labels).build());
    }
}
