package dev.varve.tests;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Leadership on a 3-process cluster, seen through the tools users have: Kafka's TopicCommand, kcat and
 * the Admin client report the same leaders, replicas and ISR; SIGTERM moves leadership away before the
 * process stops (a producer sees no error); and a replica outside the ISR is never elected while
 * {@code unclean.leader.election.enable} is off, even when it is the only one alive.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class ClusterLeadershipTest {
    @TempDir
    Path dir;

    @Test
    void toolsAgreeAndControlledShutdownMovesLeadershipWithoutErrors() throws Exception {
        try (TestCluster cluster = TestCluster.start(dir, 3, Map.of()); Admin admin = cluster.admin()) {
            admin.createTopics(List.of(new NewTopic("tools", 6, (short) 3))).all().get(30, TimeUnit.SECONDS);
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() ->
                    assertThat(TestCluster.describe(admin, "tools")).allSatisfy(p -> assertThat(p.isr()).hasSize(3)));
            Map<Integer, String> fromAdmin = new HashMap<>();
            for (TopicPartitionInfo p : TestCluster.describe(admin, "tools")) {
                fromAdmin.put(p.partition(), TestCluster.leaderId(p) + " " + sorted(TestCluster.ids(p.replicas()))
                        + " " + sorted(TestCluster.ids(p.isr())));
            }
            // Kafka's own kafka-topics --describe, against another node
            KafkaTool.Result described = KafkaTool.run(dir, "org.apache.kafka.tools.TopicCommand", List.of(
                    "--bootstrap-server", cluster.node(2).bootstrap(), "--describe", "--topic", "tools"));
            assertThat(described.exitCode()).as(described.toString()).isZero();
            Map<Integer, String> fromTool = new HashMap<>();
            Matcher m = Pattern.compile("Partition: (\\d+)\\s+Leader: (-?\\d+)\\s+Replicas: ([\\d,]+)\\s+Isr: ([\\d,]+)")
                    .matcher(described.stdout());
            while (m.find()) {
                fromTool.put(Integer.parseInt(m.group(1)), m.group(2) + " " + sorted(ints(m.group(3))) + " " + sorted(ints(m.group(4))));
            }
            assertThat(fromTool).isEqualTo(fromAdmin);
            // kcat -L (librdkafka), against the third node
            if (kcatAvailable()) {
                Process kcat = new ProcessBuilder("kcat", "-L", "-b", cluster.node(3).bootstrap(), "-t", "tools")
                        .redirectErrorStream(true).start();
                String out = new String(kcat.getInputStream().readAllBytes());
                assertThat(kcat.waitFor(30, TimeUnit.SECONDS)).isTrue();
                Map<Integer, String> fromKcat = new HashMap<>();
                Matcher k = Pattern.compile("partition (\\d+), leader (-?\\d+), replicas: ([\\d,]+), isrs: ([\\d,]+)").matcher(out);
                while (k.find()) {
                    fromKcat.put(Integer.parseInt(k.group(1)), k.group(2) + " " + sorted(ints(k.group(3))) + " " + sorted(ints(k.group(4))));
                }
                assertThat(fromKcat).as(out).isEqualTo(fromAdmin);
                assertThat(out).contains("3 brokers");
            }

            // Controlled shutdown: SIGTERM a leader while an acks=all producer writes; it sees no error.
            int victim = TestCluster.leaderId(TestCluster.describe(admin, "tools").get(0));
            ConcurrentLinkedQueue<Exception> errors = new ConcurrentLinkedQueue<>();
            AtomicBoolean running = new AtomicBoolean(true);
            int[] acked = {0};
            Thread producer = new Thread(() -> {
                try (KafkaProducer<String, String> p = cluster.producer(Map.of())) {
                    int i = 0;
                    while (running.get()) {
                        p.send(new ProducerRecord<>("tools", i % 6, null, "c-" + i++), (md, e) -> {
                            if (e != null) {
                                errors.add(e);
                            } else {
                                synchronized (acked) {
                                    acked[0]++;
                                }
                            }
                        });
                        Thread.sleep(2);
                    }
                    p.flush();
                } catch (Exception e) {
                    errors.add(e);
                }
            });
            producer.start();
            await().atMost(Duration.ofSeconds(30)).until(() -> {
                synchronized (acked) {
                    return acked[0] > 200;
                }
            });
            long start = System.nanoTime();
            assertThat(cluster.node(victim).stop()).as("clean exit").isZero();
            System.out.printf("controlled shutdown of node %d took %d ms%n", victim,
                    TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start));
            assertThat(cluster.node(victim).log()).contains("Controlled shutdown complete");
            int before;
            synchronized (acked) {
                before = acked[0];
            }
            await().atMost(Duration.ofSeconds(30)).until(() -> {
                synchronized (acked) {
                    return acked[0] > before + 200;
                }
            });
            running.set(false);
            producer.join(60_000);
            assertThat(errors).as("the producer saw no error").isEmpty();
            for (TopicPartitionInfo p : TestCluster.describe(admin, "tools")) {
                assertThat(TestCluster.leaderId(p)).isNotEqualTo(victim).isNotEqualTo(-1);
            }
        }
    }

    /**
     * Replicas on nodes 1 and 2 only, so node 3 keeps the metadata quorum alive with whichever of them
     * runs: node 2 dies and leaves the ISR, records go on to node 1 alone, node 1 dies, node 2 returns
     * alone with an older log. It must not lead; node 1 leads again when it returns, with every record.
     */
    @Test
    void aReplicaOutsideTheIsrIsNotElectedWhileUncleanElectionIsOff() throws Exception {
        try (TestCluster cluster = TestCluster.start(dir, 3, Map.of()); Admin admin = cluster.admin()) {
            admin.createTopics(List.of(new NewTopic("u", Map.of(0, List.of(1, 2)))
                    .configs(Map.of("min.insync.replicas", "1")))).all().get(30, TimeUnit.SECONDS);
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
                TopicPartitionInfo p = TestCluster.describe(admin, "u").get(0);
                assertThat(p.isr()).hasSize(2);
                assertThat(TestCluster.leaderId(p)).isEqualTo(1);
            });
            List<String> acked = new ArrayList<>();
            try (KafkaProducer<String, String> p = cluster.producer(Map.of())) {
                send(p, "u", "both-", 50, acked);
                cluster.node(2).kill();
                await().atMost(Duration.ofSeconds(30)).untilAsserted(() ->
                        assertThat(TestCluster.ids(TestCluster.describe(admin, "u").get(0).isr())).containsExactly(1));
                send(p, "u", "leader-only-", 50, acked);
            }
            cluster.node(1).kill();
            cluster.node(2).start();
            // nodes 2 and 3 form a quorum again; node 1's session expires; only out-of-sync node 2 holds a replica
            try (Admin a = Admin.create(Map.of("bootstrap.servers", cluster.node(3).bootstrap(),
                    "default.api.timeout.ms", 20_000, "request.timeout.ms", 10_000))) {
                await().atMost(Duration.ofSeconds(90)).ignoreExceptions().untilAsserted(() ->
                        assertThat(TestCluster.ids(a.describeCluster().nodes().get(10, TimeUnit.SECONDS))).containsExactlyInAnyOrder(2, 3));
                // from now on a wrong (unclean) election could happen at any moment: watch for a while
                long until = System.currentTimeMillis() + 6_000;
                while (System.currentTimeMillis() < until) {
                    TopicPartitionInfo p = TestCluster.describe(a, "u").get(0);
                    assertThat(TestCluster.leaderId(p)).as("no leader while only an out-of-sync replica is alive").isEqualTo(-1);
                    assertThat(TestCluster.ids(p.isr())).containsExactly(1);
                    Thread.sleep(500);
                }
            }
            cluster.node(1).start();
            await().atMost(Duration.ofSeconds(60)).ignoreExceptions().untilAsserted(() ->
                    assertThat(TestCluster.leaderId(TestCluster.describe(admin, "u").get(0))).isEqualTo(1));
            assertThat(cluster.readPartition("u", 0)).containsExactlyElementsOf(acked);
        }
    }

    @Test
    void committedOffsetsSurviveTheGroupCoordinatorsDeath() throws Exception {
        try (TestCluster cluster = TestCluster.start(dir, 3, Map.of()); Admin admin = cluster.admin()) {
            admin.createTopics(List.of(new NewTopic("g", 3, (short) 3))).all().get(30, TimeUnit.SECONDS);
            List<String> acked = new ArrayList<>();
            try (KafkaProducer<String, String> p = cluster.producer(Map.of())) {
                for (int i = 0; i < 300; i++) {
                    p.send(new ProducerRecord<>("g", i % 3, null, "g-" + i)).get(30, TimeUnit.SECONDS);
                }
            }
            Map<String, Object> cfg = new HashMap<>();
            cfg.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.allBootstrap());
            cfg.put(ConsumerConfig.GROUP_ID_CONFIG, "cg");
            cfg.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            cfg.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
            int read = 0;
            try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cfg, new StringDeserializer(), new StringDeserializer())) {
                c.subscribe(List.of("g"));
                long deadline = System.currentTimeMillis() + 60_000;
                while (read < 300 && System.currentTimeMillis() < deadline) {
                    read += c.poll(Duration.ofMillis(500)).count();
                }
                c.commitSync(Duration.ofSeconds(30));
            }
            assertThat(read).isEqualTo(300);
            int coordinator = admin.describeConsumerGroups(List.of("cg")).all().get(30, TimeUnit.SECONDS).get("cg").coordinator().id();
            cluster.node(coordinator).kill();
            // the new leader of the group's __consumer_offsets partition loads it and answers with the same offsets
            await().atMost(Duration.ofSeconds(60)).ignoreExceptions().untilAsserted(() -> {
                var offsets = admin.listConsumerGroupOffsets("cg").partitionsToOffsetAndMetadata().get(10, TimeUnit.SECONDS);
                assertThat(offsets).hasSize(3);
                offsets.values().forEach(o -> assertThat(o.offset()).isEqualTo(100));
            });
            assertThat(admin.describeConsumerGroups(List.of("cg")).all().get(30, TimeUnit.SECONDS).get("cg").coordinator().id())
                    .isNotEqualTo(coordinator);
            // a consumer of the group resumes after the committed offsets: only new records
            try (KafkaProducer<String, String> p = cluster.producer(Map.of())) {
                for (int i = 0; i < 30; i++) {
                    p.send(new ProducerRecord<>("g", i % 3, null, "new-" + i)).get(30, TimeUnit.SECONDS);
                }
            }
            List<String> after = new ArrayList<>();
            try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cfg, new StringDeserializer(), new StringDeserializer())) {
                c.subscribe(List.of("g"));
                long deadline = System.currentTimeMillis() + 60_000;
                while (after.size() < 30 && System.currentTimeMillis() < deadline) {
                    c.poll(Duration.ofMillis(500)).forEach(r -> after.add(r.value()));
                }
            }
            assertThat(after).hasSize(30).allSatisfy(v -> assertThat(v).startsWith("new-"));
        }
    }

    /**
     * A KIP-848 group outlives its coordinator: two stock consumers ({@code group.protocol=consumer})
     * share a topic; the coordinator is killed; the node that takes over its {@code __consumer_offsets}
     * partition replays the group's records and knows both members with their epochs and partitions,
     * so they go on without a rebalance: the same group epoch, the same assignment, no partition revoked
     * or lost, and every record produced meanwhile consumed.
     */
    @Test
    void aConsumerGroupKeepsItsMembersAndAssignmentWhenItsCoordinatorDies() throws Exception {
        Map<String, String> groups = Map.of(
                "group.consumer.min.heartbeat.interval.ms", "500", "group.consumer.heartbeat.interval.ms", "500",
                "group.consumer.min.session.timeout.ms", "10000", "group.consumer.session.timeout.ms", "10000");
        try (TestCluster cluster = TestCluster.start(dir, 3, groups); Admin admin = cluster.admin()) {
            admin.createTopics(List.of(new NewTopic("k", 6, (short) 3))).all().get(30, TimeUnit.SECONDS);
            Map<String, Object> cfg = new HashMap<>();
            cfg.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.allBootstrap());
            cfg.put(ConsumerConfig.GROUP_ID_CONFIG, "kg");
            cfg.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
            cfg.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            cfg.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
            ConcurrentLinkedQueue<String> consumed = new ConcurrentLinkedQueue<>();
            ConcurrentLinkedQueue<String> taken = new ConcurrentLinkedQueue<>();
            AtomicBoolean stop = new AtomicBoolean();
            List<Thread> members = new ArrayList<>();
            for (String name : List.of("m1", "m2")) {
                Thread t = new Thread(() -> {
                    Map<String, Object> own = new HashMap<>(cfg);
                    own.put(ConsumerConfig.CLIENT_ID_CONFIG, name);
                    try (KafkaConsumer<String, String> c = new KafkaConsumer<>(own, new StringDeserializer(), new StringDeserializer())) {
                        c.subscribe(List.of("k"), new org.apache.kafka.clients.consumer.ConsumerRebalanceListener() {
                            @Override
                            public void onPartitionsRevoked(java.util.Collection<TopicPartition> partitions) {
                                if (!partitions.isEmpty()) {
                                    taken.add(name + " revoked " + partitions + " at " + System.currentTimeMillis());
                                }
                            }

                            @Override
                            public void onPartitionsAssigned(java.util.Collection<TopicPartition> partitions) {
                            }

                            @Override
                            public void onPartitionsLost(java.util.Collection<TopicPartition> partitions) {
                                taken.add(name + " lost " + partitions + " at " + System.currentTimeMillis());
                            }
                        });
                        while (!stop.get()) {
                            var records = c.poll(Duration.ofMillis(200));
                            records.forEach(r -> consumed.add(r.value()));
                            if (!records.isEmpty()) {
                                try {
                                    c.commitSync(Duration.ofSeconds(30));
                                } catch (RuntimeException e) {
                                    // a commit during the failover may fail; the next one carries it
                                }
                            }
                        }
                    }
                }, "member-" + name);
                t.setDaemon(true);
                t.start();
                members.add(t);
            }
            try {
                await().atMost(Duration.ofSeconds(60)).ignoreExceptions().untilAsserted(() -> {
                    var d = admin.describeConsumerGroups(List.of("kg")).all().get(10, TimeUnit.SECONDS).get("kg");
                    assertThat(d.groupState()).isEqualTo(org.apache.kafka.common.GroupState.STABLE);
                    assertThat(d.members()).hasSize(2).allSatisfy(m ->
                            assertThat(m.assignment().topicPartitions()).hasSize(3));
                });
                taken.clear(); // the two joins may have moved partitions; from here on nothing may move
                var before = admin.describeConsumerGroups(List.of("kg")).all().get(10, TimeUnit.SECONDS).get("kg");
                Map<String, Set<TopicPartition>> assignment = new HashMap<>();
                before.members().forEach(m -> assignment.put(m.consumerId(), m.assignment().topicPartitions()));
                int coordinator = before.coordinator().id();
                List<String> acked = new ArrayList<>();
                try (KafkaProducer<String, String> p = cluster.producer(Map.of())) {
                    for (int i = 0; i < 60; i++) {
                        p.send(new ProducerRecord<>("k", i % 6, null, "before-" + i)).get(30, TimeUnit.SECONDS);
                        acked.add("before-" + i);
                    }
                    cluster.node(coordinator).kill();
                    for (int i = 0; i < 60; i++) {
                        p.send(new ProducerRecord<>("k", i % 6, null, "after-" + i)).get(60, TimeUnit.SECONDS);
                        acked.add("after-" + i);
                    }
                }
                await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> assertThat(Set.copyOf(consumed)).containsAll(acked));
                var after = admin.describeConsumerGroups(List.of("kg")).all().get(30, TimeUnit.SECONDS).get("kg");
                assertThat(after.coordinator().id()).as("a new coordinator").isNotEqualTo(coordinator);
                assertThat(after.groupEpoch()).as("no new group epoch: nobody left or joined").isEqualTo(before.groupEpoch());
                Map<String, Set<TopicPartition>> now = new HashMap<>();
                after.members().forEach(m -> now.put(m.consumerId(), m.assignment().topicPartitions()));
                assertThat(now).as("the same members with the same partitions").isEqualTo(assignment);
                assertThat(taken).as("no partition revoked or lost across the failover").isEmpty();
            } finally {
                stop.set(true);
                for (Thread t : members) {
                    t.join(30_000);
                }
            }
        }
    }

    /**
     * A topic deleted and created again under the same name while a replica's node was down: the node's
     * old log (same name, same offsets, same leader epoch) must not pass for the new topic's. Once it
     * leads, readers see exactly the new topic's records.
     */
    @Test
    void aNodeBackFromTheDeadDropsTheLogOfATopicRecreatedUnderTheSameName() throws Exception {
        try (TestCluster cluster = TestCluster.start(dir, 3, Map.of()); Admin admin = cluster.admin()) {
            admin.createTopics(List.of(new NewTopic("r", Map.of(0, List.of(3, 1, 2))))).all().get(30, TimeUnit.SECONDS);
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() ->
                    assertThat(TestCluster.describe(admin, "r").get(0).isr()).hasSize(3));
            List<String> old = new ArrayList<>();
            try (KafkaProducer<String, String> p = cluster.producer(Map.of())) {
                send(p, "r", "old-", 20, old);
            }
            cluster.node(3).kill();
            await().atMost(Duration.ofSeconds(30)).ignoreExceptions().untilAsserted(() ->
                    assertThat(TestCluster.ids(admin.describeCluster().nodes().get(10, TimeUnit.SECONDS))).doesNotContain(3));
            admin.deleteTopics(List.of("r")).all().get(30, TimeUnit.SECONDS);
            await().atMost(Duration.ofSeconds(30)).until(() -> !admin.listTopics().names().get(10, TimeUnit.SECONDS).contains("r"));
            admin.createTopics(List.of(new NewTopic("r", Map.of(0, List.of(3, 1, 2))))).all().get(30, TimeUnit.SECONDS);
            List<String> fresh = new ArrayList<>();
            await().atMost(Duration.ofSeconds(30)).ignoreExceptions().untilAsserted(() ->
                    assertThat(TestCluster.leaderId(TestCluster.describe(admin, "r").get(0))).isNotEqualTo(-1));
            try (KafkaProducer<String, String> p = cluster.producer(Map.of())) {
                send(p, "r", "new-", 5, fresh);
            }
            cluster.node(3).start();
            await().atMost(Duration.ofSeconds(60)).untilAsserted(() ->
                    assertThat(TestCluster.ids(TestCluster.describe(admin, "r").get(0).isr())).contains(3));
            // make node 3 (the preferred replica) the leader, then read
            await().atMost(Duration.ofSeconds(30)).ignoreExceptions().untilAsserted(() -> {
                admin.electLeaders(org.apache.kafka.common.ElectionType.PREFERRED, Set.of(new TopicPartition("r", 0)))
                        .all().get(10, TimeUnit.SECONDS);
                assertThat(TestCluster.leaderId(TestCluster.describe(admin, "r").get(0))).isEqualTo(3);
            });
            assertThat(cluster.readPartition("r", 0)).containsExactlyElementsOf(fresh);
        }
    }

    private static void send(KafkaProducer<String, String> p, String topic, String prefix, int n, List<String> acked) throws Exception {
        for (int i = 0; i < n; i++) {
            String v = prefix + i;
            RecordMetadata md = p.send(new ProducerRecord<>(topic, 0, null, v)).get(60, TimeUnit.SECONDS);
            assertThat(md.offset()).isEqualTo(acked.size());
            acked.add(v);
        }
    }

    private static Set<Integer> ints(String csv) {
        Set<Integer> s = new TreeSet<>();
        for (String x : csv.split(",")) {
            s.add(Integer.parseInt(x.trim()));
        }
        return s;
    }

    private static String sorted(Set<Integer> s) {
        return new TreeSet<>(s).toString();
    }

    private static boolean kcatAvailable() {
        for (String d : System.getenv().getOrDefault("PATH", "").split(":")) {
            if (Files.isExecutable(Path.of(d, "kcat"))) {
                return true;
            }
        }
        return false;
    }
}
