package dev.varve.broker.replication;

import dev.varve.metadata.BrokerRegistration;
import dev.varve.metadata.ClusterControl;
import dev.varve.metadata.MetadataImage;
import dev.varve.metadata.PartitionState;
import dev.varve.storage.LeaderEpochCache.EpochEndOffset;
import org.apache.kafka.common.Uuid;
import dev.varve.broker.cluster.AlterPartitionBatcher;
import dev.varve.broker.cluster.ControllerChannel;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.message.AlterPartitionRequestData;
import org.apache.kafka.common.message.AlterPartitionResponseData;
import org.apache.kafka.common.protocol.Errors;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;

/**
 * One broker as a simulation node, for the simulation's single partition: the process around the
 * broker's own replica code. Every replica decision is the production code's — the
 * {@link PartitionReplica} state machine {@code ClusterReplicaManager} runs per partition (metadata
 * transitions, appends, follower fetches, acks tied to the leader epoch of their append, ISR shrink
 * checks, AlterPartition answers), the {@link FollowerReplica} answer handling {@code ReplicaFetcherThread}
 * runs (records, divergence, out of range, errors), and the broker's {@link AlterPartitionBatcher} (one
 * request in flight, changes coalesced) — over a {@link SimLog}. What is here is what the real broker's
 * threads and sockets do around them:
 * <ul>
 *   <li>lifecycle (BrokerLifecycle): registration (retried; with the broker epoch of its last clean
 *       shutdown, if any), heartbeats (refused with STALE_BROKER_EPOCH: register again), controlled
 *       shutdown;</li>
 *   <li>metadata: applies images that include its own registration, newer than the last applied;</li>
 *   <li>the fetcher's loop: one fetch in flight, with {@code CurrentLeaderEpoch} and
 *       {@code LastFetchedEpoch}; a stale answer (another fetch, another leader epoch, the log moved) is
 *       ignored, a lost one times out; the ListOffsets round trip after OFFSET_OUT_OF_RANGE is folded
 *       into the answer;</li>
 *   <li>the controller channel: an AlterPartition request is resent until answered, and fails with
 *       REQUEST_TIMED_OUT after a few attempts (the batcher's change is then retried);</li>
 *   <li>timers: ISR shrink checks, flushes.</li>
 * </ul>
 * Every callback checks the incarnation it was scheduled for: after a crash, old timers and answers do
 * nothing; a start builds a new replica and batcher, as a new process would.
 */
final class SimBroker {
    private static final long HEARTBEAT_INTERVAL_MS = 50;
    private static final long REGISTRATION_RETRY_MS = 60;
    private static final long FETCH_TIMEOUT_MS = 60;
    private static final long FETCH_BACKOFF_MS = 15;
    private static final long ALTER_PARTITION_TIMEOUT_MS = 80;
    /** Attempts of one AlterPartition request before the channel gives up (REQUEST_TIMED_OUT). */
    private static final int ALTER_PARTITION_ATTEMPTS = 3;
    private static final long ALTER_PARTITION_RETRY_MS = 30;

    /** A fetch answer: an error, a divergence, out of range (with the leader's log start and end), or batches and the HW. */
    private record FetchAnswer(Errors error, Optional<EpochEndOffset> diverging, List<SimLog.Rec> batches, long highWatermark,
                               long leaderLogStart, long leaderLogEnd) {
    }

    final int id;
    private final ReplicationSimulation sim;
    private final SimNetwork net;
    private final Random random;
    private final ReplicationSimulation.Options options;
    final SimLog log = new SimLog();

    boolean up = true;
    /** Bumped at every start and crash: timers and answers of an older incarnation are ignored. */
    long incarnation;
    private Uuid incarnationId;
    /** The registered broker epoch of this incarnation, -1 until the registration is answered. */
    long brokerEpoch = -1;
    /** The broker epoch of the last clean shutdown (sent with the next registration), or -1. */
    private long cleanShutdownEpoch = -1;
    boolean shuttingDown;
    /** A heartbeat was refused (STALE_BROKER_EPOCH): registering again, the old epoch still in use until answered. */
    private boolean reregistering;
    /** The broker lost unflushed data in a power failure and has not rejoined the ISR since. */
    boolean lostData;
    /** Crashed without a clean shutdown and not back in the ISR since (the controller sees an unclean restart). */
    boolean uncleanUnrecovered;
    private MetadataImage latestSeen;
    MetadataImage applied;

    /** The broker's replica of the partition (ClusterReplicaManager's Partition): new at every start. */
    PartitionReplica replica;
    /** The broker's ISR change batcher: new at every start. */
    private AlterPartitionBatcher isrChanges;
    private boolean fetcherStarted;
    private long fetchSeq;
    private long outstandingFetch = -1;
    private boolean fetchScheduled;
    /** Follower HW monotonicity: the last HW learned from the leader in {@link #hwEpoch}. */
    private long followerHw = -1;
    private int hwEpoch = -1;

    SimBroker(int id, ReplicationSimulation sim, SimNetwork net, Random random, ReplicationSimulation.Options options) {
        this.id = id;
        this.sim = sim;
        this.net = net;
        this.random = random;
        this.options = options;
        newProcess();
    }

    /** The state a broker process starts with: no role yet, nothing in flight. */
    private void newProcess() {
        replica = new PartitionReplica(id, log, options.replicaLagTimeMaxMs());
        long inc = incarnation;
        isrChanges = new AlterPartitionBatcher(id, () -> brokerEpoch, request -> sendAlterPartition(request, inc));
    }

    /** The leader state while this broker is up and leads, else null. */
    LeaderState leader() {
        return up ? replica.leader() : null;
    }

    /** The bootstrap: registered with {@code epoch} and running before the history starts. */
    void startRegistered(long epoch) {
        incarnation++;
        incarnationId = new Uuid(0, id + 1);
        brokerEpoch = epoch;
        newProcess();
        startTimers();
    }

    // ---------------------------------------------------------------- lifecycle

    void crash(boolean powerFailure) {
        up = false;
        incarnation++;
        dropRole();
        SimLog.Recovery r = log.recoverAfterCrash(powerFailure, random);
        boolean lost = r.logEndAfter() < r.logEndBefore();
        lostData |= lost;
        uncleanUnrecovered = true;
        sim.trace("b" + id + " " + (powerFailure ? "POWER FAILURE" : "killed") + ": " + r
                + (r.tornBatchCut() ? " (torn batch cut)" : "") + " -> " + log);
        if (r.tornBatchCut()) {
            sim.tornBatches++;
        }
        if (lost) {
            sim.unflushedLosses++;
        }
    }

    void restart() {
        up = true;
        incarnation++;
        incarnationId = new Uuid(random.nextLong(), random.nextLong());
        brokerEpoch = -1;
        newProcess();
        sim.trace("b" + id + " starts (" + log + ")");
        register(incarnation);
    }

    private void register(long inc) {
        if (!live(inc) || (brokerEpoch >= 0 && !reregistering)) {
            return;
        }
        ClusterControl.BrokerRegistrationRequest req = SimController.registration(id, incarnationId, cleanShutdownEpoch);
        net.send(id, SimNetwork.CONTROLLER, "registration", () -> sim.controller.onRegistration(req, this, inc));
        net.schedule(REGISTRATION_RETRY_MS, () -> register(inc));
    }

    void onRegistrationReply(ClusterControl.BrokerRegistrationReply reply, long inc) {
        if (!live(inc) || (brokerEpoch >= 0 && !reregistering) || reply.error() != Errors.NONE) {
            return;
        }
        boolean first = brokerEpoch < 0;
        brokerEpoch = reply.brokerEpoch();
        reregistering = false;
        cleanShutdownEpoch = -1;
        sim.trace("b" + id + " registered with epoch " + brokerEpoch);
        if (first) {
            startTimers();
        }
        if (latestSeen != null) {
            onMetadata(latestSeen);
        }
    }

    private void startTimers() {
        long inc = incarnation;
        net.schedule(random.nextInt((int) HEARTBEAT_INTERVAL_MS), () -> heartbeatLoop(inc));
        long shrinkInterval = Math.max(20, options.replicaLagTimeMaxMs() / 2);
        net.schedule(random.nextInt((int) shrinkInterval) + 1, () -> shrinkLoop(inc, shrinkInterval));
        net.schedule(1 + random.nextInt(options.flushIntervalMs()), () -> flushLoop(inc));
    }

    private void heartbeatLoop(long inc) {
        if (!live(inc)) {
            return;
        }
        if (reregistering) {
            net.schedule(HEARTBEAT_INTERVAL_MS, () -> heartbeatLoop(inc));
            return;
        }
        ClusterControl.BrokerHeartbeatRequest req = new ClusterControl.BrokerHeartbeatRequest(id, brokerEpoch,
                applied == null ? -1 : applied.offset(), false, shuttingDown);
        net.send(id, SimNetwork.CONTROLLER, "heartbeat", () -> sim.controller.onHeartbeat(req, this, inc));
        net.schedule(HEARTBEAT_INTERVAL_MS, () -> heartbeatLoop(inc));
    }

    void onHeartbeatReply(ClusterControl.BrokerHeartbeatReply reply, long inc) {
        if (!live(inc)) {
            return;
        }
        if ((reply.error() == Errors.STALE_BROKER_EPOCH || reply.error() == Errors.BROKER_ID_NOT_REGISTERED) && !reregistering) {
            // BrokerLifecycle: the registration was replaced (e.g. by a late request of a dead incarnation): register again
            sim.trace("b" + id + " heartbeat refused with " + reply.error() + ": registering again");
            reregistering = true;
            register(inc);
            return;
        }
        if (!shuttingDown || !reply.shouldShutDown()) {
            return;
        }
        log.flush();
        cleanShutdownEpoch = brokerEpoch;
        shuttingDown = false;
        up = false;
        incarnation++;
        dropRole();
        sim.trace("b" + id + " shut down cleanly (epoch " + cleanShutdownEpoch + ", " + log + ")");
        sim.scheduleRestart(this);
    }

    private void flushLoop(long inc) {
        if (!live(inc)) {
            return;
        }
        log.flush();
        net.schedule(1 + random.nextInt(options.flushIntervalMs()), () -> flushLoop(inc));
    }

    private boolean live(long inc) {
        return up && inc == incarnation;
    }

    private void dropRole() {
        newProcess();
        outstandingFetch = -1;
        applied = null;
        latestSeen = null;
        brokerEpoch = -1;
        reregistering = false;
        followerHw = -1;
        hwEpoch = -1;
        fetchScheduled = false;
    }

    // ---------------------------------------------------------------- metadata

    void onMetadata(MetadataImage image) {
        if (!up) {
            return;
        }
        if (latestSeen == null || image.offset() > latestSeen.offset()) {
            latestSeen = image;
        }
        if (brokerEpoch < 0) {
            return;
        }
        BrokerRegistration me = image.broker(id).orElse(null);
        if (me == null || me.brokerEpoch() != brokerEpoch || (applied != null && image.offset() <= applied.offset())) {
            return; // from before this incarnation's registration, or not newer
        }
        applied = image;
        if (uncleanUnrecovered && image.partition(sim.controller.topicId, 0).isr().contains(id)) {
            uncleanUnrecovered = false;
            lostData = false;
        }
        apply(image.partition(sim.controller.topicId, 0), image);
    }

    /** ClusterReplicaManager.apply for the one partition: the transition is the replica's; starting the fetcher is here. */
    private void apply(PartitionState state, MetadataImage image) {
        Set<Integer> ineligible = new HashSet<>();
        for (BrokerRegistration b : image.brokers().values()) {
            if (!b.isEligible()) {
                ineligible.add(b.id());
            }
        }
        boolean wasLeader = replica.isLeader();
        int epochBefore = replica.leaderEpoch();
        long hwBefore = log.highWatermark;
        PartitionReplica.Transition t = replica.apply(state, brokerEpoch, ineligible, options.minInsyncReplicas(), net.nowMs);
        if (t == PartitionReplica.Transition.BECAME_LEADER) {
            outstandingFetch = -1;
            sim.onBecomeLeader(this);
            sim.trace("b" + id + " becomes leader: " + replica.leader());
        } else if (t == PartitionReplica.Transition.BECAME_FOLLOWER) {
            if (wasLeader) {
                sim.trace("b" + id + " stops leading epoch " + epochBefore);
            }
            outstandingFetch = -1;
            fetcherStarted = false;
            if (options.policy() == ReplicationSimulation.TruncationPolicy.HIGH_WATERMARK) {
                // The mutant: pre-KIP-101, a new follower cuts its log at its high watermark.
                truncate(FollowerTruncation.withoutLocalEpochs(log.leo(), Math.min(log.highWatermark, log.leo())));
            }
            if (replica.leaderId() >= 0) {
                scheduleFetch(0);
            }
        }
        leaderHighWatermarkMaybeMoved(hwBefore);
    }

    // ---------------------------------------------------------------- produce (leader)

    /** An acks=all produce of one batch of {@code count} records (ClusterReplicaManager.appendAsLeader); false when refused. */
    boolean produce(int count) {
        if (!up || replica.checkAppend(true) != Errors.NONE) {
            return false;
        }
        int epoch = replica.leaderEpoch();
        long base = log.leo();
        List<SimLog.Rec> batch = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            batch.add(new SimLog.Rec(base + i, epoch, sim.nextValue(), base, base + count));
        }
        sim.checkLogMatching(this, batch);
        long hwBefore = log.highWatermark;
        log.appendBatch(batch);
        replica.onLeaderAppend(net.nowMs);
        sim.addPendingAck(this, epoch, batch);
        sim.trace("b" + id + " appends " + count + " at " + base + " epoch " + epoch + " (values "
                + batch.get(0).value() + ".." + batch.get(count - 1).value() + ")");
        leaderHighWatermarkMaybeMoved(hwBefore);
        return true;
    }

    /**
     * After an event that may move the leader's HW ({@code before} is the log's HW before it): the
     * replica copies it into the log, as the broker has it do after every such event; checks it never
     * goes back and extends the committed log. The mutant sets it to the log end, as if no follower had
     * to have the records. Nothing to do when this broker does not lead.
     */
    private void leaderHighWatermarkMaybeMoved(long before) {
        if (!replica.isLeader()) {
            return;
        }
        replica.updateHighWatermark();
        if (options.hwIgnoresIsr()) {
            log.highWatermark = Math.max(log.highWatermark, log.leo());
        } else if (replica.leader().highWatermark() < log.highWatermark) {
            throw sim.violation("HW of leader b" + id + " (epoch " + replica.leaderEpoch() + ") is " + replica.leader().highWatermark()
                    + ", below its log's " + log.highWatermark);
        }
        if (log.highWatermark < before) {
            throw sim.violation("HW of leader b" + id + " (epoch " + replica.leaderEpoch() + ") went back from " + before
                    + " to " + log.highWatermark);
        }
        if (log.highWatermark > before) {
            sim.onLeaderHighWatermark(this);
        }
    }

    // ---------------------------------------------------------------- fetch (follower side)

    private void scheduleFetch(long delayMs) {
        if (fetchScheduled) {
            return;
        }
        fetchScheduled = true;
        long inc = incarnation;
        net.schedule(delayMs, () -> {
            if (inc == incarnation) {
                fetchScheduled = false;
                sendFetch();
            }
        });
    }

    private boolean following() {
        return replica.role() == PartitionReplica.Role.FOLLOWER;
    }

    private void sendFetch() {
        if (!up || !following() || replica.leaderId() < 0 || outstandingFetch >= 0) {
            return;
        }
        if (!fetcherStarted) {
            fetcherStarted = true;
            long before = log.leo();
            FollowerReplica.start(log).ifPresent(step -> sim.trace("b" + id + " has no epochs: truncates " + before + " -> "
                    + log.leo() + " (" + step + ")"));
        }
        long fetchId = ++fetchSeq;
        outstandingFetch = fetchId;
        long fetchOffset = log.leo();
        int lastFetchedEpoch = options.policy() == ReplicationSimulation.TruncationPolicy.HIGH_WATERMARK
                ? EpochEndOffsets.UNDEFINED_EPOCH : log.latestEpochOrUndefined();
        int epoch = replica.leaderEpoch();
        long myEpoch = brokerEpoch;
        long inc = incarnation;
        SimBroker target = sim.brokers.get(replica.leaderId());
        net.send(id, target.id, "fetch@" + fetchOffset + " e" + epoch,
                () -> target.onFetchRequest(this, inc, fetchId, epoch, fetchOffset, lastFetchedEpoch, myEpoch));
        net.schedule(FETCH_TIMEOUT_MS, () -> {
            if (inc == incarnation && outstandingFetch == fetchId) {
                outstandingFetch = -1;
                scheduleFetch(0);
            }
        });
    }

    /** ReplicaFetcherThread.handlePartition: what the answer means is {@link FollowerReplica}'s. */
    private void onFetchAnswer(FetchAnswer a, long inc, long fetchId, int epoch, long fetchOffset) {
        if (!live(inc) || outstandingFetch != fetchId) {
            return;
        }
        outstandingFetch = -1;
        if (!following() || replica.leaderEpoch() != epoch || log.leo() != fetchOffset) {
            scheduleFetch(0); // stale: the partition moved on while the fetch was in flight
            return;
        }
        switch (FollowerReplica.classify(a.error(), a.diverging().isPresent())) {
            case OUT_OF_RANGE -> {
                long before = log.leo();
                FollowerReplica.OutOfRange r = FollowerReplica.resolveOutOfRange(log, a.leaderLogStart(), a.leaderLogEnd());
                sim.trace("b" + id + " out of range at " + fetchOffset + " (leader [" + a.leaderLogStart() + ", " + a.leaderLogEnd()
                        + "]): " + r + " " + before + " -> " + log.leo());
                scheduleFetch(r == FollowerReplica.OutOfRange.RETRY ? FETCH_BACKOFF_MS : 0);
            }
            case NOT_SERVED_YET, OTHER_ERROR -> scheduleFetch(FETCH_BACKOFF_MS);
            case DIVERGING -> {
                FollowerReplica.Divergence d = FollowerReplica.truncateOnDivergence(log, a.diverging().get());
                if (d.step().belowHighWatermark()) {
                    sim.truncationsBelowHighWatermark++;
                }
                sim.trace("b" + id + " truncates " + d.logEndBefore() + " -> " + log.leo() + " (" + d.step() + ")");
                scheduleFetch(d.changed() ? 0 : FETCH_BACKOFF_MS);
            }
            case RECORDS -> {
                if (!a.batches().isEmpty()) {
                    sim.checkLogMatching(this, a.batches());
                    log.appendBatch(a.batches());
                }
                FollowerReplica.afterRecords(log, a.highWatermark(), a.leaderLogStart());
                long hw = log.highWatermark;
                if (hwEpoch == epoch && hw < followerHw) {
                    throw sim.violation("follower b" + id + " HW went back from " + followerHw + " to " + hw + " in leader epoch " + epoch);
                }
                hwEpoch = epoch;
                followerHw = hw;
                scheduleFetch(a.batches().isEmpty() ? 5 + random.nextInt(10) : random.nextInt(2));
            }
        }
    }

    /** The HIGH_WATERMARK mutant's truncation (the real follower never truncates blindly). */
    private void truncate(FollowerTruncation.Step step) {
        if (step.belowHighWatermark()) {
            sim.truncationsBelowHighWatermark++;
        }
        long before = log.leo();
        log.truncateTo(step.truncationOffset());
        sim.trace("b" + id + " truncates " + before + " -> " + log.leo() + " (" + step + ")");
    }

    // ---------------------------------------------------------------- fetch (leader side)

    private void onFetchRequest(SimBroker follower, long followerInc, long fetchId, int currentLeaderEpoch, long fetchOffset,
                                int lastFetchedEpoch, long followerBrokerEpoch) {
        if (!up || brokerEpoch < 0) {
            return; // connection refused: the follower times out
        }
        FetchAnswer answer = answerFetch(follower.id, currentLeaderEpoch, fetchOffset, lastFetchedEpoch, followerBrokerEpoch);
        net.send(id, follower.id, "fetch answer " + (answer.error() != Errors.NONE ? answer.error()
                        : answer.diverging().map(d -> "diverging " + d).orElse(answer.batches().size() + " records hw " + answer.highWatermark())),
                () -> follower.onFetchAnswer(answer, followerInc, fetchId, currentLeaderEpoch, fetchOffset));
    }

    /** ClusterReplicaManager.followerFetch, then the read (whole batches, as many as the seed allows). */
    private FetchAnswer answerFetch(int replicaId, int currentLeaderEpoch, long fetchOffset, int lastFetchedEpoch,
                                    long replicaBrokerEpoch) {
        long hwBefore = log.highWatermark;
        PartitionReplica.FollowerFetch f = replica.followerFetch(replicaId, replicaBrokerEpoch, currentLeaderEpoch, fetchOffset,
                lastFetchedEpoch, net.nowMs);
        if (f.error() != Errors.NONE) {
            // with OFFSET_OUT_OF_RANGE the follower's ListOffsets would get this leader's start and end
            boolean leads = replica.isLeader();
            return new FetchAnswer(f.error(), Optional.empty(), List.of(), -1, leads ? log.logStartOffset() : -1,
                    leads ? log.leo() : -1);
        }
        if (f.diverging().isPresent()) {
            return new FetchAnswer(Errors.NONE, f.diverging(), List.of(), f.highWatermark(), log.logStartOffset(), log.leo());
        }
        leaderHighWatermarkMaybeMoved(hwBefore);
        f.expand().ifPresent(this::sendIsrChange);
        List<SimLog.Rec> batches = log.batchesFrom(fetchOffset, 1 + random.nextInt(options.maxFetchBatches()));
        return new FetchAnswer(Errors.NONE, Optional.empty(), batches, log.highWatermark, log.logStartOffset(), log.leo());
    }

    // ---------------------------------------------------------------- ISR changes (leader side)

    private void shrinkLoop(long inc, long intervalMs) {
        if (!live(inc)) {
            return;
        }
        replica.isrShrinkProposal(net.nowMs).ifPresent(this::sendIsrChange);
        net.schedule(intervalMs, () -> shrinkLoop(inc, intervalMs));
    }

    /** ClusterReplicaManager.sendIsrChange: into the batcher, answered to {@link #onIsrAnswer}. */
    private void sendIsrChange(IsrChangeProposal p) {
        sim.trace("b" + id + " proposes " + p.kind() + " " + p.newIsrIds() + " (epochs " + p.leaderEpoch() + "/" + p.partitionEpoch() + ")");
        long inc = incarnation;
        isrChanges.submit(sim.controller.topicId, PartitionReplica.alterPartitionData(0, p),
                (err, answer) -> onIsrAnswer(inc, p, err, answer));
    }

    /** The controller channel under the batcher: resent until answered, REQUEST_TIMED_OUT after a few attempts. */
    private CompletableFuture<ControllerChannel.Reply> sendAlterPartition(AlterPartitionRequestData request, long inc) {
        CompletableFuture<ControllerChannel.Reply> reply = new CompletableFuture<>();
        attemptAlterPartition(request, reply, inc, 1);
        return reply;
    }

    private void attemptAlterPartition(AlterPartitionRequestData request, CompletableFuture<ControllerChannel.Reply> reply, long inc,
                                       int attempt) {
        if (!live(inc) || reply.isDone()) {
            return;
        }
        net.send(id, SimNetwork.CONTROLLER, "AlterPartition", () -> sim.controller.onAlterPartition(request, this, answer -> {
            if (live(inc)) {
                reply.complete(new ControllerChannel.Reply(answer, -1));
            }
        }));
        net.schedule(ALTER_PARTITION_TIMEOUT_MS, () -> {
            if (!live(inc) || reply.isDone()) {
                return;
            }
            if (attempt >= ALTER_PARTITION_ATTEMPTS) {
                reply.completeExceptionally(new TimeoutException("no active controller answered"));
            } else {
                attemptAlterPartition(request, reply, inc, attempt + 1);
            }
        });
    }

    /** ClusterReplicaManager.onIsrAnswer. */
    private void onIsrAnswer(long inc, IsrChangeProposal proposal, Errors err, AlterPartitionResponseData.PartitionData answer) {
        if (!live(inc)) {
            return;
        }
        long hwBefore = log.highWatermark;
        PartitionReplica.IsrAnswer outcome = replica.onIsrAnswer(proposal, err, answer, net.nowMs);
        sim.trace("b" + id + " AlterPartition " + proposal.newIsrIds() + " answered " + err + ": " + outcome);
        leaderHighWatermarkMaybeMoved(hwBefore);
        if (outcome == PartitionReplica.IsrAnswer.RETRY) {
            net.schedule(ALTER_PARTITION_RETRY_MS, () -> {
                if (live(inc) && replica.shouldResend(proposal)) {
                    sendIsrChange(proposal);
                }
            });
        }
    }

    @Override
    public String toString() {
        return "b" + id + (up ? "" : "(down)") + " epoch=" + brokerEpoch + " " + log + " knows=" + replica.leaderId() + "@"
                + replica.leaderEpoch() + "/" + replica.partitionEpoch() + (replica.isLeader() ? " LEADER " + replica.leader() : "")
                + (lostData ? " lostData" : "") + (uncleanUnrecovered ? " unclean" : "") + (shuttingDown ? " shuttingDown" : "");
    }
}
