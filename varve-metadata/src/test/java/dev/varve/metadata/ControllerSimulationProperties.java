package dev.varve.metadata;

import dev.varve.metadata.ClusterControl.BrokerHeartbeatReply;
import dev.varve.metadata.PartitionControl.AlterPartitionReply;
import dev.varve.metadata.PartitionControl.AlterPartitionRequest;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.protocol.Errors;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Random histories of broker crashes, unclean and clean restarts, controlled shutdowns, session
 * expiries, AlterPartition (current and stale), elections, topic changes and partition reassignments
 * (started, replaced, cancelled, completed by AlterPartition) against one controller with a fake clock;
 * every committed entry goes through the serde. After every step: replica-set invariants (including
 * adding/removing replicas), no ELR or last-known ELR while the ISR is at min.insync.replicas, no
 * ineligible leader, no out-of-ISR leader unless unclean election is on, monotonic epochs. At the end: log replay and snapshot + tail replay equal the image.
 */
class ControllerSimulationProperties {
    private static final long SESSION_MS = 3_000;

    @Property(tries = 150)
    void invariantsHoldOverRandomHistories(@ForAll long seed) {
        Random r = new Random(seed);
        int brokers = 2 + r.nextInt(4);
        TestCluster c = new TestCluster(ControllerConfig.defaults().withBrokerSessionTimeoutMs(SESSION_MS), seed);
        if (r.nextBoolean()) {
            c.commit(c.controller.alterConfigs(c.image, Map.of(MetadataImage.CLUSTER_DEFAULTS,
                    Map.of(TopicConfig.MIN_IN_SYNC_REPLICAS_CONFIG, "2"))));
        }
        c.withBrokers(brokers, r.nextInt(3));
        Set<Integer> running = new HashSet<>();
        for (int i = 0; i < brokers; i++) {
            running.add(i);
        }
        Set<Integer> cleanlyStopped = new HashSet<>();
        for (int t = 0; t < 2; t++) {
            c.createTopic("t" + t, 1 + r.nextInt(4), 1 + r.nextInt(Math.min(3, brokers)));
            if (r.nextBoolean()) {
                c.commit(c.controller.alterConfigs(c.image, Map.of(new ConfigResource(ConfigResource.Type.TOPIC, "t" + t),
                        Map.of(TopicConfig.UNCLEAN_LEADER_ELECTION_ENABLE_CONFIG, "true"))));
            }
        }
        Snapshot previous = new Snapshot(c.image);
        int snapshotAt = r.nextInt(150);
        MetadataImage snapshotImage = null;
        int snapshotLogSize = 0;
        for (int step = 0; step < 150; step++) {
            int broker = r.nextInt(brokers);
            Set<Integer> joinedIsr = new HashSet<>(); // brokers an accepted AlterPartition brought in sync this step
            switch (r.nextInt(12)) {
                case 0, 1 -> c.advance(r.nextInt((int) SESSION_MS));
                case 2, 3 -> {
                    for (int b : running) {
                        if (r.nextInt(4) != 0) {
                            c.heartbeat(b);
                        }
                    }
                }
                case 4 -> running.remove(broker); // crash: stops heartbeating
                case 5 -> {
                    if (!running.contains(broker)) {
                        boolean clean = cleanlyStopped.remove(broker) && r.nextBoolean();
                        if (c.register(broker, null, clean) >= 0) {
                            running.add(broker);
                            c.heartbeat(broker);
                        }
                    }
                }
                case 6 -> {
                    if (running.contains(broker)) {
                        BrokerHeartbeatReply reply = c.heartbeat(broker, false, true);
                        if (!reply.shouldShutDown()) {
                            reply = c.heartbeat(broker, false, true);
                        }
                        if (reply.shouldShutDown()) {
                            running.remove(broker);
                            cleanlyStopped.add(broker);
                        }
                    }
                }
                case 7 -> c.tick();
                case 8 -> joinedIsr.addAll(alterPartition(c, r));
                case 9 -> c.commit(c.controller.electLeaders(c.image, ElectionType.PREFERRED, null));
                case 10 -> reassign(c, r);
                default -> topicChange(c, r);
            }
            Snapshot now = new Snapshot(c.image);
            now.checkInvariants(c.image, c.controller.partitions());
            now.checkTransitionFrom(previous, c, joinedIsr);
            previous = now;
            if (step == snapshotAt) {
                snapshotImage = MetadataImage.fromSnapshot(c.image.offset(),
                        MetadataRecordSerde.deserialize(MetadataRecordSerde.serialize(c.image.toRecords())));
                snapshotLogSize = c.log.size();
            }
        }
        c.checkReplay();
        if (snapshotImage != null) {
            MetadataImage fromSnapshot = snapshotImage;
            for (int i = snapshotLogSize; i < c.log.size(); i++) {
                fromSnapshot = fromSnapshot.apply(i, MetadataRecordSerde.deserialize(c.log.get(i)));
            }
            assertThat(fromSnapshot).isEqualTo(c.image);
        }
    }

    /** A random AlterPartition from a partition's leader; returns the ISR it asked for when accepted. */
    private static List<Integer> alterPartition(TestCluster c, Random r) {
        List<TopicImage> topics = new ArrayList<>(c.image.topicsById().values());
        if (topics.isEmpty()) {
            return List.of();
        }
        TopicImage t = topics.get(r.nextInt(topics.size()));
        PartitionState p = t.partition(r.nextInt(t.partitionCount()));
        if (!p.hasLeader()) {
            return List.of();
        }
        List<Integer> isr = new ArrayList<>();
        isr.add(p.leader());
        for (int replica : p.replicas()) {
            if (replica != p.leader() && r.nextBoolean()) {
                isr.add(replica);
            }
        }
        boolean stale = r.nextInt(5) == 0;
        AlterPartitionReply reply = c.commit(c.controller.alterPartition(c.image, new AlterPartitionRequest(p.leader(),
                c.epochs.get(p.leader()), t.id(), p.partition(), p.leaderEpoch(), p.partitionEpoch() - (stale ? 1 : 0), isr)));
        if (stale) {
            assertThat(reply.error()).isEqualTo(Errors.INVALID_UPDATE_VERSION);
            return List.of();
        }
        if (reply.error() == Errors.INELIGIBLE_REPLICA) {
            return List.of();
        }
        assertThat(reply.error()).isIn(Errors.NONE, Errors.NEW_LEADER_ELECTED);
        PartitionState after = c.image.partition(t.id(), p.partition());
        if (p.isReassigning() && !after.isReassigning()) {
            // The new ISR completed the reassignment: the removing replicas left it.
            List<Integer> expected = new ArrayList<>(isr);
            expected.removeAll(p.removingReplicas());
            assertThat(after.isr()).containsExactlyInAnyOrderElementsOf(expected);
            assertThat(after.replicas()).isEqualTo(p.targetReplicas());
            assertThat(reply.error()).isEqualTo(after.leader() == p.leader() ? Errors.NONE : Errors.NEW_LEADER_ELECTED);
        } else {
            assertThat(reply.error()).isEqualTo(Errors.NONE);
            assertThat(after.isr()).containsExactlyInAnyOrderElementsOf(isr);
        }
        return isr;
    }

    /** Starts (a random target of 1-3 registered brokers) or cancels a reassignment of a random partition. */
    private static void reassign(TestCluster c, Random r) {
        List<TopicImage> topics = new ArrayList<>(c.image.topicsById().values());
        if (topics.isEmpty()) {
            return;
        }
        TopicImage t = topics.get(r.nextInt(topics.size()));
        PartitionState p = t.partition(r.nextInt(t.partitionCount()));
        List<Integer> target = null;
        if (r.nextInt(3) != 0) {
            List<Integer> brokers = new ArrayList<>(c.image.brokers().keySet());
            java.util.Collections.shuffle(brokers, r);
            target = brokers.subList(0, 1 + r.nextInt(Math.min(3, brokers.size())));
        }
        boolean allowRfChange = r.nextInt(4) != 0;
        List<org.apache.kafka.common.requests.ApiError> reply = c.commit(c.controller.alterPartitionReassignments(c.image,
                List.of(new ReassignmentControl.Reassignment(new org.apache.kafka.common.TopicPartition(t.name(), p.partition()), target)),
                allowRfChange));
        Errors error = reply.get(0).error();
        PartitionState after = c.image.partition(t.id(), p.partition());
        if (target == null) {
            assertThat(error).isIn(Errors.NONE, Errors.NO_REASSIGNMENT_IN_PROGRESS, Errors.INVALID_REPLICA_ASSIGNMENT);
            assertThat(error == Errors.NO_REASSIGNMENT_IN_PROGRESS).isEqualTo(!p.isReassigning());
            if (error == Errors.NONE) {
                assertThat(after.isReassigning()).isFalse();
                List<Integer> original = new ArrayList<>(p.replicas());
                original.removeAll(p.addingReplicas());
                assertThat(after.replicas()).isEqualTo(original);
            }
        } else if (error == Errors.NONE) {
            assertThat(after.targetReplicas()).isEqualTo(target);
            assertThat(after.replicas()).as("target first, then the replicas being removed")
                    .startsWith(target.toArray(Integer[]::new)).endsWith(after.removingReplicas().toArray(Integer[]::new));
        } else {
            assertThat(error).isEqualTo(Errors.INVALID_REPLICATION_FACTOR);
            assertThat(allowRfChange).isFalse();
        }
        if (error != Errors.NONE) {
            assertThat(after).isEqualTo(p);
        }
    }

    private static void topicChange(TestCluster c, Random r) {
        switch (r.nextInt(3)) {
            case 0 -> c.commit(c.controller.createTopics(c.image, List.of(new TopicControl.CreatableTopic(
                    "x" + r.nextInt(3), 1 + r.nextInt(3), (short) 1, List.of(), Map.of())), false));
            case 1 -> c.commit(c.controller.deleteTopics(c.image, List.of("x" + r.nextInt(3))));
            default -> {
                String name = r.nextBoolean() ? "t0" : "x" + r.nextInt(3);
                int count = c.image.topic(name).map(TopicImage::partitionCount).orElse(0) + 1;
                c.commit(c.controller.createPartitions(c.image, List.of(new TopicControl.CreatePartitionsTopic(name, count, null)), false));
            }
        }
    }

    /** Partition states of one image, keyed by topic id and index. */
    private record Snapshot(Map<Uuid, Map<Integer, PartitionState>> partitions, Map<Uuid, String> names) {
        Snapshot(MetadataImage image) {
            this(new HashMap<>(), new HashMap<>());
            for (TopicImage t : image.topicsById().values()) {
                Map<Integer, PartitionState> m = new HashMap<>();
                t.partitions().forEach(p -> m.put(p.partition(), p));
                partitions.put(t.id(), m);
                names.put(t.id(), t.name());
            }
        }

        void checkInvariants(MetadataImage image, PartitionControl control) {
            partitions.forEach((id, m) -> m.values().forEach(p -> {
                if (p.isr().size() >= control.minIsr(image, names.get(id))) {
                    // Records are acknowledged without anyone outside an ISR at min.insync.replicas: nobody
                    // else may be an election candidate (ELR, last-known ELR) from then on.
                    assertThat(p.elr()).as("ELR of %s with the ISR at min.insync.replicas", p).isEmpty();
                    assertThat(p.lastKnownElr()).as("last-known ELR of %s with the ISR at min.insync.replicas", p).isEmpty();
                }
                assertThat(p.replicas()).containsAll(p.isr()).containsAll(p.elr()).containsAll(p.lastKnownElr())
                        .containsAll(p.addingReplicas()).containsAll(p.removingReplicas()).doesNotHaveDuplicates();
                assertThat(p.addingReplicas()).as("adding and removing disjoint in %s", p).noneMatch(p.removingReplicas()::contains);
                Set<Integer> all = new HashSet<>(p.isr());
                all.addAll(p.elr());
                all.addAll(p.lastKnownElr());
                assertThat(all).as("ISR, ELR, last-known ELR disjoint in %s", p)
                        .hasSize(p.isr().size() + p.elr().size() + p.lastKnownElr().size());
                if (p.hasLeader()) {
                    assertThat(p.isr()).as("leader in ISR: %s", p).contains(p.leader());
                    assertThat(image.isEligible(p.leader())).as("leader %d eligible (unfenced, not shutting down)", p.leader()).isTrue();
                } else {
                    assertThat(p.leader()).isEqualTo(-1);
                }
            }));
        }

        /** {@code joinedIsr}: replicas an accepted AlterPartition brought into the ISR (a completing reassignment may elect one). */
        void checkTransitionFrom(Snapshot before, TestCluster c, Set<Integer> joinedIsr) {
            partitions.forEach((id, m) -> m.forEach((index, now) -> {
                PartitionState was = before.partitions.getOrDefault(id, Map.of()).get(index);
                if (was == null) {
                    return;
                }
                assertThat(now.partitionEpoch()).isGreaterThanOrEqualTo(was.partitionEpoch());
                assertThat(now.leaderEpoch()).isGreaterThanOrEqualTo(was.leaderEpoch());
                if (!now.equals(was)) {
                    assertThat(now.partitionEpoch()).as("every change bumps the partition epoch").isGreaterThan(was.partitionEpoch());
                }
                if (now.leader() != was.leader()) {
                    assertThat(now.leaderEpoch()).as("every leader change bumps the leader epoch").isGreaterThan(was.leaderEpoch());
                    boolean unclean = c.controller.partitions().uncleanEnabled(c.image, names.get(id));
                    if (now.hasLeader() && !unclean) {
                        Set<Integer> candidates = new HashSet<>(was.isr());
                        candidates.addAll(was.elr());
                        candidates.addAll(was.lastKnownElr());
                        candidates.addAll(joinedIsr);
                        assertThat(candidates).as("clean election only from ISR/ELR/last-known ELR: %s -> %s", was, now)
                                .contains(now.leader());
                    }
                }
            }));
        }
    }
}
