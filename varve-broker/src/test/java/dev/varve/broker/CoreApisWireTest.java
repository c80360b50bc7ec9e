package dev.varve.broker;

import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.message.CreateTopicsRequestData;
import org.apache.kafka.common.message.InitProducerIdRequestData;
import org.apache.kafka.common.message.ListOffsetsRequestData;
import org.apache.kafka.common.message.ProduceRequestData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.requests.CreateTopicsRequest;
import org.apache.kafka.common.requests.CreateTopicsResponse;
import org.apache.kafka.common.requests.FetchRequest;
import org.apache.kafka.common.requests.FetchResponse;
import org.apache.kafka.common.requests.InitProducerIdRequest;
import org.apache.kafka.common.requests.InitProducerIdResponse;
import org.apache.kafka.common.requests.ListOffsetsRequest;
import org.apache.kafka.common.requests.ListOffsetsResponse;
import org.apache.kafka.common.requests.MetadataRequest;
import org.apache.kafka.common.requests.MetadataResponse;
import org.apache.kafka.common.requests.ProduceRequest;
import org.apache.kafka.common.requests.ProduceResponse;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every advertised version of the data-path APIs, on the wire: Kafka's generated serializers refuse
 * a field a version cannot carry, so a handler that sets one would close old clients' connections
 * (librdkafka speaks ListOffsets v2, for example).
 */
class CoreApisWireTest {
    @TempDir
    File dir;
    private Broker broker;
    private RawKafkaClient client;
    private Uuid topicId;

    @BeforeEach
    void start() throws Exception {
        broker = Broker.start(BrokerConfig.from(Map.of("listeners", "PLAINTEXT://127.0.0.1:0", "log.dirs", dir.getAbsolutePath())));
        topicId = broker.context().createTopic("t", 1, Map.of()).id();
        client = new RawKafkaClient(broker.boundAddresses().get(0));
    }

    @AfterEach
    void stop() throws Exception {
        client.close();
        broker.close();
    }

    @Test
    void metadataAtEveryVersion() throws Exception {
        // kafka-clients 4.4 can no longer build a v0 request; v1 is the oldest a client sends.
        for (short v = 1; v <= ApiKeys.METADATA.latestVersion(); v++) {
            MetadataResponse r = client.send(new MetadataRequest.Builder(List.of("t"), true, v, v), v);
            assertThat(r.topicMetadata()).as("v%d", v).singleElement()
                    .satisfies(t -> assertThat(t.error()).isEqualTo(Errors.NONE));
            assertThat(r.brokers()).as("v%d", v).hasSize(1);
        }
    }

    @Test
    void produceFetchAndListOffsetsAtEveryVersion() throws Exception {
        long expectedOffset = 0;
        for (short v = ApiKeys.PRODUCE.oldestVersion(); v <= ApiKeys.PRODUCE.latestVersion(); v++) {
            ProduceRequestData.TopicProduceData topic = new ProduceRequestData.TopicProduceData();
            if (v >= 13) {
                topic.setTopicId(topicId);
            } else {
                topic.setName("t");
            }
            topic.partitionData().add(new ProduceRequestData.PartitionProduceData().setIndex(0)
                    .setRecords(MemoryRecords.withRecords(Compression.NONE, new SimpleRecord(("v" + v).getBytes()))));
            ProduceRequestData data = new ProduceRequestData().setAcks((short) 1).setTimeoutMs(5000);
            data.topicData().add(topic);
            ProduceResponse r = client.send(new ProduceRequest.Builder(v, v, data), v);
            var pr = r.data().responses().iterator().next().partitionResponses().get(0);
            assertThat(Errors.forCode(pr.errorCode())).as("produce v%d", v).isEqualTo(Errors.NONE);
            assertThat(pr.baseOffset()).as("produce v%d", v).isEqualTo(expectedOffset++);
        }
        for (short v = ApiKeys.FETCH.oldestVersion(); v <= ApiKeys.FETCH.latestVersion(); v++) {
            Map<TopicPartition, FetchRequest.PartitionData> fetch = new LinkedHashMap<>();
            fetch.put(new TopicPartition("t", 0), new FetchRequest.PartitionData(v >= 13 ? topicId : Uuid.ZERO_UUID,
                    0, 0, 1 << 20, Optional.empty()));
            FetchRequest.Builder builder = FetchRequest.Builder.forConsumer(v, 0, 0, fetch);
            if (v >= 13) {
                builder.metadata(org.apache.kafka.common.requests.FetchMetadata.LEGACY);
            }
            FetchResponse r = client.send(builder, v);
            assertThat(Errors.forCode(r.data().errorCode())).as("fetch v%d", v).isEqualTo(Errors.NONE);
            var pd = r.data().responses().get(0).partitions().get(0);
            assertThat(Errors.forCode(pd.errorCode())).as("fetch v%d", v).isEqualTo(Errors.NONE);
            assertThat(pd.highWatermark()).as("fetch v%d", v).isEqualTo(expectedOffset);
            assertThat(org.apache.kafka.common.requests.FetchResponse.recordsOrFail(pd).sizeInBytes()).as("fetch v%d", v).isPositive();
        }
        for (short v = ApiKeys.LIST_OFFSETS.oldestVersion(); v <= ApiKeys.LIST_OFFSETS.latestVersion(); v++) {
            ListOffsetsRequestData.ListOffsetsTopic topic = new ListOffsetsRequestData.ListOffsetsTopic().setName("t");
            topic.partitions().add(new ListOffsetsRequestData.ListOffsetsPartition().setPartitionIndex(0)
                    .setTimestamp(ListOffsetsRequest.LATEST_TIMESTAMP));
            ListOffsetsRequest.Builder builder = ListOffsetsRequest.Builder.forConsumer(false, IsolationLevel.READ_UNCOMMITTED)
                    .setTargetTimes(List.of(topic));
            ListOffsetsResponse r = client.send(builder, v);
            var pr = r.data().topics().get(0).partitions().get(0);
            assertThat(Errors.forCode(pr.errorCode())).as("list offsets v%d", v).isEqualTo(Errors.NONE);
            if (v >= 1) {
                assertThat(pr.offset()).as("list offsets v%d", v).isEqualTo(expectedOffset);
            }
        }
    }

    @Test
    void acksAllIsRefusedWhenMinInsyncReplicasExceedsTheSingleNodesIsr() throws Exception {
        broker.context().createTopic("strict", 1, Map.of("min.insync.replicas", "2"));
        for (short acks : new short[]{-1, 1}) {
            ProduceRequestData.TopicProduceData topic = new ProduceRequestData.TopicProduceData().setName("strict");
            topic.partitionData().add(new ProduceRequestData.PartitionProduceData().setIndex(0)
                    .setRecords(MemoryRecords.withRecords(Compression.NONE, new SimpleRecord("x".getBytes()))));
            ProduceRequestData data = new ProduceRequestData().setAcks(acks).setTimeoutMs(5000);
            data.topicData().add(topic);
            ProduceResponse r = client.send(new ProduceRequest.Builder((short) 12, (short) 12, data), (short) 12);
            var pr = r.data().responses().iterator().next().partitionResponses().get(0);
            assertThat(Errors.forCode(pr.errorCode())).as("acks=%d", acks)
                    .isEqualTo(acks == -1 ? Errors.NOT_ENOUGH_REPLICAS : Errors.NONE);
        }
        // the refused acks=all batch appended nothing: only the acks=1 record is there
        assertThat(broker.context().replicaManager().log(new TopicPartition("strict", 0)).logEndOffset()).isEqualTo(1);
    }

    @Test
    void offsetForLeaderEpochAtEveryVersion() throws Exception {
        var log = broker.context().replicaManager().log(new TopicPartition("t", 0));
        for (int i = 0; i < 3; i++) {
            broker.context().replicaManager().appendAsLeader(new TopicPartition("t", 0),
                    MemoryRecords.withRecords(Compression.NONE, new SimpleRecord(("r" + i).getBytes())));
        }
        for (short v = ApiKeys.OFFSET_FOR_LEADER_EPOCH.oldestVersion(); v <= ApiKeys.OFFSET_FOR_LEADER_EPOCH.latestVersion(); v++) {
            var topics = new org.apache.kafka.common.message.OffsetForLeaderEpochRequestData.OffsetForLeaderTopicCollection();
            var t = new org.apache.kafka.common.message.OffsetForLeaderEpochRequestData.OffsetForLeaderTopic().setTopic("t");
            // the current epoch ends at the log end; a newer one is unknown to the log; a caller that
            // believes in a newer leader epoch than this broker's, or an older one, is refused
            t.partitions().add(new org.apache.kafka.common.message.OffsetForLeaderEpochRequestData.OffsetForLeaderPartition()
                    .setPartition(0).setLeaderEpoch(0).setCurrentLeaderEpoch(-1));
            t.partitions().add(new org.apache.kafka.common.message.OffsetForLeaderEpochRequestData.OffsetForLeaderPartition()
                    .setPartition(0).setLeaderEpoch(5).setCurrentLeaderEpoch(0));
            t.partitions().add(new org.apache.kafka.common.message.OffsetForLeaderEpochRequestData.OffsetForLeaderPartition()
                    .setPartition(0).setLeaderEpoch(0).setCurrentLeaderEpoch(3));
            t.partitions().add(new org.apache.kafka.common.message.OffsetForLeaderEpochRequestData.OffsetForLeaderPartition()
                    .setPartition(7).setLeaderEpoch(0).setCurrentLeaderEpoch(-1));
            topics.add(t);
            // kafka-clients' builders refuse v2 (librdkafka and older Java clients still send it)
            var data = new org.apache.kafka.common.message.OffsetForLeaderEpochRequestData().setTopics(topics)
                    .setReplicaId(v >= 3 ? -1 : -2);
            org.apache.kafka.common.requests.OffsetsForLeaderEpochResponse r = client.send(
                    new org.apache.kafka.common.requests.AbstractRequest.Builder<
                            org.apache.kafka.common.requests.OffsetsForLeaderEpochRequest>(ApiKeys.OFFSET_FOR_LEADER_EPOCH) {
                        @Override
                        public org.apache.kafka.common.requests.OffsetsForLeaderEpochRequest build(short version) {
                            return new org.apache.kafka.common.requests.OffsetsForLeaderEpochRequest(data, version);
                        }
                    }, v);
            var ps = r.data().topics().find("t").partitions();
            assertThat(ps).as("v%d", v).hasSize(4);
            assertThat(Errors.forCode(ps.get(0).errorCode())).isEqualTo(Errors.NONE);
            assertThat(ps.get(0).leaderEpoch()).isEqualTo(0);
            assertThat(ps.get(0).endOffset()).isEqualTo(log.logEndOffset()).isEqualTo(3);
            assertThat(Errors.forCode(ps.get(1).errorCode())).isEqualTo(Errors.NONE);
            assertThat(ps.get(1).leaderEpoch()).isEqualTo(-1);
            assertThat(ps.get(1).endOffset()).isEqualTo(-1);
            assertThat(Errors.forCode(ps.get(2).errorCode())).isEqualTo(Errors.UNKNOWN_LEADER_EPOCH);
            assertThat(Errors.forCode(ps.get(3).errorCode())).isEqualTo(Errors.UNKNOWN_TOPIC_OR_PARTITION);
        }
    }

    @Test
    void createTopicsAndInitProducerIdAtEveryVersion() throws Exception {
        for (short v = ApiKeys.CREATE_TOPICS.oldestVersion(); v <= ApiKeys.CREATE_TOPICS.latestVersion(); v++) {
            CreateTopicsRequestData data = new CreateTopicsRequestData().setTimeoutMs(5000);
            data.topics().add(new CreateTopicsRequestData.CreatableTopic().setName("created-" + v)
                    .setNumPartitions(2).setReplicationFactor((short) 1));
            CreateTopicsResponse r = client.send(new CreateTopicsRequest.Builder(data), v);
            assertThat(Errors.forCode(r.data().topics().find("created-" + v).errorCode())).as("create topics v%d", v)
                    .isEqualTo(Errors.NONE);
            assertThat(broker.context().topics().get("created-" + v)).as("v%d", v).isPresent();
        }
        for (short v = ApiKeys.INIT_PRODUCER_ID.oldestVersion(); v <= ApiKeys.INIT_PRODUCER_ID.latestVersion(); v++) {
            InitProducerIdResponse r = client.send(new InitProducerIdRequest.Builder(
                    new InitProducerIdRequestData().setTransactionalId(null).setTransactionTimeoutMs(60000)), v);
            assertThat(r.error()).as("init producer id v%d", v).isEqualTo(Errors.NONE);
            assertThat(r.data().producerId()).as("v%d", v).isNotNegative();
        }
    }
}
