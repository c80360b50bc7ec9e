package dev.varve.metadata;

import dev.varve.metadata.ClusterControl.BrokerHeartbeatReply;
import dev.varve.metadata.ClusterControl.BrokerHeartbeatRequest;
import dev.varve.metadata.ClusterControl.BrokerRegistrationRequest;
import dev.varve.metadata.MetadataRecord.Endpoint;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.protocol.Errors;
import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

class ClusterControlTest {
    private static final long SESSION_MS = 9_000;
    private final TestCluster c = new TestCluster(ControllerConfig.defaults().withBrokerSessionTimeoutMs(SESSION_MS));

    @Test
    void registrationStartsFencedAndUnfencesOnlyOnceCaughtUp() {
        long epoch = c.register(0, null, false);
        assertThat(c.image.broker(0).orElseThrow().fenced()).isTrue();
        c.createTopicFails();
        BrokerHeartbeatReply behind = c.commit(c.controller.heartbeat(c.image,
                new BrokerHeartbeatRequest(0, epoch, c.image.offset() - 1, false, false), c.nowMs));
        assertThat(behind.isCaughtUp()).isFalse();
        assertThat(behind.isFenced()).isTrue();
        assertThat(c.image.broker(0).orElseThrow().fenced()).isTrue();
        BrokerHeartbeatReply caughtUp = c.heartbeat(0);
        assertThat(caughtUp.isCaughtUp()).isTrue();
        assertThat(caughtUp.isFenced()).isFalse();
        assertThat(c.image.broker(0).orElseThrow().fenced()).isFalse();
    }

    @Test
    void fencingAfterSessionTimeoutMovesLeadershipToAnotherIsrMember() {
        c.withBrokers(3, 0);
        TopicImage t = c.createTopic("orders", 6, 3);
        Map<Integer, Integer> epochsBefore = new HashMap<>();
        t.partitions().forEach(p -> epochsBefore.put(p.partition(), p.leaderEpoch()));

        c.advance(SESSION_MS / 2);
        c.heartbeat(1);
        c.heartbeat(2);
        assertThat(c.tick()).isEmpty();
        c.advance(SESSION_MS / 2 + 1); // broker 0 silent for SESSION_MS + 1
        c.heartbeat(1);
        c.heartbeat(2);
        assertThat(c.tick()).containsExactly(0);

        assertThat(c.image.broker(0).orElseThrow().fenced()).isTrue();
        for (PartitionState p : c.image.topic("orders").orElseThrow().partitions()) {
            assertThat(p.leader()).isIn(1, 2);
            assertThat(p.isr()).containsExactlyInAnyOrder(1, 2);
            if (t.partition(p.partition()).leader() == 0) {
                assertThat(p.leaderEpoch()).isEqualTo(epochsBefore.get(p.partition()) + 1);
            }
        }
        assertThat(c.tick()).isEmpty();
        c.checkReplay();
    }

    @Test
    void lastIsrMemberStaysInTheIsrLeaderlessAndLeadsAgainWhenItReturns() {
        c.withBrokers(2, 0);
        c.createTopic("t", 1, 2);
        int first = c.image.topic("t").orElseThrow().partition(0).leader();
        int second = 1 - first;
        c.advance(SESSION_MS + 1);
        c.heartbeat(first);
        c.tick(); // second fenced: leaves the ISR
        c.advance(SESSION_MS + 1);
        c.tick(); // first fenced: last ISR member, stays
        PartitionState p = c.image.topic("t").orElseThrow().partition(0);
        assertThat(p.leader()).isEqualTo(-1);
        assertThat(p.isr()).containsExactly(first);

        c.register(second, null, true);
        c.heartbeat(second);
        assertThat(c.image.topic("t").orElseThrow().partition(0).leader()).as("out-of-ISR replica never leads").isEqualTo(-1);

        c.register(first, null, true); // clean restart
        c.heartbeat(first);
        p = c.image.topic("t").orElseThrow().partition(0);
        assertThat(p.leader()).isEqualTo(first);
        assertThat(p.isr()).containsExactly(first);
        c.checkReplay();
    }

    @Test
    void uncleanRestartOfTheSoleSurvivorIsTrustedWhenNoElrMemberExists() {
        c.withBrokers(2, 0);
        c.createTopic("t", 1, 2);
        int first = c.image.topic("t").orElseThrow().partition(0).leader();
        c.advance(SESSION_MS + 1);
        c.heartbeat(first);
        c.tick();
        c.advance(SESSION_MS + 1);
        c.tick();
        c.register(first, null, false); // unclean: no previous epoch
        PartitionState p = c.image.topic("t").orElseThrow().partition(0);
        assertThat(p.isr()).isEmpty();
        assertThat(p.lastKnownElr()).containsExactly(first);
        c.heartbeat(first);
        p = c.image.topic("t").orElseThrow().partition(0);
        assertThat(p.leader()).isEqualTo(first);
        assertThat(p.isr()).containsExactly(first);
        assertThat(p.lastKnownElr()).isEmpty();
    }

    /**
     * Found by the replication simulation (varve-broker ReplicationSimulation, min.insync.replicas=1,
     * kills only): a follower that restarts uncleanly while the ISR stays at min.insync.replicas must not
     * become a last-known-ELR candidate, or it is elected later although the ISR committed (and
     * acknowledged) records without it.
     */
    @Test
    void anUncleanRestartWhileTheIsrCarriesOnDoesNotMakeAStaleReplicaElectable() {
        c.withBrokers(3, 0);
        c.createTopic("t", 1, 3);
        TopicImage t = c.image.topic("t").orElseThrow();
        PartitionState p = t.partition(0);
        int leader = p.leader();
        List<Integer> others = p.replicas().stream().filter(r -> r != leader).toList();
        int stale = others.get(0);
        int outOfSync = others.get(1);
        c.commit(c.controller.alterPartition(c.image, new PartitionControl.AlterPartitionRequest(leader, c.epochs.get(leader),
                t.id(), 0, p.leaderEpoch(), p.partitionEpoch(), List.of(leader, stale))));
        // 'stale' restarts after an unclean shutdown before its old session was fenced
        c.advance(SESSION_MS + 1);
        c.heartbeat(leader);
        c.heartbeat(outOfSync);
        c.register(stale, null, false);
        c.heartbeat(stale);
        p = c.image.topic("t").orElseThrow().partition(0);
        assertThat(p.isr()).containsExactly(leader);
        assertThat(p.lastKnownElr()).as("the ISR is still at min.insync.replicas").isEmpty();
        // the leader carries on alone (min.insync.replicas=1), then restarts after an unclean shutdown too
        c.advance(SESSION_MS + 1);
        c.heartbeat(stale);
        c.heartbeat(outOfSync);
        c.register(leader, null, false);
        p = c.image.topic("t").orElseThrow().partition(0);
        assertThat(p.leader()).as("the stale replica is not elected").isEqualTo(-1);
        assertThat(p.lastKnownElr()).containsExactly(leader);
        c.heartbeat(leader);
        p = c.image.topic("t").orElseThrow().partition(0);
        assertThat(p.leader()).isEqualTo(leader);
        c.checkReplay();
    }

    @Test
    void uncleanRestartOfTheSoleSurvivorWaitsForAnElrMember() {
        c.commit(c.controller.alterConfigs(c.image, Map.of(MetadataImage.CLUSTER_DEFAULTS,
                Map.of(TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG, "2"))));
        c.withBrokers(3, 0);
        c.createTopic("t", 1, 3);
        int leader = c.image.topic("t").orElseThrow().partition(0).leader();
        List<Integer> others = c.image.topic("t").orElseThrow().partition(0).replicas().stream().filter(r -> r != leader).toList();
        // the two followers fail: the first leaves the ISR (ISR still 2 = min), the second joins the ELR
        c.advance(SESSION_MS + 1);
        c.heartbeat(leader);
        c.heartbeat(others.get(1));
        c.tick();
        c.advance(SESSION_MS + 1);
        c.heartbeat(leader);
        c.tick();
        PartitionState p = c.image.topic("t").orElseThrow().partition(0);
        assertThat(p.isr()).containsExactly(leader);
        assertThat(p.elr()).containsExactly(others.get(1));
        // now the leader dies and comes back after an unclean shutdown
        c.advance(SESSION_MS + 1);
        c.tick();
        c.register(leader, null, false);
        c.heartbeat(leader);
        p = c.image.topic("t").orElseThrow().partition(0);
        assertThat(p.leader()).as("survivor not trusted while an ELR member exists").isEqualTo(-1);
        assertThat(p.lastKnownElr()).containsExactly(leader);
        // the ELR member returns and leads
        c.register(others.get(1), null, true);
        c.heartbeat(others.get(1));
        p = c.image.topic("t").orElseThrow().partition(0);
        assertThat(p.leader()).isEqualTo(others.get(1));
        assertThat(p.isr()).containsExactly(others.get(1));
        c.checkReplay();
    }

    @Test
    void controlledShutdownMovesLeadershipAwayBeforeAllowingShutdown() {
        c.withBrokers(3, 0);
        c.createTopic("orders", 6, 2);
        int leaderships = PartitionControl.leadershipCount(c.image, 0);
        assertThat(leaderships).isPositive();

        BrokerHeartbeatReply first = c.heartbeat(0, false, true);
        assertThat(first.shouldShutDown()).isFalse();
        assertThat(c.image.broker(0).orElseThrow().inControlledShutdown()).isTrue();
        assertThat(PartitionControl.leadershipCount(c.image, 0)).isZero();
        for (PartitionState p : c.image.topic("orders").orElseThrow().partitions()) {
            assertThat(p.leader()).isNotEqualTo(0);
            assertThat(p.isr()).doesNotContain(0);
        }
        // not released until it has seen the image without its leaderships
        BrokerHeartbeatReply behind = c.commit(c.controller.heartbeat(c.image,
                new BrokerHeartbeatRequest(0, c.epochs.get(0), c.image.offset() - 1, false, true), c.nowMs));
        assertThat(behind.shouldShutDown()).isFalse();
        BrokerHeartbeatReply done = c.heartbeat(0, false, true);
        assertThat(done.shouldShutDown()).isTrue();
        assertThat(c.image.broker(0).orElseThrow().fenced()).isTrue();

        // restart after the clean shutdown: accepted at once, new epoch
        long oldEpoch = c.epochs.get(0);
        assertThat(c.register(0, null, true)).isGreaterThan(oldEpoch);
        c.checkReplay();
    }

    @Test
    void controlledShutdownOfSoleIsrMemberLeavesPartitionLeaderless() {
        c.withBrokers(1, 0);
        c.createTopic("solo", 2, 1);
        c.heartbeat(0, false, true);
        for (PartitionState p : c.image.topic("solo").orElseThrow().partitions()) {
            assertThat(p.leader()).isEqualTo(-1);
            assertThat(p.isr()).containsExactly(0);
        }
        assertThat(c.heartbeat(0, false, true).shouldShutDown()).isTrue();
        c.register(0, null, true);
        c.heartbeat(0);
        assertThat(c.image.topic("solo").orElseThrow().partitions()).allMatch(p -> p.leader() == 0);
    }

    @Test
    void anotherIncarnationIsRefusedWhileTheSessionIsOpenUnlessCleanlyShutDown() {
        c.withBrokers(1, 0);
        long epoch = c.epochs.get(0);
        Uuid other = Uuid.randomUuid();
        BrokerRegistrationRequest dup = new BrokerRegistrationRequest(0, other, List.of(new Endpoint("PLAINTEXT", "h", 1)), null, -1);
        assertThat(c.commit(c.controller.registerBroker(c.image, dup, c.nowMs)).error()).isEqualTo(Errors.DUPLICATE_BROKER_REGISTRATION);
        // the same incarnation again is a retry
        BrokerRegistrationRequest retry = new BrokerRegistrationRequest(0, c.incarnations.get(0),
                List.of(new Endpoint("PLAINTEXT", "h", 1)), null, -1);
        assertThat(c.commit(c.controller.registerBroker(c.image, retry, c.nowMs)).brokerEpoch()).isEqualTo(epoch);
        // after the session expired a new incarnation is accepted, and the old one's heartbeats are stale
        c.advance(SESSION_MS + 1);
        c.tick();
        long newEpoch = c.commit(c.controller.registerBroker(c.image, dup, c.nowMs)).brokerEpoch();
        assertThat(newEpoch).isGreaterThan(epoch);
        BrokerHeartbeatReply stale = c.commit(c.controller.heartbeat(c.image,
                new BrokerHeartbeatRequest(0, epoch, c.image.offset(), false, false), c.nowMs));
        assertThat(stale.error()).isEqualTo(Errors.STALE_BROKER_EPOCH);
    }

    @Test
    void producerIdBlocksNeverOverlap() {
        c.withBrokers(2, 0);
        ControllerLogic.ProducerIdsReply a = c.commit(c.controller.allocateProducerIds(c.image, 0, c.epochs.get(0)));
        ControllerLogic.ProducerIdsReply b = c.commit(c.controller.allocateProducerIds(c.image, 1, c.epochs.get(1)));
        assertThat(a.firstProducerId()).isZero();
        assertThat(a.size()).isEqualTo(1000);
        assertThat(b.firstProducerId()).isEqualTo(1000);
        assertThat(c.image.nextProducerId()).isEqualTo(2000);
        assertThat(c.commit(c.controller.allocateProducerIds(c.image, 0, 999)).error()).isEqualTo(Errors.STALE_BROKER_EPOCH);
        assertThat(c.commit(c.controller.allocateProducerIds(c.image, 7, 0)).error()).isEqualTo(Errors.BROKER_ID_NOT_REGISTERED);
        c.checkReplay();
    }

    @Test
    void turningUncleanElectionOnElectsAnOutOfIsrReplica() {
        c.withBrokers(2, 0);
        c.createTopic("t", 1, 2);
        int first = c.image.topic("t").orElseThrow().partition(0).leader();
        int second = 1 - first;
        c.advance(SESSION_MS + 1);
        c.heartbeat(first);
        c.tick();
        c.advance(SESSION_MS + 1);
        c.tick();
        c.register(second, null, true);
        c.heartbeat(second);
        assertThat(c.image.topic("t").orElseThrow().partition(0).leader()).isEqualTo(-1);
        c.commit(c.controller.alterConfigs(c.image, Map.of(new ConfigResource(ConfigResource.Type.TOPIC, "t"),
                Map.of(TopicConfig.UNCLEAN_LEADER_ELECTION_ENABLE_CONFIG, "true"))));
        PartitionState p = c.image.topic("t").orElseThrow().partition(0);
        assertThat(p.leader()).isEqualTo(second);
        assertThat(p.isr()).containsExactly(second);
        c.checkReplay();
    }
}
