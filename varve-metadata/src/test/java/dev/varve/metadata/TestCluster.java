package dev.varve.metadata;

import dev.varve.metadata.ClusterControl.BrokerHeartbeatReply;
import dev.varve.metadata.ClusterControl.BrokerHeartbeatRequest;
import dev.varve.metadata.ClusterControl.BrokerRegistrationRequest;
import dev.varve.metadata.MetadataRecord.Endpoint;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.protocol.Errors;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A controller with a fake clock and a "Raft log" that commits every decision at the next offset,
 * passing each entry through the serde as the quorum would. Brokers are simulated by their epochs.
 */
final class TestCluster {
    final ControllerLogic controller;
    final Random random;
    MetadataImage image = MetadataImage.EMPTY;
    long nowMs = 1_000;
    final List<byte[]> log = new ArrayList<>();
    final Map<Integer, Long> epochs = new HashMap<>();
    final Map<Integer, Uuid> incarnations = new HashMap<>();

    TestCluster(ControllerConfig config, long seed) {
        this.random = new Random(seed);
        this.controller = new ControllerLogic(config, () -> new Uuid(random.nextLong(), random.nextLong()), (t, c) -> { });
    }

    TestCluster(ControllerConfig config) {
        this(config, 42);
    }

    /** Commits the decision's records as one entry and returns its response. */
    <T> T commit(ControllerResult<T> result) {
        if (!result.records().isEmpty()) {
            byte[] entry = MetadataRecordSerde.serialize(result.records());
            log.add(entry);
            List<MetadataRecord> read = MetadataRecordSerde.deserialize(entry);
            assertThat(read).isEqualTo(result.records());
            image = image.apply(image.offset() + 1, read);
        }
        return result.response();
    }

    long register(int id, String rack, boolean cleanRestart) {
        Uuid incarnation = new Uuid(random.nextLong(), random.nextLong());
        long previous = cleanRestart ? epochs.getOrDefault(id, -1L) : -1L;
        ClusterControl.BrokerRegistrationReply reply = commit(controller.registerBroker(image,
                new BrokerRegistrationRequest(id, incarnation, List.of(new Endpoint("PLAINTEXT", "127.0.0.1", 9092 + id)), rack, previous),
                nowMs));
        if (reply.error() == Errors.NONE) {
            epochs.put(id, reply.brokerEpoch());
            incarnations.put(id, incarnation);
        }
        return reply.error() == Errors.NONE ? reply.brokerEpoch() : -1;
    }

    /** A heartbeat from a broker fully caught up with the image. */
    BrokerHeartbeatReply heartbeat(int id) {
        return heartbeat(id, false, false);
    }

    BrokerHeartbeatReply heartbeat(int id, boolean wantFence, boolean wantShutDown) {
        return commit(controller.heartbeat(image, new BrokerHeartbeatRequest(id, epochs.getOrDefault(id, 0L), image.offset(),
                wantFence, wantShutDown), nowMs));
    }

    /** Registers and unfences brokers 0..n-1 (racks r0, r1... when {@code racks > 0}). */
    TestCluster withBrokers(int n, int racks) {
        for (int i = 0; i < n; i++) {
            register(i, racks > 0 ? "r" + (i % racks) : null, false);
        }
        for (int i = 0; i < n; i++) {
            heartbeat(i);
            heartbeat(i);
        }
        return this;
    }

    TopicImage createTopic(String name, int partitions, int rf) {
        List<TopicControl.CreateTopicResult> r = commit(controller.createTopics(image,
                List.of(new TopicControl.CreatableTopic(name, partitions, (short) rf, List.of(), Map.of())), false));
        assertThat(r.get(0).error().error()).isEqualTo(Errors.NONE);
        return image.topic(name).orElseThrow();
    }

    /** Creating a topic with no usable broker fails with INVALID_REPLICATION_FACTOR. */
    void createTopicFails() {
        List<TopicControl.CreateTopicResult> r = commit(controller.createTopics(image,
                List.of(new TopicControl.CreatableTopic("nope", 1, (short) 1, List.of(), Map.of())), false));
        assertThat(r.get(0).error().error()).isEqualTo(Errors.INVALID_REPLICATION_FACTOR);
    }

    void advance(long ms) {
        nowMs += ms;
    }

    Set<Integer> tick() {
        return commit(controller.tick(image, nowMs));
    }

    /** Replays the whole log from scratch, and the snapshot of the current image; both must equal the image. */
    void checkReplay() {
        MetadataImage replayed = MetadataImage.EMPTY;
        long offset = -1;
        for (byte[] entry : log) {
            replayed = replayed.apply(++offset, MetadataRecordSerde.deserialize(entry));
        }
        assertThat(replayed).isEqualTo(image);
        byte[] snapshot = MetadataRecordSerde.serialize(image.toRecords());
        assertThat(MetadataImage.fromSnapshot(image.offset(), MetadataRecordSerde.deserialize(snapshot))).isEqualTo(image);
    }
}
