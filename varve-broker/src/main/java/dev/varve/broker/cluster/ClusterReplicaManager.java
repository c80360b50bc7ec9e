package dev.varve.broker.cluster;

import dev.varve.broker.FetchPurgatory;
import dev.varve.broker.ReplicaManager;
import dev.varve.broker.WheelTimer;
import dev.varve.broker.replication.AckStatus;
import dev.varve.broker.replication.EpochFencing;
import dev.varve.broker.replication.IsrChangeProposal;
import dev.varve.broker.replication.PartitionReplica;
import dev.varve.broker.replication.ReplicaDelta;
import dev.varve.metadata.BrokerRegistration;
import dev.varve.metadata.MetadataImage;
import dev.varve.metadata.MetadataRecord;
import dev.varve.metadata.PartitionState;
import dev.varve.metadata.TopicImage;
import dev.varve.metadata.quorum.MetadataLoader;
import dev.varve.storage.LeaderEpochCache;
import dev.varve.storage.LogAppendInfo;
import dev.varve.storage.LogManager;
import dev.varve.storage.PartitionLog;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.NotEnoughReplicasException;
import org.apache.kafka.common.errors.NotLeaderOrFollowerException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.message.AlterPartitionResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.utils.Time;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import java.util.function.ToIntFunction;

/**
 * The replicas this broker holds in cluster mode, driven by the metadata image: becomes leader or
 * follower of each partition as the controller decides, appends as leader with the current leader
 * epoch, serves followers' fetches (tracking their progress, the high watermark and ISR changes),
 * keeps {@code acks=all} requests waiting until the high watermark covers them, and starts and stops
 * replica fetchers.
 *
 * <p>Image changes are applied on the metadata apply thread, in log order. Request paths take the
 * partition's monitor only for short state updates; log reads happen outside it.
 */
public final class ClusterReplicaManager implements MetadataLoader.ImageListener, AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ClusterReplicaManager.class);

    private final int localId;
    private final LongSupplier brokerEpoch;
    private final LogManager logManager;
    private final FetchPurgatory purgatory;
    private final ReplicaFetcherManager fetchers;
    private final ControllerChannel controller;
    private final Time time;
    private final long replicaLagTimeMaxMs;
    private final String listenerName;
    private final ToIntFunction<String> minInsyncReplicas;
    private final AlterPartitionBatcher isrChanges;
    private final Map<TopicPartition, Partition> partitions = new ConcurrentHashMap<>();
    /** The broker's timer: acks=all timeouts, ISR checks, AlterPartition retries; the broker closes it. */
    private final WheelTimer timer;
    private volatile MetadataImage image = MetadataImage.EMPTY;
    private volatile FollowerIdentity followerIdentity = new FollowerIdentity(true);
    private final List<LeadershipListener> leadershipListeners = new java.util.concurrent.CopyOnWriteArrayList<>();

    /** Told when this broker starts and stops leading a partition (e.g. the group coordinator for __consumer_offsets). */
    public interface LeadershipListener {
        /** This broker now leads {@code tp} in {@code leaderEpoch}; appends are accepted. */
        void onBecomeLeader(TopicPartition tp, int leaderEpoch);

        /** This broker no longer leads {@code tp}. */
        void onResign(TopicPartition tp);
    }

    /** Adds a listener; called on the metadata thread after the transition. */
    public void addLeadershipListener(LeadershipListener listener) {
        leadershipListeners.add(listener);
    }
    private volatile boolean closed;

    /**
     * @param listenerName      the listener followers use to reach leaders (the inter-broker listener)
     * @param minInsyncReplicas a topic's effective {@code min.insync.replicas}
     */
    public ClusterReplicaManager(int localId, LongSupplier brokerEpoch, LogManager logManager, FetchPurgatory purgatory,
                                 ReplicaFetcherManager fetchers, ControllerChannel controller, Time time,
                                 long replicaLagTimeMaxMs, String listenerName, ToIntFunction<String> minInsyncReplicas,
                                 WheelTimer timer) {
        this.localId = localId;
        this.timer = timer;
        this.brokerEpoch = brokerEpoch;
        this.logManager = logManager;
        this.purgatory = purgatory;
        this.fetchers = fetchers;
        this.controller = controller;
        this.time = time;
        this.replicaLagTimeMaxMs = replicaLagTimeMaxMs;
        this.listenerName = listenerName;
        this.minInsyncReplicas = minInsyncReplicas;
        this.isrChanges = new AlterPartitionBatcher(localId, brokerEpoch, controller);
        isrChanges.answerScope(answering -> purgatory.coalescingWakes(() -> {
            answering.run();
            return null;
        }));
        long interval = Math.max(50, replicaLagTimeMaxMs / 2);
        timer.schedule(interval, () -> shrinkIsrs(interval));
    }

    // ---------------------------------------------------------------- metadata

    /** What one delta did here, for its summary line. */
    private static final class DeltaStats {
        int led;
        int followed;
        int stopped;
        int created;
        int failed;
    }

    /** Metadata thread only: partitions whose last transition failed, tried again with the next delta. */
    private final Set<TopicPartition> failedTransitions = new HashSet<>();
    /** Serialises image application: the metadata publisher's deliveries and the retries of failed transitions. */
    private final Object applyLock = new Object();
    /** Guarded by applyLock: a retry of failed transitions is scheduled. */
    private boolean retryScheduled;
    /** Guarded by applyLock: the delay before the next retry (doubles while retries keep failing). */
    private long retryDelayMs = FIRST_RETRY_MS;
    static final long FIRST_RETRY_MS = 1_000;
    static final long MAX_RETRY_MS = 60_000;
    /** Metadata thread only: the brokers that were not eligible in the last image. */
    private Set<Integer> lastIneligible = Set.of();
    /** The partitions held here, as the delta walk asks about them. */
    private final ReplicaDelta.Held held = new ReplicaDelta.Held() {
        @Override
        public Uuid topicId(TopicPartition tp) {
            Partition p = partitions.get(tp);
            return p == null ? null : p.topicId;
        }

        @Override
        public Collection<TopicPartition> partitions() {
            return List.copyOf(partitions.keySet());
        }
    };

    /** The image metadata answers show; may run ahead of the one the replicas have applied. */
    public void publishImage(MetadataImage next) {
        if (next.offset() >= image.offset()) {
            this.image = next;
        }
    }

    /**
     * Applies one metadata delta (the change from {@code previous} to {@code next}, which may span many
     * entries) in one pass: only topics and partitions whose state object changed are looked at
     * ({@link ReplicaDelta}: the image shares unchanged ones), missing logs are created, fetchers are stopped once
     * before and started once after all transitions, and one line summarises the delta (each partition's
     * transition is logged at DEBUG).
     */
    @Override
    public void onImage(MetadataImage previous, MetadataImage next) {
        synchronized (applyLock) {
            applyDelta(previous, next);
            scheduleRetryOfFailedTransitions();
        }
    }

    /**
     * Partitions whose transition failed are tried again with the next delta, and, should none come
     * (a quiet cluster), on a timer: after 1 s, doubling up to 60 s while they keep failing.
     */
    private void scheduleRetryOfFailedTransitions() {
        if (failedTransitions.isEmpty()) {
            retryDelayMs = FIRST_RETRY_MS;
            return;
        }
        if (retryScheduled || closed) {
            return;
        }
        retryScheduled = true;
        long delay = retryDelayMs;
        retryDelayMs = Math.min(MAX_RETRY_MS, retryDelayMs * 2);
        java.util.concurrent.CompletableFuture.delayedExecutor(delay, TimeUnit.MILLISECONDS).execute(() -> {
            synchronized (applyLock) {
                retryScheduled = false;
                if (closed || failedTransitions.isEmpty()) {
                    return;
                }
                LOG.info("Retrying the transitions of {} partition(s) that failed", failedTransitions.size());
                MetadataImage current = image;
                applyDelta(current, current);
                scheduleRetryOfFailedTransitions();
            }
        });
    }

    private void applyDelta(MetadataImage previous, MetadataImage next) {
        publishImage(next);
        if (closed) {
            return;
        }
        long startNs = System.nanoTime();
        DeltaStats stats = new DeltaStats();
        // 1. What changed here (ReplicaDelta, the walk the simulation runs too): partitions assigned here whose
        //    state changed, and held partitions no longer assigned here (topic deleted, replica moved away,
        //    topic re-created). The latter stop first.
        ReplicaDelta delta = ReplicaDelta.between(previous, next, localId, held);
        Set<Integer> ineligible = delta.ineligible();
        boolean eligibilityChanged = !ineligible.equals(lastIneligible);
        lastIneligible = ineligible;
        boolean configsChanged = !previous.allConfigs().equals(next.allConfigs());

        Map<TopicPartition, ReplicaDelta.Change> changes = new java.util.LinkedHashMap<>(delta.changes());
        // Fetches waiting on any partition of the delta are woken once, after it (FetchPurgatory.wakeAll).
        List<TopicPartition> wake = new ArrayList<>();
        try {
            applyChanges(next, delta, ineligible, eligibilityChanged || configsChanged, changes, wake, stats);
        } finally {
            purgatory.wakeAll(wake);
        }

        long tookMs = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - startNs);
        if (!changes.isEmpty() || stats.stopped > 0) {
            LOG.info("Applied metadata up to offset {} in {} ms: {} partition(s) changed here ({} replicas opened), now leader of"
                            + " {}, follower of {}, {} stopped{}; {} replicas in all", next.offset(), tookMs, changes.size(),
                    stats.created, stats.led, stats.followed, stats.stopped,
                    stats.failed == 0 ? "" : ", " + stats.failed + " failed (retried with the next change)", partitions.size());
        }
    }

    private void applyChanges(MetadataImage next, ReplicaDelta delta, Set<Integer> ineligible, boolean refreshLeaders,
                              Map<TopicPartition, ReplicaDelta.Change> changes, List<TopicPartition> wake, DeltaStats stats) {
        for (TopicPartition tp : delta.gone()) {
            Partition p = partitions.get(tp);
            if (p != null) {
                stop(p, true);
                wake.add(tp);
                stats.stopped++;
            }
        }

        // 2. Partitions whose last transition failed are tried again.
        for (TopicPartition tp : failedTransitions) {
            next.topic(tp.topic()).ifPresent(t -> {
                PartitionState state = t.partition(tp.partition());
                if (state != null && state.replicas().contains(localId)) {
                    changes.putIfAbsent(tp, new ReplicaDelta.Change(tp, t.id(), state));
                }
            });
        }
        failedTransitions.clear();

        // 3. Logs for partitions new here: a topic of thousands of partitions is thousands of directories
        //    and files, none of them fsynced on this path.
        List<ReplicaDelta.Change> fresh = new ArrayList<>();
        for (ReplicaDelta.Change c : changes.values()) {
            Partition p = partitions.get(c.tp());
            if (p != null && !p.topicId.equals(c.topicId())) {
                stop(p, true); // a topic re-created under the same name
                wake.add(c.tp());
                stats.stopped++;
                p = null;
            }
            if (p == null) {
                fresh.add(c);
            }
        }
        createPartitions(fresh, stats);

        // 4. Fetchers of every partition that changes role, leader or epoch stop first, all at once: no
        //    fetcher appends to a partition after it became leader.
        List<TopicPartition> unfollow = new ArrayList<>();
        for (ReplicaDelta.Change c : changes.values()) {
            Partition p = partitions.get(c.tp());
            if (p != null && needsFetcherStop(p, c.state())) {
                unfollow.add(c.tp());
            }
        }
        if (!unfollow.isEmpty()) {
            fetchers.removePartitions(unfollow);
        }

        // 5. The transitions themselves: in memory, partition by partition.
        Map<ReplicaFetcherManager.Leader, List<ReplicaFetcherManager.FollowerPartition>> follow = new HashMap<>();
        for (ReplicaDelta.Change c : changes.values()) {
            Partition p = partitions.get(c.tp());
            if (p == null) {
                stats.failed++;
                failedTransitions.add(c.tp());
                continue;
            }
            try {
                wake.add(c.tp());
                apply(p, c.state(), ineligible, next, follow, stats);
            } catch (RuntimeException e) {
                LOG.error("Could not apply the metadata of {} ({})", c.tp(), c.state(), e);
                stats.failed++;
                failedTransitions.add(c.tp());
            }
        }

        // 6. Leaders whose state did not change still follow broker eligibility and min.insync.replicas.
        if (refreshLeaders) {
            for (Partition p : partitions.values()) {
                if (!changes.containsKey(p.tp) && refreshLeader(p, ineligible)) {
                    wake.add(p.tp);
                }
            }
        }

        // 7. Fetchers start once per leader.
        follow.forEach(fetchers::addPartitions);
    }

    /**
     * Opens (creating if needed) the logs of partitions new here, one after the other on this thread:
     * all of them are directories in the same parent, and creating entries of one directory from
     * several threads was measured to be slower (ext4 serialises them on the parent's lock; 2,000 new
     * logs took 9.8 s with two threads and 4.0 s with one, docs/benchmarks.md).
     */
    private void createPartitions(List<ReplicaDelta.Change> fresh, DeltaStats stats) {
        for (ReplicaDelta.Change c : fresh) {
            try {
                Partition p = new Partition(c.tp(), c.topicId(), logFor(c.tp(), c.topicId()), localId, replicaLagTimeMaxMs);
                partitions.put(c.tp(), p);
                stats.created++;
            } catch (RuntimeException e) {
                LOG.error("Could not open the log of {}", c.tp(), e);
            }
        }
    }

    /** Whether the transition to {@code state} moves {@code p} off its current fetcher (role, leader or epoch change). */
    private boolean needsFetcherStop(Partition p, PartitionState state) {
        synchronized (p) {
            return p.replica.needsFetcherStop(state);
        }
    }

    /**
     * A leader whose partition state did not change: new broker eligibility or min.insync.replicas.
     * Returns whether {@code p} is a leader here (its waiting fetches are for the caller to wake).
     */
    private boolean refreshLeader(Partition p, Set<Integer> ineligible) {
        List<Runnable> after;
        synchronized (p) {
            if (!p.replica.isLeader()) {
                return false;
            }
            p.replica.refresh(ineligible, minInsyncReplicas.applyAsInt(p.tp.topic()), time.milliseconds());
            after = updateHighWatermark(p, false);
        }
        after.forEach(Runnable::run);
        return true;
    }

    private void apply(Partition p, PartitionState state, Set<Integer> ineligible, MetadataImage next,
                       Map<ReplicaFetcherManager.Leader, List<ReplicaFetcherManager.FollowerPartition>> follow,
                       DeltaStats stats) {
        TopicPartition tp = p.tp;
        List<Runnable> after = new ArrayList<>();
        boolean wasLeader;
        PartitionReplica.Transition transition;
        synchronized (p) {
            wasLeader = p.replica.isLeader();
            transition = p.replica.apply(state, brokerEpoch.getAsLong(), ineligible, minInsyncReplicas.applyAsInt(tp.topic()),
                    time.milliseconds());
            if (transition != PartitionReplica.Transition.UNCHANGED) {
                after.addAll(p.failAcks(Errors.NOT_LEADER_OR_FOLLOWER));
            }
            after.addAll(updateHighWatermark(p, false));
        }
        if (transition == PartitionReplica.Transition.BECAME_LEADER) {
            stats.led++;
            LOG.debug("Leader of {} in epoch {} (ISR {}, log end {})", tp, state.leaderEpoch(), state.isr(), p.log.logEndOffset());
        } else if (transition == PartitionReplica.Transition.BECAME_FOLLOWER) {
            Optional<BrokerRegistration> leader = state.hasLeader() ? next.broker(state.leader()) : Optional.empty();
            Optional<MetadataRecord.Endpoint> ep = leader.flatMap(b -> b.endpoint(listenerName));
            if (ep.isPresent()) {
                follow.computeIfAbsent(new ReplicaFetcherManager.Leader(state.leader(), ep.get().host(), ep.get().port()),
                        k -> new ArrayList<>()).add(new ReplicaFetcherManager.FollowerPartition(tp, p.topicId, state.leaderEpoch(), p.log));
            }
            stats.followed++;
            LOG.debug("Follower of {} in epoch {} (leader {})", tp, state.leaderEpoch(), state.leader());
        }
        after.forEach(Runnable::run); // the caller wakes the waiting fetches of the whole delta
        if (transition == PartitionReplica.Transition.BECAME_LEADER) {
            leadershipListeners.forEach(l -> l.onBecomeLeader(tp, state.leaderEpoch()));
        } else if (wasLeader && transition == PartitionReplica.Transition.BECAME_FOLLOWER) {
            leadershipListeners.forEach(l -> l.onResign(tp));
        }
    }

    /**
     * The local log of {@code tp} for topic {@code topicId}: a log left by an older topic of the same
     * name (its partition.metadata names another id) is deleted first, so its records never mix with
     * the new topic's.
     */
    private PartitionLog logFor(TopicPartition tp, Uuid topicId) {
        Optional<PartitionLog> existing = logManager.getLog(tp);
        boolean written = false;
        if (existing.isPresent()) {
            Optional<Uuid> owner = PartitionMetadataFile.read(existing.get().dir());
            if (owner.isPresent() && !owner.get().equals(topicId)) {
                LOG.warn("The log of {} belongs to an older topic {} (now {}): deleting it", tp, owner.get(), topicId);
                logManager.deleteLog(tp);
            } else {
                written = owner.isPresent();
            }
        }
        PartitionLog log = logManager.getOrCreateLog(tp);
        if (!written) {
            try {
                PartitionMetadataFile.write(log.dir(), topicId);
            } catch (java.io.IOException e) {
                throw new org.apache.kafka.common.errors.KafkaStorageException("cannot write " + PartitionMetadataFile.NAME
                        + " of " + tp, e);
            }
        }
        return log;
    }

    /**
     * Deletes local logs the metadata assigns nowhere to this broker (topics deleted while it was down,
     * replicas moved away). Call once the image is known complete: after the controller unfenced this
     * broker, which requires it to have caught up with the metadata log.
     */
    public void deleteStrayLogs() {
        MetadataImage current = image;
        for (PartitionLog log : List.copyOf(logManager.allLogs())) {
            TopicPartition tp = log.topicPartition();
            Optional<TopicImage> topic = current.topic(tp.topic());
            boolean assigned = topic.isPresent() && tp.partition() < topic.get().partitionCount()
                    && topic.get().partition(tp.partition()).replicas().contains(localId);
            if (!assigned && !partitions.containsKey(tp)) {
                LOG.info("Deleting stray log {}: the metadata assigns it no replica here", tp);
                try {
                    logManager.deleteLog(tp);
                } catch (RuntimeException e) {
                    LOG.error("Could not delete stray log {}", tp, e);
                }
            }
        }
    }

    /** Stops {@code p}; its waiting fetches are for the caller to wake (see applyDelta). */
    private void stop(Partition p, boolean deleteLog) {
        fetchers.removePartitions(List.of(p.tp));
        List<Runnable> after;
        boolean wasLeader;
        synchronized (p) {
            wasLeader = p.replica.isLeader();
            after = p.failAcks(Errors.NOT_LEADER_OR_FOLLOWER);
            p.replica.stop();
        }
        partitions.remove(p.tp, p);
        after.forEach(Runnable::run);
        if (wasLeader) {
            leadershipListeners.forEach(l -> l.onResign(p.tp));
        }
        if (deleteLog) {
            try {
                logManager.deleteLog(p.tp);
            } catch (RuntimeException e) {
                LOG.error("Could not delete the log of {}", p.tp, e);
            }
        }
    }

    /**
     * Copies the leader's HW into the log; returns what to run outside the lock: acks to complete and,
     * when the HW moved, the wake-up of fetches waiting for it (consumers read below the HW, so an
     * acks=1 append becomes readable only now). Caller holds p.
     */
    private List<Runnable> updateHighWatermark(Partition p) {
        return updateHighWatermark(p, true);
    }

    /** As above; without {@code wakeOnMove} the caller wakes the waiting fetches itself (a whole delta at once). */
    private List<Runnable> updateHighWatermark(Partition p, boolean wakeOnMove) {
        if (!p.replica.isLeader()) {
            return List.of();
        }
        boolean moved = p.replica.updateHighWatermark();
        List<Runnable> after = p.completableAcks();
        if (moved && wakeOnMove) {
            if (after.isEmpty()) {
                after = new ArrayList<>();
            }
            TopicPartition tp = p.tp;
            after.add(() -> purgatory.wake(tp));
        }
        return after;
    }

    // ---------------------------------------------------------------- produce

    private Partition leaderPartition(TopicPartition tp) {
        Partition p = partitions.get(tp);
        if (p == null) {
            if (image.topic(tp.topic()).map(t -> tp.partition() < t.partitionCount()).orElse(false)) {
                throw new NotLeaderOrFollowerException("Broker " + localId + " holds no replica of " + tp);
            }
            throw new UnknownTopicOrPartitionException("This server does not host this topic-partition: " + tp);
        }
        return p;
    }

    /**
     * Appends as leader with the current leader epoch; the answer names that epoch, which an acks=all
     * wait ({@link #awaitAck}) is tied to.
     *
     * @throws NotLeaderOrFollowerException when this broker is not the leader
     * @throws NotEnoughReplicasException   for acks=all when the ISR is below min.insync.replicas
     */
    public ReplicaManager.LeaderAppend appendAsLeader(TopicPartition tp, MemoryRecords records, boolean acksAll) {
        return appendAsLeader(tp, records, acksAll, dev.varve.storage.AppendOrigin.CLIENT);
    }

    /** As {@link #appendAsLeader(TopicPartition, MemoryRecords, boolean)}, with the producer checks of {@code origin}. */
    public ReplicaManager.LeaderAppend appendAsLeader(TopicPartition tp, MemoryRecords records, boolean acksAll,
                                                      dev.varve.storage.AppendOrigin origin) {
        return appendAsLeader(tp, records, acksAll, origin, null);
    }

    /** As above; with {@code guard} not null the leader verifies transactions (KIP-890). */
    public ReplicaManager.LeaderAppend appendAsLeader(TopicPartition tp, MemoryRecords records, boolean acksAll,
                                                      dev.varve.storage.AppendOrigin origin,
                                                      dev.varve.storage.VerificationGuard guard) {
        return appendAsLeader(tp, acksAll, (log, epoch) -> log.appendAsLeader(records, epoch, origin, guard));
    }

    /**
     * Writes a transaction marker (WriteTxnMarkers) as the leader of {@code tp}, as an acks=all append:
     * min.insync.replicas is checked first (NOT_ENOUGH_REPLICAS).
     */
    public ReplicaManager.LeaderAppend appendMarkerAsLeader(TopicPartition tp, long producerId, short producerEpoch,
                                                           int coordinatorEpoch, boolean commit, short transactionVersion) {
        return appendAsLeader(tp, true, (log, epoch) -> log.appendMarkerAsLeader(producerId, producerEpoch,
                coordinatorEpoch, commit, epoch, transactionVersion));
    }

    /** An append to the log of a partition this broker leads, in the leader epoch given. */
    private interface LeaderWrite {
        LogAppendInfo append(PartitionLog log, int leaderEpoch);
    }

    private ReplicaManager.LeaderAppend appendAsLeader(TopicPartition tp, boolean acksAll, LeaderWrite write) {
        Partition p = leaderPartition(tp);
        LogAppendInfo info;
        int epoch;
        List<Runnable> after;
        synchronized (p) {
            Errors refused = p.replica.checkAppend(acksAll);
            if (refused == Errors.NOT_LEADER_OR_FOLLOWER) {
                throw new NotLeaderOrFollowerException("Broker " + localId + " is not the leader of " + tp
                        + " (the leader is " + p.replica.leaderId() + ")");
            }
            if (refused != Errors.NONE) {
                throw new NotEnoughReplicasException("The ISR of " + tp + " is " + p.replica.leader().isr()
                        + "; min.insync.replicas is " + p.replica.leader().minInsyncReplicas());
            }
            epoch = p.replica.leaderEpoch();
            info = write.append(p.log, epoch);
            p.replica.onLeaderAppend(time.milliseconds());
            after = updateHighWatermark(p);
        }
        after.forEach(Runnable::run);
        purgatory.wake(tp);
        return new ReplicaManager.LeaderAppend(info, epoch);
    }

    /**
     * Completes with NONE once the high watermark reaches {@code requiredOffset} with enough replicas,
     * NOT_ENOUGH_REPLICAS_AFTER_APPEND when it got there with too few, NOT_LEADER_OR_FOLLOWER when this
     * broker no longer leads in {@code leaderEpoch} (the epoch of the append: a later epoch's high
     * watermark never acknowledges it, the records may have been truncated away), REQUEST_TIMED_OUT after
     * {@code timeoutMs}.
     */
    public CompletableFuture<Errors> awaitAck(TopicPartition tp, int leaderEpoch, long requiredOffset, long timeoutMs) {
        return await(tp, new Partition.PendingAck(leaderEpoch, requiredOffset), timeoutMs);
    }

    /**
     * DeleteRecords as Kafka's DelayedDeleteRecords: completes with NONE once every live replica's log
     * starts at or after {@code offset} (followers state theirs in their fetches, after applying the
     * leader's), so a replica elected next cannot bring the deleted records back; NOT_LEADER_OR_FOLLOWER
     * when this broker stops leading in the current epoch, REQUEST_TIMED_OUT after {@code timeoutMs}.
     * Call it after deleting on the leader's own log.
     */
    public CompletableFuture<Errors> awaitLowWatermark(TopicPartition tp, long offset, long timeoutMs) {
        Partition p = partitions.get(tp);
        if (p == null) {
            return CompletableFuture.completedFuture(Errors.NOT_LEADER_OR_FOLLOWER);
        }
        int epoch;
        synchronized (p) {
            if (!p.replica.isLeader()) {
                return CompletableFuture.completedFuture(Errors.NOT_LEADER_OR_FOLLOWER);
            }
            epoch = p.replica.leaderEpoch();
        }
        purgatory.wake(tp); // followers waiting in a fetch learn the new log start now, not at their timeout
        return await(tp, new Partition.PendingAck(epoch, offset, true), timeoutMs);
    }

    /** Partitions of produce requests (and DeleteRecords) waiting for their acknowledgement, now. */
    private final java.util.concurrent.atomic.LongAdder waitingAcks = new java.util.concurrent.atomic.LongAdder();

    /**
     * How many acknowledgements are waiting (a request waiting on three partitions counts three, as
     * Kafka's produce purgatory counts an operation once per partition it watches).
     */
    public long waitingAcks() {
        return waitingAcks.sum();
    }

    private CompletableFuture<Errors> await(TopicPartition tp, Partition.PendingAck ack, long timeoutMs) {
        Partition p = partitions.get(tp);
        if (p == null) {
            return CompletableFuture.completedFuture(Errors.NOT_LEADER_OR_FOLLOWER);
        }
        synchronized (p) {
            Errors status = ack.status(p.replica);
            if (status != null) {
                return CompletableFuture.completedFuture(status);
            }
            p.pendingAcks.add(ack);
        }
        waitingAcks.increment();
        ack.future.whenComplete((e, t) -> waitingAcks.decrement());
        timer.schedule(Math.max(1, timeoutMs), () -> {
            boolean removed;
            synchronized (p) {
                removed = p.pendingAcks.remove(ack);
            }
            if (removed) {
                ack.future.complete(Errors.REQUEST_TIMED_OUT);
            }
        });
        return ack.future;
    }

    // ---------------------------------------------------------------- reads

    /**
     * The log of a partition this broker leads, for consumers, ListOffsets and OffsetForLeaderEpoch;
     * {@code currentLeaderEpoch} (−1 when absent) is checked against the leader's (FENCED_LEADER_EPOCH,
     * UNKNOWN_LEADER_EPOCH).
     */
    public PartitionLog leaderLog(TopicPartition tp, int currentLeaderEpoch) {
        Partition p = leaderPartition(tp);
        synchronized (p) {
            if (!p.replica.isLeader()) {
                throw new NotLeaderOrFollowerException("Broker " + localId + " is not the leader of " + tp);
            }
            Errors e = EpochFencing.validate(currentLeaderEpoch, p.replica.leaderEpoch());
            if (e != Errors.NONE) {
                throw e.exception();
            }
            return p.log;
        }
    }

    /**
     * The log a consumer reads {@code tp} from here: the leader's, or, for a consumer that may read from
     * followers (Fetch v11+, KIP-392), a follower's, up to the high watermark it learned from its
     * leader. {@code currentLeaderEpoch} is checked against the leader epoch this replica knows.
     */
    public PartitionLog consumerLog(TopicPartition tp, int currentLeaderEpoch, boolean fromFollowerAllowed) {
        Partition p = leaderPartition(tp);
        synchronized (p) {
            boolean follower = p.replica.role() == dev.varve.broker.replication.PartitionReplica.Role.FOLLOWER;
            if (!p.replica.isLeader() && !(fromFollowerAllowed && follower)) {
                throw new NotLeaderOrFollowerException("Broker " + localId + " is not the leader of " + tp);
            }
            Errors e = EpochFencing.validate(currentLeaderEpoch, p.replica.leaderEpoch());
            if (e != Errors.NONE) {
                throw e.exception();
            }
            return p.log;
        }
    }

    /** The {@code replica.selector.class} instance, or null: consumers read from leaders only. */
    private volatile org.apache.kafka.common.replica.ReplicaSelector replicaSelector;

    public void setReplicaSelector(org.apache.kafka.common.replica.ReplicaSelector selector) {
        this.replicaSelector = selector;
    }

    /**
     * KIP-392: the replica the configured {@code replica.selector.class} picks for a consumer's fetch of
     * {@code tp} at {@code fetchOffset}, when this broker leads it and the pick is another broker.
     * Candidates are, as in Kafka, the leader and the followers whose log reaches the fetch offset, on
     * brokers that are registered, unfenced and listen on the consumer's listener.
     */
    public java.util.OptionalInt preferredReadReplica(TopicPartition tp, long fetchOffset,
                                                      org.apache.kafka.common.replica.ClientMetadata client, String listener) {
        org.apache.kafka.common.replica.ReplicaSelector selector = replicaSelector;
        if (selector == null) {
            return java.util.OptionalInt.empty();
        }
        Partition p = partitions.get(tp);
        if (p == null) {
            return java.util.OptionalInt.empty();
        }
        MetadataImage img = image;
        long now = time.milliseconds();
        java.util.Set<org.apache.kafka.common.replica.ReplicaView> candidates = new java.util.HashSet<>();
        org.apache.kafka.common.replica.ReplicaView leaderView;
        synchronized (p) {
            if (!p.replica.isLeader()) {
                return java.util.OptionalInt.empty();
            }
            dev.varve.broker.replication.LeaderState leader = p.replica.leader();
            org.apache.kafka.common.Node self = node(img, localId, listener);
            if (self == null) {
                return java.util.OptionalInt.empty();
            }
            leaderView = new org.apache.kafka.common.replica.ReplicaView.DefaultReplicaView(self, leader.logEndOffset(), 0);
            candidates.add(leaderView);
            for (int id : leader.replicas()) {
                if (id == localId) {
                    continue;
                }
                java.util.Optional<dev.varve.broker.replication.ReplicaView> v = leader.replicaView(id);
                org.apache.kafka.common.Node n = node(img, id, listener);
                long logStart = leader.followerLogStartOffset(id);
                // as Kafka: only an in-sync follower holding the fetch offset (a lagging one would keep the
                // consumer behind; one whose retention ran ahead would answer OFFSET_OUT_OF_RANGE)
                if (v.isEmpty() || n == null || !leader.isr().contains(id) || v.get().logEndOffset() < fetchOffset
                        || logStart < 0 || logStart > fetchOffset) {
                    continue;
                }
                long caughtUp = v.get().lastCaughtUpTimeMs();
                candidates.add(new org.apache.kafka.common.replica.ReplicaView.DefaultReplicaView(n, v.get().logEndOffset(),
                        caughtUp < 0 ? Long.MAX_VALUE : Math.max(0, now - caughtUp)));
            }
        }
        java.util.Optional<org.apache.kafka.common.replica.ReplicaView> pick;
        try {
            pick = selector.select(tp, client, new org.apache.kafka.common.replica.PartitionView.DefaultPartitionView(candidates, leaderView));
        } catch (RuntimeException e) {
            LOG.warn("replica.selector.class {} failed for {}: {}", selector.getClass().getName(), tp, e.toString());
            return java.util.OptionalInt.empty();
        }
        return pick.isPresent() && pick.get().endpoint().id() != localId
                ? java.util.OptionalInt.of(pick.get().endpoint().id()) : java.util.OptionalInt.empty();
    }

    /** Broker {@code id}'s endpoint on {@code listener} with its rack, if it is registered and unfenced. */
    private static org.apache.kafka.common.Node node(MetadataImage img, int id, String listener) {
        dev.varve.metadata.BrokerRegistration b = img.brokers().get(id);
        if (b == null || b.fenced()) {
            return null;
        }
        for (dev.varve.metadata.MetadataRecord.Endpoint e : b.endpoints()) {
            if (e.name().equals(listener)) {
                return new org.apache.kafka.common.Node(id, e.host(), e.port(), b.rack());
            }
        }
        return null;
    }

    /**
     * The offset where this broker's leadership of {@code tp} began (its log end when it became
     * leader), or -1 when it does not lead. Until the high watermark reaches it, a new leader's high
     * watermark may be below records the previous leader acknowledged (it learns the real one from its
     * followers' first fetches), so clients' offset queries are answered OFFSET_NOT_AVAILABLE (KIP-207).
     */
    public long leaderEpochStartOffset(TopicPartition tp) {
        Partition p = partitions.get(tp);
        if (p == null) {
            return -1;
        }
        synchronized (p) {
            return p.replica.isLeader() ? p.replica.leader().leaderEpochStartOffset() : -1;
        }
    }

    /** The leader epoch this broker knows for a partition it leads, or -1. */
    public int leaderEpoch(TopicPartition tp) {
        Partition p = partitions.get(tp);
        if (p == null) {
            return -1;
        }
        synchronized (p) {
            return p.replica.leaderEpoch();
        }
    }

    /** What a follower's fetch of one partition gets: an error, a divergence, or where to read. */
    /**
     * @param settledIsrMember the follower is in the committed ISR and no ISR change is in flight
     *                         ({@link dev.varve.broker.replication.LeaderState#isSettledIsrMember})
     */
    public record FollowerRead(Errors error, PartitionLog log, Optional<LeaderEpochCache.EpochEndOffset> diverging,
                               long highWatermark, long logEndOffset, boolean settledIsrMember) {
    }

    /** {@code replica.lag.time.max.ms}. */
    public long replicaLagTimeMaxMs() {
        return replicaLagTimeMaxMs;
    }

    public void setFollowerIdentity(FollowerIdentity identity) {
        this.followerIdentity = identity;
    }

    /** Whether a fetch claiming to come from broker {@code replicaId} may be taken as that follower's ({@link FollowerIdentity}). */
    public Errors checkFollower(int replicaId, long replicaBrokerEpoch, java.net.InetAddress from) {
        return followerIdentity.check(image, replicaId, replicaBrokerEpoch, from, time.milliseconds());
    }

    /**
     * A follower's fetch: checks leadership and epochs, answers a divergence (KIP-320), else records the
     * follower's progress (which may move the HW and propose an ISR expansion) and says where to read
     * (up to the log end).
     */
    public FollowerRead followerFetch(TopicPartition tp, int replicaId, long replicaBrokerEpoch, int currentLeaderEpoch,
                                      long fetchOffset, int lastFetchedEpoch, long followerLogStartOffset) {
        return followerFetch(tp, replicaId, replicaBrokerEpoch, currentLeaderEpoch, fetchOffset, lastFetchedEpoch,
                followerLogStartOffset, dev.varve.broker.replication.LeaderState.NEVER_MS);
    }

    /** As above, for a fetch held unread since {@code caughtUpAtMs}, when the follower was at the log end. */
    public FollowerRead followerFetch(TopicPartition tp, int replicaId, long replicaBrokerEpoch, int currentLeaderEpoch,
                                      long fetchOffset, int lastFetchedEpoch, long followerLogStartOffset, long caughtUpAtMs) {
        Partition p = partitions.get(tp);
        if (p == null) {
            return new FollowerRead(Errors.NOT_LEADER_OR_FOLLOWER, null, Optional.empty(), -1, -1, false);
        }
        List<Runnable> after;
        PartitionReplica.FollowerFetch fetch;
        synchronized (p) {
            fetch = p.replica.followerFetch(replicaId, replicaBrokerEpoch, currentLeaderEpoch, fetchOffset, lastFetchedEpoch,
                    followerLogStartOffset, time.milliseconds(), caughtUpAtMs);
            if (fetch.error() != Errors.NONE) {
                return new FollowerRead(fetch.error(), null, Optional.empty(), -1, -1, false);
            }
            if (fetch.diverging().isPresent()) {
                return new FollowerRead(Errors.NONE, p.log, fetch.diverging(), fetch.highWatermark(), fetch.logEndOffset(), false);
            }
            after = updateHighWatermark(p); // wakes waiting fetches when the HW moved
        }
        after.forEach(Runnable::run);
        fetch.expand().ifPresent(proposal -> sendIsrChange(p, proposal));
        return new FollowerRead(Errors.NONE, p.log, Optional.empty(), fetch.highWatermark(), fetch.logEndOffset(),
                fetch.settledIsrMember() && fetch.expand().isEmpty());
    }

    // ---------------------------------------------------------------- ISR changes

    private void shrinkIsrs(long interval) {
        if (closed) {
            return;
        }
        try {
            long now = time.milliseconds();
            Map<String, Integer> shrinks = new java.util.TreeMap<>();
            for (Partition p : partitions.values()) {
                Optional<IsrChangeProposal> shrink;
                synchronized (p) {
                    shrink = p.replica.isrShrinkProposal(now);
                }
                shrink.ifPresent(proposal -> {
                    LOG.debug("Shrinking the ISR of {}: {} out of sync", p.tp, proposal.changed());
                    shrinks.merge(proposal.changed().toString(), 1, Integer::sum);
                    sendIsrChange(p, proposal);
                });
            }
            shrinks.forEach((replicas, count) ->
                    LOG.info("Shrinking the ISR of {} partition(s): {} out of sync", count, replicas));
        } catch (RuntimeException e) {
            LOG.error("ISR shrink check failed", e);
        } finally {
            if (!closed) {
                scheduleQuietly(interval, () -> shrinkIsrs(interval));
            }
        }
    }

    /** Schedules follow-up work unless the broker is shutting down (its timer closed). */
    private void scheduleQuietly(long delayMs, Runnable task) {
        try {
            timer.schedule(delayMs, task);
        } catch (IllegalStateException closing) {
            LOG.debug("not scheduled: the broker's timer is closed");
        }
    }

    private void sendIsrChange(Partition p, IsrChangeProposal proposal) {
        isrChanges.submit(p.topicId, PartitionReplica.alterPartitionData(p.tp.partition(), proposal),
                (err, answer) -> onIsrAnswer(p, proposal, err, answer));
    }

    private volatile java.util.function.Consumer<IsrChangeProposal.Kind> isrChanged = kind -> { };

    /** Told of each ISR change of a partition led here once the controller committed it (Kafka's IsrShrinksPerSec, IsrExpandsPerSec). */
    public void onIsrChanged(java.util.function.Consumer<IsrChangeProposal.Kind> listener) {
        this.isrChanged = listener;
    }

    private void onIsrAnswer(Partition p, IsrChangeProposal proposal, Errors err, AlterPartitionResponseData.PartitionData answer) {
        if (err == Errors.NONE) {
            isrChanged.accept(proposal.kind());
        }
        List<Runnable> after;
        PartitionReplica.IsrAnswer outcome;
        synchronized (p) {
            outcome = p.replica.onIsrAnswer(proposal, err, answer, time.milliseconds());
            after = updateHighWatermark(p);
        }
        LOG.debug("AlterPartition for {} answered {}: {}{}", p.tp, err, outcome,
                answer == null ? "" : " (ISR " + answer.isr() + ", partition epoch " + answer.partitionEpoch() + ")");
        after.forEach(Runnable::run);
        purgatory.wake(p.tp);
        if (outcome == PartitionReplica.IsrAnswer.RETRY && !closed) {
            scheduleQuietly(500, () -> resendIsrChange(p, proposal));
        }
    }

    /** A refused ISR change, sent again only while it is still the one in flight (a new leadership or proposal replaces it). */
    private void resendIsrChange(Partition p, IsrChangeProposal proposal) {
        boolean resend;
        synchronized (p) {
            resend = partitions.get(p.tp) == p && p.replica.shouldResend(proposal);
        }
        if (resend && !closed) {
            sendIsrChange(p, proposal);
        }
    }

    // ---------------------------------------------------------------- queries

    private volatile ReplicationQuotas quotas;

    public void setQuotas(ReplicationQuotas quotas) {
        this.quotas = quotas;
    }

    /** The replication throttles, or null when none are set up. */
    public ReplicationQuotas quotas() {
        return quotas;
    }

    /** Whether this broker currently leads {@code tp}. */
    /** Whether a request that only brokers send (WriteTxnMarkers) may come from {@code from}: see {@link FollowerIdentity#checkAnyBroker}. */
    public Errors checkBrokerSource(java.net.InetAddress from) {
        return followerIdentity.checkAnyBroker(image, from, time.milliseconds());
    }

    public boolean isLeader(TopicPartition tp) {
        Partition p = partitions.get(tp);
        if (p == null) {
            return false;
        }
        synchronized (p) {
            return p.replica.isLeader();
        }
    }

    public MetadataImage image() {
        return image;
    }

    /** Kafka's ReplicaManager gauges: replicas here, those led here, and of those the under-replicated and under-min-ISR ones. */
    public record ReplicaCounts(int partitions, int leaders, int underReplicated, int underMinIsr) {
    }

    /** {@link ReplicaCounts} now (a walk of this broker's partitions: for metric scrapes). */
    public ReplicaCounts counts() {
        int all = 0;
        int leaders = 0;
        int under = 0;
        int underMin = 0;
        for (Partition p : partitions.values()) {
            all++;
            synchronized (p) {
                if (!p.replica.isLeader()) {
                    continue;
                }
                dev.varve.broker.replication.LeaderState l = p.replica.leader();
                leaders++;
                int isr = l.isr().size();
                if (isr < l.replicas().size()) {
                    under++;
                }
                if (isr < l.minInsyncReplicas()) {
                    underMin++;
                }
            }
        }
        return new ReplicaCounts(all, leaders, under, underMin);
    }

    /** The partitions this broker leads. */
    public Collection<TopicPartition> leaderPartitions() {
        List<TopicPartition> out = new ArrayList<>();
        for (Partition p : partitions.values()) {
            if (isLeader(p.tp)) {
                out.add(p.tp);
            }
        }
        return out;
    }

    @Override
    public void close() {
        closed = true;
        fetchers.close();
        org.apache.kafka.common.replica.ReplicaSelector selector = replicaSelector;
        if (selector != null) {
            try {
                selector.close();
            } catch (java.io.IOException | RuntimeException e) {
                LOG.warn("closing replica.selector.class {} failed: {}", selector.getClass().getName(), e.toString());
            }
        }
        for (Partition p : partitions.values()) {
            List<Runnable> after;
            synchronized (p) {
                after = p.failAcks(Errors.NOT_LEADER_OR_FOLLOWER);
            }
            after.forEach(Runnable::run);
        }
    }
}
