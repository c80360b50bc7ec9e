package dev.varve.metadata.quorum;

import dev.varve.metadata.ControllerConfig;
import dev.varve.metadata.ControllerEnvelope;
import dev.varve.metadata.ControllerLogic;
import dev.varve.metadata.MetadataImage;
import dev.varve.metadata.PartitionState;
import dev.varve.metadata.MetadataRecord;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.BrokerHeartbeatRequestData;
import org.apache.kafka.common.message.BrokerHeartbeatResponseData;
import org.apache.kafka.common.message.BrokerRegistrationRequestData;
import org.apache.kafka.common.message.BrokerRegistrationResponseData;
import org.apache.kafka.common.message.CreateTopicsRequestData;
import org.apache.kafka.common.message.CreateTopicsResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.utils.Time;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * Commands from brokers reach the active controller through {@link ControllerClient} whichever voter
 * leads, are decided once, and every voter's image converges; after the leader stops, the next leader
 * serves them and knows every earlier decision.
 */
class QuorumControllerTest {
    @TempDir
    Path dir;

    private TestCluster cluster;
    private final Map<Integer, MetadataLoader> loaders = new LinkedHashMap<>();
    private final Map<Integer, QuorumController> controllers = new LinkedHashMap<>();
    private ControllerClient client;

    @AfterEach
    void tearDown() {
        if (client != null) {
            client.close();
        }
        controllers.values().forEach(QuorumController::close);
        if (cluster != null) {
            cluster.close();
        }
    }

    private void start(int id) throws Exception {
        start(id, new MetadataLoader(16, MetadataLoader.RETAINED_BYTES),
                () -> new ControllerLogic(ControllerConfig.defaults().withDefaultReplicationFactor((short) 3), Uuid::randomUuid,
                        (topic, configs) -> { }));
    }

    /** Starts voter {@code id} with its own loader and a controller deciding with {@code logic}. */
    private void start(int id, MetadataLoader loader, java.util.function.Supplier<ControllerLogic> logic) throws Exception {
        QuorumController controller = new QuorumController(id, loader, logic, Time.SYSTEM, 100);
        MetadataQuorum q = MetadataQuorum.start(cluster.config(id), loader, loader);
        cluster.running.put(id, q);
        controller.attach(q);
        loaders.put(id, loader);
        controllers.put(id, controller);
    }

    private ControllerReply call(ApiKeys key, ApiMessage request) throws Exception {
        byte[] bytes = client.send(ControllerEnvelope.encodeRequest(key, key.latestVersion(), request)).get(30, TimeUnit.SECONDS);
        ControllerReply reply = ControllerReply.decode(bytes);
        return reply;
    }

    private ApiMessage decide(ApiKeys key, ApiMessage request) throws Exception {
        long deadline = System.currentTimeMillis() + 30_000;
        while (true) {
            ControllerReply reply = call(key, request);
            if (reply.error() == Errors.NONE) {
                return ControllerEnvelope.decodeResponse(key, key.latestVersion(), reply.response());
            }
            assertThat(reply.error()).as(reply.message()).isEqualTo(Errors.NOT_CONTROLLER);
            assertThat(System.currentTimeMillis()).isLessThan(deadline);
            Thread.sleep(50);
        }
    }

    private long register(int brokerId) throws Exception {
        return register(brokerId, 9000 + brokerId);
    }

    private long register(int brokerId, int port) throws Exception {
        BrokerRegistrationRequestData req = new BrokerRegistrationRequestData().setBrokerId(brokerId)
                .setIncarnationId(Uuid.randomUuid()).setPreviousBrokerEpoch(-1);
        req.listeners().add(new BrokerRegistrationRequestData.Listener().setName("PLAINTEXT").setHost("127.0.0.1")
                .setPort(port));
        BrokerRegistrationResponseData resp = (BrokerRegistrationResponseData) decide(ApiKeys.BROKER_REGISTRATION, req);
        assertThat(resp.errorCode()).isEqualTo(Errors.NONE.code());
        return resp.brokerEpoch();
    }

    private BrokerHeartbeatResponseData heartbeat(int brokerId, long epoch, long offset) throws Exception {
        return (BrokerHeartbeatResponseData) decide(ApiKeys.BROKER_HEARTBEAT, new BrokerHeartbeatRequestData()
                .setBrokerId(brokerId).setBrokerEpoch(epoch).setCurrentMetadataOffset(offset));
    }

    private CreateTopicsResponseData.CreatableTopicResult create(String name) throws Exception {
        CreateTopicsRequestData req = new CreateTopicsRequestData();
        req.topics().add(new CreateTopicsRequestData.CreatableTopic().setName(name).setNumPartitions(3).setReplicationFactor((short) -1));
        return ((CreateTopicsResponseData) decide(ApiKeys.CREATE_TOPICS, req)).topics().iterator().next();
    }

    /**
     * Three voters, each a controller, a client with {@code attemptTimeoutMs} per attempt, and brokers 1-3
     * registered and unfenced; returns their broker epochs.
     */
    private Map<Integer, Long> startThreeVotersWithUnfencedBrokers(long attemptTimeoutMs) throws Exception {
        cluster = new TestCluster(dir, 3, 0, b -> b);
        for (int id = 1; id <= 3; id++) {
            start(id);
        }
        client = new ControllerClient(cluster.voters, "test-cluster", attemptTimeoutMs, 100);
        Map<Integer, Long> epochs = new LinkedHashMap<>();
        for (int b = 1; b <= 3; b++) {
            epochs.put(b, register(b));
        }
        // heartbeats with a caught-up offset unfence every broker
        await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> {
            for (int b = 1; b <= 3; b++) {
                assertThat(heartbeat(b, epochs.get(b), Long.MAX_VALUE - 1).isFenced()).isFalse();
            }
        });
        return epochs;
    }

    /** Stops the voter that is the active controller; returns its id. */
    private int stopActiveController() {
        int leader = controllers.entrySet().stream().filter(e -> e.getValue().isActive()).findFirst().orElseThrow().getKey();
        controllers.remove(leader).close();
        cluster.stop(leader);
        loaders.remove(leader);
        return leader;
    }

    @Test
    void commandsAreDecidedByWhicheverVoterLeadsAndSurviveFailover() throws Exception {
        Map<Integer, Long> epochs = startThreeVotersWithUnfencedBrokers(1_000);

        CreateTopicsResponseData.CreatableTopicResult created = create("orders");
        assertThat(created.errorCode()).isEqualTo(Errors.NONE.code());
        Uuid id = created.topicId();
        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
            for (MetadataLoader l : loaders.values()) {
                MetadataImage image = l.image();
                assertThat(image.topic("orders")).isPresent();
                assertThat(image.topic("orders").get().id()).isEqualTo(id);
                assertThat(image.topic("orders").get().partitions()).allSatisfy(p -> {
                    assertThat(p.replicas()).hasSize(3);
                    assertThat(p.hasLeader()).isTrue();
                });
            }
        });
        // decided once: the same name again is refused
        assertThat(create("orders").errorCode()).isEqualTo(Errors.TOPIC_ALREADY_EXISTS.code());

        // stop the active controller: another voter takes over and knows the topic
        int leader = stopActiveController();
        long t0 = System.nanoTime();
        int hb = leader == 1 ? 2 : 1;
        BrokerHeartbeatResponseData r = heartbeat(hb, epochs.get(hb), Long.MAX_VALUE - 1);
        long failoverMs = (System.nanoTime() - t0) / 1_000_000;
        System.out.println("first heartbeat after the controller stopped answered in " + failoverMs + " ms");
        assertThat(r.isFenced()).isFalse();
        // an election (300-600 ms timeouts) plus at most one attempt timeout (1 s) at the dead leader
        assertThat(failoverMs).as("brokers reach the new controller well within a session timeout").isLessThan(5_000);
        assertThat(create("orders").errorCode()).isEqualTo(Errors.TOPIC_ALREADY_EXISTS.code());
        assertThat(create("payments").errorCode()).isEqualTo(Errors.NONE.code());
        await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> {
            for (MetadataLoader l : loaders.values()) {
                assertThat(l.image().topic("payments")).isPresent();
            }
        });
    }

    /** A broker outside the voters follows the log by fetching it: entries in order, a snapshot when too far behind. */
    @Test
    void aBrokerThatIsNotAVoterFollowsTheLogByFetchingIt() throws Exception {
        cluster = new TestCluster(dir, 1, 0, b -> b);
        start(1);
        client = new ControllerClient(cluster.voters, "test-cluster", 1_000, 100);
        for (int b = 1; b <= 3; b++) {
            assertThat(heartbeat(b, register(b), Long.MAX_VALUE - 1).isFenced()).isFalse();
        }
        MetadataLoader follower = new MetadataLoader();
        // nothing applied yet: everything after offset -1
        fetchInto(follower);
        assertThat(follower.image()).isEqualTo(loaders.get(1).image());
        assertThat(create("x").errorCode()).isEqualTo(Errors.NONE.code());
        fetchInto(follower);
        assertThat(follower.image().topic("x")).isPresent();
        assertThat(follower.image()).isEqualTo(loaders.get(1).image());
        // up to date: the controller holds the fetch briefly, then answers with nothing
        MetadataFetch.Answer none = fetch(follower.image().offset());
        assertThat(none.isSnapshot()).isFalse();
        assertThat(none.entries()).isEmpty();
        // far behind what the controller retains: a snapshot of its image
        for (int i = 0; i < 20; i++) {
            register(100 + (i % 50));
        }
        MetadataLoader late = new MetadataLoader();
        MetadataFetch.Answer snap = fetch(-1);
        assertThat(snap.isSnapshot()).isTrue();
        late.onSnapshotLoaded(snap.snapshotOffset(), snap.snapshot());
        fetchInto(late);
        assertThat(late.image()).isEqualTo(loaders.get(1).image());
    }

    private MetadataFetch.Answer fetch(long after) throws Exception {
        ControllerReply reply = ControllerReply.decode(client.send(MetadataFetch.request(after, 1 << 20)).get(30, TimeUnit.SECONDS));
        assertThat(reply.error()).isEqualTo(Errors.NONE);
        return MetadataFetch.Answer.decode(reply.response());
    }

    private void fetchInto(MetadataLoader loader) throws Exception {
        while (loader.image().offset() < loaders.get(1).image().offset()) {
            MetadataFetch.Answer a = fetch(loader.image().offset());
            if (a.isSnapshot()) {
                loader.onSnapshotLoaded(a.snapshotOffset(), a.snapshot());
            }
            for (MetadataFetch.Entry e : a.entries()) {
                loader.onCommitted(e.index(), 0, e.bytes());
            }
        }
    }

    @Test
    void aBrokerThatStopsHeartbeatingIsFencedAndLosesItsLeaderships() throws Exception {
        cluster = new TestCluster(dir, 1, 0, b -> b);
        MetadataLoader loader = new MetadataLoader();
        start(1, loader, () -> new ControllerLogic(ControllerConfig.defaults().withBrokerSessionTimeoutMs(1_000)
                .withDefaultReplicationFactor((short) 2), Uuid::randomUuid, (t, c) -> { }));
        client = new ControllerClient(cluster.voters, "test-cluster", 1_000, 100);

        long e1 = register(1);
        long e2 = register(2);
        assertThat(heartbeat(1, e1, Long.MAX_VALUE - 1).isFenced()).isFalse();
        assertThat(heartbeat(2, e2, Long.MAX_VALUE - 1).isFenced()).isFalse();
        assertThat(create("t").errorCode()).isEqualTo(Errors.NONE.code());
        // broker 1 keeps heart-beating, broker 2 goes silent
        long until = System.currentTimeMillis() + 3_000;
        while (System.currentTimeMillis() < until) {
            heartbeat(1, e1, Long.MAX_VALUE - 1);
            Thread.sleep(200);
        }
        MetadataImage image = loader.image();
        assertThat(image.broker(2).orElseThrow().fenced()).isTrue();
        assertThat(image.broker(1).orElseThrow().fenced()).isFalse();
        assertThat(image.topic("t").orElseThrow().partitions()).allSatisfy(p -> assertThat(p.leader()).isEqualTo(1));
    }

    /**
     * Two brokers go silent; nothing listens on broker 2's endpoint any more (its process died), broker
     * 1's still accepts connections (alive but slow to heartbeat, or partitioned from the controller).
     * The controller's probe fences broker 2 and moves its leaderships about a quarter of the session
     * timeout after its last heartbeat; broker 1 keeps its session until it expires.
     */
    @Test
    void aSilentBrokerWhoseEndpointRefusesConnectionsIsFencedBeforeItsSessionTimeout() throws Exception {
        cluster = new TestCluster(dir, 1, 0, b -> b);
        MetadataLoader loader = new MetadataLoader();
        long sessionMs = 8_000;
        QuorumController controller = new QuorumController(1, loader, () -> new ControllerLogic(ControllerConfig.defaults()
                .withBrokerSessionTimeoutMs(sessionMs).withDefaultReplicationFactor((short) 2), Uuid::randomUuid, (t, c) -> { }),
                Time.SYSTEM, 100);
        controller.setEndpointProbe(new EndpointProbe(500, 500, System::currentTimeMillis));
        MetadataQuorum q = MetadataQuorum.start(cluster.config(1), loader, loader);
        cluster.running.put(1, q);
        controller.attach(q);
        controllers.put(1, controller);
        client = new ControllerClient(cluster.voters, "test-cluster", 1_000, 100);

        int deadPort;
        try (java.net.ServerSocket closed = new java.net.ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            deadPort = closed.getLocalPort();
        }
        try (java.net.ServerSocket alive = new java.net.ServerSocket(0, 50, java.net.InetAddress.getLoopbackAddress())) {
            long e1 = register(1, alive.getLocalPort());
            long e2 = register(2, deadPort);
            assertThat(heartbeat(1, e1, Long.MAX_VALUE - 1).isFenced()).isFalse();
            assertThat(heartbeat(2, e2, Long.MAX_VALUE - 1).isFenced()).isFalse();
            assertThat(create("t").errorCode()).isEqualTo(Errors.NONE.code());
            heartbeat(1, e1, Long.MAX_VALUE - 1);
            long silentSince = System.currentTimeMillis();
            heartbeat(2, e2, Long.MAX_VALUE - 1);

            await().atMost(Duration.ofMillis(sessionMs - 2_000)).until(() -> loader.image().broker(2).orElseThrow().fenced());
            long fencedAfterMs = System.currentTimeMillis() - silentSince;
            MetadataImage image = loader.image();
            assertThat(fencedAfterMs).isGreaterThanOrEqualTo(sessionMs / 4 - 200).isLessThan(sessionMs - 2_000);
            assertThat(image.broker(1).orElseThrow().fenced()).as("broker 1 accepts connections: its session decides").isFalse();
            assertThat(image.topic("t").orElseThrow().partitions()).allSatisfy(p -> {
                assertThat(p.leader()).isEqualTo(1);
                assertThat(p.isr()).containsExactly(1);
            });
        }
    }

    /**
     * A CreateTopics whose records exceed one metadata entry is committed as a metadata transaction over
     * several entries and appears whole, in one image (no image ever shows part of it).
     */
    @Test
    void aDecisionLargerThanAnEntryCommitsAsOneTransaction() throws Exception {
        cluster = new TestCluster(dir, 1, 0, b -> b.maxEntryBytes(64 * 1024));
        MetadataLoader loader = new MetadataLoader();
        List<Integer> partitionCounts = new java.util.concurrent.CopyOnWriteArrayList<>();
        loader.addListener((previous, next) -> partitionCounts.add(next.topic("big").map(t -> t.partitionCount()).orElse(0)));
        start(1, loader, () -> new ControllerLogic(ControllerConfig.defaults(), Uuid::randomUuid, (t, c) -> { }));
        client = new ControllerClient(cluster.voters, "test-cluster", 10_000, 100);
        long e1 = register(1);
        assertThat(heartbeat(1, e1, Long.MAX_VALUE - 1).isFenced()).isFalse();
        long before = loader.lastIndex();

        CreateTopicsRequestData req = new CreateTopicsRequestData();
        req.topics().add(new CreateTopicsRequestData.CreatableTopic().setName("big").setNumPartitions(5_000).setReplicationFactor((short) 1));
        CreateTopicsResponseData.CreatableTopicResult result = ((CreateTopicsResponseData) decide(ApiKeys.CREATE_TOPICS, req))
                .topics().iterator().next();

        assertThat(result.errorCode()).isEqualTo(Errors.NONE.code());
        assertThat(loader.image().topic("big").orElseThrow().partitionCount()).isEqualTo(5_000);
        assertThat(loader.lastIndex() - before).as("entries the decision took").isGreaterThan(2);
        assertThat(partitionCounts).as("partition counts of the published images").containsOnly(0, 5_000);
        assertThat(loader.inTransaction()).isFalse();
    }

    /**
     * A controller that died inside a metadata transaction left it open in the log (simulated: the begin
     * and part of a topic appended straight to the quorum, then the node restarted). The next active
     * controller aborts it before deciding anything: the half topic never appears and commands work.
     */
    @Test
    void theNextControllerAbortsATransactionLeftOpen() throws Exception {
        cluster = new TestCluster(dir, 1, 0, b -> b);
        MetadataLoader first = new MetadataLoader();
        MetadataQuorum q = MetadataQuorum.start(cluster.config(1), first, first);
        cluster.running.put(1, q);
        await().atMost(Duration.ofSeconds(20)).until(q::isLeader);
        Uuid half = Uuid.randomUuid();
        q.append(dev.varve.metadata.MetadataRecordSerde.serialize(List.of(new MetadataRecord.BeginTransaction("test"),
                new MetadataRecord.TopicRecord("half", half)))).get(10, TimeUnit.SECONDS);
        assertThat(first.inTransaction()).isTrue();
        cluster.stop(1);

        MetadataLoader loader = new MetadataLoader();
        start(1, loader, () -> new ControllerLogic(ControllerConfig.defaults(), Uuid::randomUuid, (t, c) -> { }));
        client = new ControllerClient(cluster.voters, "test-cluster", 10_000, 100);
        long e1 = register(1);
        assertThat(heartbeat(1, e1, Long.MAX_VALUE - 1).isFenced()).isFalse();
        assertThat(create("t").errorCode()).isEqualTo(Errors.NONE.code());
        assertThat(loader.inTransaction()).isFalse();
        assertThat(loader.image().topic("half")).isEmpty();
        assertThat(loader.image().topic("t")).isPresent();
    }

    /**
     * A refused AlterPartition retried later (the channel resent it before the refusal arrived) gets
     * the refusal, even though the replica it adds has become eligible meanwhile: its leader reverted on
     * the refusal, so accepting the late copy would put a replica that lacks committed records into the
     * ISR (found by ReplicationProperties with simulation seed -7079667).
     */
    @Test
    void aRefusedAlterPartitionRetriedAfterTheReplicaBecameEligibleGetsTheRefusal() throws Exception {
        cluster = new TestCluster(dir, 1, 0, b -> b);
        MetadataLoader loader = new MetadataLoader();
        start(1, loader, () -> new ControllerLogic(ControllerConfig.defaults().withBrokerSessionTimeoutMs(1_000)
                .withDefaultReplicationFactor((short) 2), Uuid::randomUuid, (t, c) -> { }));
        client = new ControllerClient(cluster.voters, "test-cluster", 1_000, 100);
        long e1 = register(1);
        long e2 = register(2);
        assertThat(heartbeat(1, e1, Long.MAX_VALUE - 1).isFenced()).isFalse();
        assertThat(heartbeat(2, e2, Long.MAX_VALUE - 1).isFenced()).isFalse();
        assertThat(create("t").errorCode()).isEqualTo(Errors.NONE.code());
        long until = System.currentTimeMillis() + 3_000; // broker 2 goes silent and is fenced
        while (System.currentTimeMillis() < until) {
            heartbeat(1, e1, Long.MAX_VALUE - 1);
            Thread.sleep(200);
        }
        org.apache.kafka.common.Uuid topicId = loader.image().topic("t").orElseThrow().id();
        PartitionState p = loader.image().topic("t").orElseThrow().partition(0);
        assertThat(p.leader()).isEqualTo(1);
        assertThat(p.isr()).containsExactly(1);

        org.apache.kafka.common.message.AlterPartitionRequestData expand = new org.apache.kafka.common.message.AlterPartitionRequestData()
                .setBrokerId(1).setBrokerEpoch(e1);
        org.apache.kafka.common.message.AlterPartitionRequestData.PartitionData pd =
                new org.apache.kafka.common.message.AlterPartitionRequestData.PartitionData().setPartitionIndex(0)
                        .setLeaderEpoch(p.leaderEpoch()).setPartitionEpoch(p.partitionEpoch());
        pd.newIsrWithEpochs().add(new org.apache.kafka.common.message.AlterPartitionRequestData.BrokerState().setBrokerId(1).setBrokerEpoch(e1));
        pd.newIsrWithEpochs().add(new org.apache.kafka.common.message.AlterPartitionRequestData.BrokerState().setBrokerId(2).setBrokerEpoch(e2));
        expand.topics().add(new org.apache.kafka.common.message.AlterPartitionRequestData.TopicData().setTopicId(topicId)
                .setPartitions(new java.util.ArrayList<>(List.of(pd))));
        byte[] command = ControllerEnvelope.encodeRequest(ApiKeys.ALTER_PARTITION, ApiKeys.ALTER_PARTITION.latestVersion(),
                expand, Uuid.randomUuid());
        assertThat(alterPartitionError(client.send(command).get(30, TimeUnit.SECONDS))).isEqualTo(Errors.INELIGIBLE_REPLICA);

        await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> {
            heartbeat(1, e1, Long.MAX_VALUE - 1);
            assertThat(heartbeat(2, e2, Long.MAX_VALUE - 1).isFenced()).isFalse(); // eligible again
        });
        assertThat(alterPartitionError(client.send(command).get(30, TimeUnit.SECONDS)))
                .as("the same command, retried").isEqualTo(Errors.INELIGIBLE_REPLICA);
        assertThat(loader.image().topic("t").orElseThrow().partition(0).isr()).containsExactly(1);
    }

    private static Errors alterPartitionError(byte[] reply) {
        ControllerReply r = ControllerReply.decode(reply);
        assertThat(r.error()).as(r.message()).isEqualTo(Errors.NONE);
        org.apache.kafka.common.message.AlterPartitionResponseData data = (org.apache.kafka.common.message.AlterPartitionResponseData)
                ControllerEnvelope.decodeResponse(ApiKeys.ALTER_PARTITION, ApiKeys.ALTER_PARTITION.latestVersion(), r.response());
        assertThat(data.errorCode()).isEqualTo(Errors.NONE.code());
        return Errors.forCode(data.topics().get(0).partitions().get(0).errorCode());
    }

    /** A CreateTopics command with a request id, as a broker's ControllerChannel sends it. */
    private static byte[] createCommand(String name, Uuid requestId) {
        CreateTopicsRequestData req = new CreateTopicsRequestData();
        req.topics().add(new CreateTopicsRequestData.CreatableTopic().setName(name).setNumPartitions(3).setReplicationFactor((short) -1));
        return ControllerEnvelope.encodeRequest(ApiKeys.CREATE_TOPICS, ApiKeys.CREATE_TOPICS.latestVersion(), req, requestId);
    }

    private CreateTopicsResponseData.CreatableTopicResult createResult(byte[] reply) {
        ControllerReply r = ControllerReply.decode(reply);
        assertThat(r.error()).as(r.message()).isEqualTo(Errors.NONE);
        return ((CreateTopicsResponseData) ControllerEnvelope.decodeResponse(ApiKeys.CREATE_TOPICS,
                ApiKeys.CREATE_TOPICS.latestVersion(), r.response())).topics().iterator().next();
    }

    /**
     * The Kafka Streams failure of the scale issue: a decision slower than the client's attempt timeout
     * is sent again by the Ratis client; the retry must get the first attempt's answer (NONE), not a
     * second decision (TOPIC_ALREADY_EXISTS for the topic the first attempt created).
     */
    @Test
    void aSlowDecisionRetriedByTheClientGetsItsFirstAnswer() throws Exception {
        cluster = new TestCluster(dir, 1, 0, b -> b);
        java.util.concurrent.atomic.AtomicInteger decisions = new java.util.concurrent.atomic.AtomicInteger();
        start(1, new MetadataLoader(),
                () -> new ControllerLogic(ControllerConfig.defaults().withDefaultReplicationFactor((short) 1), Uuid::randomUuid,
                        (topic, configs) -> {
                            if (topic.equals("slow")) {
                                decisions.incrementAndGet();
                                try {
                                    Thread.sleep(1_500); // longer than the client's 1 s attempt timeout
                                } catch (InterruptedException e) {
                                    Thread.currentThread().interrupt();
                                }
                            }
                        }));
        client = new ControllerClient(cluster.voters, "test-cluster", 1_000, 100);
        assertThat(heartbeat(1, register(1), Long.MAX_VALUE - 1).isFenced()).isFalse();

        CreateTopicsResponseData.CreatableTopicResult first =
                createResult(client.send(createCommand("slow", Uuid.randomUuid())).get(30, TimeUnit.SECONDS));
        assertThat(first.errorCode()).as(first.errorMessage()).isEqualTo(Errors.NONE.code());
        assertThat(decisions.get()).as("the retried attempt joined the first decision").isEqualTo(1);
    }

    /**
     * Retries of one command (same request id) while it is decided, after it committed, and at the next
     * controller after a failover all get the first answer; the same name under a new request id is a new
     * command and is refused.
     */
    @Test
    void aRetriedCommandGetsItsFirstAnswerHereAndAtTheNextController() throws Exception {
        Map<Integer, Long> epochs = startThreeVotersWithUnfencedBrokers(1_000);
        Uuid requestId = Uuid.randomUuid();
        byte[] command = createCommand("orders", requestId);
        // two attempts at once: one decision
        java.util.concurrent.CompletableFuture<byte[]> a = client.send(command);
        java.util.concurrent.CompletableFuture<byte[]> b = client.send(command);
        CreateTopicsResponseData.CreatableTopicResult ra = createResult(a.get(30, TimeUnit.SECONDS));
        CreateTopicsResponseData.CreatableTopicResult rb = createResult(b.get(30, TimeUnit.SECONDS));
        assertThat(ra.errorCode()).isEqualTo(Errors.NONE.code());
        assertThat(rb).isEqualTo(ra);
        // after the commit
        assertThat(createResult(client.send(command).get(30, TimeUnit.SECONDS))).isEqualTo(ra);
        // a new command of the same name is decided and refused
        assertThat(createResult(client.send(createCommand("orders", Uuid.randomUuid())).get(30, TimeUnit.SECONDS)).errorCode())
                .isEqualTo(Errors.TOPIC_ALREADY_EXISTS.code());

        stopActiveController();
        // the next controller answers the retry from the committed log
        await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> {
            ControllerReply r = ControllerReply.decode(client.send(command).get(30, TimeUnit.SECONDS));
            assertThat(r.error()).isEqualTo(Errors.NONE);
        });
        assertThat(createResult(client.send(command).get(30, TimeUnit.SECONDS))).isEqualTo(ra);
    }

    /** Commands that arrive while an entry commits are decided in order and committed together (group commit). */
    @Test
    void concurrentCommandsShareMetadataEntries() throws Exception {
        Map<Integer, Long> epochs = startThreeVotersWithUnfencedBrokers(5_000);
        int n = 200;
        // 25 senders (as many brokers forwarding their clients' CreateTopics), 8 commands each at once
        java.util.List<ControllerClient> senders = new java.util.ArrayList<>();
        for (int i = 0; i < 25; i++) {
            ControllerClient c = new ControllerClient(cluster.voters, "test-cluster", 5_000, 100);
            senders.add(c);
            // connected and pointed at the leader before the burst
            ControllerReply.decode(c.send(ControllerEnvelope.encodeRequest(ApiKeys.BROKER_HEARTBEAT,
                    ApiKeys.BROKER_HEARTBEAT.latestVersion(), new BrokerHeartbeatRequestData().setBrokerId(1)
                            .setBrokerEpoch(epochs.get(1)).setCurrentMetadataOffset(Long.MAX_VALUE - 1))).get(30, TimeUnit.SECONDS));
        }
        java.util.List<java.util.concurrent.CompletableFuture<byte[]>> sent = new java.util.ArrayList<>();
        for (int i = 0; i < n; i++) {
            // every fourth name repeats an earlier one: decided in arrival order, exactly one of each wins
            sent.add(senders.get(i % senders.size()).send(createCommand("t-" + (i % 4 == 3 ? i - 1 : i), Uuid.randomUuid())));
        }
        java.util.Set<Long> offsets = new java.util.TreeSet<>();
        java.util.Map<String, Integer> created = new java.util.HashMap<>();
        for (java.util.concurrent.CompletableFuture<byte[]> f : sent) {
            ControllerReply r = ControllerReply.decode(f.get(60, TimeUnit.SECONDS));
            assertThat(r.error()).as(r.message()).isEqualTo(Errors.NONE);
            CreateTopicsResponseData.CreatableTopicResult t = createResult(f.get());
            if (t.errorCode() == Errors.NONE.code()) {
                created.merge(t.name(), 1, Integer::sum);
                offsets.add(r.metadataOffset());
            } else {
                assertThat(t.errorCode()).isEqualTo(Errors.TOPIC_ALREADY_EXISTS.code());
            }
        }
        senders.forEach(ControllerClient::close);
        assertThat(created).hasSize(150).allSatisfy((name, count) -> assertThat(count).isEqualTo(1));
        assertThat(loaders.get(1).image().topicsByName()).hasSize(150);
        System.out.println(created.size() + " topics created in " + offsets.size() + " metadata entries");
        assertThat(offsets.size()).as("creations committed in shared entries").isLessThan(created.size());
    }
}
