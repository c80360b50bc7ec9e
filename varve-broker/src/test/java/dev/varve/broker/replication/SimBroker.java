package dev.varve.broker.replication;

import dev.varve.broker.FetchSessions;
import dev.varve.broker.cluster.AlterPartitionBatcher;
import dev.varve.broker.cluster.ControllerChannel;
import dev.varve.metadata.BrokerRegistration;
import dev.varve.metadata.ClusterControl;
import dev.varve.metadata.MetadataImage;
import dev.varve.metadata.PartitionState;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.message.AlterPartitionRequestData;
import org.apache.kafka.common.message.AlterPartitionResponseData;
import org.apache.kafka.common.message.FetchRequestData;
import org.apache.kafka.common.message.FetchResponseData;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.requests.FetchResponse;

import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;

/**
 * One broker as a simulation node, holding a replica of every partition of the simulation's topic: the
 * process around the broker's own replica code. Every replica decision is the production code's — the
 * {@link ReplicaDelta} walk {@code ClusterReplicaManager.onImage} makes over each metadata delta, the
 * {@link PartitionReplica} state machine it runs per partition (metadata transitions, appends, follower
 * fetches, acks tied to the leader epoch of their append, ISR shrink checks, AlterPartition answers), the
 * {@link FollowerReplica} answer handling {@code ReplicaFetcherThread} runs (records, divergence, out of
 * range, errors), the broker's {@link AlterPartitionBatcher} (one request in flight, changes of many
 * partitions coalesced), Kafka's {@code FetchSessionHandler} on the follower side ({@link SimFetcher})
 * and the broker's {@link FetchSessions} cache on the leader side — over one {@link SimLog} per
 * partition. What is here is what the real broker's threads and sockets do around them:
 * <ul>
 *   <li>lifecycle (BrokerLifecycle): registration (retried; with the broker epoch of its last clean
 *       shutdown, if any), heartbeats (refused with STALE_BROKER_EPOCH: register again), controlled
 *       shutdown;</li>
 *   <li>metadata: applies images that include its own registration, newer than the last applied, as
 *       {@code onImage} does: the delta walk, fetchers of partitions that change role, leader or epoch
 *       stopped first, then every transition, then fetchers started once per leader; leaders whose state
 *       did not change follow broker eligibility;</li>
 *   <li>fetchers ({@link SimFetcher}, the ReplicaFetcherManager's threads): one per leader broker,
 *       stopped when it loses its last partition;</li>
 *   <li>serving followers' fetches (FetchHandler): the session context from {@link FetchSessions}, each
 *       of its partitions through {@link PartitionReplica#followerFetch} and a read of whole batches, the
 *       full answer turned into the one to send by the session;</li>
 *   <li>the controller channel: an AlterPartition request is resent until answered, and fails with
 *       REQUEST_TIMED_OUT after a few attempts (the batcher's changes are then retried);</li>
 *   <li>timers: ISR shrink checks, flushes.</li>
 * </ul>
 * Every callback checks the incarnation it was scheduled for: after a crash, old timers and answers do
 * nothing; a start builds new replicas, fetchers, session cache and batcher, as a new process would.
 * The logs are the disk: they survive.
 */
final class SimBroker {
    private static final long HEARTBEAT_INTERVAL_MS = 50;
    private static final long REGISTRATION_RETRY_MS = 60;
    private static final long ALTER_PARTITION_TIMEOUT_MS = 80;
    /** Attempts of one AlterPartition request before the channel gives up (REQUEST_TIMED_OUT). */
    private static final int ALTER_PARTITION_ATTEMPTS = 3;
    private static final long ALTER_PARTITION_RETRY_MS = 30;
    /** The listener followers reach leaders on (the registration's only endpoint). */
    private static final String LISTENER = "REPLICATION";

    /**
     * One partition's replica in this process (ClusterReplicaManager's Partition): the log (the disk,
     * which outlives the process) and the replica state, new at every start; and, for the simulation's
     * check, the follower's HW per leader epoch.
     */
    final class Replica {
        final TopicPartition tp;
        final Uuid topicId;
        final SimLog log;
        final PartitionReplica state;
        /** Follower HW monotonicity: the last HW learned from the leader in {@link #hwEpoch}. */
        private long followerHw = -1;
        private int hwEpoch = -1;

        Replica(TopicPartition tp, Uuid topicId, SimLog log) {
            this.tp = tp;
            this.topicId = topicId;
            this.log = log;
            this.state = new PartitionReplica(id, log, options.replicaLagTimeMaxMs());
        }

        int index() {
            return tp.partition();
        }

        /** After a fetch answer set the HW: within one leader epoch it never goes back. */
        void followerHighWatermark(int leaderEpoch) {
            long hw = log.highWatermark;
            if (hwEpoch == leaderEpoch && hw < followerHw) {
                throw sim.violation("follower b" + id + " " + tp + " HW went back from " + followerHw + " to " + hw
                        + " in leader epoch " + leaderEpoch);
            }
            hwEpoch = leaderEpoch;
            followerHw = hw;
        }
    }

    final int id;
    final ReplicationSimulation sim;
    final SimNetwork net;
    final Random random;
    final ReplicationSimulation.Options options;
    /** The disk: one log per partition, by partition index. */
    private final List<SimLog> logs = new ArrayList<>();

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
    /** The broker lost unflushed data in a power failure and has not rejoined the ISR of every partition since. */
    boolean lostData;
    /** Crashed without a clean shutdown and not back in the ISR of every partition since (the controller sees an unclean restart). */
    boolean uncleanUnrecovered;
    private MetadataImage latestSeen;
    MetadataImage applied;

    // ---------------------------------------------------------------- the process (new at every start)

    /** The replicas this process holds, by partition (ClusterReplicaManager's partitions), and by index. */
    private final Map<TopicPartition, Replica> replicas = new LinkedHashMap<>();
    private final Replica[] byIndex;
    private final ReplicaDelta.Held held = new ReplicaDelta.Held() {
        @Override
        public Uuid topicId(TopicPartition tp) {
            Replica r = replicas.get(tp);
            return r == null ? null : r.topicId;
        }

        @Override
        public Collection<TopicPartition> partitions() {
            return List.copyOf(replicas.keySet());
        }
    };
    /** The brokers that were not eligible in the last image applied. */
    private Set<Integer> lastIneligible = Set.of();
    /** The fetchers, by leader broker (ReplicaFetcherManager's threads), and which one has each partition. */
    private final Map<Integer, SimFetcher> fetchers = new LinkedHashMap<>();
    private final Map<TopicPartition, Integer> fetcherOf = new LinkedHashMap<>();
    /** The broker's fetch session cache (leader side). */
    private FetchSessions fetchSessions;
    /** The broker's ISR change batcher. */
    private AlterPartitionBatcher isrChanges;
    /** Session counters of the caches of earlier processes (for the statistics). */
    private long retiredIncrementalFetches;
    private long retiredOmittedPartitions;
    private long retiredEvictions;

    SimBroker(int id, ReplicationSimulation sim, SimNetwork net, Random random, ReplicationSimulation.Options options) {
        this.id = id;
        this.sim = sim;
        this.net = net;
        this.random = random;
        this.options = options;
        for (int p = 0; p < options.partitions(); p++) {
            logs.add(new SimLog());
        }
        this.byIndex = new Replica[options.partitions()];
        newProcess();
    }

    /** The state a broker process starts with: no replicas or role yet, nothing in flight, empty caches. */
    private void newProcess() {
        replicas.clear();
        java.util.Arrays.fill(byIndex, null);
        lastIneligible = Set.of();
        fetchers.values().forEach(SimFetcher::stop);
        fetchers.clear();
        fetcherOf.clear();
        if (fetchSessions != null) {
            retiredIncrementalFetches += fetchSessions.incrementalFetches();
            retiredOmittedPartitions += fetchSessions.omittedPartitions();
            retiredEvictions += fetchSessions.evicted();
        }
        Random ids = new Random(random.nextLong());
        fetchSessions = new FetchSessions(sim.sessionSlots, net.time(), sim.sessionEvictionMs,
                () -> 1 + ids.nextInt(Integer.MAX_VALUE - 1));
        long inc = incarnation;
        isrChanges = new AlterPartitionBatcher(id, () -> brokerEpoch, request -> sendAlterPartition(request, inc));
    }

    /** Partition {@code p}'s log (the disk: there whether or not the broker is up). */
    SimLog log(int p) {
        return logs.get(p);
    }

    /** This process's replica of partition {@code p}, or null before its first image assigned it. */
    Replica replica(int p) {
        return byIndex[p];
    }

    /** The leader state of partition {@code p} while this broker is up and leads it, else null. */
    LeaderState leader(int p) {
        Replica r = up ? replica(p) : null;
        return r == null ? null : r.state.leader();
    }

    long incrementalFetches() {
        return retiredIncrementalFetches + fetchSessions.incrementalFetches();
    }

    long omittedPartitions() {
        return retiredOmittedPartitions + fetchSessions.omittedPartitions();
    }

    long sessionEvictions() {
        return retiredEvictions + fetchSessions.evicted();
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
        boolean lost = false;
        StringBuilder what = new StringBuilder();
        for (int p = 0; p < logs.size(); p++) {
            SimLog log = logs.get(p);
            SimLog.Recovery r = log.recoverAfterCrash(powerFailure, random);
            lost |= r.logEndAfter() < r.logEndBefore();
            what.append(" p").append(p).append(": ").append(r).append(r.tornBatchCut() ? " (torn batch cut)" : "").append(" -> ").append(log);
            if (r.tornBatchCut()) {
                sim.tornBatches++;
            }
            if (r.logEndAfter() < r.logEndBefore()) {
                sim.unflushedLosses++;
            }
        }
        lostData |= lost;
        uncleanUnrecovered = true;
        sim.trace("b" + id + " " + (powerFailure ? "POWER FAILURE" : "killed") + ":" + what);
    }

    void restart() {
        up = true;
        incarnation++;
        incarnationId = new Uuid(random.nextLong(), random.nextLong());
        brokerEpoch = -1;
        newProcess();
        sim.trace("b" + id + " starts (" + logsDescription() + ")");
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
        logs.forEach(SimLog::flush);
        cleanShutdownEpoch = brokerEpoch;
        shuttingDown = false;
        up = false;
        incarnation++;
        dropRole();
        sim.trace("b" + id + " shut down cleanly (epoch " + cleanShutdownEpoch + ", " + logsDescription() + ")");
        sim.scheduleRestart(this);
    }

    private void flushLoop(long inc) {
        if (!live(inc)) {
            return;
        }
        logs.forEach(SimLog::flush);
        net.schedule(1 + random.nextInt(options.flushIntervalMs()), () -> flushLoop(inc));
    }

    boolean live(long inc) {
        return up && inc == incarnation;
    }

    private void dropRole() {
        newProcess();
        applied = null;
        latestSeen = null;
        brokerEpoch = -1;
        reregistering = false;
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
        MetadataImage previous = applied == null ? MetadataImage.EMPTY : applied;
        applied = image;
        if (uncleanUnrecovered && inEveryIsr(image)) {
            uncleanUnrecovered = false;
            lostData = false;
        }
        applyDelta(previous, image);
    }

    private boolean inEveryIsr(MetadataImage image) {
        for (int p = 0; p < logs.size(); p++) {
            if (!image.partition(sim.controller.topicId, p).isr().contains(id)) {
                return false;
            }
        }
        return true;
    }

    /**
     * ClusterReplicaManager.onImage over the simulation's partitions: the delta walk, then (as there)
     * replicas for partitions new here, fetchers of every partition changing role, leader or epoch
     * stopped at once, the transitions one by one, leaders whose state did not change refreshed when
     * broker eligibility changed, and fetchers started once per leader. (Topics are never deleted or
     * moved in the simulation, so nothing is ever gone but the walk is the same.)
     */
    private void applyDelta(MetadataImage previous, MetadataImage next) {
        ReplicaDelta delta = ReplicaDelta.between(previous, next, id, held);
        Set<Integer> ineligible = delta.ineligible();
        boolean eligibilityChanged = !ineligible.equals(lastIneligible);
        lastIneligible = ineligible;
        for (TopicPartition tp : delta.gone()) {
            Replica r = replicas.remove(tp);
            byIndex[tp.partition()] = null;
            removeFromFetchers(List.of(tp));
            r.state.stop();
            sim.trace("b" + id + " stops " + tp);
        }
        for (ReplicaDelta.Change c : delta.changes().values()) {
            Replica r = replicas.get(c.tp());
            if (r == null || !r.topicId.equals(c.topicId())) {
                Replica created = new Replica(c.tp(), c.topicId(), logs.get(c.tp().partition()));
                replicas.put(c.tp(), created);
                byIndex[c.tp().partition()] = created;
            }
        }
        List<TopicPartition> unfollow = new ArrayList<>();
        for (ReplicaDelta.Change c : delta.changes().values()) {
            if (replicas.get(c.tp()).state.needsFetcherStop(c.state())) {
                unfollow.add(c.tp());
            }
        }
        removeFromFetchers(unfollow);
        Map<Integer, List<SimFetcher.Target>> follow = new LinkedHashMap<>();
        int transitions = 0;
        for (ReplicaDelta.Change c : delta.changes().values()) {
            if (apply(replicas.get(c.tp()), c.state(), ineligible, next, follow) != PartitionReplica.Transition.UNCHANGED) {
                transitions++;
            }
        }
        if (eligibilityChanged) {
            for (Replica r : replicas.values()) {
                if (!delta.changes().containsKey(r.tp) && r.state.isLeader()) {
                    long hwBefore = r.log.highWatermark;
                    r.state.refresh(ineligible, options.minInsyncReplicas(), net.nowMs);
                    leaderHighWatermarkMaybeMoved(r, hwBefore);
                }
            }
        }
        follow.forEach(this::addToFetcher);
        if (delta.changes().size() >= 2) {
            sim.batchedDeltas++;
        }
        if (transitions >= 2) {
            sim.batchedTransitions++;
        }
    }

    /** ClusterReplicaManager.apply for one partition: the transition is the replica's; following is collected in {@code follow}. */
    private PartitionReplica.Transition apply(Replica r, PartitionState state, Set<Integer> ineligible, MetadataImage next,
                                              Map<Integer, List<SimFetcher.Target>> follow) {
        boolean wasLeader = r.state.isLeader();
        int epochBefore = r.state.leaderEpoch();
        long hwBefore = r.log.highWatermark;
        PartitionReplica.Transition t = r.state.apply(state, brokerEpoch, ineligible, options.minInsyncReplicas(), net.nowMs);
        if (t == PartitionReplica.Transition.BECAME_LEADER) {
            sim.onBecomeLeader(this, r.index());
            sim.trace("b" + id + " becomes leader of " + r.tp + ": " + r.state.leader());
        } else if (t == PartitionReplica.Transition.BECAME_FOLLOWER) {
            if (wasLeader) {
                sim.trace("b" + id + " stops leading " + r.tp + " epoch " + epochBefore);
            }
            if (options.policy() == ReplicationSimulation.TruncationPolicy.HIGH_WATERMARK) {
                // The mutant: pre-KIP-101, a new follower cuts its log at its high watermark.
                truncate(r, FollowerTruncation.withoutLocalEpochs(r.log.leo(), Math.min(r.log.highWatermark, r.log.leo())));
            }
            boolean reachable = state.hasLeader() && next.broker(state.leader()).flatMap(b -> b.endpoint(LISTENER)).isPresent();
            if (reachable) {
                follow.computeIfAbsent(state.leader(), k -> new ArrayList<>())
                        .add(new SimFetcher.Target(r.tp, r.topicId, state.leaderEpoch(), r));
            }
        }
        leaderHighWatermarkMaybeMoved(r, hwBefore);
        return t;
    }

    /** ReplicaFetcherManager.addPartitions: to the fetcher of {@code leaderId} (started if none), off any other. */
    private void addToFetcher(int leaderId, List<SimFetcher.Target> targets) {
        for (SimFetcher.Target t : targets) {
            Integer previous = fetcherOf.put(t.tp(), leaderId);
            if (previous != null && previous != leaderId) {
                fetchers.get(previous).removePartitions(List.of(t.tp()));
            }
        }
        fetchers.computeIfAbsent(leaderId, l -> new SimFetcher(this, l)).addPartitions(targets);
        stopIdleFetchers();
    }

    /** ReplicaFetcherManager.removePartitions: once this returns no fetcher touches their logs again. */
    private void removeFromFetchers(List<TopicPartition> tps) {
        for (TopicPartition tp : tps) {
            Integer leaderId = fetcherOf.remove(tp);
            if (leaderId != null) {
                fetchers.get(leaderId).removePartitions(List.of(tp));
            }
        }
        stopIdleFetchers();
    }

    private void stopIdleFetchers() {
        fetchers.values().removeIf(f -> {
            if (f.isEmpty()) {
                f.stop();
                return true;
            }
            return false;
        });
    }

    // ---------------------------------------------------------------- produce (leader)

    /**
     * An acks=all produce of one batch of {@code count} records to partition {@code p}
     * (ClusterReplicaManager.appendAsLeader); false when refused.
     */
    boolean produce(int p, int count) {
        Replica r = up ? replica(p) : null;
        if (r == null || r.state.checkAppend(true) != Errors.NONE) {
            return false;
        }
        SimLog log = r.log;
        int epoch = r.state.leaderEpoch();
        long base = log.leo();
        List<SimLog.Rec> batch = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            batch.add(new SimLog.Rec(base + i, epoch, sim.nextValue(), base, base + count));
        }
        sim.checkLogMatching(this, p, batch);
        long hwBefore = log.highWatermark;
        log.appendBatch(batch);
        r.state.onLeaderAppend(net.nowMs);
        sim.addPendingAck(this, p, epoch, batch);
        sim.trace("b" + id + " appends " + count + " to " + r.tp + " at " + base + " epoch " + epoch + " (values "
                + batch.get(0).value() + ".." + batch.get(count - 1).value() + ")");
        leaderHighWatermarkMaybeMoved(r, hwBefore);
        return true;
    }

    /**
     * After an event that may move a leader's HW ({@code before} is the log's HW before it): the
     * replica copies it into the log, as the broker has it do after every such event; checks it never
     * goes back and extends the committed log. The mutant sets it to the log end, as if no follower had
     * to have the records. Nothing to do when this broker does not lead the partition.
     */
    private void leaderHighWatermarkMaybeMoved(Replica r, long before) {
        if (!r.state.isLeader()) {
            return;
        }
        SimLog log = r.log;
        r.state.updateHighWatermark();
        if (options.hwIgnoresIsr()) {
            log.highWatermark = Math.max(log.highWatermark, log.leo());
        } else if (r.state.leader().highWatermark() < log.highWatermark) {
            throw sim.violation("HW of leader b" + id + " of " + r.tp + " (epoch " + r.state.leaderEpoch() + ") is "
                    + r.state.leader().highWatermark() + ", below its log's " + log.highWatermark);
        }
        if (log.highWatermark < before) {
            throw sim.violation("HW of leader b" + id + " of " + r.tp + " (epoch " + r.state.leaderEpoch() + ") went back from "
                    + before + " to " + log.highWatermark);
        }
        if (log.highWatermark > before) {
            sim.onLeaderHighWatermark(this, r.index());
        }
    }

    /** The HIGH_WATERMARK mutant's truncation (the real follower never truncates blindly). */
    private void truncate(Replica r, FollowerTruncation.Step step) {
        if (step.belowHighWatermark()) {
            sim.truncationsBelowHighWatermark++;
        }
        long before = r.log.leo();
        r.log.truncateTo(step.truncationOffset());
        sim.trace("b" + id + " " + r.tp + " truncates " + before + " -> " + r.log.leo() + " (" + step + ")");
    }

    // ---------------------------------------------------------------- fetch (leader side)

    /**
     * FetchHandler for a follower's Fetch: the session context ({@link FetchSessions#newContext}), each of
     * its partitions answered in full, and the session's {@code finish} deciding what the answer carries.
     * Silent while down or not registered (the follower's fetch times out).
     */
    void onFetchRequest(FetchRequestData request, short version, Consumer<SimFetcher.Answer> reply) {
        if (!up || brokerEpoch < 0) {
            return;
        }
        FetchSessions.Context context = fetchSessions.newContext(request, version, true);
        Map<TopicPartition, long[]> leaderOffsets = new LinkedHashMap<>();
        if (context.error() != Errors.NONE) {
            reply.accept(new SimFetcher.Answer(context.finish(null), leaderOffsets));
            return;
        }
        FetchResponseData full = new FetchResponseData().setErrorCode(Errors.NONE.code()).setSessionId(0);
        for (FetchRequestData.FetchTopic topic : context.topics()) {
            FetchResponseData.FetchableTopicResponse tr = new FetchResponseData.FetchableTopicResponse()
                    .setTopic(topic.topic()).setTopicId(topic.topicId());
            for (FetchRequestData.FetchPartition p : topic.partitions()) {
                tr.partitions().add(answerPartition(topic.topicId(), p, request.replicaState().replicaId(),
                        request.replicaState().replicaEpoch(), leaderOffsets));
            }
            full.responses().add(tr);
        }
        FetchResponseData answer = context.finish(full);
        if (options.hwOnlyAnswersDropped() && request.sessionEpoch() > 0 && answer.sessionId() != 0) {
            dropHighWatermarkOnlyAnswers(answer);
        }
        reply.accept(new SimFetcher.Answer(answer, leaderOffsets));
    }

    /**
     * The mutant: an incremental answer loses every partition whose only news is the high watermark (or
     * the log start) — a broken mustRespond that looks at records, errors and divergence only. The session
     * has already noted the new HW as sent, so it is not sent again until it moves again.
     */
    private static void dropHighWatermarkOnlyAnswers(FetchResponseData answer) {
        for (FetchResponseData.FetchableTopicResponse t : answer.responses()) {
            t.partitions().removeIf(p -> p.errorCode() == Errors.NONE.code() && !FetchResponse.isDivergingEpoch(p)
                    && (p.records() == null || p.records().sizeInBytes() == 0));
        }
    }

    /**
     * One partition of a follower's fetch (ClusterReplicaManager.followerFetch, then FetchHandler's read of
     * whole batches, as many as the seed allows).
     */
    private FetchResponseData.PartitionData answerPartition(Uuid topicId, FetchRequestData.FetchPartition p, int replicaId,
                                                            long replicaBrokerEpoch, Map<TopicPartition, long[]> leaderOffsets) {
        FetchResponseData.PartitionData pd = new FetchResponseData.PartitionData().setPartitionIndex(p.partition())
                .setHighWatermark(-1).setLastStableOffset(-1).setLogStartOffset(-1).setRecords(MemoryRecords.EMPTY);
        if (!topicId.equals(sim.controller.topicId)) {
            return pd.setErrorCode(Errors.UNKNOWN_TOPIC_ID.code());
        }
        Replica r = replica(p.partition());
        if (r == null) {
            return pd.setErrorCode(Errors.NOT_LEADER_OR_FOLLOWER.code());
        }
        SimLog log = r.log;
        long hwBefore = log.highWatermark;
        PartitionReplica.FollowerFetch f = r.state.followerFetch(replicaId, replicaBrokerEpoch, p.currentLeaderEpoch(), p.fetchOffset(),
                p.lastFetchedEpoch(), net.nowMs);
        if (f.error() != Errors.NONE) {
            if (f.error() == Errors.OFFSET_OUT_OF_RANGE && r.state.isLeader()) {
                leaderOffsets.put(r.tp, new long[] {log.logStartOffset(), log.leo()}); // the follower's ListOffsets, folded in
            }
            return pd.setErrorCode(f.error().code());
        }
        pd.setErrorCode(Errors.NONE.code()).setLogStartOffset(log.logStartOffset());
        if (f.diverging().isPresent()) {
            return pd.setHighWatermark(f.highWatermark()).setLastStableOffset(f.highWatermark())
                    .setDivergingEpoch(new FetchResponseData.EpochEndOffset().setEpoch(f.diverging().get().epoch())
                            .setEndOffset(f.diverging().get().endOffset()));
        }
        leaderHighWatermarkMaybeMoved(r, hwBefore);
        f.expand().ifPresent(proposal -> sendIsrChange(r, proposal));
        List<SimLog.Rec> batches = log.batchesFrom(p.fetchOffset(), 1 + random.nextInt(options.maxFetchBatches()));
        return pd.setHighWatermark(log.highWatermark).setLastStableOffset(log.highWatermark).setRecords(SimRecords.encode(batches));
    }

    // ---------------------------------------------------------------- ISR changes (leader side)

    private void shrinkLoop(long inc, long intervalMs) {
        if (!live(inc)) {
            return;
        }
        for (Replica r : replicas.values()) {
            r.state.isrShrinkProposal(net.nowMs).ifPresent(proposal -> sendIsrChange(r, proposal));
        }
        net.schedule(intervalMs, () -> shrinkLoop(inc, intervalMs));
    }

    /** ClusterReplicaManager.sendIsrChange: into the batcher, answered to {@link #onIsrAnswer}. */
    private void sendIsrChange(Replica r, IsrChangeProposal p) {
        sim.trace("b" + id + " proposes " + p.kind() + " " + p.newIsrIds() + " for " + r.tp + " (epochs " + p.leaderEpoch() + "/"
                + p.partitionEpoch() + ")");
        long inc = incarnation;
        isrChanges.submit(r.topicId, PartitionReplica.alterPartitionData(r.index(), p),
                (err, answer) -> onIsrAnswer(inc, r, p, err, answer));
    }

    /** The controller channel under the batcher: resent until answered, REQUEST_TIMED_OUT after a few attempts. */
    private CompletableFuture<ControllerChannel.Reply> sendAlterPartition(AlterPartitionRequestData request, long inc) {
        CompletableFuture<ControllerChannel.Reply> reply = new CompletableFuture<>();
        attemptAlterPartition(request, reply, inc, 1); // every attempt carries one request id: the reply future
        return reply;
    }

    private void attemptAlterPartition(AlterPartitionRequestData request, CompletableFuture<ControllerChannel.Reply> reply, long inc,
                                       int attempt) {
        if (!live(inc) || reply.isDone()) {
            return;
        }
        int partitions = request.topics().stream().mapToInt(t -> t.partitions().size()).sum();
        if (attempt == 1 && partitions >= 2) {
            sim.batchedAlterPartitions++;
        }
        net.send(id, SimNetwork.CONTROLLER, "AlterPartition (" + partitions + " partitions)",
                () -> sim.controller.onAlterPartition(request, reply, this, answer -> {
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
    private void onIsrAnswer(long inc, Replica r, IsrChangeProposal proposal, Errors err, AlterPartitionResponseData.PartitionData answer) {
        if (!live(inc)) {
            return;
        }
        long hwBefore = r.log.highWatermark;
        PartitionReplica.IsrAnswer outcome = r.state.onIsrAnswer(proposal, err, answer, net.nowMs);
        sim.trace("b" + id + " AlterPartition " + proposal.newIsrIds() + " for " + r.tp + " answered " + err + ": " + outcome);
        leaderHighWatermarkMaybeMoved(r, hwBefore);
        if (outcome == PartitionReplica.IsrAnswer.RETRY) {
            net.schedule(ALTER_PARTITION_RETRY_MS, () -> {
                if (live(inc) && replicas.get(r.tp) == r && r.state.shouldResend(proposal)) {
                    sendIsrChange(r, proposal);
                }
            });
        }
    }

    // ---------------------------------------------------------------- description

    private String logsDescription() {
        StringBuilder b = new StringBuilder();
        for (int p = 0; p < logs.size(); p++) {
            b.append(p == 0 ? "" : "; ").append('p').append(p).append(' ').append(logs.get(p));
        }
        return b.toString();
    }

    @Override
    public String toString() {
        StringBuilder b = new StringBuilder("b" + id + (up ? "" : "(down)") + " epoch=" + brokerEpoch
                + (lostData ? " lostData" : "") + (uncleanUnrecovered ? " unclean" : "") + (shuttingDown ? " shuttingDown" : ""));
        for (int p = 0; p < logs.size(); p++) {
            Replica r = replica(p);
            b.append("\n    p").append(p).append(' ').append(logs.get(p));
            if (r != null) {
                b.append(" knows=").append(r.state.leaderId()).append('@').append(r.state.leaderEpoch()).append('/')
                        .append(r.state.partitionEpoch()).append(r.state.isLeader() ? " LEADER " + r.state.leader() : "");
            }
        }
        return b.toString();
    }
}
