package dev.varve.broker;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.time.Duration;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Stock kafka-clients consumers in a group against an in-process broker: subscribe, consume,
 * commit, and the committed offsets survive a broker restart (replayed from __consumer_offsets).
 */
class ConsumerGroupSmokeTest {
    @TempDir
    File dir;
    private Broker broker;

    private Broker startBroker() throws Exception {
        return Broker.start(BrokerConfig.from(Map.of(
                "listeners", "PLAINTEXT://127.0.0.1:0",
                "log.dirs", dir.getAbsolutePath(),
                "offsets.topic.num.partitions", "3",
                "group.initial.rebalance.delay.ms", "0")));
    }

    @BeforeEach
    void start() throws Exception {
        broker = startBroker();
    }

    @AfterEach
    void stop() throws Exception {
        broker.close();
    }

    private KafkaConsumer<String, String> consumer(String group) {
        Properties cp = new Properties();
        cp.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
        cp.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        cp.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        cp.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
        cp.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        cp.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
        return new KafkaConsumer<>(cp);
    }

    private void produce(String topic, int partitions, int count) throws Exception {
        Properties pp = new Properties();
        pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers());
        pp.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        pp.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(pp)) {
            for (int i = 0; i < count; i++) {
                producer.send(new ProducerRecord<>(topic, i % partitions, "k" + i, "v" + i));
            }
            producer.flush();
        }
    }

    @Test
    void groupConsumesCommitsAndResumesAfterRestart() throws Exception {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers()))) {
            admin.createTopics(List.of(new NewTopic("orders", 3, (short) 1))).all().get();
        }
        produce("orders", 3, 300);
        Set<String> seen = new HashSet<>();
        try (KafkaConsumer<String, String> c = consumer("g1")) {
            c.subscribe(List.of("orders"));
            long deadline = System.currentTimeMillis() + 30_000;
            while (seen.size() < 300 && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    seen.add(r.value());
                }
            }
            assertThat(seen).hasSize(300);
            assertThat(c.assignment()).hasSize(3);
            c.commitSync();
            try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers()))) {
                ConsumerGroupDescription d = admin.describeConsumerGroups(List.of("g1")).all().get().get("g1");
                assertThat(d.groupState()).isEqualTo(GroupState.STABLE);
                assertThat(d.members()).hasSize(1);
                assertThat(d.members().iterator().next().assignment().topicPartitions()).hasSize(3);
            }
        }
        broker.close();
        broker = startBroker();
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers()))) {
            Map<TopicPartition, OffsetAndMetadata> committed =
                    admin.listConsumerGroupOffsets("g1").partitionsToOffsetAndMetadata().get();
            Map<TopicPartition, Long> offsets = new HashMap<>();
            committed.forEach((tp, om) -> offsets.put(tp, om.offset()));
            assertThat(offsets).isEqualTo(Map.of(new TopicPartition("orders", 0), 100L,
                    new TopicPartition("orders", 1), 100L, new TopicPartition("orders", 2), 100L));
        }
        produce("orders", 3, 30);
        Set<String> more = new HashSet<>();
        try (KafkaConsumer<String, String> c = consumer("g1")) {
            c.subscribe(List.of("orders"));
            long deadline = System.currentTimeMillis() + 30_000;
            while (more.size() < 30 && System.currentTimeMillis() < deadline) {
                for (ConsumerRecord<String, String> r : c.poll(Duration.ofMillis(200))) {
                    more.add(r.value());
                }
            }
        }
        assertThat(more).hasSize(30).allMatch(v -> Integer.parseInt(v.substring(1)) < 30);
    }
}
