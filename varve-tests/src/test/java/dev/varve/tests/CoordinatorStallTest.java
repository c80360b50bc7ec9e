package dev.varve.tests;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.message.MetadataRequestData;
import org.apache.kafka.common.requests.MetadataRequest;
import org.apache.kafka.common.requests.MetadataResponse;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * One stalled in-sync follower of a {@code __consumer_offsets} partition must not stall the broker
 * that coordinates its groups: offset commits wait for the follower (they are acks=all writes), but
 * no request thread waits with them. Sixteen committers (twice {@code num.io.threads}) commit
 * continuously to groups of that coordinator while the follower is SIGSTOPped; another client's
 * produce and Metadata requests to the same broker must keep their normal latency, and afterwards
 * every acknowledged commit is there.
 *
 * <p>Before commits were asynchronous, each one held an I/O thread for up to the 5 s commit timeout,
 * so the probe waited seconds for a thread.
 */
@Timeout(value = 240, unit = TimeUnit.SECONDS)
class CoordinatorStallTest {
    private static final int COMMITTERS = 16;
    private static final long PAUSE_MS = 8_000;
    /** Far above a healthy request on this machine (a few ms), far below a commit timeout (5 s). */
    private static final long PROBE_BOUND_MS = 2_000;

    @TempDir
    Path dir;

    @Test
    void aStalledOffsetsFollowerDoesNotStallOtherRequestsOnTheCoordinator() throws Exception {
        // The follower's stall must outlast the measurement: it stays in the ISR (and registered) for 15 s.
        Map<String, String> extra = Map.of(
                "offsets.topic.num.partitions", "1",
                "replica.lag.time.max.ms", "15000",
                "broker.session.timeout.ms", "15000");
        try (TestCluster cluster = TestCluster.start(dir, 3, extra); Admin admin = cluster.admin()) {
            admin.createTopics(List.of(new NewTopic("work", 1, (short) 3))).all().get(30, TimeUnit.SECONDS);
            TopicPartition work = new TopicPartition("work", 0);
            // the first commit creates __consumer_offsets; wait for its one partition to be fully in sync
            try (KafkaConsumer<String, String> first = consumer(cluster.allBootstrap(), "warm")) {
                first.commitSync(Map.of(work, new OffsetAndMetadata(0)), Duration.ofSeconds(60));
            }
            TopicPartitionInfo offsets = await().atMost(Duration.ofSeconds(30)).until(
                    () -> TestCluster.describe(admin, "__consumer_offsets").get(0), p -> p.isr().size() == 3);
            int coordinatorId = offsets.leader().id();
            int followerId = offsets.replicas().stream().mapToInt(n -> n.id()).filter(id -> id != coordinatorId)
                    .findFirst().orElseThrow();
            TestCluster.Node coordinator = cluster.node(coordinatorId);

            // the probe's topic lives on the coordinator alone: nothing about it waits for the follower
            admin.createTopics(List.of(new NewTopic("probe", Map.of(0, List.of(coordinatorId)))))
                    .all().get(30, TimeUnit.SECONDS);
            await().atMost(Duration.ofSeconds(30)).until(() -> {
                TopicDescription d = admin.describeTopics(List.of("probe")).allTopicNames().get().get("probe");
                return d.partitions().get(0).leader() != null;
            });

            AtomicBoolean run = new AtomicBoolean(true);
            Map<String, Long> acked = new ConcurrentHashMap<>();
            AtomicLong commitsDone = new AtomicLong();
            AtomicLong slowestCommitMs = new AtomicLong();
            List<Thread> committers = new ArrayList<>();
            List<Throwable> failures = new java.util.concurrent.CopyOnWriteArrayList<>();
            for (int i = 0; i < COMMITTERS; i++) {
                String group = "committer-" + i;
                Thread t = new Thread(() -> {
                    try (KafkaConsumer<String, String> c = consumer(coordinator.bootstrap(), group)) {
                        for (long n = 1; run.get(); n++) {
                            long start = System.nanoTime();
                            c.commitSync(Map.of(work, new OffsetAndMetadata(n)), Duration.ofSeconds(90));
                            slowestCommitMs.accumulateAndGet((System.nanoTime() - start) / 1_000_000, Math::max);
                            acked.put(group, n);
                            commitsDone.incrementAndGet();
                        }
                    } catch (Throwable e) {
                        failures.add(e);
                    }
                }, group);
                t.start();
                committers.add(t);
            }

            try (KafkaProducer<String, String> producer = probeProducer(coordinator.bootstrap());
                 RawKafkaClient raw = new RawKafkaClient(coordinator.bootstrap())) {
                await().atMost(Duration.ofSeconds(30)).until(() -> commitsDone.get() >= 10L * COMMITTERS);
                long[] healthy = probe(producer, raw, 3_000);
                slowestCommitMs.set(0);

                cluster.node(followerId).pause();
                long before = commitsDone.get();
                long[] stalled;
                try {
                    stalled = probe(producer, raw, PAUSE_MS);
                } finally {
                    cluster.node(followerId).resume();
                }
                long duringPause = commitsDone.get() - before;
                System.out.printf("probe produce/metadata slowest (ms): healthy %d/%d, follower stopped %d/%d; "
                        + "commits completed while stopped: %d%n", healthy[0], healthy[1], stalled[0], stalled[1], duringPause);

                // nothing but the commits waited for the follower
                assertThat(stalled[0]).as("slowest probe produce while stalled (ms); healthy: %d", healthy[0])
                        .isLessThan(PROBE_BOUND_MS);
                assertThat(stalled[1]).as("slowest probe Metadata while stalled (ms); healthy: %d", healthy[1])
                        .isLessThan(PROBE_BOUND_MS);
                assertThat(duringPause).as("commits completed while the follower was stopped").isLessThan(COMMITTERS * 2L);

                // once it is back, commits flow again
                long resumed = commitsDone.get();
                await().atMost(Duration.ofSeconds(60)).until(() -> commitsDone.get() >= resumed + 5L * COMMITTERS);
                // and the stall was real: the commits in flight waited for the follower
                assertThat(slowestCommitMs.get()).as("slowest commit while the follower was stopped (ms)")
                        .isGreaterThan(PAUSE_MS / 2);
            } finally {
                run.set(false);
                for (Thread t : committers) {
                    t.join(120_000);
                }
            }
            assertThat(failures).isEmpty();
            // every acknowledged commit is what the coordinator has (each committer's last one)
            for (int i = 0; i < COMMITTERS; i++) {
                String group = "committer-" + i;
                Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(group)
                        .partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
                assertThat(committed.get(work).offset()).as(group).isEqualTo(acked.get(group));
            }
        }
    }

    /** Produces and sends Metadata to the coordinator for {@code ms}; the slowest of each, in ms. */
    private static long[] probe(KafkaProducer<String, String> producer, RawKafkaClient raw, long ms) throws Exception {
        long produce = 0;
        long metadata = 0;
        long end = System.currentTimeMillis() + ms;
        MetadataRequest request = new MetadataRequest.Builder(new MetadataRequestData()
                .setTopics(List.of(new MetadataRequestData.MetadataRequestTopic().setName("probe")))
                .setAllowAutoTopicCreation(false)).build((short) 12);
        while (System.currentTimeMillis() < end) {
            long t0 = System.nanoTime();
            producer.send(new ProducerRecord<>("probe", 0, "k", "v")).get(30, TimeUnit.SECONDS);
            long t1 = System.nanoTime();
            MetadataResponse response = raw.send(request);
            long t2 = System.nanoTime();
            assertThat(response.topicMetadata()).hasSize(1);
            produce = Math.max(produce, (t1 - t0) / 1_000_000);
            metadata = Math.max(metadata, (t2 - t1) / 1_000_000);
            Thread.sleep(20);
        }
        return new long[]{produce, metadata};
    }

    private static KafkaConsumer<String, String> consumer(String bootstrap, String group) {
        return new KafkaConsumer<>(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                ConsumerConfig.GROUP_ID_CONFIG, group,
                ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false,
                ConsumerConfig.REQUEST_TIMEOUT_MS_CONFIG, 30_000),
                new StringDeserializer(), new StringDeserializer());
    }

    private static KafkaProducer<String, String> probeProducer(String bootstrap) {
        return new KafkaProducer<>(Map.of(
                ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                ProducerConfig.ACKS_CONFIG, "1",
                ProducerConfig.LINGER_MS_CONFIG, 0,
                ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, false),
                new StringSerializer(), new StringSerializer());
    }
}
