package dev.varve.tests;

import dev.varve.broker.Broker;
import dev.varve.broker.BrokerConfig;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DeletedRecords;
import org.apache.kafka.clients.admin.ListOffsetsResult.ListOffsetsResultInfo;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.OffsetOutOfRangeException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeSet;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Stock kafka-clients 4.4.0 (Admin, the default idempotent Producer, Consumer with
 * {@code assign()}) against an in-process Varve broker: every compression codec round-trips byte for
 * byte (keys, values, headers, timestamps, order and offsets per partition), lookups by timestamp
 * find the right offsets, DeleteRecords moves the log start, and an oversized record is refused
 * with {@link RecordTooLargeException} while the broker keeps serving.
 *
 * <p>Record counts: 100,000 uncompressed and {@value #CI_COMPRESSED_RECORDS} per compression codec
 * by default (the CI budget); {@code -Dvarve.tests.full=true} runs 100,000 for every codec.
 */
@Timeout(300)
class ClientCompatibilityTest {
    static final boolean FULL = Boolean.getBoolean("varve.tests.full");
    static final int FULL_RECORDS = 100_000;
    static final int CI_COMPRESSED_RECORDS = 20_000;

    @TempDir
    static Path dataDir;
    private static Broker broker;
    private static String bootstrap;

    @BeforeAll
    static void startBroker() throws Exception {
        broker = Broker.start(BrokerConfig.from(Map.of(
                "listeners", "PLAINTEXT://127.0.0.1:0",
                "log.dirs", dataDir.toString(),
                // Many segments, so reads and timestamp lookups cross segment boundaries.
                "log.segment.bytes", Integer.toString(1024 * 1024))));
        bootstrap = broker.bootstrapServers();
    }

    @AfterAll
    static void stopBroker() throws Exception {
        if (broker != null) {
            broker.close();
        }
    }

    @ParameterizedTest(name = "compression.type={0}")
    @ValueSource(strings = {"none", "gzip", "snappy", "lz4", "zstd"})
    void everyCodecRoundTripsByteIdentical(String codec) throws Exception {
        int count = codec.equals("none") || FULL ? FULL_RECORDS : CI_COMPRESSED_RECORDS;
        RecordFixture fixture = new RecordFixture("codec-" + codec, 3, codec.hashCode(),
                System.currentTimeMillis() - 3_600_000L);
        Clients.createTopic(bootstrap, fixture.topic, 3, Map.of());

        try (KafkaProducer<byte[], byte[]> producer = Clients.producer(bootstrap,
                Map.of(ProducerConfig.COMPRESSION_TYPE_CONFIG, codec))) {
            Clients.produce(producer, fixture, 0, count);
        }
        Map<TopicPartition, Long> ends = Clients.endOffsets(fixture, count);
        assertThat(Clients.consumeAndVerify(bootstrap, fixture, Map.of(), ends)).isEqualTo(count);

        checkOffsetsForTimes(fixture, count);
        checkListOffsets(fixture, count, ends);
    }

    /** The consumer's offsetsForTimes: the first record at or after the timestamp, also inside compressed batches. */
    private static void checkOffsetsForTimes(RecordFixture fixture, int count) {
        TreeSet<Long> samples = new TreeSet<>(List.of(0L, 1L, 2L, 5L, 3L + 997, count / 2L, count / 2L + 1,
                count - 4L, count - 3L, count - 2L, count - 1L));
        Random random = new Random(count);
        for (int k = 0; k < 20; k++) {
            samples.add((long) random.nextInt(count));
        }
        try (KafkaConsumer<byte[], byte[]> consumer = Clients.consumer(bootstrap)) {
            for (long i : samples) {
                TopicPartition tp = fixture.tp(fixture.partitionOf(i));
                long ts = fixture.timestampOf(i);
                for (long query : new long[]{ts, ts - 1}) {
                    // ts - 1 falls strictly between record i and its predecessor in the partition.
                    OffsetAndTimestamp found = consumer.offsetsForTimes(Map.of(tp, query), Duration.ofSeconds(30)).get(tp);
                    assertThat(found).as("offsetsForTimes(%s, %d) for record %d", tp, query, i).isNotNull();
                    assertThat(found.offset()).as("offsetsForTimes(%s, %d)", tp, query).isEqualTo(fixture.offsetOf(i));
                    assertThat(found.timestamp()).as("offsetsForTimes(%s, %d)", tp, query).isEqualTo(ts);
                }
            }
            Map<TopicPartition, Long> afterTheEnd = new HashMap<>();
            for (TopicPartition tp : fixture.allPartitions()) {
                afterTheEnd.put(tp, fixture.timestampOf(count) + 1_000);
            }
            Map<TopicPartition, OffsetAndTimestamp> none = consumer.offsetsForTimes(afterTheEnd, Duration.ofSeconds(30));
            assertThat(none).as("no record is that new").containsOnlyKeys(afterTheEnd.keySet());
            assertThat(none.values()).containsOnlyNulls();
        }
    }

    /** Admin listOffsets: earliest, latest and the record with the largest timestamp. */
    private static void checkListOffsets(RecordFixture fixture, int count, Map<TopicPartition, Long> ends)
            throws Exception {
        try (Admin admin = Clients.admin(bootstrap)) {
            for (TopicPartition tp : fixture.allPartitions()) {
                long end = ends.get(tp);
                assertThat(offset(admin, tp, OffsetSpec.earliest()).offset()).as("earliest of %s", tp).isZero();
                assertThat(offset(admin, tp, OffsetSpec.latest()).offset()).as("latest of %s", tp).isEqualTo(end);
                ListOffsetsResultInfo max = offset(admin, tp, OffsetSpec.maxTimestamp());
                long last = fixture.indexAt(tp.partition(), end - 1);
                assertThat(max.offset()).as("max timestamp offset of %s", tp).isEqualTo(end - 1);
                assertThat(max.timestamp()).as("max timestamp of %s", tp).isEqualTo(fixture.timestampOf(last));
            }
        }
    }

    private static ListOffsetsResultInfo offset(Admin admin, TopicPartition tp, OffsetSpec spec) throws Exception {
        return admin.listOffsets(Map.of(tp, spec)).partitionResult(tp).get(30, TimeUnit.SECONDS);
    }

    @Test
    void deleteRecordsMovesTheBeginningOffsets() throws Exception {
        int count = 3_000;
        RecordFixture fixture = new RecordFixture("delete-records", 3, 42, System.currentTimeMillis() - 600_000L);
        Clients.createTopic(bootstrap, fixture.topic, 3, Map.of());
        try (KafkaProducer<byte[], byte[]> producer = Clients.producer(bootstrap,
                Map.of(ProducerConfig.COMPRESSION_TYPE_CONFIG, "lz4", ProducerConfig.LINGER_MS_CONFIG, 20))) {
            Clients.produce(producer, fixture, 0, count);
        }
        TopicPartition p0 = fixture.tp(0);
        TopicPartition p1 = fixture.tp(1);
        TopicPartition p2 = fixture.tp(2);
        Map<TopicPartition, Long> ends = Clients.endOffsets(fixture, count);
        // 401 lies inside an lz4 batch: the new start is that exact offset, not the batch's base.
        Map<TopicPartition, Long> starts = Map.of(p0, 401L, p1, 0L, p2, ends.get(p2));

        try (Admin admin = Clients.admin(bootstrap)) {
            Map<TopicPartition, RecordsToDelete> request = new HashMap<>();
            starts.forEach((tp, offset) -> request.put(tp, RecordsToDelete.beforeOffset(offset)));
            Map<TopicPartition, KafkaFuture<DeletedRecords>> result = admin.deleteRecords(request).lowWatermarks();
            for (TopicPartition tp : starts.keySet()) {
                assertThat(result.get(tp).get(30, TimeUnit.SECONDS).lowWatermark()).as("low watermark of %s", tp)
                        .isEqualTo(starts.get(tp));
                assertThat(offset(admin, tp, OffsetSpec.earliest()).offset()).as("earliest of %s", tp)
                        .isEqualTo(starts.get(tp));
            }

            // Deleting below the current start changes nothing; past the high watermark is an error.
            assertThat(admin.deleteRecords(Map.of(p0, RecordsToDelete.beforeOffset(100))).lowWatermarks().get(p0)
                    .get(30, TimeUnit.SECONDS).lowWatermark()).isEqualTo(401L);
            KafkaFuture<DeletedRecords> tooFar = admin.deleteRecords(
                    Map.of(p1, RecordsToDelete.beforeOffset(ends.get(p1) + 1))).lowWatermarks().get(p1);
            assertThatThrownBy(() -> tooFar.get(30, TimeUnit.SECONDS))
                    .isInstanceOf(ExecutionException.class).hasCauseInstanceOf(OffsetOutOfRangeException.class);
        }
        try (KafkaConsumer<byte[], byte[]> consumer = Clients.consumer(bootstrap)) {
            assertThat(consumer.beginningOffsets(fixture.allPartitions(), Duration.ofSeconds(30))).isEqualTo(starts);
        }
        // Reading from the new start returns exactly the records that remain.
        long remaining = count - 401 - ends.get(p2);
        assertThat(Clients.consumeAndVerify(bootstrap, fixture, starts, ends)).isEqualTo(remaining);

        // The emptied partition keeps its offsets: new records continue where the log ended.
        try (KafkaProducer<byte[], byte[]> producer = Clients.producer(bootstrap, Map.of())) {
            Clients.produce(producer, fixture, count, count + 300);
        }
        assertThat(Clients.consumeAndVerify(bootstrap, fixture, starts, Clients.endOffsets(fixture, count + 300)))
                .isEqualTo(remaining + 300);
    }

    @Test
    void anOversizedRecordGetsRecordTooLargeAndTheBrokerKeepsServing() throws Exception {
        String topic = "oversized";
        int maxMessageBytes = 64 * 1024;
        Clients.createTopic(bootstrap, topic, 1, Map.of(TopicConfig.MAX_MESSAGE_BYTES_CONFIG,
                Integer.toString(maxMessageBytes)));
        TopicPartition tp = new TopicPartition(topic, 0);
        byte[] tooLarge = new byte[4 * maxMessageBytes];
        byte[] nearLimit = new byte[maxMessageBytes - 1024];
        Random random = new Random(7);
        random.nextBytes(tooLarge); // random bytes: no codec could shrink them under the limit anyway
        random.nextBytes(nearLimit);
        List<byte[]> stored = new ArrayList<>();

        // max.request.size above the record: the producer sends it, the broker refuses it.
        try (KafkaProducer<byte[], byte[]> producer = Clients.producer(bootstrap,
                Map.of(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, 8 * maxMessageBytes))) {
            stored.add(send(producer, tp, "before".getBytes(StandardCharsets.UTF_8), 0));
            Future<RecordMetadata> refused = producer.send(new ProducerRecord<>(topic, 0, null, tooLarge));
            assertThatThrownBy(() -> refused.get(60, TimeUnit.SECONDS))
                    .isInstanceOf(ExecutionException.class).hasCauseInstanceOf(RecordTooLargeException.class);
            // The same producer goes on (the client bumps its epoch after the failed sequence).
            stored.add(send(producer, tp, nearLimit, 1));
            stored.add(send(producer, tp, "after".getBytes(StandardCharsets.UTF_8), 2));
        }
        try (KafkaProducer<byte[], byte[]> producer = Clients.producer(bootstrap, Map.of())) {
            stored.add(send(producer, tp, "new producer".getBytes(StandardCharsets.UTF_8), 3));
        }
        List<byte[]> read = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> consumer = Clients.consumer(bootstrap)) {
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            long deadline = System.currentTimeMillis() + 60_000;
            while (read.size() < stored.size() && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(200))) {
                    assertThat(r.offset()).isEqualTo(read.size());
                    read.add(r.value());
                }
            }
            assertThat(consumer.endOffsets(List.of(tp))).containsEntry(tp, (long) stored.size());
        }
        assertThat(read).as("only the accepted records, in order").containsExactlyElementsOf(stored);
    }

    private static byte[] send(KafkaProducer<byte[], byte[]> producer, TopicPartition tp, byte[] value,
                               long expectedOffset) throws Exception {
        RecordMetadata md = producer.send(new ProducerRecord<>(tp.topic(), tp.partition(), null, value))
                .get(60, TimeUnit.SECONDS);
        assertThat(md.offset()).as("offset of a %d-byte record", value.length).isEqualTo(expectedOffset);
        return value;
    }
}
