package dev.varve.tests;

import dev.varve.broker.Broker;
import dev.varve.broker.BrokerConfig;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Varve's {@code __consumer_offsets} is Kafka's: after a real consumer group commits on Varve,
 * Kafka 4.4's {@code DumpLogSegments --offsets-decoder} decodes every record of the topic — the
 * offset commits and the group's membership (protocol, leader, member, assignment).
 */
@Timeout(120)
class OffsetsTopicCompatibilityTest {
    @TempDir
    Path tmp;

    @Test
    void kafkaDecodesTheOffsetsTopicVarveWrote() throws Exception {
        File data = tmp.resolve("data").toFile();
        try (Broker broker = Broker.start(BrokerConfig.from(Map.of(
                "listeners", "PLAINTEXT://127.0.0.1:0",
                "log.dirs", data.getAbsolutePath(),
                "offsets.topic.num.partitions", "1",
                "group.initial.rebalance.delay.ms", "0")))) {
            String bootstrap = broker.bootstrapServers();
            try (Admin admin = Clients.admin(bootstrap)) {
                admin.createTopics(List.of(new NewTopic("decoded", 2, (short) 1))).all().get();
            }
            try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(Map.of(
                    "bootstrap.servers", bootstrap, "group.id", "dump-group", "client.id", "dump-client",
                    "enable.auto.commit", "false",
                    "key.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer",
                    "value.deserializer", "org.apache.kafka.common.serialization.ByteArrayDeserializer"))) {
                consumer.subscribe(List.of("decoded"));
                long deadline = System.currentTimeMillis() + 30_000;
                while (consumer.assignment().size() < 2 && System.currentTimeMillis() < deadline) {
                    consumer.poll(Duration.ofMillis(100));
                }
                assertThat(consumer.assignment()).hasSize(2);
                consumer.commitSync(Map.of(new TopicPartition("decoded", 0), new OffsetAndMetadata(4242, "note-0"),
                        new TopicPartition("decoded", 1), new OffsetAndMetadata(77)));
            }
        }
        File partitionDir = new File(data, "__consumer_offsets-0");
        List<String> segments;
        try (Stream<Path> files = Files.list(partitionDir.toPath())) {
            segments = files.map(Path::toString).filter(f -> f.endsWith(".log")).sorted().collect(Collectors.toList());
        }
        assertThat(segments).isNotEmpty();
        KafkaTool.Result dump = KafkaTool.run(tmp, "org.apache.kafka.tools.DumpLogSegments",
                List.of("--offsets-decoder", "--files", String.join(",", segments)));
        assertThat(dump.exitCode()).as(dump.toString()).isZero();
        String out = dump.stdout();
        assertThat(out).as(dump.toString())
                .contains("\"group\":\"dump-group\"")
                .contains("\"offset\":4242")
                .contains("\"metadata\":\"note-0\"")
                .contains("\"offset\":77")
                .contains("\"protocolType\":\"consumer\"")
                .contains("\"clientId\":\"dump-client\"")
                .doesNotContain("Exception")
                .doesNotContain("isvalid: false");
    }
}
