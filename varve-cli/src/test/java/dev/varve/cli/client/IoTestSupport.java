package dev.varve.cli.client;

import dev.varve.cli.VarveCommand;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

/** What the produce and consume tests share: topics, a plain client to check with, stdin, a command left running. */
final class IoTestSupport {
    private IoTestSupport() {
    }

    static void createTopic(CliHarness cli, String name, int partitions) throws Exception {
        cli.admin.createTopics(List.of(new NewTopic(name, partitions, (short) 1))).all().get();
    }

    static KafkaProducer<byte[], byte[]> producer(CliHarness cli) {
        return new KafkaProducer<>(Map.of("bootstrap.servers", cli.bootstrap(),
                "key.serializer", ByteArraySerializer.class, "value.serializer", ByteArraySerializer.class));
    }

    /** Every record of {@code topic}, read by a plain consumer (not the CLI), by partition then offset. */
    static List<ConsumerRecord<byte[], byte[]>> readAll(CliHarness cli, String topic) {
        try (KafkaConsumer<byte[], byte[]> c = new KafkaConsumer<>(Map.of("bootstrap.servers", cli.bootstrap(),
                "key.deserializer", ByteArrayDeserializer.class, "value.deserializer", ByteArrayDeserializer.class))) {
            List<TopicPartition> tps = c.partitionsFor(topic).stream().map(p -> new TopicPartition(topic, p.partition())).toList();
            c.assign(tps);
            c.seekToBeginning(tps);
            Map<TopicPartition, Long> end = c.endOffsets(tps);
            List<ConsumerRecord<byte[], byte[]>> all = new ArrayList<>();
            long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
            while (tps.stream().anyMatch(tp -> c.position(tp) < end.get(tp))) {
                if (System.nanoTime() > deadline) {
                    throw new AssertionError("could not read " + topic + " to its end");
                }
                c.poll(Duration.ofMillis(100)).forEach(all::add);
            }
            all.sort(Comparator.<ConsumerRecord<byte[], byte[]>>comparingInt(ConsumerRecord::partition).thenComparingLong(ConsumerRecord::offset));
            return all;
        }
    }

    static String utf8(byte[] b) {
        return b == null ? null : new String(b, StandardCharsets.UTF_8);
    }

    static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    /** {@code varve ARGS --bootstrap-server ...} with {@code input} as its stdin. */
    static CliHarness.Result withStdin(CliHarness cli, byte[] input, String... args) {
        InputStream old = System.in;
        System.setIn(new ByteArrayInputStream(input));
        try {
            return cli.run(args);
        } finally {
            System.setIn(old);
        }
    }

    /** A command running in its own thread, its output readable while it runs; stopped by interrupting it. */
    static final class Running implements AutoCloseable {
        private final StringWriter out = new StringWriter();
        private final StringWriter err = new StringWriter();
        private final Thread thread;
        private volatile int exit = -1;

        Running(CliHarness cli, String... args) {
            String[] all = java.util.Arrays.copyOf(args, args.length + 2);
            all[args.length] = "--bootstrap-server";
            all[args.length + 1] = cli.bootstrap();
            var cmd = VarveCommand.commandLine();
            cmd.setOut(new PrintWriter(out, true));
            cmd.setErr(new PrintWriter(err, true));
            thread = new Thread(() -> exit = cmd.execute(all), "varve-under-test");
            thread.start();
        }

        String out() {
            return out.toString();
        }

        boolean alive() {
            return thread.isAlive();
        }

        /** Waits until the output satisfies {@code condition}; fails with what there is after 15 s. */
        void awaitOutput(Predicate<String> condition) throws InterruptedException {
            long deadline = System.nanoTime() + Duration.ofSeconds(15).toNanos();
            while (!condition.test(out.toString())) {
                if (System.nanoTime() > deadline || !thread.isAlive() && !condition.test(out.toString())) {
                    throw new AssertionError("output not as expected (alive " + thread.isAlive() + ", exit " + exit
                            + "):\n" + out + "\nstderr: " + err);
                }
                Thread.sleep(20);
            }
        }

        /** Waits for the command to end by itself; fails if it does not within 15 s or exits non-zero. */
        void awaitExit() throws InterruptedException {
            thread.join(15_000);
            if (thread.isAlive() || exit != 0) {
                throw new AssertionError("did not end well (alive " + thread.isAlive() + ", exit " + exit + "):\n" + out + "\nstderr: " + err);
            }
        }

        /** Interrupts the command, as Ctrl-C would stop it, and returns its exit status. */
        CliHarness.Result stop() throws InterruptedException {
            thread.interrupt();
            thread.join(20_000);
            if (thread.isAlive()) {
                throw new AssertionError("the command did not stop when interrupted:\n" + out + "\nstderr: " + err);
            }
            return new CliHarness.Result(exit, out.toString(), err.toString());
        }

        @Override
        public void close() throws InterruptedException {
            if (thread.isAlive()) {
                thread.interrupt();
                thread.join(20_000);
            }
        }
    }
}
