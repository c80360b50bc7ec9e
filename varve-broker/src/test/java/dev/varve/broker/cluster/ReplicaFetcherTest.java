package dev.varve.broker.cluster;

import dev.varve.broker.BrokerConfig;
import dev.varve.broker.api.ApiHandler;
import dev.varve.broker.api.ApiVersionsHandler;
import dev.varve.broker.cluster.ReplicaFetcherManager.FollowerPartition;
import dev.varve.broker.cluster.ReplicaFetcherManager.Leader;
import dev.varve.broker.network.KafkaServer;
import dev.varve.broker.network.RequestDispatcher;
import dev.varve.broker.replication.EpochEndOffsets;
import dev.varve.broker.replication.EpochFencing;
import dev.varve.storage.EpochEntry;
import dev.varve.storage.ExecutorScheduler;
import dev.varve.storage.LeaderEpochCache.EpochEndOffset;
import dev.varve.storage.LogConfig;
import dev.varve.storage.LogSlice;
import dev.varve.storage.PartitionLog;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.message.FetchRequestData;
import org.apache.kafka.common.message.FetchResponseData;
import org.apache.kafka.common.message.ListOffsetsRequestData;
import org.apache.kafka.common.message.ListOffsetsResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.FetchRequest;
import org.apache.kafka.common.requests.FetchResponse;
import org.apache.kafka.common.requests.ListOffsetsRequest;
import org.apache.kafka.common.requests.ListOffsetsResponse;
import org.apache.kafka.common.requests.RequestContext;
import org.apache.kafka.common.utils.Time;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The follower fetcher against stub leaders: a real {@link KafkaServer} on loopback serving replica
 * fetches (and ListOffsets) from a real leader {@link PartitionLog}, with epoch fencing and a
 * divergence check of the test's own ({@link #divergence}, from the leader's batches: the production
 * {@link EpochEndOffsets} is not its own oracle here). Absence is shown against progress (the leader
 * grew, the port was tried), not by sleeping. The follower must end byte for byte equal
 * to the leader, truncating exactly the divergent part of its log.
 */
class ReplicaFetcherTest {
    private static final TopicPartition TP = new TopicPartition("t", 0);
    private static final Uuid TOPIC_ID = Uuid.fromString("Zp3sUtMIQW6tNjXLbnH4BA");
    private static final int FOLLOWER_ID = 2;
    private static final long BROKER_EPOCH = 7;
    /** Small segments, so that logs span several. */
    private static final LogConfig LOG_CONFIG = LogConfig.fromMap(Map.of(TopicConfig.SEGMENT_BYTES_CONFIG, 2048));
    private static final ReplicaFetcherConfig FETCHER_CONFIG = new ReplicaFetcherConfig(1_048_576, 10_485_760, 50, 1, 100, 5_000, 1);

    @TempDir
    Path tmp;

    private ExecutorScheduler scheduler;
    private ReplicaFetcherManager manager;
    private final List<StubLeader> leaders = new ArrayList<>();
    private final List<PartitionLog> logs = new ArrayList<>();

    @BeforeEach
    void setUp() {
        scheduler = new ExecutorScheduler(1, "test-scheduler");
        manager = new ReplicaFetcherManager(FOLLOWER_ID, () -> BROKER_EPOCH, FETCHER_CONFIG, Time.SYSTEM);
    }

    @AfterEach
    void tearDown() throws Exception {
        manager.close();
        for (StubLeader l : leaders) {
            l.stop();
        }
        for (PartitionLog log : logs) {
            log.close();
        }
        scheduler.close();
    }

    @Test
    void followerCatchesUpByteForByteAndFollowsNewAppends() throws Exception {
        PartitionLog leaderLog = log("leader");
        for (int i = 0; i < 30; i++) {
            appendBatch(leaderLog, i < 20 ? 0 : 1, "a" + i, 4);
        }
        leaderLog.updateHighWatermark(leaderLog.logEndOffset());
        StubLeader leader = startLeader(1, leaderLog, 1);
        PartitionLog follower = log("follower");

        manager.addPartitions(leader.endpoint(), List.of(new FollowerPartition(TP, TOPIC_ID, 1, follower)));
        assertThat(manager.partitions()).containsExactly(TP);
        assertThat(manager.threadNames()).containsExactly("replica-fetcher-1-0");
        awaitIdentical(follower, leaderLog);
        assertThat(leaderLog.numberOfSegments()).isGreaterThan(1);

        for (int i = 30; i < 40; i++) {
            appendBatch(leaderLog, 1, "b" + i, 3);
        }
        leaderLog.updateHighWatermark(leaderLog.logEndOffset());
        awaitIdentical(follower, leaderLog);
        await().atMost(10, TimeUnit.SECONDS).until(() -> follower.highWatermark() == leaderLog.highWatermark());

        // What went over the wire: a full (sessionless) replica fetch at the newest version, fenced by epoch.
        await().atMost(10, TimeUnit.SECONDS).until(() -> lastFetch(leader).fetchOffset() == leaderLog.logEndOffset());
        SeenFetch last = lastFetch(leader);
        assertThat(last.version()).isEqualTo(ApiKeys.FETCH.latestVersion());
        assertThat(last.replicaId()).isEqualTo(FOLLOWER_ID);
        assertThat(last.replicaEpoch()).isEqualTo(BROKER_EPOCH);
        assertThat(last.sessionId()).isZero();
        assertThat(last.currentLeaderEpoch()).isEqualTo(1);
        assertThat(last.lastFetchedEpoch()).isEqualTo(1);
        assertThat(last.fetchOffset()).isEqualTo(leaderLog.logEndOffset());
        assertThat(last.maxWaitMs()).isEqualTo(50);
    }

    @Test
    void highWatermarkPropagatesButNeverPassesTheFollowersLogEnd() throws Exception {
        PartitionLog leaderLog = log("leader");
        for (int i = 0; i < 10; i++) {
            appendBatch(leaderLog, 0, "a" + i, 1);
        }
        leaderLog.updateHighWatermark(4);
        StubLeader leader = startLeader(1, leaderLog, 0);
        PartitionLog follower = log("follower");
        manager.addPartitions(leader.endpoint(), List.of(new FollowerPartition(TP, TOPIC_ID, 0, follower)));

        awaitIdentical(follower, leaderLog);
        await().atMost(10, TimeUnit.SECONDS).until(() -> follower.highWatermark() == 4);
        leaderLog.updateHighWatermark(10);
        await().atMost(10, TimeUnit.SECONDS).until(() -> follower.highWatermark() == 10);
        assertThat(follower.highWatermark()).isLessThanOrEqualTo(follower.logEndOffset());
    }

    /**
     * KIP-101 (first scenario): a follower whose high watermark lags must not truncate to it, or it would
     * throw away committed records it already has; with matching epochs it truncates nothing.
     */
    @Test
    void followerWithLaggingHighWatermarkKeepsItsRecords() throws Exception {
        PartitionLog leaderLog = log("leader");
        PartitionLog follower = log("follower");
        for (int i = 0; i < 10; i++) {
            appendBatch(leaderLog, 0, "a" + i, 1);
        }
        copy(leaderLog, follower);
        follower.updateHighWatermark(5);
        appendBatch(leaderLog, 1, "b", 3);
        leaderLog.updateHighWatermark(leaderLog.logEndOffset());
        StubLeader leader = startLeader(1, leaderLog, 1);

        manager.addPartitions(leader.endpoint(), List.of(new FollowerPartition(TP, TOPIC_ID, 1, follower)));
        awaitIdentical(follower, leaderLog);
        assertThat(leader.fetches).allSatisfy(f -> assertThat(f.fetchOffset()).isGreaterThanOrEqualTo(10));
    }

    /** A follower led epoch 1 for a while; the leader of epoch 2 never saw it: exactly that tail goes. */
    @Test
    void divergentTailFromAnOlderEpochIsTruncatedExactly() throws Exception {
        PartitionLog leaderLog = log("leader");
        PartitionLog follower = log("follower");
        for (int i = 0; i < 5; i++) {
            appendBatch(leaderLog, 0, "common" + i, 2);
        }
        copy(leaderLog, follower);
        for (int i = 0; i < 3; i++) {
            appendBatch(follower, 1, "lost" + i, 2);     // offsets 10..15 in epoch 1, only here
        }
        for (int i = 0; i < 4; i++) {
            appendBatch(leaderLog, 2, "new" + i, 2);     // offsets 10..17 in epoch 2
        }
        leaderLog.updateHighWatermark(leaderLog.logEndOffset());
        follower.updateHighWatermark(10);
        StubLeader leader = startLeader(1, leaderLog, 2);
        // the broker checkpoints lowered recovery points here (LogManager.checkpointLoweredRecoveryPoints)
        List<long[]> hookCalls = new java.util.concurrent.CopyOnWriteArrayList<>();
        manager.setAfterTruncation(() -> hookCalls.add(new long[]{follower.logEndOffset(), follower.recoveryPoint()}));

        manager.addPartitions(leader.endpoint(), List.of(new FollowerPartition(TP, TOPIC_ID, 2, follower)));
        awaitIdentical(follower, leaderLog);
        assertThat(follower.epochCache().entries()).containsExactly(new EpochEntry(0, 0), new EpochEntry(2, 10));
        // the hook ran after the truncation to 10 and before the leader's batches were appended
        assertThat(hookCalls).as("after-truncation calls (log end, recovery point)")
                .anySatisfy(c -> {
                    assertThat(c[0]).isEqualTo(10);
                    assertThat(c[1]).isLessThanOrEqualTo(10);
                });
        // One diverging answer (epoch 0 ends at 10), then fetching from 10: nothing below it was cut.
        assertThat(leader.fetches.peek()).extracting(SeenFetch::fetchOffset, SeenFetch::lastFetchedEpoch)
                .containsExactly(16L, 1);
        assertThat(leader.fetches).allSatisfy(f -> assertThat(f.fetchOffset()).isGreaterThanOrEqualTo(10));
    }

    /**
     * KIP-279: leaders changed in quick succession, so the follower holds epochs the leader never saw and
     * the leader holds epochs the follower never saw; the follower converges over several rounds.
     */
    @Test
    void followerConvergesOverSeveralRoundsWhenEpochsInterleave() throws Exception {
        PartitionLog leaderLog = log("leader");
        PartitionLog follower = log("follower");
        appendBatch(leaderLog, 0, "common", 3);          // 0..2
        copy(leaderLog, follower);
        appendBatch(follower, 1, "f1", 2);               // 3..4, epoch 1 (follower only)
        appendBatch(follower, 3, "f3", 3);               // 5..7, epoch 3 (follower only)
        appendBatch(leaderLog, 2, "l2", 3);              // 3..5, epoch 2 (leader only)
        appendBatch(leaderLog, 4, "l4", 4);              // 6..9, epoch 4
        leaderLog.updateHighWatermark(leaderLog.logEndOffset());
        StubLeader leader = startLeader(1, leaderLog, 4);

        manager.addPartitions(leader.endpoint(), List.of(new FollowerPartition(TP, TOPIC_ID, 4, follower)));
        awaitIdentical(follower, leaderLog);
        List<SeenFetch> first = List.copyOf(leader.fetches).subList(0, 3);
        // Asked with epoch 3 at 8 -> leader's epoch 2 ends at 6: cut epoch 3 (to 5), ask with epoch 1 ->
        // leader's epoch 0 ends at 3: cut to 3; the common prefix stays.
        assertThat(first).extracting(SeenFetch::fetchOffset).containsExactly(8L, 5L, 3L);
        assertThat(first).extracting(SeenFetch::lastFetchedEpoch).containsExactly(3, 1, 0);
        assertThat(leader.fetches).allSatisfy(f -> assertThat(f.fetchOffset()).isGreaterThanOrEqualTo(3));
    }

    @Test
    void followerBelowTheLeadersLogStartRestartsThere() throws Exception {
        PartitionLog leaderLog = log("leader");
        PartitionLog follower = log("follower");
        for (int i = 0; i < 2; i++) {
            appendBatch(leaderLog, 0, "old" + i, 3);
        }
        copy(leaderLog, follower);                         // 0..5
        for (int i = 2; i < 14; i++) {
            appendBatch(leaderLog, 0, "v" + i, 3);         // batches of 3 up to 41
        }
        leaderLog.updateHighWatermark(leaderLog.logEndOffset());
        leaderLog.deleteRecordsBefore(31);                 // inside the batch 30..32
        StubLeader leader = startLeader(1, leaderLog, 0);

        manager.addPartitions(leader.endpoint(), List.of(new FollowerPartition(TP, TOPIC_ID, 0, follower)));
        awaitIdentical(follower, leaderLog);
        assertThat(follower.logStartOffset()).isEqualTo(31);
        assertThat(follower.segmentBaseOffsets().get(0)).isEqualTo(30); // restarted at the batch holding 31
        assertThat(leader.listOffsets).isPositive();
    }

    @Test
    void followerRaisesItsLogStartWithTheLeaders() throws Exception {
        PartitionLog leaderLog = log("leader");
        for (int i = 0; i < 40; i++) {
            appendBatch(leaderLog, 0, "v" + i, 1);
        }
        leaderLog.updateHighWatermark(leaderLog.logEndOffset());
        StubLeader leader = startLeader(1, leaderLog, 0);
        PartitionLog follower = log("follower");
        manager.addPartitions(leader.endpoint(), List.of(new FollowerPartition(TP, TOPIC_ID, 0, follower)));
        awaitIdentical(follower, leaderLog);

        leaderLog.deleteRecordsBefore(25);
        await().atMost(10, TimeUnit.SECONDS).until(() -> follower.logStartOffset() == 25);
        awaitIdentical(follower, leaderLog);
    }

    @Test
    void removedPartitionIsNeverAppendedToAgain() throws Exception {
        PartitionLog leaderLog = log("leader");
        appendBatch(leaderLog, 0, "first", 1);
        leaderLog.updateHighWatermark(leaderLog.logEndOffset());
        StubLeader leader = startLeader(1, leaderLog, 0);
        PartitionLog follower = log("follower");
        manager.addPartitions(leader.endpoint(), List.of(new FollowerPartition(TP, TOPIC_ID, 0, follower)));
        awaitIdentical(follower, leaderLog);

        // The leader keeps appending while the partition is removed.
        AtomicBoolean stop = new AtomicBoolean();
        Thread appender = new Thread(() -> {
            for (int i = 0; !stop.get(); i++) {
                appendBatch(leaderLog, 0, "more" + i, 2);
                leaderLog.updateHighWatermark(leaderLog.logEndOffset());
                sleep(2);
            }
        });
        appender.start();
        await().atMost(10, TimeUnit.SECONDS).until(() -> follower.logEndOffset() > 20);
        manager.removePartitions(List.of(TP));
        long endAtRemoval = follower.logEndOffset();
        int fetchesAtRemoval = leader.fetches.size();
        assertThat(manager.partitions()).isEmpty();
        assertThat(manager.threadNames()).isEmpty();
        // the leader goes on (enough for a running fetcher to have fetched several times): nothing follows
        long leaderEndAtRemoval = leaderLog.logEndOffset();
        await().atMost(10, TimeUnit.SECONDS).until(() -> leaderLog.logEndOffset() >= leaderEndAtRemoval + 100);
        stop.set(true);
        appender.join();
        assertThat(follower.logEndOffset()).isEqualTo(endAtRemoval);
        assertThat(leader.fetches.size() - fetchesAtRemoval).as("fetches after removal (one may have been in flight)")
                .isLessThanOrEqualTo(1);
    }

    /** The old leader's tail (epoch 0) that the new leader never got is cut; the old leader's thread stops. */
    @Test
    void partitionMovesToANewLeader() throws Exception {
        PartitionLog logA = log("leaderA");
        for (int i = 0; i < 10; i++) {
            appendBatch(logA, 0, "a" + i, 1);
        }
        PartitionLog logB = log("leaderB");
        copy(logA, logB);
        appendBatch(logA, 0, "onlyOnA", 2);                // 10..11, uncommitted, never reached B
        logA.updateHighWatermark(10);
        StubLeader leaderA = startLeader(1, logA, 0);
        PartitionLog follower = log("follower");
        manager.addPartitions(leaderA.endpoint(), List.of(new FollowerPartition(TP, TOPIC_ID, 0, follower)));
        awaitIdentical(follower, logA);

        for (int i = 0; i < 5; i++) {
            appendBatch(logB, 1, "b" + i, 2);            // B leads epoch 1 from offset 10
        }
        logB.updateHighWatermark(logB.logEndOffset());
        StubLeader leaderB = startLeader(3, logB, 1);
        leaderA.leaderEpoch = 1;                          // A learnt it is no longer the leader
        manager.addPartitions(leaderB.endpoint(), List.of(new FollowerPartition(TP, TOPIC_ID, 1, follower)));
        assertThat(manager.threadNames()).containsExactly("replica-fetcher-3-0");
        awaitIdentical(follower, logB);
        assertThat(follower.epochCache().entries()).containsExactly(new EpochEntry(0, 0), new EpochEntry(1, 10));
    }

    @Test
    void fetcherReconnectsWhenTheLeaderComesBack() throws Exception {
        PartitionLog leaderLog = log("leader");
        appendBatch(leaderLog, 0, "before", 3);
        leaderLog.updateHighWatermark(leaderLog.logEndOffset());
        StubLeader leader = startLeader(1, leaderLog, 0);
        PartitionLog follower = log("follower");
        manager.addPartitions(leader.endpoint(), List.of(new FollowerPartition(TP, TOPIC_ID, 0, follower)));
        awaitIdentical(follower, leaderLog);

        leader.stopServer();
        appendBatch(leaderLog, 0, "whileDown", 3);
        leaderLog.updateHighWatermark(leaderLog.logEndOffset());
        // while the leader is down its port takes connections and drops them: the follower retries
        java.util.concurrent.atomic.AtomicInteger attempts = new java.util.concurrent.atomic.AtomicInteger();
        try (java.net.ServerSocket down = new java.net.ServerSocket()) {
            down.setReuseAddress(true);
            down.bind(new java.net.InetSocketAddress("127.0.0.1", leader.port()));
            Thread acceptor = new Thread(() -> {
                while (!down.isClosed()) {
                    try (java.net.Socket s = down.accept()) {
                        // reset, not FIN: a half-closed accepted socket would hold the port (FIN_WAIT2,
                        // which SO_REUSEADDR does not cover) until the follower closes its end, and the
                        // leader's restart below would fail to bind it
                        s.setSoLinger(true, 0);
                        attempts.incrementAndGet();
                    } catch (java.io.IOException e) {
                        return;
                    }
                }
            });
            acceptor.start();
            await().atMost(10, TimeUnit.SECONDS).until(() -> attempts.get() >= 3);
            down.close();
            acceptor.join(10_000);
        }
        assertThat(follower.logEndOffset()).isEqualTo(3);
        assertThat(manager.partitions()).containsExactly(TP);

        // the same port again: a socket of the closing acceptor or a follower's reconnect may still hold
        // it for a moment (EADDRINUSE), so the restart retries the bind for a few seconds
        long bindDeadline = System.currentTimeMillis() + 10_000;
        while (true) {
            try {
                leader.startServer();
                break;
            } catch (Exception e) { // Netty rethrows the bind's IOException unchecked
                if (System.currentTimeMillis() > bindDeadline || !String.valueOf(e.getMessage()).contains("Address already in use")) {
                    throw e;
                }
                Thread.sleep(100);
            }
        }
        awaitIdentical(follower, leaderLog);
        assertThat(manager.threadNames()).containsExactly("replica-fetcher-1-0");
    }

    @Test
    void fencedFollowerKeepsThePartitionUntilItLearnsTheNewEpoch() throws Exception {
        PartitionLog leaderLog = log("leader");
        appendBatch(leaderLog, 0, "x", 3);
        appendBatch(leaderLog, 5, "y", 3);
        leaderLog.updateHighWatermark(leaderLog.logEndOffset());
        StubLeader leader = startLeader(1, leaderLog, 5);
        PartitionLog follower = log("follower");
        manager.addPartitions(leader.endpoint(), List.of(new FollowerPartition(TP, TOPIC_ID, 4, follower)));

        await().atMost(10, TimeUnit.SECONDS).until(() -> leader.fetches.size() >= 4);
        assertThat(follower.logEndOffset()).isZero();
        assertThat(manager.partitions()).containsExactly(TP);
        // Backs off (replica.fetch.backoff.ms) between fenced attempts instead of spinning.
        List<SeenFetch> seen = List.copyOf(leader.fetches);
        for (int i = 1; i < seen.size(); i++) {
            long gapMs = (seen.get(i).receivedNanos() - seen.get(i - 1).receivedNanos()) / 1_000_000;
            assertThat(gapMs).as("gap before fenced attempt %d", i).isGreaterThanOrEqualTo(FETCHER_CONFIG.fetchBackoffMs() - 10);
        }

        manager.addPartitions(leader.endpoint(), List.of(new FollowerPartition(TP, TOPIC_ID, 5, follower)));
        awaitIdentical(follower, leaderLog);
    }

    @Test
    void partitionsAreSpreadOverNumReplicaFetchersThreadsPerLeader() throws Exception {
        TopicPartition tp1 = new TopicPartition("t", 1);
        ReplicaFetcherManager two = new ReplicaFetcherManager(FOLLOWER_ID, () -> BROKER_EPOCH,
                new ReplicaFetcherConfig(1_048_576, 10_485_760, 50, 1, 100, 5_000, 2), Time.SYSTEM);
        try {
            assertThat(two.fetcherId(TP)).isNotEqualTo(two.fetcherId(tp1));
            PartitionLog leader0 = log("leader", TP);
            PartitionLog leader1 = log("leader", tp1);
            for (int i = 0; i < 10; i++) {
                appendBatch(leader0, 0, "p0-" + i, 2);
                appendBatch(leader1, 0, "p1-" + i, 3);
            }
            StubLeader leader = startLeader(1, Map.of(0, leader0, 1, leader1), 0);
            PartitionLog follower0 = log("follower", TP);
            PartitionLog follower1 = log("follower", tp1);
            two.addPartitions(leader.endpoint(), List.of(new FollowerPartition(TP, TOPIC_ID, 0, follower0),
                    new FollowerPartition(tp1, TOPIC_ID, 0, follower1)));
            assertThat(two.threadNames()).containsExactlyInAnyOrder("replica-fetcher-1-0", "replica-fetcher-1-1");
            awaitIdentical(follower0, leader0);
            awaitIdentical(follower1, leader1);

            two.removePartitions(List.of(tp1));
            assertThat(two.partitions()).containsExactly(TP);
            assertThat(two.threadNames()).containsExactly("replica-fetcher-1-" + two.fetcherId(TP));
        } finally {
            two.close();
        }
    }

    @Test
    void aPartialBatchAtTheEndOfAFetchIsLeftForTheNextOne() {
        ByteBuffer two = ByteBuffer.allocate(1024);
        MemoryRecords a = MemoryRecords.withRecords(0L, Compression.NONE, new SimpleRecord("a".getBytes()));
        MemoryRecords b = MemoryRecords.withRecords(1L, Compression.NONE, new SimpleRecord("b".getBytes()));
        two.put(a.buffer()).put(b.buffer().limit(b.sizeInBytes() - 5)).flip();
        MemoryRecords trimmed = ReplicaFetcherThread.wholeBatches(MemoryRecords.readableRecords(two));
        assertThat(trimmed.sizeInBytes()).isEqualTo(a.sizeInBytes());
        assertThat(trimmed.batches()).extracting(RecordBatch::baseOffset).containsExactly(0L);
        assertThat(ReplicaFetcherThread.wholeBatches(a)).isSameAs(a);
    }

    /**
     * AlterReplicaLogDirs on a cluster broker: a follower's replica moves to another log directory while
     * its fetcher truncates a divergent tail and appends the leader's batches (the move paced slow enough
     * to overlap both). It ends byte for byte equal to the leader, in the new directory, and loads so
     * from there.
     */
    @Test
    void aFollowerMovesToAnotherLogDirectoryWhileItsFetcherTruncatesAndAppends() throws Exception {
        File a = tmp.resolve("jbod-a").toFile();
        File b = tmp.resolve("jbod-b").toFile();
        dev.varve.storage.LogManagerConfig dirs = dev.varve.storage.LogManagerConfig.defaults(List.of(a, b))
                .withReplicaMoveBytesPerSecond(4 * 1024); // about a second for the first 5 KB
        dev.varve.storage.LogManager logManager = new dev.varve.storage.LogManager(dirs, t -> LOG_CONFIG, Time.SYSTEM, scheduler);
        logManager.startup();
        PartitionLog leaderLog = log("leader");
        PartitionLog follower = logManager.getOrCreateLog(TP);
        assertThat(follower.dir().getParentFile()).isEqualTo(a);
        for (int i = 0; i < 30; i++) {
            appendBatch(leaderLog, 0, "common" + i, 4);
        }
        copy(leaderLog, follower);
        follower.updateHighWatermark(follower.logEndOffset());
        for (int i = 0; i < 10; i++) {
            appendBatch(follower, 1, "lost" + i, 2); // only here: the fetcher cuts it
        }
        for (int i = 0; i < 10; i++) {
            appendBatch(leaderLog, 2, "new" + i, 4);
        }
        leaderLog.updateHighWatermark(leaderLog.logEndOffset());
        assertThat(logManager.alterLogDir(TP, b)).isEqualTo(dev.varve.storage.LogManager.AlterLogDirResult.MOVING);

        StubLeader leader = startLeader(1, leaderLog, 2);
        manager.addPartitions(leader.endpoint(), List.of(new FollowerPartition(TP, TOPIC_ID, 2, follower)));
        awaitIdentical(follower, leaderLog); // the divergent tail is cut: the copy had taken some of it
        assertThat(logManager.movingTo(TP)).as("still moving after the truncation").contains(b);
        for (int i = 0; i < 10; i++) { // the leader goes on while the copy is made
            appendBatch(leaderLog, 2, "more" + i, 4);
            leaderLog.updateHighWatermark(leaderLog.logEndOffset());
            sleep(20);
        }
        awaitIdentical(follower, leaderLog);
        await().atMost(20, TimeUnit.SECONDS).until(() -> logManager.movingTo(TP).isEmpty());
        assertThat(follower.dir()).isEqualTo(new File(b, TP.toString()));
        appendBatch(leaderLog, 2, "after", 2);
        leaderLog.updateHighWatermark(leaderLog.logEndOffset());
        awaitIdentical(follower, leaderLog);
        List<Batch> expected = batches(leaderLog);

        manager.removePartitions(List.of(TP));
        logManager.close();
        dev.varve.storage.LogManager again = new dev.varve.storage.LogManager(dirs, t -> LOG_CONFIG, Time.SYSTEM, scheduler);
        again.startup();
        PartitionLog reloaded = again.getLog(TP).orElseThrow();
        assertThat(reloaded.dir()).isEqualTo(new File(b, TP.toString()));
        assertThat(batches(reloaded)).isEqualTo(expected);
        assertThat(reloaded.epochCache().entries()).isEqualTo(leaderLog.epochCache().entries());
        again.close();
    }

    // ---------------------------------------------------------------- helpers

    private PartitionLog log(String name) throws IOException {
        return log(name, TP);
    }

    private PartitionLog log(String name, TopicPartition tp) throws IOException {
        PartitionLog log = PartitionLog.open(tmp.resolve(name).resolve(tp.toString()).toFile(), tp, LOG_CONFIG, Time.SYSTEM, scheduler);
        logs.add(log);
        return log;
    }

    private StubLeader startLeader(int brokerId, PartitionLog log, int epoch) throws InterruptedException {
        return startLeader(brokerId, Map.of(TP.partition(), log), epoch);
    }

    private StubLeader startLeader(int brokerId, Map<Integer, PartitionLog> logs, int epoch) throws InterruptedException {
        StubLeader leader = new StubLeader(brokerId, logs, epoch, tmp.resolve("broker-" + brokerId).toFile());
        leader.startServer();
        leaders.add(leader);
        return leader;
    }

    private static void appendBatch(PartitionLog log, int epoch, String prefix, int records) {
        SimpleRecord[] rs = new SimpleRecord[records];
        for (int i = 0; i < records; i++) {
            rs[i] = new SimpleRecord(1_700_000_000_000L + i, ("k" + i).getBytes(), (prefix + "-" + i).getBytes());
        }
        log.appendAsLeader(MemoryRecords.withRecords(Compression.NONE, rs), epoch);
    }

    /** Replicates {@code from} into the empty {@code to} directly (both replicas then share a prefix). */
    private static void copy(PartitionLog from, PartitionLog to) {
        for (Batch b : batches(from)) {
            to.appendAsFollower(MemoryRecords.readableRecords(ByteBuffer.wrap(Base64.getDecoder().decode(b.bytes()))));
        }
    }

    /** A batch as stored: offsets, epoch and its exact bytes. */
    private record Batch(long baseOffset, long lastOffset, int epoch, String bytes) {
    }

    private static List<Batch> batches(PartitionLog log) {
        List<Batch> out = new ArrayList<>();
        long end = log.logEndOffset();
        long offset = log.logStartOffset();
        while (offset < end) {
            LogSlice slice = log.read(offset, 1 << 20, end, true);
            if (slice.isEmpty()) {
                break;
            }
            for (RecordBatch b : slice.records().batches()) {
                if (b.lastOffset() < offset) {
                    continue;
                }
                ByteBuffer bytes = ByteBuffer.allocate(b.sizeInBytes());
                b.writeTo(bytes);
                out.add(new Batch(b.baseOffset(), b.lastOffset(), b.partitionLeaderEpoch(),
                        Base64.getEncoder().encodeToString(bytes.array())));
                offset = b.nextOffset();
            }
        }
        return out;
    }

    private static void awaitIdentical(PartitionLog follower, PartitionLog leader) {
        await().atMost(10, TimeUnit.SECONDS).pollInterval(20, TimeUnit.MILLISECONDS).untilAsserted(() -> {
            assertThat(follower.logEndOffset()).isEqualTo(leader.logEndOffset());
            assertThat(follower.logStartOffset()).isEqualTo(leader.logStartOffset());
            assertThat(batches(follower)).isEqualTo(batches(leader));
            assertThat(follower.epochCache().entries()).isEqualTo(leader.epochCache().entries());
        });
    }

    private static SeenFetch lastFetch(StubLeader leader) {
        return leader.fetches.stream().reduce((a, b) -> b).orElseThrow();
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * The test's own model of the leader's KIP-320 check, from the batches in the leader's log (not
     * its epoch cache, nor the production {@link EpochEndOffsets}): for the follower's last fetched
     * epoch E, the largest epoch at most E that the log holds and where it ends (the base offset of
     * the first batch of a later epoch, else the log end); the follower diverges when that epoch is
     * not E or ends before its fetch offset. No epoch at most E: epoch -1, offset -1.
     */
    static Optional<EpochEndOffset> divergence(PartitionLog log, int lastFetchedEpoch, long fetchOffset) {
        if (lastFetchedEpoch < 0) {
            return Optional.empty();
        }
        int epoch = -1;
        long endOffset = -1;
        boolean ended = false;
        long next = log.logStartOffset();
        long logEnd = log.logEndOffset();
        while (!ended && next < logEnd) { // a read returns batches of one segment at most
            long before = next;
            for (org.apache.kafka.common.record.internal.RecordBatch b
                    : log.read(next, 1 << 20, logEnd, true).records().batches()) {
                if (b.lastOffset() < next) {
                    continue;
                }
                if (b.partitionLeaderEpoch() <= lastFetchedEpoch) {
                    epoch = b.partitionLeaderEpoch();
                } else {
                    endOffset = b.baseOffset();
                    ended = true;
                    break;
                }
                next = b.nextOffset();
            }
            if (next == before) {
                break;
            }
        }
        if (epoch < 0) {
            return Optional.of(new EpochEndOffset(-1, -1));
        }
        if (!ended) {
            endOffset = logEnd;
        }
        if (epoch != lastFetchedEpoch || endOffset < fetchOffset) {
            return Optional.of(new EpochEndOffset(epoch, endOffset));
        }
        return Optional.empty();
    }

    /** The fields of one replica fetch the stub received. */
    record SeenFetch(short version, int replicaId, long replicaEpoch, int sessionId, int maxWaitMs, long fetchOffset,
                     int currentLeaderEpoch, int lastFetchedEpoch, long receivedNanos) {
    }

    /**
     * A leader for one partition: Fetch (replica fetches up to the log end, the divergence check and
     * fencing of a real leader; waits {@code maxWaitMs} when there is nothing new), ListOffsets and
     * ApiVersions, on a real {@link KafkaServer}. Restartable on the same port.
     */
    static final class StubLeader {
        final int brokerId;
        /** The partitions of topic t this broker leads, by index. */
        final Map<Integer, PartitionLog> logs;
        final File dir;
        volatile int leaderEpoch;
        final ConcurrentLinkedQueue<SeenFetch> fetches = new ConcurrentLinkedQueue<>();
        volatile int listOffsets;
        private final ExecutorService requestThreads = Executors.newFixedThreadPool(2, r -> {
            Thread t = new Thread(r, "stub-leader-request");
            t.setDaemon(true);
            return t;
        });
        private KafkaServer server;
        private int port;

        StubLeader(int brokerId, Map<Integer, PartitionLog> logs, int leaderEpoch, File dir) {
            this.brokerId = brokerId;
            this.logs = logs;
            this.leaderEpoch = leaderEpoch;
            this.dir = dir;
        }

        Leader endpoint() {
            return new Leader(brokerId, "127.0.0.1", port);
        }

        int port() {
            return port;
        }

        void startServer() throws InterruptedException {
            RequestDispatcher[] dispatcher = new RequestDispatcher[1];
            dispatcher[0] = new RequestDispatcher(List.of(new FetchStub(), new ListOffsetsStub(),
                    new ApiVersionsHandler(() -> dispatcher[0].apiVersions())));
            BrokerConfig config = BrokerConfig.from(Map.of("listeners", "PLAINTEXT://127.0.0.1:" + port,
                    "log.dirs", dir.getAbsolutePath()));
            server = new KafkaServer(config, config.listenerSecurity(), dispatcher[0], requestThreads);
            port = server.boundAddresses().get(0).getPort();
        }

        void stopServer() {
            server.close();
        }

        void stop() {
            stopServer();
            requestThreads.shutdownNow();
        }

        private final class FetchStub implements ApiHandler {
            @Override
            public ApiKeys apiKey() {
                return ApiKeys.FETCH;
            }

            @Override
            public short minVersion() {
                return ApiKeys.FETCH.oldestVersion();
            }

            @Override
            public short maxVersion() {
                return ApiKeys.FETCH.latestVersion();
            }

            @Override
            public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
                FetchRequest req = (FetchRequest) request;
                FetchRequestData data = req.data();
                for (FetchRequestData.FetchTopic t : data.topics()) {
                    for (FetchRequestData.FetchPartition p : t.partitions()) {
                        fetches.add(new SeenFetch(req.version(), data.replicaState().replicaId(),
                                data.replicaState().replicaEpoch(), data.sessionId(), data.maxWaitMs(), p.fetchOffset(),
                                p.currentLeaderEpoch(), p.lastFetchedEpoch(), System.nanoTime()));
                    }
                }
                FetchResponseData first = read(data);
                if (first.responses().stream().flatMap(t -> t.partitions().stream())
                        .anyMatch(p -> p.errorCode() != 0 || FetchResponse.recordsSize(p) > 0 || FetchResponse.isDivergingEpoch(p))) {
                    return CompletableFuture.completedFuture(FetchResponse.of(first));
                }
                // Nothing new: answer after max wait with whatever is there then (a purgatory without the triggers).
                return CompletableFuture.supplyAsync(() -> FetchResponse.of(read(data)),
                        CompletableFuture.delayedExecutor(data.maxWaitMs(), TimeUnit.MILLISECONDS, requestThreads));
            }

            private FetchResponseData read(FetchRequestData data) {
                FetchResponseData response = new FetchResponseData().setSessionId(0);
                for (FetchRequestData.FetchTopic t : data.topics()) {
                    FetchResponseData.FetchableTopicResponse tr = new FetchResponseData.FetchableTopicResponse()
                            .setTopic(t.topic()).setTopicId(t.topicId());
                    for (FetchRequestData.FetchPartition p : t.partitions()) {
                        tr.partitions().add(readPartition(t, p));
                    }
                    response.responses().add(tr);
                }
                return response;
            }

            private FetchResponseData.PartitionData readPartition(FetchRequestData.FetchTopic t, FetchRequestData.FetchPartition p) {
                FetchResponseData.PartitionData pd = new FetchResponseData.PartitionData().setPartitionIndex(p.partition())
                        .setHighWatermark(-1).setLogStartOffset(-1).setLastStableOffset(-1).setRecords(MemoryRecords.EMPTY);
                if (!TOPIC_ID.equals(t.topicId())) {
                    return pd.setErrorCode(Errors.UNKNOWN_TOPIC_ID.code());
                }
                PartitionLog log = logs.get(p.partition());
                if (log == null) {
                    return pd.setErrorCode(Errors.UNKNOWN_TOPIC_OR_PARTITION.code());
                }
                Errors fenced = EpochFencing.validate(p.currentLeaderEpoch(), leaderEpoch);
                if (fenced != Errors.NONE) {
                    return pd.setErrorCode(fenced.code());
                }
                try {
                    long end = log.logEndOffset();
                    Optional<EpochEndOffset> diverging = divergence(log, p.lastFetchedEpoch(), p.fetchOffset());
                    pd.setHighWatermark(log.highWatermark()).setLastStableOffset(log.highWatermark())
                            .setLogStartOffset(log.logStartOffset());
                    if (diverging.isPresent()) {
                        return pd.setDivergingEpoch(new FetchResponseData.EpochEndOffset()
                                .setEpoch(diverging.get().epoch()).setEndOffset(diverging.get().endOffset()));
                    }
                    LogSlice slice = log.read(p.fetchOffset(), p.partitionMaxBytes(), end, true);
                    return pd.setRecords(slice.records());
                } catch (RuntimeException e) {
                    return pd.setErrorCode(Errors.forException(e).code()).setHighWatermark(-1).setLogStartOffset(-1);
                }
            }
        }

        private final class ListOffsetsStub implements ApiHandler {
            @Override
            public ApiKeys apiKey() {
                return ApiKeys.LIST_OFFSETS;
            }

            @Override
            public short minVersion() {
                return ApiKeys.LIST_OFFSETS.oldestVersion();
            }

            @Override
            public short maxVersion() {
                return ApiKeys.LIST_OFFSETS.latestVersion();
            }

            @Override
            public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
                listOffsets++;
                ListOffsetsResponseData response = new ListOffsetsResponseData();
                for (ListOffsetsRequestData.ListOffsetsTopic t : ((ListOffsetsRequest) request).topics()) {
                    ListOffsetsResponseData.ListOffsetsTopicResponse tr = new ListOffsetsResponseData.ListOffsetsTopicResponse().setName(t.name());
                    for (ListOffsetsRequestData.ListOffsetsPartition p : t.partitions()) {
                        PartitionLog log = logs.get(p.partitionIndex());
                        // A replica asking LATEST gets the log end (a consumer would get the high watermark).
                        long offset = p.timestamp() == ListOffsetsRequest.EARLIEST_TIMESTAMP ? log.logStartOffset() : log.logEndOffset();
                        tr.partitions().add(new ListOffsetsResponseData.ListOffsetsPartitionResponse()
                                .setPartitionIndex(p.partitionIndex()).setOffset(offset).setTimestamp(-1).setLeaderEpoch(leaderEpoch));
                    }
                    response.topics().add(tr);
                }
                return CompletableFuture.completedFuture(new ListOffsetsResponse(response));
            }
        }
    }
}
