package dev.varve.tests;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.QuorumInfo;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * KIP-853 dynamic quorum membership with Kafka's own {@code kafka-metadata-quorum.sh}: a 3-voter cluster of
 * processes grows to 5 voters (two new controller-only nodes start as observers, {@code add-controller}
 * with each one's config file), then shrinks back to 3 ({@code remove-controller} of the leader and of
 * another original voter, which stay on as brokers and observers), while an idempotent acks=all producer
 * writes. After every step a topic is created and DescribeQuorum shows the expected voters; at the end
 * every acknowledged record is read back.
 */
@Timeout(180)
class DynamicQuorumTest {
    private static final String QUORUM_COMMAND = "org.apache.kafka.tools.MetadataQuorumCommand";
    private static final String TOPIC = "load";
    private static final int PARTITIONS = 3;

    @TempDir
    Path dir;

    private static Set<Integer> ids(List<QuorumInfo.ReplicaState> replicas) {
        return replicas.stream().map(QuorumInfo.ReplicaState::replicaId).collect(Collectors.toCollection(TreeSet::new));
    }

    private static QuorumInfo quorum(Admin admin) throws Exception {
        return admin.describeMetadataQuorum().quorumInfo().get(30, TimeUnit.SECONDS);
    }

    /** Waits until DescribeQuorum shows exactly these voters (and these observers among its observers). */
    private static QuorumInfo awaitQuorum(Admin admin, Set<Integer> voters, Set<Integer> observers) {
        AtomicReference<QuorumInfo> last = new AtomicReference<>();
        await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(200)).ignoreExceptions().untilAsserted(() -> {
            QuorumInfo q = quorum(admin);
            last.set(q);
            assertThat(ids(q.voters())).isEqualTo(voters);
            assertThat(ids(q.observers())).containsAll(observers);
        });
        return last.get();
    }

    private static void createTopic(Admin admin, String name) throws Exception {
        admin.createTopics(List.of(new NewTopic(name, 1, (short) 3))).all().get(30, TimeUnit.SECONDS);
    }

    private KafkaTool.Result quorumTool(TestCluster cluster, List<String> args) throws Exception {
        List<String> all = new java.util.ArrayList<>(List.of("--bootstrap-server", cluster.bootstrap()));
        all.addAll(args);
        return KafkaTool.run(dir, QUORUM_COMMAND, all);
    }

    @Test
    void growsThreeVotersToFiveAndShrinksToThreeUnderLoadWithKafkasTool() throws Exception {
        long start = System.nanoTime();
        try (TestCluster cluster = TestCluster.start(dir, 3, Map.of("min.insync.replicas", "2"));
             Admin admin = cluster.admin()) {
            assertThat(ids(quorum(admin).voters())).containsExactly(1, 2, 3);
            TestCluster.createAndAwaitInSync(admin, new NewTopic(TOPIC, PARTITIONS, (short) 3), Duration.ofSeconds(60));

            // the new controllers start while the load runs; each follows the log as an observer
            TestCluster.Node four = cluster.startController(dir, 4);
            TestCluster.Node five = cluster.startController(dir, 5);

            AckedRecords acked = new AckedRecords();
            AtomicBoolean stop = new AtomicBoolean();
            AtomicReference<Throwable> sendError = new AtomicReference<>();
            Thread load = new Thread(() -> {
                try (KafkaProducer<String, String> producer = cluster.producer(Map.of("linger.ms", 5))) {
                    for (long seq = 0; !stop.get(); seq++) {
                        String value = AckedRecords.value(seq);
                        producer.send(new ProducerRecord<>(TOPIC, (int) (seq % PARTITIONS), null, value), (md, e) -> {
                            if (e != null) {
                                sendError.compareAndSet(null, e);
                            } else {
                                acked.add(md.partition(), value);
                            }
                        });
                        if (seq % 50 == 49) {
                            Thread.sleep(20); // a steady stream, not a flood that starves the 2-core machine
                        }
                    }
                    producer.flush();
                } catch (Throwable t) {
                    sendError.compareAndSet(null, t);
                }
            }, "load");
            load.start();
            acked.awaitAtLeast(200, Duration.ofSeconds(30));

            // grow: 3 -> 4 -> 5 voters
            Set<Integer> voters = new TreeSet<>(Set.of(1, 2, 3));
            for (TestCluster.Node node : List.of(four, five)) {
                awaitQuorum(admin, voters, Set.of(node.id));
                KafkaTool.Result added = quorumTool(cluster, List.of("--command-config", TestCluster.configOf(node).toString(),
                        "add-controller"));
                assertThat(added.exitCode()).as(added.toString()).isZero();
                assertThat(added.stdout()).contains("Added controller " + node.id);
                voters.add(node.id);
                awaitQuorum(admin, voters, Set.of());
                createTopic(admin, "after-adding-" + node.id);
            }
            KafkaTool.Result replication = quorumTool(cluster, List.of("describe", "--replication"));
            assertThat(replication.exitCode()).as(replication.toString()).isZero();
            for (int id : voters) {
                assertThat(replication.stdout()).containsPattern("(?m)^" + id + "\\s.*(Leader|Follower)");
            }

            // adding a voter twice is Kafka's DUPLICATE_VOTER
            KafkaTool.Result again = quorumTool(cluster, List.of("--command-config", TestCluster.configOf(four).toString(),
                    "add-controller"));
            assertThat(again.exitCode()).isNotZero();
            assertThat(again.all()).contains("DuplicateVoterException");

            // shrink: remove the leader (it hands leadership over first), then another original voter
            int leader = quorum(admin).leaderId();
            int other = voters.stream().filter(id -> id != leader && id <= 3).findFirst().orElseThrow();
            Set<Integer> removed = new TreeSet<>();
            for (int id : List.of(leader, other)) {
                QuorumInfo before = quorum(admin);
                String directory = before.voters().stream().filter(v -> v.replicaId() == id).findFirst().orElseThrow()
                        .replicaDirectoryId().toString();
                KafkaTool.Result gone = quorumTool(cluster, List.of("remove-controller", "--controller-id", Integer.toString(id),
                        "--controller-directory-id", directory));
                assertThat(gone.exitCode()).as(gone.toString()).isZero();
                assertThat(gone.stdout()).contains("Removed KRaft controller " + id);
                voters.remove(id);
                removed.add(id);
                // a removed voter that still runs (these are brokers too) keeps following as an observer
                QuorumInfo after = awaitQuorum(admin, voters, removed);
                assertThat(after.leaderId()).isIn(voters);
                createTopic(admin, "after-removing-" + id);
            }
            assertThat(quorum(admin).leaderId()).isNotEqualTo(leader);
            KafkaTool.Result status = quorumTool(cluster, List.of("describe", "--status"));
            assertThat(status.exitCode()).as(status.toString()).isZero();
            assertThat(status.stdout()).containsPattern("CurrentObservers:.*\"id\": ?" + leader);

            // the load ran across every change: nothing acknowledged is lost
            int ackedBeforeStop = acked.count();
            stop.set(true);
            load.join(60_000);
            assertThat(load.isAlive()).isFalse();
            assertThat(sendError.get()).as("a send failed").isNull();
            assertThat(acked.count()).isGreaterThanOrEqualTo(ackedBeforeStop);
            acked.assertReadBack(cluster.readPartitions(TOPIC, PARTITIONS), PARTITIONS);
            System.out.printf("[dynamic-quorum] %d records acknowledged, whole test %d s%n", acked.count(),
                    (System.nanoTime() - start) / 1_000_000_000);
        }
    }
}
