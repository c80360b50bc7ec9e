package dev.varve.broker;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.message.FetchResponseData;
import org.apache.kafka.common.message.ProduceRequestData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.requests.FetchMetadata;
import org.apache.kafka.common.requests.FetchRequest;
import org.apache.kafka.common.requests.FetchResponse;
import org.apache.kafka.common.requests.ProduceRequest;
import org.apache.kafka.common.requests.ProduceResponse;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.stream.IntStream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Incremental fetch sessions (KIP-227) on the wire: a session opened by a full fetch, incremental
 * fetches that carry only the partitions with news, Kafka's session errors, closing, the cache limit;
 * and a stock consumer of many partitions that uses them.
 */
class FetchSessionsWireTest {
    @TempDir
    File dir;
    private Broker broker;
    private RawKafkaClient client;

    @AfterEach
    void stop() throws Exception {
        if (client != null) {
            client.close();
        }
        if (broker != null) {
            broker.close();
        }
    }

    private void start(int slots) throws Exception {
        broker = Broker.start(BrokerConfig.from(Map.of(
                "listeners", "PLAINTEXT://127.0.0.1:0",
                "log.dirs", dir.getAbsolutePath(),
                BrokerConfig.MAX_INCREMENTAL_FETCH_SESSION_CACHE_SLOTS, String.valueOf(slots))));
        client = new RawKafkaClient(broker.boundAddresses().get(0));
    }

    private void produce(String topic, int partition, String value) throws Exception {
        ProduceRequestData.TopicProduceData t = new ProduceRequestData.TopicProduceData().setName(topic);
        t.partitionData().add(new ProduceRequestData.PartitionProduceData().setIndex(partition)
                .setRecords(MemoryRecords.withRecords(Compression.NONE, new SimpleRecord(value.getBytes()))));
        ProduceRequestData data = new ProduceRequestData().setAcks((short) 1).setTimeoutMs(5000);
        data.topicData().add(t);
        short v = 11; // by name
        ProduceResponse r = client.send(new ProduceRequest.Builder(v, v, data), v);
        assertThat(Errors.forCode(r.data().responses().iterator().next().partitionResponses().get(0).errorCode()))
                .isEqualTo(Errors.NONE);
    }

    private FetchResponse fetch(FetchMetadata metadata, Uuid topicId, Map<Integer, Long> positions, List<Integer> forget)
            throws Exception {
        short v = ApiKeys.FETCH.latestVersion();
        Map<TopicPartition, FetchRequest.PartitionData> send = new LinkedHashMap<>();
        positions.forEach((p, offset) -> send.put(new TopicPartition("s", p),
                new FetchRequest.PartitionData(topicId, offset, 0, 1 << 20, Optional.empty())));
        FetchRequest.Builder b = FetchRequest.Builder.forConsumer(v, 0, 0, send).metadata(metadata)
                .removed(forget.stream().map(p -> new TopicIdPartition(topicId, p, "s")).toList())
                .replaced(List.of());
        return client.send(b, v);
    }

    private static Map<Integer, FetchResponseData.PartitionData> partitions(FetchResponse r) {
        Map<Integer, FetchResponseData.PartitionData> out = new HashMap<>();
        for (FetchResponseData.FetchableTopicResponse t : r.data().responses()) {
            for (FetchResponseData.PartitionData p : t.partitions()) {
                out.put(p.partitionIndex(), p);
            }
        }
        return out;
    }

    @Test
    void incrementalFetchesCarryOnlyPartitionsWithNews() throws Exception {
        start(1000);
        broker.context().createTopic("s", 3, Map.of());
        Uuid id = broker.context().topics().get("s").orElseThrow().id();
        for (int p = 0; p < 3; p++) {
            produce("s", p, "first-" + p);
        }
        FetchSessions sessions = broker.context().fetchSessions();

        // a full fetch at epoch 0 opens a session and answers every partition
        FetchResponse full = fetch(FetchMetadata.INITIAL, id, Map.of(0, 0L, 1, 0L, 2, 0L), List.of());
        assertThat(full.error()).isEqualTo(Errors.NONE);
        int session = full.data().sessionId();
        assertThat(session).isNotZero();
        assertThat(partitions(full)).hasSize(3).allSatisfy((p, d) ->
                assertThat(FetchResponse.recordsOrFail(d).sizeInBytes()).isPositive());
        assertThat(sessions.size()).isEqualTo(1);

        // epoch 1: the new positions, nothing new to read: no partition in the answer
        FetchResponse quiet = fetch(new FetchMetadata(session, 1), id, Map.of(0, 1L, 1, 1L, 2, 1L), List.of());
        assertThat(quiet.error()).isEqualTo(Errors.NONE);
        assertThat(quiet.data().sessionId()).isEqualTo(session);
        assertThat(partitions(quiet)).isEmpty();

        // a record in partition 1 only: epoch 2 (no partitions sent) answers partition 1 alone
        produce("s", 1, "second");
        FetchResponse news = fetch(new FetchMetadata(session, 2), id, Map.of(), List.of());
        assertThat(partitions(news)).containsOnlyKeys(1);
        assertThat(partitions(news).get(1).highWatermark()).isEqualTo(2);
        assertThat(FetchResponse.recordsOrFail(partitions(news).get(1)).sizeInBytes()).isPositive();

        // Kafka's session errors
        assertThat(fetch(new FetchMetadata(session, 2), id, Map.of(), List.of()).error())
                .isEqualTo(Errors.INVALID_FETCH_SESSION_EPOCH);
        assertThat(fetch(new FetchMetadata(session == 7 ? 8 : 7, 1), id, Map.of(), List.of()).error())
                .isEqualTo(Errors.FETCH_SESSION_ID_NOT_FOUND);

        // forgetting partition 2: its news no longer arrive; partition 1 moved on to offset 2
        FetchResponse forgot = fetch(new FetchMetadata(session, 3), id, Map.of(1, 2L), List.of(2));
        assertThat(partitions(forgot)).isEmpty();
        produce("s", 2, "unseen");
        produce("s", 0, "seen");
        assertThat(partitions(fetch(new FetchMetadata(session, 4), id, Map.of(), List.of()))).containsOnlyKeys(0);
        assertThat(sessions.incrementalFetches()).isGreaterThanOrEqualTo(4);
        assertThat(sessions.omittedPartitions()).isPositive();

        // epoch -1 closes the session: a sessionless full answer
        FetchResponse closing = fetch(new FetchMetadata(session, FetchMetadata.FINAL_EPOCH), id, Map.of(0, 0L), List.of());
        assertThat(closing.data().sessionId()).isZero();
        assertThat(partitions(closing)).containsOnlyKeys(0);
        assertThat(sessions.size()).isZero();
    }

    /** Kafka answers a fetch that names no partition at once, whatever its max.wait.ms (found by ProtocolFuzzProperties). */
    @Test
    void aFetchOfNoPartitionIsAnsweredAtOnceWhateverItsMaxWait() throws Exception {
        start(1000);
        broker.context().createTopic("s", 1, Map.of());
        Uuid id = broker.context().topics().get("s").orElseThrow().id();
        for (short v : new short[] {4, ApiKeys.FETCH.latestVersion()}) {
            // max.wait.ms of 10 minutes, min.bytes 6: the client's socket gives up after 10 s
            FetchRequest.Builder b = FetchRequest.Builder.forConsumer(v, 600_000, 6, Map.of())
                    .metadata(FetchMetadata.LEGACY);
            FetchResponse r = client.send(b, v);
            assertThat(r.error()).as("v%d", v).isEqualTo(Errors.NONE);
            assertThat(partitions(r)).isEmpty();
        }
        // a session that holds no partition: its incremental fetches are answered at once too
        FetchResponse opened = client.send(FetchRequest.Builder.forConsumer(ApiKeys.FETCH.latestVersion(), 600_000, 6, Map.of())
                .metadata(FetchMetadata.INITIAL), ApiKeys.FETCH.latestVersion());
        if (opened.data().sessionId() != 0) {
            FetchResponse next = client.send(FetchRequest.Builder.forConsumer(ApiKeys.FETCH.latestVersion(), 600_000, 6, Map.of())
                    .metadata(new FetchMetadata(opened.data().sessionId(), 1)), ApiKeys.FETCH.latestVersion());
            assertThat(next.error()).isEqualTo(Errors.NONE);
        }
        // while a fetch of an idle partition waits its max.wait.ms (here 300 ms) before answering empty
        long start = System.nanoTime();
        Map<TopicPartition, FetchRequest.PartitionData> one = Map.of(new TopicPartition("s", 0),
                new FetchRequest.PartitionData(id, 0, 0, 1 << 20, Optional.empty()));
        FetchResponse idle = client.send(FetchRequest.Builder.forConsumer(ApiKeys.FETCH.latestVersion(), 300, 6, one)
                .metadata(FetchMetadata.LEGACY), ApiKeys.FETCH.latestVersion());
        assertThat(partitions(idle)).containsOnlyKeys(0);
        assertThat(System.nanoTime() - start).as("waited for min.bytes").isGreaterThanOrEqualTo(250_000_000L);
    }

    @Test
    void aFullCacheServesNewClientsWithoutASession() throws Exception {
        start(1);
        broker.context().createTopic("s", 1, Map.of());
        Uuid id = broker.context().topics().get("s").orElseThrow().id();
        FetchResponse first = fetch(FetchMetadata.INITIAL, id, Map.of(0, 0L), List.of());
        assertThat(first.data().sessionId()).isNotZero();
        FetchResponse second = fetch(FetchMetadata.INITIAL, id, Map.of(0, 0L), List.of());
        assertThat(second.error()).isEqualTo(Errors.NONE);
        assertThat(second.data().sessionId()).as("no slot free: served without a session").isZero();
        assertThat(partitions(second)).containsOnlyKeys(0);
        assertThat(broker.context().fetchSessions().size()).isEqualTo(1);
    }

    @Test
    void aStockConsumerOfManyPartitionsFetchesIncrementally() throws Exception {
        start(1000);
        int partitions = 200;
        broker.context().createTopic("many", partitions, Map.of());
        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        int perPartition = 20;
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp)) {
            for (int i = 0; i < perPartition; i++) {
                for (int p = 0; p < partitions; p++) {
                    producer.send(new ProducerRecord<>("many", p, null, p + ":" + i));
                }
            }
            producer.flush();
        }
        Properties cp = new Properties();
        cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        cp.put(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, 256); // a few records per partition per fetch
        cp.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 20);
        Map<Integer, List<String>> seen = new HashMap<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(cp)) {
            List<TopicPartition> all = IntStream.range(0, partitions).mapToObj(p -> new TopicPartition("many", p)).toList();
            consumer.assign(all);
            consumer.seekToBeginning(all);
            long deadline = System.currentTimeMillis() + 60_000;
            int total = 0;
            while (total < partitions * perPartition && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(200))) {
                    seen.computeIfAbsent(r.partition(), k -> new ArrayList<>()).add(r.value());
                    total++;
                }
            }
            // idle polls at the end: nothing new, the answers are empty incremental ones
            for (int i = 0; i < 10; i++) {
                assertThat(consumer.poll(Duration.ofMillis(100))).isEmpty();
            }
        }
        for (int p = 0; p < partitions; p++) {
            final int partition = p;
            assertThat(seen.get(p)).as("partition %d in order", p)
                    .containsExactlyElementsOf(IntStream.range(0, perPartition).mapToObj(i -> partition + ":" + i).toList());
        }
        FetchSessions sessions = broker.context().fetchSessions();
        assertThat(sessions.created()).isPositive();
        assertThat(sessions.incrementalFetches()).as("incremental fetches served").isGreaterThan(5);
        assertThat(sessions.omittedPartitions()).as("partitions without news left out of answers")
                .isGreaterThan((long) partitions * 5);
    }
}
