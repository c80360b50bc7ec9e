package dev.varve.cli.client;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.common.config.ConfigResource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code varve topic ...} end to end against a real broker, in text, JSON and YAML. */
class TopicCommandTest {
    static CliHarness cli;

    @BeforeAll
    static void start() throws Exception {
        cli = new CliHarness();
    }

    @AfterAll
    static void stop() throws Exception {
        cli.close();
    }

    @Test
    void createsTopicsTheClusterThenHasWithTheirPartitionsAndConfigs() throws Exception {
        CliHarness.Result r = cli.run("topic", "create", "orders", "payments", "-p", "6", "-r", "1", "-c", "retention.ms=3600000");
        assertThat(r.exit()).as(r.toString()).isZero();
        assertThat(r.out()).containsPattern("TOPIC\\s+PARTITIONS\\s+REPLICAS\\s+STATUS")
                .containsPattern("orders\\s+6\\s+1\\s+OK").containsPattern("payments\\s+6\\s+1\\s+OK");

        var d = cli.admin.describeTopics(List.of("orders", "payments")).allTopicNames().get();
        assertThat(d.get("orders").partitions()).hasSize(6);
        ConfigEntry retention = cli.admin.describeConfigs(List.of(new ConfigResource(ConfigResource.Type.TOPIC, "orders")))
                .all().get().values().iterator().next().get("retention.ms");
        assertThat(retention.value()).isEqualTo("3600000");

        CliHarness.Result again = cli.run("topic", "create", "orders", "-o", "json");
        assertThat(again.exit()).isEqualTo(1);
        JsonNode row = again.json().get(0);
        assertThat(row.get("topic").asText()).isEqualTo("orders");
        assertThat(row.get("status").asText()).contains("already exists").contains("varve topic describe");

        assertThat(cli.run("topic", "create", "orders", "--if-not-exists").exit()).isZero();
    }

    @Test
    void listsTopicsAsATableAndAsJsonAndFiltersByRegex() throws Exception {
        cli.admin.createTopics(List.of(new org.apache.kafka.clients.admin.NewTopic("list-a", 3, (short) 1),
                new org.apache.kafka.clients.admin.NewTopic("list-b", 1, (short) 1))).all().get();
        CliHarness.Result text = cli.run("topic", "list", "list-.*");
        assertThat(text.exit()).as(text.toString()).isZero();
        assertThat(text.out().lines().toList()).hasSize(3);
        assertThat(text.out()).containsPattern("NAME\\s+PARTITIONS\\s+REPLICAS").containsPattern("list-a\\s+3\\s+1")
                .containsPattern("list-b\\s+1\\s+1");

        JsonNode json = cli.run("topic", "list", "-o", "json").json();
        Set<String> names = new java.util.HashSet<>();
        json.forEach(n -> names.add(n.get("name").asText()));
        assertThat(names).contains("list-a", "list-b").doesNotContain("__consumer_offsets");
        assertThat(json.findValuesAsText("name")).isSorted();
    }

    @Test
    void describeShowsPartitionsWithLeaderIsrAndOffsetsAndTheTopicsOwnConfigs() throws Exception {
        cli.run("topic", "create", "described", "-p", "2", "-c", "cleanup.policy=compact");
        try (var producer = new org.apache.kafka.clients.producer.KafkaProducer<String, String>(java.util.Map.of(
                "bootstrap.servers", cli.bootstrap(), "key.serializer", org.apache.kafka.common.serialization.StringSerializer.class,
                "value.serializer", org.apache.kafka.common.serialization.StringSerializer.class))) {
            for (int i = 0; i < 5; i++) {
                producer.send(new org.apache.kafka.clients.producer.ProducerRecord<>("described", 1, "k" + i, "v" + i)).get();
            }
        }
        CliHarness.Result yaml = cli.run("topic", "describe", "described", "-o", "yaml");
        assertThat(yaml.exit()).as(yaml.toString()).isZero();
        JsonNode doc = yaml.yaml();
        assertThat(doc.get("name").asText()).isEqualTo("described");
        assertThat(doc.get("partitions").asInt()).isEqualTo(2);
        assertThat(doc.get("configs").get("cleanup.policy").asText()).isEqualTo("compact");
        assertThat(doc.get("configs").has("retention.ms")).as("only the topic's own configs by default").isFalse();
        JsonNode p1 = doc.get("partition-details").get(1);
        assertThat(p1.get("partition").asInt()).isEqualTo(1);
        assertThat(p1.get("leader").asInt()).isEqualTo(cli.nodeId());
        assertThat(p1.get("isr").get(0).asInt()).isEqualTo(cli.nodeId());
        assertThat(p1.get("log-start-offset").asLong()).isZero();
        assertThat(p1.get("high-watermark").asLong()).isEqualTo(5);
        assertThat(doc.get("partition-details").get(0).get("high-watermark").asLong()).isZero();

        CliHarness.Result text = cli.run("topic", "describe", "described", "--all-configs");
        assertThat(text.out()).contains("SUMMARY", "CONFIGS", "PARTITIONS").containsPattern("cleanup.policy\\s+compact")
                .containsPattern("retention.ms\\s+\\d+").containsPattern("\\n1\\s+" + cli.nodeId() + "\\s+\\d+\\s+\\d+\\s+0\\s+5");

        CliHarness.Result missing = cli.run("topic", "describe", "no-such-topic");
        assertThat(missing.exit()).isEqualTo(1);
        assertThat(missing.err()).startsWith("error: ").contains("varve topic list");
    }

    @Test
    void altersConfigsIncrementallyAndAddsPartitionsAndDeletes() throws Exception {
        cli.run("topic", "create", "altered", "-p", "1", "-c", "retention.ms=1000", "-c", "max.message.bytes=2000");
        CliHarness.Result alter = cli.run("topic", "alter-config", "altered", "--set", "retention.ms=5000", "--delete", "max.message.bytes");
        assertThat(alter.exit()).as(alter.toString()).isZero();
        var config = cli.admin.describeConfigs(List.of(new ConfigResource(ConfigResource.Type.TOPIC, "altered"))).all().get()
                .values().iterator().next();
        assertThat(config.get("retention.ms").value()).isEqualTo("5000");
        assertThat(config.get("max.message.bytes").source()).isNotEqualTo(ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG);

        CliHarness.Result bad = cli.run("topic", "alter-config", "altered", "--set", "retention.ms=soon", "-o", "json");
        assertThat(bad.exit()).isEqualTo(1);
        assertThat(bad.json().get(0).get("status").asText()).containsIgnoringCase("retention.ms");
        assertThat(cli.run("topic", "alter-config", "altered").err()).contains("nothing to change");

        CliHarness.Result grow = cli.run("topic", "add-partitions", "altered", "-n", "3", "-o", "json");
        assertThat(grow.exit()).as(grow.toString()).isZero();
        assertThat(grow.json().get(0).get("partitions").asInt()).isEqualTo(4);
        assertThat(cli.admin.describeTopics(List.of("altered")).allTopicNames().get().get("altered").partitions()).hasSize(4);

        CliHarness.Result delete = cli.run("topic", "delete", "altered");
        assertThat(delete.exit()).as(delete.toString()).isZero();
        assertThat(cli.admin.listTopics().names().get()).doesNotContain("altered");
        CliHarness.Result deleteAgain = cli.run("topic", "delete", "altered", "-o", "yaml");
        assertThat(deleteAgain.exit()).isEqualTo(1);
        assertThat(deleteAgain.yaml().get(0).get("status").asText()).contains("varve topic list");
    }

    @Test
    void anUnreachableClusterIsReportedWithWhatToDoWithinTheTimeout() {
        long start = System.nanoTime();
        CliHarness.Result r = cli.raw("topic", "list", "--bootstrap-server", "127.0.0.1:1", "--timeout", "2");
        assertThat(r.exit()).isEqualTo(1);
        assertThat(r.err()).startsWith("error: no answer from the cluster at 127.0.0.1:1").contains("varve server")
                .contains("--bootstrap-server");
        assertThat(r.err().lines().count()).isEqualTo(1);
        assertThat(System.nanoTime() - start).isLessThan(java.util.concurrent.TimeUnit.SECONDS.toNanos(20));
    }

    @Test
    void aProfileSuppliesTheClusterAndTheCurrentOneIsUsedWhenNoneIsNamed() throws Exception {
        CliHarness.Result created = cli.raw("profile", "create", "local", "--bootstrap-server", cli.bootstrap(), "-X", "client.id=from-profile");
        assertThat(created.exit()).as(created.toString()).isZero();
        cli.admin.createTopics(List.of(new org.apache.kafka.clients.admin.NewTopic("via-profile", 1, (short) 1))).all().get();

        CliHarness.Result list = cli.raw("topic", "list", "-o", "json");
        assertThat(list.exit()).as(list.toString()).isZero();
        assertThat(list.json().findValuesAsText("name")).contains("via-profile");

        cli.raw("profile", "create", "elsewhere", "--bootstrap-server", "127.0.0.1:1");
        assertThat(cli.raw("profile", "list", "-o", "json").json().findValuesAsText("name")).containsExactly("elsewhere", "local");
        assertThat(cli.raw("topic", "list", "--timeout", "1").exit()).as("elsewhere is current").isEqualTo(1);
        assertThat(cli.raw("topic", "list", "--profile", "local").exit()).isZero();
        assertThat(cli.raw("profile", "show", "local", "-o", "json").json().get("client.id").asText()).isEqualTo("from-profile");
        CliHarness.Result unknown = cli.raw("topic", "list", "--profile", "nope");
        assertThat(unknown.exit()).isEqualTo(1);
        assertThat(unknown.err()).contains("no profile 'nope'").contains("elsewhere, local");

        assertThat(cli.raw("profile", "use", "local").exit()).isZero();
        assertThat(cli.raw("topic", "list").exit()).isZero();
        assertThat(cli.raw("profile", "delete", "elsewhere").exit()).isZero();
        assertThat(java.nio.file.Files.readString(cli.profiles)).contains("current: local").doesNotContain("elsewhere");
        assertThat(java.nio.file.Files.getPosixFilePermissions(cli.profiles))
                .containsExactlyInAnyOrder(java.nio.file.attribute.PosixFilePermission.OWNER_READ,
                        java.nio.file.attribute.PosixFilePermission.OWNER_WRITE);
        cli.raw("profile", "delete", "local");
    }

    @Test
    void completionScriptCoversTheSubcommands() {
        CliHarness.Result r = cli.raw("generate-completion");
        assertThat(r.exit()).isZero();
        assertThat(r.out()).contains("complete -F").contains("topic").contains("alter-config").contains("profile");
    }
}
