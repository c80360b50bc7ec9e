package dev.varve.metadata.quorum;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import java.util.stream.Stream;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The quorum on real Ratis servers (Netty transport) in one JVM, on free loopback ports, with
 * election timeouts of 300..600 ms. Every wait is bounded. Timings are printed as
 * {@code [quorum-timing]} lines.
 */
class MetadataQuorumTest {
    private static final Duration ELECTION_BOUND = Duration.ofSeconds(10);
    /** Ratis takes automatic snapshots in the background: on a loaded 2-core machine they lag the appends. */
    private static final Duration SNAPSHOT_BOUND = Duration.ofSeconds(60);

    @TempDir
    Path dir;

    private TestCluster cluster;

    @AfterEach
    void tearDown() {
        if (cluster != null) {
            cluster.close();
        }
    }

    private TestCluster cluster(int voters, int listeners, UnaryOperator<QuorumConfig.Builder> tuning) {
        cluster = new TestCluster(dir, voters, listeners, tuning);
        return cluster;
    }

    private static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private static List<String> names(String prefix, int from, int toExclusive) {
        return IntStream.range(from, toExclusive).mapToObj(i -> prefix + i).collect(Collectors.toList());
    }

    /** Appends sequentially through the given member; returns the committed indexes. */
    private static List<Long> appendAll(MetadataQuorum q, List<String> entries) throws Exception {
        List<CompletableFuture<Long>> futures = new ArrayList<>();
        for (String e : entries) {
            futures.add(q.append(bytes(e)));
        }
        List<Long> indexes = new ArrayList<>();
        for (CompletableFuture<Long> f : futures) {
            indexes.add(f.get(10, TimeUnit.SECONDS));
        }
        return indexes;
    }

    /**
     * Appends one at a time through whichever node leads, retrying an entry whose leader stepped down
     * (on a loaded 2-core machine a 300..600 ms election timeout can expire mid-test). A retried entry
     * may then be committed twice, so multi-voter tests compare states without duplicates.
     */
    private void appendViaLeader(List<String> entries) throws Exception {
        for (String e : entries) {
            for (int attempt = 0; ; attempt++) {
                int leader = awaitLeader();
                try {
                    cluster.quorum(leader).append(bytes(e)).get(10, TimeUnit.SECONDS);
                    break;
                } catch (ExecutionException ex) {
                    if (!(ex.getCause() instanceof NotQuorumLeaderException) || attempt >= 5) {
                        throw ex;
                    }
                }
            }
        }
    }

    private static List<String> distinct(List<String> state) {
        return state.stream().distinct().collect(Collectors.toList());
    }

    private int awaitLeader() {
        await().atMost(ELECTION_BOUND).pollInterval(Duration.ofMillis(5)).until(() -> cluster.announcedLeader() > 0);
        return cluster.announcedLeader();
    }

    private static void assertClean(RecordingListener r, int nodeId) {
        assertThat(r.violations).as("contract violations").isEmpty();
        assertThat(r.threads).as("callback threads").containsExactly("varve-metadata-apply-" + nodeId);
    }

    @Test
    void singleVoterCommitsAndReplaysItsLogOnceInOrderAfterRestart() throws Exception {
        cluster(1, 0, b -> b);
        long t0 = System.nanoTime();
        RecordingListener first = cluster.start(1, false);
        MetadataQuorum q = cluster.quorum(1);
        long started = System.nanoTime();
        // The first append may meet "not leader yet"; retry until it commits (bounded).
        await().atMost(ELECTION_BOUND).pollInterval(Duration.ofMillis(2)).ignoreExceptions()
                .until(() -> q.append(bytes("e0")).get(5, TimeUnit.SECONDS) > 0);
        long committed = System.nanoTime();
        System.out.printf("[quorum-timing] 1 voter: start() %d ms, start to first commit %d ms%n",
                (started - t0) / 1_000_000, (committed - t0) / 1_000_000);

        List<Long> indexes = appendAll(q, names("e", 1, 50));
        assertThat(indexes).isSorted().doesNotHaveDuplicates();
        long one = System.nanoTime();
        int rounds = 50;
        for (int i = 0; i < rounds; i++) {
            q.append(bytes("s" + i)).get(5, TimeUnit.SECONDS);
        }
        System.out.printf("[quorum-timing] 1 voter: sequential append-to-applied latency %.2f ms/entry%n",
                (System.nanoTime() - one) / 1e6 / rounds);
        // append's future completes after local apply.
        assertThat(first.state()).hasSize(100).startsWith("e0", "e1").endsWith("s49");
        assertThat(q.appliedIndex()).isGreaterThanOrEqualTo(indexes.get(indexes.size() - 1));
        List<Long> firstRun = List.copyOf(first.committedIndexes);
        assertClean(first, 1);
        assertThat(first.everLed).isTrue();

        cluster.stop(1);
        long restartAt = System.nanoTime();
        RecordingListener second = cluster.start(1, false);
        await().atMost(ELECTION_BOUND).until(() -> second.state().size() == 100);
        long replayed = System.nanoTime();
        awaitLeader();
        System.out.printf("[quorum-timing] 1 voter restart (warm JVM): 100 entries replayed after %d ms, leader"
                + " ready after %d ms%n", (replayed - restartAt) / 1_000_000, (System.nanoTime() - restartAt) / 1_000_000);
        assertThat(second.state()).isEqualTo(first.state());
        assertThat(second.committedIndexes).isEqualTo(firstRun);
        assertThat(second.snapshotsLoaded).isEmpty();
        assertClean(second, 1);
        // appends continue after the replayed log
        awaitLeader();
        long next = cluster.quorum(1).append(bytes("after-restart")).get(5, TimeUnit.SECONDS);
        assertThat(next).isGreaterThan(firstRun.get(firstRun.size() - 1));
    }

    @Test
    void threeVotersAndAListenerSeeTheSameLogAndFailoverIsBounded() throws Exception {
        cluster(3, 1, b -> b);
        long t0 = System.nanoTime();
        cluster.startAll(false);
        int first = awaitLeader();
        long elected = System.nanoTime();
        long firstIndex = cluster.quorum(first).append(bytes("a0")).get(5, TimeUnit.SECONDS);
        long committed = System.nanoTime();
        System.out.printf("[quorum-timing] 3 voters + 1 listener: start to leader ready %d ms, to first commit %d ms%n",
                (elected - t0) / 1_000_000, (committed - t0) / 1_000_000);
        assertThat(firstIndex).isPositive();

        List<String> expected = new ArrayList<>(List.of("a0"));
        List<String> batch = names("a", 1, 30);
        appendViaLeader(batch);
        expected.addAll(batch);
        long one = System.nanoTime();
        List<String> seq = names("seq", 0, 20);
        appendViaLeader(seq);
        expected.addAll(seq);
        System.out.printf("[quorum-timing] 3 voters: sequential append-to-applied latency %.2f ms/entry%n",
                (System.nanoTime() - one) / 1e6 / 20);
        awaitEveryoneHas(expected);
        assertSameIndexes();

        // Append on a follower and on the listener: NOT_CONTROLLER with the leader's id.
        int leader = awaitLeader();
        int follower = cluster.voters.keySet().stream().filter(id -> id != leader).findFirst().orElseThrow();
        for (int notLeader : List.of(follower, 101)) {
            assertThatThrownBy(() -> cluster.quorum(notLeader).append(bytes("x")).get(5, TimeUnit.SECONDS))
                    .isInstanceOf(ExecutionException.class)
                    .cause().isInstanceOf(NotQuorumLeaderException.class)
                    .satisfies(e -> assertThat(((NotQuorumLeaderException) e).leaderId()).isEqualTo(OptionalInt.of(leader)));
        }

        // Fail over: stop the leader; another voter must announce leadership within a bound.
        long stopAt = System.nanoTime();
        cluster.stop(leader);
        long stopped = System.nanoTime();
        int newLeader = awaitLeader();
        long failedOver = cluster.recorder(newLeader).leaderSinceNanos;
        System.out.printf("[quorum-timing] failover after close() of the leader: new leader %d ready %d ms after"
                        + " close() began (close() itself took %d ms)%n", newLeader, (failedOver - stopAt) / 1_000_000,
                (stopped - stopAt) / 1_000_000);
        assertThat(failedOver - stopAt).isLessThan(TimeUnit.SECONDS.toNanos(5));
        assertThat(newLeader).isNotEqualTo(leader).isNotEqualTo(101);
        List<String> more = names("b", 0, 10);
        appendViaLeader(more);
        expected.addAll(more);
        awaitEveryoneHas(expected);

        // The old leader comes back as a follower and catches up from its own log plus the new leader.
        RecordingListener back = cluster.start(leader, false);
        more = names("c", 0, 5);
        appendViaLeader(more);
        expected.addAll(more);
        await().atMost(ELECTION_BOUND).until(() -> distinct(back.state()).equals(expected));
        awaitEveryoneHas(expected);
        assertSameIndexes();

        RecordingListener listener = cluster.recorder(101);
        assertThat(listener.everLed).isFalse();
        assertThat(cluster.quorum(101).leaderId()).isEqualTo(OptionalInt.of(newLeader));
        for (int id : cluster.running.keySet()) {
            assertClean(cluster.recorder(id), id);
        }
    }

    private void awaitEveryoneHas(List<String> expected) {
        for (int id : cluster.running.keySet()) {
            RecordingListener r = cluster.recorder(id);
            await().atMost(ELECTION_BOUND).until(() -> distinct(r.state()).size() >= expected.size());
            assertThat(distinct(r.state())).as("state of node %d", id).isEqualTo(expected);
        }
    }

    private void assertSameIndexes() {
        List<List<Long>> perNode = cluster.running.keySet().stream()
                .map(id -> cluster.recorder(id).committedIndexes).map(List::copyOf).collect(Collectors.toList());
        for (List<Long> l : perNode) {
            assertThat(l).isEqualTo(perNode.get(0));
        }
    }

    @Test
    void snapshotIsLoadedOnRestartAndTheLogBeforeItIsNotReplayed() throws Exception {
        cluster(1, 0, b -> b.snapshotThresholdEntries(5).snapshotOnClose(false).snapshotsRetained(2));
        RecordingListener first = cluster.start(1, true);
        awaitLeader();
        List<String> entries = names("s", 0, 33);
        for (String e : entries) {
            cluster.quorum(1).append(bytes(e)).get(5, TimeUnit.SECONDS);
        }
        MetadataQuorum q1 = cluster.quorum(1);
        await().atMost(SNAPSHOT_BOUND).until(() -> q1.snapshotIndex() >= 25);
        cluster.stop(1);
        long snapshotIndex = q1.snapshotIndex();
        assertThat(first.snapshotsTaken.size()).isGreaterThanOrEqualTo(5);
        assertThat(snapshotFiles(1)).as("old snapshots are cleaned up").hasSize(2);

        RecordingListener second = cluster.start(1, true);
        await().atMost(ELECTION_BOUND).until(() -> second.state().size() == entries.size());
        assertThat(second.state()).isEqualTo(entries);
        assertThat(second.snapshotsLoaded).containsExactly(snapshotIndex);
        assertThat(second.committedIndexes).allSatisfy(i -> assertThat(i).isGreaterThan(snapshotIndex));
        assertThat(second.committedIndexes).hasSizeLessThan(entries.size() - 20);
        assertClean(second, 1);

    }

    @Test
    void aCorruptNewestSnapshotFallsBackToTheOlderOneWhenTheLogCoversTheGap() throws Exception {
        cluster(1, 0, b -> b.snapshotThresholdEntries(5).snapshotOnClose(false));
        cluster.start(1, true);
        awaitLeader();
        List<String> entries = names("s", 0, 33);
        for (String e : entries) {
            cluster.quorum(1).append(bytes(e)).get(5, TimeUnit.SECONDS);
        }
        MetadataQuorum q1 = cluster.quorum(1);
        await().atMost(SNAPSHOT_BOUND).until(() -> q1.snapshotIndex() >= 25);
        cluster.stop(1);
        long newestIndex = q1.snapshotIndex();
        List<Path> files = snapshotFiles(1);
        Path newest = files.get(files.size() - 1);
        assertThat(indexOf(newest)).isEqualTo(newestIndex);
        byte[] corrupt = Files.readAllBytes(newest);
        corrupt[corrupt.length - 1] ^= 0x5A;
        Files.write(newest, corrupt);

        RecordingListener restarted = cluster.start(1, true);
        await().atMost(ELECTION_BOUND).until(() -> restarted.state().size() >= entries.size());
        assertThat(restarted.state()).isEqualTo(entries);
        assertThat(restarted.snapshotsLoaded).hasSize(1).allSatisfy(i -> assertThat(i).isLessThan(newestIndex));
        assertThat(Files.exists(newest.resolveSibling(newest.getFileName() + ".corrupt"))).isTrue();
        assertClean(restarted, 1);
    }

    /**
     * Ratis checks its snapshot threshold right after handing entries over, and this state machine
     * applies them a moment later on its own thread: with a slow owner every check of a burst sees too
     * few applied, and nothing checks again while the cluster is quiet. The quorum asks for the missed
     * snapshot itself (this failed the snapshot tests now and then on a loaded machine).
     */
    @Test
    void aBurstAppliedAfterRatisLastLookedIsStillSnapshotted() throws Exception {
        cluster(1, 0, b -> b.snapshotThresholdEntries(10).snapshotOnClose(false));
        RecordingListener l = cluster.start(1, true);
        awaitLeader();
        l.applyDelayMs = 40;
        List<Long> indexes = appendAll(cluster.quorum(1), names("b", 0, 12));
        long last = indexes.get(indexes.size() - 1);
        MetadataQuorum q1 = cluster.quorum(1);
        await().atMost(Duration.ofSeconds(10)).until(() -> q1.snapshotIndex() >= last);
        assertThat(l.snapshotsTaken).isNotEmpty().allSatisfy(i -> assertThat(i).isGreaterThanOrEqualTo(last));
    }

    @Test
    void aCorruptNewestSnapshotWithThePurgedLogRefusesToStart() throws Exception {
        cluster(1, 0, b -> b.snapshotThresholdEntries(40).snapshotOnClose(false).logSegmentBytes(64 * 1024));
        cluster.start(1, true);
        awaitLeader();
        String pad = "p".repeat(4096);
        appendAll(cluster.quorum(1), IntStream.range(0, 150).mapToObj(i -> "z" + i + pad).collect(Collectors.toList()));
        MetadataQuorum q1 = cluster.quorum(1);
        await().atMost(SNAPSHOT_BOUND).until(() -> q1.snapshotIndex() >= 100);
        cluster.stop(1);
        List<Path> files = snapshotFiles(1);
        assertThat(files).hasSize(2);
        long firstLog;
        try (Stream<Path> s = Files.walk(cluster.storage(1))) {
            firstLog = s.map(p -> p.getFileName().toString()).filter(n -> n.matches("log_\\d+-\\d+|log_inprogress_\\d+"))
                    .mapToLong(n -> Long.parseLong(n.replaceAll("log_(inprogress_)?(\\d+).*", "$2"))).min().orElse(-1);
        }
        assertThat(firstLog).as("precondition: the log was purged past the older snapshot")
                .isGreaterThan(indexOf(files.get(0)) + 1);
        Path newest = files.get(1);
        byte[] corrupt = Files.readAllBytes(newest);
        corrupt[40] ^= 0x01;
        Files.write(newest, corrupt);

        assertThatThrownBy(() -> cluster.start(1, true))
                .satisfies(e -> assertThat(stackText(e)).contains("is corrupt").contains("re-joins from the quorum leader"));
        assertThat(Files.exists(newest)).as("left in place for the operator").isTrue();
    }

    private static String stackText(Throwable t) {
        StringBuilder b = new StringBuilder();
        for (Throwable c = t; c != null; c = c.getCause()) {
            b.append(c).append('\n');
        }
        return b.toString();
    }

    private List<Path> snapshotFiles(int nodeId) throws Exception {
        try (Stream<Path> s = Files.walk(cluster.storage(nodeId))) {
            return s.filter(p -> p.getFileName().toString().matches("snapshot\\.\\d+_\\d+"))
                    .sorted((a, b) -> Long.compare(indexOf(a), indexOf(b)))
                    .collect(Collectors.toList());
        }
    }

    private static long indexOf(Path snapshot) {
        String name = snapshot.getFileName().toString();
        return Long.parseLong(name.substring(name.indexOf('_') + 1));
    }

    @Test
    void aFollowerBehindThePurgedLogGetsTheLeadersSnapshot() throws Exception {
        cluster(3, 0, b -> b.snapshotThresholdEntries(20).logSegmentBytes(64 * 1024));
        cluster.startAll(true);
        int leader = awaitLeader();
        int lagging = cluster.voters.keySet().stream().filter(id -> id != leader).findFirst().orElseThrow();
        List<String> expected = new ArrayList<>(names("x", 0, 5));
        appendViaLeader(expected);
        awaitEveryoneHas(expected);
        cluster.stop(lagging);

        // ~4 KiB entries roll 64 KiB segments; snapshots every 20 entries let the leader purge them.
        String pad = "p".repeat(4096);
        List<String> big = IntStream.range(0, 120).mapToObj(i -> "y" + i + pad).collect(Collectors.toList());
        appendViaLeader(big);
        expected.addAll(big);
        await().atMost(ELECTION_BOUND).until(() -> cluster.quorum(awaitLeader()).snapshotIndex() > 100);

        RecordingListener back = cluster.start(lagging, true);
        await().atMost(Duration.ofSeconds(20)).until(() -> distinct(back.state()).size() >= expected.size());
        assertThat(distinct(back.state())).isEqualTo(expected);
        assertThat(back.snapshotsLoaded).as("snapshot installed from the leader").isNotEmpty();
        assertClean(back, lagging);
    }

    @Test
    void aThrowingListenerStopsTheMemberAndFailsAppends() throws Exception {
        cluster(1, 0, b -> b);
        RecordingListener r = cluster.start(1, false);
        r.failOnEntry = new IllegalStateException("listener bug");
        awaitLeader();
        MetadataQuorum q = cluster.quorum(1);
        assertThatThrownBy(() -> q.append(bytes("boom")).get(5, TimeUnit.SECONDS))
                .isInstanceOf(ExecutionException.class);
        await().atMost(ELECTION_BOUND).until(() -> q.failure().isPresent());
        assertThat(q.failure().get()).hasMessage("listener bug");
        assertThatThrownBy(() -> q.append(bytes("after")).get(5, TimeUnit.SECONDS))
                .cause().isInstanceOf(org.apache.kafka.common.KafkaException.class);
        assertThat(q.isLeader()).isFalse();
    }
}
