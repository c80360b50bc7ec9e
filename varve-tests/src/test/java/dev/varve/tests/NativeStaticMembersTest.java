package dev.varve.tests;

import com.fasterxml.jackson.databind.JsonNode;
import dev.varve.storage.testing.Capabilities;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * Static group members (KIP-345) of librdkafka 2.0.2 (python3-confluent-kafka 1.7.0,
 * {@code src/test/python/confluent_kafka_static_members.py}) against a Varve broker process: the
 * scenario librdkafka's own test 0102_static_group_rebalance checks. librdkafka speaks JoinGroup v5,
 * which cannot tell a returning leader to skip the assignment (KIP-814 is v9); Kafka keeps the
 * generation anyway and answers it as a follower. Two static members share a topic; one of them
 * restarts (closed without LeaveGroup, a new consumer with the same {@code group.instance.id}) well
 * within its session timeout. The other member sees no revocation or assignment at all, and the
 * restarted one gets exactly its partitions back, in less than the session timeout. Both the leader
 * (the member that joined first) and the follower restart in turn.
 *
 * <p>Skipped when python3-confluent-kafka is missing; with {@code CI=true} a missing client fails the run.
 */
@Timeout(120)
class NativeStaticMembersTest {
    private static final int PARTITIONS = 4;
    private static final int SESSION_TIMEOUT_MS = 30_000;

    @TempDir
    static Path tmp;
    private static VarveProcess broker;

    @BeforeAll
    static void startBroker() throws Exception {
        NativeTransactionalClientsTest.Client client = NativeTransactionalClientsTest.Client.LIBRDKAFKA;
        assumeTrue(Capabilities.require(NativeTransactionalClientsTest.probe(client), client.what), client.what + " is missing");
        broker = VarveProcess.start(tmp, tmp.resolve("data"), Map.of(
                "group.initial.rebalance.delay.ms", "0",
                "offsets.topic.num.partitions", "3",
                "varve.admin.listener", ""));
    }

    @AfterAll
    static void stopBroker() {
        if (broker != null) {
            broker.close();
        }
    }

    @Test
    void aRestartedStaticLeaderGetsItsPartitionsBackAndTheOtherMemberSeesNothing() throws Exception {
        restart("first");
    }

    @Test
    void aRestartedStaticFollowerGetsItsPartitionsBackAndTheOtherMemberSeesNothing() throws Exception {
        restart("second");
    }

    private void restart(String who) throws Exception {
        String topic = TestBroker.unique("static-" + who);
        Clients.createTopic(broker.bootstrap(), topic, PARTITIONS, Map.of());
        NativeTransactionalClientsTest.Run run;
        try {
            run = NativeTransactionalClientsTest.run(tmp, NativeTransactionalClientsTest.Client.LIBRDKAFKA,
                    "python/confluent_kafka_static_members.py", "restart", "--bootstrap", broker.bootstrap(),
                    "--topic", topic, "--partitions", Integer.toString(PARTITIONS), "--group", topic,
                    "--session-timeout-ms", Integer.toString(SESSION_TIMEOUT_MS), "--restart", who);
        } catch (AssertionError e) {
            throw new AssertionError(e.getMessage() + "\n" + broker.log(), e);
        }
        assertThat(run.ofType("timeout")).as("the script waited for nothing in vain\n%s", run).isEmpty();
        JsonNode balanced = run.ofType("balanced").get(0);
        List<Integer> before = ints(balanced.get(who));
        assertThat(before).as("%s's partitions before the restart\n%s", who, run).isNotEmpty();

        String other = who.equals("first") ? "second" : "first";
        List<String> otherEvents = new ArrayList<>();
        List<String> restartedEvents = new ArrayList<>();
        for (JsonNode e : run.ofType("event")) {
            if (!e.get("phase").asText().equals("restart")) {
                continue;
            }
            String line = e.get("event").asText() + " " + ints(e.get("partitions"));
            if (e.get("member").asText().equals(other)) {
                otherEvents.add(line);
            } else {
                restartedEvents.add(line);
            }
        }
        assertThat(otherEvents).as("rebalance events of %s while %s restarted\n%s\n%s", other, who, run,
                broker.log()).isEmpty();
        // the old consumer revokes locally as it closes; the new one is assigned what the old one had
        assertThat(restartedEvents).as("%s's events across its restart\n%s", who, run)
                .containsExactly("revoke " + before, "assign " + before);
        JsonNode rejoined = run.ofType("rejoined").get(0);
        assertThat(rejoined.get("seconds").asDouble()).as("the restart took less than the session timeout")
                .isLessThan(SESSION_TIMEOUT_MS / 1000.0 / 2);
        JsonNode settled = run.ofType("settled").get(0);
        assertThat(ints(settled.get(who))).as("%s after the restart", who).isEqualTo(before);
        assertThat(ints(settled.get(other))).as("%s after the restart", other).isEqualTo(ints(balanced.get(other)));
    }

    private static List<Integer> ints(JsonNode array) {
        List<Integer> out = new ArrayList<>();
        array.forEach(n -> out.add(n.asInt()));
        return out;
    }
}
