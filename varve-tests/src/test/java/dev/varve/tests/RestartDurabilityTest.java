package dev.varve.tests;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.message.ProduceResponseData.PartitionProduceResponse;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.requests.InitProducerIdResponse;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A real broker process ({@code java -jar varve.jar server --config FILE}) stopped with SIGTERM and
 * killed with SIGKILL: every acknowledged record (acks=1 and idempotent acks=all) is read back byte
 * for byte after each restart, appends continue at the right offsets, and the idempotent producer's
 * deduplication state (producer id, epoch, last sequences and their offsets) survives both kinds of
 * restart.
 *
 * <p>SIGKILL loses nothing here because acknowledged appends are in the page cache, which a process
 * kill does not drop (a machine crash would; that is replication's job).
 *
 * <p>{@code -Dvarve.tests.full=true} writes 100,000 records per phase instead of 10,000.
 */
@Timeout(300)
class RestartDurabilityTest {
    private static final int RECORDS_PER_PHASE = ClientCompatibilityTest.FULL ? 100_000 : 10_000;

    @TempDir
    Path work;

    @Test
    void acknowledgedRecordsSurviveSigtermAndSigkill() throws Exception {
        RecordFixture fixture = new RecordFixture("durable", 3, 2024, System.currentTimeMillis() - 1_800_000L);
        int n = RECORDS_PER_PHASE;
        try (VarveProcess broker = VarveProcess.start(work, work.resolve("data"))) {
            try {
                String bootstrap = broker.bootstrap();
                Clients.createTopic(bootstrap, fixture.topic, 3, Map.of());
                // Phase 1: acks=1 without idempotence, then the default idempotent producer (acks=all).
                try (KafkaProducer<byte[], byte[]> producer = Clients.producer(bootstrap, Map.of(
                        ProducerConfig.ACKS_CONFIG, "1", ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, false))) {
                    Clients.produce(producer, fixture, 0, n / 2);
                }
                try (KafkaProducer<byte[], byte[]> producer = Clients.producer(bootstrap, Map.of())) {
                    Clients.produce(producer, fixture, n / 2, n);
                }

                assertThat(broker.stop()).as("exit code after SIGTERM").isZero();
                broker.restart();
                assertThat(Clients.consumeAndVerify(bootstrap, fixture, Map.of(), Clients.endOffsets(fixture, n)))
                        .as("records after a clean restart").isEqualTo(n);

                // Phase 2: more records (acks=1, lz4) after the clean restart, then SIGKILL.
                try (KafkaProducer<byte[], byte[]> producer = Clients.producer(bootstrap, Map.of(
                        ProducerConfig.ACKS_CONFIG, "1", ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, false,
                        ProducerConfig.COMPRESSION_TYPE_CONFIG, "lz4"))) {
                    Clients.produce(producer, fixture, n, 2L * n);
                }
                broker.kill();
                broker.restart();
                assertThat(Clients.consumeAndVerify(bootstrap, fixture, Map.of(),
                        Clients.endOffsets(fixture, 2L * n))).as("records after SIGKILL").isEqualTo(2L * n);

                // Phase 3: the recovered log takes appends at the right offsets.
                try (KafkaProducer<byte[], byte[]> producer = Clients.producer(bootstrap, Map.of())) {
                    Clients.produce(producer, fixture, 2L * n, 3L * n);
                }
                assertThat(broker.stop()).as("exit code after SIGTERM").isZero();
                broker.restart();
                assertThat(Clients.consumeAndVerify(bootstrap, fixture, Map.of(),
                        Clients.endOffsets(fixture, 3L * n))).as("records after recovery and restart").isEqualTo(3L * n);
                assertThat(broker.stop()).as("exit code after SIGTERM").isZero();
            } catch (Throwable t) {
                t.addSuppressed(new Exception(broker.log()));
                throw t;
            }
        }
    }

    /**
     * Batches resent with the same producer id, epoch and sequence — what a producer does when it
     * did not see an acknowledgement — are answered with the original offsets and not appended
     * again, before and after a clean restart and after SIGKILL; a sequence gap is refused, and so is
     * a first sequence above 0 on a partition that has never held a record.
     */
    @Test
    void idempotentProducerDeduplicationSurvivesRestarts() throws Exception {
        String topic = "dedup";
        long timestampMs = System.currentTimeMillis() - 60_000; // resent batches are byte-identical
        try (VarveProcess broker = VarveProcess.start(work, work.resolve("data"))) {
            try {
                String bootstrap = broker.bootstrap();
                Clients.createTopic(bootstrap, topic, 1, Map.of());
                long producerId;
                short epoch;
                try (RawKafkaClient raw = new RawKafkaClient(bootstrap)) {
                    InitProducerIdResponse init = raw.initProducerId();
                    assertThat(init.error()).isEqualTo(Errors.NONE);
                    producerId = init.data().producerId();
                    epoch = init.data().producerEpoch();
                    Batches b = new Batches(producerId, epoch, timestampMs);

                    // A producer's second request reaching a partition that has never held a record
                    // before its first (refused with NOT_LEADER_OR_FOLLOWER by a broker that had not yet
                    // applied the new partition): refused, so the first one's retry is not out of order
                    // forever (KAFKA-15591).
                    PartitionProduceResponse early = raw.produce(topic, 0, b.batch('b', 5));
                    assertThat(Errors.forCode(early.errorCode())).as("a first sequence of 5 on a never-written partition")
                            .isEqualTo(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER);
                    assertAppended(raw.produce(topic, 0, b.batch('a', 0)), 0);
                    assertAppended(raw.produce(topic, 0, b.batch('b', 5)), 5);
                    assertAppended(raw.produce(topic, 0, b.batch('b', 5)), 5); // duplicate of the last batch
                    assertAppended(raw.produce(topic, 0, b.batch('a', 0)), 0); // duplicate of an older one
                }

                assertThat(broker.stop()).as("exit code after SIGTERM").isZero();
                broker.restart();
                Batches b = new Batches(producerId, epoch, timestampMs);
                try (RawKafkaClient raw = new RawKafkaClient(bootstrap)) {
                    assertAppended(raw.produce(topic, 0, b.batch('a', 0)), 0);
                    assertAppended(raw.produce(topic, 0, b.batch('b', 5)), 5);
                    assertAppended(raw.produce(topic, 0, b.batch('c', 10)), 10);
                }

                broker.kill();
                broker.restart();
                try (RawKafkaClient raw = new RawKafkaClient(bootstrap)) {
                    assertAppended(raw.produce(topic, 0, b.batch('c', 10)), 10);
                    assertAppended(raw.produce(topic, 0, b.batch('b', 5)), 5);
                    assertAppended(raw.produce(topic, 0, b.batch('d', 15)), 15);
                    PartitionProduceResponse gap = raw.produce(topic, 0, b.batch('e', 25));
                    assertThat(Errors.forCode(gap.errorCode())).as("a sequence gap")
                            .isEqualTo(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER);
                }

                List<String> expected = new ArrayList<>();
                for (char c : new char[]{'a', 'b', 'c', 'd'}) {
                    for (int i = 0; i < Batches.RECORDS; i++) {
                        expected.add(c + "" + i);
                    }
                }
                assertThat(readAll(bootstrap, new TopicPartition(topic, 0), expected.size()))
                        .as("each batch stored once, in order").containsExactlyElementsOf(expected);
                assertThat(broker.stop()).as("exit code after SIGTERM").isZero();
            } catch (Throwable t) {
                t.addSuppressed(new Exception(broker.log()));
                throw t;
            }
        }
    }

    /** Idempotent batches of {@value #RECORDS} records "x0".."x4", gzip for even letters; the same bytes every time. */
    private record Batches(long producerId, short epoch, long baseTimestampMs) {
        static final int RECORDS = 5;

        MemoryRecords batch(char name, int baseSequence) {
            SimpleRecord[] records = new SimpleRecord[RECORDS];
            for (int i = 0; i < RECORDS; i++) {
                records[i] = new SimpleRecord(baseTimestampMs + name * 10L + i, ("k" + name).getBytes(StandardCharsets.UTF_8),
                        (name + "" + i).getBytes(StandardCharsets.UTF_8));
            }
            Compression compression = name % 2 == 0 ? Compression.gzip().build() : Compression.NONE;
            return MemoryRecords.withIdempotentRecords(compression, producerId, epoch, baseSequence, records);
        }
    }

    private static void assertAppended(PartitionProduceResponse response, long expectedBaseOffset) {
        assertThat(Errors.forCode(response.errorCode())).as("error of %s", response).isEqualTo(Errors.NONE);
        assertThat(response.baseOffset()).as("base offset of %s", response).isEqualTo(expectedBaseOffset);
    }

    private static List<String> readAll(String bootstrap, TopicPartition tp, int expectedCount) {
        List<String> values = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> consumer = Clients.consumer(bootstrap)) {
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            long end = consumer.endOffsets(List.of(tp), Duration.ofSeconds(30)).get(tp);
            long deadline = System.currentTimeMillis() + 60_000;
            while (consumer.position(tp) < end && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
                    values.add(new String(r.value(), StandardCharsets.UTF_8));
                }
            }
            assertThat(end).as("end offset of %s", tp).isEqualTo(expectedCount);
        }
        return values;
    }
}
