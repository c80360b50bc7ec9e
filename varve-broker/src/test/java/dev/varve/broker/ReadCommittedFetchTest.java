package dev.varve.broker;

import dev.varve.storage.PartitionLog;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * read_committed consumers against a log that holds transactions (written here straight into the
 * partition's log, as the transaction coordinator and its markers will): a stock KafkaConsumer reads
 * up to the last stable offset, skips aborted records through the aborted-transaction list of each
 * Fetch answer, and its endOffsets (ListOffsets with READ_COMMITTED) is the last stable offset;
 * a read_uncommitted consumer sees every data record up to the high watermark.
 */
class ReadCommittedFetchTest {
    private static final TopicPartition TP = new TopicPartition("payments", 0);

    @TempDir
    File dir;
    private Broker broker;

    @AfterEach
    void stop() throws Exception {
        if (broker != null) {
            broker.close();
        }
    }

    private static MemoryRecords txn(long pid, int seq, String... values) {
        SimpleRecord[] records = new SimpleRecord[values.length];
        for (int i = 0; i < values.length; i++) {
            records[i] = new SimpleRecord(System.currentTimeMillis(), null, values[i].getBytes(StandardCharsets.UTF_8));
        }
        return MemoryRecords.withTransactionalRecords(Compression.NONE, pid, (short) 0, seq, records);
    }

    private KafkaConsumer<String, String> consumer(String isolation) {
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
        p.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        p.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 50);
        KafkaConsumer<String, String> c = new KafkaConsumer<>(p);
        c.assign(List.of(TP));
        c.seekToBeginning(List.of(TP));
        return c;
    }

    /** Polls until the consumer's position reaches {@code position}; returns the values read. */
    private static List<String> readTo(KafkaConsumer<String, String> c, long position) {
        List<String> out = new ArrayList<>();
        long deadline = System.currentTimeMillis() + 20_000;
        while (c.position(TP) < position && System.currentTimeMillis() < deadline) {
            for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(100))) {
                out.add(r.value());
            }
        }
        assertThat(c.position(TP)).isEqualTo(position);
        // and nothing more arrives from past it
        for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(300))) {
            out.add(r.value());
        }
        return out;
    }

    @Test
    void aReadCommittedConsumerStopsAtTheLastStableOffsetAndNeverSeesAbortedRecords() throws Exception {
        broker = Broker.start(BrokerConfig.from(Map.of("listeners", "PLAINTEXT://127.0.0.1:0",
                "log.dirs", dir.getAbsolutePath())));
        broker.context().createTopic(TP.topic(), 1, Map.of());
        PartitionLog log = broker.context().replicaManager().log(TP);
        log.appendAsLeader(txn(1, 0, "a1", "a2"), 0);       // 0-1: producer 1
        log.appendAsLeader(txn(2, 0, "b1"), 0);             // 2: producer 2
        log.appendMarkerAsLeader(1, (short) 0, 0, true, 0);  // 3: COMMIT producer 1
        log.appendMarkerAsLeader(2, (short) 0, 0, false, 0); // 4: ABORT producer 2
        log.appendAsLeader(txn(3, 0, "c1"), 0);             // 5: producer 3, left open
        log.appendAsLeader(MemoryRecords.withRecords(Compression.NONE,
                new SimpleRecord("d1".getBytes(StandardCharsets.UTF_8))), 0); // 6: no transaction
        log.maybeIncrementHighWatermark(log.logEndOffset());
        assertThat(log.highWatermark()).isEqualTo(7);
        assertThat(log.lastStableOffset()).isEqualTo(5);

        try (KafkaConsumer<String, String> committed = consumer("read_committed");
             KafkaConsumer<String, String> uncommitted = consumer("read_uncommitted")) {
            assertThat(committed.endOffsets(List.of(TP))).containsEntry(TP, 5L);
            assertThat(uncommitted.endOffsets(List.of(TP))).containsEntry(TP, 7L);
            assertThat(readTo(committed, 5)).containsExactly("a1", "a2");
            assertThat(readTo(uncommitted, 7)).containsExactly("a1", "a2", "b1", "c1", "d1");

            // producer 3 commits: the last stable offset reaches the high watermark
            log.appendMarkerAsLeader(3, (short) 0, 0, true, 0); // 7
            log.maybeIncrementHighWatermark(log.logEndOffset());
            assertThat(readTo(committed, 8)).containsExactly("c1", "d1");
            assertThat(committed.endOffsets(List.of(TP))).containsEntry(TP, 8L);
        }
        // a new read_committed consumer from the start, across the whole log at once
        try (KafkaConsumer<String, String> again = consumer("read_committed")) {
            assertThat(readTo(again, 8)).containsExactly("a1", "a2", "c1", "d1");
        }
    }
}
