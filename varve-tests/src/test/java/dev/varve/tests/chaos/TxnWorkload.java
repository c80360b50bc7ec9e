package dev.varve.tests.chaos;

import dev.varve.tests.TestCluster;
import dev.varve.tests.chaos.TxnHistory.Outcome;
import dev.varve.tests.chaos.TxnHistory.Write;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ListConsumerGroupOffsetsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * The transactional workload of a {@link ChaosRunner} run, in the same cluster as the plain one
 * (Jepsen's Kafka queue workload, transactional): writers commit or deliberately abort transactions of
 * unique values over several partitions of {@link TxnHistory#INPUT}; consume-transform-produce processors
 * in one consumer group turn each input record into a derived record of {@link TxnHistory#OUTPUT} and
 * commit it with their input offsets in one transaction (exactly-once); read_committed readers read both
 * topics from the start. Everything goes into a {@link TxnHistory} for {@link TxnChecker}.
 *
 * <p>A client error makes a transaction's outcome {@link Outcome#UNKNOWN} if commitTransaction was
 * called, else {@link Outcome#ABORTED}; the producer is then closed and recreated with the same
 * transactional.id, whose initTransactions fences the old one and completes or aborts its transaction.
 * At the end every transactional id is initialised once more, so that no transaction is left pending
 * when the group's offsets and both topics are finally read.
 */
final class TxnWorkload {
    static final int PARTITIONS = 4;
    static final String GROUP = "chaos-txn-eos";
    private static final int WRITERS = 2;
    private static final int PROCESSORS = 2;
    private static final int READERS = 2;

    private final TestCluster cluster;
    private final long seed;
    private final TxnHistory history = new TxnHistory();
    private final AtomicBoolean running = new AtomicBoolean(true);
    private final List<Thread> threads = new ArrayList<>();
    private final AtomicInteger writerCommits = new AtomicInteger();
    private final AtomicInteger processorCommits = new AtomicInteger();
    private final AtomicInteger cleanStops = new AtomicInteger();

    TxnWorkload(TestCluster cluster, long seed) {
        this.cluster = cluster;
        this.seed = seed;
    }

    TxnHistory history() {
        return history;
    }

    static void createTopics(Admin admin) throws Exception {
        Map<String, String> configs = Map.of("min.insync.replicas", "2", "retention.ms", "-1", "segment.bytes", "65536");
        admin.createTopics(List.of(new NewTopic(TxnHistory.INPUT, PARTITIONS, (short) 3).configs(configs),
                new NewTopic(TxnHistory.OUTPUT, PARTITIONS, (short) 3).configs(configs))).all().get(60, TimeUnit.SECONDS);
    }

    void start() {
        for (int i = 0; i < WRITERS; i++) {
            int process = 200 + i;
            thread("chaos-txn-writer-" + i, () -> write(process));
        }
        for (int i = 0; i < PROCESSORS; i++) {
            int process = 300 + i;
            thread("chaos-txn-processor-" + i, () -> process(process));
        }
        for (int i = 0; i < READERS; i++) {
            int process = 400 + i;
            thread("chaos-txn-reader-" + i, () -> read(process));
        }
    }

    private void thread(String name, Runnable body) {
        Thread t = new Thread(body, name);
        t.setDaemon(true);
        t.start();
        threads.add(t);
    }

    void heal(long nanoTime) {
        history.add(new TxnHistory.Heal(nanoTime));
    }

    /** Waits (up to {@code timeoutMs}) until writers and processors have committed transactions after now. */
    void awaitProgress(int writerTxns, int processorTxns, long timeoutMs) throws InterruptedException {
        int w0 = writerCommits.get();
        int p0 = processorCommits.get();
        long deadline = System.currentTimeMillis() + timeoutMs;
        while (System.currentTimeMillis() < deadline
                && (writerCommits.get() - w0 < writerTxns || processorCommits.get() - p0 < processorTxns)) {
            Thread.sleep(200);
        }
    }

    /** Stops every client, resolves pending transactions, records the group's offsets and the final reads. */
    void stop(Admin admin) throws Exception {
        running.set(false);
        for (Thread t : threads) {
            t.join(180_000);
        }
        boolean quiesced = cleanStops.get() == WRITERS + PROCESSORS && threads.stream().noneMatch(Thread::isAlive);
        if (quiesced) {
            recordGroupOffsets(admin);
        }
        finalRead(TxnHistory.INPUT);
        finalRead(TxnHistory.OUTPUT);
    }

    // ------------------------------------------------------------------ clients

    private KafkaProducer<String, String> transactional(String transactionalId) {
        return cluster.producer(Map.of(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId,
                ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, 20_000,
                ProducerConfig.MAX_BLOCK_MS_CONFIG, 20_000,
                ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 30_000,
                ProducerConfig.LINGER_MS_CONFIG, 2));
    }

    /** A producer of {@code transactionalId} whose initTransactions succeeded (fencing any older one), or null. */
    private KafkaProducer<String, String> init(String transactionalId) {
        KafkaProducer<String, String> producer = null;
        try {
            producer = transactional(transactionalId);
            producer.initTransactions();
            return producer;
        } catch (RuntimeException e) {
            close(producer);
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(500));
            return null;
        }
    }

    private static void close(KafkaProducer<String, String> producer) {
        if (producer != null) {
            try {
                producer.close(Duration.ofSeconds(5));
            } catch (RuntimeException e) {
                // closing a failed producer
            }
        }
    }

    /** After the loop: initialise {@code transactionalId} once more, so that nothing of it is left pending. */
    private boolean resolve(String transactionalId) {
        long deadline = System.currentTimeMillis() + 120_000;
        while (System.currentTimeMillis() < deadline) {
            KafkaProducer<String, String> producer = init(transactionalId);
            if (producer != null) {
                close(producer);
                return true;
            }
        }
        return false;
    }

    private void write(int process) {
        Random random = new Random(seed * 17 + process);
        String id = "chaos-txn-writer-" + process;
        KafkaProducer<String, String> producer = null;
        long seq = 0;
        while (running.get()) {
            if (producer == null && (producer = init(id)) == null) {
                continue;
            }
            String name = "w" + process + "." + seq++;
            List<Integer> partitions = new ArrayList<>(List.of(0, 1, 2, 3));
            Collections.shuffle(partitions, random);
            List<Write> writes = new ArrayList<>();
            for (int p : partitions.subList(0, 2 + random.nextInt(PARTITIONS - 1))) {
                writes.add(new Write(TxnHistory.INPUT, p, "t" + process + "-" + (seq - 1) + "-" + p));
            }
            boolean abort = random.nextInt(5) == 0;
            if (!transact(producer, process, name, writes, abort, p -> { })) {
                close(producer);
                producer = null;
            } else if (!abort) {
                writerCommits.incrementAndGet();
            }
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(20 + random.nextInt(40)));
        }
        close(producer);
        if (resolve(id)) {
            cleanStops.incrementAndGet();
        }
    }

    /**
     * One transaction: {@code writes}, then {@code beforeEnd} (the consumed offsets), then a commit, or an
     * abort when {@code abort}; its outcome recorded (UNKNOWN when the client failed once commit was
     * called, else ABORTED). False when the client failed: the producer must be replaced.
     */
    private boolean transact(KafkaProducer<String, String> producer, int process, String name, List<Write> writes,
                             boolean abort, java.util.function.Consumer<KafkaProducer<String, String>> beforeEnd) {
        boolean commitCalled = false;
        long start = System.nanoTime();
        try {
            producer.beginTransaction();
            for (Write w : writes) {
                producer.send(new ProducerRecord<>(w.topic(), w.partition(), null, w.value()));
            }
            beforeEnd.accept(producer);
            if (abort) {
                producer.flush(); // so that the aborted values are really in the log
                producer.abortTransaction();
                history.add(new TxnHistory.Txn(process, name, writes, Outcome.ABORTED, start, System.nanoTime()));
            } else {
                commitCalled = true;
                producer.commitTransaction();
                history.add(new TxnHistory.Txn(process, name, writes, Outcome.COMMITTED, start, System.nanoTime()));
            }
            return true;
        } catch (RuntimeException e) {
            history.add(new TxnHistory.Txn(process, name, writes, commitCalled ? Outcome.UNKNOWN : Outcome.ABORTED,
                    start, System.nanoTime()));
            return false;
        }
    }

    private void process(int process) {
        String id = "chaos-txn-processor-" + process;
        Map<String, Object> cfg = new HashMap<>();
        cfg.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.allBootstrap());
        cfg.put(ConsumerConfig.GROUP_ID_CONFIG, GROUP);
        cfg.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        cfg.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        cfg.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        cfg.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 50);
        cfg.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, 10_000);
        cfg.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 1_000);
        cfg.put(ConsumerConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30_000);
        KafkaProducer<String, String> producer = null;
        long seq = 0;
        boolean rewind = false;
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(cfg, new StringDeserializer(), new StringDeserializer())) {
            consumer.subscribe(List.of(TxnHistory.INPUT));
            while (running.get()) {
                if (producer == null && (producer = init(id)) == null) {
                    continue;
                }
                if (rewind) {
                    // after the new producer's initTransactions: the failed transaction is complete or aborted
                    rewind = !rewind(consumer);
                    if (rewind) {
                        continue;
                    }
                }
                ConsumerRecords<String, String> records;
                try {
                    records = consumer.poll(Duration.ofMillis(200));
                } catch (RuntimeException e) {
                    rewind = true; // the position may be anywhere now: back to what the group committed
                    continue;
                }
                if (records.isEmpty()) {
                    continue;
                }
                String name = "x" + process + "." + seq++;
                List<Write> writes = new ArrayList<>();
                Map<TopicPartition, OffsetAndMetadata> offsets = new HashMap<>();
                for (ConsumerRecord<String, String> r : records) {
                    history.add(new TxnHistory.Read(process, false, r.topic(), r.partition(), r.offset(), r.value(), System.nanoTime()));
                    writes.add(new Write(TxnHistory.OUTPUT, r.partition(), TxnHistory.derived(r.value(), name)));
                    offsets.merge(new TopicPartition(r.topic(), r.partition()), new OffsetAndMetadata(r.offset() + 1),
                            (a, b) -> a.offset() >= b.offset() ? a : b);
                }
                if (transact(producer, process, name, writes, false,
                        p -> p.sendOffsetsToTransaction(offsets, consumer.groupMetadata()))) {
                    processorCommits.incrementAndGet();
                } else {
                    // fenced, rebalanced away, or a broker error: abort (by fencing), rewind to the committed offsets
                    close(producer);
                    producer = null;
                    rewind = true;
                }
            }
            close(producer);
            producer = null;
            if (resolve(id)) {
                cleanStops.incrementAndGet();
            }
        } catch (RuntimeException e) {
            close(producer);
        }
    }

    /** Seeks every assigned partition back to the group's committed offset (read with require_stable). */
    private static boolean rewind(KafkaConsumer<String, String> consumer) {
        try {
            Set<TopicPartition> assigned = consumer.assignment();
            Map<TopicPartition, OffsetAndMetadata> committed = consumer.committed(assigned, Duration.ofSeconds(30));
            for (TopicPartition tp : assigned) {
                OffsetAndMetadata at = committed.get(tp);
                if (at == null) {
                    consumer.seekToBeginning(List.of(tp));
                } else {
                    consumer.seek(tp, at.offset());
                }
            }
            return true;
        } catch (RuntimeException e) {
            LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(500));
            return false;
        }
    }

    private void read(int process) {
        Map<String, Object> cfg = new HashMap<>();
        cfg.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.allBootstrap());
        cfg.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        cfg.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        cfg.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cfg, new StringDeserializer(), new StringDeserializer())) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int p = 0; p < PARTITIONS; p++) {
                tps.add(new TopicPartition(TxnHistory.INPUT, p));
                tps.add(new TopicPartition(TxnHistory.OUTPUT, p));
            }
            c.assign(tps);
            c.seekToBeginning(tps);
            while (running.get()) {
                try {
                    for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                        history.add(new TxnHistory.Read(process, true, r.topic(), r.partition(), r.offset(), r.value(),
                                System.nanoTime()));
                    }
                } catch (RuntimeException e) {
                    // a consumer error during a fault is not an anomaly; keep reading
                }
            }
        }
    }

    // ------------------------------------------------------------------ the end

    private void recordGroupOffsets(Admin admin) {
        long deadline = System.currentTimeMillis() + 120_000;
        while (System.currentTimeMillis() < deadline) {
            try {
                Map<TopicPartition, OffsetAndMetadata> offsets = admin.listConsumerGroupOffsets(GROUP,
                                new ListConsumerGroupOffsetsOptions().requireStable(true))
                        .partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
                Map<Integer, Long> committed = new HashMap<>();
                offsets.forEach((tp, at) -> {
                    if (tp.topic().equals(TxnHistory.INPUT) && at != null) {
                        committed.put(tp.partition(), at.offset());
                    }
                });
                history.add(new TxnHistory.GroupOffsets(committed, System.nanoTime()));
                return;
            } catch (Exception e) {
                LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(500));
            }
        }
    }

    /** Every partition of {@code topic}, read_committed from its start up to its high watermark (within 120 s). */
    private void finalRead(String topic) {
        Map<String, Object> cfg = new HashMap<>();
        cfg.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.allBootstrap());
        cfg.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        cfg.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        cfg.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 10_000);
        Map<String, Object> uncommitted = new HashMap<>(cfg);
        uncommitted.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_uncommitted");
        try (KafkaConsumer<String, String> c = new KafkaConsumer<>(cfg, new StringDeserializer(), new StringDeserializer());
             KafkaConsumer<String, String> hw = new KafkaConsumer<>(uncommitted, new StringDeserializer(), new StringDeserializer())) {
            for (int p = 0; p < PARTITIONS; p++) {
                TopicPartition tp = new TopicPartition(topic, p);
                long started = System.nanoTime();
                List<History.OffsetValue> records = new ArrayList<>();
                boolean complete = false;
                try {
                    long end = hw.endOffsets(List.of(tp), Duration.ofSeconds(60)).get(tp);
                    c.assign(List.of(tp));
                    c.seekToBeginning(List.of(tp));
                    long deadline = System.currentTimeMillis() + 120_000;
                    while (c.position(tp) < end && System.currentTimeMillis() < deadline) {
                        for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(500))) {
                            records.add(new History.OffsetValue(r.offset(), r.value()));
                        }
                    }
                    complete = c.position(tp) >= end;
                } catch (RuntimeException e) {
                    // incomplete: the checks that need this partition's final read skip it
                }
                history.add(new TxnHistory.FinalRead(topic, p, records, complete, started));
            }
        }
    }
}
