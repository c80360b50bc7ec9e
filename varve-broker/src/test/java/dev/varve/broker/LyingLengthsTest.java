package dev.varve.broker;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.requests.RequestHeader;
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
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * CVE-2022-34917 class: a frame whose array counts, string/bytes lengths or tagged-field counts and
 * sizes are far larger than the bytes present. Kafka brokers before 3.2.3 allocated by such counts
 * (a few hundred bytes could make a broker allocate gigabytes). Here every length and count prefix of
 * requests of several APIs, oldest and newest advertised version, is set to 2^31-1 (and to
 * 0xffffffff for varints): decoding through the broker's own entry point fails with
 * InvalidRequestException (or, for a nullable field read as null, decodes) while allocating at most
 * {@value RequestDecodingProperties#BYTES_PER_FRAME_BYTE} bytes per frame byte plus a fixed
 * {@value RequestDecodingProperties#FIXED_BYTES}; over a socket the broker closes the connection and
 * keeps serving.
 */
class LyingLengthsTest {
    private static final List<ApiKeys> APIS = List.of(ApiKeys.PRODUCE, ApiKeys.FETCH, ApiKeys.METADATA,
            ApiKeys.JOIN_GROUP, ApiKeys.SYNC_GROUP, ApiKeys.OFFSET_COMMIT, ApiKeys.OFFSET_FETCH, ApiKeys.CREATE_TOPICS,
            ApiKeys.LIST_OFFSETS, ApiKeys.DESCRIBE_CONFIGS, ApiKeys.INCREMENTAL_ALTER_CONFIGS, ApiKeys.API_VERSIONS);

    @TempDir
    File dir;
    private Broker broker;
    private InetSocketAddress address;
    private List<Uuid> topicIds;

    @BeforeEach
    void start() throws Exception {
        broker = Broker.start(BrokerConfig.from(Map.of(
                "listeners", "PLAINTEXT://127.0.0.1:0",
                "log.dirs", dir.getAbsolutePath())));
        address = broker.boundAddresses().get(0);
        broker.context().createTopic("fuzz", 1, Map.of());
        topicIds = List.of(broker.context().topics().get("fuzz").orElseThrow().id());
    }

    @AfterEach
    void stop() throws Exception {
        broker.close();
    }

    /** Sends a frame; true if the broker closed the connection without answering it. */
    private boolean closedWithoutAnswer(byte[] sized) throws IOException {
        try (Socket s = new Socket(address.getAddress(), address.getPort())) {
            s.setSoTimeout(10_000);
            s.setSoLinger(true, 0);
            s.getOutputStream().write(sized);
            try {
                int size = new DataInputStream(s.getInputStream()).readInt();
                return size < 0; // an answer
            } catch (EOFException | SocketException e) {
                return true;
            }
        }
    }

    private void assertStillServing() throws IOException {
        try (RawKafkaClient c = new RawKafkaClient(address)) {
            assertThat(c.<org.apache.kafka.common.requests.ApiVersionsResponse>send(
                    new org.apache.kafka.common.requests.ApiVersionsRequest.Builder(), (short) 3).data().errorCode()).isZero();
        }
    }

    @Test
    void cve2022_34917_everyLengthAndCountSetFarBeyondTheFrameFailsCheaplyAndClosesTheConnection() throws IOException {
        int frames = 0;
        for (ApiKeys key : APIS) {
            var range = broker.dispatcher().apiVersions().find(key.id);
            for (short version : new short[]{range.minVersion(), range.maxVersion()}) {
                FuzzFrames.Frame valid = new FuzzFrames(key.id * 100L + version, topicIds).valid(key, version, 5);
                RequestDecodingProperties.decode(broker.dispatcher(), valid, true); // warm-up, and it is valid
                for (FuzzFrames.Marker marker : valid.markers()) {
                    long huge = marker.kind() == FuzzFrames.LengthKind.INT16 ? Short.MAX_VALUE : Integer.MAX_VALUE;
                    FuzzFrames.Frame lying = FuzzFrames.inflate(valid, marker, huge);
                    Throwable thrown = catchThrowable(() -> broker.dispatcher().parse(connection(), ByteBuffer.wrap(lying.bytes())));
                    if (thrown == null) {
                        // only the size of a tagged field this version knows may lie: kafka-clients reads
                        // a known field by its type and never allocates by that size
                        assertThat(marker.what()).as("decoded %s", lying).matches("tagged field \\d+ size");
                    } else {
                        assertThat(thrown).as("decoding %s", lying).isInstanceOf(InvalidRequestException.class);
                    }
                    RequestDecodingProperties.assertBounded(RequestDecodingProperties.decode(broker.dispatcher(), lying, false), lying);
                    if (version == range.maxVersion()) {
                        assertThat(closedWithoutAnswer(lying.sized())).as("closed without an answer: %s", lying)
                                .isEqualTo(thrown != null);
                    }
                    frames++;
                    if (marker.kind() == FuzzFrames.LengthKind.COMPACT || marker.kind() == FuzzFrames.LengthKind.UVARINT) {
                        // 0xffffffff: a varint that decodes to -1 (a compact length of -2)
                        FuzzFrames.Frame negative = FuzzFrames.inflate(valid, marker, 0xffffffffL);
                        RequestDecodingProperties.assertBounded(
                                RequestDecodingProperties.decode(broker.dispatcher(), negative, false), negative);
                    }
                }
            }
        }
        assertThat(frames).isGreaterThan(100);
        assertStillServing();
    }

    @Test
    void cve2022_34917_aFiftyByteMetadataRequestClaimingTwoBillionTopicsAllocatesAlmostNothing() throws IOException {
        short v = broker.dispatcher().apiVersions().find(ApiKeys.METADATA.id).maxVersion();
        RequestHeader header = new RequestHeader(ApiKeys.METADATA, v, "liar", 9);
        ByteBuffer buf = ByteBuffer.allocate(50);
        buf.putInt(0); // size, set below
        var cache = new org.apache.kafka.common.protocol.ObjectSerializationCache();
        header.data().size(cache, header.headerVersion());
        header.data().write(new org.apache.kafka.common.protocol.ByteBufferAccessor(buf), cache, header.headerVersion());
        buf.put(new byte[]{(byte) 0xff, (byte) 0xff, (byte) 0xff, (byte) 0xff, 0x07}); // compact count 2^31-2 topics
        while (buf.hasRemaining()) {
            buf.put((byte) 1);
        }
        buf.putInt(0, 46);
        byte[] body = java.util.Arrays.copyOfRange(buf.array(), 4, 50);
        FuzzFrames.Frame frame = new FuzzFrames.Frame(ApiKeys.METADATA, v, body, List.of(), "2^31-2 topics in 50 bytes");
        RequestDecodingProperties.decode(broker.dispatcher(), frame, false);
        long allocated = RequestDecodingProperties.decode(broker.dispatcher(), frame, false);
        assertThat(allocated).as("bytes allocated decoding %s", frame).isLessThan(64 * 1024);
        assertThat(closedWithoutAnswer(buf.array())).isTrue();
        assertStillServing();
    }

    @Test
    void cve2022_34917_aTaggedFieldCountAndSizeBeyondTheFrameClosesTheConnection() throws IOException {
        // ApiVersions v3: header v2 (client id, then tagged fields), body with tagged fields at the end
        FuzzFrames.Frame valid = new FuzzFrames(3, topicIds).valid(ApiKeys.API_VERSIONS, (short) 3, 5);
        int tagged = 0;
        for (FuzzFrames.Marker m : valid.markers()) {
            if (m.what().contains("tagged field")) {
                for (long huge : new long[]{Integer.MAX_VALUE, 1 << 28, 100_000}) {
                    FuzzFrames.Frame lying = FuzzFrames.inflate(valid, m, huge);
                    RequestDecodingProperties.assertBounded(RequestDecodingProperties.decode(broker.dispatcher(), lying, false), lying);
                    assertThat(closedWithoutAnswer(lying.sized())).as("%s", lying).isTrue();
                    tagged++;
                }
            }
        }
        assertThat(tagged).isGreaterThanOrEqualTo(6); // header and body tagged-field counts at least
        assertStillServing();
    }

    private static dev.varve.broker.network.RequestDispatcher.Connection connection() {
        return new dev.varve.broker.network.RequestDispatcher.Connection("liar", new InetSocketAddress("127.0.0.1", 40001),
                new org.apache.kafka.common.network.ListenerName("PLAINTEXT"));
    }
}
