package dev.varve.broker;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.InvalidRecordException;
import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * KIP-467 with the stock producer: a batch to a compacted topic where some records have no key is
 * refused with the index of each bad record, so the producer fails those with InvalidRecordException
 * and the others of the batch with the "part of a batch which had invalid records" error; nothing of
 * the batch is written, and a later batch of good records is.
 */
class RecordErrorsWireTest {
    @TempDir
    File dir;

    @Test
    void onlyTheRecordsAtFaultFailWithInvalidRecord() throws Exception {
        try (Broker broker = Broker.start(BrokerConfig.from(Map.of("listeners", "PLAINTEXT://127.0.0.1:0",
                "log.dirs", dir.getAbsolutePath())));
             Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers()))) {
            admin.createTopics(List.of(new NewTopic("latest", 1, (short) 1).configs(Map.of("cleanup.policy", "compact"))))
                    .all().get(30, TimeUnit.SECONDS);
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(Map.of(
                    ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers(),
                    ProducerConfig.LINGER_MS_CONFIG, 1000, // one batch
                    ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, false, ProducerConfig.RETRIES_CONFIG, 0),
                    new StringSerializer(), new StringSerializer())) {
                for (int i = 0; i < 10; i++) {
                    sent.add(producer.send(new ProducerRecord<>("latest", 0, i % 3 == 1 ? null : "k" + i, "v" + i)));
                }
                producer.flush();
                for (int i = 0; i < 10; i++) {
                    Throwable t = catchThrowable(sent.get(i)::get);
                    assertThat(t).as("record %d", i).isInstanceOf(ExecutionException.class);
                    if (i % 3 == 1) {
                        assertThat(t.getCause()).as("record %d, no key", i).isInstanceOf(InvalidRecordException.class)
                                .hasMessageContaining("without key");
                    } else {
                        assertThat(t.getCause()).as("record %d, keyed", i).isExactlyInstanceOf(KafkaException.class)
                                .hasMessageContaining("invalid records");
                    }
                }
                assertThat(producer.send(new ProducerRecord<>("latest", 0, "k", "kept")).get(30, TimeUnit.SECONDS).offset()).isZero();
            }
        }
    }
}
