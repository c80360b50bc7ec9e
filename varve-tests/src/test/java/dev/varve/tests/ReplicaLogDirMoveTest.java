package dev.varve.tests;

import dev.varve.broker.Broker;
import dev.varve.broker.BrokerConfig;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeReplicaLogDirsResult.ReplicaLogDirInfo;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionReplica;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * JBOD moves end to end: a real broker with three log directories, an idempotent acks=all producer
 * writing the whole time (slower than the moves' configured rate: a replica written faster than it can
 * be copied never catches up, in Kafka too), one replica moved with {@code Admin.alterReplicaLogDirs} (seen by
 * {@code describeReplicaLogDirs} first as a future replica with its lag, then in its new directory),
 * another with Kafka's own {@code kafka-reassign-partitions} and a {@code log_dirs} entry; every
 * acknowledged record is read back once and in order after the moves and again after a restart.
 */
@Timeout(120)
class ReplicaLogDirMoveTest {
    private static final String TOPIC = "jbod";
    private static final String REASSIGN = "org.apache.kafka.tools.reassign.ReassignPartitionsCommand";

    @TempDir
    Path tmp;

    private Broker start(List<Path> dirs) throws Exception {
        Map<String, String> config = new HashMap<>(TestBroker.FAST_GROUPS);
        config.put("listeners", "PLAINTEXT://127.0.0.1:0");
        config.put("log.dirs", String.join(",", dirs.stream().map(Path::toString).toList()));
        config.put("log.segment.bytes", Integer.toString(256 * 1024));
        // a move of a few MiB lasts about a second: long enough to be seen in progress
        config.put("replica.alter.log.dirs.io.max.bytes.per.second", Integer.toString(4 * 1024 * 1024));
        return Broker.start(BrokerConfig.from(config));
    }

    @Test
    void replicasMoveBetweenLogDirectoriesWhileAProducerWritesAndEveryAcknowledgedRecordSurvivesARestart() throws Exception {
        List<Path> dirs = List.of(tmp.resolve("d0"), tmp.resolve("d1"), tmp.resolve("d2"));
        Broker broker = start(dirs);
        int node = broker.context().nodeId();
        AckedRecords acked = new AckedRecords();
        ConcurrentLinkedQueue<Throwable> failures = new ConcurrentLinkedQueue<>();
        AtomicBoolean running = new AtomicBoolean(true);
        Thread producer;
        TopicPartitionReplica r0 = new TopicPartitionReplica(TOPIC, 0, node);
        TopicPartitionReplica r1 = new TopicPartitionReplica(TOPIC, 1, node);
        try (Admin admin = Clients.admin(broker.bootstrapServers())) {
            Clients.createTopic(broker.bootstrapServers(), TOPIC, 2, Map.of());
            String bootstrap = broker.bootstrapServers();
            producer = new Thread(() -> produce(bootstrap, acked, failures, running), "jbod-producer");
            producer.start();
            acked.awaitAtLeast(2000, Duration.ofSeconds(30)); // ~2 MB in partition 0

            // 1. Admin.alterReplicaLogDirs: the future replica first, then the replica in its new directory
            Map<TopicPartitionReplica, ReplicaLogDirInfo> before = admin.describeReplicaLogDirs(List.of(r0, r1)).all().get();
            String from = before.get(r0).getCurrentReplicaLogDir();
            String to = otherDir(dirs, from, before.get(r1).getCurrentReplicaLogDir());
            admin.alterReplicaLogDirs(Map.of(r0, to)).all().get();
            ReplicaLogDirInfo during = admin.describeReplicaLogDirs(List.of(r0)).all().get().get(r0);
            assertThat(during.getCurrentReplicaLogDir()).isEqualTo(from);
            assertThat(during.getFutureReplicaLogDir()).isEqualTo(to);
            assertThat(during.getFutureReplicaOffsetLag()).isPositive();
            assertThat(Files.list(Path.of(to)).map(p -> p.getFileName().toString()))
                    .anyMatch(n -> n.startsWith(TOPIC + "-0.") && n.endsWith("-future"));
            await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(50)).until(() -> {
                ReplicaLogDirInfo now = admin.describeReplicaLogDirs(List.of(r0)).all().get().get(r0);
                return to.equals(now.getCurrentReplicaLogDir()) && now.getFutureReplicaLogDir() == null;
            });
            assertThat(Path.of(from, TOPIC + "-0")).doesNotExist();

            // 2. kafka-reassign-partitions with log_dirs (the replicas stay on this node; the directory changes)
            String from1 = admin.describeReplicaLogDirs(List.of(r1)).all().get().get(r1).getCurrentReplicaLogDir();
            String to1 = otherDir(dirs, from1, from1);
            Path plan = tmp.resolve("reassign.json");
            Files.writeString(plan, "{\"version\":1,\"partitions\":[{\"topic\":\"" + TOPIC + "\",\"partition\":1,"
                    + "\"replicas\":[" + node + "],\"log_dirs\":[\"" + to1 + "\"]}]}");
            KafkaTool.Result execute = KafkaTool.run(tmp, REASSIGN, List.of("--bootstrap-server", bootstrap,
                    "--reassignment-json-file", plan.toString(), "--execute"));
            assertThat(execute.exitCode()).as(execute.toString()).isZero();
            assertThat(execute.stdout()).as(execute.toString())
                    .contains("Successfully started moving log directory to " + to1 + " for replica " + TOPIC + "-1 with broker " + node);
            await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(50)).until(() ->
                    to1.equals(admin.describeReplicaLogDirs(List.of(r1)).all().get().get(r1).getCurrentReplicaLogDir()));
            KafkaTool.Result verify = KafkaTool.run(tmp, REASSIGN, List.of("--bootstrap-server", bootstrap,
                    "--reassignment-json-file", plan.toString(), "--verify", "--preserve-throttles"));
            assertThat(verify.stdout()).as(verify.toString())
                    .contains("Reassignment of partition " + TOPIC + "-1 is completed.")
                    .contains("Reassignment of replica " + TOPIC + "-1-" + node + " completed successfully.");

            Thread.sleep(200); // the producer keeps going a little after the moves
            running.set(false);
            producer.join(30_000);
            assertThat(failures).as("producer errors").isEmpty();
            acked.assertReadBack(readAll(bootstrap), 2);
        } finally {
            running.set(false);
            broker.close();
        }

        // 3. after a restart the replicas load from their new directories with every record
        Broker again = start(dirs);
        try (Admin admin = Clients.admin(again.bootstrapServers())) {
            Map<TopicPartitionReplica, ReplicaLogDirInfo> after = admin.describeReplicaLogDirs(
                    List.of(new TopicPartitionReplica(TOPIC, 0, node), new TopicPartitionReplica(TOPIC, 1, node))).all().get();
            assertThat(after.values()).allSatisfy(i -> assertThat(i.getFutureReplicaLogDir()).isNull());
            acked.assertReadBack(readAll(again.bootstrapServers()), 2);
            System.out.printf("%d acknowledged records read back after two moves and a restart%n", acked.count());
        } finally {
            again.close();
        }
    }

    /** A log directory that is neither {@code a} nor {@code b}. */
    private static String otherDir(List<Path> dirs, String a, String b) {
        return dirs.stream().map(p -> p.toAbsolutePath().normalize().toString())
                .filter(d -> !d.equals(a) && !d.equals(b)).findFirst().orElseThrow();
    }

    /** Partition 0 gets nine records of ten (so its move copies a few MiB), partition 1 the rest; 1 KiB values. */
    private static void produce(String bootstrap, AckedRecords acked, ConcurrentLinkedQueue<Throwable> failures,
                                AtomicBoolean running) {
        String padding = "x".repeat(1000);
        try (KafkaProducer<byte[], byte[]> producer = Clients.producer(bootstrap, Map.of(ProducerConfig.ACKS_CONFIG, "all",
                ProducerConfig.LINGER_MS_CONFIG, 5))) {
            long seq = 0;
            while (running.get()) {
                int partition = seq % 10 == 9 ? 1 : 0;
                String value = AckedRecords.value(seq++);
                producer.send(new ProducerRecord<>(TOPIC, partition, null, (padding + value).getBytes(StandardCharsets.UTF_8)),
                        (md, e) -> {
                            if (e != null) {
                                failures.add(e);
                            } else {
                                acked.add(md.partition(), value);
                            }
                        });
                if (seq % 4 == 0) {
                    Thread.sleep(2); // at most ~2 MB/s, below the move's 4 MiB/s: a move catches up
                }
            }
            producer.flush();
        } catch (Exception e) {
            failures.add(e);
        }
    }

    /** Every record of both partitions, as the values the producer sent (the padding cut off). */
    private static Map<Integer, List<String>> readAll(String bootstrap) {
        Map<Integer, List<String>> out = new HashMap<>();
        try (KafkaConsumer<byte[], byte[]> consumer = Clients.consumer(bootstrap)) {
            List<TopicPartition> tps = List.of(new TopicPartition(TOPIC, 0), new TopicPartition(TOPIC, 1));
            consumer.assign(tps);
            consumer.seekToBeginning(tps);
            Map<TopicPartition, Long> end = consumer.endOffsets(tps);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (tps.stream().anyMatch(tp -> consumer.position(tp) < end.get(tp)) && System.nanoTime() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
                    String v = new String(r.value(), StandardCharsets.UTF_8);
                    out.computeIfAbsent(r.partition(), p -> new ArrayList<>()).add(v.substring(v.indexOf("v-")));
                }
            }
        }
        return out;
    }
}
