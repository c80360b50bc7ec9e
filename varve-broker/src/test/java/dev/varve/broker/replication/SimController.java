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

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Consumer;

/**
 * The active controller as a simulation node: the real decision code ({@link ControllerLogic} from
 * varve-metadata: registration, heartbeats and fencing, elections; AlterPartition through
 * {@link ControllerApis} as it arrives from the wire, member broker epochs included) on a
 * {@link MetadataImage}, with every decision committed at once (the Raft quorum is not simulated: one
 * controller that never fails over). After each commit, and periodically, the image is published to
 * every broker through the network, where it may be late, lost or overtaken by a newer one.
 *
 * <p>The simulation's one topic has several partitions, each on all three brokers in its own order (its
 * own preferred leader). A decision covers all of them as in production: fencing a broker moves all
 * its leaderships in one commit, a preferred election asks for every partition, an AlterPartition
 * request carries every partition its leader's batcher coalesced. Traces show the partitions a
 * decision changed.
 */
final class SimController {
    static final String TOPIC = "t";

    private final ReplicationSimulation sim;
    private final SimNetwork net;
    final ControllerLogic logic;
    private final ControllerApis apis;
    MetadataImage image = MetadataImage.EMPTY;
    Uuid topicId;
    int partitionCount;
    /**
     * Per partition, leader epoch to the broker the image made leader in it: one leader per epoch and
     * partition, as the controller decides it.
     */
    final List<Map<Integer, Integer>> leaderOfEpoch = new ArrayList<>();
    int commits;

    SimController(ReplicationSimulation sim, SimNetwork net, Random random, ReplicationSimulation.Options options) {
        this.sim = sim;
        this.net = net;
        ControllerConfig config = ControllerConfig.defaults().withBrokerSessionTimeoutMs(options.brokerSessionTimeoutMs());
        this.logic = new ControllerLogic(config, () -> new Uuid(random.nextLong(), random.nextLong()), (t, c) -> { });
        this.apis = new ControllerApis(logic);
    }

    /**
     * Registers and unfences every broker and creates the topic with one partition per entry of
     * {@code assignments} (its replicas, preferred leader first): the cluster as it is before the history
     * starts.
     */
    Map<Integer, Long> bootstrap(List<List<Integer>> assignments, ReplicationSimulation.Options options) {
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
        List<dev.varve.metadata.ManualAssignments.PartitionReplicas> byPartition = new ArrayList<>();
        for (int p = 0; p < assignments.size(); p++) {
            byPartition.add(new dev.varve.metadata.ManualAssignments.PartitionReplicas(p, assignments.get(p)));
            leaderOfEpoch.add(new HashMap<>());
        }
        partitionCount = assignments.size();
        List<TopicControl.CreateTopicResult> created = commit(logic.createTopics(image, List.of(new TopicControl.CreatableTopic(
                TOPIC, -1, (short) -1, byPartition, configs)), false));
        if (created.get(0).error().error() != Errors.NONE) {
            throw new IllegalStateException("cannot create the topic: " + created.get(0).error());
        }
        topicId = image.topic(TOPIC).orElseThrow().id();
        recordLeader();
        return epochs;
    }

    PartitionState partition(int p) {
        return image.partition(topicId, p);
    }

    /** The partitions whose state differs from {@code before}'s, for a trace line ("" when none). */
    String changedSince(MetadataImage before) {
        StringBuilder b = new StringBuilder();
        for (int p = 0; p < partitionCount; p++) {
            PartitionState now = partition(p);
            if (topicId == null || before.topic(topicId).isEmpty() || !now.equals(before.partition(topicId, p))) {
                b.append(' ').append(describe(now));
            }
        }
        return b.toString();
    }

    /** One partition's state, short: {@code p1[leader 2@5/9 isr [2, 0] elr [] lkElr []]}. */
    static String describe(PartitionState s) {
        return "p" + s.partition() + "[leader " + s.leader() + "@" + s.leaderEpoch() + "/" + s.partitionEpoch() + " isr " + s.isr()
                + " elr " + s.elr() + (s.lastKnownElr().isEmpty() ? "" : " lkElr " + s.lastKnownElr()) + "]";
    }

    /** Every partition's state, for the failure message. */
    String describeAll() {
        StringBuilder b = new StringBuilder();
        for (int p = 0; p < partitionCount; p++) {
            b.append(p == 0 ? "" : " ").append(describe(partition(p)));
        }
        return b.toString();
    }

    static ClusterControl.BrokerRegistrationRequest registration(int brokerId, Uuid incarnation, long previousBrokerEpoch) {
        return new ClusterControl.BrokerRegistrationRequest(brokerId, incarnation,
                List.of(new MetadataRecord.Endpoint("REPLICATION", "b" + brokerId, 9092)), null, previousBrokerEpoch);
    }

    // ---------------------------------------------------------------- requests (run when a message arrives)

    void onRegistration(ClusterControl.BrokerRegistrationRequest req, SimBroker from, long incarnation) {
        MetadataImage before = image;
        ClusterControl.BrokerRegistrationReply reply = commit(logic.registerBroker(image, req, net.nowMs));
        sim.trace("ctl: registration of b" + req.brokerId() + " (previous epoch " + req.previousBrokerEpoch() + ") -> "
                + reply.error() + " epoch " + reply.brokerEpoch() + changedSince(before));
        net.send(SimNetwork.CONTROLLER, from.id, "registration reply", () -> from.onRegistrationReply(reply, incarnation));
    }

    void onHeartbeat(ClusterControl.BrokerHeartbeatRequest req, SimBroker from, long incarnation) {
        MetadataImage before = image;
        ClusterControl.BrokerHeartbeatReply reply = commit(logic.heartbeat(image, req, net.nowMs));
        String changed = changedSince(before);
        if (!changed.isEmpty() || reply.shouldShutDown()) {
            sim.trace("ctl: heartbeat of b" + req.brokerId() + " -> " + reply + changed);
        }
        net.send(SimNetwork.CONTROLLER, from.id, "heartbeat reply", () -> from.onHeartbeatReply(reply, incarnation));
    }

    /**
     * AlterPartition through {@link ControllerApis}, the controller's request layer, so that the member
     * broker epochs (KIP-903) are checked as in production. A request carries every partition its
     * leader's batcher coalesced; the trace names each with its answer.
     */
    /**
     * Answers by request id, as the quorum controller keeps them (a {@code CommandReply} committed with
     * the decision, also for a refused AlterPartition): a resent copy of a request gets its first answer.
     */
    private final Map<Object, AlterPartitionResponseData> answers = new java.util.HashMap<>();

    void onAlterPartition(AlterPartitionRequestData req, Object requestId, SimBroker from,
                          Consumer<AlterPartitionResponseData> answer) {
        AlterPartitionResponseData first = answers.get(requestId);
        if (first != null) {
            sim.trace("ctl: AlterPartition from b" + req.brokerId() + " resent: its first answer again");
            net.send(SimNetwork.CONTROLLER, from.id, "AlterPartition reply", () -> answer.accept(first));
            return;
        }
        MetadataImage before = image;
        AlterPartitionResponseData reply = (AlterPartitionResponseData) commit(apis.handle(image, ApiKeys.ALTER_PARTITION, req,
                net.nowMs));
        Map<Integer, Errors> answered = new TreeMap<>();
        for (AlterPartitionResponseData.TopicData t : reply.topics()) {
            for (AlterPartitionResponseData.PartitionData pd : t.partitions()) {
                answered.put(pd.partitionIndex(), Errors.forCode(pd.errorCode()));
            }
        }
        StringBuilder asked = new StringBuilder();
        for (AlterPartitionRequestData.TopicData t : req.topics()) {
            for (AlterPartitionRequestData.PartitionData pd : t.partitions()) {
                asked.append(asked.isEmpty() ? "" : ", ").append('p').append(pd.partitionIndex()).append(' ')
                        .append(pd.newIsrWithEpochs().stream().map(m -> m.brokerId() + "@" + m.brokerEpoch()).toList())
                        .append(" (epochs ").append(pd.leaderEpoch()).append('/').append(pd.partitionEpoch()).append(") -> ")
                        .append(answered.getOrDefault(pd.partitionIndex(), Errors.forCode(reply.errorCode())));
            }
        }
        sim.trace("ctl: AlterPartition from b" + req.brokerId() + " " + asked + (reply.errorCode() == 0 ? ""
                : " request error " + Errors.forCode(reply.errorCode())) + changedSince(before));
        answers.put(requestId, reply);
        net.send(SimNetwork.CONTROLLER, from.id, "AlterPartition reply", () -> answer.accept(reply));
    }

    /** The session timer: fences brokers that stopped heartbeating. */
    void tick() {
        MetadataImage before = image;
        Set<Integer> fenced = commit(logic.tick(image, net.nowMs));
        if (!fenced.isEmpty()) {
            sim.trace("ctl: fenced " + new TreeSet<>(fenced) + " (session expired)" + changedSince(before));
        }
    }

    /** A preferred-leader election of every partition (the periodic rebalance, or an operator's). */
    void electPreferred() {
        MetadataImage before = image;
        List<TopicPartition> all = new ArrayList<>();
        for (int p = 0; p < partitionCount; p++) {
            all.add(new TopicPartition(TOPIC, p));
        }
        commit(logic.electLeaders(image, ElectionType.PREFERRED, all));
        String changed = changedSince(before);
        if (!changed.isEmpty()) {
            sim.trace("ctl: preferred election" + changed);
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
        for (int i = 0; i < partitionCount; i++) {
            PartitionState p = partition(i);
            if (p.hasLeader()) {
                Integer previous = leaderOfEpoch.get(i).putIfAbsent(p.leaderEpoch(), p.leader());
                if (previous != null && previous != p.leader()) {
                    throw sim.violation("controller: leader epoch " + p.leaderEpoch() + " of p" + i + " given to b" + p.leader()
                            + " after b" + previous);
                }
            }
        }
    }
}
