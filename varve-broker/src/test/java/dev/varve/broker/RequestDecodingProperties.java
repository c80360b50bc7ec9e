package dev.varve.broker;

import dev.varve.broker.network.DecodeBudget;
import dev.varve.broker.network.RequestDispatcher;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.ShrinkingMode;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.message.ApiVersionsResponseData;
import org.apache.kafka.common.network.ListenerName;
import org.apache.kafka.common.protocol.ApiKeys;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Decoding cost of hostile frames, measured in the test thread through the broker's own decoding
 * entry point ({@link RequestDispatcher#parse}, what every frame goes through before its handler):
 * for every API and version the broker advertises, valid and mutated frames either decode or fail
 * with {@link InvalidRequestException} (the connection is then closed), and decoding allocates at
 * most {@value #BYTES_PER_FRAME_BYTE} bytes per frame byte plus {@value #FIXED_BYTES} bytes.
 *
 * <p>Why that bound: kafka-clients' generated readers refuse any count or length larger than the
 * bytes left before allocating, so what a frame can make them allocate is proportional to its size,
 * but not 1:1: the densest input, an array of empty compact strings (one byte on the wire, a String
 * and its list slot on the heap), costs about 56 bytes per frame byte, so a dense 100 MiB frame
 * would cost 5.5 GiB. The broker decodes within a {@link DecodeBudget}: past
 * {@value DecodeBudget#BYTES_PER_FRAME_BYTE} bytes per frame byte plus a fixed part the decode is
 * stopped and the frame refused ({@link #denseArraysOfTinyElementsAreRefusedWithinTheBudget}); the
 * bound here adds what can be allocated between two of its checks. The observed maxima are printed
 * at the end.
 */
class RequestDecodingProperties {
    /**
     * The budget, plus what one allocation can add past its last check: the generated readers presize
     * a list to the declared count (up to 8 bytes of array per frame byte, the count being bounded by
     * the bytes left).
     */
    static final int BYTES_PER_FRAME_BYTE = DecodeBudget.BYTES_PER_FRAME_BYTE + 8;
    /** The budget's fixed part, and what 256 reads and an exception's stack trace allocate past a check. */
    static final int FIXED_BYTES = DecodeBudget.FIXED_BYTES + 64 * 1024;

    private static Path dir;
    private static Broker broker;
    private static RequestDispatcher dispatcher;
    private static List<ApiVersion> advertised;
    private static List<Uuid> topicIds;
    private static final RequestDispatcher.Connection CONNECTION = new RequestDispatcher.Connection("fuzz",
            new InetSocketAddress("127.0.0.1", 40000), new ListenerName("PLAINTEXT"));
    private static final com.sun.management.ThreadMXBean THREADS =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    private static double worstRatio;
    private static String worst = "";
    private static long mostAllocated;
    private static String most = "";

    record ApiVersion(ApiKeys key, short version) {
        @Override
        public String toString() {
            return key + " v" + version;
        }
    }

    @BeforeContainer
    static void start() throws Exception {
        dir = Files.createTempDirectory("varve-decoding");
        broker = Broker.start(BrokerConfig.from(Map.of(
                "listeners", "PLAINTEXT://127.0.0.1:0",
                "log.dirs", dir.toString())));
        broker.context().createTopic("fuzz", 2, Map.of());
        topicIds = List.of(broker.context().topics().get("fuzz").orElseThrow().id());
        dispatcher = broker.dispatcher();
        advertised = advertisedBy(dispatcher.apiVersions());
        assertThat(THREADS.isThreadAllocatedMemorySupported()).isTrue();
        THREADS.setThreadAllocatedMemoryEnabled(true);
    }

    @AfterContainer
    static void stop() throws IOException {
        broker.close();
        try (Stream<Path> files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
        System.out.printf("RequestDecodingProperties: highest allocation per frame byte (frames of 4 KiB or more) %.1f (%s); largest allocation %s%n",
                worstRatio, worst, most);
    }

    static List<ApiVersion> advertisedBy(ApiVersionsResponseData.ApiVersionCollection versions) {
        List<ApiVersion> out = new ArrayList<>();
        for (ApiVersionsResponseData.ApiVersion v : versions) {
            for (short s = v.minVersion(); s <= v.maxVersion(); s++) {
                out.add(new ApiVersion(ApiKeys.forId(v.apiKey()), s));
            }
        }
        return out;
    }

    /**
     * Decodes {@code frame} in this thread; returns the bytes allocated, failing on any exception
     * other than InvalidRequestException.
     */
    static long decode(RequestDispatcher dispatcher, FuzzFrames.Frame frame, boolean mustParse) {
        ByteBuffer buffer = ByteBuffer.wrap(frame.bytes());
        long before = THREADS.getCurrentThreadAllocatedBytes();
        RuntimeException refused = null;
        try {
            dispatcher.parse(CONNECTION, buffer);
        } catch (InvalidRequestException e) {
            refused = e;
        }
        long allocated = THREADS.getCurrentThreadAllocatedBytes() - before;
        if (mustParse && refused != null) {
            throw new AssertionError("a valid frame was refused: " + frame, refused);
        }
        return allocated;
    }

    static void assertBounded(long allocated, FuzzFrames.Frame frame) {
        int size = frame.bytes().length;
        assertThat(allocated).as("bytes allocated decoding %s", frame)
                .isLessThanOrEqualTo((long) BYTES_PER_FRAME_BYTE * size + FIXED_BYTES);
        double ratio = allocated / (double) Math.max(1, size);
        if (size >= 4096 && ratio > worstRatio) { // the per-byte cost; small frames are all fixed cost
            worstRatio = ratio;
            worst = allocated + " bytes for " + size + ": " + frame.key() + " v" + frame.version() + " " + frame.description();
        }
        if (allocated > mostAllocated) {
            mostAllocated = allocated;
            most = allocated + " bytes for " + size + ": " + frame.key() + " v" + frame.version() + " " + frame.description();
        }
    }

    @Example
    void everyAdvertisedVersionDecodesItsValidFramesAndSurvivesEveryMutation() {
        int n = 0;
        for (ApiVersion av : advertised) {
            FuzzFrames frames = new FuzzFrames(31L * av.key().id + av.version(), topicIds);
            for (int i = 0; i < 4; i++) {
                FuzzFrames.Frame valid = frames.valid(av.key(), av.version(), n++);
                decode(dispatcher, valid, false); // warms up the classes of this API
                assertBounded(decode(dispatcher, valid, true), valid);
                for (FuzzFrames.Mutation m : FuzzFrames.Mutation.values()) {
                    FuzzFrames.Frame mutated = frames.mutate(valid, m);
                    assertBounded(decode(dispatcher, mutated, false), mutated);
                }
            }
        }
    }

    /**
     * The densest frames: arrays of 100,000 of the smallest elements (a one-byte empty compact string, a
     * four-byte int, an 18-byte topic of id, null name and no tags). Decoding them is where the
     * per-byte part of the bound comes from.
     */
    @Example
    void denseArraysOfTinyElementsAreRefusedWithinTheBudget() {
        int n = 100_000;
        ByteBuffer groups = ByteBuffer.allocate(n + 16);
        org.apache.kafka.common.utils.internals.ByteUtils.writeUnsignedVarint(n + 1, groups);
        for (int i = 0; i < n; i++) {
            groups.put((byte) 1); // "" as a compact string
        }
        groups.put((byte) 0).put((byte) 0); // include_authorized_operations, no tags
        FuzzFrames.Frame dense = frameOf(ApiKeys.DESCRIBE_GROUPS, (short) 5, groups);
        long before = THREADS.getCurrentThreadAllocatedBytes();
        org.assertj.core.api.Assertions.assertThatThrownBy(() -> dispatcher.parse(CONNECTION, ByteBuffer.wrap(dense.bytes())))
                .isInstanceOf(DecodeBudget.Exceeded.class).hasMessageContaining("DESCRIBE_GROUPS v5");
        assertBounded(THREADS.getCurrentThreadAllocatedBytes() - before, dense); // stopped at the budget, not at 56x

        // real requests of many small elements decode: partitions by topic id, partition indexes
        ByteBuffer topics = ByteBuffer.allocate(18 * n + 16);
        org.apache.kafka.common.utils.internals.ByteUtils.writeUnsignedVarint(n + 1, topics);
        for (int i = 0; i < n; i++) {
            topics.putLong(i + 1).putLong(i + 1).put((byte) 0).put((byte) 0); // topic id, null name, no tags
        }
        topics.put((byte) 0).put((byte) 0).put((byte) 0); // allow auto-creation, authorized operations, no tags
        assertBounded(decode(dispatcher, frameOf(ApiKeys.METADATA, (short) 12, topics), true),
                frameOf(ApiKeys.METADATA, (short) 12, topics));

        ByteBuffer partitions = ByteBuffer.allocate(4 * n + 64); // OffsetFetch v7: group "g", topic "t", n partitions
        partitions.put((byte) 2).put((byte) 'g').put((byte) 2).put((byte) 2).put((byte) 't');
        org.apache.kafka.common.utils.internals.ByteUtils.writeUnsignedVarint(n + 1, partitions);
        for (int i = 0; i < n; i++) {
            partitions.putInt(i);
        }
        partitions.put((byte) 0).put((byte) 0).put((byte) 0); // topic tags, require_stable, tags
        assertBounded(decode(dispatcher, frameOf(ApiKeys.OFFSET_FETCH, (short) 7, partitions), true),
                frameOf(ApiKeys.OFFSET_FETCH, (short) 7, partitions));
    }

    private static FuzzFrames.Frame frameOf(ApiKeys key, short version, ByteBuffer body) {
        org.apache.kafka.common.requests.RequestHeader header =
                new org.apache.kafka.common.requests.RequestHeader(key, version, "dense", 1);
        org.apache.kafka.common.protocol.ObjectSerializationCache cache = new org.apache.kafka.common.protocol.ObjectSerializationCache();
        int hs = header.data().size(cache, header.headerVersion());
        ByteBuffer frame = ByteBuffer.allocate(hs + body.position());
        header.data().write(new org.apache.kafka.common.protocol.ByteBufferAccessor(frame), cache, header.headerVersion());
        frame.put(body.array(), 0, body.position());
        return new FuzzFrames.Frame(key, version, frame.array(), List.of(), "dense " + key);
    }

    @Provide
    Arbitrary<FuzzFrames.Frame> mutatedFrames() {
        return Combinators.combine(Arbitraries.of(advertised), Arbitraries.longs(), Arbitraries.of(FuzzFrames.Mutation.class))
                .as((av, seed, mutation) -> {
                    FuzzFrames frames = new FuzzFrames(seed, topicIds);
                    return frames.mutate(frames.valid(av.key(), av.version(), 1), mutation);
                });
    }

    @Property(tries = 3000, shrinking = ShrinkingMode.OFF)
    void decodingAnyMutatedFrameAllocatesInProportionToItsSize(@ForAll("mutatedFrames") FuzzFrames.Frame frame) {
        decode(dispatcher, frame, false); // first: class loading of a rarely seen path is not the frame's cost
        assertBounded(decode(dispatcher, frame, frame.description().equals("valid")), frame);
    }
}
