package dev.varve.tests.chaos;

import dev.varve.tests.TestCluster;
import dev.varve.tests.VirtualNetwork;
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
 * one {@link Fault} at a time on a seeded schedule. Every operation goes into a {@link History}; after
 * the faults heal and the cluster settles, every partition is read from the start and the
 * {@link Checker} judges the run.
 *
 * <p>With a {@link VirtualNetwork} (root on Linux), every node runs on a host of its own, so links
 * between nodes can be cut or slowed; the clients (this JVM) always reach every node, as the
 * clients of a partitioned data centre often do.
 *
 * <p>Only one node is faulty at a time (or all crash together), so the metadata quorum and
 * {@code min.insync.replicas} come back, and every acknowledged write must survive.
 */
public final class ChaosRunner {
    public static final String TOPIC = "chaos";

    /** What the nemesis does; each fault heals itself before the next one starts. */
    public enum Fault {
        /** SIGKILL a node, restart it 2-6 s later. */
        KILL(false),
        /** SIGSTOP a node for 3-7 s (around and past broker.session.timeout.ms): a zombie leader. */
        PAUSE(false),
        /** SIGTERM a node (controlled shutdown) and restart it. */
        TERM(false),
        /** SIGKILL a node and make it lose its unflushed log tail ({@link TailCutter}), then restart it. */
        LOSE_TAIL(false),
        /** SIGKILL every node at once, restart them all 1-3 s later. */
        CRASH_ALL(false),
        /** Cut a node off from the other nodes for 3-8 s (a minority partition; clients still reach it). */
        ISOLATE(true),
        /** Cut one partition's leader off from its followers on the broker port only (the metadata quorum still reaches it). */
        LEADER_FROM_FOLLOWERS(true),
        /** Cut a node off from the metadata quorum only (its Raft port); brokers still replicate to and from it. */
        BROKER_FROM_CONTROLLERS(true),
        /** Slow a node's links to the others to 200 kbit/s for 5-10 s. */
        SLOW_LINKS(true),
        /**
         * Fill a node's log directory (a tmpfs of its own) to the last byte for 3-6 s: its writes fail,
         * it asks to be fenced; then free the space and restart it (a failed log directory stays
         * offline until restart, as in Kafka).
         */
        DISK_FULL(true);

        final boolean needsNetwork;

        Fault(boolean needsNetwork) {
            this.needsNetwork = needsNetwork;
        }
    }

    /** How a run is shaped. */
    public record Settings(long durationMs, long seed, int partitions, int producers, int consumers,
                           long faultEveryMinMs, long faultEveryMaxMs, int sendsPerSecondPerProducer,
                           List<Fault> faults) {
        /** Every fault this machine can inject (the network and disk faults need root: {@link VirtualNetwork#available()}). */
        public static Settings ci(long durationMs, long seed) {
            boolean network = dev.varve.storage.testing.Capabilities.require(VirtualNetwork.available(),
                    "network namespaces for the network and disk faults (needs root)");
            List<Fault> faults = java.util.Arrays.stream(Fault.values()).filter(f -> network || !f.needsNetwork).toList();
            return new Settings(durationMs, seed, 3, 3, 2, 4_000, 7_000, 150, faults);
        }

        /** The same run with only {@code chosen} faults (those this machine can inject). */
        public Settings only(List<Fault> chosen) {
            List<Fault> kept = faults.stream().filter(chosen::contains).toList();
            if (kept.isEmpty()) {
                throw new IllegalArgumentException("none of " + chosen + " can be injected here (available: " + faults + ")");
            }
            return new Settings(durationMs, seed, partitions, producers, consumers, faultEveryMinMs, faultEveryMaxMs,
                    sendsPerSecondPerProducer, kept);
        }

        boolean network() {
            return faults.stream().anyMatch(f -> f.needsNetwork);
        }

        boolean diskFull() {
            return faults.contains(Fault.DISK_FULL);
        }
    }

    /** What a run did: the checker's report, plus the faults injected. */
    public record Result(Report report, TxnReport txnReport, GroupReport groupReport, List<String> groupActions,
                         List<String> faults, java.util.Set<Fault> kinds) {
    }

    private final Settings settings;
    private final History history = new History();
    private final List<String> faults = new ArrayList<>();
    private final AtomicBoolean running = new AtomicBoolean(true);
    private final long t0 = System.nanoTime();
    private VirtualNetwork network;
    private final java.util.Set<Fault> injected = java.util.EnumSet.noneOf(Fault.class);

    public ChaosRunner(Settings settings) {
        this.settings = settings;
    }

    public Result run(Path dir) throws Exception {
        try (SmallDisks disks = settings.diskFull() ? SmallDisks.mount(dir, 3) : null;
             VirtualNetwork network = settings.network() ? VirtualNetwork.create(3) : null;
             TestCluster cluster = TestCluster.start(dir, 3, 0, GroupWorkload.BROKER_SETTINGS, network);
             Admin admin = cluster.admin()) {
            this.network = network;
            // small segments, so that faults meet rolled segments and their indexes too
            admin.createTopics(List.of(new NewTopic(TOPIC, settings.partitions(), (short) 3)
                    .configs(Map.of("min.insync.replicas", "2", "retention.ms", "-1",
                            "segment.bytes", "65536")))).all().get(60, TimeUnit.SECONDS);
            TxnWorkload.createTopics(admin);
            GroupWorkload.createTopic(admin);
            awaitFullIsr(admin, 60_000);

            TxnWorkload txn = new TxnWorkload(cluster, settings.seed());
            GroupWorkload group = new GroupWorkload(cluster, settings.seed());
            List<Thread> threads = new ArrayList<>();
            for (int i = 0; i < settings.producers(); i++) {
                int process = i;
                threads.add(start("chaos-producer-" + i, () -> produce(cluster, process)));
            }
            for (int i = 0; i < settings.consumers(); i++) {
                int process = 100 + i;
                threads.add(start("chaos-consumer-" + i, () -> consume(cluster, process)));
            }
            txn.start();
            group.start();
            nemesis(cluster, admin);
            // heal: every link and every node up, then give the cluster time to settle
            if (network != null) {
                network.heal();
            }
            for (TestCluster.Node n : cluster.nodes()) {
                if (!n.alive()) {
                    n.start();
                }
            }
            long healed = System.nanoTime();
            history.heal(healed);
            txn.heal(healed);
            group.heal(healed);
            awaitFullIsr(admin, 90_000);
            Thread.sleep(2_000); // some writes after the heal, acknowledged by the full ISR
            txn.awaitProgress(5, 2, 90_000); // transactions committed after the heal (the test asserts it)
            running.set(false);
            for (Thread t : threads) {
                t.join(180_000);
            }
            txn.stop(admin);
            finalRead(cluster);
            group.finish();
            Report report = Checker.check(history, new Checker.Options(120_000));
            TxnReport txnReport = TxnChecker.check(txn.history());
            GroupReport groupReport = GroupChecker.check(group.history());
            if (!groupReport.valid() || !groupReport.totals().settled() || !groupReport.totals().finalComplete()) {
                Path evidence = Path.of("target", "chaos-group", "history-" + settings.seed() + ".txt");
                group.history().dump(evidence);
                for (TestCluster.Node n : cluster.nodes()) {
                    java.nio.file.Files.writeString(evidence.resolveSibling("node-" + n.id + "-" + settings.seed() + ".log"), n.log());
                }
                faults.add("consumer-group history and the nodes' logs written to " + evidence.toAbsolutePath().getParent());
            }
            if (!txnReport.valid()) {
                // the evidence of a transactional anomaly: the history, the nodes' logs and their data directories
                Path evidence = Path.of("target", "chaos-txn", String.valueOf(settings.seed()));
                txn.history().dump(evidence.resolve("history.txt"));
                for (TestCluster.Node n : cluster.nodes()) {
                    java.nio.file.Files.writeString(evidence.resolve("node-" + n.id + ".log"), n.log());
                    copyTree(n.dataDir(), evidence.resolve("node-" + n.id + "-data"));
                }
                faults.add("transactional history, the nodes' logs and data written to " + evidence.toAbsolutePath());
            }
            List<String> groupActions = new ArrayList<>();
            groupActions.add("assignor " + group.assignor() + (group.regex() ? "" : "; no broker-side regex members"));
            groupActions.addAll(group.actions());
            return new Result(report, txnReport, groupReport, groupActions, List.copyOf(faults),
                    java.util.Set.copyOf(injected));
        }
    }

    private static void copyTree(Path from, Path to) {
        try (java.util.stream.Stream<Path> all = java.nio.file.Files.walk(from)) {
            for (Path p : (Iterable<Path>) all::iterator) {
                Path target = to.resolve(from.relativize(p).toString());
                if (java.nio.file.Files.isDirectory(p)) {
                    java.nio.file.Files.createDirectories(target);
                } else {
                    try {
                        java.nio.file.Files.copy(p, target, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
                    } catch (java.io.IOException gone) {
                        // a file the running node removed meanwhile
                    }
                }
            }
        } catch (java.io.IOException | java.io.UncheckedIOException e) {
            // evidence is a convenience
        }
    }

    private Thread start(String name, Runnable body) {
        Thread t = new Thread(body, name);
        t.setDaemon(true);
        t.start();
        return t;
    }

    private void produce(TestCluster cluster, int process) {
        Random random = new Random(settings.seed() * 31 + process);
        long pauseNanos = 1_000_000_000L / Math.max(1, settings.sendsPerSecondPerProducer());
        try (KafkaProducer<String, String> producer = cluster.producer(Map.of(ProducerConfig.LINGER_MS_CONFIG, 2))) {
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

    /**
     * Injects faults until the run's duration is over and every fault kind has been injected at
     * least once (a short run may take a little longer than asked, so that it covers every kind).
     */
    private void nemesis(TestCluster cluster, Admin admin) throws Exception {
        Random random = new Random(settings.seed());
        List<Fault> round = new ArrayList<>();
        long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(settings.durationMs());
        while (System.nanoTime() < end || !injected.containsAll(settings.faults())) {
            long wait = settings.faultEveryMinMs()
                    + (long) (random.nextDouble() * (settings.faultEveryMaxMs() - settings.faultEveryMinMs()));
            Thread.sleep(wait);
            if (round.isEmpty()) {
                // every fault once per round, in a seeded order, so that even a short run meets every kind
                round.addAll(settings.faults());
                java.util.Collections.shuffle(round, random);
            }
            TestCluster.Node node = cluster.node(1 + random.nextInt(cluster.nodes().size()));
            Fault fault = round.remove(0);
            inject(fault, node, cluster, admin, random);
            injected.add(fault);
            // one faulty node at a time: wait until it is back in every ISR before the next fault
            awaitFullIsr(admin, 90_000);
        }
    }

    private void inject(Fault fault, TestCluster.Node node, TestCluster cluster, Admin admin, Random random) throws Exception {
        switch (fault) {
            case KILL -> {
                note("kill -9 node " + node.id);
                node.kill();
                Thread.sleep(2_000 + random.nextInt(4_000));
                note("restart node " + node.id);
                node.start();
            }
            case PAUSE -> {
                note("SIGSTOP node " + node.id);
                node.pause();
                Thread.sleep(3_000 + random.nextInt(4_000)); // around and past broker.session.timeout.ms
                note("SIGCONT node " + node.id);
                node.resume();
            }
            case TERM -> {
                note("SIGTERM node " + node.id);
                node.stop();
                note("restart node " + node.id);
                node.start();
            }
            case LOSE_TAIL -> {
                note("kill -9 node " + node.id + ", then lose its unflushed tails");
                node.kill();
                for (String topic : List.of(TOPIC, TxnHistory.INPUT, TxnHistory.OUTPUT, GroupHistory.TOPIC)) {
                    for (String cut : TailCutter.cut(node.dataDir(), topic, random)) {
                        note("  node " + node.id + " " + cut);
                    }
                }
                note("restart node " + node.id);
                node.start();
            }
            case CRASH_ALL -> {
                note("kill -9 every node");
                for (TestCluster.Node n : cluster.nodes()) {
                    n.kill();
                }
                Thread.sleep(1_000 + random.nextInt(2_000));
                note("restart every node");
                for (TestCluster.Node n : cluster.nodes()) {
                    n.start();
                }
            }
            case ISOLATE -> partitioned("isolate node " + node.id + " from the other nodes",
                    () -> network.isolate(node.id), 3_000 + random.nextInt(5_000));
            case LEADER_FROM_FOLLOWERS -> {
                int partition = random.nextInt(settings.partitions());
                int leader = leaderOf(admin, partition);
                if (leader < 0) {
                    note("(partition " + partition + " has no leader: nothing to cut)");
                    return;
                }
                partitioned("cut node " + leader + " (leader of " + TOPIC + "-" + partition
                                + ") from the other nodes on the broker port", () -> {
                            for (TestCluster.Node other : cluster.nodes()) {
                                if (other.id != leader) {
                                    network.cut(leader, other.id, other.port);
                                }
                            }
                        }, 3_000 + random.nextInt(5_000));
            }
            case BROKER_FROM_CONTROLLERS -> partitioned("cut node " + node.id + " from the metadata quorum (Raft port)", () -> {
                for (TestCluster.Node other : cluster.nodes()) {
                    if (other.id != node.id) {
                        network.cut(node.id, other.id, other.raftPort);
                    }
                }
            }, 3_000 + random.nextInt(5_000));
            case DISK_FULL -> {
                note("fill node " + node.id + "'s log directory");
                Path filler = SmallDisks.fill(node.dataDir());
                Thread.sleep(3_000 + random.nextInt(3_000));
                note("free the space and restart node " + node.id);
                java.nio.file.Files.delete(filler);
                node.stop();
                node.start();
            }
            case SLOW_LINKS -> partitioned("slow node " + node.id + "'s links to 200 kbit/s", () -> {
                for (TestCluster.Node other : cluster.nodes()) {
                    if (other.id != node.id) {
                        network.slow(node.id, other.id, 200);
                        network.slow(other.id, node.id, 200);
                    }
                }
            }, 5_000 + random.nextInt(5_000));
        }
    }

    private interface NetworkChange {
        void apply() throws Exception;
    }

    private void partitioned(String what, NetworkChange change, long forMs) throws Exception {
        note(what);
        change.apply();
        Thread.sleep(forMs);
        note("heal the network");
        network.heal();
    }

    private static int leaderOf(Admin admin, int partition) {
        try {
            return TestCluster.leaderId(TestCluster.describe(admin, TOPIC).get(partition));
        } catch (Exception e) {
            return -1;
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
                for (String topic : List.of(TOPIC, TxnHistory.INPUT, TxnHistory.OUTPUT, GroupHistory.TOPIC)) {
                    for (TopicPartitionInfo p : TestCluster.describe(admin, topic)) {
                        full &= p.isr().size() == 3 && p.leader() != null && !p.leader().isEmpty();
                    }
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
