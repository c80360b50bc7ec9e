package dev.varve.tests.chaos;

import dev.varve.tests.TestCluster;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.apache.kafka.common.errors.NotEnoughReplicasException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One fault-injection run against a real 3-process cluster: idempotent acks=all producers write unique
 * values to an RF=3, {@code min.insync.replicas=2} topic while consumers read it, and a nemesis injects
 * one fault at a time (SIGKILL and restart, SIGSTOP past the session timeout and SIGCONT, SIGTERM and
 * restart) on a seeded schedule. Every operation goes into a {@link History}; after the faults heal and
 * the cluster settles, every partition is read from the start and the {@link Checker} judges the run.
 *
 * <p>Only one node is faulty at a time, so the metadata quorum and {@code min.insync.replicas} stay
 * reachable and every acknowledged write must survive.
 */
public final class ChaosRunner {
    public static final String TOPIC = "chaos";

    /** How a run is shaped. */
    public record Settings(long durationMs, long seed, int partitions, int producers, int consumers,
                           long faultEveryMinMs, long faultEveryMaxMs, int sendsPerSecondPerProducer) {
        public static Settings ci(long durationMs, long seed) {
            return new Settings(durationMs, seed, 3, 3, 2, 6_000, 10_000, 150);
        }
    }

    /** What a run did: the checker's report, plus the faults injected. */
    public record Result(Report report, List<String> faults) {
    }

    private final Settings settings;
    private final History history = new History();
    private final List<String> faults = new ArrayList<>();
    private final AtomicBoolean running = new AtomicBoolean(true);
    private final long t0 = System.nanoTime();

    public ChaosRunner(Settings settings) {
        this.settings = settings;
    }

    public Result run(Path dir) throws Exception {
        try (TestCluster cluster = TestCluster.start(dir, 3, Map.of()); Admin admin = cluster.admin()) {
            admin.createTopics(List.of(new NewTopic(TOPIC, settings.partitions(), (short) 3)
                    .configs(Map.of("min.insync.replicas", "2", "retention.ms", "-1")))).all().get(60, TimeUnit.SECONDS);
            awaitFullIsr(admin, 60_000);

            List<Thread> threads = new ArrayList<>();
            for (int i = 0; i < settings.producers(); i++) {
                int process = i;
                threads.add(start("chaos-producer-" + i, () -> produce(cluster, process)));
            }
            for (int i = 0; i < settings.consumers(); i++) {
                int process = 100 + i;
                threads.add(start("chaos-consumer-" + i, () -> consume(cluster, process)));
            }
            nemesis(cluster, admin);
            // heal: every node up, then give the cluster time to settle
            for (TestCluster.Node n : cluster.nodes()) {
                if (!n.alive()) {
                    n.start();
                }
            }
            history.heal(System.nanoTime());
            awaitFullIsr(admin, 90_000);
            Thread.sleep(2_000); // some writes after the heal, acknowledged by the full ISR
            running.set(false);
            for (Thread t : threads) {
                t.join(180_000);
            }
            finalRead(cluster);
            Report report = Checker.check(history, new Checker.Options(120_000));
            return new Result(report, List.copyOf(faults));
        }
    }

    private Thread start(String name, Runnable body) {
        Thread t = new Thread(body, name);
        t.setDaemon(true);
        t.start();
        return t;
    }

    private void produce(TestCluster cluster, int process) {
        Map<String, Object> cfg = new HashMap<>();
        cfg.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.allBootstrap());
        cfg.put(ProducerConfig.ACKS_CONFIG, "all");
        cfg.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        cfg.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 120_000);
        cfg.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
        cfg.put(ProducerConfig.LINGER_MS_CONFIG, 2);
        Random random = new Random(settings.seed() * 31 + process);
        long pauseNanos = 1_000_000_000L / Math.max(1, settings.sendsPerSecondPerProducer());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(cfg, new StringSerializer(), new StringSerializer())) {
            long seq = 0;
            while (running.get()) {
                int partition = random.nextInt(settings.partitions());
                String value = "p" + process + "-" + seq++;
                history.sendInvoke(process, partition, value, System.nanoTime());
                producer.send(new ProducerRecord<>(TOPIC, partition, null, value), (md, e) -> {
                    long now = System.nanoTime();
                    if (e == null) {
                        history.sendOk(process, partition, value, md.offset(), now);
                    } else {
                        history.sendFail(process, partition, value, definite(e), now);
                    }
                });
                java.util.concurrent.locks.LockSupport.parkNanos(pauseNanos);
            }
            producer.flush();
        } catch (RuntimeException e) {
            // the producer's own failures are recorded per send
        }
    }

    /** Failures that prove the record was not written (refused before any append). */
    private static boolean definite(Exception e) {
        return e instanceof NotEnoughReplicasException || e instanceof RecordTooLargeException
                || e instanceof InvalidTopicException;
    }

    private void consume(TestCluster cluster, int process) {
        Map<String, Object> cfg = new HashMap<>();
        cfg.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.allBootstrap());
        cfg.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cfg, new StringDeserializer(), new StringDeserializer())) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int p = 0; p < settings.partitions(); p++) {
                tps.add(new TopicPartition(TOPIC, p));
            }
            c.assign(tps);
            c.seekToBeginning(tps);
            while (running.get()) {
                try {
                    for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                        history.poll(process, r.partition(), r.offset(), r.value(), System.nanoTime());
                    }
                } catch (RuntimeException e) {
                    // a consumer error during a fault is not an anomaly; keep reading
                }
            }
        }
    }

    private void nemesis(TestCluster cluster, Admin admin) throws Exception {
        Random random = new Random(settings.seed());
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(settings.durationMs());
        while (System.nanoTime() < end) {
            long wait = settings.faultEveryMinMs()
                    + (long) (random.nextDouble() * (settings.faultEveryMaxMs() - settings.faultEveryMinMs()));
            Thread.sleep(Math.min(wait, Math.max(0, TimeUnit.NANOSECONDS.toMillis(end - System.nanoTime()))));
            if (System.nanoTime() >= end) {
                break;
            }
            TestCluster.Node node = cluster.node(1 + random.nextInt(cluster.nodes().size()));
            switch (random.nextInt(3)) {
                case 0 -> {
                    note("kill -9 node " + node.id);
                    node.kill();
                    Thread.sleep(2_000 + random.nextInt(4_000));
                    note("restart node " + node.id);
                    node.start();
                }
                case 1 -> {
                    note("SIGSTOP node " + node.id);
                    node.pause();
                    Thread.sleep(3_000 + random.nextInt(4_000)); // around and past broker.session.timeout.ms
                    note("SIGCONT node " + node.id);
                    node.resume();
                }
                default -> {
                    note("SIGTERM node " + node.id);
                    node.stop();
                    note("restart node " + node.id);
                    node.start();
                }
            }
            // one faulty node at a time: wait until it is back in every ISR before the next fault
            awaitFullIsr(admin, 90_000);
        }
    }

    private void note(String fault) {
        faults.add(String.format("%7.1fs %s", (System.nanoTime() - t0) / 1e9, fault));
    }

    private static void awaitFullIsr(Admin admin, long timeoutMs) throws Exception {
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (System.currentTimeMillis() < deadline) {
            try {
                boolean full = true;
                for (TopicPartitionInfo p : TestCluster.describe(admin, TOPIC)) {
                    full &= p.isr().size() == 3 && p.leader() != null && !p.leader().isEmpty();
                }
                if (full) {
                    return;
                }
            } catch (Exception e) {
                // metadata unavailable during a fault: try again
            }
            Thread.sleep(250);
        }
        throw new AssertionError("the ISRs did not become full again within " + timeoutMs + " ms");
    }

    private void finalRead(TestCluster cluster) {
        Map<String, Object> cfg = new HashMap<>();
        cfg.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.allBootstrap());
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cfg, new StringDeserializer(), new StringDeserializer())) {
            for (int p = 0; p < settings.partitions(); p++) {
                TopicPartition tp = new TopicPartition(TOPIC, p);
                c.assign(List.of(tp));
                c.seekToBeginning(List.of(tp));
                long end = c.endOffsets(List.of(tp), Duration.ofSeconds(60)).get(tp);
                List<History.OffsetValue> records = new ArrayList<>();
                long deadline = System.currentTimeMillis() + 120_000;
                while (c.position(tp) < end && System.currentTimeMillis() < deadline) {
                    for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                        records.add(new History.OffsetValue(r.offset(), r.value()));
                    }
                }
                history.finalRead(p, records, System.nanoTime());
            }
        }
    }

}
