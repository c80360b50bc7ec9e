package dev.varve.broker.cluster;

import dev.varve.broker.cluster.ReplicaFetcherManager.FollowerPartition;
import dev.varve.broker.cluster.ReplicaFetcherManager.Leader;
import dev.varve.broker.replication.FollowerFetchSession;
import dev.varve.broker.replication.FollowerReplica;
import dev.varve.broker.replication.FollowerTruncation;
import dev.varve.broker.replication.ReplicaLog;
import dev.varve.storage.LeaderEpochCache;
import dev.varve.storage.PartitionLog;
import org.apache.kafka.clients.ClientResponse;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.CorruptRecordException;
import org.apache.kafka.common.errors.KafkaStorageException;
import org.apache.kafka.common.message.FetchResponseData;
import org.apache.kafka.common.message.ListOffsetsRequestData.ListOffsetsPartition;
import org.apache.kafka.common.message.ListOffsetsRequestData.ListOffsetsTopic;
import org.apache.kafka.common.message.ListOffsetsResponseData.ListOffsetsPartitionResponse;
import org.apache.kafka.common.message.ListOffsetsResponseData.ListOffsetsTopicResponse;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
import org.apache.kafka.common.record.internal.Records;
import org.apache.kafka.common.requests.FetchRequest;
import org.apache.kafka.common.requests.FetchResponse;
import org.apache.kafka.common.requests.ListOffsetsRequest;
import org.apache.kafka.common.requests.ListOffsetsResponse;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.common.utils.internals.LogContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongSupplier;

/**
 * Fetches a set of partitions from one leader over one connection, as a follower replica (Kafka's
 * {@code ReplicaFetcherThread}). Each round sends one Fetch for every partition not backing off — at
 * its log end, with its log start, the partition's leader epoch for fencing and the epoch of its last
 * batch for the leader's divergence check (KIP-320) — and handles the answer partition by partition:
 *
 * <table>
 *   <caption>per-partition answer</caption>
 *   <tr><th>answer</th><th>action</th></tr>
 *   <tr><td>records</td><td>append as follower; HW := min(leader HW, own log end); raise the log start
 *       to the leader's (at most to the own HW)</td></tr>
 *   <tr><td>diverging epoch</td><td>truncate where {@link FollowerTruncation#onLeaderAnswer} says (both
 *       logs agree below it); the next fetch carries the new last epoch, so a follower that never saw the
 *       leader's epoch converges over a few rounds (KIP-279)</td></tr>
 *   <tr><td>OFFSET_OUT_OF_RANGE</td><td>ask the leader's end and start (ListOffsets): above the leader's end,
 *       truncate to it; below its start, empty the log and start there</td></tr>
 *   <tr><td>any other error (NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, UNKNOWN_TOPIC_ID...)</td><td>keep
 *       the partition, retry after {@code replica.fetch.backoff.ms}: the broker re-targets it when
 *       metadata changes</td></tr>
 * </table>
 * A lost or refused connection backs off every partition and reconnects; a {@link KafkaStorageException}
 * from the local log drops the partition (it stays out until added again). Every fetched batch's CRC
 * is checked before anything is appended: a batch that fails is never appended (the sound batches
 * before it are), and the partition retries after a back-off — so one node's corrupt disk cannot
 * spread to its followers. Nothing ends the thread but
 * {@link #shutdown()}.
 *
 * <p>A follower log with records but no epochs (nothing to compare with the leader's) is first truncated
 * to its high watermark ({@link FollowerTruncation#withoutLocalEpochs}), as Kafka does.
 *
 * <p>Thread-safety: the partition map is guarded by {@code lock}, which the thread also holds while it
 * changes a log (appends, truncations), never while it waits on the network. A partition's state is a new
 * object each time it is added, and a response is applied only to the very state object (and log end) it
 * was requested for: so once {@link #removePartitions} returns, this thread never touches those logs
 * again, and a response to a replaced partition (new epoch or leader) is dropped.
 */
final class ReplicaFetcherThread extends Thread {
    private static final Logger LOG = LoggerFactory.getLogger(ReplicaFetcherThread.class);
    /**
     * Fetch v12 brings LastFetchedEpoch/DivergingEpoch, which truncation relies on (no OffsetForLeaderEpoch
     * round); v13 topic ids, which the fetch session names partitions by.
     */
    private static final short MIN_FETCH_VERSION = 13;
    /** Upper bound of one idle wait, so a thread re-checks its state now and then whatever happens. */
    private static final long MAX_IDLE_WAIT_MS = 1_000;
    /** Back-off after the leader served a batch that fails its CRC (it will not heal in 100 ms). */
    private static final long CORRUPT_BACKOFF_MS = 1_000;

    /**
     * One partition's fetch state: a new object whenever the partition is (re)added. The fields are
     * written by the fetcher thread under {@code lock} (so that thread may read them without it).
     */
    private static final class PartitionState {
        final FollowerPartition target;
        /** Not fetched before this time (back-off after an error). */
        long retryAtMs;
        /** The leader answered OFFSET_OUT_OF_RANGE: find where to restart before fetching again. */
        boolean outOfRange;
        /** The check for a log without epochs has run. */
        boolean started;
        /** The log as the shared follower logic sees it. */
        final ReplicaLog replicaLog;
        /** How far behind the leader's high watermark the log ended after the last answer for it. */
        long lag;

        PartitionState(FollowerPartition target) {
            this.target = target;
            this.replicaLog = new StorageReplicaLog(target.log());
        }

        PartitionLog log() {
            return target.log();
        }

        TopicPartition tp() {
            return target.tp();
        }
    }

    private final Leader leader;
    private final int localBrokerId;
    private final LongSupplier brokerEpoch;
    private final ReplicaFetcherConfig config;
    private final Time time;
    private final String prefix;
    /** The incremental fetch session with this leader (fetcher thread only). */
    private final FollowerFetchSession<PartitionState> fetchSession = new FollowerFetchSession<>();
    private final Runnable afterAnswer;
    private final LeaderConnection connection;
    /**
     * Guards {@link #partitions} and every log append. Fair, and an answer is applied one partition
     * at a time under it: a catching-up fetcher otherwise re-took it after each answer before the
     * metadata thread waiting in {@link #removePartitions} got a CPU, and on a loaded machine a
     * leadership change waited there for a minute (ScaleClusterTest's resync).
     */
    private final ReentrantLock lock = new ReentrantLock(true);
    private final Condition changed = lock.newCondition();
    private final Map<TopicPartition, PartitionState> partitions = new LinkedHashMap<>();
    private volatile boolean running = true;
    /** For logging a lost leader once, not every back-off (fetcher thread only). */
    private boolean leaderReachable = true;

    private final java.util.function.Supplier<ReplicationQuotas> quotas;
    /** How often a throttled partition checks whether the follower rate allows it again. */
    private static final long THROTTLE_RECHECK_MS = 100;

    ReplicaFetcherThread(Leader leader, int fetcherId, int localBrokerId, LongSupplier brokerEpoch,
                         ReplicaFetcherConfig config, Time time) {
        this(leader, fetcherId, localBrokerId, brokerEpoch, config, time, () -> null);
    }

    ReplicaFetcherThread(Leader leader, int fetcherId, int localBrokerId, LongSupplier brokerEpoch,
                         ReplicaFetcherConfig config, Time time, java.util.function.Supplier<ReplicationQuotas> quotas) {
        this(leader, fetcherId, localBrokerId, brokerEpoch, config, time, quotas, () -> { });
    }

    /** {@code afterAnswer} runs after each answer is handled (the recovery-point checkpoint after truncations). */
    ReplicaFetcherThread(Leader leader, int fetcherId, int localBrokerId, LongSupplier brokerEpoch,
                         ReplicaFetcherConfig config, Time time, java.util.function.Supplier<ReplicationQuotas> quotas,
                         Runnable afterAnswer) {
        this(leader, fetcherId, localBrokerId, brokerEpoch, config, time, quotas, afterAnswer, InterBrokerTransport.PLAINTEXT);
    }

    /** {@code transport} makes the connection to the leader (the inter-broker listener's protocol). */
    ReplicaFetcherThread(Leader leader, int fetcherId, int localBrokerId, LongSupplier brokerEpoch,
                         ReplicaFetcherConfig config, Time time, java.util.function.Supplier<ReplicationQuotas> quotas,
                         Runnable afterAnswer, InterBrokerTransport transport) {
        super("replica-fetcher-" + leader.brokerId() + "-" + fetcherId);
        setDaemon(true);
        this.leader = leader;
        this.localBrokerId = localBrokerId;
        this.brokerEpoch = brokerEpoch;
        this.config = config;
        this.time = time;
        this.quotas = quotas;
        this.afterAnswer = afterAnswer;
        this.prefix = "[ReplicaFetcher replicaId=" + localBrokerId + ", leaderId=" + leader.brokerId()
                + ", fetcherId=" + fetcherId + "] ";
        this.connection = new LeaderConnection(new Node(leader.brokerId(), leader.host(), leader.port()),
                "broker-" + localBrokerId + "-fetcher-" + fetcherId, config.socketTimeoutMs(), time, new LogContext(prefix),
                transport);
    }

    Leader leader() {
        return leader;
    }

    /** Starts (or restarts, when the target differs) fetching these partitions. */
    void addPartitions(Collection<FollowerPartition> added) {
        lock.lock();
        try {
            for (FollowerPartition p : added) {
                PartitionState current = partitions.get(p.tp());
                if (current == null || !current.target.equals(p)) {
                    partitions.put(p.tp(), new PartitionState(p));
                }
            }
            updateMaxLag(); // a replaced partition starts at no known lag
            changed.signalAll();
        } finally {
            lock.unlock();
        }
        if (!added.isEmpty()) {
            LOG.info("{}added {} partition(s)", prefix, added.size());
            LOG.debug("{}added {}", prefix, added.stream().map(p -> p.tp() + "@epoch " + p.leaderEpoch()).toList());
        }
    }

    /** Stops fetching these partitions; once this returns the thread never touches their logs again. */
    void removePartitions(Collection<TopicPartition> removed) {
        lock.lock();
        try {
            partitions.keySet().removeAll(removed);
            updateMaxLag();
        } finally {
            lock.unlock();
        }
    }

    Set<TopicPartition> partitions() {
        lock.lock();
        try {
            return Set.copyOf(partitions.keySet());
        } finally {
            lock.unlock();
        }
    }

    /** The targets of every partition (to move them to a new thread). */
    List<FollowerPartition> targets() {
        lock.lock();
        try {
            return partitions.values().stream().map(s -> s.target).toList();
        } finally {
            lock.unlock();
        }
    }

    /** Stops the thread and waits for it; closes the connection. */
    void shutdown() {
        running = false;
        lock.lock();
        try {
            changed.signalAll();
        } finally {
            lock.unlock();
        }
        connection.wakeup();
        boolean interrupted = false;
        while (isAlive()) {
            try {
                join();
            } catch (InterruptedException e) {
                interrupted = true;
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    private boolean isRunning() {
        return running;
    }

    @Override
    public void run() {
        LOG.debug("{}started", prefix);
        try {
            while (running) {
                try {
                    fetchOnce();
                } catch (Throwable t) {
                    LOG.error("{}unexpected error; backing off {} ms", prefix, config.fetchBackoffMs(), t);
                    fetchSession.handleError(); // the leader may not have seen what the session recorded as sent
                    backOffAll();
                    awaitChange();
                }
            }
        } finally {
            connection.close();
            LOG.debug("{}stopped", prefix);
        }
    }

    /** One round: connect if needed, settle out-of-range partitions, one fetch, apply its answer. */
    private void fetchOnce() {
        List<PartitionState> due = duePartitions();
        if (due.isEmpty()) {
            awaitChange();
            return;
        }
        if (!connection.awaitReady(this::isRunning)) {
            leaderUnreachable(due, "cannot connect to " + leader.host() + ":" + leader.port());
            return;
        }
        for (PartitionState s : due) {
            if (s.outOfRange) {
                resolveOutOfRange(s);
            }
        }
        FollowerFetchSession.Request<PartitionState> fetch = buildFetch();
        if (fetch == null) {
            return;
        }
        ClientResponse response = connection.roundTrip(new FetchRequest.Builder(MIN_FETCH_VERSION, ApiKeys.FETCH.latestVersion(),
                localBrokerId, brokerEpoch.getAsLong(), config.fetchWaitMaxMs(), config.fetchMinBytes(), fetch.toSend())
                .removed(fetch.toForget())
                .setMaxBytes(config.fetchResponseMaxBytes())
                .metadata(fetch.metadata()), this::isRunning);
        if (response != null) {
            handleFetchResponse(response, fetch);
        }
    }

    private List<PartitionState> duePartitions() {
        long now = time.milliseconds();
        lock.lock();
        try {
            return partitions.values().stream().filter(s -> s.retryAtMs <= now).toList();
        } finally {
            lock.unlock();
        }
    }

    /** Waits until a partition is due, the partitions change or the thread stops. */
    private void awaitChange() {
        lock.lock();
        try {
            long now = time.milliseconds();
            long waitMs = MAX_IDLE_WAIT_MS;
            for (PartitionState s : partitions.values()) {
                waitMs = Math.min(waitMs, s.retryAtMs - now);
            }
            if (running && waitMs > 0) {
                changed.await(waitMs, TimeUnit.MILLISECONDS);
            }
        } catch (InterruptedException e) {
            // Shutdown does not interrupt (it would close the selector's channels); an interrupt from
            // elsewhere must not end the thread either.
            LOG.warn("{}interrupted; ignoring (use shutdown)", prefix);
        } finally {
            lock.unlock();
        }
    }

    // ---------------------------------------------------------------- fetch

    /**
     * The next fetch: every partition not backing off, at its log end, with its log start, the partition's
     * leader epoch and the epoch of its last batch. In an incremental fetch session (KIP-227) the leader
     * keeps the partitions and their positions, so the request carries only what changed and the answer
     * only partitions with news. Null when no partition is due.
     */
    private FollowerFetchSession.Request<PartitionState> buildFetch() {
        long now = time.milliseconds();
        lock.lock();
        try {
            fetchSession.begin();
            ReplicationQuotas q = quotas.get();
            for (PartitionState s : new ArrayList<>(partitions.values())) {
                if (s.retryAtMs > now || s.outOfRange) {
                    continue;
                }
                if (q != null && q.throttleFollower(s.tp())) {
                    // follower.replication.throttled.rate reached: this partition waits a moment
                    s.retryAtMs = now + THROTTLE_RECHECK_MS;
                    continue;
                }
                try {
                    if (!s.started) {
                        truncateIfNoEpochs(s);
                        s.started = true;
                    }
                    PartitionLog log = s.log();
                    OptionalInt lastEpoch = log.epochCache().latestEpoch();
                    fetchSession.add(s, s.tp(), s.target.topicId(), log.logEndOffset(), log.logStartOffset(),
                            s.target.leaderEpoch(), lastEpoch.orElse(-1), config.fetchMaxBytes());
                } catch (RuntimeException e) {
                    failed(s, e, now);
                }
            }
            return fetchSession.build();
        } finally {
            lock.unlock();
        }
    }

    /** A log with records but no epoch information cannot be compared with the leader's: cut to the HW (Kafka's rule). */
    private void truncateIfNoEpochs(PartitionState s) {
        long endBefore = s.log().logEndOffset();
        FollowerReplica.start(s.replicaLog).ifPresent(step -> LOG.info(
                "{}{} has no leader epochs: truncated from {} to its high watermark {}", prefix, s.tp(), endBefore,
                step.truncationOffset()));
    }

    private void handleFetchResponse(ClientResponse response, FollowerFetchSession.Request<PartitionState> fetch) {
        List<PartitionState> states = new ArrayList<>(fetch.partitions().size());
        fetch.partitions().forEach(sent -> states.add(sent.state()));
        if (response.wasDisconnected() || response.versionMismatch() != null || response.authenticationException() != null) {
            fetchSession.handleError();
            leaderUnreachable(states, failureOf(response));
            return;
        }
        leaderReachable(states.size());
        FetchResponse body = (FetchResponse) response.responseBody();
        if (!fetchSession.handleResponse(body.data())) {
            // the session is gone (evicted, the leader restarted) or out of step: the next fetch is full
            if (body.error() == Errors.FETCH_SESSION_ID_NOT_FOUND || body.error() == Errors.INVALID_FETCH_SESSION_EPOCH
                    || body.error() == Errors.FETCH_SESSION_TOPIC_ID_ERROR || body.error() == Errors.NONE) {
                LOG.debug("{}fetch session refused ({}); fetching in full", prefix, body.error());
                return;
            }
        }
        if (body.error() != Errors.NONE) {
            LOG.warn("{}fetch failed: {}; backing off {} ms", prefix, body.error(), config.fetchBackoffMs());
            backOff(states);
            return;
        }
        long now = time.milliseconds();
        notLeaderYet.clear();
        // only the partitions with news: an idle incremental answer names none
        for (FetchResponseData.FetchableTopicResponse t : body.data().responses()) {
            for (FetchResponseData.PartitionData pd : t.partitions()) {
                FollowerFetchSession.Sent<PartitionState> sent = fetchSession.sentFor(t.topicId(), pd.partitionIndex());
                if (sent == null) {
                    continue;
                }
                lock.lock(); // per partition: a removal waits for one partition's append, not the whole answer's
                try {
                    PartitionState s = sent.state();
                    // Removed or re-added while the fetch was in flight, or the log moved: the answer is stale.
                    if (partitions.get(s.tp()) != s || s.log().logEndOffset() != sent.fetchOffset()) {
                        continue;
                    }
                    try {
                        handlePartition(s, pd, now);
                    } catch (RuntimeException ex) {
                        failed(s, ex, now);
                    }
                } finally {
                    lock.unlock();
                }
            }
        }
        if (!body.data().responses().isEmpty()) {
            lock.lock();
            try {
                updateMaxLag();
            } finally {
                lock.unlock();
            }
        }
        if (!movedHighWatermarks.isEmpty()) {
            // consumers reading from this follower wait for its high watermark: wake them once per answer
            List<TopicPartition> moved = List.copyOf(movedHighWatermarks);
            movedHighWatermarks.clear();
            try {
                highWatermarksMoved.accept(moved);
            } catch (RuntimeException e) {
                LOG.warn("{}waking the fetches waiting on {} partition(s) failed", prefix, moved.size(), e);
            }
        }
        afterTruncation();
        if (!notLeaderYet.isEmpty()) {
            // one line per answer, not per partition: a leader taking on thousands of partitions answers
            // NOT_LEADER_OR_FOLLOWER for all of them until it has applied the same metadata
            LOG.info("{}{} partition(s) not served by the leader yet ({}, ...: {}); retrying in {} ms (until metadata moves them)",
                    prefix, notLeaderYet.size(), notLeaderYet.get(0).tp(), notLeaderYetError, config.fetchBackoffMs());
        }
    }

    /** Checkpoints recovery points lowered by truncations of the last answer, before anything more is appended. */
    private void afterTruncation() {
        try {
            afterAnswer.run();
        } catch (RuntimeException e) {
            LOG.error("{}cannot checkpoint the recovery points lowered by truncation", prefix, e);
        }
    }

    /** Fetcher thread only: partitions of the last answer the leader does not serve (yet), for one summary line. */
    private final List<PartitionState> notLeaderYet = new ArrayList<>();
    private Errors notLeaderYetError = Errors.NONE;

    private void handlePartition(PartitionState s, FetchResponseData.PartitionData pd, long now) {
        Errors error = Errors.forCode(pd.errorCode());
        Optional<FetchResponseData.EpochEndOffset> diverging = FetchResponse.divergingEpoch(pd);
        switch (FollowerReplica.classify(error, diverging.isPresent())) {
            case DIVERGING -> truncateOnDivergence(s, diverging.get(), now);
            case RECORDS -> append(s, pd);
            case OUT_OF_RANGE -> s.outOfRange = true;
            case NOT_SERVED_YET -> {
                LOG.debug("{}{} at leader epoch {}: {}; retrying in {} ms (until metadata moves it)", prefix, s.tp(),
                        s.target.leaderEpoch(), error, config.fetchBackoffMs());
                notLeaderYet.add(s);
                notLeaderYetError = error;
                s.retryAtMs = now + config.fetchBackoffMs();
            }
            case OTHER_ERROR -> {
                LOG.warn("{}{}: leader answered {}; retrying in {} ms", prefix, s.tp(), error, config.fetchBackoffMs());
                s.retryAtMs = now + config.fetchBackoffMs();
            }
        }
    }

    private volatile java.util.function.LongConsumer replicatedBytes = bytes -> { };

    /** Told the size of every batch run this thread appends to a follower log. */
    void setReplicatedBytes(java.util.function.LongConsumer replicatedBytes) {
        this.replicatedBytes = replicatedBytes;
    }

    private volatile java.util.function.Consumer<java.util.Collection<TopicPartition>> highWatermarksMoved = tps -> { };
    /** The partitions whose high watermark the answer being handled moved (fetcher thread only). */
    private final List<TopicPartition> movedHighWatermarks = new ArrayList<>();

    void setHighWatermarksMoved(java.util.function.Consumer<java.util.Collection<TopicPartition>> moved) {
        this.highWatermarksMoved = moved;
    }

    private void append(PartitionState s, FetchResponseData.PartitionData pd) {
        PartitionLog log = s.log();
        MemoryRecords records = wholeBatches(FetchResponse.recordsOrFail(pd));
        if (records.sizeInBytes() > 0) {
            MutableRecordBatch first = records.batches().iterator().next();
            long end = log.logEndOffset();
            if (end == log.logStartOffset() && first.baseOffset() < end && first.lastOffset() >= end) {
                // An empty log started at an offset inside a batch (the leader's log start after a
                // DeleteRecords to the middle of one): start it at the batch instead; the leader's log
                // start offset in this same answer raises the start again below.
                LOG.info("{}{}: first fetched batch {}-{} starts below the empty log's start {}; restarting the log at {}",
                        prefix, s.tp(), first.baseOffset(), first.lastOffset(), end, first.baseOffset());
                log.truncateFullyAndStartAt(first.baseOffset());
            }
            try {
                log.appendAsFollower(records);
            } catch (CorruptRecordException e) {
                // A batch failed its CRC (the leader's disk rotted, or the bytes were damaged on the way):
                // keep the sound batches before it, never the damaged one, and ask again after a back-off.
                MemoryRecords sound = soundPrefix(records);
                if (sound.sizeInBytes() > 0) {
                    log.appendAsFollower(sound);
                }
                throw e;
            }
            replicatedBytes.accept(records.sizeInBytes());
            ReplicationQuotas q = quotas.get();
            if (q != null && q.isFollowerThrottled(s.tp())) {
                q.follower().record(records.sizeInBytes());
            }
        }
        long hwBefore = log.highWatermark();
        FollowerReplica.afterRecords(s.replicaLog, pd.highWatermark(), pd.logStartOffset());
        if (log.highWatermark() != hwBefore) {
            movedHighWatermarks.add(s.tp());
        }
        s.lag = Math.max(0, pd.highWatermark() - log.logEndOffset());
    }

    private volatile long maxLag;

    /** Under the lock: the largest lag of this thread's partitions (Kafka's ReplicaFetcherManager MaxLag, per thread). */
    private void updateMaxLag() {
        long max = 0;
        for (PartitionState p : partitions.values()) {
            max = Math.max(max, p.lag);
        }
        maxLag = max;
    }

    /** In messages: how far the most lagging partition of this thread is behind its leader's high watermark. */
    long maxLag() {
        return maxLag;
    }

    /** The batches before the first one that is not a v2 batch with a matching CRC. */
    static MemoryRecords soundPrefix(MemoryRecords records) {
        int sound = 0;
        for (MutableRecordBatch batch : records.batches()) {
            if (batch.magic() != org.apache.kafka.common.record.internal.RecordBatch.MAGIC_VALUE_V2 || !batch.isValid()) {
                break;
            }
            sound += batch.sizeInBytes();
        }
        ByteBuffer buffer = records.buffer();
        buffer.limit(buffer.position() + sound);
        return MemoryRecords.readableRecords(buffer.slice());
    }

    /** The record set without a partial batch at its end (a leader may cut one at the size limit). */
    static MemoryRecords wholeBatches(Records records) {
        if (!(records instanceof MemoryRecords memory)) {
            throw new IllegalStateException("fetched records are not in memory: " + records.getClass());
        }
        int whole = 0;
        for (MutableRecordBatch batch : memory.batches()) {
            whole += batch.sizeInBytes();
        }
        if (whole == memory.sizeInBytes()) {
            return memory;
        }
        ByteBuffer buffer = memory.buffer();
        buffer.limit(buffer.position() + whole);
        return MemoryRecords.readableRecords(buffer.slice());
    }

    private void truncateOnDivergence(PartitionState s, FetchResponseData.EpochEndOffset diverging, long now) {
        FollowerReplica.Divergence d = FollowerReplica.truncateOnDivergence(s.replicaLog,
                new LeaderEpochCache.EpochEndOffset(diverging.epoch(), diverging.endOffset()));
        FollowerTruncation.Step step = d.step();
        if (step.belowHighWatermark()) {
            LOG.warn("{}{}: truncated to {}, below the high watermark (an unclean election or lost data)", prefix,
                    s.tp(), step.truncationOffset());
        }
        LOG.info("{}{}: leader's epoch {} ends at {}; truncated from {} to {} ({}{})", prefix, s.tp(), diverging.epoch(),
                diverging.endOffset(), d.logEndBefore(), s.log().logEndOffset(), step.reason(),
                step.complete() ? "" : ", asking again with epoch " + s.log().epochCache().latestEpoch());
        if (!d.changed()) {
            // Nothing changed: asking again at once would get the same answer. Should not happen with a sane leader.
            LOG.warn("{}{}: diverging epoch {} changed nothing; retrying in {} ms", prefix, s.tp(), diverging,
                    config.fetchBackoffMs());
            s.retryAtMs = now + config.fetchBackoffMs();
        }
    }

    // ---------------------------------------------------------------- out of range

    /**
     * The leader refused the fetch offset: above its log end, truncate to that end (the leader lost
     * records, e.g. after an unclean election); below its log start, the records are gone for good:
     * empty the log and start at the leader's start. Runs the network calls without the lock.
     */
    private void resolveOutOfRange(PartitionState s) {
        OptionalLong leaderEnd = leaderOffset(s, ListOffsetsRequest.LATEST_TIMESTAMP);
        OptionalLong leaderStart = leaderEnd.isPresent() ? leaderOffset(s, ListOffsetsRequest.EARLIEST_TIMESTAMP) : OptionalLong.empty();
        long now = time.milliseconds();
        lock.lock();
        try {
            if (partitions.get(s.tp()) != s) {
                return;
            }
            s.outOfRange = false;
            if (leaderStart.isEmpty()) {
                s.retryAtMs = now + config.fetchBackoffMs();
                return;
            }
            long localEnd = s.log().logEndOffset();
            try {
                switch (FollowerReplica.resolveOutOfRange(s.replicaLog, leaderStart.getAsLong(), leaderEnd.getAsLong())) {
                    case TRUNCATED_TO_LEADER_END -> LOG.warn("{}{}: log end {} was above the leader's {}; truncated to it",
                            prefix, s.tp(), localEnd, leaderEnd.getAsLong());
                    case RESTARTED_AT_LEADER_START -> LOG.info("{}{}: log end {} was below the leader's log start {};"
                            + " restarted the log there", prefix, s.tp(), localEnd, leaderStart.getAsLong());
                    case RETRY -> {
                        LOG.info("{}{}: offset {} was out of range but is within the leader's [{}, {}] now; retrying in {} ms",
                                prefix, s.tp(), localEnd, leaderStart.getAsLong(), leaderEnd.getAsLong(), config.fetchBackoffMs());
                        s.retryAtMs = now + config.fetchBackoffMs();
                    }
                }
            } catch (RuntimeException e) {
                failed(s, e, now);
            }
        } finally {
            lock.unlock();
        }
        afterTruncation();
    }

    /** ListOffsets as a replica (the leader answers its log end for LATEST), fenced by the partition's epoch. */
    private OptionalLong leaderOffset(PartitionState s, long timestamp) {
        TopicPartition tp = s.tp();
        ListOffsetsRequest.Builder request = ListOffsetsRequest.Builder.forReplica(ApiKeys.LIST_OFFSETS.latestVersion(), localBrokerId)
                .setTargetTimes(List.of(new ListOffsetsTopic().setName(tp.topic()).setPartitions(List.of(
                        new ListOffsetsPartition().setPartitionIndex(tp.partition())
                                .setCurrentLeaderEpoch(s.target.leaderEpoch()).setTimestamp(timestamp)))));
        ClientResponse response = connection.roundTrip(request, this::isRunning);
        if (response == null) {
            return OptionalLong.empty();
        }
        if (response.wasDisconnected() || response.versionMismatch() != null || response.authenticationException() != null) {
            LOG.warn("{}{}: ListOffsets failed: {}", prefix, tp, failureOf(response));
            return OptionalLong.empty();
        }
        for (ListOffsetsTopicResponse t : ((ListOffsetsResponse) response.responseBody()).data().topics()) {
            for (ListOffsetsPartitionResponse p : t.partitions()) {
                if (t.name().equals(tp.topic()) && p.partitionIndex() == tp.partition()) {
                    if (p.errorCode() == Errors.NONE.code()) {
                        return OptionalLong.of(p.offset());
                    }
                    LOG.warn("{}{}: ListOffsets answered {}", prefix, tp, Errors.forCode(p.errorCode()));
                    return OptionalLong.empty();
                }
            }
        }
        LOG.warn("{}{}: ListOffsets answer does not mention the partition", prefix, tp);
        return OptionalLong.empty();
    }

    // ---------------------------------------------------------------- errors and back-off

    /** A local failure while handling a partition: a storage failure drops it, anything else backs it off. Lock held. */
    private void failed(PartitionState s, RuntimeException e, long now) {
        if (e instanceof KafkaStorageException) {
            LOG.error("{}{}: the local log failed; no longer fetching it", prefix, s.tp(), e);
            partitions.remove(s.tp(), s);
        } else if (e instanceof CorruptRecordException) {
            LOG.error("{}{}: the leader served data that fails its CRC ({}); appended only the sound batches before it,"
                    + " retrying in {} ms", prefix, s.tp(), e.getMessage(), CORRUPT_BACKOFF_MS);
            s.retryAtMs = now + CORRUPT_BACKOFF_MS;
        } else {
            LOG.error("{}{}: error handling the partition; retrying in {} ms", prefix, s.tp(), config.fetchBackoffMs(), e);
            s.retryAtMs = now + config.fetchBackoffMs();
        }
    }

    private void leaderUnreachable(List<PartitionState> states, String why) {
        if (!running) {
            return;
        }
        if (leaderReachable) {
            LOG.warn("{}leader unreachable: {}; retrying every {} ms", prefix, why, config.fetchBackoffMs());
            leaderReachable = false;
        } else {
            LOG.debug("{}leader still unreachable: {}", prefix, why);
        }
        backOff(states);
    }

    private void leaderReachable(int partitionCount) {
        if (!leaderReachable) {
            LOG.info("{}leader reachable again; fetching {} partitions", prefix, partitionCount);
            leaderReachable = true;
        }
    }

    private static String failureOf(ClientResponse response) {
        if (response.versionMismatch() != null) {
            return "version mismatch: " + response.versionMismatch().getMessage();
        }
        if (response.authenticationException() != null) {
            return "authentication failed: " + response.authenticationException().getMessage();
        }
        return response.wasTimedOut() ? "request timed out" : "disconnected";
    }

    private void backOff(List<PartitionState> states) {
        long retryAt = time.milliseconds() + config.fetchBackoffMs();
        lock.lock();
        try {
            for (PartitionState s : states) {
                s.retryAtMs = Math.max(s.retryAtMs, retryAt);
            }
        } finally {
            lock.unlock();
        }
    }

    private void backOffAll() {
        lock.lock();
        try {
            backOff(List.copyOf(partitions.values()));
        } finally {
            lock.unlock();
        }
    }
}
