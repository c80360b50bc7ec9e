package dev.varve.tests;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.ListOffsetsRequestData;
import org.apache.kafka.common.message.ListOffsetsResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.FetchRequest;
import org.apache.kafka.common.requests.FetchResponse;
import org.apache.kafka.common.requests.ListOffsetsRequest;
import org.apache.kafka.common.requests.ListOffsetsResponse;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * CVE-2018-1288 class: a client that fetches from a leader as if it were a follower (replica id and
 * even the follower's real broker epoch) must not make the leader believe the follower has records it
 * has not: that would move the high watermark and acknowledge acks=all writes no follower holds. The
 * nodes run on hosts of their own (network namespaces), the client on another address. (With
 * {@code replica.fetch.verify.source=false} the same fetch is answered and the HW jumps from 10 to 15:
 * the attack is real.)
 */
class FollowerImpersonationTest {
    @TempDir
    Path dir;

    @Test
    @Timeout(value = 5, unit = TimeUnit.MINUTES)
    void aClientPosingAsAFollowerCannotMoveTheHighWatermark() throws Exception {
        assumeTrue(dev.varve.storage.testing.Capabilities.require(VirtualNetwork.available(),
                "network namespaces (needs root)"), "needs root and network namespaces");
        try (VirtualNetwork net = VirtualNetwork.create(3);
             // a paused follower stays registered and in the ISR for the whole test
             TestCluster cluster = TestCluster.start(dir, 3, 0, Map.of("replica.lag.time.max.ms", "60000",
                     "broker.session.timeout.ms", "60000"), net);
             Admin admin = cluster.admin()) {
            admin.createTopics(List.of(new NewTopic("imp", 1, (short) 3).configs(Map.of("min.insync.replicas", "2"))))
                    .all().get(60, TimeUnit.SECONDS);
            TopicPartition tp = new TopicPartition("imp", 0);
            try (KafkaProducer<String, String> p = cluster.producer(Map.of())) {
                for (int i = 0; i < 10; i++) {
                    p.send(new ProducerRecord<>("imp", 0, null, "committed-" + i)).get(60, TimeUnit.SECONDS);
                }
            }
            TopicPartitionInfo info = TestCluster.describe(admin, "imp").get(0);
            int leader = TestCluster.leaderId(info);
            int victim = info.replicas().stream().map(org.apache.kafka.common.Node::id).filter(id -> id != leader)
                    .findFirst().orElseThrow();
            await().atMost(Duration.ofSeconds(30)).until(() -> TestCluster.describe(admin, "imp").get(0).isr().size() == 3);
            long victimEpoch = brokerEpoch(cluster.node(victim).log(), victim);
            Uuid topicId = admin.describeTopics(List.of("imp")).allTopicNames().get().get("imp").topicId();
            String leaderAddress = cluster.node(leader).bootstrap();

            cluster.node(victim).pause();
            try {
                try (KafkaProducer<String, String> p = cluster.producer(Map.of(ProducerConfig.ACKS_CONFIG, "1",
                        ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, false, ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, leaderAddress))) {
                    for (int i = 0; i < 5; i++) {
                        p.send(new ProducerRecord<>("imp", 0, null, "pending-" + i)).get(60, TimeUnit.SECONDS);
                    }
                }
                assertThat(highWatermark(leaderAddress, tp)).as("the paused follower %d holds the HW back", victim)
                        .isEqualTo(10);

                Map<TopicPartition, FetchRequest.PartitionData> fetch = new LinkedHashMap<>();
                fetch.put(tp, new FetchRequest.PartitionData(topicId, 15, 0, 1 << 20, Optional.empty(), Optional.empty()));
                FetchRequest request = FetchRequest.Builder.forReplica(ApiKeys.FETCH.latestVersion(), victim, victimEpoch,
                        0, 1, fetch).build();
                try (RawKafkaClient rogue = new RawKafkaClient(leaderAddress)) {
                    FetchResponse response = rogue.send(request);
                    assertThat(response.error()).isEqualTo(Errors.CLUSTER_AUTHORIZATION_FAILED);
                }
                assertThat(highWatermark(leaderAddress, tp)).as("the impersonation moved nothing").isEqualTo(10);
            } finally {
                cluster.node(victim).resume();
            }
            await().atMost(Duration.ofSeconds(30)).until(() -> highWatermark(leaderAddress, tp) == 15);
            assertThat(cluster.readPartition("imp", 0)).hasSize(15);
        }
    }

    /** ListOffsets LATEST from the leader itself (a consumer's view: the high watermark); no other node is asked. */
    private static long highWatermark(String leader, TopicPartition tp) throws Exception {
        ListOffsetsRequestData.ListOffsetsTopic t = new ListOffsetsRequestData.ListOffsetsTopic().setName(tp.topic());
        t.partitions().add(new ListOffsetsRequestData.ListOffsetsPartition().setPartitionIndex(tp.partition())
                .setTimestamp(ListOffsetsRequest.LATEST_TIMESTAMP));
        try (RawKafkaClient client = new RawKafkaClient(leader)) {
            ListOffsetsResponse r = client.send(ListOffsetsRequest.Builder.forConsumer(false, IsolationLevel.READ_UNCOMMITTED)
                    .setTargetTimes(List.of(t)).build());
            ListOffsetsResponseData.ListOffsetsPartitionResponse p = r.data().topics().get(0).partitions().get(0);
            assertThat(Errors.forCode(p.errorCode())).isEqualTo(Errors.NONE);
            return p.offset();
        }
    }

    /** The broker epoch the node logged at registration: the attacker here knows even that. */
    private static long brokerEpoch(String log, int id) {
        Matcher m = Pattern.compile("Registered broker " + id + " with broker epoch (\\d+)").matcher(log);
        long epoch = -1;
        while (m.find()) {
            epoch = Long.parseLong(m.group(1));
        }
        assertThat(epoch).as("registration in the log").isGreaterThanOrEqualTo(0);
        return epoch;
    }
}
