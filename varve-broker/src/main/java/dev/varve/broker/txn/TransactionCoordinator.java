package dev.varve.broker.txn;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.utils.Time;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.function.Predicate;

/**
 * The transaction coordinator of the {@code __transaction_state} partitions this broker leads, with
 * Kafka's semantics for transactions V1 clients (those that add partitions with AddPartitionsToTxn):
 * InitProducerId with a transactional id, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn, the abort of
 * timed-out transactions and the expiry of idle transactional ids.
 *
 * <p>Each transactional id belongs to one partition ({@link Log#partitionFor}); the coordinator serves
 * it only while that partition is loaded here ({@link #becomeCoordinator} then {@link #completeLoad};
 * NOT_COORDINATOR otherwise, COORDINATOR_LOAD_IN_PROGRESS while loading). A transition is written to
 * the log first and becomes current only once the write is replicated; while it is in flight other
 * requests for the id get CONCURRENT_TRANSACTIONS and retry, as Kafka's clients do. An end of
 * transaction is answered once PrepareCommit or PrepareAbort is written; the markers follow
 * ({@link MarkerWriter}), then CompleteCommit or CompleteAbort. A partition loaded with a transaction in
 * a Prepare state sends its markers again, so an end survives the coordinator's failover.
 *
 * <p>Thread-safety: every method may be called from any thread and returns without waiting for a
 * write; state is guarded by this object's monitor, and the log and marker callbacks never run under it.
 */
public final class TransactionCoordinator {
    private static final Logger LOG = LoggerFactory.getLogger(TransactionCoordinator.class);

    /** {@code __transaction_state}, as the coordinator writes it. */
    public interface Log {
        /** The partition that holds a transactional id. */
        int partitionFor(String transactionalId);

        /**
         * Appends {@code metadata}'s record (a tombstone for Dead) to {@code partition} as its leader in
         * {@code coordinatorEpoch}; completes once every in-sync replica has it, exceptionally with a
         * Kafka {@link org.apache.kafka.common.errors.ApiException} otherwise. Must not block.
         */
        CompletableFuture<Void> write(int partition, int coordinatorEpoch, TxnMetadata metadata);
    }

    /** Writes transaction markers to the partitions of a transaction. */
    public interface MarkerWriter {
        /**
         * Writes the commit or abort marker of {@code producerId} at {@code producerEpoch} to every
         * partition, retrying what can be retried (a partition's leader moving, say); completes once each
         * partition has its marker, exceptionally only when it gives up (the coordinator epoch is stale,
         * or the writer is closing). {@code transactionVersion} is the transaction's (2: the leaders
         * refuse a marker whose epoch is not newer than the producer's, KIP-1228).
         */
        CompletableFuture<Void> write(String transactionalId, long producerId, short producerEpoch, int coordinatorEpoch,
                                      boolean commit, Set<TopicPartition> partitions, short transactionVersion);
    }

    /** New producer ids. */
    public interface ProducerIds {
        /**
         * @throws org.apache.kafka.common.errors.CoordinatorLoadInProgressException no id at hand yet
         */
        long next();
    }

    /**
     * @param maxTimeoutMs        {@code transaction.max.timeout.ms}: the largest timeout a producer may ask for
     * @param idExpirationMs      {@code transactional.id.expiration.ms}: an id idle this long is removed
     */
    public record Config(int maxTimeoutMs, long idExpirationMs) {
        /** Kafka's defaults: 15 minutes and 7 days. */
        public static final Config DEFAULTS = new Config(900_000, 604_800_000L);
    }

    /** InitProducerId's answer: an error, or the producer id and epoch to use. */
    public record InitResult(Errors error, long producerId, short producerEpoch) {
        static InitResult error(Errors error) {
            return new InitResult(error, RecordBatch.NO_PRODUCER_ID, RecordBatch.NO_PRODUCER_EPOCH);
        }
    }

    private static final class Entry {
        TxnMetadata current;
        /** A transition is being written (the id answers CONCURRENT_TRANSACTIONS meanwhile). */
        boolean pending;
        /**
         * Every marker of this Prepare state ({@link #current}) is written, but writing its Complete
         * state failed: {@link #retryCompletions} writes it again (never the markers).
         */
        boolean completionOwed;

        Entry(TxnMetadata current) {
            this.current = current;
        }
    }

    private static final class Owned {
        final int partition;
        final int coordinatorEpoch;
        boolean loaded;
        final Map<String, Entry> ids = new HashMap<>();

        Owned(int partition, int coordinatorEpoch) {
            this.partition = partition;
            this.coordinatorEpoch = coordinatorEpoch;
        }
    }

    private final Config config;
    private final Log log;
    private final MarkerWriter markers;
    private final ProducerIds producerIds;
    private final Time time;
    private final Map<Integer, Owned> owned = new HashMap<>();

    public TransactionCoordinator(Config config, Log log, MarkerWriter markers, ProducerIds producerIds, Time time) {
        this.config = config;
        this.log = log;
        this.markers = markers;
        this.producerIds = producerIds;
        this.time = time;
    }

    // ---------------------------------------------------------------- partitions

    /** This broker now leads {@code partition} in {@code coordinatorEpoch}: its ids are loading. */
    public synchronized void becomeCoordinator(int partition, int coordinatorEpoch) {
        owned.put(partition, new Owned(partition, coordinatorEpoch));
    }

    /**
     * The load of {@code partition} in {@code coordinatorEpoch} read {@code ids} (the last record of
     * each id; Dead ones left out). Ignored when the partition moved on meanwhile. Transactions found
     * in PrepareCommit or PrepareAbort get their markers again.
     */
    public void completeLoad(int partition, int coordinatorEpoch, Map<String, TxnMetadata> ids) {
        List<Runnable> resume = new ArrayList<>();
        synchronized (this) {
            Owned o = owned.get(partition);
            if (o == null || o.coordinatorEpoch != coordinatorEpoch || o.loaded) {
                return;
            }
            for (TxnMetadata m : ids.values()) {
                if (m.state() == TransactionState.DEAD) {
                    continue;
                }
                Entry e = new Entry(m);
                o.ids.put(m.transactionalId(), e);
                if (m.state() == TransactionState.PREPARE_COMMIT || m.state() == TransactionState.PREPARE_ABORT) {
                    resume.add(() -> sendMarkers(o, e, m));
                }
            }
            o.loaded = true;
        }
        LOG.info("Coordinating the transactions of __transaction_state-{} (epoch {}): {} id(s), {} end(s) resumed",
                partition, coordinatorEpoch, ids.size(), resume.size());
        resume.forEach(Runnable::run);
    }

    /** This broker no longer leads {@code partition}: its ids are forgotten (writes in flight are ignored). */
    public synchronized void resign(int partition) {
        owned.remove(partition);
    }

    /** {@link #resign} if the partition is still coordinated in {@code coordinatorEpoch} (a failed load). */
    public synchronized void resign(int partition, int coordinatorEpoch) {
        Owned o = owned.get(partition);
        if (o != null && o.coordinatorEpoch == coordinatorEpoch) {
            owned.remove(partition);
        }
    }

    /** Whether the id's partition is loaded here: NONE, NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS. */
    public synchronized Errors check(String transactionalId) {
        Owned o = owned.get(log.partitionFor(transactionalId));
        if (o == null) {
            return Errors.NOT_COORDINATOR;
        }
        return o.loaded ? Errors.NONE : Errors.COORDINATOR_LOAD_IN_PROGRESS;
    }

    /** The current metadata of a transactional id coordinated here, if any. */
    public synchronized Optional<TxnMetadata> describe(String transactionalId) {
        Owned o = owned.get(log.partitionFor(transactionalId));
        Entry e = o == null || !o.loaded ? null : o.ids.get(transactionalId);
        return e == null ? Optional.empty() : Optional.of(e.current);
    }

    /**
     * Whether this broker still coordinates {@code transactionalId}'s partition in {@code coordinatorEpoch}:
     * while it does not, markers it sent in that epoch are no longer wanted (Kafka's marker channel
     * drops those of a partition it resigned), since the next coordinator ends the transaction from the log.
     */
    public synchronized boolean coordinates(String transactionalId, int coordinatorEpoch) {
        Owned o = owned.get(log.partitionFor(transactionalId));
        return o != null && o.coordinatorEpoch == coordinatorEpoch;
    }

    /** Whether a partition coordinated here is still loading (ListTransactions answers COORDINATOR_LOAD_IN_PROGRESS). */
    public synchronized boolean anyLoading() {
        return owned.values().stream().anyMatch(o -> !o.loaded);
    }

    /** The metadata of every id coordinated here that {@code filter} accepts. */
    public synchronized List<TxnMetadata> list(Predicate<TxnMetadata> filter) {
        List<TxnMetadata> out = new ArrayList<>();
        for (Owned o : owned.values()) {
            if (o.loaded) {
                for (Entry e : o.ids.values()) {
                    if (filter.test(e.current)) {
                        out.add(e.current);
                    }
                }
            }
        }
        return out;
    }

    // ---------------------------------------------------------------- InitProducerId

    /**
     * InitProducerId with a transactional id. {@code expectedProducerId}/{@code expectedEpoch} are the
     * producer's current ones when it asks again after an error (KIP-360), else -1.
     */
    public CompletableFuture<InitResult> initProducerId(String transactionalId, int timeoutMs, long expectedProducerId,
                                                        short expectedEpoch) {
        if (transactionalId.isEmpty()) {
            return CompletableFuture.completedFuture(InitResult.error(Errors.INVALID_REQUEST));
        }
        if (timeoutMs <= 0 || timeoutMs > config.maxTimeoutMs()) {
            return CompletableFuture.completedFuture(InitResult.error(Errors.INVALID_TRANSACTION_TIMEOUT));
        }
        Optional<Short> expected = expectedProducerId == RecordBatch.NO_PRODUCER_ID
                ? Optional.empty() : Optional.of(expectedEpoch);
        Owned o;
        Entry e;
        TxnMetadata from;
        TxnMetadata next;
        TxnMetadata fenced = null;
        long now = time.milliseconds();
        synchronized (this) {
            o = owned.get(log.partitionFor(transactionalId));
            Errors notHere = notHere(o);
            if (notHere != null) {
                return CompletableFuture.completedFuture(InitResult.error(notHere));
            }
            e = o.ids.get(transactionalId);
            if (e == null) {
                long producerId;
                try {
                    producerId = producerIds.next();
                } catch (org.apache.kafka.common.errors.ApiException noId) {
                    return CompletableFuture.completedFuture(InitResult.error(Errors.forException(noId)));
                }
                e = new Entry(TxnMetadata.empty(transactionalId, producerId, RecordBatch.NO_PRODUCER_EPOCH, timeoutMs, now));
                o.ids.put(transactionalId, e);
            }
            if (e.pending) {
                return CompletableFuture.completedFuture(InitResult.error(Errors.CONCURRENT_TRANSACTIONS));
            }
            from = e.current;
            if (expected.isPresent() && !isValidProducerId(from, expectedProducerId, expectedEpoch)) {
                return CompletableFuture.completedFuture(InitResult.error(Errors.PRODUCER_FENCED));
            }
            try {
                switch (from.state()) {
                    case PREPARE_COMMIT, PREPARE_ABORT, PREPARE_EPOCH_FENCE, DEAD -> {
                        return CompletableFuture.completedFuture(InitResult.error(Errors.CONCURRENT_TRANSACTIONS));
                    }
                    case ONGOING -> {
                        // a new producer instance: fence the old one and abort its transaction; this one retries
                        fenced = TxnTransitions.fenceProducerEpoch(from);
                        e.current = fenced;
                        e.pending = true;
                        next = null;
                    }
                    default -> {
                        if (TxnTransitions.isEpochExhausted(from.producerEpoch())
                                && expected.map(x -> x == from.producerEpoch()).orElse(true)) {
                            long producerId;
                            try {
                                producerId = producerIds.next();
                            } catch (org.apache.kafka.common.errors.ApiException noId) {
                                return CompletableFuture.completedFuture(InitResult.error(Errors.forException(noId)));
                            }
                            next = TxnTransitions.rotateProducerId(from, producerId, timeoutMs, now, expected.isPresent());
                        } else {
                            next = TxnTransitions.incrementProducerEpoch(from, timeoutMs, expected, now);
                        }
                        e.pending = true;
                    }
                }
            } catch (ProducerFencedException refused) {
                return CompletableFuture.completedFuture(InitResult.error(Errors.PRODUCER_FENCED));
            }
        }
        if (fenced != null) {
            return endTransaction(o, e, fenced, false).thenApply(err ->
                    InitResult.error(err == Errors.NONE ? Errors.CONCURRENT_TRANSACTIONS : err));
        }
        TxnMetadata written = next;
        return write(o, e, from, written).thenApply(err -> err == Errors.NONE
                ? new InitResult(Errors.NONE, written.producerId(), written.producerEpoch())
                : InitResult.error(err));
    }

    /** Kafka's rule for the producer id a returning producer states (KIP-360). */
    private static boolean isValidProducerId(TxnMetadata m, long producerId, short epoch) {
        return m.producerEpoch() == RecordBatch.NO_PRODUCER_EPOCH
                || producerId == m.producerId()
                || (producerId == m.previousProducerId() && TxnTransitions.isEpochExhausted(epoch));
    }

    // ---------------------------------------------------------------- AddPartitionsToTxn / AddOffsetsToTxn

    /**
     * Adds partitions to the producer's transaction (starting one if none is open). One error for all
     * of them, as Kafka answers: NONE, INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED,
     * CONCURRENT_TRANSACTIONS (an end or another change in flight: retry), or a coordinator error.
     * AddOffsetsToTxn is this with the group's {@code __consumer_offsets} partition.
     */
    public CompletableFuture<Errors> addPartitions(String transactionalId, long producerId, short producerEpoch,
                                                   Set<TopicPartition> partitions) {
        // only transactions V1 clients send AddPartitionsToTxn (v0-3) and AddOffsetsToTxn, as Kafka's do
        return addPartitions(transactionalId, producerId, producerEpoch, partitions, (short) 0);
    }

    /**
     * {@link #addPartitions(String, long, short, Set)} with the transaction version of the request,
     * which the transaction records: a partition leader adding the partition of a transactions V2
     * produce (or TxnOffsetCommit) passes 2, a V1 client's request 0; -1 keeps the version the
     * transaction has.
     */
    public CompletableFuture<Errors> addPartitions(String transactionalId, long producerId, short producerEpoch,
                                                   Set<TopicPartition> partitions, short clientVersion) {
        if (transactionalId.isEmpty()) {
            return CompletableFuture.completedFuture(Errors.INVALID_REQUEST);
        }
        Owned o;
        Entry e;
        TxnMetadata from;
        TxnMetadata next;
        synchronized (this) {
            ProducerLookup found = findProducer(transactionalId, producerId, producerEpoch);
            if (found.error() != null) {
                return CompletableFuture.completedFuture(found.error());
            }
            o = found.owner();
            e = found.entry();
            from = e.current;
            if (e.pending || from.state() == TransactionState.PREPARE_COMMIT || from.state() == TransactionState.PREPARE_ABORT) {
                return CompletableFuture.completedFuture(Errors.CONCURRENT_TRANSACTIONS);
            }
            if (from.state() == TransactionState.ONGOING && from.partitions().containsAll(partitions)) {
                return CompletableFuture.completedFuture(Errors.NONE);
            }
            if (from.state() == TransactionState.DEAD || from.state() == TransactionState.PREPARE_EPOCH_FENCE) {
                return CompletableFuture.completedFuture(Errors.INVALID_TXN_STATE);
            }
            next = TxnTransitions.addPartitions(from, partitions, time.milliseconds(),
                    clientVersion >= 0 ? clientVersion : from.clientTransactionVersion());
            e.pending = true;
        }
        return write(o, e, from, next);
    }

    /**
     * A partition leader's question before a transactional write (AddPartitionsToTxn with VerifyOnly,
     * KIP-890 part 1): whether each partition is in the producer's transaction. Per partition NONE or
     * TRANSACTION_ABORTABLE (not in it); for all of them INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED,
     * CONCURRENT_TRANSACTIONS (the transaction is ending) or a coordinator error. Answered at once.
     */
    public synchronized Map<TopicPartition, Errors> verifyPartitions(String transactionalId, long producerId,
                                                                     short producerEpoch, Set<TopicPartition> partitions) {
        Map<TopicPartition, Errors> out = new HashMap<>();
        Errors all = null;
        Entry e = null;
        if (transactionalId.isEmpty()) {
            all = Errors.INVALID_REQUEST;
        } else {
            ProducerLookup found = findProducer(transactionalId, producerId, producerEpoch);
            if (found.error() != null) {
                all = found.error();
            } else {
                e = found.entry();
                TransactionState state = e.current.state();
                if (state == TransactionState.PREPARE_COMMIT || state == TransactionState.PREPARE_ABORT) {
                    all = Errors.CONCURRENT_TRANSACTIONS;
                }
            }
        }
        for (TopicPartition tp : partitions) {
            out.put(tp, all != null ? all
                    : e.current.partitions().contains(tp) ? Errors.NONE : Errors.TRANSACTION_ABORTABLE);
        }
        return out;
    }

    // ---------------------------------------------------------------- EndTxn

    /**
     * EndTxn from the producer: commit or abort its transaction. Answered once PrepareCommit or
     * PrepareAbort is written; a retry of an end that completed answers NONE, a retry of one still
     * sending markers CONCURRENT_TRANSACTIONS, the other outcome INVALID_TXN_STATE.
     */
    public CompletableFuture<Errors> endTransaction(String transactionalId, long producerId, short producerEpoch,
                                                    boolean commit) {
        return endTransactionV1(transactionalId, producerId, producerEpoch, commit);
    }

    /** EndTxn's answer: an error, or (transactions V2) the producer id and epoch to continue with. */
    public record EndResult(Errors error, long producerId, short producerEpoch) {
        static EndResult error(Errors error) {
            return new EndResult(error, RecordBatch.NO_PRODUCER_ID, RecordBatch.NO_PRODUCER_EPOCH);
        }
    }

    /**
     * EndTxn at {@code clientVersion} (2 for a transactions V2 client, EndTxn v5): V2 bumps the epoch
     * with every end and answers with the producer id and epoch to use next (a new producer id at epoch
     * 0 once the epoch is exhausted); a retry of an end that was written is recognised by the epoch one
     * below the current one. V2 also aborts a transaction with no partition in it (the client cannot
     * know whether its produce added one). Older versions: {@link #endTransaction(String, long, short, boolean)}.
     */
    public CompletableFuture<EndResult> endTransaction(String transactionalId, long producerId, short producerEpoch,
                                                       boolean commit, short clientVersion) {
        if (clientVersion < 2) {
            return endTransactionV1(transactionalId, producerId, producerEpoch, commit)
                    .thenApply(err -> err == Errors.NONE ? new EndResult(Errors.NONE, producerId, producerEpoch)
                            : EndResult.error(err));
        }
        if (transactionalId.isEmpty()) {
            return CompletableFuture.completedFuture(EndResult.error(Errors.INVALID_REQUEST));
        }
        Owned o;
        Entry e;
        TxnMetadata from;
        TxnMetadata prepared;
        synchronized (this) {
            o = owned.get(log.partitionFor(transactionalId));
            Errors notHere = notHere(o);
            if (notHere != null) {
                return CompletableFuture.completedFuture(EndResult.error(notHere));
            }
            e = o.ids.get(transactionalId);
            if (e == null) {
                return CompletableFuture.completedFuture(EndResult.error(Errors.INVALID_PRODUCER_ID_MAPPING));
            }
            TxnMetadata m = e.current;
            boolean retryOnOverflow = m.previousProducerId() == producerId && producerEpoch == Short.MAX_VALUE - 1
                    && m.producerEpoch() == 0;
            // a retry of this producer's own V2 end: the end bumped the epoch. Only an end written by a V2
            // client counts (Kafka looks at the epoch alone): a fenced V2 instance must not take the epoch of
            // a V1 instance whose end did not bump it (found by TxnSimulation)
            boolean retryOnBump = m.producerEpoch() == producerEpoch + 1 && m.usesTransactionsV2();
            boolean validEpoch = switch (m.state()) {
                case PREPARE_COMMIT, PREPARE_ABORT -> retryOnBump;
                case COMPLETE_COMMIT, COMPLETE_ABORT -> retryOnBump || retryOnOverflow || producerEpoch == m.producerEpoch();
                default -> producerEpoch == m.producerEpoch();
            };
            boolean retry = retryOnBump || retryOnOverflow;
            if (m.producerId() != producerId && !retryOnOverflow) {
                return CompletableFuture.completedFuture(EndResult.error(Errors.INVALID_PRODUCER_ID_MAPPING));
            }
            if (!validEpoch) {
                return CompletableFuture.completedFuture(EndResult.error(Errors.PRODUCER_FENCED));
            }
            if (e.pending) {
                return CompletableFuture.completedFuture(EndResult.error(Errors.CONCURRENT_TRANSACTIONS));
            }
            boolean noPartitionAdded;
            switch (m.state()) {
                case ONGOING -> noPartitionAdded = false;
                case COMPLETE_COMMIT, COMPLETE_ABORT -> {
                    boolean sameOutcome = commit == (m.state() == TransactionState.COMPLETE_COMMIT);
                    if (retry) {
                        return CompletableFuture.completedFuture(sameOutcome
                                ? new EndResult(Errors.NONE, m.producerId(), m.producerEpoch())
                                : EndResult.error(Errors.INVALID_TXN_STATE));
                    }
                    if (commit) {
                        return CompletableFuture.completedFuture(EndResult.error(Errors.INVALID_TXN_STATE));
                    }
                    noPartitionAdded = true; // an abort with nothing in the transaction
                }
                case EMPTY -> {
                    if (commit) {
                        return CompletableFuture.completedFuture(EndResult.error(Errors.INVALID_TXN_STATE));
                    }
                    noPartitionAdded = true;
                }
                case PREPARE_COMMIT -> {
                    return CompletableFuture.completedFuture(EndResult.error(commit ? Errors.CONCURRENT_TRANSACTIONS
                            : Errors.INVALID_TXN_STATE));
                }
                case PREPARE_ABORT -> {
                    return CompletableFuture.completedFuture(EndResult.error(commit ? Errors.INVALID_TXN_STATE
                            : Errors.CONCURRENT_TRANSACTIONS));
                }
                default -> {
                    return CompletableFuture.completedFuture(EndResult.error(Errors.INVALID_TXN_STATE));
                }
            }
            long nextProducerId = RecordBatch.NO_PRODUCER_ID;
            if (TxnTransitions.isEpochExhausted(m.producerEpoch())) {
                try {
                    nextProducerId = producerIds.next();
                } catch (org.apache.kafka.common.errors.ApiException noId) {
                    return CompletableFuture.completedFuture(EndResult.error(Errors.forException(noId)));
                }
            }
            from = m;
            prepared = TxnTransitions.prepareEnd(m, commit, (short) 2, nextProducerId, time.milliseconds(), noPartitionAdded);
            e.pending = true;
        }
        return writePrepared(o, e, from, prepared).thenApply(err -> {
            if (err != Errors.NONE) {
                return EndResult.error(err);
            }
            // the client sees MAX-1 followed by 0 of the next producer id, never the internal MAX
            return prepared.nextProducerId() != RecordBatch.NO_PRODUCER_ID
                    ? new EndResult(Errors.NONE, prepared.nextProducerId(), (short) 0)
                    : new EndResult(Errors.NONE, prepared.producerId(), prepared.producerEpoch());
        });
    }

    private CompletableFuture<Errors> endTransactionV1(String transactionalId, long producerId, short producerEpoch,
                                                       boolean commit) {
        if (transactionalId.isEmpty()) {
            return CompletableFuture.completedFuture(Errors.INVALID_REQUEST);
        }
        Owned o;
        Entry e;
        synchronized (this) {
            ProducerLookup found = findProducer(transactionalId, producerId, producerEpoch);
            if (found.error() != null) {
                return CompletableFuture.completedFuture(found.error());
            }
            o = found.owner();
            e = found.entry();
            TxnMetadata m = e.current;
            if (e.pending) {
                return CompletableFuture.completedFuture(Errors.CONCURRENT_TRANSACTIONS);
            }
            switch (m.state()) {
                case ONGOING -> {
                    e.pending = true;
                }
                case COMPLETE_COMMIT -> {
                    return CompletableFuture.completedFuture(commit ? Errors.NONE : Errors.INVALID_TXN_STATE);
                }
                case COMPLETE_ABORT -> {
                    return CompletableFuture.completedFuture(commit ? Errors.INVALID_TXN_STATE : Errors.NONE);
                }
                case PREPARE_COMMIT -> {
                    return CompletableFuture.completedFuture(commit ? Errors.CONCURRENT_TRANSACTIONS : Errors.INVALID_TXN_STATE);
                }
                case PREPARE_ABORT -> {
                    return CompletableFuture.completedFuture(commit ? Errors.INVALID_TXN_STATE : Errors.CONCURRENT_TRANSACTIONS);
                }
                default -> {
                    return CompletableFuture.completedFuture(Errors.INVALID_TXN_STATE);
                }
            }
        }
        return endTransaction(o, e, e.current, commit, (short) 0);
    }

    /**
     * Writes PrepareCommit or PrepareAbort for {@code from} (Ongoing, or PrepareEpochFence for a fenced
     * producer's abort; the entry already marked pending), then sends the markers in the background.
     */
    private CompletableFuture<Errors> endTransaction(Owned o, Entry e, TxnMetadata from, boolean commit) {
        return endTransaction(o, e, from, commit, from.clientTransactionVersion());
    }

    /**
     * {@link #endTransaction(Owned, Entry, TxnMetadata, boolean)} at {@code clientVersion}: an EndTxn
     * below v5 ends the transaction as V1 does (no epoch bump), whatever version an earlier client of
     * the id used, as Kafka takes the version from the request.
     */
    private CompletableFuture<Errors> endTransaction(Owned o, Entry e, TxnMetadata from, boolean commit,
                                                     short clientVersion) {
        TxnMetadata prepared;
        TxnMetadata revertTo;
        synchronized (this) {
            prepared = TxnTransitions.prepareEnd(from, commit, clientVersion, RecordBatch.NO_PRODUCER_ID,
                    time.milliseconds(), false);
            // a failed fence leaves the producer fenced and the transaction Ongoing, as Kafka does
            revertTo = from.state() == TransactionState.PREPARE_EPOCH_FENCE ? ongoingAt(from) : from;
        }
        return writePrepared(o, e, revertTo, prepared);
    }

    /**
     * Writes {@code prepared} (PrepareCommit or PrepareAbort; the entry marked pending), then sends the
     * markers in the background; a failed write puts {@code revertTo} back.
     */
    private CompletableFuture<Errors> writePrepared(Owned o, Entry e, TxnMetadata revertTo, TxnMetadata prepared) {
        return log.write(o.partition, o.coordinatorEpoch, prepared).handle((v, failure) -> {
            synchronized (this) {
                if (!stillOwns(o, e)) {
                    return Errors.NOT_COORDINATOR;
                }
                if (failure != null) {
                    e.current = revertTo;
                    e.pending = false;
                    return writeError(failure);
                }
                e.current = prepared; // Prepare* itself holds other changes off while the markers are out
                e.pending = false;
            }
            sendMarkers(o, e, prepared);
            return Errors.NONE;
        });
    }

    /** {@code fenced} (PrepareEpochFence) back as Ongoing at its bumped epoch. */
    private static TxnMetadata ongoingAt(TxnMetadata fenced) {
        return new TxnMetadata(fenced.transactionalId(), fenced.producerId(), fenced.previousProducerId(),
                fenced.nextProducerId(), fenced.producerEpoch(), fenced.nextProducerEpoch(), fenced.lastProducerEpoch(),
                fenced.timeoutMs(), TransactionState.ONGOING, fenced.partitions(), fenced.startTimestampMs(),
                fenced.lastUpdateTimestampMs(), fenced.clientTransactionVersion());
    }

    /** Sends the markers of {@code prepared} (the entry's current state), then writes CompleteCommit or CompleteAbort. */
    private void sendMarkers(Owned o, Entry e, TxnMetadata prepared) {
        boolean commit = prepared.state() == TransactionState.PREPARE_COMMIT;
        markers.write(prepared.transactionalId(), prepared.producerId(), prepared.producerEpoch(), o.coordinatorEpoch,
                commit, prepared.partitions(), prepared.clientTransactionVersion()).whenComplete((v, failure) -> {
                    if (failure != null) {
                        // the writer gave up: the coordinator moved (the new one resumes the end) or is closing
                        LOG.info("Markers of {} not all written: {}", prepared.transactionalId(), failure.toString());
                        return;
                    }
                    writeCompletion(o, e, prepared, false);
                });
    }

    /**
     * Every marker of {@code prepared} is written: writes CompleteCommit or CompleteAbort. A failed
     * write is owed ({@link #retryCompletions}), and the markers are never sent again: once this
     * coordinator loses the partition, a marker it sent late could land after the producer's next
     * transaction began in a partition, under a coordinator that read the Complete state from the log
     * and wrote no marker there since, and end that transaction there with this one's outcome (a
     * committed transaction torn, found by ChaosTest and TxnSimulation). Kafka retries the append alone too.
     */
    private void writeCompletion(Owned o, Entry e, TxnMetadata prepared, boolean again) {
        TxnMetadata completed;
        synchronized (this) {
            if (!stillOwns(o, e) || e.current != prepared) {
                return;
            }
            completed = TxnTransitions.complete(prepared, time.milliseconds());
            e.pending = true;
            e.completionOwed = false;
        }
        log.write(o.partition, o.coordinatorEpoch, completed).whenComplete((w, writeFailure) -> {
            synchronized (this) {
                if (!stillOwns(o, e)) {
                    return; // the next coordinator of the partition ends it from what the log holds
                }
                e.pending = false;
                if (writeFailure == null) {
                    e.current = completed;
                    return;
                }
                e.completionOwed = true;
            }
            if (again) {
                LOG.debug("Writing the end of {} failed again ({})", prepared.transactionalId(), writeFailure.toString());
            } else {
                LOG.info("Writing the end of {} failed ({}); it is written again (its markers are all written)",
                        prepared.transactionalId(), writeFailure.toString());
            }
        });
    }

    /**
     * Writes again the Complete state of every transaction whose markers are all written but whose
     * Complete write failed (the broker's timer calls this often); returns how many it started.
     */
    public int retryCompletions() {
        List<Runnable> writes = new ArrayList<>();
        synchronized (this) {
            for (Owned o : owned.values()) {
                if (!o.loaded) {
                    continue;
                }
                for (Entry e : o.ids.values()) {
                    if (e.completionOwed && !e.pending) {
                        TxnMetadata prepared = e.current;
                        writes.add(() -> writeCompletion(o, e, prepared, true));
                    }
                }
            }
        }
        writes.forEach(Runnable::run);
        return writes.size();
    }

    // ---------------------------------------------------------------- timeouts and expiry

    /**
     * Aborts every Ongoing transaction older than its timeout (Kafka fences the producer first, so a
     * zombie cannot write into the next transaction); returns how many it started to abort.
     */
    public int abortTimedOutTransactions() {
        long now = time.milliseconds();
        List<Runnable> aborts = startForEach((o, e) -> {
            TxnMetadata m = e.current;
            if (m.state() != TransactionState.ONGOING || m.startTimestampMs() + m.timeoutMs() >= now
                    || m.producerEpoch() == Short.MAX_VALUE) {
                return null;
            }
            TxnMetadata fenced = TxnTransitions.fenceProducerEpoch(m);
            e.current = fenced;
            return () -> endTransaction(o, e, fenced, false).thenAccept(err -> {
                if (err != Errors.NONE) {
                    LOG.info("Aborting the timed-out transaction of {} failed: {}", m.transactionalId(), err);
                }
            });
        });
        if (!aborts.isEmpty()) {
            LOG.info("Aborting {} transaction(s) past their timeout", aborts.size());
        }
        aborts.forEach(Runnable::run);
        return aborts.size();
    }

    /** Removes ids idle for {@code transactional.id.expiration.ms} with no transaction open; returns how many. */
    public int expireTransactionalIds() {
        long now = time.milliseconds();
        List<Runnable> writes = startForEach((o, e) -> {
            TxnMetadata m = e.current;
            if (!m.state().isExpirationAllowed() || m.lastUpdateTimestampMs() + config.idExpirationMs() > now) {
                return null;
            }
            TxnMetadata dead = TxnTransitions.dead(m);
            return () -> log.write(o.partition, o.coordinatorEpoch, dead).whenComplete((v, failure) -> {
                synchronized (this) {
                    if (!stillOwns(o, e)) {
                        return;
                    }
                    e.pending = false;
                    if (failure == null) {
                        o.ids.remove(m.transactionalId(), e);
                    }
                }
            });
        });
        writes.forEach(Runnable::run);
        return writes.size();
    }

    /**
     * Under the monitor, offers every idle entry (loaded, nothing in flight) to {@code start}; an entry
     * it returns work for is marked pending. The work is run by the caller, outside the monitor.
     */
    private synchronized List<Runnable> startForEach(java.util.function.BiFunction<Owned, Entry, Runnable> start) {
        List<Runnable> work = new ArrayList<>();
        for (Owned o : owned.values()) {
            if (!o.loaded) {
                continue;
            }
            for (Entry e : o.ids.values()) {
                if (e.pending) {
                    continue;
                }
                Runnable r = start.apply(o, e);
                if (r != null) {
                    e.pending = true;
                    work.add(r);
                }
            }
        }
        return work;
    }

    // ---------------------------------------------------------------- helpers

    /** Writes {@code next} (the entry marked pending); it becomes current once replicated. */
    private CompletableFuture<Errors> write(Owned o, Entry e, TxnMetadata from, TxnMetadata next) {
        return log.write(o.partition, o.coordinatorEpoch, next).handle((v, failure) -> {
            synchronized (this) {
                if (!stillOwns(o, e)) {
                    return Errors.NOT_COORDINATOR;
                }
                e.pending = false;
                if (failure != null) {
                    e.current = from;
                    return writeError(failure);
                }
                e.current = next;
                return Errors.NONE;
            }
        });
    }

    /** Holds the monitor: whether {@code e} is still this partition's entry in the same coordinator epoch. */
    private boolean stillOwns(Owned o, Entry e) {
        Owned now = owned.get(o.partition);
        return now == o && o.ids.get(e.current.transactionalId()) == e;
    }

    /** The id's partition and entry, or why a request of {@code producerId} at {@code epoch} cannot act on it. */
    private record ProducerLookup(Errors error, Owned owner, Entry entry) {
    }

    /**
     * Holds the monitor. NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS, INVALID_PRODUCER_ID_MAPPING
     * (no such id, or another producer id), PRODUCER_FENCED (another epoch), in Kafka's order.
     */
    private ProducerLookup findProducer(String transactionalId, long producerId, short epoch) {
        Owned o = owned.get(log.partitionFor(transactionalId));
        Errors notHere = notHere(o);
        if (notHere != null) {
            return new ProducerLookup(notHere, null, null);
        }
        Entry e = o.ids.get(transactionalId);
        if (e != null && e.current.nextProducerId() == producerId && producerId != RecordBatch.NO_PRODUCER_ID
                && epoch == 0) {
            // a V2 producer already told its next producer id while the end that rotates to it completes
            return new ProducerLookup(Errors.CONCURRENT_TRANSACTIONS, null, null);
        }
        if (e == null || e.current.producerId() != producerId) {
            return new ProducerLookup(Errors.INVALID_PRODUCER_ID_MAPPING, null, null);
        }
        if (e.current.producerEpoch() != epoch) {
            return new ProducerLookup(Errors.PRODUCER_FENCED, null, null);
        }
        return new ProducerLookup(null, o, e);
    }

    private static Errors notHere(Owned o) {
        if (o == null) {
            return Errors.NOT_COORDINATOR;
        }
        return o.loaded ? null : Errors.COORDINATOR_LOAD_IN_PROGRESS;
    }

    /**
     * A failed write as the client should see it: Kafka answers COORDINATOR_NOT_AVAILABLE for a log
     * that is not there or not replicated in time, NOT_COORDINATOR when leadership moved, so the
     * producer looks the coordinator up again and retries.
     */
    private static Errors writeError(Throwable failure) {
        Throwable cause = failure instanceof java.util.concurrent.CompletionException && failure.getCause() != null
                ? failure.getCause() : failure;
        Errors error = Errors.forException(cause);
        return switch (error) {
            case UNKNOWN_TOPIC_OR_PARTITION, NOT_ENOUGH_REPLICAS, NOT_ENOUGH_REPLICAS_AFTER_APPEND, REQUEST_TIMED_OUT,
                 KAFKA_STORAGE_ERROR, UNKNOWN_SERVER_ERROR -> Errors.COORDINATOR_NOT_AVAILABLE;
            case NOT_LEADER_OR_FOLLOWER -> Errors.NOT_COORDINATOR;
            default -> error;
        };
    }
}
