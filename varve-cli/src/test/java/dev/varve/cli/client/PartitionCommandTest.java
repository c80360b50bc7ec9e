package dev.varve.cli.client;

import com.fasterxml.jackson.databind.JsonNode;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.TopicPartitionInfo;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code varve partition ...} end to end against a real broker: a one-node cluster with a metadata quorum
 * (process.roles=broker,controller), as leader election and reassignment are controller APIs.
 */
class PartitionCommandTest {
    static CliHarness cli;

    /** A one-voter metadata quorum on this host. */
    static Map<String, String> oneNodeCluster() throws Exception {
        int raft;
        try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            raft = s.getLocalPort();
        }
        return Map.of("node.id", "1", "process.roles", "broker,controller", "controller.quorum.voters", "1@127.0.0.1:" + raft,
                "listeners", "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:" + raft,
                "offsets.topic.replication.factor", "1", "default.replication.factor", "1",
                "broker.heartbeat.interval.ms", "300");
    }

    @BeforeAll
    static void start() throws Exception {
        cli = new CliHarness(oneNodeCluster());
        assertThat(cli.broker.awaitUnfenced(60_000)).isTrue();
        cli.admin.createTopics(List.of(new NewTopic("moved", 2, (short) 1))).all().get();
    }

    @AfterAll
    static void stop() throws Exception {
        cli.close();
    }

    static List<TopicPartitionInfo> partitions(String topic) throws Exception {
        return cli.admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic).partitions();
    }

    @Test
    void preferredElectionOnAPartitionAlreadyLedByItsPreferredReplicaIsNotAnError() throws Exception {
        int node = cli.nodeId();
        CliHarness.Result text = cli.run("partition", "move-leader", "moved:1");
        assertThat(text.exit()).as(text.toString()).isZero();
        assertThat(text.out()).containsPattern("TOPIC\\s+PARTITION\\s+LEADER\\s+PREFERRED-LEADER\\s+STATUS")
                .containsPattern("moved\\s+1\\s+" + node + "\\s+" + node + "\\s+already led by its preferred replica");
        assertThat(text.out().lines()).hasSize(2);

        JsonNode json = cli.run("partition", "move-leader", "moved", "-o", "json").json();
        assertThat(json).hasSize(2);
        for (JsonNode row : json) {
            assertThat(row.get("leader").asInt()).isEqualTo(node);
            assertThat(row.get("status").asText()).isEqualTo("already led by its preferred replica");
        }
        assertThat(partitions("moved")).allSatisfy(p -> assertThat(p.leader().id()).isEqualTo(node));

        CliHarness.Result unclean = cli.run("partition", "move-leader", "moved:0", "--unclean", "-o", "yaml");
        assertThat(unclean.exit()).as(unclean.toString()).isZero();
        assertThat(unclean.yaml().get(0).get("status").asText()).isEqualTo("has a leader already: no unclean election needed");
    }

    @Test
    void moveLeaderExplainsAMissingTopicOrPartition() {
        CliHarness.Result none = cli.run("partition", "move-leader", "nope:0");
        assertThat(none.exit()).isEqualTo(1);
        assertThat(none.err()).startsWith("error: ").contains("varve topic list");

        CliHarness.Result high = cli.run("partition", "move-leader", "moved:7");
        assertThat(high.exit()).isEqualTo(1);
        assertThat(high.err()).contains("error: topic moved has no partition 7 (it has 2: 0..1)");

        CliHarness.Result bad = cli.run("partition", "move-leader", "moved:x");
        assertThat(bad.exit()).isEqualTo(1);
        assertThat(bad.err()).contains("'moved:x' is not TOPIC:PARTITION");
    }

    @Test
    void reassignToTheSameBrokerCompletesAndAnUnknownBrokerIsRefused() throws Exception {
        int node = cli.nodeId();
        CliHarness.Result r = cli.run("partition", "reassign", "--topic", "moved", "--partition", "0,1", "--replicas", "" + node, "-o", "json");
        assertThat(r.exit()).as(r.toString()).isZero();
        assertThat(r.json()).hasSize(2);
        for (JsonNode row : r.json()) {
            assertThat(row.get("replicas").get(0).asInt()).isEqualTo(node);
            assertThat(row.get("status").asText()).isEqualTo("done");
        }
        assertThat(partitions("moved")).allSatisfy(p -> assertThat(p.replicas()).extracting(n -> n.id()).containsExactly(node));
        assertThat(cli.admin.listPartitionReassignments().reassignments().get()).isEmpty();

        CliHarness.Result text = cli.run("partition", "reassign", "-t", "moved", "-p", "0", "-r", "" + node);
        assertThat(text.exit()).as(text.toString()).isZero();
        assertThat(text.out()).containsPattern("moved\\s+0\\s+" + node + "\\s+" + node + "\\s+done");

        CliHarness.Result unknown = cli.run("partition", "reassign", "--topic", "moved", "--partition", "0", "--replicas", node + ",99");
        assertThat(unknown.exit()).isEqualTo(1);
        assertThat(unknown.err()).contains("error: broker 99 is not in the cluster (its brokers are " + node + ": see `varve cluster info`)");
        assertThat(partitions("moved").get(0).replicas()).extracting(n -> n.id()).containsExactly(node);

        CliHarness.Result twice = cli.run("partition", "reassign", "--topic", "moved", "--partition", "0", "--replicas", node + "," + node);
        assertThat(twice.exit()).isEqualTo(1);
        assertThat(twice.err()).contains("names a broker twice");

        CliHarness.Result neither = cli.run("partition", "reassign", "--topic", "moved", "--partition", "0");
        assertThat(neither.exit()).isEqualTo(1);
        assertThat(neither.err()).contains("give either --replicas");

        CliHarness.Result cancel = cli.run("partition", "reassign", "--topic", "moved", "--partition", "0", "--cancel");
        assertThat(cancel.exit()).as(cancel.toString()).isEqualTo(1);
        assertThat(cancel.out()).contains("nothing to cancel");
    }

    @Test
    void listsNoReassignmentsWhenNoneAreInProgress() {
        CliHarness.Result text = cli.run("partition", "reassignments");
        assertThat(text.exit()).as(text.toString()).isZero();
        assertThat(text.out()).isEqualTo("No reassignments in progress.\n");
        CliHarness.Result json = cli.run("partition", "reassignments", "-o", "json");
        assertThat(json.exit()).isZero();
        assertThat(json.json().isArray()).isTrue();
        assertThat(json.json()).isEmpty();
    }

    @Test
    void aSingleNodeWithoutAQuorumAnswersAsAOneBrokerCluster() throws Exception {
        Map<String, String> env = ClientOptions.environment;
        try (CliHarness plain = new CliHarness()) {
            plain.admin.createTopics(List.of(new NewTopic("x", 1, (short) 1))).all().get();
            CliHarness.Result elect = plain.run("partition", "move-leader", "x:0");
            assertThat(elect.exit()).as(elect.toString()).isZero();
            assertThat(elect.out()).contains("already led by its preferred replica");
            CliHarness.Result same = plain.run("partition", "reassign", "-t", "x", "-p", "0", "-r", "" + plain.nodeId());
            assertThat(same.exit()).as(same.toString()).isZero();
            CliHarness.Result elsewhere = plain.run("partition", "reassign", "-t", "x", "-p", "0", "-r", plain.nodeId() + "," + (plain.nodeId() + 1));
            assertThat(elsewhere.exit()).isEqualTo(1);
            assertThat(elsewhere.err()).contains("error: ");
            CliHarness.Result list = plain.run("partition", "reassignments");
            assertThat(list.exit()).as(list.toString()).isZero();
            assertThat(list.out()).isEqualTo("No reassignments in progress.\n");
        } finally {
            ClientOptions.environment = env; // the outer harness's profile file, not the user's
        }
    }
}
