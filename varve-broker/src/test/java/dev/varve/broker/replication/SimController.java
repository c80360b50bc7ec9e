package dev.varve.broker.replication;

import dev.varve.metadata.ClusterControl;
import dev.varve.metadata.ControllerApis;
import dev.varve.metadata.ControllerConfig;
import dev.varve.metadata.ControllerLogic;
import dev.varve.metadata.ControllerResult;
import dev.varve.metadata.MetadataImage;
import dev.varve.metadata.MetadataRecord;
import dev.varve.metadata.PartitionState;
import dev.varve.metadata.TopicControl;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.AlterPartitionRequestData;
import org.apache.kafka.common.message.AlterPartitionResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.protocol.Errors;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.function.Consumer;

/**
 * The active controller as a simulation node: the real decision code ({@link ControllerLogic} from
 * varve-metadata: registration, heartbeats and fencing, elections; AlterPartition through
 * {@link ControllerApis} as it arrives from the wire, member broker epochs included) on a
 * {@link MetadataImage}, with every decision committed at once (the Raft quorum is not simulated: one
 * controller that never fails over). After each commit, and periodically, the image is published to
 * every broker through the network, where it may be late, lost or overtaken by a newer one.
 */
final class SimController {
    static final String TOPIC = "t";

    private final ReplicationSimulation sim;
    private final SimNetwork net;
    final ControllerLogic logic;
    private final ControllerApis apis;
    MetadataImage image = MetadataImage.EMPTY;
    Uuid topicId;
    /** Leader epoch to the broker the image made leader in it: one leader per epoch, as the controller decides it. */
    final Map<Integer, Integer> leaderOfEpoch = new HashMap<>();
    int commits;

    SimController(ReplicationSimulation sim, SimNetwork net, Random random, ReplicationSimulation.Options options) {
        this.sim = sim;
        this.net = net;
        ControllerConfig config = ControllerConfig.defaults().withBrokerSessionTimeoutMs(options.brokerSessionTimeoutMs());
        this.logic = new ControllerLogic(config, () -> new Uuid(random.nextLong(), random.nextLong()), (t, c) -> { });
        this.apis = new ControllerApis(logic);
    }

    /** Registers and unfences every broker and creates the topic: the cluster as it is before the history starts. */
    Map<Integer, Long> bootstrap(List<Integer> assignment, ReplicationSimulation.Options options) {
        Map<Integer, Long> epochs = new HashMap<>();
        for (int b = 0; b < ReplicationSimulation.REPLICA_COUNT; b++) {
            ClusterControl.BrokerRegistrationReply reply = commit(logic.registerBroker(image,
                    registration(b, new Uuid(0, b + 1), -1), net.nowMs));
            epochs.put(b, reply.brokerEpoch());
        }
        for (int round = 0; round < 2; round++) {
            for (int b = 0; b < ReplicationSimulation.REPLICA_COUNT; b++) {
                commit(logic.heartbeat(image, new ClusterControl.BrokerHeartbeatRequest(b, epochs.get(b), image.offset(), false, false),
                        net.nowMs));
            }
        }
        Map<String, String> configs = new HashMap<>();
        configs.put(TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG, Integer.toString(options.minInsyncReplicas()));
        if (options.uncleanElection()) {
            configs.put(TopicConfig.UNCLEAN_LEADER_ELECTION_ENABLE_CONFIG, "true");
        }
        List<TopicControl.CreateTopicResult> created = commit(logic.createTopics(image, List.of(new TopicControl.CreatableTopic(
                TOPIC, -1, (short) -1, Map.of(0, assignment), configs)), false));
        if (created.get(0).error().error() != Errors.NONE) {
            throw new IllegalStateException("cannot create the topic: " + created.get(0).error());
        }
        topicId = image.topic(TOPIC).orElseThrow().id();
        recordLeader();
        return epochs;
    }

    PartitionState partition() {
        return image.partition(topicId, 0);
    }

    static ClusterControl.BrokerRegistrationRequest registration(int brokerId, Uuid incarnation, long previousBrokerEpoch) {
        return new ClusterControl.BrokerRegistrationRequest(brokerId, incarnation,
                List.of(new MetadataRecord.Endpoint("REPLICATION", "b" + brokerId, 9092)), null, previousBrokerEpoch);
    }

    // ---------------------------------------------------------------- requests (run when a message arrives)

    void onRegistration(ClusterControl.BrokerRegistrationRequest req, SimBroker from, long incarnation) {
        ClusterControl.BrokerRegistrationReply reply = commit(logic.registerBroker(image, req, net.nowMs));
        sim.trace("ctl: registration of b" + req.brokerId() + " (previous epoch " + req.previousBrokerEpoch() + ") -> "
                + reply.error() + " epoch " + reply.brokerEpoch() + " " + partition());
        net.send(SimNetwork.CONTROLLER, from.id, "registration reply", () -> from.onRegistrationReply(reply, incarnation));
    }

    void onHeartbeat(ClusterControl.BrokerHeartbeatRequest req, SimBroker from, long incarnation) {
        PartitionState before = partition();
        ClusterControl.BrokerHeartbeatReply reply = commit(logic.heartbeat(image, req, net.nowMs));
        if (!partition().equals(before) || reply.shouldShutDown()) {
            sim.trace("ctl: heartbeat of b" + req.brokerId() + " -> " + reply + " " + partition());
        }
        net.send(SimNetwork.CONTROLLER, from.id, "heartbeat reply", () -> from.onHeartbeatReply(reply, incarnation));
    }

    /**
     * AlterPartition through {@link ControllerApis}, the controller's request layer, so that the member
     * broker epochs (KIP-903) are checked as in production.
     */
    void onAlterPartition(AlterPartitionRequestData req, SimBroker from, Consumer<AlterPartitionResponseData> answer) {
        AlterPartitionResponseData reply = (AlterPartitionResponseData) commit(apis.handle(image, ApiKeys.ALTER_PARTITION, req,
                net.nowMs));
        AlterPartitionResponseData.PartitionData pd = reply.topics().isEmpty() || reply.topics().get(0).partitions().isEmpty()
                ? null : reply.topics().get(0).partitions().get(0);
        AlterPartitionRequestData.PartitionData asked = req.topics().get(0).partitions().get(0);
        sim.trace("ctl: AlterPartition from b" + req.brokerId() + " " + asked.newIsrWithEpochs().stream()
                .map(m -> m.brokerId() + "@" + m.brokerEpoch()).toList() + " (epochs " + asked.leaderEpoch() + "/"
                + asked.partitionEpoch() + ") -> " + Errors.forCode(pd == null ? reply.errorCode() : pd.errorCode()) + " " + partition());
        net.send(SimNetwork.CONTROLLER, from.id, "AlterPartition reply", () -> answer.accept(reply));
    }

    /** The session timer: fences brokers that stopped heartbeating. */
    void tick() {
        Set<Integer> fenced = commit(logic.tick(image, net.nowMs));
        if (!fenced.isEmpty()) {
            sim.trace("ctl: fenced " + fenced + " (session expired) " + partition());
        }
    }

    /** A preferred-leader election (the periodic rebalance, or an operator's). */
    void electPreferred() {
        PartitionState before = partition();
        commit(logic.electLeaders(image, ElectionType.PREFERRED, List.of(new TopicPartition(TOPIC, 0))));
        if (!partition().equals(before)) {
            sim.trace("ctl: preferred election " + partition());
        }
    }

    /** Sends the current image to every broker. */
    void publish() {
        MetadataImage snapshot = image;
        for (SimBroker b : sim.brokers) {
            net.send(SimNetwork.CONTROLLER, b.id, "metadata@" + snapshot.offset(), () -> b.onMetadata(snapshot));
        }
    }

    // ---------------------------------------------------------------- internals

    private <T> T commit(ControllerResult<T> result) {
        if (!result.records().isEmpty()) {
            image = image.apply(image.offset() + 1, result.records());
            commits++;
            recordLeader();
            if (topicId != null) {
                publish();
            }
        }
        return result.response();
    }

    private void recordLeader() {
        if (topicId == null) {
            return;
        }
        PartitionState p = partition();
        if (p.hasLeader()) {
            Integer previous = leaderOfEpoch.putIfAbsent(p.leaderEpoch(), p.leader());
            if (previous != null && previous != p.leader()) {
                throw sim.violation("controller: leader epoch " + p.leaderEpoch() + " given to b" + p.leader() + " after b" + previous);
            }
        }
    }
}
