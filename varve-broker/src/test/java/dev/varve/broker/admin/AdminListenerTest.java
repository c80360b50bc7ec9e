package dev.varve.broker.admin;

import dev.varve.broker.Broker;
import dev.varve.broker.BrokerConfig;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import javax.management.ObjectName;
import java.io.File;
import java.lang.management.ManagementFactory;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The HTTP admin listener of a real broker driven by stock clients: Kafka's metric names in /metrics
 * (as the Prometheus JMX exporter names Kafka's MBeans) move with what the clients did, the same
 * values are Kafka's MBeans over JMX, and the health endpoints answer.
 */
class AdminListenerTest {
    @TempDir
    static File dir;
    static Broker broker;
    static Admin admin;
    static final HttpClient http = HttpClient.newHttpClient();

    @BeforeAll
    static void start() throws Exception {
        broker = Broker.start(BrokerConfig.from(Map.of(
                "listeners", "PLAINTEXT://127.0.0.1:0",
                "log.dirs", dir.getAbsolutePath(),
                "log.flush.interval.messages", "1", // every append fsynced: LogFlushRateAndTimeMs counts them
                BrokerConfig.ADMIN_LISTENER, "127.0.0.1:0")));
        admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers()));
    }

    @AfterAll
    static void stop() throws Exception {
        admin.close();
        broker.close();
    }

    private static HttpResponse<String> get(String path, String... headers) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + broker.adminAddress().getPort() + path))
                .timeout(Duration.ofSeconds(10));
        for (int i = 0; i < headers.length; i += 2) {
            b.header(headers[i], headers[i + 1]);
        }
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    /** The value of the one series {@code name{labels...}} in a Prometheus text page, or null if absent. */
    private static Double series(String page, String name, String... labels) {
        Pattern line = Pattern.compile("^" + Pattern.quote(name) + "(\\{([^}]*)\\})? (\\S+)$", Pattern.MULTILINE);
        Matcher m = line.matcher(page);
        while (m.find()) {
            Map<String, String> found = new HashMap<>();
            if (m.group(2) != null) {
                for (Matcher l = Pattern.compile("(\\w+)=\"([^\"]*)\"").matcher(m.group(2)); l.find(); ) {
                    found.put(l.group(1), l.group(2));
                }
            }
            Map<String, String> wanted = new HashMap<>();
            for (int i = 0; i < labels.length; i += 2) {
                wanted.put(labels[i], labels[i + 1]);
            }
            if (found.equals(wanted)) {
                return Double.parseDouble(m.group(3));
            }
        }
        return null;
    }

    @Test
    void healthEndpointsAnswer() throws Exception {
        assertThat(get("/health/live").statusCode()).isEqualTo(200);
        HttpResponse<String> ready = get("/health/ready");
        assertThat(ready.statusCode()).as(ready.body()).isEqualTo(200);
        assertThat(get("/nothing-here").statusCode()).isEqualTo(404);
    }

    @Test
    void metricsMoveWithWhatClientsDoUnderKafkasNames() throws Exception {
        admin.createTopics(List.of(new NewTopic("metered", 2, (short) 1))).all().get(30, TimeUnit.SECONDS);
        byte[] value = new byte[100];
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(Map.of(
                ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers(),
                ProducerConfig.LINGER_MS_CONFIG, 0), new ByteArraySerializer(), new ByteArraySerializer())) {
            for (int i = 0; i < 50; i++) {
                producer.send(new ProducerRecord<>("metered", i % 2, null, value)).get(30, TimeUnit.SECONDS);
            }
        }
        int read = 0;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers(),
                ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest",
                ConsumerConfig.GROUP_ID_CONFIG, "metered-readers"), new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.subscribe(List.of("metered"));
            long deadline = System.currentTimeMillis() + 30_000;
            while (read < 50 && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
                    read++;
                }
            }
        }
        assertThat(read).isEqualTo(50);
        // a second group that read nothing yet: it lags by everything (committed at 0)
        try (KafkaConsumer<byte[], byte[]> idle = new KafkaConsumer<>(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers(),
                ConsumerConfig.GROUP_ID_CONFIG, "metered-laggards"), new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            idle.commitSync(Map.of(new org.apache.kafka.common.TopicPartition("metered", 0),
                    new org.apache.kafka.clients.consumer.OffsetAndMetadata(5)));
        }

        HttpResponse<String> scrape = get("/metrics");
        assertThat(scrape.statusCode()).isEqualTo(200);
        String page = scrape.body();
        assertThat(series(page, "kafka_server_brokertopicmetrics_messagesin_total", "topic", "metered")).isEqualTo(50.0);
        Double bytesIn = series(page, "kafka_server_brokertopicmetrics_bytesin_total", "topic", "metered");
        assertThat(bytesIn).isGreaterThanOrEqualTo(50 * 100.0);
        assertThat(series(page, "kafka_server_brokertopicmetrics_bytesout_total", "topic", "metered")).isGreaterThanOrEqualTo(bytesIn);
        assertThat(series(page, "kafka_server_brokertopicmetrics_messagesin_total")).as("all topics").isGreaterThanOrEqualTo(50.0);
        assertThat(series(page, "kafka_server_brokertopicmetrics_totalproducerequests_total", "topic", "metered")).isEqualTo(50.0);
        assertThat(page).containsPattern("kafka_network_requestmetrics_requests_total\\{request=\"Produce\",version=\"\\d+\"} [1-9]");
        assertThat(series(page, "kafka_network_requestmetrics_errors_total", "error", "NONE", "request", "Produce")).isGreaterThanOrEqualTo(50.0);
        assertThat(series(page, "kafka_network_requestmetrics_totaltimems_count_total", "request", "Produce")).isGreaterThanOrEqualTo(50.0);
        assertThat(series(page, "kafka_network_requestmetrics_totaltimems", "quantile", "0.99", "request", "FetchConsumer")).isNotNull();
        assertThat(series(page, "kafka_server_replicamanager_partitioncount")).isGreaterThanOrEqualTo(2.0);
        assertThat(series(page, "kafka_server_replicamanager_underreplicatedpartitions")).isEqualTo(0.0);
        assertThat(series(page, "kafka_controller_kafkacontroller_activecontrollercount")).isEqualTo(1.0);
        assertThat(page).contains("jvm_memory_used_bytes");
        assertThat(series(page, "kafka_log_logflushstats_logflushrateandtimems_count_total")).isGreaterThanOrEqualTo(50.0);
        // idle nanoseconds per request thread, marked every second: some seconds have passed, mostly idle
        assertThat(series(page, "kafka_server_kafkarequesthandlerpool_requesthandleravgidlepercent_count_total")).isGreaterThan(1e8);
        // per-partition log gauges: 25 records in each partition
        assertThat(series(page, "kafka_log_log_logendoffset", "partition", "0", "topic", "metered")).isEqualTo(25.0);
        assertThat(series(page, "kafka_log_log_size", "partition", "1", "topic", "metered")).isGreaterThan(25 * 100.0);
        assertThat(series(page, "kafka_log_log_numlogsegments", "partition", "1", "topic", "metered")).isEqualTo(1.0);
        // groups: the readers committed everything (their consumer commits on close), the laggards are 20 behind
        assertThat(series(page, "kafka_consumergroup_lag", "consumergroup", "metered-readers", "partition", "0", "topic", "metered"))
                .isEqualTo(0.0);
        assertThat(series(page, "kafka_consumergroup_current_offset", "consumergroup", "metered-readers", "partition", "1",
                "topic", "metered")).isEqualTo(25.0);
        assertThat(series(page, "kafka_consumergroup_lag", "consumergroup", "metered-laggards", "partition", "0", "topic", "metered"))
                .isEqualTo(20.0);
        assertThat(series(page, "kafka_coordinator_group_groupmetadatamanager_numgroups")).isGreaterThanOrEqualTo(2.0);
        assertThat(series(page, "kafka_controller_kafkacontroller_globaltopiccount")).isGreaterThanOrEqualTo(1.0);
        // the network threads' idle fraction, sampled every second (a single node acknowledges acks=all at once
        // and follows no leader: nothing waits in the produce purgatory, no replication lag)
        assertThat(series(page, "kafka_network_socketserver_networkprocessoravgidlepercent")).isBetween(0.0, 1.0);
        assertThat(series(page, "kafka_server_delayedoperationpurgatory_purgatorysize", "delayedOperation", "Produce")).isEqualTo(0.0);
        assertThat(series(page, "kafka_server_replicafetchermanager_maxlag", "clientId", "Replica")).isEqualTo(0.0);

        // every metric the Grafana dashboard in docs/ queries is served
        String dashboard = java.nio.file.Files.readString(java.nio.file.Path.of("..", "docs", "grafana", "varve-dashboard.json"));
        java.util.Set<String> queried = new java.util.TreeSet<>();
        for (Matcher expr = Pattern.compile("\"expr\": \"((?:[^\"\\\\]|\\\\.)*)\"").matcher(dashboard); expr.find(); ) {
            for (Matcher n = Pattern.compile("\\b((?:kafka|jvm)_[a-z0-9_]+)\\b").matcher(expr.group(1)); n.find(); ) {
                queried.add(n.group(1));
            }
        }
        assertThat(queried).hasSizeGreaterThan(10);
        for (String name : queried) {
            assertThat(page).as("the dashboard's " + name).containsPattern("(?m)^" + Pattern.quote(name) + "[{ ]");
        }

        // the same values as Kafka's MBeans, over JMX
        Object count = ManagementFactory.getPlatformMBeanServer().getAttribute(
                new ObjectName("kafka.server:type=BrokerTopicMetrics,name=MessagesInPerSec,topic=metered"), "Count");
        assertThat(count).isEqualTo(50L);
        assertThat(ManagementFactory.getPlatformMBeanServer().getAttribute(
                new ObjectName("kafka.network:type=RequestMetrics,name=TotalTimeMs,request=Produce"), "99thPercentile")).isInstanceOf(Double.class);

        // OpenMetrics when the scraper asks for it
        HttpResponse<String> om = get("/metrics", "Accept", "application/openmetrics-text; version=1.0.0; charset=utf-8");
        assertThat(om.headers().firstValue("Content-Type").orElse("")).startsWith("application/openmetrics-text");
        assertThat(om.body().strip()).endsWith("# EOF");

        // a deleted topic's series are gone
        admin.deleteTopics(List.of("metered")).all().get(30, TimeUnit.SECONDS);
        String after = get("/metrics").body();
        assertThat(series(after, "kafka_server_brokertopicmetrics_messagesin_total", "topic", "metered")).isNull();
        assertThat(series(after, "kafka_log_log_logendoffset", "partition", "0", "topic", "metered")).isNull();
    }
}
