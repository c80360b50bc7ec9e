package dev.varve.tests;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartitionInfo;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Replication on a 3-process cluster: an idempotent acks=all producer on an RF=3,
 * min.insync.replicas=2 topic keeps writing while the leader is killed with SIGKILL, a follower is
 * paused with SIGSTOP past the session timeout, and nodes restart. Afterwards every acknowledged
 * record is read back exactly once, in order, from the cluster.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class ReplicationFailoverTest {
    private static final String TOPIC = "replicated";
    private static final int PARTITIONS = 3;
    private static final Duration ACK_WAIT = Duration.ofSeconds(60);

    @TempDir
    Path dir;

    @Test
    void noAcknowledgedRecordIsLostOrDuplicatedAcrossLeaderKillPauseAndRestart() throws Exception {
        try (TestCluster cluster = TestCluster.start(dir, 3, Map.of()); Admin admin = cluster.admin()) {
            admin.createTopics(List.of(new NewTopic(TOPIC, PARTITIONS, (short) 3)
                    .configs(Map.of("min.insync.replicas", "2")))).all().get(30, TimeUnit.SECONDS);
            await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
                for (TopicPartitionInfo p : TestCluster.describe(admin, TOPIC)) {
                    assertThat(p.isr()).hasSize(3);
                }
            });

            AckedRecords acked = new AckedRecords();
            ConcurrentLinkedQueue<Throwable> failures = new ConcurrentLinkedQueue<>();
            AtomicBoolean running = new AtomicBoolean(true);
            AtomicLong lastAckNanos = new AtomicLong(System.nanoTime());
            long[] longestGapMs = {0};
            Thread producerThread = new Thread(() -> produce(cluster, acked, failures, running, lastAckNanos, longestGapMs));
            producerThread.start();
            try {
                acked.awaitAtLeast(300, ACK_WAIT);

                // 1. kill -9 the leader of partition 0
                int leader = TestCluster.leaderId(TestCluster.describe(admin, TOPIC).get(0));
                cluster.node(leader).kill();
                long killedAt = System.nanoTime();
                int before = acked.count();
                acked.awaitAtLeast(before + 300, ACK_WAIT);
                long resumedMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killedAt);
                System.out.printf("producer resumed %d ms after SIGKILL of leader %d%n", resumedMs, leader);
                assertThat(resumedMs).as("producer resumes after failover").isLessThan(20_000);
                await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
                    for (TopicPartitionInfo p : TestCluster.describe(admin, TOPIC)) {
                        assertThat(TestCluster.leaderId(p)).isNotEqualTo(leader).isNotEqualTo(-1);
                    }
                });

                // 2. restart it: it catches up and rejoins every ISR
                cluster.node(leader).start();
                await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> {
                    for (TopicPartitionInfo p : TestCluster.describe(admin, TOPIC)) {
                        assertThat(TestCluster.ids(p.isr())).contains(leader);
                    }
                });
                // ...and, being partition 0's preferred replica, leads it again (auto leader rebalance)
                await().atMost(Duration.ofSeconds(30)).untilAsserted(() ->
                        assertThat(TestCluster.leaderId(TestCluster.describe(admin, TOPIC).get(0))).isEqualTo(leader));

                // 3. pause another node past the session timeout, then let it go
                int paused = TestCluster.leaderId(TestCluster.describe(admin, TOPIC).get(1));
                cluster.node(paused).pause();
                Thread.sleep(5_000);
                before = acked.count();
                acked.awaitAtLeast(before + 200, ACK_WAIT);
                cluster.node(paused).resume();
                await().atMost(Duration.ofSeconds(60)).untilAsserted(() -> {
                    for (TopicPartitionInfo p : TestCluster.describe(admin, TOPIC)) {
                        assertThat(p.isr()).hasSize(3);
                    }
                });
                acked.awaitAtLeast(acked.count() + 200, ACK_WAIT);
            } finally {
                running.set(false);
                producerThread.join(60_000);
            }
            assertThat(failures).as("producer errors").isEmpty();

            // Read everything back: each acknowledged value exactly once, in the order acknowledged.
            acked.assertReadBack(cluster.readPartitions(TOPIC, PARTITIONS), PARTITIONS);
            System.out.printf("acknowledged %d records; longest gap between acks %d ms%n", acked.count(), longestGapMs[0]);
        }
    }

    private static void produce(TestCluster cluster, AckedRecords acked, ConcurrentLinkedQueue<Throwable> failures,
                                AtomicBoolean running, AtomicLong lastAckNanos, long[] longestGapMs) {
        try (KafkaProducer<String, String> producer = cluster.producer(Map.of(ProducerConfig.LINGER_MS_CONFIG, 5,
                ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 5))) {
            long seq = 0;
            while (running.get()) {
                int partition = (int) (seq % PARTITIONS);
                String value = AckedRecords.value(seq++);
                producer.send(new ProducerRecord<>(TOPIC, partition, null, value), (md, e) -> {
                    if (e != null) {
                        failures.add(e);
                    } else {
                        acked.add(md.partition(), value);
                        long now = System.nanoTime();
                        long gap = TimeUnit.NANOSECONDS.toMillis(now - lastAckNanos.getAndSet(now));
                        longestGapMs[0] = Math.max(longestGapMs[0], gap);
                    }
                });
                Thread.sleep(2);
            }
            producer.flush();
        } catch (Exception e) {
            failures.add(e);
        }
    }
}
