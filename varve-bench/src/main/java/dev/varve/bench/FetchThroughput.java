package dev.varve.bench;

import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

import java.time.Duration;
import java.util.List;
import java.util.Properties;

/**
 * Fetch throughput with a stock consumer using assign() (no consumer group, so it runs against any
 * Kafka-protocol broker): reads N records of one partition from the beginning and prints MB/s.
 *
 * <pre>java -cp varve-bench/target/benchmarks.jar dev.varve.bench.FetchThroughput BOOTSTRAP TOPIC RECORDS</pre>
 */
public final class FetchThroughput {
    private FetchThroughput() {
    }

    public static void main(String[] args) {
        if (args.length != 3) {
            System.err.println("usage: FetchThroughput BOOTSTRAP TOPIC RECORDS");
            System.exit(2);
        }
        String bootstrap = args[0];
        String topic = args[1];
        long wanted = Long.parseLong(args[2]);
        Properties p = new Properties();
        p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, ByteArrayDeserializer.class.getName());
        p.put(ConsumerConfig.FETCH_MAX_BYTES_CONFIG, 50 * 1024 * 1024);
        p.put(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, 10 * 1024 * 1024);
        p.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 10_000);
        TopicPartition tp = new TopicPartition(topic, 0);
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(p)) {
            consumer.assign(List.of(tp));
            consumer.seekToBeginning(List.of(tp));
            consumer.position(tp); // resolve the start before timing
            long records = 0;
            long bytes = 0;
            long start = System.nanoTime();
            long deadline = start + Duration.ofMinutes(5).toNanos();
            while (records < wanted && System.nanoTime() < deadline) {
                ConsumerRecords<byte[], byte[]> batch = consumer.poll(Duration.ofMillis(500));
                for (ConsumerRecord<byte[], byte[]> r : batch) {
                    records++;
                    bytes += r.serializedValueSize() + Math.max(0, r.serializedKeySize());
                }
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            System.out.printf("records=%d bytes=%d seconds=%.3f MB/s=%.2f records/s=%.0f%n",
                    records, bytes, seconds, bytes / 1e6 / seconds, records / seconds);
            if (records < wanted) {
                System.exit(1);
            }
        }
    }
}
