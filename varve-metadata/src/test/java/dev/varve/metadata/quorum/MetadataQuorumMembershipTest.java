package dev.varve.metadata.quorum;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import org.apache.kafka.common.errors.TimeoutException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Membership changes on real Ratis servers in one JVM (KIP-853 on Ratis' configuration change): a node
 * outside the initial voters starts as an observer, follows the log once the leader adds it as a
 * listener, becomes a voter, and voters (the leader included) are removed, with appends going on and
 * every member applying the same log. Every wait is bounded.
 */
class MetadataQuorumMembershipTest {
    private static final Duration BOUND = Duration.ofSeconds(20);

    @TempDir
    Path dir;

    private TestCluster cluster;

    @AfterEach
    void tearDown() {
        if (cluster != null) {
            cluster.close();
        }
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private int awaitLeader() {
        await().atMost(BOUND).pollInterval(Duration.ofMillis(5)).until(() -> cluster.announcedLeader() > 0);
        return cluster.announcedLeader();
    }

    /** Appends through whichever node leads, retrying a leader change (a retried entry may commit twice). */
    private void append(String entry) throws Exception {
        for (int attempt = 0; ; attempt++) {
            int leader = awaitLeader();
            try {
                cluster.quorum(leader).append(bytes(entry)).get(10, TimeUnit.SECONDS);
                return;
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof NotQuorumLeaderException) || attempt >= 10) {
                    throw e;
                }
            }
        }
    }

    /** Changes the membership through the leader, retrying only a leader change. */
    private void change(Map<Integer, InetSocketAddress> voters, Map<Integer, InetSocketAddress> observers) throws Exception {
        for (int attempt = 0; ; attempt++) {
            int leader = awaitLeader();
            MetadataQuorum q = cluster.quorum(leader);
            try {
                q.changeMembership(q.membership(), voters, observers).get(20, TimeUnit.SECONDS);
                return;
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof NotQuorumLeaderException) || attempt >= 10) {
                    throw e;
                }
            }
        }
    }

    private static List<String> distinct(List<String> state) {
        return state.stream().distinct().collect(Collectors.toList());
    }

    private void awaitHas(int node, List<String> expected) {
        RecordingListener r = cluster.recorder(node);
        await().atMost(BOUND).untilAsserted(() -> assertThat(distinct(r.state())).as("node %d", node).isEqualTo(expected));
    }

    @Test
    void anObserverJoinsAsListenerBecomesAVoterAndVotersIncludingTheLeaderAreRemoved() throws Exception {
        cluster = new TestCluster(dir, 3, 0, b -> b);
        cluster.startAll(true);
        int leader = awaitLeader();
        List<String> expected = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            expected.add("a" + i);
            append("a" + i);
        }

        // node 4 starts outside the configuration: it receives nothing and cannot append
        RecordingListener four = cluster.startObserver(4, true);
        assertThat(cluster.quorum(4).inConfiguration()).isFalse();
        assertThat(cluster.quorum(4).membership().voters()).isEmpty();
        assertThatThrownBy(() -> cluster.quorum(4).append(bytes("x")).get(5, TimeUnit.SECONDS))
                .cause().isInstanceOf(NotQuorumLeaderException.class);

        // the leader adds it as a listener (observer): it catches up and follows
        MetadataQuorum.Membership initial = cluster.quorum(leader).membership();
        assertThat(initial.voters()).containsOnlyKeys(1, 2, 3);
        assertThat(initial.changing()).isFalse();
        Map<Integer, InetSocketAddress> observers = new TreeMap<>(cluster.observers);
        change(initial.voters(), observers);
        awaitHas(4, expected);
        await().atMost(BOUND).until(() -> cluster.quorum(4).inConfiguration());
        assertThat(cluster.quorum(4).membership().observers()).containsOnlyKeys(4);
        MetadataQuorum.QuorumState described = cluster.quorum(awaitLeader()).describe(System.currentTimeMillis());
        assertThat(described.voters()).extracting(MetadataQuorum.ReplicaState::nodeId).containsExactly(1, 2, 3);
        assertThat(described.observers()).extracting(MetadataQuorum.ReplicaState::nodeId).containsExactly(4);
        assertThat(four.everLed).isFalse();

        // a stale expectation is refused (compare-and-set), nothing changes
        MetadataQuorum lq = cluster.quorum(awaitLeader());
        assertThatThrownBy(() -> lq.changeMembership(initial, initial.voters(), Map.of()).get(10, TimeUnit.SECONDS))
                .cause().isInstanceOf(TimeoutException.class);

        // promote 4 to voter
        Map<Integer, InetSocketAddress> voters = new TreeMap<>(initial.voters());
        voters.put(4, cluster.observers.get(4));
        change(voters, Map.of());
        for (int i = 0; i < 10; i++) {
            expected.add("b" + i);
            append("b" + i);
        }
        awaitHas(4, expected);
        await().atMost(BOUND).until(() -> cluster.quorum(4).membership().voters().keySet().equals(voters.keySet()));

        // node 4 restarts from its storage as the voter it became (its configuration says observer)
        cluster.stop(4);
        cluster.start(4, true);
        await().atMost(BOUND).until(() -> cluster.quorum(4).membership().voters().keySet().equals(voters.keySet()));
        for (int i = 0; i < 5; i++) {
            expected.add("r" + i);
            append("r" + i);
        }
        awaitHas(4, expected);

        // remove the leader itself: it hands leadership to another voter first; it keeps following as an observer
        int old = awaitLeader();
        int successor = voters.keySet().stream().filter(id -> id != old).findFirst().orElseThrow();
        cluster.quorum(old).transferLeadership(successor).get(20, TimeUnit.SECONDS);
        await().atMost(BOUND).until(() -> cluster.announcedLeader() == successor);
        Map<Integer, InetSocketAddress> without = new TreeMap<>(voters);
        InetSocketAddress oldAddress = without.remove(old);
        change(without, Map.of(old, oldAddress));
        await().atMost(BOUND).until(() -> cluster.announcedLeader() > 0 && cluster.announcedLeader() != old);
        for (int i = 0; i < 10; i++) {
            expected.add("c" + i);
            append("c" + i);
        }
        for (int id : cluster.running.keySet()) {
            awaitHas(id, expected);
        }
        int now = awaitLeader();
        assertThat(now).isNotEqualTo(old);
        MetadataQuorum.QuorumState after = cluster.quorum(now).describe(System.currentTimeMillis());
        assertThat(after.voters()).extracting(MetadataQuorum.ReplicaState::nodeId).containsExactlyElementsOf(without.keySet());
        assertThat(after.observers()).extracting(MetadataQuorum.ReplicaState::nodeId).containsExactly(old);

        // a removed voter restarted keeps following
        cluster.stop(old);
        cluster.start(old, true);
        for (int i = 0; i < 5; i++) {
            expected.add("d" + i);
            append("d" + i);
        }
        awaitHas(old, expected);
        assertThat(cluster.quorum(old).membership().voters()).doesNotContainKey(old);
    }

    @Test
    void anObserverJoiningAfterThePurgedLogGetsTheLeadersSnapshot() throws Exception {
        cluster = new TestCluster(dir, 3, 0, b -> b.snapshotThresholdEntries(20).logSegmentBytes(64 * 1024));
        cluster.startAll(true);
        // ~4 KiB entries roll 64 KiB segments; snapshots every 20 entries let the leader purge them
        String pad = "p".repeat(4096);
        List<String> expected = new ArrayList<>();
        for (int i = 0; i < 120; i++) {
            expected.add("y" + i + pad);
            append("y" + i + pad);
        }
        await().atMost(BOUND).until(() -> cluster.quorum(awaitLeader()).snapshotIndex() > 100);

        RecordingListener four = cluster.startObserver(4, true);
        MetadataQuorum.Membership m = cluster.quorum(awaitLeader()).membership();
        change(m.voters(), Map.of(4, cluster.observers.get(4)));
        awaitHas(4, expected);
        assertThat(four.snapshotsLoaded).as("snapshot installed from the leader").isNotEmpty();
        Map<Integer, InetSocketAddress> voters = new TreeMap<>(m.voters());
        voters.put(4, cluster.observers.get(4));
        change(voters, Map.of());
        expected.add("z");
        append("z");
        awaitHas(4, expected);
    }
}
