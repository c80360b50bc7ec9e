package dev.varve.broker.replication;

import dev.varve.metadata.BrokerRegistration;
import dev.varve.metadata.ClusterControl;
import dev.varve.metadata.MetadataImage;
import dev.varve.metadata.PartitionState;
import dev.varve.storage.LeaderEpochCache.EpochEndOffset;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.message.AlterPartitionRequestData;
import org.apache.kafka.common.message.AlterPartitionResponseData;
import org.apache.kafka.common.protocol.Errors;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.Set;

/**
 * One broker as a simulation node, for the simulation's single partition. It does what
 * {@code ClusterReplicaManager} and {@code ReplicaFetcherThread} do, with the real pure core
 * ({@link LeaderState}, {@link EpochEndOffsets}, {@link FollowerTruncation}, {@link EpochFencing}) and a
 * {@link SimLog}:
 * <ul>
 *   <li>lifecycle: registration (retried; with the broker epoch of its last clean shutdown, if any),
 *       heartbeats (refused with STALE_BROKER_EPOCH: register again), controlled shutdown;</li>
 *   <li>metadata: applies images that include its own registration, newer than the last applied
 *       (becoming leader: epoch assigned at the log end, then {@link LeaderState#becomeLeader});</li>
 *   <li>as follower: one fetch in flight, with {@code CurrentLeaderEpoch} and {@code LastFetchedEpoch};
 *       diverging epoch → {@link FollowerTruncation#onLeaderAnswer}; OFFSET_OUT_OF_RANGE → truncate to the
 *       leader's log end if below ours (the ListOffsets round trip is folded into the answer); a stale
 *       answer (another fetch, another leader epoch, the log moved) is ignored; a lost one times out;</li>
 *   <li>as leader: produce ({@code acks=all}), follower fetches, ISR shrink checks, AlterPartition with
 *       retries until answered.</li>
 * </ul>
 * Every callback checks the incarnation it was scheduled for: after a crash, old timers and answers do
 * nothing.
 */
final class SimBroker {
    private static final long HEARTBEAT_INTERVAL_MS = 50;
    private static final long REGISTRATION_RETRY_MS = 60;
    private static final long FETCH_TIMEOUT_MS = 60;
    private static final long FETCH_BACKOFF_MS = 15;
    private static final long ALTER_PARTITION_TIMEOUT_MS = 80;
    private static final long ALTER_PARTITION_RETRY_MS = 30;

    /** A fetch answer: an error, a divergence, out of range (with the leader's log end), or batches and the HW. */
    private record FetchAnswer(Errors error, Optional<EpochEndOffset> diverging, List<SimLog.Rec> batches, long highWatermark,
                               long leaderLogEnd) {
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

    LeaderState leader;
    int leaderId = -1;
    int leaderEpoch = -1;
    int partitionEpoch = -1;
    private boolean following;
    private boolean fetcherStarted;
    private long fetchSeq;
    private long outstandingFetch = -1;
    private boolean fetchScheduled;
    /** The AlterPartition sent and not answered yet (resent on timeout). */
    private IsrChangeProposal awaitingAnswer;
    /** Follower HW monotonicity: the last HW learned from the leader in {@link #hwEpoch}. */
    private long followerHw = -1;
    private int hwEpoch = -1;

    SimBroker(int id, ReplicationSimulation sim, SimNetwork net, Random random, ReplicationSimulation.Options options) {
        this.id = id;
        this.sim = sim;
        this.net = net;
        this.random = random;
        this.options = options;
    }

    /** The bootstrap: registered with {@code epoch} and running before the history starts. */
    void startRegistered(long epoch) {
        incarnation++;
        incarnationId = new Uuid(0, id + 1);
        brokerEpoch = epoch;
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
        leader = null;
        following = false;
        leaderId = -1;
        leaderEpoch = -1;
        partitionEpoch = -1;
        outstandingFetch = -1;
        awaitingAnswer = null;
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

    /** ClusterReplicaManager.apply for the one partition. */
    private void apply(PartitionState state, MetadataImage image) {
        Set<Integer> ineligible = new HashSet<>();
        for (BrokerRegistration b : image.brokers().values()) {
            if (!b.isEligible()) {
                ineligible.add(b.id());
            }
        }
        if (state.leader() == id) {
            LeaderAndIsr lai = new LeaderAndIsr(state.leader(), state.leaderEpoch(), state.partitionEpoch(), state.replicas(),
                    new HashSet<>(state.isr()));
            boolean becoming = leader == null || leaderEpoch != state.leaderEpoch();
            if (becoming) {
                following = false;
                outstandingFetch = -1;
                awaitingAnswer = null;
                log.assignEpoch(state.leaderEpoch(), log.leo());
                leader = LeaderState.becomeLeader(id, brokerEpoch, lai, log.leo(), Math.min(log.highWatermark, log.leo()),
                        options.minInsyncReplicas(), options.replicaLagTimeMaxMs(), net.nowMs);
                sim.onBecomeLeader(this);
                sim.trace("b" + id + " becomes leader: " + leader);
            } else if (state.partitionEpoch() > partitionEpoch) {
                leader.onPartitionStateChange(lai, net.nowMs);
            }
            leader.setIneligibleReplicas(ineligible);
            leader.setMinInsyncReplicas(options.minInsyncReplicas(), net.nowMs);
            leaderId = id;
            leaderEpoch = state.leaderEpoch();
            partitionEpoch = state.partitionEpoch();
            leaderHighWatermarkMaybeMoved();
        } else {
            boolean changed = !following || leaderEpoch != state.leaderEpoch() || leaderId != state.leader();
            if (changed) {
                if (leader != null) {
                    sim.trace("b" + id + " stops leading epoch " + leaderEpoch);
                }
                leader = null;
                following = true;
                leaderId = state.leader();
                leaderEpoch = state.leaderEpoch();
                outstandingFetch = -1;
                fetcherStarted = false;
                awaitingAnswer = null;
                if (options.policy() == ReplicationSimulation.TruncationPolicy.HIGH_WATERMARK) {
                    // The mutant: pre-KIP-101, a new follower cuts its log at its high watermark.
                    truncate(FollowerTruncation.withoutLocalEpochs(log.leo(), Math.min(log.highWatermark, log.leo())));
                }
                if (leaderId >= 0) {
                    scheduleFetch(0);
                }
            }
            partitionEpoch = state.partitionEpoch();
        }
    }

    // ---------------------------------------------------------------- produce (leader)

    /** An acks=all produce of one batch of {@code count} records; false when refused. */
    boolean produce(int count) {
        if (!up || leader == null) {
            return false;
        }
        Errors enough = leader.checkEnoughReplicas();
        if (enough != Errors.NONE) {
            return false;
        }
        long base = log.leo();
        List<SimLog.Rec> batch = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            batch.add(new SimLog.Rec(base + i, leader.leaderEpoch(), sim.nextValue(), base, base + count));
        }
        sim.checkLogMatching(this, batch);
        log.appendBatch(batch);
        leader.onLeaderAppend(log.leo(), net.nowMs);
        sim.addPendingAck(this, leader, batch);
        sim.trace("b" + id + " appends " + count + " at " + base + " epoch " + leader.leaderEpoch() + " (values "
                + batch.get(0).value() + ".." + batch.get(count - 1).value() + ")");
        leaderHighWatermarkMaybeMoved();
        return true;
    }

    /**
     * ClusterReplicaManager.updateHighWatermark: copies the leader state's HW into the log (the mutant:
     * the log end, as if no follower had to have the records) and extends the committed log. The HW of
     * a leader never moves back: a new leader starts from the HW its log has.
     */
    void leaderHighWatermarkMaybeMoved() {
        long hw = options.hwIgnoresIsr() ? log.leo() : leader.highWatermark();
        if (hw < log.highWatermark) {
            throw sim.violation("HW of leader b" + id + " (epoch " + leader.leaderEpoch() + ") went back from " + log.highWatermark
                    + " to " + hw);
        }
        if (hw > log.highWatermark) {
            log.highWatermark = hw;
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

    private void sendFetch() {
        if (!up || !following || leaderId < 0 || outstandingFetch >= 0) {
            return;
        }
        if (!fetcherStarted) {
            fetcherStarted = true;
            if (log.epochs.isEmpty() && log.leo() > log.highWatermark) {
                truncate(FollowerTruncation.withoutLocalEpochs(log.leo(), log.highWatermark));
            }
        }
        long fetchId = ++fetchSeq;
        outstandingFetch = fetchId;
        long fetchOffset = log.leo();
        int lastFetchedEpoch = options.policy() == ReplicationSimulation.TruncationPolicy.HIGH_WATERMARK
                ? EpochEndOffsets.UNDEFINED_EPOCH : log.latestEpochOrUndefined();
        int epoch = leaderEpoch;
        long myEpoch = brokerEpoch;
        long inc = incarnation;
        SimBroker target = sim.brokers.get(leaderId);
        net.send(id, target.id, "fetch@" + fetchOffset + " e" + epoch,
                () -> target.onFetchRequest(this, inc, fetchId, epoch, fetchOffset, lastFetchedEpoch, myEpoch));
        net.schedule(FETCH_TIMEOUT_MS, () -> {
            if (inc == incarnation && outstandingFetch == fetchId) {
                outstandingFetch = -1;
                scheduleFetch(0);
            }
        });
    }

    private void onFetchAnswer(FetchAnswer a, long inc, long fetchId, int epoch, long fetchOffset) {
        if (!live(inc) || outstandingFetch != fetchId) {
            return;
        }
        outstandingFetch = -1;
        if (!following || leaderEpoch != epoch || log.leo() != fetchOffset) {
            scheduleFetch(0); // stale: the partition moved on while the fetch was in flight
            return;
        }
        if (a.error() == Errors.OFFSET_OUT_OF_RANGE) {
            if (a.leaderLogEnd() < log.leo()) {
                sim.trace("b" + id + " out of range at " + fetchOffset + ": truncating to the leader's end " + a.leaderLogEnd());
                log.truncateTo(a.leaderLogEnd());
            }
            scheduleFetch(FETCH_BACKOFF_MS);
        } else if (a.error() != Errors.NONE) {
            scheduleFetch(FETCH_BACKOFF_MS);
        } else if (a.diverging().isPresent()) {
            FollowerTruncation.Step step = FollowerTruncation.onLeaderAnswer(log.epochSnapshot(), log.leo(), log.highWatermark,
                    a.diverging().get());
            truncate(step);
            scheduleFetch(0);
        } else {
            if (!a.batches().isEmpty()) {
                sim.checkLogMatching(this, a.batches());
                log.appendBatch(a.batches());
            }
            long hw = Math.min(a.highWatermark(), log.leo());
            if (hwEpoch == epoch && hw < followerHw) {
                throw sim.violation("follower b" + id + " HW went back from " + followerHw + " to " + hw + " in leader epoch " + epoch);
            }
            hwEpoch = epoch;
            followerHw = hw;
            log.highWatermark = hw;
            scheduleFetch(a.batches().isEmpty() ? 5 + random.nextInt(10) : random.nextInt(2));
        }
    }

    private void truncate(FollowerTruncation.Step step) {
        if (step.truncationOffset() < 0 || step.truncationOffset() > log.leo()) {
            throw sim.violation("truncation " + step + " outside [0, " + log.leo() + "] on b" + id);
        }
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

    /** ClusterReplicaManager.followerFetch. */
    private FetchAnswer answerFetch(int replicaId, int currentLeaderEpoch, long fetchOffset, int lastFetchedEpoch,
                                    long replicaBrokerEpoch) {
        if (leader == null) {
            return error(Errors.NOT_LEADER_OR_FOLLOWER);
        }
        Errors fenced = EpochFencing.validate(currentLeaderEpoch, leader.leaderEpoch());
        if (fenced != Errors.NONE) {
            return error(fenced);
        }
        try {
            Optional<EpochEndOffset> diverging = EpochEndOffsets.divergingEpoch(log.epochSnapshot(), log.leo(), lastFetchedEpoch,
                    fetchOffset);
            if (diverging.isPresent()) {
                return new FetchAnswer(Errors.NONE, diverging, List.of(), leader.highWatermark(), log.leo());
            }
            leader.onFollowerFetch(replicaId, fetchOffset, replicaBrokerEpoch, net.nowMs);
        } catch (ApiException e) {
            return new FetchAnswer(Errors.forException(e), Optional.empty(), List.of(), -1, log.leo());
        }
        leaderHighWatermarkMaybeMoved();
        leader.isrExpandProposal(replicaId).ifPresent(this::sendAlterPartition);
        List<SimLog.Rec> batches = log.batchesFrom(fetchOffset, 1 + random.nextInt(options.maxFetchBatches()));
        return new FetchAnswer(Errors.NONE, Optional.empty(), batches, log.highWatermark, log.leo());
    }

    private FetchAnswer error(Errors e) {
        return new FetchAnswer(e, Optional.empty(), List.of(), -1, -1);
    }

    // ---------------------------------------------------------------- ISR changes (leader side)

    private void shrinkLoop(long inc, long intervalMs) {
        if (!live(inc)) {
            return;
        }
        if (leader != null) {
            leader.isrShrinkProposal(net.nowMs).ifPresent(this::sendAlterPartition);
        }
        net.schedule(intervalMs, () -> shrinkLoop(inc, intervalMs));
    }

    private void sendAlterPartition(IsrChangeProposal p) {
        LeaderState sender = leader;
        awaitingAnswer = p;
        sim.trace("b" + id + " proposes " + p.kind() + " " + p.newIsrIds() + " (epochs " + p.leaderEpoch() + "/" + p.partitionEpoch() + ")");
        // ClusterReplicaManager.sendIsrChange
        AlterPartitionRequestData.PartitionData pd = new AlterPartitionRequestData.PartitionData()
                .setPartitionIndex(0)
                .setLeaderEpoch(p.leaderEpoch())
                .setPartitionEpoch(p.partitionEpoch());
        for (IsrChangeProposal.IsrMember m : p.newIsr()) {
            pd.newIsrWithEpochs().add(new AlterPartitionRequestData.BrokerState().setBrokerId(m.brokerId()).setBrokerEpoch(m.brokerEpoch()));
        }
        AlterPartitionRequestData req = new AlterPartitionRequestData().setBrokerId(id).setBrokerEpoch(brokerEpoch);
        req.topics().add(new AlterPartitionRequestData.TopicData().setTopicId(sim.controller.topicId)
                .setPartitions(new ArrayList<>(List.of(pd))));
        net.send(id, SimNetwork.CONTROLLER, "AlterPartition", () -> sim.controller.onAlterPartition(req, p, this, sender));
        long inc = incarnation;
        net.schedule(ALTER_PARTITION_TIMEOUT_MS, () -> {
            if (live(inc) && leader == sender && awaitingAnswer == p) {
                sendAlterPartition(p); // ControllerChannel retries until it gets an answer
            }
        });
    }

    /** ClusterReplicaManager.onIsrAnswer. */
    void onAlterPartitionReply(IsrChangeProposal proposal, LeaderState sender, AlterPartitionResponseData reply) {
        if (!up || leader != sender) {
            return; // the leader is gone or was replaced: nobody waits for this answer
        }
        if (awaitingAnswer == proposal) {
            awaitingAnswer = null;
        }
        Errors err = Errors.forCode(reply.errorCode());
        AlterPartitionResponseData.PartitionData answer = null;
        if (err == Errors.NONE) {
            answer = reply.topics().isEmpty() || reply.topics().get(0).partitions().isEmpty() ? null
                    : reply.topics().get(0).partitions().get(0);
            err = answer == null ? Errors.UNKNOWN_SERVER_ERROR : Errors.forCode(answer.errorCode());
        }
        if (err == Errors.NONE) {
            try {
                LeaderAndIsr committed = new LeaderAndIsr(answer.leaderId(), answer.leaderEpoch(), answer.partitionEpoch(),
                        leader.replicas(), new HashSet<>(answer.isr()));
                leader.onIsrCommitted(proposal, committed, net.nowMs);
                partitionEpoch = Math.max(partitionEpoch, leader.partitionEpoch());
                leaderHighWatermarkMaybeMoved();
            } catch (IllegalArgumentException e) {
                sim.trace("b" + id + " ignores the AlterPartition answer: " + e.getMessage());
            }
        } else {
            LeaderState.RejectionOutcome outcome = leader.onIsrRejected(proposal, err);
            if (outcome == LeaderState.RejectionOutcome.RETRY) {
                long inc = incarnation;
                net.schedule(ALTER_PARTITION_RETRY_MS, () -> {
                    if (live(inc) && leader == sender && sender.inFlightIsrChange().orElse(null) == proposal) {
                        sendAlterPartition(proposal);
                    }
                });
            }
        }
    }

    @Override
    public String toString() {
        return "b" + id + (up ? "" : "(down)") + " epoch=" + brokerEpoch + " " + log + " knows=" + leaderId + "@" + leaderEpoch
                + "/" + partitionEpoch + (leader != null ? " LEADER " + leader : "") + (lostData ? " lostData" : "")
                + (uncleanUnrecovered ? " unclean" : "") + (shuttingDown ? " shuttingDown" : "");
    }
}
