package dev.varve.metadata.quorum;

import dev.varve.metadata.ControllerConfig;
import dev.varve.metadata.ControllerEnvelope;
import dev.varve.metadata.ControllerLogic;
import dev.varve.metadata.MetadataRecord;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.AddRaftVoterRequestData;
import org.apache.kafka.common.message.AddRaftVoterResponseData;
import org.apache.kafka.common.message.CreateTopicsRequestData;
import org.apache.kafka.common.message.CreateTopicsResponseData;
import org.apache.kafka.common.message.DescribeQuorumResponseData;
import org.apache.kafka.common.message.RemoveRaftVoterRequestData;
import org.apache.kafka.common.message.RemoveRaftVoterResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.DescribeQuorumRequest;
import org.apache.kafka.common.utils.Time;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * KIP-853 through the active controller (in one JVM, real Ratis): a controller outside the voters
 * announces itself and observes, AddRaftVoter makes it a voter, RemoveRaftVoter removes the leader itself
 * (leadership moves first), bad requests get Kafka's errors, and decisions keep being made throughout.
 */
class QuorumMembershipControlTest {
    private static final String CLUSTER = "test-cluster";

    @TempDir
    Path dir;

    private TestCluster cluster;
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
                () -> new ControllerLogic(ControllerConfig.defaults(), Uuid::randomUuid, (topic, configs) -> { }), Time.SYSTEM, 100);
        controller.setClusterId(CLUSTER);
        MetadataQuorum q = MetadataQuorum.start(cluster.config(id), loader, loader);
        cluster.running.put(id, q);
        controller.attach(q);
        controllers.put(id, controller);
    }

    private static Uuid dir(int id) {
        return new Uuid(100, id);
    }

    private MetadataRecord.ControllerRegistration registration(int id) {
        InetSocketAddress a = cluster.voters.containsKey(id) ? cluster.voters.get(id) : cluster.observers.get(id);
        return new MetadataRecord.ControllerRegistration(id, dir(id),
                new MetadataRecord.Endpoint("CONTROLLER", a.getHostString(), a.getPort()));
    }

    private ControllerReply raw(byte[] command) throws Exception {
        return ControllerReply.decode(client.send(command).get(30, TimeUnit.SECONDS));
    }

    /** Sends until an answer other than NOT_CONTROLLER (as a broker's channel does), with one request id. */
    private ApiMessage call(ApiKeys key, ApiMessage request) throws Exception {
        byte[] command = ControllerEnvelope.encodeRequest(key, key.latestVersion(), request, Uuid.randomUuid());
        long deadline = System.currentTimeMillis() + 30_000;
        while (true) {
            ControllerReply reply = raw(command);
            if (reply.error() == Errors.NONE) {
                return ControllerEnvelope.decodeResponse(key, key.latestVersion(), reply.response());
            }
            assertThat(reply.error()).as(reply.message()).isEqualTo(Errors.NOT_CONTROLLER);
            assertThat(System.currentTimeMillis()).isLessThan(deadline);
            Thread.sleep(50);
        }
    }

    private void announce(int id) throws Exception {
        await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(50)).until(() ->
                raw(ControllerAnnouncement.request(registration(id))).error() == Errors.NONE);
    }

    private DescribeQuorumResponseData.PartitionData describe() throws Exception {
        DescribeQuorumResponseData d = (DescribeQuorumResponseData) call(ApiKeys.DESCRIBE_QUORUM,
                DescribeQuorumRequest.singletonRequest(QuorumController.METADATA_PARTITION));
        return d.topics().get(0).partitions().get(0);
    }

    private static List<Integer> ids(List<DescribeQuorumResponseData.ReplicaState> replicas) {
        return replicas.stream().map(DescribeQuorumResponseData.ReplicaState::replicaId).sorted().toList();
    }

    private Errors add(AddRaftVoterRequestData request) throws Exception {
        AddRaftVoterResponseData r = (AddRaftVoterResponseData) call(ApiKeys.ADD_RAFT_VOTER, request);
        return Errors.forCode(r.errorCode());
    }

    private AddRaftVoterRequestData addRequest(int id, Uuid directory) {
        InetSocketAddress a = cluster.observers.getOrDefault(id, new InetSocketAddress("127.0.0.1", 1));
        AddRaftVoterRequestData r = new AddRaftVoterRequestData().setClusterId(null).setTimeoutMs(30_000).setVoterId(id)
                .setVoterDirectoryId(directory);
        r.listeners().add(new AddRaftVoterRequestData.Listener().setName("CONTROLLER").setHost(a.getHostString()).setPort(a.getPort()));
        return r;
    }

    private Errors remove(int id, Uuid directory) throws Exception {
        RemoveRaftVoterResponseData r = (RemoveRaftVoterResponseData) call(ApiKeys.REMOVE_RAFT_VOTER,
                new RemoveRaftVoterRequestData().setClusterId(null).setVoterId(id).setVoterDirectoryId(directory));
        return Errors.forCode(r.errorCode());
    }

    private void createTopic(String name) throws Exception {
        CreateTopicsRequestData req = new CreateTopicsRequestData();
        req.topics().add(new CreateTopicsRequestData.CreatableTopic().setName(name).setNumPartitions(1).setReplicationFactor((short) -1));
        CreateTopicsResponseData.CreatableTopicResult t = ((CreateTopicsResponseData) call(ApiKeys.CREATE_TOPICS, req)).topics().iterator().next();
        // no broker is registered: the controller refuses for lack of brokers, having decided
        assertThat(t.errorCode()).isIn(Errors.INVALID_REPLICATION_FACTOR.code(), Errors.NONE.code());
    }

    @Test
    void anObserverIsAddedAndTheLeaderRemovedWithKafkasErrorsForBadRequests() throws Exception {
        cluster = new TestCluster(dir, 3, 0, b -> b);
        for (int id = 1; id <= 3; id++) {
            start(id);
        }
        client = new ControllerClient(cluster.voters, CLUSTER, 2_000, 100);
        for (int id = 1; id <= 3; id++) {
            announce(id);
        }
        cluster.observers.put(4, new InetSocketAddress("127.0.0.1", TestCluster.freePort()));
        start(4);
        assertThat(cluster.quorum(4).inConfiguration()).isFalse();

        // before it announced itself, node 4 cannot be added
        assertThat(add(addRequest(4, dir(4)))).isEqualTo(Errors.REQUEST_TIMED_OUT);
        announce(4);
        await().atMost(Duration.ofSeconds(20)).until(() -> cluster.quorum(4).inConfiguration());
        await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> {
            DescribeQuorumResponseData.PartitionData p = describe();
            assertThat(ids(p.currentVoters())).containsExactly(1, 2, 3);
            assertThat(ids(p.observers())).containsExactly(4);
            assertThat(p.observers().get(0).replicaDirectoryId()).isEqualTo(dir(4));
            assertThat(p.observers().get(0).logEndOffset()).isGreaterThanOrEqualTo(p.highWatermark());
        });

        // bad requests
        assertThat(add(addRequest(2, dir(2)))).isEqualTo(Errors.DUPLICATE_VOTER);
        assertThat(add(addRequest(4, dir(44)))).isEqualTo(Errors.REQUEST_TIMED_OUT);
        assertThat(add(addRequest(4, dir(4)).setClusterId("another"))).isEqualTo(Errors.INCONSISTENT_CLUSTER_ID);
        AddRaftVoterRequestData noEndpoint = addRequest(4, dir(4));
        noEndpoint.listeners().clear();
        assertThat(add(noEndpoint)).isEqualTo(Errors.INVALID_REQUEST);
        assertThat(remove(9, dir(9))).isEqualTo(Errors.VOTER_NOT_FOUND);
        assertThat(remove(2, dir(7))).isEqualTo(Errors.VOTER_NOT_FOUND);

        assertThat(add(addRequest(4, dir(4)))).isEqualTo(Errors.NONE);
        await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> {
            DescribeQuorumResponseData.PartitionData p = describe();
            assertThat(ids(p.currentVoters())).containsExactly(1, 2, 3, 4);
            assertThat(p.observers()).isEmpty();
        });
        createTopic("after-add");

        // remove the leader: leadership moves, the new leader removes it; it stays an observer
        int leader = describe().leaderId();
        assertThat(remove(leader, dir(leader))).isEqualTo(Errors.NONE);
        await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> {
            DescribeQuorumResponseData.PartitionData p = describe();
            assertThat(p.leaderId()).isNotEqualTo(leader);
            assertThat(ids(p.currentVoters())).hasSize(3).doesNotContain(leader);
            assertThat(ids(p.observers())).containsExactly(leader);
        });
        createTopic("after-remove");
        for (int id : cluster.running.keySet()) {
            await().atMost(Duration.ofSeconds(20)).until(() -> cluster.quorum(id).membership().voters().size() == 3);
        }

        // controller.quorum.bootstrap.servers: a client that knows only a dead voter and node 4's endpoint
        // (id unknown) finds the active controller through it
        try (ControllerClient viaBootstrap = new ControllerClient(
                Map.of(99, new InetSocketAddress("127.0.0.1", TestCluster.freePort())),
                List.of(cluster.observers.get(4)), CLUSTER, 2_000, 100, null)) {
            ControllerClient direct = client;
            client = viaBootstrap;
            try {
                assertThat(describe().leaderId()).isNotEqualTo(leader);
            } finally {
                client = direct;
            }
        }
    }
}
