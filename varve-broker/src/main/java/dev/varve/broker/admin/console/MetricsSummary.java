package dev.varve.broker.admin.console;

import com.fasterxml.jackson.databind.node.ObjectNode;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.prometheus.metrics.model.snapshots.CounterSnapshot;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot;
import io.prometheus.metrics.model.snapshots.Labels;
import io.prometheus.metrics.model.snapshots.MetricSnapshot;
import io.prometheus.metrics.model.snapshots.MetricSnapshots;

import java.util.Set;

import static dev.varve.broker.admin.console.Console.JSON;

/**
 * The few series the console's charts draw, read from this broker's own metrics registry (the values of
 * /metrics): the all-topics counters of messages and bytes in and bytes out (the page turns two readings into
 * a rate), and the 99th percentile of the total time of Produce and consumer Fetch requests.
 */
final class MetricsSummary {
    static final String MESSAGES_IN = "kafka_server_brokertopicmetrics_messagesin";
    static final String BYTES_IN = "kafka_server_brokertopicmetrics_bytesin";
    static final String BYTES_OUT = "kafka_server_brokertopicmetrics_bytesout";
    static final String TOTAL_TIME = "kafka_network_requestmetrics_totaltimems";
    private static final Set<String> NAMES = Set.of(MESSAGES_IN, BYTES_IN, BYTES_OUT, TOTAL_TIME);

    private final PrometheusRegistry registry;

    MetricsSummary(PrometheusRegistry registry) {
        this.registry = registry;
    }

    ObjectNode summary(int nodeId) {
        MetricSnapshots snapshots = registry.scrape(name -> NAMES.contains(strip(name)));
        ObjectNode out = JSON.createObjectNode();
        out.put("time", System.currentTimeMillis());
        out.put("nodeId", nodeId);
        out.put("messagesIn", counter(snapshots, MESSAGES_IN));
        out.put("bytesIn", counter(snapshots, BYTES_IN));
        out.put("bytesOut", counter(snapshots, BYTES_OUT));
        out.put("produceP99Ms", quantile(snapshots, "Produce"));
        out.put("fetchP99Ms", quantile(snapshots, "FetchConsumer"));
        return out;
    }

    private static String strip(String name) {
        return name.endsWith("_total") ? name.substring(0, name.length() - "_total".length()) : name;
    }

    /** The all-topics value (no labels) of a counter; 0 before anything was counted. */
    private static double counter(MetricSnapshots snapshots, String name) {
        for (MetricSnapshot s : snapshots) {
            if (s instanceof CounterSnapshot c && name.equals(strip(s.getMetadata().getPrometheusName()))) {
                for (CounterSnapshot.CounterDataPointSnapshot p : c.getDataPoints()) {
                    if (p.getLabels().isEmpty()) {
                        return p.getValue();
                    }
                }
            }
        }
        return 0;
    }

    private static double quantile(MetricSnapshots snapshots, String request) {
        for (MetricSnapshot s : snapshots) {
            if (s instanceof GaugeSnapshot g && TOTAL_TIME.equals(s.getMetadata().getPrometheusName())) {
                for (GaugeSnapshot.GaugeDataPointSnapshot p : g.getDataPoints()) {
                    Labels l = p.getLabels();
                    if (request.equals(l.get("request")) && "0.99".equals(l.get("quantile"))) {
                        double v = p.getValue();
                        return Double.isFinite(v) ? v : 0;
                    }
                }
            }
        }
        return 0;
    }
}
