package dev.varve.broker.admin;

import dev.varve.broker.Broker;
import dev.varve.broker.BrokerConfig;
import io.prometheus.jmx.JmxCollector;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.File;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The broker's {@code /metrics} and the Prometheus JMX exporter's collector (the library its javaagent
 * runs) reading the broker's MBeans with docs/prometheus/kafka-jmx-rules.yml give the same series with
 * the same values: what a dashboard built on Kafka with the JMX exporter reads, Varve serves itself.
 */
class JmxExporterEquivalenceTest {
    @TempDir
    File dir;

    /** Series whose value moves by itself between two reads (sampled each second, or five-minute percentiles of requests a scrape may add). */
    private static final Pattern MOVING = Pattern.compile(
            "kafka_network_socketserver_networkprocessoravgidlepercent.*|kafka_server_kafkarequesthandlerpool_.*"
                    + "|kafka_network_requestmetrics_.*|kafka_controller_controllereventmanager_.*");

    @Test
    void jmxExporterWithTheRulesInDocsReadsWhatMetricsServes() throws Exception {
        try (Broker broker = Broker.start(BrokerConfig.from(Map.of(
                "listeners", "PLAINTEXT://127.0.0.1:0",
                "log.dirs", dir.getAbsolutePath(),
                BrokerConfig.ADMIN_LISTENER, "127.0.0.1:0")));
             Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers()))) {
            admin.createTopics(List.of(new NewTopic("exported", 3, (short) 1))).all().get(30, TimeUnit.SECONDS);
            try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(Map.of(
                    ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers()), new ByteArraySerializer(), new ByteArraySerializer())) {
                for (int i = 0; i < 30; i++) {
                    producer.send(new ProducerRecord<>("exported", i % 3, null, new byte[50])).get(30, TimeUnit.SECONDS);
                }
            }
            try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(Map.of(
                    ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers(),
                    ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest",
                    ConsumerConfig.GROUP_ID_CONFIG, "exporters"), new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
                consumer.subscribe(List.of("exported"));
                int read = 0;
                long deadline = System.currentTimeMillis() + 30_000;
                while (read < 30 && System.currentTimeMillis() < deadline) {
                    read += consumer.poll(Duration.ofMillis(200)).count();
                }
                assertThat(read).isEqualTo(30);
            }
            String rules = Files.readString(Path.of("..", "docs", "prometheus", "kafka-jmx-rules.yml"));
            PrometheusRegistry registry = new PrometheusRegistry();
            new JmxCollector(rules).register(registry);

            String page = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create(
                            "http://127.0.0.1:" + broker.adminAddress().getPort() + "/metrics")).build(),
                    HttpResponse.BodyHandlers.ofString()).body();
            ByteArrayOutputStream jmx = new ByteArrayOutputStream();
            PrometheusTextFormatWriter.create().write(jmx, registry.scrape(), io.prometheus.metrics.config.EscapingScheme.ALLOW_UTF8);

            Map<String, Double> served = kafkaSeries(page);
            Map<String, Double> exported = kafkaSeries(jmx.toString(StandardCharsets.UTF_8));
            // kafka_exporter's consumer group series are Prometheus-only (no MBean), as in Kafka
            served.keySet().removeIf(k -> k.startsWith("kafka_consumergroup_"));
            assertThat(served).containsKey("kafka_server_brokertopicmetrics_messagesin_total{topic=\"exported\"}");
            assertThat(exported.keySet()).as("series from JMX with the rules, against /metrics")
                    .containsExactlyInAnyOrderElementsOf(served.keySet());
            for (Map.Entry<String, Double> e : served.entrySet()) {
                if (!MOVING.matcher(e.getKey()).matches()) {
                    assertThat(exported.get(e.getKey())).as(e.getKey()).isEqualTo(e.getValue());
                }
            }
            assertThat(exported.get("kafka_server_brokertopicmetrics_messagesin_total{topic=\"exported\"}")).isEqualTo(30.0);
            assertThat(exported.get("kafka_log_log_logendoffset{partition=\"2\",topic=\"exported\"}")).isEqualTo(10.0);
        }
    }

    private static final Pattern SAMPLE = Pattern.compile("^(kafka_\\w+)(?:\\{([^}]*)})? (\\S+)$", Pattern.MULTILINE);
    private static final Pattern LABEL = Pattern.compile("(\\w+)=\"((?:[^\"\\\\]|\\\\.)*)\"");

    /** Every kafka_ sample as {@code name{label="v",...}} (labels sorted) to its value. */
    private static Map<String, Double> kafkaSeries(String text) {
        Map<String, Double> out = new TreeMap<>();
        for (Matcher m = SAMPLE.matcher(text); m.find(); ) {
            TreeMap<String, String> labels = new TreeMap<>();
            if (m.group(2) != null) {
                for (Matcher l = LABEL.matcher(m.group(2)); l.find(); ) {
                    labels.put(l.group(1), l.group(2));
                }
            }
            StringBuilder key = new StringBuilder(m.group(1));
            if (!labels.isEmpty()) {
                key.append('{');
                labels.forEach((k, v) -> key.append(k).append("=\"").append(v).append("\","));
                key.setLength(key.length() - 1);
                key.append('}');
            }
            out.put(key.toString(), Double.parseDouble(m.group(3)));
        }
        return out;
    }

}
