package dev.varve.tests;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.RetriableException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/** Stock kafka-clients, configured the way an application would, and the produce/verify loops. */
final class Clients {
    /** How long a consume loop may go without reaching its end offsets: a liveness bound, not a timing assertion. */
    private static final long CONSUME_DEADLINE_MS = 120_000;

    private Clients() {
    }

    static Admin admin(String bootstrap) {
        return Admin.create(Map.of(
                AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 30_000,
                AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 20_000));
    }

    static void createTopic(String bootstrap, String topic, int partitions, Map<String, String> configs)
            throws Exception {
        try (Admin admin = admin(bootstrap)) {
            admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1).configs(configs)))
                    .all().get(30, TimeUnit.SECONDS);
            // Apache Kafka answers CreateTopics before every partition leader has its log; a produce in that
            // window gets NOT_LEADER_OR_FOLLOWER and the idempotent producer can then stall on
            // OUT_OF_ORDER_SEQUENCE_NUMBER. ListOffsets succeeds once each partition serves.
            Map<TopicPartition, OffsetSpec> latest = new HashMap<>();
            for (int p = 0; p < partitions; p++) {
                latest.put(new TopicPartition(topic, p), OffsetSpec.latest());
            }
            long deadline = System.currentTimeMillis() + 30_000;
            while (true) {
                try {
                    admin.listOffsets(latest).all().get(30, TimeUnit.SECONDS);
                    return;
                } catch (ExecutionException e) {
                    // Until its metadata reaches the broker's cache, a new topic is unknown there.
                    if (!(e.getCause() instanceof RetriableException) || System.currentTimeMillis() > deadline) {
                        throw e;
                    }
                    Thread.sleep(50);
                }
            }
        }
    }

    /** The default producer (idempotent, acks=all) plus {@code overrides}. */
    static KafkaProducer<byte[], byte[]> producer(String bootstrap, Map<String, Object> overrides) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class.getName());
        p.putAll(overrides);
        return new KafkaProducer<>(p);
    }

    static KafkaConsumer<byte[], byte[]> consumer(String bootstrap) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        p.put(ConsumerConfig.CHECK_CRCS_CONFIG, true);
        return new KafkaConsumer<>(p);
    }

    /**
     * Sends records {@code [from, to)} of the fixture and waits for every acknowledgement; each must
     * name the partition and offset the fixture predicts (records land in order, without gaps).
     */
    static void produce(KafkaProducer<byte[], byte[]> producer, RecordFixture fixture, long from, long to) {
        ConcurrentLinkedQueue<String> failures = new ConcurrentLinkedQueue<>();
        AtomicLong acked = new AtomicLong();
        for (long i = from; i < to; i++) {
            long index = i;
            producer.send(fixture.producerRecord(i), (metadata, exception) -> {
                if (exception != null) {
                    failures.add("record " + index + ": " + exception);
                } else if (metadata.partition() != fixture.partitionOf(index)
                        || metadata.offset() != fixture.offsetOf(index)
                        || metadata.timestamp() != fixture.timestampOf(index)) {
                    failures.add("record " + index + " acknowledged at " + metadata + " ts " + metadata.timestamp()
                            + ", expected partition " + fixture.partitionOf(index) + " offset "
                            + fixture.offsetOf(index) + " ts " + fixture.timestampOf(index));
                } else {
                    acked.incrementAndGet();
                }
            });
        }
        producer.flush();
        if (!failures.isEmpty()) {
            throw new AssertionError(failures.size() + " sends failed or were misplaced; first: "
                    + failures.stream().limit(5).toList());
        }
        if (acked.get() != to - from) {
            throw new AssertionError("acknowledged " + acked.get() + " of " + (to - from) + " records");
        }
    }

    /**
     * Reads every partition of the fixture with {@code assign()} from {@code start} up to {@code end}
     * (exclusive) and checks each record byte for byte; offsets must be exactly consecutive (no gap,
     * no duplicate, no reordering).
     *
     * @return the number of records read
     */
    static long consumeAndVerify(String bootstrap, RecordFixture fixture, Map<TopicPartition, Long> start,
                                 Map<TopicPartition, Long> end) {
        long total = 0;
        try (KafkaConsumer<byte[], byte[]> consumer = consumer(bootstrap)) {
            List<TopicPartition> tps = new ArrayList<>(end.keySet());
            consumer.assign(tps);
            Map<TopicPartition, Long> next = new HashMap<>();
            for (TopicPartition tp : tps) {
                long from = start.getOrDefault(tp, 0L);
                consumer.seek(tp, from);
                next.put(tp, from);
            }
            long deadline = System.currentTimeMillis() + CONSUME_DEADLINE_MS;
            while (!reached(next, end)) {
                if (System.currentTimeMillis() > deadline) {
                    throw new AssertionError("consumer stuck at " + next + "; expected to reach " + end);
                }
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
                    TopicPartition tp = new TopicPartition(r.topic(), r.partition());
                    long expected = next.get(tp);
                    if (r.offset() != expected) {
                        throw new AssertionError(tp + ": expected offset " + expected + " next, got " + r.offset());
                    }
                    if (r.offset() >= end.get(tp)) {
                        throw new AssertionError(tp + ": record at " + r.offset() + " past the expected end "
                                + end.get(tp));
                    }
                    fixture.verify(r);
                    next.put(tp, expected + 1);
                    total++;
                }
            }
            // Nothing beyond the end: the log holds exactly what was produced.
            Map<TopicPartition, Long> ends = consumer.endOffsets(tps, Duration.ofSeconds(30));
            if (!ends.equals(end)) {
                throw new AssertionError("end offsets " + ends + ", expected " + end);
            }
        }
        return total;
    }

    /** Partition → end offset once records {@code [0, count)} of the fixture are written. */
    static Map<TopicPartition, Long> endOffsets(RecordFixture fixture, long count) {
        Map<TopicPartition, Long> out = new HashMap<>();
        for (int p = 0; p < fixture.partitions; p++) {
            out.put(fixture.tp(p), fixture.endOffset(p, count));
        }
        return out;
    }

    private static boolean reached(Map<TopicPartition, Long> next, Map<TopicPartition, Long> end) {
        for (Map.Entry<TopicPartition, Long> e : end.entrySet()) {
            if (next.get(e.getKey()) < e.getValue()) {
                return false;
            }
        }
        return true;
    }
}
