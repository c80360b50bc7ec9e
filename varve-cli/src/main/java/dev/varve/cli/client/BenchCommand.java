package dev.varve.cli.client;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

import java.io.PrintWriter;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.LongSupplier;

/**
 * {@code varve bench produce|consume}: load generators, as Kafka's producer/consumer perf tests, with a
 * live progress line on stderr and a summary (text, JSON or YAML) on stdout. MB is 2^20 bytes (as in
 * Kafka's perf tools); bytes count record values (and keys, when consuming).
 */
@Command(name = "bench", mixinStandardHelpOptions = true,
        description = "Load generators: produce or consume as fast as allowed and report throughput and latency.",
        subcommands = {BenchCommand.Produce.class, BenchCommand.Consume.class})
public final class BenchCommand {
    static final double MB = 1024.0 * 1024.0;

    /** How much to do: a number of records or a time; neither means {@value #DEFAULT_RECORDS} records (produce). */
    static final class Amount {
        @Option(names = {"-n", "--records"}, paramLabel = "N", description = "Stop after this many records.")
        Long records;

        @Option(names = {"-d", "--duration"}, paramLabel = "SECONDS", description = "Stop after this many seconds.")
        Double duration;
    }

    static final long DEFAULT_RECORDS = 100_000;

    abstract static class Base implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @Mixin
        ClientOptions client;

        @Parameters(paramLabel = "TOPIC", description = "The topic (it must exist: `varve topic create`).")
        String topic;

        @ArgGroup(exclusive = true, multiplicity = "0..1")
        Amount amount = new Amount();

        @Option(names = {"-q", "--quiet"}, description = "No progress line on stderr.")
        boolean quiet;

        PrintWriter out() {
            return spec.commandLine().getOut();
        }

        void checkAmount() {
            if (amount != null && amount.records != null && amount.records <= 0) {
                throw new CliErrors.Failure("--records must be positive");
            }
            if (amount != null && amount.duration != null && !(amount.duration > 0)) {
                throw new CliErrors.Failure("--duration must be a positive number of seconds");
            }
        }

        Long records() {
            return amount == null ? null : amount.records;
        }

        Double duration() {
            return amount == null ? null : amount.duration;
        }

        /** The topic's partitions, or a clear error when it does not exist. */
        List<TopicPartition> partitions() throws Exception {
            try (Admin admin = client.admin()) {
                TopicDescription d = admin.describeTopics(List.of(topic)).allTopicNames().get().get(topic);
                List<TopicPartition> tps = new ArrayList<>();
                for (TopicPartitionInfo p : d.partitions()) {
                    tps.add(new TopicPartition(topic, p.partition()));
                }
                return tps;
            } catch (java.util.concurrent.ExecutionException e) {
                if (CliErrors.unwrap(e) instanceof UnknownTopicOrPartitionException) {
                    throw new CliErrors.Failure("topic '" + topic + "' does not exist (create it with `varve topic create "
                            + topic + "`)");
                }
                throw e;
            }
        }

        Progress progress(String verb, LongSupplier records, LongSupplier bytes) {
            return new Progress(quiet ? null : spec.commandLine().getErr(), verb, records, bytes);
        }
    }

    /**
     * The live line on stderr: redrawn in place with '\r' at most 4 times a second on a terminal, a plain
     * line every 5 s otherwise (logs, pipes). Rates are over the last interval; totals since the start.
     */
    static final class Progress {
        private final PrintWriter err;
        private final String verb;
        private final LongSupplier records;
        private final LongSupplier bytes;
        private final boolean terminal = System.console() != null;
        private final long start = System.nanoTime();
        private long lastAt = start;
        private long lastRecords;
        private long lastBytes;
        private int drawn;

        Progress(PrintWriter err, String verb, LongSupplier records, LongSupplier bytes) {
            this.err = err;
            this.verb = verb;
            this.records = records;
            this.bytes = bytes;
        }

        /** Between plain lines when stderr is not a terminal (tests shorten it). */
        static long plainIntervalMs = 5000;

        long intervalMs() {
            return terminal ? 250 : plainIntervalMs;
        }

        void tick() {
            if (err == null) {
                return;
            }
            long now = System.nanoTime();
            long r = records.getAsLong();
            long b = bytes.getAsLong();
            double secs = Math.max(1e-9, (now - lastAt) / 1e9);
            String line = String.format(Locale.ROOT, "%s %,d records  %,.0f records/s  %.2f MB/s  elapsed %.1fs",
                    verb, r, (r - lastRecords) / secs, (b - lastBytes) / MB / secs, (now - start) / 1e9);
            lastAt = now;
            lastRecords = r;
            lastBytes = b;
            if (terminal) {
                err.print("\r" + line + " ".repeat(Math.max(0, drawn - line.length())));
                drawn = line.length();
            } else {
                err.println(line);
            }
            err.flush();
        }

        /** Ends the redrawn line, so what follows starts on its own. */
        void done() {
            if (err != null && terminal && drawn > 0) {
                err.println();
                err.flush();
            }
        }

        /** Waits until the workers are done or the next tick is due, whichever comes first. */
        void await(Thread[] workers) throws InterruptedException {
            long next = System.nanoTime() + intervalMs() * 1_000_000;
            for (Thread w : workers) {
                long left = (next - System.nanoTime()) / 1_000_000;
                if (left <= 0) {
                    return;
                }
                w.join(left);
            }
        }
    }

    static String fmt(double v) {
        return String.format(Locale.ROOT, "%.2f", v);
    }

    static double round(double v, int digits) {
        double f = Math.pow(10, digits);
        return Math.round(v * f) / f;
    }

    @Command(name = "produce", mixinStandardHelpOptions = true,
            description = {"Send records of a fixed size as fast as allowed; report throughput and send-to-ack latency.",
                    "Without --records or --duration: " + DEFAULT_RECORDS + " records."})
    static final class Produce extends Base {
        @Option(names = {"-s", "--record-size"}, paramLabel = "BYTES", defaultValue = "100",
                description = "Value size of each record (default 100; keys are null).")
        int recordSize;

        @Option(names = "--acks", paramLabel = "all|1|0", defaultValue = "all", description = "Acks to wait for (default all).")
        String acks;

        @Option(names = "--batch-size", paramLabel = "BYTES", description = "Producer batch.size (client default 16384).")
        Integer batchSize;

        @Option(names = "--linger-ms", paramLabel = "MS", description = "Producer linger.ms (client default 5).")
        Integer lingerMs;

        @Option(names = {"-z", "--compression"}, paramLabel = "TYPE", defaultValue = "none",
                description = "none (default), gzip, snappy, lz4 or zstd.")
        String compression;

        @Option(names = {"-t", "--throughput"}, paramLabel = "RECORDS/S", defaultValue = "-1",
                description = "Send at most this many records a second in all (default -1: unlimited).")
        long throughput;

        @Option(names = {"-p", "--producers"}, paramLabel = "N", defaultValue = "1",
                description = "Producer clients sending in parallel, each on its own thread (default 1).")
        int producers;

        @Override
        public Integer call() throws Exception {
            checkAmount();
            if (recordSize < 0) {
                throw new CliErrors.Failure("--record-size must be 0 or more bytes");
            }
            if (producers < 1) {
                throw new CliErrors.Failure("--producers must be at least 1");
            }
            if (throughput == 0 || throughput < -1) {
                throw new CliErrors.Failure("--throughput must be a positive number of records a second, or -1 for no limit");
            }
            if (!List.of("all", "-1", "0", "1").contains(acks)) {
                throw new CliErrors.Failure("--acks must be all, 1 or 0 (not '" + acks + "')");
            }
            String codec = compression.toLowerCase(Locale.ROOT);
            if (!List.of("none", "gzip", "snappy", "lz4", "zstd").contains(codec)) {
                throw new CliErrors.Failure("--compression must be none, gzip, snappy, lz4 or zstd (not '" + compression + "')");
            }
            partitions(); // a missing topic is an error here, not a minute of the producer waiting for metadata

            Map<String, Object> extra = new HashMap<>();
            extra.put(ProducerConfig.ACKS_CONFIG, acks);
            extra.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, codec);
            if (batchSize != null) {
                extra.put(ProducerConfig.BATCH_SIZE_CONFIG, batchSize);
            }
            if (lingerMs != null) {
                extra.put(ProducerConfig.LINGER_MS_CONFIG, lingerMs);
            }
            extra.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, client.timeoutMs());
            var props = client.clientProperties(extra);
            // the bench's own serializers, whatever a profile says
            props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
            props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
            if (!"all".equals(acks) && !"-1".equals(acks)) {
                props.putIfAbsent(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "false"); // idempotence needs acks=all
            }

            long total = records() != null ? records() : duration() != null ? Long.MAX_VALUE : DEFAULT_RECORDS;
            long deadline = duration() == null ? Long.MAX_VALUE : System.nanoTime() + (long) (duration() * 1e9);
            byte[] payload = new byte[recordSize];
            Random random = new Random();
            for (int i = 0; i < payload.length; i++) {
                payload[i] = (byte) ('A' + random.nextInt(26));
            }

            LongAdder acked = new LongAdder();
            LongAdder failed = new LongAdder();
            AtomicReference<Exception> firstError = new AtomicReference<>();
            AtomicBoolean stop = new AtomicBoolean();
            LatencyHistogram[] histograms = new LatencyHistogram[producers];
            Thread[] workers = new Thread[producers];
            long start = System.nanoTime();
            for (int w = 0; w < producers; w++) {
                long share = total == Long.MAX_VALUE ? Long.MAX_VALUE : total / producers + (w < total % producers ? 1 : 0);
                double rate = throughput < 0 ? -1 : (double) throughput / producers;
                LatencyHistogram h = new LatencyHistogram();
                histograms[w] = h;
                var mine = new java.util.Properties();
                mine.putAll(props);
                mine.putIfAbsent(ProducerConfig.CLIENT_ID_CONFIG, "varve-bench-" + w);
                workers[w] = new Thread(() -> {
                    try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(mine)) {
                        long sent = 0;
                        while (sent < share && !stop.get() && System.nanoTime() < deadline) {
                            if (rate > 0) {
                                long due = start + (long) (sent / rate * 1e9);
                                long wait = due - System.nanoTime();
                                if (wait > 0) {
                                    java.util.concurrent.locks.LockSupport.parkNanos(wait);
                                    continue;
                                }
                            }
                            long t0 = System.nanoTime();
                            producer.send(new ProducerRecord<>(topic, null, payload), (md, e) -> {
                                if (e == null) {
                                    h.record((System.nanoTime() - t0) / 1000); // callbacks of one producer run on its one I/O thread
                                    acked.increment();
                                } else {
                                    failed.increment();
                                    firstError.compareAndSet(null, e);
                                    stop.set(true);
                                }
                            });
                            sent++;
                        }
                        producer.flush();
                    } catch (Exception e) {
                        firstError.compareAndSet(null, e);
                        stop.set(true);
                    }
                }, "varve-bench-producer-" + w);
                workers[w].start();
            }
            Progress progress = progress("produced", acked::sum, () -> acked.sum() * recordSize);
            while (alive(workers)) {
                progress.await(workers);
                if (alive(workers)) {
                    progress.tick();
                }
            }
            progress.done();
            double elapsed = (System.nanoTime() - start) / 1e9;

            LatencyHistogram all = new LatencyHistogram();
            for (LatencyHistogram h : histograms) {
                all.add(h);
            }
            long n = acked.sum();
            long bytes = n * recordSize;
            Map<String, Object> latency = new LinkedHashMap<>();
            latency.put("avg", round(all.mean() / 1000.0, 3));
            latency.put("p50", all.percentile(0.50) / 1000.0);
            latency.put("p95", all.percentile(0.95) / 1000.0);
            latency.put("p99", all.percentile(0.99) / 1000.0);
            latency.put("p999", all.percentile(0.999) / 1000.0);
            latency.put("max", all.max() / 1000.0);
            Map<String, Object> summary = new LinkedHashMap<>();
            summary.put("topic", topic);
            summary.put("records", n);
            summary.put("errors", failed.sum());
            summary.put("record-size", recordSize);
            summary.put("bytes", bytes);
            summary.put("mb", round(bytes / MB, 3));
            summary.put("elapsed-seconds", round(elapsed, 3));
            summary.put("records-per-second", round(n / elapsed, 1));
            summary.put("mb-per-second", round(bytes / MB / elapsed, 3));
            summary.put("producers", producers);
            summary.put("acks", acks);
            summary.put("compression", codec);
            summary.put("latency-ms", latency);
            client.output.emit(out(), summary, o -> {
                o.printf(Locale.ROOT, "Produced %,d records (%s MB) to %s in %.2f s: %,.0f records/s, %s MB/s%n",
                        n, fmt(bytes / MB), topic, elapsed, n / elapsed, fmt(bytes / MB / elapsed));
                if (failed.sum() > 0) {
                    o.printf(Locale.ROOT, "%,d records failed%n", failed.sum());
                }
                o.printf(Locale.ROOT, "Latency (ms, send to ack): avg %.2f  p50 %.2f  p95 %.2f  p99 %.2f  p99.9 %.2f  max %.2f%n",
                        all.mean() / 1000.0, all.percentile(0.50) / 1000.0, all.percentile(0.95) / 1000.0,
                        all.percentile(0.99) / 1000.0, all.percentile(0.999) / 1000.0, all.max() / 1000.0);
            });
            if (firstError.get() != null) {
                throw new CliErrors.Failure("sending failed after " + n + " acknowledged records: "
                        + CliErrors.explain(CliErrors.unwrap(firstError.get()), client.bootstrapServers()));
            }
            return 0;
        }
    }

    static boolean alive(Thread[] workers) {
        for (Thread w : workers) {
            if (w.isAlive()) {
                return true;
            }
        }
        return false;
    }

    @Command(name = "consume", mixinStandardHelpOptions = true,
            description = {"Read records as fast as the cluster serves them; report throughput.",
                    "Without --records or --duration: every record the topic holds when the command starts."})
    static final class Consume extends Base {
        @Option(names = {"-g", "--group"}, paramLabel = "GROUP",
                description = "Consume in this group (committing its offsets), from its committed offsets or else the start."
                        + " Default: no group, every partition from its start.")
        String group;

        @Override
        public Integer call() throws Exception {
            checkAmount();
            List<TopicPartition> tps = partitions();
            Map<String, Object> extra = new HashMap<>();
            extra.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            extra.put(ConsumerConfig.CLIENT_ID_CONFIG, "varve-bench");
            var props = client.clientProperties(extra);
            props.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
            props.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
            if (group != null) {
                props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
            } else {
                props.remove(ConsumerConfig.GROUP_ID_CONFIG);
                props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
            }

            LongAdder count = new LongAdder();
            LongAdder bytes = new LongAdder();
            AtomicReference<Exception> error = new AtomicReference<>();
            AtomicReference<String> shortfall = new AtomicReference<>();
            long[] firstLast = {-1, -1};
            long idleMs = client.timeoutMs();
            Thread worker = new Thread(() -> {
                try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(props)) {
                    Map<TopicPartition, Long> ends = null;
                    if (group == null) {
                        consumer.assign(tps);
                        consumer.seekToBeginning(tps);
                    } else {
                        consumer.subscribe(List.of(topic));
                    }
                    if (records() == null && duration() == null) {
                        ends = consumer.endOffsets(tps, Duration.ofMillis(client.timeoutMs()));
                    }
                    long limit = records() == null ? Long.MAX_VALUE : records();
                    long deadline = duration() == null ? Long.MAX_VALUE : System.nanoTime() + (long) (duration() * 1e9);
                    long lastRecordAt = System.nanoTime();
                    while (count.sum() < limit && System.nanoTime() < deadline) {
                        if (ends != null && reached(consumer, ends)) {
                            break;
                        }
                        ConsumerRecords<byte[], byte[]> batch = consumer.poll(Duration.ofMillis(100));
                        long now = System.nanoTime();
                        if (batch.isEmpty()) {
                            if (duration() == null && now - lastRecordAt > idleMs * 1_000_000) {
                                shortfall.set("nothing arrived for " + client.timeoutSeconds() + " s (--timeout)");
                                break;
                            }
                            continue;
                        }
                        lastRecordAt = now;
                        if (firstLast[0] < 0) {
                            firstLast[0] = now;
                        }
                        for (ConsumerRecord<byte[], byte[]> r : batch) {
                            bytes.add(Math.max(0, r.serializedKeySize()) + Math.max(0, r.serializedValueSize()));
                            count.increment();
                        }
                        firstLast[1] = now;
                    }
                    if (group != null) {
                        consumer.commitSync(Duration.ofMillis(client.timeoutMs()));
                    }
                } catch (Exception e) {
                    error.set(e);
                }
            }, "varve-bench-consumer");
            long start = System.nanoTime();
            worker.start();
            Progress progress = progress("consumed", count::sum, bytes::sum);
            Thread[] workers = {worker};
            while (worker.isAlive()) {
                progress.await(workers);
                if (worker.isAlive()) {
                    progress.tick();
                }
            }
            progress.done();
            if (error.get() != null) {
                throw error.get();
            }
            long n = count.sum();
            long b = bytes.sum();
            // from the first record to the last: the group join and the first metadata round trips are not reading
            double elapsed = n == 0 ? (System.nanoTime() - start) / 1e9 : Math.max(1e-6, (firstLast[1] - firstLast[0]) / 1e9);
            double total = (System.nanoTime() - start) / 1e9;
            Map<String, Object> summary = new LinkedHashMap<>();
            summary.put("topic", topic);
            summary.put("group", group);
            summary.put("records", n);
            summary.put("bytes", b);
            summary.put("mb", round(b / MB, 3));
            summary.put("elapsed-seconds", round(elapsed, 3));
            summary.put("records-per-second", n == 0 ? 0.0 : round(n / elapsed, 1));
            summary.put("mb-per-second", n == 0 ? 0.0 : round(b / MB / elapsed, 3));
            summary.put("total-seconds", round(total, 3));
            client.output.emit(out(), summary, o -> o.printf(Locale.ROOT,
                    "Consumed %,d records (%s MB) from %s in %.2f s: %,.0f records/s, %s MB/s (%.2f s in all, with connecting%s)%n",
                    n, fmt(b / MB), topic, elapsed, n == 0 ? 0.0 : n / elapsed, fmt(n == 0 ? 0 : b / MB / elapsed), total,
                    group == null ? "" : " and joining the group"));
            if (shortfall.get() != null) {
                throw new CliErrors.Failure("stopped after " + n + " records" + (records() == null ? "" : " of the " + records()
                        + " asked for") + ": " + shortfall.get());
            }
            return 0;
        }

        private static boolean reached(KafkaConsumer<?, ?> consumer, Map<TopicPartition, Long> ends) {
            for (Map.Entry<TopicPartition, Long> e : ends.entrySet()) {
                if (e.getValue() > 0 && (!consumer.assignment().contains(e.getKey()) || consumer.position(e.getKey()) < e.getValue())) {
                    return false;
                }
            }
            return true;
        }
    }
}
