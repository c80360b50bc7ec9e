package dev.varve.tests;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.Topology;
import org.apache.kafka.streams.kstream.Consumed;
import org.apache.kafka.streams.kstream.Grouped;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;

import java.time.Duration;
import java.time.Instant;
import java.util.Arrays;
import java.util.Properties;

/**
 * A Kafka Streams word count with {@code processing.guarantee=exactly_once_v2}, run by
 * {@link StreamsExactlyOnceTest} as a process of its own so that it can be killed with SIGKILL. Input
 * records have a null or line-number key and a line of words as value; the words are re-keyed
 * ({@code groupBy}, through the repartition topic {@code <application.id>-words-repartition}) and
 * counted in the store {@code counts} (changelog {@code <application.id>-counts-changelog}); every
 * new count goes to the output topic. It runs until it is killed; SIGTERM closes it cleanly.
 *
 * <p>Arguments: bootstrap servers, application id, state directory, input topic, output topic,
 * replication factor of the internal topics.
 */
public final class StreamsWordCountApp {
    /** The repartition topic is {@code <application.id>-}{@value}{@code -repartition}. */
    static final String REPARTITION = "words";
    /** The store; its changelog is {@code <application.id>-}{@value}{@code -changelog}. */
    static final String STORE = "counts";

    private StreamsWordCountApp() {
    }

    static Topology topology(String in, String out) {
        StreamsBuilder builder = new StreamsBuilder();
        builder.stream(in, Consumed.with(Serdes.String(), Serdes.String()))
                .flatMapValues(line -> Arrays.asList(line.split(" ")))
                .groupBy((key, word) -> word, Grouped.with(REPARTITION, Serdes.String(), Serdes.String()))
                .count(Materialized.as(STORE))
                .toStream()
                .to(out, Produced.with(Serdes.String(), Serdes.Long()));
        return builder.build();
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 6) {
            System.err.println("usage: StreamsWordCountApp BOOTSTRAP APPLICATION_ID STATE_DIR IN OUT REPLICATION");
            System.exit(2);
        }
        Properties p = new Properties();
        p.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        p.put(StreamsConfig.APPLICATION_ID_CONFIG, args[1]);
        p.put(StreamsConfig.STATE_DIR_CONFIG, args[2]);
        p.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, Integer.parseInt(args[5]));
        p.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        // transactions open for a second: the test kills the app inside one
        p.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 1_000);
        p.put(StreamsConfig.NUM_STREAM_THREADS_CONFIG, 1);
        // a killed instance's group member is dropped after this long (the brokers' smallest allowed,
        // group.min.session.timeout.ms): an instance restarted after a kill waits this long for its rebalance
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG), 6_000);
        p.put(StreamsConfig.consumerPrefix(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG), 1_000);

        KafkaStreams streams = new KafkaStreams(topology(args[3], args[4]), p);
        streams.setStateListener((now, before) -> {
            log("state " + before + " -> " + now);
            if (now == KafkaStreams.State.ERROR) {
                // no point running on: the test sees the process gone and shows this output
                new Thread(() -> System.exit(1)).start();
            }
        });
        streams.setUncaughtExceptionHandler(e -> {
            log("uncaught: " + e);
            e.printStackTrace(System.out);
            return StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.SHUTDOWN_CLIENT;
        });
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            log("closing");
            streams.close(Duration.ofSeconds(30));
            log("closed");
        }));
        log("starting " + String.join(" ", args));
        streams.start();
        Thread.currentThread().join(); // until killed
    }

    private static void log(String line) {
        System.out.println(Instant.now() + " " + line);
        System.out.flush();
    }
}
