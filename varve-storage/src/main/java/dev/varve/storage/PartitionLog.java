package dev.varve.storage;

import dev.varve.storage.index.TransactionIndex;
import dev.varve.storage.checkpoint.CheckpointFile;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.KafkaStorageException;
import org.apache.kafka.common.errors.OffsetOutOfRangeException;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.FileRecords;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.utils.Time;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.File;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * One partition's log: an ordered list of segments in {@code <log.dirs>/<topic>-<partition>/}.
 *
 * <pre>
 *   logStartOffset        highWatermark      logEndOffset
 *        |                      |                 |
 *   [ seg 0 ][ seg 100 ][ seg 250 (active) .......)
 *   readable by consumers: [logStartOffset, highWatermark)
 * </pre>
 *
 * <p>Offsets are assigned here. Reads return file slices of whole batches, bounded by a caller's
 * upper offset (the high watermark for consumers, the log end for followers). Retention, explicit
 * truncation from the front ({@link #deleteRecordsBefore}) and from the back ({@link #truncateTo}) move
 * whole segments; deleted segments are renamed {@code *.deleted} and removed after
 * {@code file.delete.delay.ms}, so an in-flight read never sees a half-deleted file.
 *
 * <p>Idempotent producers: under the lock, after the batches are validated and before offsets are
 * assigned, each batch with a producer id is checked against the partition's producer state
 * ({@link ProducerStateTable}): a retried batch is answered with its original offsets and nothing is
 * appended; a sequence gap or a stale epoch is refused. The state is snapshotted to
 * {@code <offset>.snapshot} when a segment rolls and on close, and rebuilt from the latest snapshot
 * plus the log after it when the log is opened or truncated.
 *
 * <p>Durability: by default nothing is fsynced (durability comes from replication, as in Kafka);
 * {@code flush.messages=1} fsyncs before an append returns; the recovery point is the offset below
 * which everything is known to be on disk.
 *
 * <p>Thread-safety: every change holds the log's lock; reads take no lock and work from volatile
 * snapshots (the log end position is published after the bytes are written).
 */
public final class PartitionLog implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(PartitionLog.class);

    /**
     * The log end: next offset, where the next batch will start, and the segments that position is in
     * (a lock-free reader takes both from one snapshot: a moved replica's segments are other files).
     */
    private record LogEnd(long offset, long segmentBaseOffset, int position, LogSegments segments) {
    }

    private final Object lock = new Object();
    /** The partition directory; replaced (under the lock) when the replica moves to another log directory. */
    private volatile File dir;
    private final TopicPartition topicPartition;
    private final Time time;
    private final Scheduler scheduler;
    /** Replaced (under the lock) when the replica moves to another log directory, see {@link #adoptMovedCopy}. */
    private volatile LogSegments segments;
    private final LeaderEpochCache epochCache;
    private final ProducerStateManager producerStateManager;
    private volatile LogConfig config;
    private volatile long logStartOffset;
    private volatile long recoveryPoint;
    private volatile long highWatermark;
    /** The lowest first offset of a transaction open or not yet below the high watermark, -1 for none. */
    private volatile long firstUnstableOffset = -1;
    private volatile LogEnd logEnd;
    private volatile long lastFlushMs;
    /** Segment files were created or renamed since the directory was last fsynced. */
    private boolean directoryDirty;
    /** The partition directory itself may not be durable in its parent yet (a new log). */
    private boolean parentDirectoryDirty;
    private volatile boolean closed;
    /** Loading cut flushed records (corruption at rest): this replica lost data it had and must not lead with it. */
    private final boolean damagedAtLoad;
    private volatile java.util.function.Consumer<KafkaStorageException> storageFailureListener;
    /** Called (without the lock) after a truncation lowered the recovery point, so its checkpoint follows at once. */
    private volatile Runnable recoveryPointLoweredListener;
    /**
     * Set when a failed disk mutation may have left the files in a state the in-memory log does not
     * describe (a truncation or an undo that failed part-way, a failed fsync): every later read and
     * write fails with KAFKA_STORAGE_ERROR until the log is opened again (the broker restarts and
     * recovers it from disk), as Kafka takes a failed log directory offline.
     */
    private volatile KafkaStorageException offline;
    /** The lowest offset the log was truncated to since the cleaner last looked (Long.MAX_VALUE: none). */
    private long truncatedToSinceCleanerView = Long.MAX_VALUE;
    /** As above, for a copy of this log into another log directory ({@link ReplicaMove}). */
    private long truncatedToSinceMoveView = Long.MAX_VALUE;

    private PartitionLog(File dir, TopicPartition tp, LogConfig config, Time time, Scheduler scheduler, LogLoader.Loaded loaded) {
        this.dir = dir;
        this.topicPartition = tp;
        this.config = config;
        this.time = time;
        this.scheduler = scheduler;
        this.segments = loaded.segments();
        this.epochCache = loaded.epochCache();
        this.producerStateManager = loaded.producerState();
        this.logStartOffset = loaded.logStartOffset();
        this.recoveryPoint = loaded.recoveryPoint();
        this.highWatermark = loaded.highWatermark();
        refreshStability();
        this.lastFlushMs = time.milliseconds();
        LogSegment active = segments.active();
        this.logEnd = new LogEnd(loaded.logEndOffset(), active.baseOffset(), active.size(), segments);
        this.directoryDirty = loaded.created();
        this.parentDirectoryDirty = loaded.created();
        this.damagedAtLoad = loaded.damaged();
    }

    /** Opens a brand-new or cleanly closed partition directory. */
    public static PartitionLog open(File dir, TopicPartition tp, LogConfig config, Time time, Scheduler scheduler) throws IOException {
        return open(dir, tp, config, time, scheduler, LogLoader.Checkpoints.NEW);
    }

    /**
     * Opens a partition directory with what the log directory's checkpoints say about it.
     *
     * @param cleanShutdown whether the directory was closed cleanly (skip recovery)
     */
    public static PartitionLog open(File dir, TopicPartition tp, LogConfig config, Time time, Scheduler scheduler,
                                    long logStartOffset, long recoveryPoint, long highWatermark, boolean cleanShutdown) throws IOException {
        return open(dir, tp, config, time, scheduler,
                new LogLoader.Checkpoints(logStartOffset, recoveryPoint, highWatermark, cleanShutdown));
    }

    /**
     * As above; {@code verifyAll} (the broker's {@code log.startup.verify}) also verifies the CRC of
     * every batch and every index entry below the recovery point, repairing what fails (see
     * {@link #damagedAtLoad()}). The other overloads verify everything.
     */
    public static PartitionLog open(File dir, TopicPartition tp, LogConfig config, Time time, Scheduler scheduler,
                                    long logStartOffset, long recoveryPoint, long highWatermark, boolean cleanShutdown,
                                    boolean verifyAll) throws IOException {
        return open(dir, tp, config, time, scheduler,
                new LogLoader.Checkpoints(logStartOffset, recoveryPoint, highWatermark, cleanShutdown), verifyAll);
    }

    private static PartitionLog open(File dir, TopicPartition tp, LogConfig config, Time time, Scheduler scheduler,
                                     LogLoader.Checkpoints checkpoints) throws IOException {
        return open(dir, tp, config, time, scheduler, checkpoints, true);
    }

    private static PartitionLog open(File dir, TopicPartition tp, LogConfig config, Time time, Scheduler scheduler,
                                     LogLoader.Checkpoints checkpoints, boolean verifyAll) throws IOException {
        LogLoader.Loaded loaded = LogLoader.load(dir, tp, config, checkpoints, verifyAll, time.milliseconds());
        return new PartitionLog(dir, tp, config, time, scheduler, loaded);
    }

    // ---------------------------------------------------------------- appends

    /**
     * Validates producer batches, checks them against the producers' state, assigns their offsets,
     * stamps {@code leaderEpoch} and appends them as one write. Throws (and appends nothing) if any
     * batch is invalid.
     *
     * <p>If a batch repeats one of the last five batches of its producer (same epoch, same sequence
     * range), nothing of the request is appended and the result carries the original batch's offsets
     * with {@link LogAppendInfo#duplicate()} set, as Kafka answers a retried produce request.
     *
     * @throws org.apache.kafka.common.errors.OutOfOrderSequenceException   a producer's sequence does not follow its last one
     * @throws org.apache.kafka.common.errors.InvalidProducerEpochException a producer's epoch is older than its current one
     */
    public LogAppendInfo appendAsLeader(MemoryRecords records, int leaderEpoch) {
        return appendAsLeader(records, leaderEpoch, AppendOrigin.CLIENT);
    }

    /**
     * As {@link #appendAsLeader(MemoryRecords, int)}, with the producer-state checks of {@code origin}:
     * a {@link AppendOrigin#COORDINATOR} batch gets only the producer-epoch check (never a duplicate).
     */
    public LogAppendInfo appendAsLeader(MemoryRecords records, int leaderEpoch, AppendOrigin origin) {
        return appendAsLeader(records, leaderEpoch, origin, null);
    }

    /**
     * As {@link #appendAsLeader(MemoryRecords, int, AppendOrigin)}; with {@code guard} not null the leader
     * verifies transactions (KIP-890): a transactional batch that would open its producer's transaction
     * here must present the guard {@link #startTransactionVerification} gave for it, still valid.
     *
     * @throws org.apache.kafka.common.errors.InvalidTxnStateException a transactional batch without a valid verification
     */
    public LogAppendInfo appendAsLeader(MemoryRecords records, int leaderEpoch, AppendOrigin origin,
                                        VerificationGuard guard) {
        synchronized (lock) {
            ensureOpen();
            long nowMs = time.milliseconds();
            BatchValidator.Validated validated = BatchValidator.validate(records, config, nowMs);
            Optional<ProducerStateEntry.BatchMetadata> duplicate = Optional.empty();
            if (origin == AppendOrigin.COORDINATOR) {
                producerStateManager.checkCoordinatorAppend(validated.batches(), guard);
            } else {
                duplicate = producerStateManager.checkAppend(validated.batches(), logEnd.offset() == 0, guard);
            }
            if (duplicate.isPresent()) {
                LOG.debug("{}: answering a retried batch with its original offsets {}", topicPartition, duplicate.get());
                return LogAppendInfo.duplicateOf(duplicate.get(), config.timestampType() == TimestampType.LOG_APPEND_TIME);
            }
            MemoryRecords stored = records;
            MemoryRecords recompressed = BatchValidator.recompressed(validated, config); // compression.type
            if (recompressed != null) {
                stored = recompressed;
                validated = BatchValidator.validate(recompressed, config, nowMs);
            }
            LogAppendInfo info = BatchValidator.assignOffsets(validated, logEnd.offset(), leaderEpoch, config, nowMs);
            if (info.numRecords() > 0) {
                appendValidated(stored, info);
            }
            return info;
        }
    }

    /**
     * Appends batches replicated from the leader, offsets and epochs as they are. Producer state is
     * updated without checks (the leader checked).
     */
    public LogAppendInfo appendAsFollower(MemoryRecords records) {
        synchronized (lock) {
            ensureOpen();
            LogAppendInfo info = BatchValidator.validateReplicated(records, logEnd.offset());
            if (info.numBatches() > 0) {
                appendValidated(records, info);
            }
            return info;
        }
    }

    private void appendValidated(MemoryRecords records, LogAppendInfo info) {
        for (MutableRecordBatch batch : records.batches()) {
            if (batch.isControlBatch() && batch.hasProducerId()) {
                // a marker whose control record cannot be read is refused before anything is written:
                // the producer state below must take every batch the file does
                ProducerStateTable.markerOf(batch);
            }
        }
        LogSegment segment = maybeRoll(records.sizeInBytes(), info.lastOffset(), info.maxTimestamp());
        int positionBefore = segment.size();
        try {
            segment.append(records);
        } catch (IOException | RuntimeException | InternalError e) {
            // A full disk fails write(2) part-way, or faults on a memory-mapped index page (the JVM
            // turns that SIGBUS into an InternalError): cut back to where the append began, so the
            // file holds exactly the published batches and a later append starts at the right place.
            try {
                segment.abortAppend(positionBefore, logEnd.offset());
            } catch (IOException | RuntimeException | InternalError cleanup) {
                // Bytes past the log end may stay in the file, under the next append's offsets: stop.
                e.addSuppressed(cleanup);
                throw goOffline("append to " + segment.log().file() + " at position " + positionBefore
                        + " failed and could not be undone", e);
            }
            throw storageFailure("append to " + segment.log().file() + " at position " + positionBefore + " failed", e);
        }
        for (MutableRecordBatch batch : records.batches()) {
            if (batch.partitionLeaderEpoch() != RecordBatch.NO_PARTITION_LEADER_EPOCH) {
                epochCache.assign(batch.partitionLeaderEpoch(), batch.baseOffset());
            }
            Optional<ProducerStateTable.CompletedTxn> done = producerStateManager.update(batch);
            if (done.isPresent() && done.get().aborted()) {
                ProducerStateTable.CompletedTxn t = done.get();
                try {
                    segment.txnIndex().append(t.indexEntry());
                } catch (IOException | RuntimeException e) {
                    // the log holds the marker the index lacks: stop rather than let read_committed miss the abort
                    throw goOffline("cannot index the aborted transaction " + t + " in " + segment.txnIndex().file(), e);
                }
            }
        }
        logEnd = new LogEnd(info.lastOffset() + 1, segment.baseOffset(), segment.size(), segments);
        refreshStability();
        if (logEnd.offset() - recoveryPoint >= config.flushMessages()) {
            flushLocked(logEnd.offset());
        }
    }

    /**
     * A storage failure of this log: the listener (the log manager) learns of it, and the caller gets
     * a {@link KafkaStorageException} (KAFKA_STORAGE_ERROR on the wire, which producers retry).
     */
    private KafkaStorageException storageFailure(String message, Throwable cause) {
        KafkaStorageException e = new KafkaStorageException(message, cause);
        report(e);
        return e;
    }

    /**
     * A storage failure after which the files may not be what the in-memory log describes: the log
     * goes offline (see {@link #offline}) and the failure is reported like any other.
     */
    private KafkaStorageException goOffline(String message, Throwable cause) {
        KafkaStorageException e = new KafkaStorageException(topicPartition + " is offline: " + message, cause);
        if (offline == null) {
            offline = e;
            LOG.error("{} is offline until the broker restarts and recovers it from disk: {}", topicPartition, message, cause);
        }
        report(e);
        return e;
    }

    private void throwIfOffline() {
        KafkaStorageException failed = offline;
        if (failed != null) {
            throw new KafkaStorageException(failed.getMessage(), failed);
        }
    }

    /** A leader-epoch checkpoint write failed: reported; the cache is right in memory and the next flush writes it. */
    private KafkaStorageException epochCheckpointFailure(IOException e) {
        return storageFailure("cannot write the leader epoch checkpoint of " + topicPartition, e);
    }

    /** Whether a disk failure took this log offline ({@link #offline}). */
    public boolean isOffline() {
        return offline != null;
    }

    private void report(KafkaStorageException e) {
        java.util.function.Consumer<KafkaStorageException> listener = storageFailureListener;
        if (listener != null) {
            try {
                listener.accept(e);
            } catch (RuntimeException ignored) {
                // the failure is still thrown to the caller
            }
        }
    }

    /** Called (after the lock is released) whenever a truncation lowered the recovery point. */
    public void onRecoveryPointLowered(Runnable listener) {
        this.recoveryPointLoweredListener = listener;
    }

    /** Called (with the log's lock held) whenever a write, roll or fsync of this log fails. */
    public void onStorageFailure(java.util.function.Consumer<KafkaStorageException> listener) {
        this.storageFailureListener = listener;
    }

    private LogSegment maybeRoll(int bytes, long lastOffset, long maxTimestamp) {
        LogSegment active = segments.active();
        if (active.shouldRoll(config, bytes, lastOffset, maxTimestamp, time.milliseconds())) {
            return rollLocked();
        }
        return active;
    }

    /** Starts a new active segment at the log end (nothing happens if the active one is empty). */
    public LogSegment roll() {
        synchronized (lock) {
            ensureOpen();
            return rollLocked();
        }
    }

    private LogSegment rollLocked() {
        LogSegment active = segments.active();
        long newBase = logEnd.offset();
        if (active.size() == 0) {
            return active;
        }
        try {
            File logFile = LogFileNames.logFile(dir, newBase);
            if (logFile.exists() && logFile.length() > 0) {
                throw new KafkaStorageException("cannot roll " + topicPartition + ": " + logFile + " already exists");
            }
            active.onBecomeInactive();
            LogSegment segment = LogSegment.open(dir, newBase, config, time.milliseconds());
            segments.add(segment);
            directoryDirty = true;
            logEnd = new LogEnd(newBase, newBase, 0, segments);
            LOG.debug("{}: rolled new segment at offset {}", topicPartition, newBase);
            takeProducerSnapshot(newBase, false);
            return segment;
        } catch (IOException | InternalError e) {
            throw storageFailure("cannot roll " + topicPartition + " at offset " + newBase, e);
        }
    }

    /**
     * Snapshots producer state at the log end so that loading replays at most the segments after it
     * (fsynced by the next flush, as Kafka does). A failure costs only replay time: it is logged.
     */
    private void takeProducerSnapshot(long logEndOffset, boolean sync) {
        try {
            producerStateManager.takeSnapshot(logEndOffset, sync);
            directoryDirty = true;
        } catch (IOException e) {
            LOG.warn("{}: cannot write the producer snapshot at offset {}; the next load replays the log instead",
                    topicPartition, logEndOffset, e);
        }
    }

    // ---------------------------------------------------------------- reads

    /**
     * Reads whole batches starting with the one that holds {@code offset}.
     *
     * @param maxBytes       bytes wanted (never a split batch)
     * @param maxOffset      exclusive upper bound: the high watermark for consumers, the log end for followers
     * @param minOneBatch    return at least one whole batch even if larger than maxBytes
     * @throws OffsetOutOfRangeException when offset is below the log start or above the log end
     */
    public LogSlice read(long offset, int maxBytes, long maxOffset, boolean minOneBatch) {
        throwIfOffline();
        LogEnd end = logEnd;
        LogSegments segments = end.segments(); // the segments this log end describes, even if the replica moves meanwhile
        long start = logStartOffset;
        if (offset < start || offset > end.offset()) {
            throw new OffsetOutOfRangeException("offset " + offset + " is outside [" + start + ", " + end.offset()
                    + "] of " + topicPartition);
        }
        long bound = Math.min(maxOffset, end.offset());
        if (offset >= bound) {
            return emptySlice(offset, segments);
        }
        LogSegment active = segments.active();
        // a reader at the tail (every follower, most consumers) is in the active segment: no skip-list walk
        LogSegment segment = active != null && offset >= active.baseOffset() ? active : segments.floor(offset);
        while (segment != null) {
            int maxPosition = maxPositionIn(segment, bound, end, segments);
            LogSlice slice = segment.read(offset, maxBytes, maxPosition, minOneBatch);
            if (slice != null) {
                return slice;
            }
            // Nothing at or after the offset in this segment (e.g. compacted away): try the next.
            segment = segments.higher(segment.baseOffset());
            if (segment != null && segment.baseOffset() >= bound) {
                break;
            }
        }
        return emptySlice(offset, segments);
    }

    /** The file position in {@code segment} that readers bounded by {@code bound} must not pass. */
    private int maxPositionIn(LogSegment segment, long bound, LogEnd end, LogSegments segments) {
        if (segment.baseOffset() == end.segmentBaseOffset()) {
            if (bound == end.offset()) {
                return end.position();
            }
        } else if (segments.nextBaseOffset(segment.baseOffset(), Long.MAX_VALUE) <= bound) {
            return segment.size();
        }
        LogSegment.BatchPosition p = segment.translateOffset(bound);
        int limit = segment.baseOffset() == end.segmentBaseOffset() ? end.position() : segment.size();
        return p == null ? limit : Math.min(p.position(), limit);
    }

    private LogSlice emptySlice(long offset, LogSegments segments) {
        LogSegment active = segments.active();
        return new LogSlice(offset, active.log().slice(0, 0));
    }

    /**
     * The first record with timestamp at least {@code timestamp} below {@code maxOffset} (Kafka's
     * ListOffsets by time), with the leader epoch of its batch.
     */
    public Optional<FileRecords.TimestampAndOffset> offsetForTimestamp(long timestamp, long maxOffset) {
        long start = logStartOffset;
        LogSegments segments = this.segments;
        for (LogSegment segment : segments.all()) {
            long next = segments.nextBaseOffset(segment.baseOffset(), Long.MAX_VALUE);
            if (next <= start || segment.maxTimestampSoFar() < timestamp) {
                continue;
            }
            Optional<FileRecords.TimestampAndOffset> found =
                    segment.findOffsetByTimestamp(timestamp, Math.max(start, segment.baseOffset()));
            if (found.isPresent()) {
                return found.get().offset < maxOffset ? found : Optional.empty();
            }
        }
        return Optional.empty();
    }

    /** The record with the largest timestamp below {@code maxOffset}: its timestamp and offset (batch granularity). */
    public Optional<FileRecords.TimestampAndOffset> maxTimestampAndOffset(long maxOffset) {
        long bestTs = RecordBatch.NO_TIMESTAMP;
        long bestOffset = -1;
        LogSegments segments = this.segments;
        for (LogSegment segment : segments.all()) {
            if (segment.maxTimestampSoFar() > bestTs && segment.offsetOfMaxTimestampSoFar() < maxOffset
                    && segment.offsetOfMaxTimestampSoFar() >= logStartOffset) {
                bestTs = segment.maxTimestampSoFar();
                bestOffset = segment.offsetOfMaxTimestampSoFar();
            }
        }
        if (bestOffset < 0) {
            return Optional.empty();
        }
        var epoch = epochCache.epochForOffset(bestOffset);
        return Optional.of(new FileRecords.TimestampAndOffset(bestTs, bestOffset,
                epoch.isPresent() ? Optional.of(epoch.getAsInt()) : Optional.empty()));
    }

    // ---------------------------------------------------------------- offsets

    public long logStartOffset() {
        return logStartOffset;
    }

    public long logEndOffset() {
        return logEnd.offset();
    }

    public long highWatermark() {
        return highWatermark;
    }

    /**
     * The last stable offset: the first offset of the oldest transaction still open or whose marker
     * the high watermark has not passed, else the high watermark. read_committed consumers read below it.
     */
    public long lastStableOffset() {
        long hw = highWatermark;
        long unstable = firstUnstableOffset;
        return unstable >= 0 && unstable < hw ? unstable : hw;
    }

    /** The first offset of the oldest transaction open or not yet replicated, if any. */
    public OptionalLong firstUnstableOffset() {
        long unstable = firstUnstableOffset;
        return unstable < 0 ? OptionalLong.empty() : OptionalLong.of(unstable);
    }

    /** The transactions open in this partition: first offset to producer id, ascending. */
    public Map<Long, Long> ongoingTransactions() {
        synchronized (lock) {
            return producerStateManager.ongoingTransactions();
        }
    }

    /**
     * The aborted transactions a read_committed fetch of [{@code startOffset}, {@code upperBoundOffset})
     * must be told about (Kafka's {@code collectAbortedTransactions}): from the transaction index of the
     * segment holding the start offset and of every later one, until an entry's last stable offset
     * reaches the bound. A transaction's entry is in the segment of its marker, which may start at or
     * past the bound (another transaction open below it holds the bound back), so later segments are
     * searched whatever their base offset.
     */
    public List<TransactionIndex.AbortedTxn> abortedTransactions(long startOffset, long upperBoundOffset) {
        throwIfOffline();
        List<TransactionIndex.AbortedTxn> out = new ArrayList<>();
        LogSegments segments = this.segments;
        LogSegment segment = segments.floor(startOffset);
        if (segment == null) {
            segment = segments.first();
        }
        while (segment != null) {
            try {
                TransactionIndex.Search found = segment.txnIndex().collect(startOffset, upperBoundOffset);
                out.addAll(found.aborted());
                if (found.complete()) {
                    break;
                }
            } catch (IOException e) {
                throw storageFailure("cannot read " + segment.txnIndex().file(), e);
            }
            segment = segments.higher(segment.baseOffset());
        }
        return out;
    }

    /**
     * Starts the verification of {@code producerId}'s transactional write at {@code epoch} (KIP-890):
     * {@link VerificationGuard#NONE} when its transaction is already open here, else the guard to
     * present with the append once the coordinator confirmed the partition is in the transaction.
     *
     * @param supportsEpochBump the write comes from a transactions V2 client (Produce v12+)
     * @throws org.apache.kafka.common.errors.InvalidProducerEpochException the epoch is older than the producer's
     */
    public VerificationGuard startTransactionVerification(long producerId, short epoch, boolean supportsEpochBump) {
        synchronized (lock) {
            ensureOpen();
            return producerStateManager.startVerification(producerId, epoch, supportsEpochBump);
        }
    }

    /** {@link #appendMarkerAsLeader(long, short, int, boolean, int, short)} of a transactions V1 transaction. */
    public LogAppendInfo appendMarkerAsLeader(long producerId, short producerEpoch, int coordinatorEpoch, boolean commit,
                                              int leaderEpoch) {
        return appendMarkerAsLeader(producerId, producerEpoch, coordinatorEpoch, commit, leaderEpoch, (short) 0);
    }

    /**
     * Writes a COMMIT or ABORT marker for {@code producerId} as the leader (the transaction
     * coordinator's WriteTxnMarkers), closing its transaction in this partition; {@code transactionVersion}
     * is the transaction's (2: the end bumped the epoch, so the marker's must be newer than the producer's).
     *
     * @throws org.apache.kafka.common.errors.TransactionCoordinatorFencedException a newer coordinator wrote the producer's last marker
     * @throws org.apache.kafka.common.errors.InvalidProducerEpochException        the producer epoch is older than the partition's
     *                                                                             (see {@link ProducerStateTable#checkMarker(long, short, int, short)})
     */
    public LogAppendInfo appendMarkerAsLeader(long producerId, short producerEpoch, int coordinatorEpoch, boolean commit,
                                              int leaderEpoch, short transactionVersion) {
        synchronized (lock) {
            ensureOpen();
            producerStateManager.checkMarker(producerId, producerEpoch, coordinatorEpoch, transactionVersion);
            MemoryRecords marker = MemoryRecords.withEndTransactionMarker(logEnd.offset(), time.milliseconds(), leaderEpoch,
                    producerId, producerEpoch, new org.apache.kafka.common.record.internal.EndTransactionMarker(
                            commit ? org.apache.kafka.common.record.internal.ControlRecordType.COMMIT
                                    : org.apache.kafka.common.record.internal.ControlRecordType.ABORT, coordinatorEpoch));
            LogAppendInfo info = BatchValidator.validateReplicated(marker, logEnd.offset());
            appendValidated(marker, info);
            return info;
        }
    }

    /** Under the lock: the high watermark moved, or the producer state changed. */
    private void refreshStability() {
        producerStateManager.onHighWatermarkUpdated(highWatermark);
        firstUnstableOffset = producerStateManager.firstUnstableOffset();
    }

    private void setHighWatermarkLocked(long hw) {
        highWatermark = hw;
        refreshStability();
    }

    public long recoveryPoint() {
        return recoveryPoint;
    }

    /**
     * Moves the high watermark forward to {@code offset} (clamped to the log end), never back: for a
     * leader that commits each append at once (a single node), where appends racing each other may
     * report their ends out of order.
     *
     * @return the high watermark now
     */
    public long maybeIncrementHighWatermark(long offset) {
        synchronized (lock) {
            setHighWatermarkLocked(Math.max(highWatermark, Math.max(logStartOffset, Math.min(offset, logEnd.offset()))));
            return highWatermark;
        }
    }

    /** Sets the high watermark (clamped to [log start, log end]); the replication layer owns its value. */
    public long updateHighWatermark(long offset) {
        synchronized (lock) {
            setHighWatermarkLocked(Math.max(logStartOffset, Math.min(offset, logEnd.offset())));
            return highWatermark;
        }
    }

    public LeaderEpochCache epochCache() {
        return epochCache;
    }

    /**
     * Whether opening the log cut records that had been flushed, or written before a clean shutdown
     * (a corrupt or truncated segment found by CRC): the log is a valid prefix of what it held, and
     * the rest must come back from another replica.
     */
    public boolean damagedAtLoad() {
        return damagedAtLoad;
    }

    // ---------------------------------------------------------------- producer state

    /** What the partition remembers about an idempotent producer (its epoch and last five batches). */
    public Optional<ProducerStateEntry> producerState(long producerId) {
        synchronized (lock) {
            return producerStateManager.entry(producerId);
        }
    }

    /** Every producer the partition remembers, by producer id (a copy). */
    public Map<Long, ProducerStateEntry> activeProducers() {
        synchronized (lock) {
            return producerStateManager.entries();
        }
    }

    /**
     * Forgets producers whose last write is at least {@code producerIdExpirationMs} older than now
     * (Kafka's {@code producer.id.expiration.ms}; the log manager calls this every
     * {@code producer.id.expiration.check.interval.ms}). A forgotten producer's next batch is accepted
     * at any sequence.
     *
     * @return how many producers were forgotten
     */
    public int removeExpiredProducers(long producerIdExpirationMs) {
        synchronized (lock) {
            if (closed) {
                return 0;
            }
            return producerStateManager.removeExpired(time.milliseconds(), producerIdExpirationMs);
        }
    }

    /** Offsets of the producer snapshot files, ascending. */
    List<Long> producerSnapshotOffsets() {
        synchronized (lock) {
            return producerStateManager.snapshotOffsets();
        }
    }

    // ---------------------------------------------------------------- truncation and retention

    /**
     * Kafka's DeleteRecords: makes {@code offset} the new log start offset and deletes the segments
     * wholly below it. The caller persists the log start offset (the log manager checkpoints it
     * before answering).
     *
     * @return the log start offset after the call
     * @throws OffsetOutOfRangeException when offset is above the high watermark
     */
    public long deleteRecordsBefore(long offset) {
        synchronized (lock) {
            ensureOpen();
            if (offset > highWatermark) {
                throw new OffsetOutOfRangeException("cannot delete records of " + topicPartition + " before " + offset
                        + ": it is above the high watermark " + highWatermark);
            }
            if (offset > logStartOffset) {
                logStartOffset = offset;
                truncateEpochsFromStart(offset);
                deleteSegmentsLocked(countSegmentsBelow(offset), false);
            }
            return logStartOffset;
        }
    }

    private int countSegmentsBelow(long offset) {
        int count = 0;
        List<Long> bases = segments.baseOffsets();
        for (int i = 0; i + 1 < bases.size() && bases.get(i + 1) <= offset; i++) {
            count++;
        }
        return count;
    }

    /**
     * Applies retention ({@code retention.ms}, {@code retention.bytes}, {@code retention.messages}) and
     * drops segments below the log start offset.
     *
     * @return the number of segments deleted
     */
    public int deleteOldSegments() {
        synchronized (lock) {
            if (closed) {
                return 0;
            }
            List<RetentionPolicy.SegmentFacts> facts = new ArrayList<>();
            try {
                for (LogSegment s : segments.all()) {
                    facts.add(new RetentionPolicy.SegmentFacts(s.baseOffset(),
                            segments.nextBaseOffset(s.baseOffset(), logEnd.offset()), s.size(), s.largestTimestamp()));
                }
            } catch (IOException e) {
                throw new KafkaStorageException("cannot read segment times of " + topicPartition, e);
            }
            RetentionPolicy.Decision decision = RetentionPolicy.decide(facts, config, time.milliseconds(),
                    logStartOffset, highWatermark, logEnd.offset());
            if (decision.count() == 0) {
                return 0;
            }
            return deleteSegmentsLocked(decision.count(), decision.rollFirst());
        }
    }

    /** Deletes the first {@code count} segments (rolling first if that is all of them). */
    private int deleteSegmentsLocked(int count, boolean rollFirst) {
        if (count <= 0) {
            return 0;
        }
        if (rollFirst || count >= segments.size()) {
            rollLocked();
        }
        List<LogSegment> victims = new ArrayList<>();
        for (LogSegment s : segments.all()) {
            if (victims.size() == count || s == segments.active()) {
                break;
            }
            victims.add(s);
        }
        for (LogSegment s : victims) {
            segments.remove(s.baseOffset());
        }
        logStartOffset = Math.max(logStartOffset, segments.first().baseOffset());
        setHighWatermarkLocked(Math.max(highWatermark, logStartOffset));
        truncateEpochsFromStart(logStartOffset);
        asyncDelete(victims);
        try {
            // Producers stay in memory (until they expire); only the deleted segments' snapshots go.
            if (producerStateManager.deleteSnapshotsBelow(segments.first().baseOffset()) > 0) {
                directoryDirty = true;
            }
        } catch (IOException e) {
            LOG.warn("{}: cannot delete producer snapshots below offset {}", topicPartition, segments.first().baseOffset(), e);
        }
        return victims.size();
    }

    /** The epoch cache forgets epochs below the log start; a failed checkpoint write is retried by the next flush. */
    private void truncateEpochsFromStart(long offset) {
        try {
            epochCache.truncateFromStart(offset);
        } catch (IOException e) {
            epochCheckpointFailure(e);
        }
    }

    /** Renames segments to *.deleted now and removes their files after file.delete.delay.ms. */
    private void asyncDelete(List<LogSegment> victims) {
        for (LogSegment s : victims) {
            try {
                s.changeFileSuffixes("", LogFileNames.DELETED_SUFFIX);
            } catch (IOException e) {
                throw storageFailure("cannot rename " + s + " of " + topicPartition + " for deletion", e);
            }
            scheduler.scheduleOnce("delete-segment-" + topicPartition + "-" + s.baseOffset(), () -> {
                try {
                    s.deleteIfExists();
                } catch (IOException e) {
                    LOG.warn("{}: cannot delete {}", topicPartition, s, e);
                }
            }, config.fileDeleteDelayMs());
        }
    }

    /**
     * Cuts the log so that its end offset is at most {@code offset} (a follower discarding what the
     * leader does not have). A batch that holds offset is removed whole.
     *
     * <p>The recovery point and the high watermark are clamped first, so no failure below leaves them
     * above the log end; a failure part-way through takes the log offline ({@link #isOffline()}): its
     * files may then hold more or less than the in-memory log, and only recovery from disk can tell.
     * A lowered recovery point is reported ({@link #onRecoveryPointLowered}) so that its checkpoint
     * follows before more is appended (Kafka checkpoints the recovery point on truncation): a stale
     * one would let a later start trust bytes this truncation removed.
     *
     * @return whether anything was removed
     */
    public boolean truncateTo(long offset) {
        boolean lowered;
        boolean removed;
        synchronized (lock) {
            ensureOpen();
            if (offset < 0) {
                throw new IllegalArgumentException("cannot truncate " + topicPartition + " to negative offset " + offset);
            }
            long recoveryBefore = recoveryPoint;
            removed = truncateLocked(offset);
            lowered = recoveryPoint < recoveryBefore;
        }
        Runnable listener = recoveryPointLoweredListener;
        if (lowered && listener != null) {
            listener.run();
        }
        return removed;
    }

    private boolean truncateLocked(long offset) {
        if (offset >= logEnd.offset()) {
            // Nothing to cut from the log, but an epoch that starts at (or past) the log end was
            // never written by anyone (a leader that appended nothing): drop it, as Kafka does, or
            // this replica would keep claiming an epoch its log does not hold.
            try {
                epochCache.truncateFromEnd(logEnd.offset());
            } catch (IOException e) {
                epochCheckpointFailure(e); // in memory it is cut
            }
            return false;
        }
        truncatedToSinceCleanerView = Math.min(truncatedToSinceCleanerView, offset);
        truncatedToSinceMoveView = Math.min(truncatedToSinceMoveView, offset);
        if (offset < logStartOffset) {
            truncateFullyAndStartAtLocked(offset);
            return true;
        }
        recoveryPoint = Math.min(recoveryPoint, offset);
        setHighWatermarkLocked(Math.min(highWatermark, offset));
        try {
            // First, so that a crash in between never leaves a snapshot describing removed batches.
            producerStateManager.deleteSnapshotsAbove(offset);
            directoryDirty = true;
        } catch (IOException e) {
            // nothing removed yet: the log is as it was, only its snapshots above the offset may be gone
            throw storageFailure("cannot delete producer snapshots of " + topicPartition + " above " + offset, e);
        }
        List<LogSegment> doomed = new ArrayList<>();
        for (LogSegment s : segments.all()) {
            if (s.baseOffset() > offset) {
                doomed.add(s);
            }
        }
        try {
            LogSegment last = segments.floor(offset);
            last.truncateTo(offset);
            for (LogSegment s : doomed) {
                segments.remove(s.baseOffset());
            }
            long newEnd = last.readNextOffset();
            logEnd = new LogEnd(newEnd, last.baseOffset(), last.size(), segments);
            recoveryPoint = Math.min(recoveryPoint, newEnd);
            setHighWatermarkLocked(Math.min(highWatermark, newEnd));
            asyncDelete(doomed);
        } catch (IOException | RuntimeException | InternalError e) {
            throw goOffline("cannot truncate " + topicPartition + " to " + offset, e);
        }
        if (logEnd.offset() < logStartOffset) {
            // The batch holding the offset began below the log start: nothing readable is left.
            truncateFullyAndStartAtLocked(offset);
            return true;
        }
        try {
            epochCache.truncateFromEnd(logEnd.offset());
        } catch (IOException e) {
            epochCheckpointFailure(e); // in memory it is cut
        }
        try {
            producerStateManager.reload(segments, logEnd.offset());
        } catch (IOException | RuntimeException e) {
            throw goOffline("cannot rebuild the producer state of " + topicPartition, e);
        }
        refreshStability();
        return true;
    }

    /** Deletes every segment and starts an empty log at {@code offset}. */
    public void truncateFullyAndStartAt(long offset) {
        boolean lowered;
        synchronized (lock) {
            ensureOpen();
            long recoveryBefore = recoveryPoint;
            truncateFullyAndStartAtLocked(offset);
            lowered = recoveryPoint < recoveryBefore;
        }
        Runnable listener = recoveryPointLoweredListener;
        if (lowered && listener != null) {
            listener.run();
        }
    }

    private void truncateFullyAndStartAtLocked(long offset) {
        truncatedToSinceCleanerView = Math.min(truncatedToSinceCleanerView, Math.min(offset, logStartOffset));
        truncatedToSinceMoveView = Math.min(truncatedToSinceMoveView, Math.min(offset, logStartOffset));
        recoveryPoint = Math.min(recoveryPoint, offset);
        setHighWatermarkLocked(Math.min(highWatermark, offset));
        try {
            producerStateManager.truncateFully();
            List<LogSegment> doomed = new ArrayList<>(segments.all());
            for (LogSegment s : doomed) {
                segments.remove(s.baseOffset());
            }
            asyncDelete(doomed); // renamed first: a segment with the new base offset is then a new file
            segments.add(LogSegment.open(dir, offset, config, time.milliseconds()));
        } catch (IOException | RuntimeException | InternalError e) {
            throw goOffline("cannot empty " + topicPartition + " to start at " + offset, e);
        }
        directoryDirty = true;
        logStartOffset = offset;
        recoveryPoint = offset;
        setHighWatermarkLocked(offset);
        logEnd = new LogEnd(offset, offset, 0, segments);
        try {
            epochCache.clear();
        } catch (IOException e) {
            epochCheckpointFailure(e); // in memory it is empty
        }
    }

    // ---------------------------------------------------------------- durability

    /** Fsyncs everything up to the log end, the leader-epoch checkpoint and producer snapshots. */
    public void flush() {
        synchronized (lock) {
            if (!closed && offline == null) {
                flushLocked(logEnd.offset());
                writeEpochCheckpoint();
                try {
                    epochCache.flush();
                    producerStateManager.flush();
                    if (directoryDirty) {
                        CheckpointFile.fsyncDirectory(dir.toPath());
                        directoryDirty = false;
                    }
                } catch (IOException e) {
                    throw goOffline("cannot fsync the checkpoints of " + topicPartition, e);
                }
            }
        }
    }

    /**
     * Writes the leader-epoch checkpoint if it changed. A failure (no space, no inode for the
     * {@code .tmp}) changes nothing in memory or in the old file: it is reported and retried by the
     * next flush, and the caller's flush stops before moving the recovery point.
     */
    private void writeEpochCheckpoint() {
        try {
            epochCache.writeIfUnwritten();
        } catch (IOException e) {
            throw epochCheckpointFailure(e);
        }
    }

    /** Fsyncs if the last fsync is older than {@code flush.ms}. */
    public void flushIfDue() {
        if (logEnd.offset() <= recoveryPoint) {
            return; // nothing unflushed: the periodic check of thousands of idle logs takes no lock
        }
        synchronized (lock) {
            if (!closed && offline == null && logEnd.offset() > recoveryPoint && time.milliseconds() - lastFlushMs >= config.flushMs()) {
                flushLocked(logEnd.offset());
            }
        }
    }

    private void flushLocked(long upTo) {
        if (upTo <= recoveryPoint) {
            return;
        }
        long started = time.nanoseconds();
        writeEpochCheckpoint();
        try {
            for (LogSegment s : segments.range(recoveryPoint, upTo)) {
                s.flush();
            }
            epochCache.flush();
            producerStateManager.flush();
            if (directoryDirty) {
                CheckpointFile.fsyncDirectory(dir.toPath());
                directoryDirty = false;
            }
            if (parentDirectoryDirty) {
                CheckpointFile.fsyncDirectory(dir.getParentFile().toPath());
                parentDirectoryDirty = false;
            }
        } catch (IOException | RuntimeException | InternalError e) {
            // After a failed fsync the kernel may have dropped the dirty pages it could not write, so a
            // later fsync that succeeds proves nothing (PostgreSQL's "fsyncgate"): the recovery point
            // stays where it was and the log goes offline; the next start recovers from that point.
            throw goOffline("cannot fsync " + topicPartition, e);
        }
        recoveryPoint = upTo;
        lastFlushMs = time.milliseconds();
        LogFlushStats.flushed(time.nanoseconds() - started);
        pruneProducerSnapshots();
    }

    /** Deletes producer snapshots no load will need any more (all kept ones are fsynced by now). */
    private void pruneProducerSnapshots() {
        try {
            if (producerStateManager.deleteSnapshotsBeforeRecoveryPoint(segments, recoveryPoint) > 0) {
                directoryDirty = true;
            }
        } catch (IOException e) {
            LOG.warn("{}: cannot delete old producer snapshots", topicPartition, e);
        }
    }

    // ---------------------------------------------------------------- compaction (the cleaner's side)

    /** A segment and its size when the cleaner looked at it. */
    record SegmentRef(LogSegment segment, int size) {
    }

    /**
     * What the cleaner plans a round from, read under the lock as one consistent view.
     *
     * @param segments      every segment in offset order (the last is the active one)
     * @param retainOffsets last offsets of the batches idempotent producers still remember: the cleaner
     *                      keeps these batches (empty if need be) so deduplication survives a reload
     * @param markerOnlyProducers producers remembered without any data batch (their last write was a
     *                      transaction marker, often of a new epoch), with their epoch: the cleaner keeps
     *                      their control batches of that epoch (empty if need be) so the epoch survives a
     *                      reload (Kafka's rule)
     * @param truncatedTo   the lowest offset the log was truncated to since the previous view, or
     *                      {@link Long#MAX_VALUE}: the cleaner's dirty offset must not stay above it
     */
    /**
     * @param lastStableOffset the high watermark, or the first offset of the oldest transaction still
     *                         open (or whose marker is not yet replicated) when that is lower: the
     *                         cleaner stops before it, as Kafka's does, since that transaction may
     *                         still abort
     */
    record CleaningView(List<SegmentRef> segments, long logStartOffset, long highWatermark, long lastStableOffset,
                        long logEndOffset, LogConfig config, java.util.Set<Long> retainOffsets,
                        Map<Long, Short> markerOnlyProducers, long truncatedTo) {
    }

    /** A consistent view for the cleaner, or null when the log is closed. */
    CleaningView cleaningView() {
        synchronized (lock) {
            if (closed) {
                return null;
            }
            List<SegmentRef> refs = new ArrayList<>(segments.size());
            for (LogSegment s : segments.all()) {
                refs.add(new SegmentRef(s, s.size()));
            }
            java.util.Set<Long> retain = new java.util.HashSet<>();
            Map<Long, Short> markerOnly = new java.util.HashMap<>();
            for (ProducerStateEntry e : producerStateManager.entries().values()) {
                for (ProducerStateEntry.BatchMetadata b : e.batches()) {
                    retain.add(b.lastOffset());
                }
                if (e.batches().isEmpty()) {
                    markerOnly.put(e.producerId(), e.producerEpoch());
                }
            }
            long truncatedTo = truncatedToSinceCleanerView;
            truncatedToSinceCleanerView = Long.MAX_VALUE;
            return new CleaningView(List.copyOf(refs), logStartOffset, highWatermark, lastStableOffset(), logEnd.offset(),
                    config, retain, markerOnly, truncatedTo);
        }
    }

    /**
     * Whether every segment of {@code refs} that was not the active one is still in the log with the
     * same size (the cleaner's test for "the log changed under the round").
     */
    boolean stillHolds(List<SegmentRef> refs) {
        synchronized (lock) {
            if (closed) {
                return false;
            }
            for (int i = 0; i + 1 < refs.size(); i++) {
                SegmentRef ref = refs.get(i);
                LogSegment current = segments.get(ref.segment().baseOffset());
                if (current != ref.segment() || current.size() != ref.size()) {
                    return false;
                }
            }
            return true;
        }
    }

    /**
     * Swaps a compacted segment (files suffixed {@code .cleaned}) in for the group of segments it
     * replaces ({@link SegmentSwap}), provided every segment of {@code unchanged} — the group and the
     * segments whose keys decided what the cleaner dropped — is still in the log with the same size.
     * Otherwise (the log was truncated, retention or DeleteRecords removed segments, the log closed)
     * nothing changes and the answer is false. Holds the lock only for the renames and the segment map;
     * the directory is fsynced after it is released. The replaced segments' files are deleted after
     * {@code file.delete.delay.ms}, so in-flight reads of them complete.
     */
    boolean replaceSegments(LogSegment cleaned, List<LogSegment> replaced, List<SegmentRef> unchanged,
                            SegmentSwap.Hook hook) throws IOException {
        synchronized (lock) {
            if (closed) {
                return false;
            }
            LogSegment active = segments.active();
            for (SegmentRef ref : unchanged) {
                LogSegment current = segments.get(ref.segment().baseOffset());
                if (current != ref.segment() || current == active || current.size() != ref.size()) {
                    return false;
                }
            }
            directoryDirty = true;
            SegmentSwap.swap(segments, cleaned, replaced, hook);
            for (LogSegment old : replaced) {
                scheduler.scheduleOnce("delete-segment-" + topicPartition + "-" + old.baseOffset(), () -> {
                    try {
                        old.deleteIfExists();
                    } catch (IOException e) {
                        LOG.warn("{}: cannot delete {}", topicPartition, old, e);
                    }
                }, config.fileDeleteDelayMs());
            }
        }
        CheckpointFile.fsyncDirectory(dir.toPath());
        return true;
    }

    // ---------------------------------------------------------------- moving between log directories (ReplicaMove's side)

    /**
     * Runs {@code action} holding the log's lock, so no append, truncation, roll or retention runs
     * meanwhile: a move's final catch-up and swap ({@link ReplicaMove}).
     */
    <T> T underLock(LockedAction<T> action) throws IOException {
        synchronized (lock) {
            return action.run();
        }
    }

    /** Work done under the log's lock ({@link #underLock}). */
    interface LockedAction<T> {
        T run() throws IOException;
    }

    /**
     * The lowest offset this log was truncated to since the previous call, {@link Long#MAX_VALUE} for
     * none: a copy of it in another log directory holds batches the log no longer has from there on.
     */
    long takeMoveTruncation() {
        synchronized (lock) {
            long t = truncatedToSinceMoveView;
            truncatedToSinceMoveView = Long.MAX_VALUE;
            return t;
        }
    }

    /**
     * Moves the log start offset up to {@code offset} (no further than the log end) and deletes the
     * segments wholly below it, without DeleteRecords' high-watermark bound: a copy following the log
     * start of the log it copies (retention or DeleteRecords there).
     */
    void advanceLogStartOffset(long offset) {
        synchronized (lock) {
            ensureOpen();
            if (offset > logStartOffset && offset <= logEnd.offset()) {
                logStartOffset = offset;
                setHighWatermarkLocked(Math.max(highWatermark, offset));
                truncateEpochsFromStart(offset);
                deleteSegmentsLocked(countSegmentsBelow(offset), false);
            }
        }
    }

    /** Sets the epochs to {@code source}'s (a copy taking the epochs of the log it replaces); written by the next flush. */
    void replaceEpochs(List<EpochEntry> source) {
        synchronized (lock) {
            epochCache.replaceWith(source);
        }
    }

    /**
     * Takes over the files of {@code copy}, a flushed copy of this log in another log directory that
     * the caller has just renamed to {@code newDir} (the move's commit): from now on this log reads and
     * writes there. Its own directory, already renamed to {@code oldDirRenamed}, is returned as its
     * segments, which the caller deletes after {@code file.delete.delay.ms} so that in-flight reads of
     * them complete. Nothing a reader or writer sees changes: offsets, high watermark, producer state
     * and leader epochs in memory are this log's own (the copy holds the same batches); the copy
     * object is closed without touching the files. The caller holds this log's lock.
     *
     * @throws IllegalStateException the copy does not hold exactly this log's offsets
     * @throws IOException           the new directory cannot be listed (nothing changed)
     */
    LogSegments adoptMovedCopy(PartitionLog copy, File newDir, File oldDirRenamed) throws IOException {
        synchronized (lock) {
            ensureOpen();
            LogEnd copyEnd;
            synchronized (copy.lock) {
                copyEnd = copy.logEnd;
                if (copyEnd.offset() != logEnd.offset() || copy.logStartOffset != logStartOffset || copy.closed
                        || copy.recoveryPoint != copyEnd.offset()) {
                    throw new IllegalStateException("the copy of " + topicPartition + " " + copy + " is not a flushed copy of "
                            + this);
                }
                copy.closed = true; // its segments are this log's now
            }
            producerStateManager.relocate(newDir); // first: it may fail, and changes nothing if it does
            epochCache.relocate(newDir);
            LogSegments old = segments;
            LogSegments moved = copyEnd.segments();
            moved.updateParentDir(newDir);
            old.updateParentDir(oldDirRenamed);
            dir = newDir;
            segments = moved;
            logEnd = new LogEnd(copyEnd.offset(), copyEnd.segmentBaseOffset(), copyEnd.position(), moved);
            recoveryPoint = copyEnd.offset();
            directoryDirty = false;
            parentDirectoryDirty = false;
            lastFlushMs = time.milliseconds();
            return old;
        }
    }

    /**
     * Takes this log offline after a move failed past its commit point: which directory holds the
     * replica is decided by the next start (see {@link ReplicaMove}), and until then nothing may be
     * acknowledged that the other copy could lack.
     */
    KafkaStorageException failMove(String message, Throwable cause) {
        synchronized (lock) {
            return goOffline(message, cause);
        }
    }

    // ---------------------------------------------------------------- configuration and lifecycle

    public LogConfig config() {
        return config;
    }

    /** New settings apply to the next append, roll and retention pass. */
    public void updateConfig(LogConfig newConfig) {
        this.config = newConfig;
    }

    public TopicPartition topicPartition() {
        return topicPartition;
    }

    public File dir() {
        return dir;
    }

    /** The active segment's {@code segment.jitter.ms} draw: how much before {@code segment.ms} it rolls. */
    public long activeSegmentRollJitterMs() {
        synchronized (lock) {
            return segments.active().rollJitterMs();
        }
    }

    public int numberOfSegments() {
        return segments.size();
    }

    public List<Long> segmentBaseOffsets() {
        return segments.baseOffsets();
    }

    /** Total bytes of all segment files. */
    public long size() {
        return segments.sizeInBytes();
    }

    LogSegments segments() {
        return segments;
    }

    private void ensureOpen() {
        if (closed) {
            throw new KafkaStorageException("log of " + topicPartition + " is closed");
        }
        throwIfOffline();
    }

    /**
     * Closes files (trimming the active segment's indexes) after writing a producer snapshot at the
     * log end, so a clean restart replays nothing. Does not flush: the caller decides. Unlike Kafka,
     * the snapshot is not fsynced (two fsyncs per partition made closing a thousand partitions
     * seconds slower): one lost in a power failure fails its CRC or length check and is rebuilt from
     * an older snapshot and the log.
     */
    @Override
    public void close() throws IOException {
        synchronized (lock) {
            if (closed) {
                return;
            }
            // an offline log's memory may not describe its files: nothing of it is written, recovery decides
            if (offline == null && !producerStateManager.hasSnapshotOfTableAt(logEnd.offset())) {
                takeProducerSnapshot(logEnd.offset(), false);
            }
            closed = true;
            try {
                if (offline == null) {
                    epochCache.writeIfUnwritten();
                }
            } catch (IOException e) {
                LOG.warn("{}: could not write the leader epoch checkpoint at close: {}", topicPartition, e.getMessage());
            }
            IOException failure = null;
            for (LogSegment s : segments.all()) {
                try {
                    s.close();
                } catch (IOException e) {
                    failure = e;
                }
            }
            if (failure != null) {
                throw failure;
            }
        }
    }

    @Override
    public String toString() {
        return "PartitionLog(" + topicPartition + ", start=" + logStartOffset + ", end=" + logEnd.offset()
                + ", hw=" + highWatermark + ", segments=" + segments.size() + ")";
    }
}
