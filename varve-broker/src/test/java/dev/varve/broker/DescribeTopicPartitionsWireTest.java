package dev.varve.broker;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeTopicsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.message.DescribeTopicPartitionsRequestData;
import org.apache.kafka.common.message.DescribeTopicPartitionsRequestData.TopicRequest;
import org.apache.kafka.common.message.DescribeTopicPartitionsResponseData;
import org.apache.kafka.common.message.DescribeTopicPartitionsResponseData.DescribeTopicPartitionsResponsePartition;
import org.apache.kafka.common.message.DescribeTopicPartitionsResponseData.DescribeTopicPartitionsResponseTopic;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.DescribeTopicPartitionsRequest;
import org.apache.kafka.common.requests.DescribeTopicPartitionsResponse;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * DescribeTopicPartitions (KIP-966), what Kafka 4's Admin client sends for describeTopics by name:
 * Kafka's paging by cursor, its errors for unknown, invalid and cursor-less names, and the broker's
 * {@code max.request.partition.size.limit} capping the client's page size.
 */
class DescribeTopicPartitionsWireTest {
    @TempDir
    static File dir;
    static Broker broker;
    static Admin admin;

    @BeforeAll
    static void start() throws Exception {
        broker = Broker.start(BrokerConfig.from(Map.of(
                "listeners", "PLAINTEXT://127.0.0.1:0",
                "log.dirs", dir.getAbsolutePath(),
                "max.request.partition.size.limit", "7")));
        admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrapServers()));
        admin.createTopics(List.of(new NewTopic("dtp-a", 5, (short) 1), new NewTopic("dtp-b", 2, (short) 1),
                new NewTopic("dtp-wide", 20, (short) 1))).all().get(30, TimeUnit.SECONDS);
    }

    @AfterAll
    static void stop() throws Exception {
        admin.close();
        broker.close();
    }

    private static DescribeTopicPartitionsResponseData send(DescribeTopicPartitionsRequestData data) throws Exception {
        try (RawKafkaClient c = new RawKafkaClient(broker.boundAddresses().get(0))) {
            DescribeTopicPartitionsResponse r = c.send(new DescribeTopicPartitionsRequest.Builder(data), (short) 0);
            return r.data();
        }
    }

    private static DescribeTopicPartitionsRequestData request(int limit, String... topics) {
        List<TopicRequest> ts = new ArrayList<>();
        for (String t : topics) {
            ts.add(new TopicRequest().setName(t));
        }
        return new DescribeTopicPartitionsRequestData().setTopics(ts).setResponsePartitionLimit(limit);
    }

    private static List<String> page(DescribeTopicPartitionsResponseData r) {
        List<String> out = new ArrayList<>();
        for (DescribeTopicPartitionsResponseTopic t : r.topics()) {
            if (t.errorCode() != Errors.NONE.code()) {
                out.add(t.name() + ":" + Errors.forCode(t.errorCode()));
                continue;
            }
            for (DescribeTopicPartitionsResponsePartition p : t.partitions()) {
                out.add(t.name() + "-" + p.partitionIndex());
            }
        }
        return out;
    }

    @Test
    void pagesFollowTheCursorInNameOrderWithKafkasErrors() throws Exception {
        // asked out of order, with a topic that does not exist and a name no topic can have
        DescribeTopicPartitionsResponseData first = send(request(3, "missing", "dtp-b", "bad name!", "dtp-a"));
        assertThat(page(first)).containsExactly("bad name!:INVALID_TOPIC_EXCEPTION", "dtp-a-0", "dtp-a-1", "dtp-a-2");
        assertThat(first.nextCursor().topicName()).isEqualTo("dtp-a");
        assertThat(first.nextCursor().partitionIndex()).isEqualTo(3);
        DescribeTopicPartitionsResponseTopic a = first.topics().find("dtp-a");
        assertThat(a.topicId()).isEqualTo(broker.context().topics().get("dtp-a").orElseThrow().id());
        assertThat(a.partitions().get(0).leaderId()).isEqualTo(broker.context().nodeId());
        assertThat(a.partitions().get(0).isrNodes()).containsExactly(broker.context().nodeId());

        DescribeTopicPartitionsRequestData second = request(3, "missing", "dtp-b", "bad name!", "dtp-a");
        second.setCursor(new DescribeTopicPartitionsRequestData.Cursor().setTopicName("dtp-a").setPartitionIndex(3));
        DescribeTopicPartitionsResponseData r2 = send(second);
        assertThat(page(r2)).containsExactly("dtp-a-3", "dtp-a-4", "dtp-b-0");
        assertThat(r2.nextCursor().topicName()).isEqualTo("dtp-b");
        assertThat(r2.nextCursor().partitionIndex()).isEqualTo(1);

        DescribeTopicPartitionsRequestData third = request(3, "missing", "dtp-b", "bad name!", "dtp-a");
        third.setCursor(new DescribeTopicPartitionsRequestData.Cursor().setTopicName("dtp-b").setPartitionIndex(1));
        DescribeTopicPartitionsResponseData r3 = send(third);
        assertThat(page(r3)).containsExactly("dtp-b-1", "missing:UNKNOWN_TOPIC_OR_PARTITION");
        assertThat(r3.nextCursor()).isNull();
    }

    @Test
    void aFullPageEndsBeforeTheNextTopicAndTheBrokersLimitCapsTheClients() throws Exception {
        DescribeTopicPartitionsResponseData r = send(request(5, "dtp-a", "dtp-b"));
        assertThat(page(r)).containsExactly("dtp-a-0", "dtp-a-1", "dtp-a-2", "dtp-a-3", "dtp-a-4");
        assertThat(r.nextCursor().topicName()).isEqualTo("dtp-b");
        assertThat(r.nextCursor().partitionIndex()).isZero();

        // the client asks for 2,000 per page; the broker's max.request.partition.size.limit is 7
        DescribeTopicPartitionsResponseData capped = send(request(2000, "dtp-wide"));
        assertThat(page(capped)).hasSize(7);
        assertThat(capped.nextCursor().partitionIndex()).isEqualTo(7);
    }

    @Test
    void noTopicsMeansEveryTopicPagedTheSameWay() throws Exception {
        DescribeTopicPartitionsRequestData all = new DescribeTopicPartitionsRequestData().setResponsePartitionLimit(2000);
        DescribeTopicPartitionsResponseData r = send(all);
        List<String> names = new ArrayList<>();
        for (DescribeTopicPartitionsResponseTopic t : r.topics()) {
            names.add(t.name());
        }
        // name order; the broker's 7-partition page is full after dtp-a and dtp-b, the next starts at dtp-wide
        assertThat(names).containsExactly("dtp-a", "dtp-b");
        assertThat(r.nextCursor().topicName()).isEqualTo("dtp-wide");
        all.setCursor(new DescribeTopicPartitionsRequestData.Cursor().setTopicName("dtp-wide").setPartitionIndex(0));
        assertThat(page(send(all))).hasSize(7).startsWith("dtp-wide-0");
    }

    @Test
    void aCursorOnATopicTheRequestDoesNotNameIsAnInvalidRequest() throws Exception {
        DescribeTopicPartitionsRequestData bad = request(10, "dtp-a");
        bad.setCursor(new DescribeTopicPartitionsRequestData.Cursor().setTopicName("dtp-b").setPartitionIndex(0));
        DescribeTopicPartitionsResponseData r = send(bad);
        assertThat(r.topics()).isNotEmpty().allSatisfy(t -> assertThat(Errors.forCode(t.errorCode())).isEqualTo(Errors.INVALID_REQUEST));
    }

    @Test
    void theStockAdminClientPagesThroughEveryPartition() throws Exception {
        // pages of 3 (the broker caps at 7): dtp-wide takes seven requests, the others share pages
        Map<String, KafkaFuture<TopicDescription>> d = admin.describeTopics(List.of("dtp-wide", "dtp-a", "dtp-b", "nope"),
                new DescribeTopicsOptions().partitionSizeLimitPerResponse(3)).topicNameValues();
        TopicDescription wide = d.get("dtp-wide").get(30, TimeUnit.SECONDS);
        assertThat(wide.partitions()).extracting(TopicPartitionInfo::partition)
                .containsExactlyElementsOf(java.util.stream.IntStream.range(0, 20).boxed().toList());
        assertThat(wide.partitions()).allSatisfy(p -> assertThat(p.leader().id()).isEqualTo(broker.context().nodeId()));
        assertThat(d.get("dtp-a").get(30, TimeUnit.SECONDS).partitions()).hasSize(5);
        assertThat(d.get("dtp-b").get(30, TimeUnit.SECONDS).partitions()).hasSize(2);
        assertThat(wide.topicId()).isEqualTo(broker.context().topics().get("dtp-wide").orElseThrow().id());
        assertThatThrownBy(() -> d.get("nope").get(30, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
                .hasCauseInstanceOf(UnknownTopicOrPartitionException.class);
    }
}
