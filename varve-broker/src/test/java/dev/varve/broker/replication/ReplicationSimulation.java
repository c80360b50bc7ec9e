package dev.varve.broker.replication;

import org.apache.kafka.common.protocol.Errors;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.function.Consumer;

/**
 * A deterministic, seeded simulation of a topic of several partitions ({@link Options#partitions}, 3 by
 * default), each replicated over all three brokers with its own preferred leader, and a controller: the
 * broker's own replica code in {@link SimBroker}s — the metadata delta walk ({@link ReplicaDelta}) and the
 * per-partition state machines ({@link PartitionReplica}, {@link FollowerReplica}) the broker's replica
 * manager and fetchers run, its AlterPartition batcher, its fetch session cache ({@code FetchSessions}) and,
 * on the follower side, Kafka's own {@code FetchSessionHandler} building the Fetch wire objects
 * ({@link SimFetcher}) — and the real controller decisions ({@code ControllerLogic} from varve-metadata)
 * in a {@link SimController}, exchanging messages (fetches, AlterPartition, registrations, heartbeats,
 * metadata images) over a {@link SimNetwork}. One {@link Random} and one event queue ordered by simulated
 * time drive everything, so a seed replays exactly ({@link #traceHash()} compares two runs).
 *
 * <p>Several partitions make the batched paths run: a broker's failure moves all its leaderships in one
 * controller decision, so a broker applies a metadata delta that changes several partitions in one pass
 * (fetchers stopped once, transitions, fetchers started once per leader); a leader's batcher coalesces the
 * ISR changes of several partitions into one AlterPartition; one fetcher per leader carries every
 * partition followed from it in one incremental fetch session, whose answers leave out partitions with
 * nothing new (so a record, a divergence or a high watermark reaches a follower only if the session's
 * rules say it must).
 *
 * <h2>What happens</h2>
 * <ul>
 *   <li>clients produce {@code acks=all} batches of 1-3 records to any (broker, partition) the broker
 *       believes it leads (stale leaders included); a produce is acknowledged when
 *       {@link LeaderState#ackStatus} says DONE;</li>
 *   <li>network: messages dropped ({@link Options#dropRate}, sometimes 20% for a while), delayed 1-8 ms
 *       and sometimes up to ten times more (reordered); links cut for a while (one broker pair, a broker
 *       and the controller, or a broker from everyone) or slow for a while (a follower falls behind);</li>
 *   <li>brokers: killed ({@code kill -9}: the page cache survives), power failures (unflushed writes lost,
 *       the last batch of each log possibly torn: {@link SimLog}), controlled shutdowns; each restarts after
 *       a while and registers again (the controller sees an unclean restart unless the shutdown was clean);
 *       a restarted broker's fetch session cache is new, so followers' sessions with it are unknown there;</li>
 *   <li>fetch sessions: the leaders' caches have 0-3 slots per seed (0: every fetch is full; fewer slots
 *       than followers: some go without, and sessions are evicted) and an eviction time scaled down to
 *       the history (10-50 ms or 1 s, where Kafka's is 120 s), so sessions are refused
 *       (FETCH_SESSION_ID_NOT_FOUND), evicted and reopened;</li>
 *   <li>controller: session expiry fences silent brokers (leaderships move, ISRs shrink), heartbeats
 *       unfence them, AlterPartition, preferred-leader elections of every partition; the ISR, ELR (KIP-966)
 *       and elections are the real code's.</li>
 * </ul>
 *
 * <h2>Invariants, checked after every event ({@link SimInvariants}), each per partition</h2>
 * <ol>
 *   <li>at most one leader per leader epoch: in the controller's images, among the brokers that ever
 *       led, and in the data (two replicas never hold different records with the same offset and epoch);
 *       one state per partition epoch; controller epochs never go back;</li>
 *   <li>the HW never moves backwards: a leader's, and a follower's within one leader epoch;</li>
 *   <li>the committed log (every record some leader's HW passed) is never rewritten, every replica agrees
 *       with it below its own HW, and every live ISR member (as the controller sees it, registered since its
 *       last restart) holds all of it;</li>
 *   <li>every acknowledged {@code acks=all} record stays in the committed log, on every live ELR member, and,
 *       after {@link #heal}, on every replica;</li>
 *   <li>after {@link #heal} (network repaired and no longer reordering, everyone restarted, no more faults)
 *       the replicas of every partition converge: one leader, ISR of all three, equal logs, HW at the log end
 *       on every replica (no livelock; and every follower learned the last HW through its session).</li>
 * </ol>
 *
 * <h2>Model assumptions (what the protocol does not promise to survive, written down)</h2>
 * <ul>
 *   <li>Durability without fsync rests on copies: a power failure (losing unflushed data) is injected only
 *       with {@code min.insync.replicas >= 2} and only when no other broker is down or back after an
 *       unclean crash without having rejoined the ISR of every partition; and while a broker that lost data
 *       has not rejoined the ISR of every partition, no other broker crashes uncleanly (a clean shutdown is
 *       fine). The controller cannot tell
 *       {@code kill -9} from a power failure, so two overlapping unclean crashes may elect the one that lost
 *       data (KIP-966's last-known-ELR rule) and {@code min.insync.replicas=1} never promises to survive
 *       the loss of the one in-sync copy. With {@code min.insync.replicas=1}, crashes are kills only.</li>
 *   <li>The controller is one node that commits at once and never fails over (the Raft quorum is tested
 *       elsewhere); its images reach brokers late, out of order or never, but it re-publishes periodically.</li>
 *   <li>The client is not modelled beyond acks: retries, idempotence and producer fencing are not; a produce
 *       counts as acknowledged when the leader decides so (the answer itself may be lost).</li>
 *   <li>Logs are in memory (SimLog mirrors PartitionLog's truncation and recovery rules); retention,
 *       log start offsets, segments, reassignments and topic deletion are not modelled. Fetch answers carry
 *       real record batches ({@link SimRecords}) but no byte limits (a partition's answer is 1 to
 *       {@link Options#maxFetchBatches} whole batches), and a leader answers a fetch at once (no purgatory
 *       wait: the follower waits a few ms before fetching again when nothing came).</li>
 * </ul>
 */
final class ReplicationSimulation {
    static final int REPLICA_COUNT = 3;
    private static final long START_MS = 1_000;
    private static final long CONTROLLER_TICK_MS = 25;
    private static final long PUBLISH_INTERVAL_MS = 100;
    private static final long PURGATORY_TIMEOUT_MS = 2_000;

    /** How a replica that becomes a follower truncates: the real thing, or the pre-KIP-101 rule (a mutant). */
    enum TruncationPolicy { LEADER_EPOCH, HIGH_WATERMARK }

    /**
     * @param minInsyncReplicas    the topic's min.insync.replicas (1-3)
     * @param replicaLagTimeMaxMs  replica.lag.time.max.ms
     * @param policy               follower truncation (HIGH_WATERMARK is a mutant)
     * @param maxFetchBatches      batches per fetch answer, at most
     * @param hwIgnoresIsr         mutant: a leader's HW is its log end, whatever the followers have
     * @param uncleanElection      mutant: unclean.leader.election.enable=true on the topic (elections ignore the ISR)
     * @param events               events before {@link #heal}
     * @param dropRate             chance that a message is lost
     * @param flushIntervalMs      a broker flushes every 1..flushIntervalMs
     * @param brokerSessionTimeoutMs broker.session.timeout.ms
     * @param faultIntervalMs      mean time between faults (crashes, partitions, shutdowns, elections), times
     *                             1, 2, 4 or 8 as the seed decides
     * @param partitions           partitions of the topic, each on all three brokers (1 is the single-partition simulation)
     * @param hwOnlyAnswersDropped mutant: incremental fetch answers lose the partitions whose only news is the HW
     */
    record Options(int minInsyncReplicas, long replicaLagTimeMaxMs, TruncationPolicy policy, int maxFetchBatches,
                   boolean hwIgnoresIsr, boolean uncleanElection, int events, double dropRate, int flushIntervalMs,
                   long brokerSessionTimeoutMs, int faultIntervalMs, int partitions, boolean hwOnlyAnswersDropped) {
        static Options defaults(int minIsr) {
            return new Options(minIsr, 100, TruncationPolicy.LEADER_EPOCH, 10, false, false, 3_000, 0.02, 60, 250, 60, 3, false);
        }

        Options withPolicy(TruncationPolicy p) {
            return new Options(minInsyncReplicas, replicaLagTimeMaxMs, p, maxFetchBatches, hwIgnoresIsr, uncleanElection, events,
                    dropRate, flushIntervalMs, brokerSessionTimeoutMs, faultIntervalMs, partitions, hwOnlyAnswersDropped);
        }

        Options withHwIgnoringIsr() {
            return new Options(minInsyncReplicas, replicaLagTimeMaxMs, policy, maxFetchBatches, true, uncleanElection, events,
                    dropRate, flushIntervalMs, brokerSessionTimeoutMs, faultIntervalMs, partitions, hwOnlyAnswersDropped);
        }

        Options withUncleanElection() {
            return new Options(minInsyncReplicas, replicaLagTimeMaxMs, policy, maxFetchBatches, hwIgnoresIsr, true, events,
                    dropRate, flushIntervalMs, brokerSessionTimeoutMs, faultIntervalMs, partitions, hwOnlyAnswersDropped);
        }

        Options withHwOnlyAnswersDropped() {
            return new Options(minInsyncReplicas, replicaLagTimeMaxMs, policy, maxFetchBatches, hwIgnoresIsr, uncleanElection, events,
                    dropRate, flushIntervalMs, brokerSessionTimeoutMs, faultIntervalMs, partitions, true);
        }

        Options withEvents(int n) {
            return new Options(minInsyncReplicas, replicaLagTimeMaxMs, policy, maxFetchBatches, hwIgnoresIsr, uncleanElection, n,
                    dropRate, flushIntervalMs, brokerSessionTimeoutMs, faultIntervalMs, partitions, hwOnlyAnswersDropped);
        }

        Options withPartitions(int n) {
            if (n < 1) {
                throw new IllegalArgumentException("partitions " + n);
            }
            return new Options(minInsyncReplicas, replicaLagTimeMaxMs, policy, maxFetchBatches, hwIgnoresIsr, uncleanElection, events,
                    dropRate, flushIntervalMs, brokerSessionTimeoutMs, faultIntervalMs, n, hwOnlyAnswersDropped);
        }

        /** The system properties that replay these options ({@link ReplicationReplay}). */
        String asProperties() {
            return "-Dvarve.sim.minIsr=" + minInsyncReplicas + " -Dvarve.sim.events=" + events + " -Dvarve.sim.partitions=" + partitions
                    + (policy != TruncationPolicy.LEADER_EPOCH ? " -Dvarve.sim.policy=" + policy : "")
                    + (hwIgnoresIsr ? " -Dvarve.sim.hwIgnoresIsr=true" : "")
                    + (uncleanElection ? " -Dvarve.sim.unclean=true" : "")
                    + (hwOnlyAnswersDropped ? " -Dvarve.sim.hwOnlyAnswersDropped=true" : "");
        }
    }

    static final class InvariantViolation extends AssertionError {
        InvariantViolation(String message) {
            super(message);
        }
    }

    /**
     * An acks=all produce waiting for the HW: the broker process it went to, the partition, the leader epoch
     * of its append, its records.
     */
    record PendingAck(SimBroker broker, long incarnation, int partition, int leaderEpoch, List<SimLog.Rec> records, long deadlineMs) {
    }

    final long seed;
    final Options options;
    private final Random random;
    private final SimTrace traceLog;
    final SimNetwork net;
    final SimController controller;
    final List<SimBroker> brokers = new ArrayList<>();
    final SimInvariants invariants;
    private final List<PendingAck> pendingAcks = new ArrayList<>();
    private long nextValue = 1;
    private boolean faultsOn = true;
    private boolean producing = true;
    private int faultMeanMs;
    long events;

    // statistics, for the tests that check the simulation really exercises things
    int leaderChanges;
    int truncationsBelowHighWatermark;
    int tornBatches;
    int unflushedLosses;
    int powerFailures;
    int kills;
    int cleanShutdowns;
    int linkCuts;
    int produced;
    /** Metadata deltas that changed two or more partitions on one broker, and that made two or more transitions there. */
    int batchedDeltas;
    int batchedTransitions;
    /** AlterPartition requests with two or more partitions. */
    int batchedAlterPartitions;
    /** Session errors a follower's fetch got (and recovered from with a full fetch). */
    int sessionNotFound;
    int sessionEpochErrors;

    /** The leaders' fetch session cache: slots (0: no sessions, every fetch is full) and eviction time, per seed. */
    final int sessionSlots;
    final long sessionEvictionMs;

    ReplicationSimulation(long seed, Options options) {
        this(seed, options, null);
    }

    /** {@code sink} receives every trace line (a replay prints them), or null. */
    ReplicationSimulation(long seed, Options options, Consumer<String> sink) {
        this.seed = seed;
        this.options = options;
        this.random = new Random(seed);
        this.traceLog = new SimTrace(400, sink);
        this.net = new SimNetwork(random, traceLog, START_MS);
        this.net.dropRate = options.dropRate();
        this.invariants = new SimInvariants(this, options.partitions());
        this.controller = new SimController(this, net, random, options);
        // Few slots, sometimes none (every fetch full) or one (a follower without a session), and an eviction
        // time scaled to a history of seconds, so that sessions are refused, evicted and reopened.
        int slotPick = random.nextInt(10);
        this.sessionSlots = slotPick == 0 ? 0 : slotPick <= 3 ? 1 : slotPick <= 6 ? 2 : 3;
        this.sessionEvictionMs = random.nextBoolean() ? 10 + random.nextInt(40) : 1_000;
        for (int b = 0; b < REPLICA_COUNT; b++) {
            brokers.add(new SimBroker(b, this, net, random, options));
        }
        List<List<Integer>> assignments = new ArrayList<>();
        for (int p = 0; p < options.partitions(); p++) {
            List<Integer> assignment = new ArrayList<>(List.of(0, 1, 2));
            java.util.Collections.shuffle(assignment, random);
            assignments.add(assignment);
        }
        var epochs = controller.bootstrap(assignments, options);
        for (SimBroker b : brokers) {
            b.startRegistered(epochs.get(b.id));
            b.onMetadata(controller.image);
        }
        trace("bootstrap: " + controller.describeAll() + " options " + options + ", fetch session slots " + sessionSlots
                + ", eviction after " + sessionEvictionMs + " ms");
        net.schedule(CONTROLLER_TICK_MS, this::controllerTick);
        net.schedule(PUBLISH_INTERVAL_MS, this::publishLoop);
        net.schedule(1, this::produceLoop);
        faultMeanMs = options.faultIntervalMs() << random.nextInt(4); // calm or stormy, per seed
        net.schedule(1 + random.nextInt(faultMeanMs * 2), this::faultLoop);
        trace("faults every " + faultMeanMs + " ms on average");
        invariants.checkAll();
    }

    /** Runs the seed's history, then heals and checks convergence; throws an {@link InvariantViolation} naming the seed. */
    static ReplicationSimulation runAndHeal(long seed, Options options) {
        ReplicationSimulation sim = new ReplicationSimulation(seed, options);
        sim.runChecked();
        return sim;
    }

    void runChecked() {
        try {
            run(options.events());
            heal();
        } catch (InvariantViolation e) {
            throw withReplay(e.getMessage(), e);
        } catch (RuntimeException e) {
            throw withReplay("unexpected " + e + "\n" + state(), e);
        }
    }

    private InvariantViolation withReplay(String message, Throwable cause) {
        InvariantViolation v = new InvariantViolation("simulation seed " + seed + " " + options
                + "\nreplay: ./mvnw -o -q -pl varve-broker -am test -Dtest=ReplicationReplay -Dsurefire.failIfNoSpecifiedTests=false"
                + " -Dvarve.sim.seed=" + seed + " " + options.asProperties() + "\n" + message);
        v.initCause(cause);
        return v;
    }

    // ---------------------------------------------------------------- driver

    void run(int eventCount) {
        for (int i = 0; i < eventCount; i++) {
            step();
        }
    }

    void step() {
        if (!net.step()) {
            throw new IllegalStateException("the event queue ran dry");
        }
        events++;
        settleAcks();
        invariants.checkAll();
    }

    /**
     * Repairs everything (network, crashed brokers, no more faults or produces) and runs until the
     * replicas of every partition converge: one leader, ISR of all three, equal logs, HW at the log end
     * everywhere. Fails if that does not happen within 30 simulated seconds. The repaired network no
     * longer delays messages past a fetch timeout either: otherwise a timeout's full fetch would now and
     * then repair what a broken session lost, and hide it.
     */
    void heal() {
        faultsOn = false;
        producing = false;
        net.healAll();
        net.dropRate = 0;
        net.slowRate = 0; // no more reordering: a fetch no longer times out, so nothing resets a fetch session
        trace("HEAL: network repaired, faults stopped");
        for (SimBroker b : brokers) {
            if (!b.up) { // a controlled shutdown in progress completes (and the broker restarts)
                b.restart();
            }
        }
        long deadline = net.nowMs + 30_000;
        while (net.nowMs < deadline) {
            for (int i = 0; i < 50; i++) {
                step();
            }
            if (invariants.converged()) {
                invariants.checkConverged();
                return;
            }
        }
        throw violation("no convergence within 30 s after healing");
    }

    // ---------------------------------------------------------------- recurring events

    private void controllerTick() {
        controller.tick();
        net.schedule(CONTROLLER_TICK_MS, this::controllerTick);
    }

    private void publishLoop() {
        controller.publish();
        net.schedule(PUBLISH_INTERVAL_MS, this::publishLoop);
    }

    /** A produce to a random (broker, partition) whose broker believes it leads it (stale leaders included). */
    private void produceLoop() {
        if (producing) {
            List<int[]> leaders = new ArrayList<>();
            for (SimBroker b : brokers) {
                for (int p = 0; p < options.partitions(); p++) {
                    if (b.leader(p) != null) {
                        leaders.add(new int[] {b.id, p});
                    }
                }
            }
            if (!leaders.isEmpty()) {
                int[] pick = leaders.get(random.nextInt(leaders.size()));
                if (brokers.get(pick[0]).produce(pick[1], 1 + random.nextInt(3))) {
                    produced++;
                }
            }
        }
        net.schedule(1 + random.nextInt(8), this::produceLoop);
    }

    private void faultLoop() {
        if (!faultsOn) {
            return;
        }
        int pick = random.nextInt(100);
        if (pick < 30) {
            cutLinks();
        } else if (pick < 38) {
            slowLink();
        } else if (pick < 60) {
            crash(brokers.get(random.nextInt(REPLICA_COUNT)));
        } else if (pick < 70) {
            SimBroker b = brokers.get(random.nextInt(REPLICA_COUNT));
            if (b.up && b.brokerEpoch >= 0 && !b.shuttingDown) {
                b.shuttingDown = true;
                cleanShutdowns++;
                trace("b" + b.id + " begins a controlled shutdown");
            }
        } else if (pick < 80) {
            controller.electPreferred();
        } else if (pick < 85) {
            net.dropRate = random.nextInt(4) == 0 ? 0.2 : options.dropRate();
            trace("drop rate now " + net.dropRate);
        }
        net.schedule(1 + random.nextInt(faultMeanMs * 2), this::faultLoop);
    }

    private void slowLink() {
        int a = random.nextInt(REPLICA_COUNT);
        int b = random.nextInt(3) == 0 ? SimNetwork.CONTROLLER : (a + 1 + random.nextInt(REPLICA_COUNT - 1)) % REPLICA_COUNT;
        int extraMs = 20 + random.nextInt(300);
        long durationMs = 50 + random.nextInt(1000);
        net.slow(a, b, extraMs);
        trace("network: " + SimNetwork.name(a) + "|" + SimNetwork.name(b) + " slow (+" + extraMs + " ms) for " + durationMs + " ms");
        net.schedule(durationMs, () -> net.slow(a, b, 0));
    }

    private void cutLinks() {
        int a = random.nextInt(REPLICA_COUNT);
        List<int[]> links = new ArrayList<>();
        switch (random.nextInt(3)) {
            case 0 -> links.add(new int[] {a, SimNetwork.CONTROLLER});
            case 1 -> links.add(new int[] {a, (a + 1 + random.nextInt(REPLICA_COUNT - 1)) % REPLICA_COUNT});
            default -> {
                for (int other = 0; other <= SimNetwork.CONTROLLER; other++) {
                    if (other != a) {
                        links.add(new int[] {a, other});
                    }
                }
            }
        }
        for (int[] l : links) {
            net.cut(l[0], l[1]);
        }
        linkCuts++;
        long durationMs = 20 + random.nextInt(600);
        trace("network: cut " + links.stream().map(l -> SimNetwork.name(l[0]) + "|" + SimNetwork.name(l[1])).toList()
                + " for " + durationMs + " ms");
        net.schedule(durationMs, () -> {
            for (int[] l : links) {
                net.heal(l[0], l[1]);
            }
            trace("network: repaired " + links.stream().map(l -> SimNetwork.name(l[0]) + "|" + SimNetwork.name(l[1])).toList()
                    + ", cuts now " + net.cutsDescription());
        });
    }

    /** A crash within the model assumptions (see the class comment): power failure, kill, or none. */
    private void crash(SimBroker b) {
        if (!b.up) {
            return;
        }
        boolean otherUnclean = brokers.stream().anyMatch(o -> o != b && (o.uncleanUnrecovered || !o.up));
        boolean otherLostData = brokers.stream().anyMatch(o -> o != b && o.lostData);
        boolean power = random.nextBoolean() && options.minInsyncReplicas() >= 2 && !otherUnclean;
        if (!power && otherLostData) {
            return; // a second unclean crash while another broker's loss is not repaired: outside the promise
        }
        if (power) {
            powerFailures++;
        } else {
            kills++;
        }
        b.crash(power);
        scheduleRestart(b);
    }

    void scheduleRestart(SimBroker b) {
        net.schedule(20 + random.nextInt(500), () -> {
            if (!b.up) {
                b.restart();
            }
        });
    }

    // ---------------------------------------------------------------- acks

    void addPendingAck(SimBroker b, int partition, int leaderEpoch, List<SimLog.Rec> records) {
        pendingAcks.add(new PendingAck(b, b.incarnation, partition, leaderEpoch, records, net.nowMs + PURGATORY_TIMEOUT_MS));
    }

    private void settleAcks() {
        if (pendingAcks.isEmpty()) {
            return;
        }
        pendingAcks.removeIf(ack -> {
            SimBroker b = ack.broker();
            if (!b.up || b.incarnation != ack.incarnation() || net.nowMs > ack.deadlineMs()) {
                return true; // the process died with the request, or REQUEST_TIMED_OUT: the client retries (not modelled)
            }
            long required = ack.records().get(ack.records().size() - 1).offset() + 1;
            AckStatus status = options.hwIgnoresIsr()
                    ? (b.log(ack.partition()).highWatermark >= required ? AckStatus.DONE : AckStatus.PENDING)
                    : b.replica(ack.partition()).state.ackStatus(ack.leaderEpoch(), required); // the broker's own rule (Partition.completableAcks)
            if (status == AckStatus.DONE) {
                invariants.onAcknowledged(b, ack.partition(), ack.records());
            }
            return status.isComplete();
        });
    }

    // ---------------------------------------------------------------- callbacks from the nodes

    long nextValue() {
        return nextValue++;
    }

    void onBecomeLeader(SimBroker b, int partition) {
        leaderChanges++;
        invariants.onBecomeLeader(b, partition);
    }

    void onLeaderHighWatermark(SimBroker b, int partition) {
        invariants.extendCommitted(b, partition);
    }

    void checkLogMatching(SimBroker b, int partition, List<SimLog.Rec> batch) {
        invariants.checkLogMatching(b, partition, batch);
    }

    void onSessionError(Errors error) {
        if (error == Errors.FETCH_SESSION_ID_NOT_FOUND) {
            sessionNotFound++;
        } else {
            sessionEpochErrors++;
        }
    }

    /** Incremental fetches answered by every leader process of this history. */
    long incrementalFetches() {
        return brokers.stream().mapToLong(SimBroker::incrementalFetches).sum();
    }

    /** Partitions left out of incremental answers (nothing new for them). */
    long omittedPartitions() {
        return brokers.stream().mapToLong(SimBroker::omittedPartitions).sum();
    }

    long sessionEvictions() {
        return brokers.stream().mapToLong(SimBroker::sessionEvictions).sum();
    }

    // ---------------------------------------------------------------- trace

    void trace(String event) {
        traceLog.log(net.nowMs, event);
    }

    long traceHash() {
        return traceLog.hash();
    }

    InvariantViolation violation(String message) {
        return new InvariantViolation(message + "\n" + state());
    }

    String state() {
        StringBuilder b = new StringBuilder("event " + events + " t=" + net.nowMs + " controller: " + controller.describeAll()
                + " cuts " + net.cutsDescription() + " committed " + invariants.committedCounts() + " acked " + invariants.ackedCount() + "\n");
        for (SimBroker br : brokers) {
            b.append("  ").append(br).append(" | controller: ")
                    .append(controller.image.broker(br.id).map(r -> "epoch " + r.brokerEpoch() + (r.fenced() ? " fenced" : "")
                            + (r.inControlledShutdown() ? " shutting down" : "")).orElse("unregistered")).append('\n');
        }
        b.append("last events:\n").append(traceLog.lastLines());
        return b.toString();
    }
}
