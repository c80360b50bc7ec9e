package dev.varve.broker;

import org.apache.kafka.common.message.ApiVersionsRequestData;
import org.apache.kafka.common.message.ApiVersionsResponseData;
import org.apache.kafka.common.message.ProduceRequestData;
import org.apache.kafka.common.message.ProduceResponseData;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.requests.RequestHeader;
import org.apache.kafka.common.requests.ResponseHeader;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.File;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Malformed and hostile frames on a raw socket: the broker answers with a Kafka error or closes that
 * connection, never allocates by an untrusted size, never appends a partial request, and keeps
 * serving other clients.
 */
class BadInputTest {
    @TempDir
    File dir;
    private Broker broker;
    private InetSocketAddress address;

    @BeforeEach
    void start() throws Exception {
        broker = Broker.start(BrokerConfig.from(Map.of(
                "listeners", "PLAINTEXT://127.0.0.1:0",
                "log.dirs", dir.getAbsolutePath(),
                "socket.request.max.bytes", "1048576")));
        address = broker.boundAddresses().get(0);
        broker.context().createTopic("t", 1, Map.of());
    }

    @AfterEach
    void stop() throws Exception {
        broker.close();
    }

    private Socket connect() throws IOException {
        Socket s = new Socket(address.getAddress(), address.getPort());
        s.setSoTimeout(10_000);
        return s;
    }

    private static byte[] frame(RequestHeader header, Message body) {
        ObjectSerializationCache cache = new ObjectSerializationCache();
        int headerSize = header.data().size(cache, header.headerVersion());
        int bodySize = body.size(cache, header.apiVersion());
        ByteBuffer buf = ByteBuffer.allocate(4 + headerSize + bodySize);
        buf.putInt(headerSize + bodySize);
        ByteBufferAccessor accessor = new ByteBufferAccessor(buf);
        header.data().write(accessor, cache, header.headerVersion());
        body.write(accessor, cache, header.apiVersion());
        return buf.array();
    }

    private static ByteBuffer roundTrip(Socket s, byte[] frame) throws IOException {
        DataOutputStream out = new DataOutputStream(s.getOutputStream());
        out.write(frame);
        out.flush();
        DataInputStream in = new DataInputStream(s.getInputStream());
        int size = in.readInt();
        byte[] body = new byte[size];
        in.readFully(body);
        return ByteBuffer.wrap(body);
    }

    private static boolean closedByPeer(Socket s) {
        try {
            int b = s.getInputStream().read();
            return b == -1;
        } catch (SocketException e) {
            return true; // reset
        } catch (IOException e) {
            return false;
        }
    }

    /** Bytes allocated so far by every thread of this JVM (the broker's event loops and request threads among them). */
    private static long allocatedByAllThreads() {
        com.sun.management.ThreadMXBean threads =
                (com.sun.management.ThreadMXBean) java.lang.management.ManagementFactory.getThreadMXBean();
        threads.setThreadAllocatedMemoryEnabled(true);
        long total = 0;
        for (long a : threads.getThreadAllocatedBytes(threads.getAllThreadIds())) {
            total += Math.max(a, 0);
        }
        return total;
    }

    private void assertStillServing() throws IOException {
        try (Socket s = connect()) {
            RequestHeader h = new RequestHeader(ApiKeys.API_VERSIONS, (short) 3, "probe", 7);
            ByteBuffer resp = roundTrip(s, frame(h, new ApiVersionsRequestData().setClientSoftwareName("t").setClientSoftwareVersion("1")));
            assertThat(resp.getInt()).isEqualTo(7);
        }
    }

    @Test
    void aFrameLargerThanTheLimitClosesTheConnectionWithoutAllocating() throws IOException {
        long before = allocatedByAllThreads();
        try (Socket s = connect()) {
            DataOutputStream out = new DataOutputStream(s.getOutputStream());
            out.writeInt(Integer.MAX_VALUE); // claims 2 GiB; only 4 bytes follow
            out.writeInt(0);
            out.flush();
            assertThat(closedByPeer(s)).isTrue();
        }
        // every thread's allocations together (the broker's background work included) stay far below the claim
        assertThat(allocatedByAllThreads() - before).isLessThan(16L << 20);
        assertStillServing();
    }

    @Test
    void aFrameThatWouldCostTooMuchToDecodeClosesTheConnectionWithinItsBudget() throws IOException {
        // DescribeGroups v5 naming 1,000,000 empty groups: one byte each on the wire, ~56 on the heap
        int n = 1_000_000;
        RequestHeader h = new RequestHeader(ApiKeys.DESCRIBE_GROUPS, (short) 5, "dense", 3);
        ObjectSerializationCache cache = new ObjectSerializationCache();
        int headerSize = h.data().size(cache, h.headerVersion());
        ByteBuffer buf = ByteBuffer.allocate(4 + headerSize + n + 8);
        buf.putInt(0);
        h.data().write(new ByteBufferAccessor(buf), cache, h.headerVersion());
        org.apache.kafka.common.utils.internals.ByteUtils.writeUnsignedVarint(n + 1, buf);
        for (int i = 0; i < n; i++) {
            buf.put((byte) 1);
        }
        buf.put((byte) 0).put((byte) 0);
        buf.putInt(0, buf.position() - 4);
        long before = allocatedByAllThreads();
        try (Socket s = connect()) {
            s.getOutputStream().write(buf.array(), 0, buf.position());
            s.getOutputStream().flush();
            assertThat(closedByPeer(s)).isTrue();
        }
        // the frame and its copy, then at most the decode budget (16 per byte + 1 MiB, plus a presized
        // list's 8 per byte past the last check), not 56 per byte
        long frame = buf.position();
        assertThat(allocatedByAllThreads() - before).isLessThan(2 * frame + 24 * frame + (8L << 20));
        assertStillServing();
    }

    @Test
    void aNegativeFrameSizeClosesTheConnection() throws IOException {
        try (Socket s = connect()) {
            DataOutputStream out = new DataOutputStream(s.getOutputStream());
            out.writeInt(-5);
            out.flush();
            assertThat(closedByPeer(s)).isTrue();
        }
        assertStillServing();
    }

    @Test
    void garbageHeaderAndUnknownApiKeyCloseTheConnection() throws IOException {
        try (Socket s = connect()) {
            DataOutputStream out = new DataOutputStream(s.getOutputStream());
            out.writeInt(6);
            out.writeShort(999); // no such API key
            out.writeShort(0);
            out.writeShort(1);
            out.flush();
            assertThat(closedByPeer(s)).isTrue();
        }
        try (Socket s = connect()) {
            DataOutputStream out = new DataOutputStream(s.getOutputStream());
            out.writeInt(3);
            out.write(new byte[]{1, 2, 3});
            out.flush();
            assertThat(closedByPeer(s)).isTrue();
        }
        assertStillServing();
    }

    @Test
    void unknownApiVersionsVersionGetsUnsupportedVersionWithTheRanges() throws IOException {
        try (Socket s = connect()) {
            ByteBuffer buf = ByteBuffer.allocate(4 + 2 + 2 + 4 + 2 + 1);
            buf.putInt(2 + 2 + 4 + 2 + 1);
            buf.putShort(ApiKeys.API_VERSIONS.id);
            buf.putShort((short) 99);
            buf.putInt(42);
            buf.putShort((short) -1); // null client id
            buf.put((byte) 0); // empty tagged fields
            ByteBuffer resp = roundTrip(s, buf.array());
            assertThat(resp.getInt()).isEqualTo(42);
            ApiVersionsResponseData data = new ApiVersionsResponseData(new ByteBufferAccessor(resp), (short) 0);
            assertThat(Errors.forCode(data.errorCode())).isEqualTo(Errors.UNSUPPORTED_VERSION);
            assertThat(data.apiKeys().find(ApiKeys.PRODUCE.id)).isNotNull();
        }
    }

    @Test
    void aCorruptBatchInAProduceRequestIsRefusedAndNothingIsAppended() throws IOException {
        MemoryRecords records = MemoryRecords.withRecords(Compression.NONE, new SimpleRecord("a".getBytes()), new SimpleRecord("b".getBytes()));
        ByteBuffer bytes = records.buffer();
        bytes.put(bytes.limit() - 1, (byte) (bytes.get(bytes.limit() - 1) ^ 0x3c)); // breaks the CRC
        ProduceRequestData body = new ProduceRequestData().setAcks((short) 1).setTimeoutMs(5000);
        ProduceRequestData.TopicProduceData topic = new ProduceRequestData.TopicProduceData().setName("t");
        topic.partitionData().add(new ProduceRequestData.PartitionProduceData().setIndex(0)
                .setRecords(MemoryRecords.readableRecords(bytes)));
        body.topicData().add(topic);
        short version = 11;
        try (Socket s = connect()) {
            ByteBuffer resp = roundTrip(s, frame(new RequestHeader(ApiKeys.PRODUCE, version, "bad", 1), body));
            ResponseHeader.parse(resp, ApiKeys.PRODUCE.responseHeaderVersion(version));
            ProduceResponseData data = new ProduceResponseData(new ByteBufferAccessor(resp), version);
            ProduceResponseData.PartitionProduceResponse pr = data.responses().iterator().next().partitionResponses().get(0);
            assertThat(Errors.forCode(pr.errorCode())).isEqualTo(Errors.CORRUPT_MESSAGE);
        }
        assertThat(broker.context().replicaManager().log(new org.apache.kafka.common.TopicPartition("t", 0)).logEndOffset()).isZero();
        assertStillServing();
    }

    @Test
    void aProduceBodyWithALyingArrayCountClosesTheConnection() throws IOException {
        // A Produce v11 header, then a body whose topic array claims a million entries in 8 bytes.
        RequestHeader h = new RequestHeader(ApiKeys.PRODUCE, (short) 11, "liar", 3);
        ObjectSerializationCache cache = new ObjectSerializationCache();
        int headerSize = h.data().size(cache, h.headerVersion());
        ByteBuffer buf = ByteBuffer.allocate(4 + headerSize + 16);
        buf.putInt(headerSize + 16);
        h.data().write(new ByteBufferAccessor(buf), cache, h.headerVersion());
        buf.put((byte) 0); // transactional id: null compact string
        buf.putShort((short) 1); // acks
        buf.putInt(1000); // timeout
        buf.put(new byte[]{(byte) 0xc0, (byte) 0x84, 0x3d}); // varint 1,000,001 topics
        while (buf.hasRemaining()) {
            buf.put((byte) 0);
        }
        try (Socket s = connect()) {
            DataOutputStream out = new DataOutputStream(s.getOutputStream());
            out.write(buf.array());
            out.flush();
            assertThat(closedByPeer(s)).isTrue();
        }
        assertStillServing();
    }

    @Test
    void invalidRequiredAcksIsRefusedPerPartition() throws IOException {
        ProduceRequestData body = new ProduceRequestData().setAcks((short) 2).setTimeoutMs(5000);
        ProduceRequestData.TopicProduceData topic = new ProduceRequestData.TopicProduceData().setName("t");
        topic.partitionData().add(new ProduceRequestData.PartitionProduceData().setIndex(0)
                .setRecords(MemoryRecords.withRecords(Compression.NONE, new SimpleRecord("x".getBytes()))));
        body.topicData().add(topic);
        short version = 11;
        try (Socket s = connect()) {
            ByteBuffer resp = roundTrip(s, frame(new RequestHeader(ApiKeys.PRODUCE, version, "acks", 5), body));
            ResponseHeader.parse(resp, ApiKeys.PRODUCE.responseHeaderVersion(version));
            ProduceResponseData data = new ProduceResponseData(new ByteBufferAccessor(resp), version);
            assertThat(Errors.forCode(data.responses().iterator().next().partitionResponses().get(0).errorCode()))
                    .isEqualTo(Errors.INVALID_REQUIRED_ACKS);
        }
        assertThat(broker.context().replicaManager().log(new org.apache.kafka.common.TopicPartition("t", 0)).logEndOffset()).isZero();
    }

    @Test
    void manyPipelinedRequestsAreAnsweredInOrder() throws IOException {
        try (Socket s = connect()) {
            DataOutputStream out = new DataOutputStream(s.getOutputStream());
            for (int i = 0; i < 200; i++) {
                out.write(frame(new RequestHeader(ApiKeys.API_VERSIONS, (short) 3, "pipe", i),
                        new ApiVersionsRequestData().setClientSoftwareName("t").setClientSoftwareVersion("1")));
            }
            out.flush();
            DataInputStream in = new DataInputStream(s.getInputStream());
            for (int i = 0; i < 200; i++) {
                byte[] body = new byte[in.readInt()];
                in.readFully(body);
                assertThat(ByteBuffer.wrap(body).getInt()).isEqualTo(i);
            }
        }
    }

    @Test
    void aClientPosingAsAFollowerReplicaIsRefusedAndReadsNothing() throws Exception {
        broker.context().replicaManager().appendAsLeader(new org.apache.kafka.common.TopicPartition("t", 0),
                MemoryRecords.withRecords(Compression.NONE, new SimpleRecord("secret".getBytes())));
        Uuid id = broker.context().topics().get("t").orElseThrow().id();
        try (RawKafkaClient c = new RawKafkaClient(address)) {
            for (short v : new short[]{11, 14, ApiKeys.FETCH.latestVersion()}) {
                Map<org.apache.kafka.common.TopicPartition, org.apache.kafka.common.requests.FetchRequest.PartitionData> fetch =
                        Map.of(new org.apache.kafka.common.TopicPartition("t", 0),
                                new org.apache.kafka.common.requests.FetchRequest.PartitionData(
                                        v >= 13 ? id : Uuid.ZERO_UUID, 0, 0, 1 << 20, java.util.Optional.empty()));
                var builder = org.apache.kafka.common.requests.FetchRequest.Builder.forReplica(v, 7, 1L, 0, 0, fetch);
                if (v >= 13) {
                    builder.metadata(org.apache.kafka.common.requests.FetchMetadata.LEGACY);
                }
                org.apache.kafka.common.requests.FetchResponse r = c.send(builder, v);
                var pd = r.data().responses().get(0).partitions().get(0);
                assertThat(Errors.forCode(pd.errorCode())).as("v%d", v).isEqualTo(Errors.NOT_LEADER_OR_FOLLOWER);
                assertThat(org.apache.kafka.common.requests.FetchResponse.recordsOrFail(pd).sizeInBytes()).isZero();
            }
        }
    }

    // ---- regressions found by ProtocolFuzzProperties

    @Test
    void createTopicsRefusesMoreThanTenThousandNewPartitionsPerRequestWithoutCreatingAnything() throws IOException {
        java.io.File[] dirsBefore = dir.listFiles();
        for (boolean validateOnly : new boolean[]{true, false}) {
            org.apache.kafka.common.message.CreateTopicsRequestData body = new org.apache.kafka.common.message.CreateTopicsRequestData()
                    .setTimeoutMs(5000).setValidateOnly(validateOnly);
            body.topics().add(new org.apache.kafka.common.message.CreateTopicsRequestData.CreatableTopic()
                    .setName("huge").setNumPartitions(Integer.MAX_VALUE).setReplicationFactor((short) 1));
            body.topics().add(new org.apache.kafka.common.message.CreateTopicsRequestData.CreatableTopic()
                    .setName("t").setNumPartitions(Integer.MAX_VALUE).setReplicationFactor((short) 1));
            short v = ApiKeys.CREATE_TOPICS.latestVersion();
            try (Socket s = connect()) {
                ByteBuffer resp = roundTrip(s, frame(new RequestHeader(ApiKeys.CREATE_TOPICS, v, "c", 8), body));
                ResponseHeader.parse(resp, ApiKeys.CREATE_TOPICS.responseHeaderVersion(v));
                var data = new org.apache.kafka.common.message.CreateTopicsResponseData(new ByteBufferAccessor(resp), v);
                assertThat(Errors.forCode(data.topics().find("huge").errorCode())).isEqualTo(Errors.INVALID_PARTITIONS);
                // the topic's own errors come first
                assertThat(Errors.forCode(data.topics().find("t").errorCode())).isEqualTo(Errors.TOPIC_ALREADY_EXISTS);
            }
        }
        // the budget is per request: 6,000 and 6,000 more partitions are too many together
        org.apache.kafka.common.message.CreateTopicsRequestData body = new org.apache.kafka.common.message.CreateTopicsRequestData()
                .setTimeoutMs(5000).setValidateOnly(true);
        for (String name : new String[]{"a", "b"}) {
            body.topics().add(new org.apache.kafka.common.message.CreateTopicsRequestData.CreatableTopic()
                    .setName(name).setNumPartitions(6000).setReplicationFactor((short) 1));
        }
        short v = ApiKeys.CREATE_TOPICS.latestVersion();
        try (Socket s = connect()) {
            ByteBuffer resp = roundTrip(s, frame(new RequestHeader(ApiKeys.CREATE_TOPICS, v, "c", 9), body));
            ResponseHeader.parse(resp, ApiKeys.CREATE_TOPICS.responseHeaderVersion(v));
            var data = new org.apache.kafka.common.message.CreateTopicsResponseData(new ByteBufferAccessor(resp), v);
            assertThat(Errors.forCode(data.topics().find("a").errorCode())).isEqualTo(Errors.NONE);
            assertThat(Errors.forCode(data.topics().find("b").errorCode())).isEqualTo(Errors.INVALID_PARTITIONS);
        }
        assertThat(broker.context().topics().get("huge")).isEmpty();
        assertThat(dir.listFiles()).hasSameSizeAs(dirsBefore);
        assertStillServing();
    }

    private static byte[] produceFrame(String transactionalId, short acks, MemoryRecords records, int correlationId) {
        ProduceRequestData body = new ProduceRequestData().setAcks(acks).setTimeoutMs(5000).setTransactionalId(transactionalId);
        ProduceRequestData.TopicProduceData topic = new ProduceRequestData.TopicProduceData().setName("t");
        topic.partitionData().add(new ProduceRequestData.PartitionProduceData().setIndex(0).setRecords(records));
        body.topicData().add(topic);
        return frame(new RequestHeader(ApiKeys.PRODUCE, (short) 11, "p", correlationId), body);
    }

    @Test
    void aTransactionalProduceWithNullRecordsIsRefusedPerPartition() throws IOException {
        // once: the handler failed the whole request and building Kafka's error response threw a
        // NullPointerException on the null records, which closed the connection
        try (Socket s = connect()) {
            ByteBuffer resp = roundTrip(s, produceFrame("tx", (short) 1, null, 4));
            ResponseHeader.parse(resp, ApiKeys.PRODUCE.responseHeaderVersion((short) 11));
            ProduceResponseData data = new ProduceResponseData(new ByteBufferAccessor(resp), (short) 11);
            assertThat(Errors.forCode(data.responses().iterator().next().partitionResponses().get(0).errorCode()))
                    .as("Kafka's answer to records missing: InvalidRecordException").isEqualTo(Errors.CORRUPT_MESSAGE);
            assertThat(broker.context().replicaManager().log(new org.apache.kafka.common.TopicPartition("t", 0)).logEndOffset())
                    .isZero();
            // the connection is still usable
            RequestHeader h = new RequestHeader(ApiKeys.API_VERSIONS, (short) 3, "probe", 5);
            assertThat(roundTrip(s, frame(h, new ApiVersionsRequestData().setClientSoftwareName("t")
                    .setClientSoftwareVersion("1"))).getInt()).isEqualTo(5);
        }
    }

    @Test
    void anAcksZeroProduceThatFailsClosesTheConnectionAsKafkaDoes() throws IOException {
        MemoryRecords ok = MemoryRecords.withRecords(Compression.NONE, new SimpleRecord("x".getBytes()));
        try (Socket s = connect()) {
            // succeeds: no response, the connection stays open and answers the next request
            DataOutputStream out = new DataOutputStream(s.getOutputStream());
            out.write(produceFrame(null, (short) 0, ok, 1));
            RequestHeader h = new RequestHeader(ApiKeys.API_VERSIONS, (short) 3, "probe", 2);
            assertThat(roundTrip(s, frame(h, new ApiVersionsRequestData().setClientSoftwareName("t")
                    .setClientSoftwareVersion("1"))).getInt()).isEqualTo(2);
        }
        assertThat(broker.context().replicaManager().log(new org.apache.kafka.common.TopicPartition("t", 0)).logEndOffset())
                .isEqualTo(1);
        MemoryRecords corrupt = MemoryRecords.withRecords(Compression.NONE, new SimpleRecord("y".getBytes()));
        corrupt.buffer().put(corrupt.buffer().limit() - 1, (byte) 0x55);
        try (Socket s = connect()) {
            // fails: no response can carry the error, so the connection is closed (the client then
            // refreshes its metadata), rather than the error being lost
            DataOutputStream out = new DataOutputStream(s.getOutputStream());
            out.write(produceFrame(null, (short) 0, corrupt, 3));
            out.flush();
            assertThat(closedByPeer(s)).isTrue();
        }
        assertThat(broker.context().replicaManager().log(new org.apache.kafka.common.TopicPartition("t", 0)).logEndOffset())
                .isEqualTo(1);
        assertStillServing();
    }

    @Test
    void metadataBeforeV12RefusesTopicIdsAndNullNamesInsteadOfFailingToWriteItsResponse() throws IOException {
        Uuid id = broker.context().topics().get("t").orElseThrow().id();
        org.apache.kafka.common.message.MetadataRequestData.MetadataRequestTopic[] asked = {
                new org.apache.kafka.common.message.MetadataRequestData.MetadataRequestTopic().setTopicId(id).setName(null),
                new org.apache.kafka.common.message.MetadataRequestData.MetadataRequestTopic().setTopicId(id).setName("t")};
        for (short v : new short[]{10, 11, 12}) {
            for (var topic : asked) {
                var body = new org.apache.kafka.common.message.MetadataRequestData().setAllowAutoTopicCreation(false);
                body.topics().add(topic.duplicate());
                // before: the v10-11 answer echoed the null name and could not be serialized, closing the connection
                try (Socket s = connect()) {
                    ByteBuffer resp = roundTrip(s, frame(new RequestHeader(ApiKeys.METADATA, v, "m", 12), body));
                    ResponseHeader.parse(resp, ApiKeys.METADATA.responseHeaderVersion(v));
                    var data = new org.apache.kafka.common.message.MetadataResponseData(new ByteBufferAccessor(resp), v);
                    Errors error = Errors.forCode(data.topics().iterator().next().errorCode());
                    assertThat(error).as("v%d %s", v, topic).isEqualTo(v < 12 ? Errors.INVALID_REQUEST : Errors.NONE);
                }
            }
        }
    }
}
