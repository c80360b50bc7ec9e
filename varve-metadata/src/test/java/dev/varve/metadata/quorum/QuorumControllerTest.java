package dev.varve.metadata.quorum;

import dev.varve.metadata.ControllerConfig;
import dev.varve.metadata.ControllerEnvelope;
import dev.varve.metadata.ControllerLogic;
import dev.varve.metadata.MetadataImage;
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
        MetadataLoader loader = new MetadataLoader(16, MetadataLoader.RETAINED_BYTES);
        QuorumController controller = new QuorumController(id, loader,
                () -> new ControllerLogic(ControllerConfig.defaults().withDefaultReplicationFactor((short) 3), Uuid::randomUuid,
                        (topic, configs) -> { }),
                Time.SYSTEM, 100);
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
        BrokerRegistrationRequestData req = new BrokerRegistrationRequestData().setBrokerId(brokerId)
                .setIncarnationId(Uuid.randomUuid()).setPreviousBrokerEpoch(-1);
        req.listeners().add(new BrokerRegistrationRequestData.Listener().setName("PLAINTEXT").setHost("127.0.0.1")
                .setPort(9000 + brokerId));
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

    @Test
    void commandsAreDecidedByWhicheverVoterLeadsAndSurviveFailover() throws Exception {
        cluster = new TestCluster(dir, 3, 0, b -> b);
        for (int id = 1; id <= 3; id++) {
            start(id);
        }
        client = new ControllerClient(cluster.voters, "test-cluster", 1_000, 100);

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
        int leader = controllers.entrySet().stream().filter(e -> e.getValue().isActive()).findFirst().orElseThrow().getKey();
        controllers.remove(leader).close();
        cluster.stop(leader);
        loaders.remove(leader);
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
        QuorumController controller = new QuorumController(1, loader,
                () -> new ControllerLogic(ControllerConfig.defaults().withBrokerSessionTimeoutMs(1_000)
                        .withDefaultReplicationFactor((short) 2), Uuid::randomUuid, (t, c) -> { }),
                Time.SYSTEM, 100);
        MetadataQuorum q = MetadataQuorum.start(cluster.config(1), loader, loader);
        cluster.running.put(1, q);
        controller.attach(q);
        controllers.put(1, controller);
        loaders.put(1, loader);
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
}
