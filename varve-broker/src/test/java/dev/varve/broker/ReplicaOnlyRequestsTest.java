package dev.varve.broker;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.message.ApiMessageType;
import org.apache.kafka.common.message.ApiVersionsResponseData;
import org.apache.kafka.common.message.FetchRequestData;
import org.apache.kafka.common.message.FetchResponseData;
import org.apache.kafka.common.message.ListOffsetsRequestData;
import org.apache.kafka.common.message.ListOffsetsResponseData;
import org.apache.kafka.common.message.OffsetForLeaderEpochRequestData;
import org.apache.kafka.common.message.OffsetForLeaderEpochResponseData;
import org.apache.kafka.common.message.WriteTxnMarkersRequestData;
import org.apache.kafka.common.message.WriteTxnMarkersResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.protocol.Message;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.requests.FetchResponse;
import org.apache.kafka.common.requests.RequestHeader;
import org.apache.kafka.common.requests.ResponseHeader;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.DataInputStream;
import java.io.EOFException;
import java.io.File;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * CVE-2018-1288 class: a client that is not a replica sends requests reserved for brokers. Kafka's fix
 * was to require the ClusterAction permission for them; a Varve node has no follower replicas on a
 * single node and does not expose the inter-broker and controller APIs on its client listener at
 * all. Whatever such a client sends, the partition's log end offset, high watermark and the data a
 * consumer reads stay exactly as they were.
 *
 * <p>What the broker answers, and why it is right:
 * <ul>
 *   <li>Fetch claiming a replica id (v4-v14) or a ReplicaState (v15+), at any fetch offset:
 *       NOT_LEADER_OR_FOLLOWER and no records, which is what Kafka answers an unassigned replica;
 *       nothing past the high watermark is ever read and no follower state is created.</li>
 *   <li>OffsetForLeaderEpoch and ListOffsets carrying a replica id: answered exactly as for a
 *       consumer; both are reads (Kafka also answers them to consumers since KIP-320).</li>
 *   <li>AlterPartition, BrokerRegistration, BrokerHeartbeat, LeaderAndIsr, StopReplica,
 *       UpdateMetadata, ControlledShutdown, WriteTxnMarkers, AllocateProducerIds, Envelope, the Raft
 *       APIs...: not advertised, so the connection is closed, as Kafka closes a connection that
 *       sends an API its listener does not enable.</li>
 * </ul>
 * BadInputTest covers the first case for three Fetch versions; this covers every version and offset.
 *
 * <p>In a cluster, a client naming the id of a real follower is refused unless it connects from an
 * address of that follower's advertised hosts with its registered broker epoch
 * ({@code FollowerIdentity}); {@code FollowerImpersonationTest} (varve-tests, network namespaces)
 * shows the high watermark staying put. A process on the follower's own machine still passes: only
 * authentication can stop that.
 */
class ReplicaOnlyRequestsTest {
    private static final TopicPartition TP = new TopicPartition("t", 0);

    @TempDir
    File dir;
    private Broker broker;
    private InetSocketAddress address;
    private Uuid topicId;

    @BeforeEach
    void start() throws Exception {
        broker = Broker.start(BrokerConfig.from(Map.of(
                "listeners", "PLAINTEXT://127.0.0.1:0",
                "log.dirs", dir.getAbsolutePath())));
        address = broker.boundAddresses().get(0);
        broker.context().createTopic("t", 1, Map.of());
        topicId = broker.context().topics().get("t").orElseThrow().id();
        for (int i = 0; i < 3; i++) {
            broker.context().replicaManager().appendAsLeader(TP, MemoryRecords.withRecords(Compression.NONE,
                    new SimpleRecord(("r" + i).getBytes()), new SimpleRecord(("s" + i).getBytes())));
        }
    }

    @AfterEach
    void stop() throws Exception {
        broker.close();
    }

    /** Sends one request; returns the response body after its header, or null if the connection was closed. */
    private ByteBuffer send(ApiKeys key, short version, Message body) throws IOException {
        RequestHeader header = new RequestHeader(key, version, "not-a-broker", 99);
        ObjectSerializationCache cache = new ObjectSerializationCache();
        int hs = header.data().size(cache, header.headerVersion());
        int bs = body.size(cache, version);
        ByteBuffer buf = ByteBuffer.allocate(4 + hs + bs).putInt(hs + bs);
        header.data().write(new ByteBufferAccessor(buf), cache, header.headerVersion());
        body.write(new ByteBufferAccessor(buf), cache, version);
        return exchange(buf.array(), key.responseHeaderVersion(version));
    }

    private ByteBuffer exchange(byte[] frame, short responseHeaderVersion) throws IOException {
        return exchange(frame, responseHeaderVersion, null);
    }

    /** {@link #exchange} from the local address {@code from} (null: any). */
    private ByteBuffer exchange(byte[] frame, short responseHeaderVersion, java.net.InetAddress from) throws IOException {
        try (Socket s = new Socket()) {
            if (from != null) {
                s.bind(new InetSocketAddress(from, 0));
            }
            s.connect(address, 10_000);
            s.setSoTimeout(10_000);
            s.getOutputStream().write(frame);
            DataInputStream in = new DataInputStream(s.getInputStream());
            byte[] resp;
            try {
                resp = new byte[in.readInt()];
                in.readFully(resp);
            } catch (EOFException | SocketException e) {
                return null;
            }
            ByteBuffer b = ByteBuffer.wrap(resp);
            assertThat(ResponseHeader.parse(b, responseHeaderVersion).correlationId()).isEqualTo(99);
            return b;
        }
    }

    private record State(long logEndOffset, long highWatermark, byte[] consumerRead) {
    }

    /** The partition's replication state, and what a consumer reads from offset 0. */
    private State state() throws IOException {
        var log = broker.context().replicaManager().log(TP);
        short v = 12;
        FetchRequestData fetch = new FetchRequestData().setReplicaId(-1).setMaxWaitMs(0).setMinBytes(0).setMaxBytes(1 << 20);
        fetch.topics().add(new FetchRequestData.FetchTopic().setTopic("t").setPartitions(List.of(
                new FetchRequestData.FetchPartition().setPartition(0).setFetchOffset(0).setPartitionMaxBytes(1 << 20))));
        FetchResponseData r = new FetchResponseData(new ByteBufferAccessor(send(ApiKeys.FETCH, v, fetch)), v);
        FetchResponseData.PartitionData pd = r.responses().get(0).partitions().get(0);
        assertThat(Errors.forCode(pd.errorCode())).isEqualTo(Errors.NONE);
        ByteBuffer records = ((MemoryRecords) FetchResponse.recordsOrFail(pd)).buffer();
        byte[] bytes = new byte[records.remaining()];
        records.get(bytes);
        return new State(log.logEndOffset(), log.highWatermark(), bytes);
    }

    private List<Short> advertisedVersions(ApiKeys key) {
        ApiVersionsResponseData.ApiVersion v = broker.dispatcher().apiVersions().find(key.id);
        List<Short> out = new ArrayList<>();
        for (short s = v.minVersion(); s <= v.maxVersion(); s++) {
            out.add(s);
        }
        return out;
    }

    @Test
    void cve2018_1288_aFetchPosingAsAFollowerIsRefusedAtEveryVersionAndOffsetAndChangesNothing() throws IOException {
        State before = state();
        assertThat(before.logEndOffset()).isEqualTo(6);
        assertThat(before.consumerRead()).isNotEmpty();
        int sent = 0;
        for (short v : advertisedVersions(ApiKeys.FETCH)) {
            if (v < 4) {
                continue; // (not advertised by kafka-clients 4.4 anyway)
            }
            for (int replicaId : new int[]{0, 1, 7, Integer.MAX_VALUE}) {
                for (long offset : new long[]{0, 6, 7, 1_000_000, Long.MAX_VALUE}) {
                    FetchRequestData fetch = new FetchRequestData().setMaxWaitMs(0).setMinBytes(0).setMaxBytes(1 << 20);
                    if (v >= 15) {
                        fetch.setReplicaState(new FetchRequestData.ReplicaState().setReplicaId(replicaId).setReplicaEpoch(1));
                    } else {
                        fetch.setReplicaId(replicaId);
                    }
                    FetchRequestData.FetchTopic topic = new FetchRequestData.FetchTopic()
                            .setPartitions(List.of(new FetchRequestData.FetchPartition().setPartition(0)
                                    .setFetchOffset(offset).setPartitionMaxBytes(1 << 20).setCurrentLeaderEpoch(0)));
                    fetch.topics().add(v >= 13 ? topic.setTopicId(topicId) : topic.setTopic("t"));
                    ByteBuffer resp = send(ApiKeys.FETCH, v, fetch);
                    assertThat(resp).as("v%d replica %d offset %d is answered", v, replicaId, offset).isNotNull();
                    FetchResponseData.PartitionData pd = new FetchResponseData(new ByteBufferAccessor(resp), v)
                            .responses().get(0).partitions().get(0);
                    assertThat(Errors.forCode(pd.errorCode())).as("v%d replica %d offset %d", v, replicaId, offset)
                            .isEqualTo(Errors.NOT_LEADER_OR_FOLLOWER);
                    assertThat(FetchResponse.recordsOrFail(pd).sizeInBytes()).isZero();
                    sent++;
                }
            }
        }
        assertThat(sent).isGreaterThan(100);
        State after = state();
        assertThat(after.logEndOffset()).isEqualTo(before.logEndOffset());
        assertThat(after.highWatermark()).isEqualTo(before.highWatermark());
        assertThat(after.consumerRead()).isEqualTo(before.consumerRead());
    }

    @Test
    void cve2018_1288_offsetForLeaderEpochAndListOffsetsWithAReplicaIdAreAnsweredAsForAConsumerAndChangeNothing() throws IOException {
        State before = state();
        for (short v : advertisedVersions(ApiKeys.OFFSET_FOR_LEADER_EPOCH)) {
            List<OffsetForLeaderEpochResponseData.EpochEndOffset> answers = new ArrayList<>();
            for (int replicaId : new int[]{-1, 7}) {
                OffsetForLeaderEpochRequestData req = new OffsetForLeaderEpochRequestData();
                if (v >= 3) {
                    req.setReplicaId(replicaId);
                } else if (replicaId != -1) {
                    continue; // no replica id field before v3
                }
                req.topics().add(new OffsetForLeaderEpochRequestData.OffsetForLeaderTopic().setTopic("t")
                        .setPartitions(List.of(new OffsetForLeaderEpochRequestData.OffsetForLeaderPartition()
                                .setPartition(0).setLeaderEpoch(0).setCurrentLeaderEpoch(v >= 2 ? 0 : -1))));
                ByteBuffer resp = send(ApiKeys.OFFSET_FOR_LEADER_EPOCH, v, req);
                assertThat(resp).as("v%d", v).isNotNull();
                answers.add(new OffsetForLeaderEpochResponseData(new ByteBufferAccessor(resp), v)
                        .topics().iterator().next().partitions().get(0));
            }
            assertThat(answers).as("v%d: a replica id gets the consumer's answer", v).allSatisfy(a ->
                    assertThat(a).isEqualTo(answers.get(0)));
        }
        for (short v : advertisedVersions(ApiKeys.LIST_OFFSETS)) {
            List<Long> latest = new ArrayList<>();
            for (int replicaId : new int[]{-1, 7}) {
                ListOffsetsRequestData req = new ListOffsetsRequestData().setReplicaId(replicaId);
                req.topics().add(new ListOffsetsRequestData.ListOffsetsTopic().setName("t").setPartitions(List.of(
                        new ListOffsetsRequestData.ListOffsetsPartition().setPartitionIndex(0).setTimestamp(-1))));
                ByteBuffer resp = send(ApiKeys.LIST_OFFSETS, v, req);
                assertThat(resp).as("v%d", v).isNotNull();
                ListOffsetsResponseData.ListOffsetsPartitionResponse p = new ListOffsetsResponseData(new ByteBufferAccessor(resp), v)
                        .topics().get(0).partitions().get(0);
                assertThat(Errors.forCode(p.errorCode())).isEqualTo(Errors.NONE);
                latest.add(p.offset());
            }
            assertThat(latest).as("v%d", v).containsOnly(before.highWatermark());
        }
        State after = state();
        assertThat(after).usingRecursiveComparison().isEqualTo(before);
    }

    @Test
    void writeTxnMarkersFromAnAddressThatIsNoBrokersIsRefusedAndWritesNothing() throws IOException {
        State before = state();
        WriteTxnMarkersRequestData body = new WriteTxnMarkersRequestData();
        body.markers().add(new WriteTxnMarkersRequestData.WritableTxnMarker().setProducerId(7).setProducerEpoch((short) 0)
                .setTransactionResult(false).setCoordinatorEpoch(0).setTopics(List.of(
                        new WriteTxnMarkersRequestData.WritableTxnMarkerTopic().setName("t").setPartitionIndexes(List.of(0)))));
        // 127.0.0.2 is loopback but no interface's address: a process that is not this broker's host
        java.net.InetAddress elsewhere = java.net.InetAddress.getByName("127.0.0.2");
        for (short v : advertisedVersions(ApiKeys.WRITE_TXN_MARKERS)) {
            RequestHeader header = new RequestHeader(ApiKeys.WRITE_TXN_MARKERS, v, "not-a-broker", 99);
            ObjectSerializationCache cache = new ObjectSerializationCache();
            int hs = header.data().size(cache, header.headerVersion());
            int bs = body.size(cache, v);
            ByteBuffer buf = ByteBuffer.allocate(4 + hs + bs).putInt(hs + bs);
            header.data().write(new ByteBufferAccessor(buf), cache, header.headerVersion());
            body.write(new ByteBufferAccessor(buf), cache, v);
            ByteBuffer resp = exchange(buf.array(), ApiKeys.WRITE_TXN_MARKERS.responseHeaderVersion(v), elsewhere);
            assertThat(resp).as("v%d answered", v).isNotNull();
            WriteTxnMarkersResponseData r = new WriteTxnMarkersResponseData(new ByteBufferAccessor(resp), v);
            assertThat(Errors.forCode(r.markers().get(0).topics().get(0).partitions().get(0).errorCode()))
                    .as("v%d", v).isEqualTo(Errors.CLUSTER_AUTHORIZATION_FAILED);
        }
        assertThat(state()).usingRecursiveComparison().isEqualTo(before);
    }

    @Test
    void cve2018_1288_brokerAndControllerApisAreNotExposedToClients() throws IOException {
        State before = state();
        ApiVersionsResponseData.ApiVersionCollection advertised = broker.dispatcher().apiVersions();
        List<ApiKeys> brokerOnly = List.of(ApiKeys.ALTER_PARTITION, ApiKeys.BROKER_REGISTRATION, ApiKeys.BROKER_HEARTBEAT,
                ApiKeys.LEADER_AND_ISR, ApiKeys.STOP_REPLICA, ApiKeys.UPDATE_METADATA, ApiKeys.CONTROLLED_SHUTDOWN,
                ApiKeys.ALLOCATE_PRODUCER_IDS, ApiKeys.ENVELOPE, ApiKeys.UNREGISTER_BROKER,
                ApiKeys.VOTE, ApiKeys.BEGIN_QUORUM_EPOCH, ApiKeys.END_QUORUM_EPOCH, ApiKeys.FETCH_SNAPSHOT,
                ApiKeys.ASSIGN_REPLICAS_TO_DIRS, ApiKeys.CONTROLLER_REGISTRATION);
        int sent = 0;
        for (ApiKeys key : brokerOnly) {
            assertThat(advertised.find(key.id)).as("%s is not advertised", key).isNull();
            ApiMessageType type = ApiMessageType.fromApiKey(key.id);
            short lowest = type.lowestSupportedVersion();
            short highest = type.highestSupportedVersion(true);
            if (highest < lowest) { // no version left in kafka-clients (removed with ZooKeeper): a bare header
                ByteBuffer frame = ByteBuffer.allocate(4 + 10).putInt(10).putShort(key.id).putShort((short) 0)
                        .putInt(99).putShort((short) -1);
                assertThat(exchange(frame.array(), (short) 0)).as("%s v0", key).isNull();
                sent++;
                continue;
            }
            FuzzFrames frames = new FuzzFrames(key.id, List.of(topicId));
            for (short v = lowest; v <= highest; v++) {
                FuzzFrames.Frame frame = frames.valid(key, v, 99);
                assertThat(exchange(frame.sized(), key.responseHeaderVersion(v))).as("the connection is closed: %s", frame).isNull();
                sent++;
            }
        }
        assertThat(sent).isGreaterThanOrEqualTo(brokerOnly.size());
        State after = state();
        assertThat(after).usingRecursiveComparison().isEqualTo(before);
    }
}
