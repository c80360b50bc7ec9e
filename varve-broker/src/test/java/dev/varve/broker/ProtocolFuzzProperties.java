package dev.varve.broker;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.ShrinkingMode;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.ApiVersionsRequestData;
import org.apache.kafka.common.message.ApiVersionsResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.ProduceRequest;
import org.apache.kafka.common.requests.RequestHeader;

import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

/**
 * Hostile frames over a real socket to one in-process broker (principle 7: bad input never hurts).
 * For every API and version the broker advertises (read from its ApiVersions answer), a valid request
 * with random field values is generated from kafka-clients' schemas ({@link FuzzFrames}) and sent as
 * is and mutated: bit flips, truncation, trailing garbage, and length/count prefixes inflated to huge
 * values. After each frame: the frame's correlation id is answered or the connection is closed (never
 * a hang, never a response out of order), and a fresh connection still gets ApiVersions answered.
 *
 * <p>Each frame is followed on its connection by an ApiVersions probe, which tells "no response is
 * due" (a produce with acks=0) from "the broker is stuck". Fixed seeds; a failure prints the frame
 * in hex with how it was made.
 */
class ProtocolFuzzProperties {
    private static final int PROBE_ID = 0x7ead_beef;
    private static final int READ_TIMEOUT_MS = 10_000;

    private static Path dir;
    private static Broker broker;
    private static InetSocketAddress address;
    private static List<RequestDecodingProperties.ApiVersion> advertised;
    private static List<Uuid> topicIds;
    private static final Map<Outcome, AtomicInteger> outcomes = new EnumMap<>(Outcome.class);

    enum Outcome { ANSWERED, NO_RESPONSE_DUE, CLOSED, WAITING_AS_ASKED }

    @BeforeContainer
    static void start() throws Exception {
        dir = Files.createTempDirectory("varve-fuzz");
        broker = Broker.start(BrokerConfig.from(Map.of(
                "listeners", "PLAINTEXT://127.0.0.1:0",
                "log.dirs", dir.toString(),
                "socket.request.max.bytes", "1048576",
                "group.initial.rebalance.delay.ms", "0")));
        address = broker.boundAddresses().get(0);
        broker.context().createTopic("fuzz", 2, Map.of());
        topicIds = List.of(broker.context().topics().get("fuzz").orElseThrow().id());
        advertised = RequestDecodingProperties.advertisedBy(apiVersions().apiKeys());
        for (Outcome o : Outcome.values()) {
            outcomes.put(o, new AtomicInteger());
        }
    }

    @AfterContainer
    static void stop() throws IOException {
        broker.close();
        try (Stream<Path> files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
        System.out.println("ProtocolFuzzProperties outcomes: " + outcomes);
    }

    private static Socket connect() throws IOException {
        Socket s = new Socket(address.getAddress(), address.getPort());
        s.setSoTimeout(READ_TIMEOUT_MS);
        s.setSoLinger(true, 0); // no TIME_WAIT pile-up over thousands of connections
        return s;
    }

    private static byte[] apiVersionsFrame(int correlationId) {
        RequestHeader h = new RequestHeader(ApiKeys.API_VERSIONS, (short) 3, "probe", correlationId);
        ApiVersionsRequestData body = new ApiVersionsRequestData().setClientSoftwareName("fuzz").setClientSoftwareVersion("1");
        ObjectSerializationCache cache = new ObjectSerializationCache();
        int hs = h.data().size(cache, h.headerVersion());
        int bs = body.size(cache, (short) 3);
        ByteBuffer buf = ByteBuffer.allocate(4 + hs + bs).putInt(hs + bs);
        h.data().write(new ByteBufferAccessor(buf), cache, h.headerVersion());
        body.write(new ByteBufferAccessor(buf), cache, (short) 3);
        return buf.array();
    }

    /** Reads one response frame; null when the broker closed the connection. */
    private static ByteBuffer readFrame(DataInputStream in) throws IOException {
        try {
            int size = in.readInt();
            assertThat(size).as("response size").isBetween(4, 64 << 20);
            byte[] body = new byte[size];
            in.readFully(body);
            return ByteBuffer.wrap(body);
        } catch (EOFException | SocketException e) {
            return null; // closed (or reset) by the broker
        }
    }

    /** A fresh connection gets ApiVersions answered, without error. */
    private static ApiVersionsResponseData apiVersions() throws IOException {
        try (Socket s = connect()) {
            s.getOutputStream().write(apiVersionsFrame(11));
            ByteBuffer resp = readFrame(new DataInputStream(s.getInputStream()));
            assertThat(resp).as("the broker answers ApiVersions on a new connection").isNotNull();
            assertThat(resp.getInt()).isEqualTo(11);
            ApiVersionsResponseData data = new ApiVersionsResponseData(new ByteBufferAccessor(resp), (short) 3);
            assertThat(Errors.forCode(data.errorCode())).isEqualTo(Errors.NONE);
            return data;
        }
    }

    /** Sends {@code frame}, then a probe; checks the answer is in order or the connection closed. */
    static Outcome exchange(FuzzFrames.Frame frame) throws IOException {
        Outcome outcome;
        try (Socket s = connect()) {
            OutputStream out = s.getOutputStream();
            try {
                out.write(frame.sized());
                out.write(apiVersionsFrame(PROBE_ID));
                out.flush();
            } catch (SocketException e) {
                // the broker closed the connection before the probe went out; reading tells
            }
            DataInputStream in = new DataInputStream(s.getInputStream());
            Integer expected = frame.correlationId();
            try {
                ByteBuffer first = readFrame(in);
                if (first == null) {
                    outcome = Outcome.CLOSED;
                } else {
                    int id = first.getInt();
                    if (id == PROBE_ID && (expected == null || expected != PROBE_ID)) {
                        // answered the probe, so the frame got no response: only a produce with acks=0 may do that
                        assertThat(frame.bytes().length >= 2 && ByteBuffer.wrap(frame.bytes()).getShort(0) == ApiKeys.PRODUCE.id)
                                .as("only an acks=0 produce goes unanswered; sent %s", frame).isTrue();
                        outcome = Outcome.NO_RESPONSE_DUE;
                    } else {
                        assertThat(id).as("correlation id of the response to %s", frame).isEqualTo(expected);
                        ByteBuffer probe = readFrame(in);
                        if (probe != null) {
                            assertThat(probe.getInt()).as("probe after %s", frame).isEqualTo(PROBE_ID);
                        }
                        outcome = Outcome.ANSWERED;
                    }
                }
            } catch (SocketTimeoutException e) {
                if (!asksToWaitLongerThanTheReadTimeout(frame)) {
                    throw new AssertionError("no answer and no close within " + READ_TIMEOUT_MS + " ms after " + frame, e);
                }
                outcome = Outcome.WAITING_AS_ASKED;
            }
        }
        outcomes.get(outcome).incrementAndGet();
        apiVersions();
        return outcome;
    }

    /**
     * Whether the frame still decodes as a fetch of at least one partition whose max.wait.ms (a mutation
     * may have flipped one of its bits) is longer than the read timeout: the broker rightly holds it
     * (Kafka does too) until data arrives or that wait ends. A fetch of no partition is answered at once.
     */
    private static boolean asksToWaitLongerThanTheReadTimeout(FuzzFrames.Frame frame) {
        try {
            ByteBuffer b = ByteBuffer.wrap(frame.bytes());
            RequestHeader h = RequestHeader.parse(b);
            if (h.apiKey() != ApiKeys.FETCH) {
                return false;
            }
            org.apache.kafka.common.message.FetchRequestData data = ((org.apache.kafka.common.requests.FetchRequest)
                    AbstractRequest.parseRequest(h.apiKey(), h.apiVersion(), new ByteBufferAccessor(b)).request).data();
            return data.maxWaitMs() >= READ_TIMEOUT_MS && data.topics().stream().anyMatch(t -> !t.partitions().isEmpty());
        } catch (RuntimeException notAFetch) {
            return false;
        }
    }

    /**
     * A valid request keeps its connection, except a produce with acks=0 that failed: no response
     * can carry the error, so the broker closes the connection, as Kafka does.
     */
    private static void assertAnswered(FuzzFrames.Frame valid, Outcome outcome) {
        if (outcome == Outcome.CLOSED && valid.key() == ApiKeys.PRODUCE) {
            ByteBuffer b = ByteBuffer.wrap(valid.bytes());
            RequestHeader h = RequestHeader.parse(b);
            ProduceRequest produce = (ProduceRequest) AbstractRequest.parseRequest(h.apiKey(), h.apiVersion(), new ByteBufferAccessor(b)).request;
            assertThat(produce.acks()).as("only a failed acks=0 produce closes its connection: %s", valid).isZero();
            return;
        }
        assertThat(outcome).as("a valid frame is answered: %s", valid).isNotEqualTo(Outcome.CLOSED);
    }

    @Example
    void everyAdvertisedApiVersionSurvivesEveryKindOfMutation() throws IOException {
        int correlationId = 1;
        for (RequestDecodingProperties.ApiVersion av : advertised) {
            FuzzFrames frames = new FuzzFrames(7919L * av.key().id + av.version(), topicIds);
            FuzzFrames.Frame valid = frames.valid(av.key(), av.version(), correlationId++);
            assertAnswered(valid, exchange(valid));
            for (FuzzFrames.Mutation m : FuzzFrames.Mutation.values()) {
                if (m != FuzzFrames.Mutation.NONE) {
                    exchange(frames.mutate(frames.valid(av.key(), av.version(), correlationId++), m));
                }
            }
        }
    }

    @Provide
    Arbitrary<FuzzFrames.Frame> frames() {
        return Combinators.combine(Arbitraries.of(advertised), Arbitraries.longs(), Arbitraries.of(FuzzFrames.Mutation.class),
                        Arbitraries.integers())
                .as((av, seed, mutation, correlationId) -> {
                    FuzzFrames frames = new FuzzFrames(seed, topicIds);
                    return frames.mutate(frames.valid(av.key(), av.version(), correlationId), mutation);
                });
    }

    @Property(tries = 1000, shrinking = ShrinkingMode.OFF)
    void aMutatedFrameIsAnsweredOrClosesItsConnection(@ForAll("frames") FuzzFrames.Frame frame) throws IOException {
        Outcome outcome = exchange(frame);
        if (frame.description().equals("valid")) {
            assertAnswered(frame, outcome);
        }
    }

    /** Random bytes, size prefix included: the broker closes the connection (or answers) and stays up. */
    @Property(tries = 150, shrinking = ShrinkingMode.OFF)
    void randomBytesAreAnsweredOrCloseTheConnection(@ForAll @Size(min = 1, max = 300) byte[] garbage,
                                       @ForAll @IntRange(min = 0, max = 2) int sizePrefix) throws IOException {
        byte[] sent = garbage;
        if (sizePrefix > 0) { // a correct size prefix, so the garbage is one whole frame
            sent = ByteBuffer.allocate(4 + garbage.length).putInt(garbage.length).put(garbage).array();
        }
        try (Socket s = connect()) {
            s.getOutputStream().write(sent);
            s.shutdownOutput(); // end of stream: a frame still incomplete can never complete
            DataInputStream in = new DataInputStream(s.getInputStream());
            try {
                while (in.read() >= 0) {
                    // responses to frames that happened to parse are fine; the stream must end
                }
            } catch (SocketException e) {
                // reset: closed
            } catch (SocketTimeoutException e) {
                fail("the connection stayed open " + READ_TIMEOUT_MS + " ms after sending "
                        + java.util.HexFormat.of().formatHex(sent) + " and closing the output");
            }
        }
        apiVersions();
    }
}
