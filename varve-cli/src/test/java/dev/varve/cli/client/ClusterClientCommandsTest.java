package dev.varve.cli.client;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.config.ConfigResource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code varve cluster info|metadata|health} end to end against a real (single-node) broker. */
class ClusterClientCommandsTest {
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
    void infoShowsTheClusterIdControllerAndBrokers() throws Exception {
        Node broker = cli.admin.describeCluster().nodes().get().iterator().next();
        String clusterId = cli.admin.describeCluster().clusterId().get();

        CliHarness.Result json = cli.run("cluster", "info", "-o", "json");
        assertThat(json.exit()).as(json.toString()).isZero();
        JsonNode doc = json.json();
        assertThat(doc.get("cluster-id").asText()).isEqualTo(clusterId);
        assertThat(doc.get("controller").asInt()).isEqualTo(broker.id());
        assertThat(doc.get("brokers")).hasSize(1);
        JsonNode b = doc.get("brokers").get(0);
        assertThat(b.get("id").asInt()).isEqualTo(broker.id());
        assertThat(b.get("host").asText()).isEqualTo(broker.host());
        assertThat(b.get("port").asInt()).isEqualTo(broker.port());
        assertThat(cli.bootstrap()).endsWith(":" + broker.port());
        assertThat(b.get("rack").isNull()).isTrue();

        CliHarness.Result text = cli.run("cluster", "info");
        assertThat(text.exit()).as(text.toString()).isZero();
        assertThat(text.out()).contains("CLUSTER", "BROKERS").containsPattern("ID\\s+" + clusterId)
                .containsPattern("CONTROLLER\\s+" + broker.id()).containsPattern("ID\\s+HOST\\s+PORT\\s+RACK")
                .containsPattern(broker.id() + "\\s+" + broker.host() + "\\s+" + broker.port() + "\\s+-");
    }

    @Test
    void metadataAddsTopicsWithPartitionLeadersReplicasAndIsr() throws Exception {
        cli.admin.createTopics(List.of(new NewTopic("meta", 3, (short) 1))).all().get();
        int node = cli.nodeId();

        CliHarness.Result yaml = cli.run("cluster", "metadata", "-o", "yaml");
        assertThat(yaml.exit()).as(yaml.toString()).isZero();
        JsonNode doc = yaml.yaml();
        assertThat(doc.get("brokers").get(0).get("id").asInt()).isEqualTo(node);
        JsonNode meta = null;
        for (JsonNode t : doc.get("topics")) {
            assertThat(t.get("internal").asBoolean()).as("internal topics only with -i").isFalse();
            if (t.get("name").asText().equals("meta")) {
                meta = t;
            }
        }
        assertThat(meta).as("topic meta listed").isNotNull();
        assertThat(meta.get("id").asText()).isEqualTo(
                cli.admin.describeTopics(List.of("meta")).allTopicNames().get().get("meta").topicId().toString());
        assertThat(meta.get("partitions")).hasSize(3);
        for (int p = 0; p < 3; p++) {
            JsonNode part = meta.get("partitions").get(p);
            assertThat(part.get("partition").asInt()).isEqualTo(p);
            assertThat(part.get("leader").asInt()).isEqualTo(node);
            assertThat(part.get("replicas").get(0).asInt()).isEqualTo(node);
            assertThat(part.get("isr").get(0).asInt()).isEqualTo(node);
            assertThat(part.get("offline-replicas")).isEmpty();
        }

        CliHarness.Result text = cli.run("cluster", "metadata", "meta");
        assertThat(text.exit()).as(text.toString()).isZero();
        assertThat(text.out()).contains("CLUSTER", "BROKERS", "TOPICS", "PARTITIONS").containsPattern("meta\\s+3\\s+1")
                .containsPattern("meta\\s+2\\s+" + node + "\\s+" + node + "\\s+" + node + "\\s+-");

        cli.admin.createTopics(List.of(new NewTopic("meta-other", 1, (short) 1))).all().get();
        JsonNode only = cli.run("cluster", "metadata", "meta", "-o", "json").json();
        assertThat(only.get("topics").findValuesAsText("name")).containsExactly("meta");

        CliHarness.Result missing = cli.run("cluster", "metadata", "no-such-topic");
        assertThat(missing.exit()).isEqualTo(1);
        assertThat(missing.err()).startsWith("error: ").contains("varve topic list");
    }

    @Test
    void healthIsHealthyUnlessAPartitionHasFewerInSyncReplicasThanItsMinimum() throws Exception {
        CliHarness.Result healthy = cli.run("cluster", "health");
        assertThat(healthy.exit()).as(healthy.toString()).isZero();
        assertThat(healthy.out()).containsPattern("HEALTHY\\s+true").containsPattern("REASONS\\s+-")
                .containsPattern("UNDER-MIN-ISR-PARTITIONS\\s+0\\n");

        // min.insync.replicas 2 on a single replica: acks=all writes fail, the partition is under its minimum ISR
        cli.admin.createTopics(List.of(new NewTopic("strict", 2, (short) 1).configs(Map.of("min.insync.replicas", "2")))).all().get();
        try {
            CliHarness.Result json = cli.run("cluster", "health", "-o", "json");
            assertThat(json.exit()).as(json.toString()).isEqualTo(1);
            JsonNode doc = json.json();
            assertThat(doc.get("healthy").asBoolean()).isFalse();
            assertThat(doc.get("reasons").toString()).isEqualTo("[\"under-min-isr-partitions\"]");
            assertThat(doc.get("under-min-isr-partitions")).hasSize(2);
            JsonNode p = doc.get("under-min-isr-partitions").get(0);
            assertThat(p.get("topic").asText()).isEqualTo("strict");
            assertThat(p.get("partition").asInt()).isZero();
            assertThat(p.get("isr").toString()).isEqualTo("[" + cli.nodeId() + "]");
            assertThat(p.get("min-insync-replicas").asInt()).isEqualTo(2);
            assertThat(doc.get("offline-partitions")).isEmpty();
            assertThat(doc.get("under-replicated-partitions")).isEmpty();
            assertThat(doc.get("brokers").toString()).isEqualTo("[" + cli.nodeId() + "]");

            CliHarness.Result text = cli.run("cluster", "health");
            assertThat(text.exit()).isEqualTo(1);
            assertThat(text.out()).containsPattern("HEALTHY\\s+false").containsPattern("REASONS\\s+under-min-isr-partitions")
                    .containsPattern("UNDER-MIN-ISR-PARTITIONS\\s+2 \\(strict-0, strict-1\\)");
            assertThat(text.err()).isEmpty();

            // --wait gives up after its time and still says why
            long start = System.nanoTime();
            CliHarness.Result waited = cli.run("cluster", "health", "--wait", "1", "-o", "yaml");
            assertThat(waited.exit()).isEqualTo(1);
            assertThat(waited.yaml().get("healthy").asBoolean()).isFalse();
            assertThat(System.nanoTime() - start).isGreaterThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(900));

            // ... and returns as soon as the cluster is healthy
            CompletableFuture<CliHarness.Result> waiting = CompletableFuture.supplyAsync(() -> cli.run("cluster", "health", "--wait", "20"));
            Thread.sleep(300);
            cli.admin.incrementalAlterConfigs(Map.of(new ConfigResource(ConfigResource.Type.TOPIC, "strict"),
                    List.of(new AlterConfigOp(new ConfigEntry("min.insync.replicas", "1"), AlterConfigOp.OpType.SET)))).all().get();
            CliHarness.Result recovered = waiting.get(15, TimeUnit.SECONDS);
            assertThat(recovered.exit()).as(recovered.toString()).isZero();
            assertThat(recovered.out()).containsPattern("HEALTHY\\s+true");
        } finally {
            cli.admin.deleteTopics(List.of("strict")).all().get();
        }
        assertThat(cli.run("cluster", "health").exit()).isZero();
    }

    @Test
    void anUnreachableClusterIsAnErrorNotAnUnhealthyReport() {
        CliHarness.Result r = cli.raw("cluster", "health", "--bootstrap-server", "127.0.0.1:1", "--timeout", "1");
        assertThat(r.exit()).isEqualTo(1);
        assertThat(r.err()).startsWith("error: no answer from the cluster at 127.0.0.1:1");
        assertThat(r.out()).isEmpty();
    }

    @Test
    void theLocalClusterSubcommandsAreStillThere() {
        CliHarness.Result help = cli.raw("cluster", "--help");
        assertThat(help.exit()).isZero();
        assertThat(help.out()).contains("up", "down", "status", "info", "metadata", "health");
    }
}
