package dev.varve.broker.admin.console;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.varve.broker.Broker;
import dev.varve.broker.BrokerConfig;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The console's page and JSON API on a real broker's admin listener, checked against what the stock clients
 * did and see: the shapes and values the page relies on, bytes back exactly as produced, every bad parameter a
 * 400 with a message, and offsets reset as the Admin client then reads them.
 */
class ConsoleApiTest {
    @TempDir
    static File dir;
    static Broker broker;
    static Admin admin;
    static final HttpClient HTTP = HttpClient.newBuilder().followRedirects(HttpClient.Redirect.NEVER).build();
    static final ObjectMapper JSON = new ObjectMapper();

    @BeforeAll
    static void start() throws Exception {
        broker = Broker.start(BrokerConfig.from(Map.of(
                "listeners", "PLAINTEXT://127.0.0.1:0",
                "log.dirs", dir.getAbsolutePath(),
                "group.initial.rebalance.delay.ms", "0",
                BrokerConfig.ADMIN_LISTENER, "127.0.0.1:0")));
        admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers()));
    }

    @AfterAll
    static void stop() throws Exception {
        admin.close();
        broker.close();
    }

    static String url(String path) {
        return "http://127.0.0.1:" + broker.adminAddress().getPort() + path;
    }

    static HttpResponse<String> send(String method, String path, String body) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(url(path))).timeout(Duration.ofSeconds(30))
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
        if (!"GET".equals(method)) {
            b.header("X-Varve-Console", "1").header("Content-Type", "application/json");
        }
        return HTTP.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    static JsonNode ok(String method, String path, String body) throws Exception {
        HttpResponse<String> r = send(method, path, body);
        assertThat(r.statusCode()).as(method + " " + path + ": " + r.body()).isBetween(200, 201);
        assertThat(r.headers().firstValue("Content-Type")).hasValue("application/json");
        return JSON.readTree(r.body());
    }

    static JsonNode get(String path) throws Exception {
        return ok("GET", path, null);
    }

    /** The status of a request that must fail, and that its body is a JSON error message. */
    static int fails(String method, String path, String body) throws Exception {
        HttpResponse<String> r = send(method, path, body);
        assertThat(r.statusCode()).as(method + " " + path + ": " + r.body()).isGreaterThanOrEqualTo(400);
        assertThat(JSON.readTree(r.body()).path("error").asText()).as(r.body()).isNotBlank();
        return r.statusCode();
    }

    static JsonNode find(JsonNode array, String field, String value) {
        for (JsonNode n : array) {
            if (value.equals(n.path(field).asText())) {
                return n;
            }
        }
        throw new AssertionError("no " + field + "=" + value + " in " + array);
    }

    @Test
    void servesThePageAndItsAssets() throws Exception {
        for (String path : List.of("/ui", "/ui/")) {
            HttpResponse<String> page = send("GET", path, null);
            assertThat(page.statusCode()).isEqualTo(200);
            assertThat(page.headers().firstValue("Content-Type")).hasValue("text/html; charset=utf-8");
            assertThat(page.headers().firstValue("Cache-Control")).hasValue("no-cache");
            assertThat(page.body()).contains("<div id=\"app\">");
        }
        java.util.regex.Matcher m = java.util.regex.Pattern.compile("src=\"(/ui/assets/[^\"]+\\.js)\"").matcher(send("GET", "/ui/", null).body());
        assertThat(m.find()).isTrue();
        HttpResponse<String> js = send("GET", m.group(1), null);
        assertThat(js.statusCode()).isEqualTo(200);
        assertThat(js.headers().firstValue("Content-Type")).hasValue("text/javascript; charset=utf-8");
        assertThat(js.headers().firstValue("Cache-Control")).hasValue("public, max-age=31536000, immutable");
        assertThat(send("GET", "/ui/assets/nothing.js", null).statusCode()).isEqualTo(404);
        assertThat(send("GET", "/ui/assets/..%2F..%2Fadmin%2FAdminServer.class", null).statusCode()).isEqualTo(404);
        assertThat(send("GET", "/ui/../metrics", null).statusCode()).isIn(400, 404);
        assertThat(send("POST", "/ui/", "{}").statusCode()).isEqualTo(405);
        HttpResponse<String> root = send("GET", "/", null);
        assertThat(root.statusCode()).isEqualTo(302);
        assertThat(root.headers().firstValue("Location")).hasValue("/ui/");
        // the other endpoints are as they were
        assertThat(send("GET", "/health/ready", null).statusCode()).isEqualTo(200);
        assertThat(send("GET", "/nothing-here", null).statusCode()).isEqualTo(404);
    }

    @Test
    void overviewShowsTheBrokerAndHealth() throws Exception {
        JsonNode o = get("/api/overview");
        assertThat(o.path("clusterId").asText()).isNotBlank();
        assertThat(o.path("controllerId").asInt()).isEqualTo(o.path("nodeId").asInt());
        assertThat(o.path("brokers")).hasSize(1);
        JsonNode b = o.path("brokers").get(0);
        assertThat(b.path("port").asInt()).isEqualTo(Integer.parseInt(broker.bootstrapServers().split(":")[1]));
        assertThat(b.path("fenced").asBoolean()).isFalse();
        assertThat(b.path("status").asText()).isEqualTo("online");
        assertThat(o.path("health").path("ready").asBoolean()).isTrue();
        assertThat(o.path("health").path("status").asText()).isEqualTo("healthy");
        assertThat(o.path("health").path("underReplicatedPartitions").asInt()).isZero();

        JsonNode m = get("/api/metrics");
        assertThat(m.has("messagesIn")).isTrue();
        assertThat(m.has("produceP99Ms")).isTrue();
        assertThat(m.path("time").asLong()).isPositive();
    }

    @Test
    void topicsAreCreatedDescribedAlteredAndDeleted() throws Exception {
        JsonNode created = ok("POST", "/api/topics",
                "{\"name\":\"console-made\",\"partitions\":3,\"replicationFactor\":1,\"configs\":{\"retention.ms\":\"3600000\"}}");
        assertThat(created.path("created").asText()).isEqualTo("console-made");
        assertThat(admin.describeTopics(List.of("console-made")).allTopicNames().get(10, TimeUnit.SECONDS)
                .get("console-made").partitions()).hasSize(3);

        JsonNode listed = find(get("/api/topics").path("topics"), "name", "console-made");
        assertThat(listed.path("partitions").asInt()).isEqualTo(3);
        assertThat(listed.path("replicationFactor").asInt()).isEqualTo(1);
        assertThat(listed.path("underReplicated").asInt()).isZero();
        assertThat(listed.path("sizeBytes").isNumber()).as(listed.toString()).isTrue();

        JsonNode t = get("/api/topics/console-made");
        assertThat(t.path("partitions")).hasSize(3);
        JsonNode p0 = t.path("partitions").get(0);
        assertThat(p0.path("leader").asInt()).isEqualTo(t.path("partitions").get(0).path("replicas").get(0).asInt());
        assertThat(p0.path("isr")).hasSize(1);
        assertThat(p0.path("startOffset").asLong()).isZero();
        assertThat(p0.path("endOffset").asLong()).isZero();
        assertThat(find(t.path("configs"), "name", "retention.ms").path("value").asText()).isEqualTo("3600000");
        assertThat(find(t.path("configs"), "name", "retention.ms").path("source").asText()).isEqualTo("DYNAMIC_TOPIC_CONFIG");

        ok("PUT", "/api/topics/console-made/configs", "{\"configs\":{\"retention.ms\":\"7200000\",\"max.message.bytes\":\"65536\"}}");
        ConfigResource res = new ConfigResource(ConfigResource.Type.TOPIC, "console-made");
        ConfigEntry retention = admin.describeConfigs(List.of(res)).all().get(10, TimeUnit.SECONDS).get(res).get("retention.ms");
        assertThat(retention.value()).isEqualTo("7200000");
        ok("PUT", "/api/topics/console-made/configs", "{\"configs\":{\"retention.ms\":null}}");
        retention = admin.describeConfigs(List.of(res)).all().get(10, TimeUnit.SECONDS).get(res).get("retention.ms");
        assertThat(retention.isDefault()).isTrue();
        assertThat(fails("PUT", "/api/topics/console-made/configs", "{\"configs\":{\"retention.ms\":\"soon\"}}")).isEqualTo(400);
        assertThat(fails("PUT", "/api/topics/console-made/configs", "{\"configs\":{}}")).isEqualTo(400);

        assertThat(fails("POST", "/api/topics", "{\"name\":\"console-made\",\"partitions\":1}")).isEqualTo(409);
        assertThat(fails("POST", "/api/topics", "{\"name\":\"bad/name\"}")).isEqualTo(400);
        assertThat(fails("POST", "/api/topics", "{\"name\":\"fine\",\"partitions\":\"many\"}")).isEqualTo(400);
        assertThat(fails("POST", "/api/topics", "{\"name\":\"fine\",\"partitions\":0}")).isEqualTo(400);
        assertThat(fails("POST", "/api/topics", "not json")).isEqualTo(400);
        assertThat(fails("POST", "/api/topics", "[1]")).isEqualTo(400);

        ok("DELETE", "/api/topics/console-made", null);
        assertThat(admin.listTopics().names().get(10, TimeUnit.SECONDS)).doesNotContain("console-made");
        assertThat(fails("GET", "/api/topics/console-made", null)).isEqualTo(404);
        assertThat(fails("DELETE", "/api/topics/console-made", null)).isEqualTo(404);
    }

    @Test
    void messagesComeBackByteExact() throws Exception {
        admin.createTopics(List.of(new org.apache.kafka.clients.admin.NewTopic("browsed", 2, (short) 1))).all().get(30, TimeUnit.SECONDS);
        byte[] binary = new byte[256];
        for (int i = 0; i < binary.length; i++) {
            binary[i] = (byte) i;
        }
        try (KafkaProducer<byte[], byte[]> producer = producer()) {
            for (int i = 0; i < 20; i++) {
                producer.send(new ProducerRecord<>("browsed", 0, 1_700_000_000_000L + i * 1000L, ("k" + i).getBytes(StandardCharsets.UTF_8),
                        ("{\"n\": " + i + ", \"word\": \"" + (i % 5 == 0 ? "needle" : "hay") + "\"}").getBytes(StandardCharsets.UTF_8),
                        List.of(new RecordHeader("trace", ("t-" + i).getBytes(StandardCharsets.UTF_8)))));
            }
            producer.send(new ProducerRecord<>("browsed", 1, null, binary)).get(10, TimeUnit.SECONDS);
            producer.send(new ProducerRecord<>("browsed", 1, "x".getBytes(StandardCharsets.UTF_8), null)).get(10, TimeUnit.SECONDS);
        }

        JsonNode hex = get("/api/topics/browsed/messages?partition=1&decode=hex");
        assertThat(hex.path("messages")).hasSize(2);
        JsonNode bin = hex.path("messages").get(0);
        assertThat(HexFormat.of().parseHex(bin.path("value").asText())).isEqualTo(binary);
        assertThat(bin.path("valueAs").asText()).isEqualTo("hex");
        assertThat(bin.path("valueSize").asInt()).isEqualTo(256);
        assertThat(bin.path("key").isNull()).isTrue();
        assertThat(hex.path("messages").get(1).path("value").isNull()).isTrue();
        assertThat(hex.path("messages").get(1).path("key").asText()).isEqualTo("78");

        JsonNode text = get("/api/topics/browsed/messages?partition=0&offset=3&limit=4");
        assertThat(text.path("startOffset").asLong()).isZero();
        assertThat(text.path("endOffset").asLong()).isEqualTo(20);
        assertThat(text.path("messages")).hasSize(4);
        JsonNode m3 = text.path("messages").get(0);
        assertThat(m3.path("offset").asLong()).isEqualTo(3);
        assertThat(m3.path("key").asText()).isEqualTo("k3");
        assertThat(m3.path("value").asText()).isEqualTo("{\"n\": 3, \"word\": \"hay\"}");
        assertThat(m3.path("timestamp").asLong()).isEqualTo(1_700_000_003_000L);
        assertThat(m3.path("headers").get(0).path("key").asText()).isEqualTo("trace");
        assertThat(m3.path("headers").get(0).path("value").asText()).isEqualTo("t-3");
        assertThat(text.path("nextOffset").asLong()).isEqualTo(7);
        assertThat(text.path("more").asBoolean()).isTrue();

        JsonNode json = get("/api/topics/browsed/messages?partition=0&offset=0&limit=1&decode=json");
        assertThat(json.path("messages").get(0).path("valueAs").asText()).isEqualTo("json");
        assertThat(JSON.readTree(json.path("messages").get(0).path("value").asText()).path("word").asText()).isEqualTo("needle");
        assertThat(json.path("messages").get(0).path("keyAs").asText()).isEqualTo("text"); // "k0" is not JSON

        JsonNode filtered = get("/api/topics/browsed/messages?partition=0&filter=NEEDLE&limit=500");
        assertThat(filtered.path("messages")).extracting(n -> n.path("offset").asLong()).containsExactly(0L, 5L, 10L, 15L);
        assertThat(filtered.path("scanned").asLong()).isEqualTo(20);
        assertThat(get("/api/topics/browsed/messages?partition=0&filter=t-7").path("messages"))
                .extracting(n -> n.path("offset").asLong()).containsExactly(7L);

        JsonNode byTime = get("/api/topics/browsed/messages?partition=0&timestamp=1700000010500&limit=2");
        assertThat(byTime.path("messages")).extracting(n -> n.path("offset").asLong()).containsExactly(11L, 12L);
        JsonNode newest = get("/api/topics/browsed/messages?partition=0&from=newest&limit=3");
        assertThat(newest.path("messages")).extracting(n -> n.path("offset").asLong()).containsExactly(17L, 18L, 19L);

        // bad parameters: 400 with a message, never a broken answer
        for (String q : List.of("partition=x", "partition=-1", "partition=2", "offset=abc", "offset=-5", "limit=0", "limit=501",
                "limit=99999999999999999999", "decode=base64", "from=middle", "timestamp=yesterday", "offset=1&timestamp=2",
                "filter=" + "a".repeat(1001))) {
            assertThat(fails("GET", "/api/topics/browsed/messages?" + q, null)).as(q).isEqualTo(400);
        }
        assertThat(fails("GET", "/api/topics/no-such-topic/messages", null)).isEqualTo(404);
    }

    @Test
    void groupsShowLagAndResetOffsets() throws Exception {
        admin.createTopics(List.of(new org.apache.kafka.clients.admin.NewTopic("lagging", 2, (short) 1))).all().get(30, TimeUnit.SECONDS);
        try (KafkaProducer<byte[], byte[]> producer = producer()) {
            for (int i = 0; i < 10; i++) {
                producer.send(new ProducerRecord<>("lagging", i % 2, null, new byte[]{(byte) i}));
            }
            producer.flush();
        }
        TopicPartition p0 = new TopicPartition("lagging", 0);
        TopicPartition p1 = new TopicPartition("lagging", 1);
        admin.alterConsumerGroupOffsets("readers", Map.of(p0, new OffsetAndMetadata(2), p1, new OffsetAndMetadata(5)))
                .all().get(30, TimeUnit.SECONDS);

        JsonNode g = find(get("/api/groups").path("groups"), "groupId", "readers");
        assertThat(g.path("lag").asLong()).isEqualTo(3);
        assertThat(g.path("members").asInt()).isZero();
        JsonNode detail = get("/api/groups/readers");
        assertThat(detail.path("lag").asLong()).isEqualTo(3);
        assertThat(find(detail.path("offsets"), "partition", "0").path("committed").asLong()).isEqualTo(2);
        assertThat(find(detail.path("offsets"), "partition", "0").path("lag").asLong()).isEqualTo(3);
        assertThat(find(detail.path("offsets"), "partition", "1").path("lag").asLong()).isZero();

        ok("POST", "/api/groups/readers/reset", "{\"topic\":\"lagging\",\"to\":\"earliest\"}");
        assertThat(committed("readers")).isEqualTo(Map.of(p0, 0L, p1, 0L));
        ok("POST", "/api/groups/readers/reset", "{\"topic\":\"lagging\",\"to\":\"latest\",\"partitions\":[1]}");
        assertThat(committed("readers")).isEqualTo(Map.of(p0, 0L, p1, 5L));
        ok("POST", "/api/groups/readers/reset", "{\"topic\":\"lagging\",\"to\":\"offset\",\"offset\":4}");
        assertThat(committed("readers")).isEqualTo(Map.of(p0, 4L, p1, 4L));
        JsonNode clamped = ok("POST", "/api/groups/readers/reset", "{\"topic\":\"lagging\",\"to\":\"offset\",\"offset\":99}");
        assertThat(clamped.path("offsets").get(0).path("offset").asLong()).isEqualTo(5);
        assertThat(committed("readers")).isEqualTo(Map.of(p0, 5L, p1, 5L));

        assertThat(fails("POST", "/api/groups/readers/reset", "{\"topic\":\"lagging\",\"to\":\"offset\"}")).isEqualTo(400);
        assertThat(fails("POST", "/api/groups/readers/reset", "{\"topic\":\"lagging\",\"to\":\"sideways\"}")).isEqualTo(400);
        assertThat(fails("POST", "/api/groups/readers/reset", "{\"topic\":\"lagging\",\"to\":\"earliest\",\"partitions\":[7]}"))
                .isEqualTo(400);
        assertThat(fails("POST", "/api/groups/readers/reset", "{\"topic\":\"no-such\",\"to\":\"earliest\"}")).isEqualTo(404);
        // without the console's header: refused (a page of another origin cannot send it)
        HttpResponse<String> noHeader = HTTP.send(HttpRequest.newBuilder(URI.create(url("/api/groups/readers/reset")))
                .POST(HttpRequest.BodyPublishers.ofString("{\"topic\":\"lagging\",\"to\":\"earliest\"}")).build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(noHeader.statusCode()).isEqualTo(403);
        assertThat(committed("readers")).isEqualTo(Map.of(p0, 5L, p1, 5L));

        // a group with a member: refused with a clear message, offsets untouched
        try (KafkaConsumer<byte[], byte[]> member = new KafkaConsumer<>(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers(),
                ConsumerConfig.GROUP_ID_CONFIG, "readers",
                ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false), new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            member.subscribe(List.of("lagging"));
            long deadline = System.currentTimeMillis() + 30_000;
            while (member.assignment().isEmpty() && System.currentTimeMillis() < deadline) {
                member.poll(Duration.ofMillis(100));
            }
            JsonNode active = get("/api/groups/readers");
            assertThat(active.path("members")).hasSize(1);
            assertThat(active.path("state").asText()).isEqualTo("STABLE");
            assertThat(active.path("offsets")).allSatisfy(o -> assertThat(o.path("memberId").asText()).isNotBlank());
            HttpResponse<String> refused = send("POST", "/api/groups/readers/reset", "{\"topic\":\"lagging\",\"to\":\"earliest\"}");
            assertThat(refused.statusCode()).isEqualTo(409);
            assertThat(JSON.readTree(refused.body()).path("error").asText()).contains("1 active member");
        }
        assertThat(committed("readers")).isEqualTo(Map.of(p0, 5L, p1, 5L));
        assertThat(fails("GET", "/api/groups/never-was", null)).isEqualTo(404);
    }

    @Test
    void unknownPathsAndMethodsAreJsonErrors() throws Exception {
        assertThat(fails("GET", "/api/nothing", null)).isEqualTo(404);
        assertThat(fails("GET", "/api", null)).isEqualTo(404);
        assertThat(fails("DELETE", "/api/overview", null)).isEqualTo(405);
        assertThat(fails("GET", "/api/topics/a/b/c", null)).isEqualTo(404);
        assertThat(fails("POST", "/api/topics", "{\"name\":\"" + "x".repeat(70_000) + "\"}")).isEqualTo(413);
    }

    private static Map<TopicPartition, Long> committed(String group) throws Exception {
        Map<TopicPartition, Long> out = new java.util.HashMap<>();
        admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(10, TimeUnit.SECONDS)
                .forEach((tp, o) -> out.put(tp, o.offset()));
        return out;
    }

    private static KafkaProducer<byte[], byte[]> producer() {
        return new KafkaProducer<>(Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers(),
                ProducerConfig.LINGER_MS_CONFIG, 0), new ByteArraySerializer(), new ByteArraySerializer());
    }

    /** The status line of a raw HTTP/1.1 GET naming {@code host} in its Host header (HttpClient may not set it). */
    private static String statusWithHost(int port, String path, String host) throws Exception {
        try (java.net.Socket socket = new java.net.Socket("127.0.0.1", port)) {
            socket.setSoTimeout(30_000);
            socket.getOutputStream().write(("GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\nConnection: close\r\n\r\n")
                    .getBytes(StandardCharsets.US_ASCII));
            return new java.io.BufferedReader(new java.io.InputStreamReader(socket.getInputStream(), StandardCharsets.US_ASCII)).readLine();
        }
    }

    @Test
    void onALoopbackListenerOnlyRequestsNamingALoopbackHostAreServed() throws Exception {
        int port = broker.adminAddress().getPort();
        // a page whose own name was made to resolve to 127.0.0.1 (DNS rebinding) names that name
        assertThat(statusWithHost(port, "/api/topics", "rebound.example:" + port)).startsWith("HTTP/1.1 403");
        assertThat(statusWithHost(port, "/api/topics", "localhost:" + port)).startsWith("HTTP/1.1 200");
        assertThat(statusWithHost(port, "/api/topics", "127.0.0.1:" + port)).startsWith("HTTP/1.1 200");
        assertThat(statusWithHost(port, "/api/topics", "[::1]:" + port)).startsWith("HTTP/1.1 200");
    }

    @Test
    void aConsoleMadeReadOnlyRefusesChangesAndStillAnswersReads(@TempDir File other) throws Exception {
        try (Broker readOnly = Broker.start(BrokerConfig.from(Map.of(
                "listeners", "PLAINTEXT://127.0.0.1:0",
                "log.dirs", other.getAbsolutePath(),
                BrokerConfig.ADMIN_LISTENER, "127.0.0.1:0",
                BrokerConfig.ADMIN_CONSOLE_WRITES, "false")))) {
            String base = "http://127.0.0.1:" + readOnly.adminAddress().getPort();
            HttpResponse<String> create = HTTP.send(HttpRequest.newBuilder(URI.create(base + "/api/topics"))
                    .header("X-Varve-Console", "1").header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString("{\"name\":\"refused\",\"partitions\":1}")).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertThat(create.statusCode()).isEqualTo(403);
            assertThat(create.body()).contains("read-only").contains("varve.admin.console.writes");
            try (Admin a = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, readOnly.bootstrapServers()))) {
                assertThat(a.listTopics().names().get(30, TimeUnit.SECONDS)).doesNotContain("refused");
            }
            assertThat(HTTP.send(HttpRequest.newBuilder(URI.create(base + "/api/topics")).build(),
                    HttpResponse.BodyHandlers.ofString()).statusCode()).isEqualTo(200);
        }
    }
}
