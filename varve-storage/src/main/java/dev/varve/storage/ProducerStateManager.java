package dev.varve.storage;

import dev.varve.storage.ProducerStateEntry.BatchMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.record.internal.EndTransactionMarker;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeMap;

/**
 * One partition's producer state with its snapshot files: the {@link ProducerStateTable} in memory,
 * {@code <offset>.snapshot} files ({@link ProducerSnapshotFile}) on disk.
 *
 * <pre>
 *   orders-0/
 *     00000000000000000000.log
 *     00000000000000004242.log   00000000000000004242.snapshot   state at offset 4242 (taken at the roll)
 *     00000000000000009000.log   00000000000000009120.snapshot   state at the log end (clean close)
 * </pre>
 *
 * <p>A snapshot at offset N holds the state after every batch below N. Loading takes the latest
 * snapshot at or below the log end and replays the batch headers from its offset to the log end
 * (producer id, epoch, base sequence, offsets and max timestamp are all in the 61-byte header). A
 * snapshot that cannot be read is deleted and the next older one tried; without any, the state is
 * replayed from the first segment. Snapshots above the log end (left by a crash that lost the tail,
 * or by a truncation) are deleted before anything is loaded, so a later snapshot can never describe
 * a log that no longer exists.
 *
 * <p>Snapshot files are written without fsync, when a segment rolls and at close; the next flush
 * fsyncs them. Losing one costs only replay time: a missing, torn or zeroed file fails its length
 * or CRC check and an older snapshot (or the whole log) is used instead. Snapshots of deleted
 * segments go with them; the log prunes older ones once its recovery point passes them.
 *
 * <p>Thread-safety: none; the owning log calls it under its lock.
 */
final class ProducerStateManager {
    private static final Logger LOG = LoggerFactory.getLogger(ProducerStateManager.class);

    private File dir; // replaced when the replica moves to another log directory
    private final TopicPartition topicPartition;
    private final ProducerStateTable table;
    /** Snapshot files by offset. */
    private final TreeMap<Long, File> snapshots = new TreeMap<>();
    /** Snapshots written without fsync. */
    private final Set<Long> unsynced = new HashSet<>();
    /** The offset of the snapshot that matches the table exactly, or -1 when the table changed since. */
    private long snapshotOfTable = -1;

    private ProducerStateManager(File dir, TopicPartition topicPartition) throws IOException {
        this(dir, topicPartition, true);
    }

    private ProducerStateManager(File dir, TopicPartition topicPartition, boolean listSnapshots) throws IOException {
        this.dir = dir;
        this.topicPartition = topicPartition;
        this.table = new ProducerStateTable(topicPartition);
        if (!listSnapshots) {
            return;
        }
        File[] files = dir.listFiles();
        if (files == null) {
            throw new IOException("cannot list " + dir);
        }
        for (File f : files) {
            OptionalLong offset = LogFileNames.baseOffsetOf(f.getName(), LogFileNames.SNAPSHOT_SUFFIX);
            if (offset.isPresent()) {
                snapshots.put(offset.getAsLong(), f);
            }
        }
    }

    /**
     * The replica moved: its snapshot files are now those of {@code newDir} (written by the copy from
     * the same batches, and fsynced before the move committed). The table in memory stays as it is.
     */
    void relocate(File newDir) throws IOException {
        File[] files = newDir.listFiles();
        if (files == null) {
            throw new IOException("cannot list " + newDir);
        }
        dir = newDir;
        snapshots.clear();
        unsynced.clear();
        snapshotOfTable = -1;
        for (File f : files) {
            OptionalLong offset = LogFileNames.baseOffsetOf(f.getName(), LogFileNames.SNAPSHOT_SUFFIX);
            if (offset.isPresent()) {
                snapshots.put(offset.getAsLong(), f);
            }
        }
    }

    /** The state of a partition whose directory was just created: no producers, no snapshots, nothing listed. */
    static ProducerStateManager empty(File dir, TopicPartition tp) throws IOException {
        return new ProducerStateManager(dir, tp, false);
    }

    /**
     * Loads the state of a partition whose segments are loaded and recovered: deletes snapshots
     * outside [first segment base, log end], then reads the latest one and replays the log after it.
     */
    static ProducerStateManager load(File dir, TopicPartition tp, LogSegments segments, long logEndOffset) throws IOException {
        return load(dir, tp, segments, logEndOffset, logEndOffset);
    }

    /** As above, replaying from a snapshot at or below {@code snapshotAtMost} (see {@link #reload(LogSegments, long, long)}). */
    static ProducerStateManager load(File dir, TopicPartition tp, LogSegments segments, long logEndOffset, long snapshotAtMost)
            throws IOException {
        ProducerStateManager m = new ProducerStateManager(dir, tp);
        m.deleteSnapshotsBelow(segments.first().baseOffset());
        m.reload(segments, logEndOffset, snapshotAtMost);
        return m;
    }

    /** Deletes snapshots above the log end, reloads the latest remaining one and replays the log after it. */
    void reload(LogSegments segments, long logEndOffset) throws IOException {
        reload(segments, logEndOffset, logEndOffset);
    }

    /**
     * As {@link #reload(LogSegments, long)}, from the latest snapshot at or below {@code snapshotAtMost}
     * (the base of the first segment recovery rebuilt, whose transaction index the replay rebuilds).
     * Every ABORT marker replayed is put in its segment's transaction index unless already there.
     */
    void reload(LogSegments segments, long logEndOffset, long snapshotAtMost) throws IOException {
        deleteSnapshotsAbove(logEndOffset);
        table.clear();
        snapshotOfTable = -1;
        long from = segments.first().baseOffset();
        java.util.NavigableMap<Long, File> usable = snapshots.headMap(snapshotAtMost, true); // a live view
        while (!usable.isEmpty()) {
            Map.Entry<Long, File> latest = usable.lastEntry();
            try {
                table.load(ProducerSnapshotFile.read(latest.getValue()));
                from = latest.getKey();
                snapshotOfTable = from;
                break;
            } catch (IOException | RuntimeException e) {
                LOG.warn("{}: cannot load producer snapshot {} ({}); deleting it and trying an older one",
                        topicPartition, latest.getValue(), e.getMessage());
                snapshots.remove(latest.getKey());
                unsynced.remove(latest.getKey());
                try {
                    Files.deleteIfExists(latest.getValue().toPath());
                } catch (IOException deletion) {
                    LOG.warn("{}: cannot delete {}; ignoring it", topicPartition, latest.getValue(), deletion);
                }
            }
        }
        if (from < logEndOffset) {
            List<Map.Entry<LogSegment, ProducerStateTable.CompletedTxn>> aborted = new ArrayList<>();
            int batches = replay(segments, from, logEndOffset, (segment, txn) -> {
                if (txn.aborted()) {
                    aborted.add(Map.entry(segment, txn));
                }
            });
            for (Map.Entry<LogSegment, ProducerStateTable.CompletedTxn> a : aborted) {
                a.getKey().txnIndex().appendIfAbsent(a.getValue().indexEntry());
            }
            if (batches > 0) {
                snapshotOfTable = -1;
            }
            LOG.debug("{}: rebuilt producer state from offset {} to {} ({} batches, {} producers)",
                    topicPartition, from, logEndOffset, batches, table.size());
        }
    }

    private EndTransactionMarker markerAt(LogSegment s, int position, int size) {
        for (org.apache.kafka.common.record.internal.FileLogInputStream.FileChannelRecordBatch b : s.log().slice(position, size).batches()) {
            try {
                return ProducerStateTable.markerOf(b);
            } catch (org.apache.kafka.common.errors.CorruptRecordException e) {
                // appends refuse such a marker, so only a damaged file holds one: it closes nothing
                LOG.warn("{}: {}; it is replayed as a control batch that closes no transaction", topicPartition, e.getMessage());
                return null;
            }
        }
        return null;
    }

    /**
     * Applies the headers of the batches in [from, to) to the table; returns how many were read. Each
     * transaction a marker closes goes to {@code completed} with the segment holding the marker.
     */
    private int replay(LogSegments segments, long from, long to,
                       java.util.function.BiConsumer<LogSegment, ProducerStateTable.CompletedTxn> completed) {
        ByteBuffer header = BatchHeaders.fullBuffer();
        int count = 0;
        for (LogSegment s : segments.range(from, to)) {
            int end = s.log().sizeInBytes();
            int position = 0;
            if (from > s.baseOffset()) {
                LogSegment.BatchPosition start = s.translateOffset(from);
                if (start == null) {
                    continue;
                }
                position = start.position();
            }
            while (BatchHeaders.read(s.log().channel(), position, end, header)) {
                long base = BatchHeaders.baseOffset(header);
                if (base >= to) {
                    return count;
                }
                long last = BatchHeaders.lastOffset(header);
                if (last >= from) {
                    boolean control = BatchHeaders.isControl(header);
                    long producerId = BatchHeaders.producerId(header);
                    // a marker's type and coordinator epoch are in its control record: read that batch whole
                    EndTransactionMarker marker = control && producerId != RecordBatch.NO_PRODUCER_ID
                            ? markerAt(s, position, BatchHeaders.size(header)) : null;
                    Optional<ProducerStateTable.CompletedTxn> done = table.update(producerId, BatchHeaders.producerEpoch(header),
                            BatchHeaders.baseSequence(header), base, last, BatchHeaders.maxTimestamp(header),
                            control, BatchHeaders.isTransactional(header), marker);
                    if (done.isPresent()) {
                        completed.accept(s, done.get());
                    }
                    count++;
                }
                position += BatchHeaders.size(header);
            }
        }
        return count;
    }

    /** See {@link ProducerStateTable#checkCoordinatorAppend}. */
    void checkCoordinatorAppend(Iterable<? extends RecordBatch> batches, VerificationGuard guard) {
        table.checkCoordinatorAppend(batches, guard);
    }

    /** See {@link ProducerStateTable#checkAppend}. */
    Optional<BatchMetadata> checkAppend(Iterable<? extends RecordBatch> batches, boolean neverWritten,
                                        VerificationGuard guard) {
        return table.checkAppend(batches, neverWritten, guard);
    }

    /** See {@link ProducerStateTable#startVerification}. */
    VerificationGuard startVerification(long producerId, short epoch, boolean supportsEpochBump) {
        return table.startVerification(producerId, epoch, supportsEpochBump);
    }

    /**
     * Applies a batch as written to the log.
     *
     * @return the transaction it closed, if it is a COMMIT or ABORT marker
     */
    Optional<ProducerStateTable.CompletedTxn> update(RecordBatch batch) {
        if (!batch.hasProducerId()) {
            return Optional.empty();
        }
        snapshotOfTable = -1;
        return table.update(batch);
    }

    /** See {@link ProducerStateTable#checkMarker(long, short, int, short)}. */
    void checkMarker(long producerId, short epoch, int coordinatorEpoch, short transactionVersion) {
        table.checkMarker(producerId, epoch, coordinatorEpoch, transactionVersion);
    }

    void onHighWatermarkUpdated(long highWatermark) {
        table.onHighWatermarkUpdated(highWatermark);
    }

    long firstUnstableOffset() {
        return table.firstUnstableOffset();
    }

    Map<Long, Long> ongoingTransactions() {
        return table.ongoingTransactions();
    }

    int removeExpired(long nowMs, long expirationMs) {
        int removed = table.removeExpired(nowMs, expirationMs);
        if (removed > 0) {
            snapshotOfTable = -1;
        }
        return removed;
    }

    Optional<ProducerStateEntry> entry(long producerId) {
        return table.entry(producerId);
    }

    Map<Long, ProducerStateEntry> entries() {
        return table.entries();
    }

    /**
     * Writes the table as the snapshot at {@code logEndOffset} (replacing one already there).
     *
     * @param sync fsync the file and directory now (clean close); otherwise the next {@link #flush}
     */
    void takeSnapshot(long logEndOffset, boolean sync) throws IOException {
        File file = LogFileNames.producerSnapshotFile(dir, logEndOffset);
        ProducerSnapshotFile.write(file, table.entries().values(), sync);
        snapshots.put(logEndOffset, file);
        if (sync) {
            unsynced.remove(logEndOffset);
        } else {
            unsynced.add(logEndOffset);
        }
        snapshotOfTable = logEndOffset;
    }

    /** Whether the snapshot at {@code logEndOffset} exists and matches the table. */
    boolean hasSnapshotOfTableAt(long logEndOffset) {
        return snapshotOfTable == logEndOffset && snapshots.containsKey(logEndOffset);
    }

    /** Fsyncs snapshots written without it. The caller fsyncs the directory. */
    void flush() throws IOException {
        for (Long offset : List.copyOf(unsynced)) {
            File f = snapshots.get(offset);
            if (f != null) {
                ProducerSnapshotFile.fsync(f);
            }
            unsynced.remove(offset);
        }
    }

    /** Deletes the snapshots below {@code offset}; returns how many. */
    int deleteSnapshotsBelow(long offset) throws IOException {
        return delete(new ArrayList<>(snapshots.headMap(offset, false).keySet()));
    }

    /**
     * Deletes snapshots below both the segment holding the recovery point and the second-to-last
     * segment (Kafka keeps the same ones): loading uses the latest snapshot at or below the log end,
     * and a crash cannot take the log end below the recovery point.
     *
     * @return how many were deleted
     */
    int deleteSnapshotsBeforeRecoveryPoint(LogSegments segments, long recoveryPoint) throws IOException {
        LogSegment active = segments.active();
        LogSegment previous = segments.floor(active.baseOffset() - 1);
        LogSegment atRecoveryPoint = segments.floor(recoveryPoint);
        long keepFrom = Math.min(previous == null ? active.baseOffset() : previous.baseOffset(),
                atRecoveryPoint == null ? recoveryPoint : atRecoveryPoint.baseOffset());
        return deleteSnapshotsBelow(keepFrom);
    }

    /** Deletes the snapshots above {@code offset}; returns how many. */
    int deleteSnapshotsAbove(long offset) throws IOException {
        return delete(new ArrayList<>(snapshots.tailMap(offset, false).keySet()));
    }

    /** Forgets every producer and deletes every snapshot (the log was emptied). */
    void truncateFully() throws IOException {
        table.clear();
        snapshotOfTable = -1;
        delete(new ArrayList<>(snapshots.keySet()));
    }

    private int delete(List<Long> offsets) throws IOException {
        for (long offset : offsets) {
            File f = snapshots.get(offset);
            Files.deleteIfExists(f.toPath());
            snapshots.remove(offset);
            unsynced.remove(offset);
            if (snapshotOfTable == offset) {
                snapshotOfTable = -1;
            }
        }
        return offsets.size();
    }

    /** Offsets of the snapshot files, ascending. */
    List<Long> snapshotOffsets() {
        return List.copyOf(snapshots.keySet());
    }
}
