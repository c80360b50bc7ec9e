package dev.varve.broker;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.message.AlterReplicaLogDirsRequestData;
import org.apache.kafka.common.message.AlterReplicaLogDirsRequestData.AlterReplicaLogDir;
import org.apache.kafka.common.message.AlterReplicaLogDirsRequestData.AlterReplicaLogDirTopic;
import org.apache.kafka.common.message.AlterReplicaLogDirsResponseData;
import org.apache.kafka.common.message.DescribeLogDirsRequestData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.AlterReplicaLogDirsRequest;
import org.apache.kafka.common.requests.AlterReplicaLogDirsResponse;
import org.apache.kafka.common.requests.DescribeLogDirsRequest;
import org.apache.kafka.common.requests.DescribeLogDirsResponse;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * AlterReplicaLogDirs at every version kafka-clients 4.4 knows, with Kafka 4.4's error codes for what
 * an operator can get wrong (checked against a Kafka 4.4 broker with three log directories: a path not
 * in {@code log.dirs}, a relative path or one with a trailing slash is LOG_DIR_NOT_FOUND; an unknown
 * topic or partition UNKNOWN_TOPIC_OR_PARTITION; a 249-character topic name, known or not,
 * INVALID_TOPIC_EXCEPTION whatever the path), and a move seen through DescribeLogDirs: the future
 * replica with its offset lag, then the replica in its new directory.
 */
class AlterReplicaLogDirsWireTest {
    @TempDir
    static File root;
    static File[] dirs = new File[3];
    static Broker broker;
    static Admin admin;

    @BeforeAll
    static void start() throws Exception {
        for (int i = 0; i < dirs.length; i++) {
            dirs[i] = new File(root, "d" + i);
        }
        broker = Broker.start(BrokerConfig.from(Map.of(
                "listeners", "PLAINTEXT://127.0.0.1:0",
                "log.dirs", dirs[0] + "," + dirs[1] + "," + dirs[2],
                // slow enough for the future replica to be seen, fast enough for CI
                "replica.alter.log.dirs.io.max.bytes.per.second", Integer.toString(2 * 1024 * 1024))));
        admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers()));
        admin.createTopics(List.of(new NewTopic("moves", 3, (short) 1))).all().get();
    }

    @AfterAll
    static void stop() throws Exception {
        admin.close();
        broker.close();
    }

    private static RawKafkaClient client() throws Exception {
        return new RawKafkaClient(broker.boundAddresses().get(0));
    }

    private static File dirOf(TopicPartition tp) {
        return broker.context().replicaManager().log(tp).dir().getParentFile();
    }

    private static AlterReplicaLogDir entry(String path, String topic, Integer... partitions) {
        AlterReplicaLogDir dir = new AlterReplicaLogDir().setPath(path);
        dir.topics().add(new AlterReplicaLogDirTopic().setName(topic).setPartitions(List.of(partitions)));
        return dir;
    }

    private static Map<TopicPartition, Short> codes(AlterReplicaLogDirsResponse r) {
        Map<TopicPartition, Short> out = new HashMap<>();
        for (AlterReplicaLogDirsResponseData.AlterReplicaLogDirTopicResult t : r.data().results()) {
            for (AlterReplicaLogDirsResponseData.AlterReplicaLogDirPartitionResult p : t.partitions()) {
                assertThat(out.put(new TopicPartition(t.topicName(), p.partitionIndex()), p.errorCode()))
                        .as("answered once: %s-%d", t.topicName(), p.partitionIndex()).isNull();
            }
        }
        return out;
    }

    @Test
    void everyVersionAnswersEachPartitionWithKafkasCode() throws Exception {
        TopicPartition p0 = new TopicPartition("moves", 0);
        TopicPartition p1 = new TopicPartition("moves", 1);
        String longName = "x".repeat(249); // a legal topic name whose future directory name passes 255 bytes
        try (RawKafkaClient c = client()) {
            for (short v = ApiKeys.ALTER_REPLICA_LOG_DIRS.oldestVersion(); v <= ApiKeys.ALTER_REPLICA_LOG_DIRS.latestVersion(); v++) {
                File target = dirs[v % 3];
                File other = dirs[(v + 1) % 3];
                AlterReplicaLogDirsRequestData data = new AlterReplicaLogDirsRequestData();
                data.dirs().add(entry(other.getAbsolutePath(), "moves", 1)); // named again below: the last one wins
                data.dirs().add(entry(target.getAbsolutePath(), "moves", 0, 1, 7, -1));
                data.dirs().add(entry(target.getAbsolutePath(), "missing", 0));
                data.dirs().add(entry(target.getAbsolutePath(), longName, 0));
                data.dirs().add(entry(new File(root, "elsewhere").getAbsolutePath(), "moves", 2));
                data.dirs().add(entry("d1", "moves", 2)); // relative: not found, as in Kafka
                AlterReplicaLogDirsResponse r = c.send(new AlterReplicaLogDirsRequest.Builder(data), v);
                Map<TopicPartition, Short> codes = codes(r);
                assertThat(codes).as("v%d", v).containsExactlyInAnyOrderEntriesOf(Map.of(
                        p0, Errors.NONE.code(),
                        p1, Errors.NONE.code(),
                        new TopicPartition("moves", 7), Errors.UNKNOWN_TOPIC_OR_PARTITION.code(),
                        new TopicPartition("moves", -1), Errors.UNKNOWN_TOPIC_OR_PARTITION.code(),
                        new TopicPartition("missing", 0), Errors.UNKNOWN_TOPIC_OR_PARTITION.code(),
                        new TopicPartition(longName, 0), Errors.INVALID_TOPIC_EXCEPTION.code(),
                        new TopicPartition("moves", 2), Errors.LOG_DIR_NOT_FOUND.code()));
                long deadline = System.nanoTime() + 10_000_000_000L;
                while ((!dirOf(p0).equals(target) || !dirOf(p1).equals(target)) && System.nanoTime() < deadline) {
                    Thread.sleep(10);
                }
                assertThat(dirOf(p0)).as("v%d", v).isEqualTo(target);
                assertThat(dirOf(p1)).as("v%d", v).isEqualTo(target);
            }
        }
    }

    @Test
    void describeLogDirsShowsTheFutureReplicaThenTheReplicaInItsNewDirectory() throws Exception {
        TopicPartition tp = new TopicPartition("moves", 2);
        File from = dirOf(tp);
        File to = from.equals(dirs[2]) ? dirs[1] : dirs[2];
        var producer = broker.context().replicaManager();
        byte[] value = new byte[900];
        for (int i = 0; i < 1200; i++) { // about 1 MiB: half a second at the configured 2 MiB/s
            producer.appendAsLeader(tp, org.apache.kafka.common.record.internal.MemoryRecords.withRecords(
                    org.apache.kafka.common.compress.Compression.NONE,
                    new org.apache.kafka.common.record.internal.SimpleRecord(value)));
        }
        long end = broker.context().replicaManager().log(tp).logEndOffset();
        try (RawKafkaClient c = client()) {
            AlterReplicaLogDirsRequestData data = new AlterReplicaLogDirsRequestData();
            data.dirs().add(entry(to.getAbsolutePath(), "moves", 2));
            assertThat(codes(c.send(new AlterReplicaLogDirsRequest.Builder(data),
                    ApiKeys.ALTER_REPLICA_LOG_DIRS.latestVersion()))).containsEntry(tp, Errors.NONE.code());

            DescribeLogDirsRequestData ask = new DescribeLogDirsRequestData();
            ask.topics().add(new DescribeLogDirsRequestData.DescribableLogDirTopic().setTopic("moves").setPartitions(List.of(2)));
            DescribeLogDirsResponse during = c.send(new DescribeLogDirsRequest.Builder(ask), ApiKeys.DESCRIBE_LOG_DIRS.latestVersion());
            var future = during.data().results().stream().filter(d -> d.logDir().equals(to.getAbsolutePath())).findFirst()
                    .orElseThrow().topics();
            assertThat(future).singleElement().satisfies(t -> assertThat(t.partitions()).singleElement().satisfies(p -> {
                assertThat(p.isFutureKey()).isTrue();
                assertThat(p.offsetLag()).isPositive().isLessThanOrEqualTo(end);
            }));
            var current = during.data().results().stream().filter(d -> d.logDir().equals(from.getAbsolutePath())).findFirst()
                    .orElseThrow().topics();
            assertThat(current).singleElement().satisfies(t -> assertThat(t.partitions()).singleElement()
                    .satisfies(p -> assertThat(p.isFutureKey()).isFalse()));

            long deadline = System.nanoTime() + 10_000_000_000L;
            while (!dirOf(tp).equals(to) && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            DescribeLogDirsResponse after = c.send(new DescribeLogDirsRequest.Builder(ask), ApiKeys.DESCRIBE_LOG_DIRS.latestVersion());
            for (var d : after.data().results()) {
                if (d.logDir().equals(to.getAbsolutePath())) {
                    assertThat(d.topics()).singleElement().satisfies(t -> assertThat(t.partitions()).singleElement()
                            .satisfies(p -> assertThat(p.isFutureKey()).isFalse()));
                } else {
                    assertThat(d.topics()).as(d.logDir()).isEmpty();
                }
            }
        }
        assertThat(broker.context().replicaManager().log(tp).logEndOffset()).isEqualTo(end);
    }
}
