package dev.varve.storage;

import dev.varve.storage.checkpoint.CheckpointFile;
import org.apache.kafka.common.InvalidRecordException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.CorruptRecordException;
import org.apache.kafka.common.errors.KafkaStorageException;
import org.apache.kafka.common.errors.OffsetOutOfRangeException;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.utils.Time;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;

/**
 * Moves one partition's replica to another log directory of the same broker while it keeps serving
 * (Kafka's AlterReplicaLogDirs, KIP-113). The replica's {@link PartitionLog} stays the object every
 * caller holds; only its files move.
 *
 * <pre>
 *   &lt;source log dir&gt;/orders-0/                    the replica: reads, appends, truncations, retention
 *   &lt;destination log dir&gt;/orders-0.&lt;id&gt;-future/    the copy: the replica's batches, byte for byte, at
 *                                                 their offsets (appended as a follower appends: indexes,
 *                                                 producer state, epochs and .txnindex rebuilt)
 * </pre>
 *
 * <b>Copy.</b> Each {@link #step} copies a bounded number of bytes from the replica's log end of the
 * copy onward, reading the replica without its lock (as a fetch does), then fsyncs the copy. What the
 * replica did meanwhile is mirrored at the start of every step: a truncation (the lowest offset
 * truncated to, {@link PartitionLog#takeMoveTruncation}) cuts the copy there, a new log start (retention,
 * DeleteRecords) deletes the copy's segments below it, a log emptied past the copy's end empties the
 * copy. A batch read while the replica was being truncated fails the copy's checks (it is cut short,
 * or does not follow the copy's end) and is read again after the mirroring.
 *
 * <b>Swap.</b> Once a step finds the copy at the replica's log end, it takes the replica's lock
 * (appends wait from here on), mirrors and copies what is left (at most {@code swapMaxBytes}, else it
 * lets go and copies on), and then, still under the lock:
 *
 * <table>
 *   <caption>the swap, and what a crash at each step leaves</caption>
 *   <tr><th>step</th><th>after a crash before it, the next start</th></tr>
 *   <tr><td>{@link SwapStep#FLUSH_COPY}: epochs and {@code partition.metadata} copied, everything of the copy fsynced</td>
 *       <td rowspan="4">finds {@code -future}: deletes it, the replica is in its old directory; the move starts over</td></tr>
 *   <tr><td>{@link SwapStep#WRITE_MARKER}: {@code .varve-move-committed} created in the copy, its directory fsynced</td></tr>
 *   <tr><td>{@link SwapStep#CHECKPOINT_DESTINATION}: the destination's recovery-point, log-start-offset and
 *       high-watermark checkpoints written with the partition's entries</td></tr>
 *   <tr><td>{@link SwapStep#COMMIT}: rename {@code orders-0.<id>-future} to {@code orders-0} (the commit point),
 *       fsync the destination log directory</td></tr>
 *   <tr><td>{@link SwapStep#RENAME_SOURCE}: rename the old directory {@code orders-0.<id>-delete}, fsync its parent</td>
 *       <td rowspan="3">finds {@code orders-0} with the marker: it is the replica; any other {@code orders-0} is
 *       renamed away and deleted, then the marker removed</td></tr>
 *   <tr><td>{@link SwapStep#ADOPT}: the {@link PartitionLog} takes the copy's segments ({@link PartitionLog#adoptMovedCopy})</td></tr>
 *   <tr><td>{@link SwapStep#REMOVE_MARKER}: the marker deleted; the old files are removed after {@code file.delete.delay.ms}</td></tr>
 * </table>
 *
 * So after any crash exactly one directory is the replica, and it holds every batch the replica held:
 * before the commit the old one (nothing was appended to the copy that the replica lacks), after it the
 * new one (appends were held by the lock from the last copied batch until the swap). Between the
 * steps the file system's order of renames and the fsyncs above are relied on, as for the cleaner's
 * segment swap.
 *
 * <b>Failures.</b> A disk failure of the copy (the destination) before the commit reaches the log
 * manager's failure path for the destination directory ({@link Host#reportFailure}) and ends the move: the
 * copy is deleted, the replica stays where it was and never noticed. A failure after the commit
 * (the destination directory's fsync, the in-memory swap) takes the replica offline until the broker
 * restarts and the start-up above decides; a failed rename of the old directory is reported for the
 * source directory, the move completes, and the marker stays until a start removes the old copy.
 *
 * <p>Thread-safety: {@link #step} and {@link #stop} are serialized on the move; the replica's lock
 * is taken inside a step (replica, then copy), never the other way round.
 */
final class ReplicaMove {
    private static final Logger LOG = LoggerFactory.getLogger(ReplicaMove.class);

    /** The largest read of the replica per copy (a batch larger than this is still copied whole). */
    static final int CHUNK_BYTES = 1024 * 1024;

    /** The swap's steps in order; each is a crash-injection point of the tests ({@link Hook}). */
    enum SwapStep { FLUSH_COPY, WRITE_MARKER, CHECKPOINT_DESTINATION, COMMIT, RENAME_SOURCE, ADOPT, REMOVE_MARKER }

    /** Called before each swap step (tests throw from it to simulate a crash there). */
    interface Hook {
        Hook NONE = step -> { };

        void before(SwapStep step);
    }

    /** What a move needs from the log manager. */
    interface Host {
        /**
         * Writes the offset checkpoints of {@code logDir}, listing this move's partition while the move is
         * {@link #committing()}; throws {@link KafkaStorageException} (already reported) on failure.
         */
        void checkpointDestination(File logDir);

        /** The one disk-failure path: a write to {@code logDir} failed. */
        void reportFailure(File logDir, Exception cause);

        /** Closes the replaced segments after {@code delayMs}, then deletes {@code dirToDelete} (null: keep the files). */
        void deleteLater(TopicPartition tp, LogSegments replaced, File dirToDelete, long delayMs);

        /** Deletes {@code files} after {@code delayMs}. */
        void deleteFilesLater(TopicPartition tp, java.util.List<File> files, long delayMs);
    }

    enum State { COPYING, DONE, FAILED, STOPPED }

    private final TopicPartition tp;
    private final PartitionLog source;
    private final PartitionLog copy;
    private final File sourceLogDir;
    private final File destinationLogDir;
    private final File copyDir;
    private final long swapMaxBytes;
    private final Host host;
    private final Hook hook;
    private final Time time;
    /** When the swap took the replica's lock (nanoseconds of {@link #time}), for the log line. */
    private long lockedAtNanos;
    private volatile State state = State.COPYING;
    /** From the destination's checkpoint write until the replica's directory is the destination. */
    private volatile boolean committing;

    private ReplicaMove(PartitionLog source, PartitionLog copy, File destinationLogDir, File copyDir, long swapMaxBytes,
                        Host host, Hook hook, Time time) {
        this.time = time;
        this.tp = source.topicPartition();
        this.source = source;
        this.copy = copy;
        this.sourceLogDir = source.dir().getParentFile();
        this.destinationLogDir = destinationLogDir;
        this.copyDir = copyDir;
        this.swapMaxBytes = swapMaxBytes;
        this.host = host;
        this.hook = hook;
    }

    /**
     * Creates the (empty) copy of {@code source} in {@code destinationLogDir}, starting at the replica's log
     * start offset.
     *
     * @throws IOException the copy's directory cannot be created (the caller reports the destination)
     */
    static ReplicaMove start(PartitionLog source, File destinationLogDir, Time time, Scheduler scheduler, long swapMaxBytes,
                             Host host, Hook hook) throws IOException {
        TopicPartition tp = source.topicPartition();
        long start = source.underLock(() -> {
            source.takeMoveTruncation(); // what happened before the copy exists does not concern it
            return source.logStartOffset();
        });
        File copyDir = new File(destinationLogDir, LogFileNames.futureDirName(tp));
        PartitionLog copy = PartitionLog.open(copyDir, tp, source.config(), time, scheduler, start, start, start, true);
        copy.onStorageFailure(e -> host.reportFailure(destinationLogDir, e));
        LOG.info("Moving {} from {} to {}", tp, source.dir().getParentFile(), destinationLogDir);
        return new ReplicaMove(source, copy, destinationLogDir, copyDir, swapMaxBytes, host, hook, time);
    }

    TopicPartition topicPartition() {
        return tp;
    }

    PartitionLog source() {
        return source;
    }

    /** The copy (Kafka's "future" replica). */
    PartitionLog copy() {
        return copy;
    }

    File destinationLogDir() {
        return destinationLogDir;
    }

    /** The log directory the replica was in when the move started. */
    File sourceLogDir() {
        return sourceLogDir;
    }

    State state() {
        return state;
    }

    boolean isActive() {
        return state == State.COPYING;
    }

    /** Whether the destination's checkpoints must list the partition (see {@link Host#checkpointDestination}). */
    boolean committing() {
        return committing;
    }

    /** Offsets the copy is behind the replica (Kafka's offset lag of a future replica). */
    long offsetLag() {
        return Math.max(0, source.logEndOffset() - copy.logEndOffset());
    }

    // ------------------------------------------------------------------ copying

    /**
     * Copies up to {@code maxBytes} (at least one batch when there is one) and swaps once the copy has
     * caught up. Does nothing once the move has ended.
     *
     * @return the bytes copied
     */
    synchronized long step(long maxBytes) {
        if (state != State.COPYING) {
            return 0;
        }
        long copied = 0;
        try {
            source.underLock(() -> {
                mirror();
                return null;
            });
            copied = copyUnlocked(maxBytes);
            boolean caughtUp = copied < maxBytes; // this pass reached the replica's end (appends may have followed)
            toCopy(() -> {
                copy.updateHighWatermark(source.highWatermark());
                copy.flush(); // so the swap under the lock fsyncs only what it copies there
            });
            if (caughtUp || copy.logEndOffset() >= source.logEndOffset()) {
                copied += source.underLock(this::swapIfCaughtUp);
                if (state == State.DONE) {
                    // segments the copy deleted (mirrored truncations and log starts) were renamed *.deleted in
                    // its directory and scheduled for removal by their old paths: remove them by their new ones
                    File dir = source.dir();
                    File[] leftovers = dir.listFiles((d, name) -> name.endsWith(LogFileNames.DELETED_SUFFIX));
                    if (leftovers != null && leftovers.length > 0) {
                        host.deleteFilesLater(tp, java.util.List.of(leftovers), source.config().fileDeleteDelayMs());
                    }
                }
            }
        } catch (DestinationFailure e) {
            reportIfUnreported(e);
            fail("the destination failed", e.getCause());
        } catch (KafkaStorageException | IOException e) {
            // the replica's own disk (its failure is reported where it happened) or a closed log
            fail("the replica cannot be read", e);
        } catch (RuntimeException e) {
            fail("unexpected failure", e);
        }
        return copied;
    }

    /**
     * Brings the copy in line with what the replica did since the last look; the caller holds the
     * replica's lock.
     */
    private void mirror() {
        long truncatedTo = source.takeMoveTruncation();
        long start = source.logStartOffset();
        long end = source.logEndOffset();
        toCopy(() -> {
            if (truncatedTo < copy.logEndOffset()) {
                copy.truncateTo(truncatedTo);
            }
            if (copy.logEndOffset() < start || copy.logEndOffset() > end || copy.logStartOffset() > start) {
                copy.truncateFullyAndStartAt(start);
            } else if (copy.logStartOffset() < start) {
                copy.advanceLogStartOffset(start);
            }
        });
    }

    /** Copies until {@code maxBytes} are copied or the copy reaches the replica's end; returns the bytes. */
    private long copyUnlocked(long maxBytes) throws IOException {
        long copied = 0;
        while (copied < maxBytes) {
            long from = copy.logEndOffset();
            long end = source.logEndOffset();
            if (from >= end) {
                break;
            }
            LogSlice slice;
            try {
                slice = source.read(from, (int) Math.min(maxBytes - copied, CHUNK_BYTES), end, true);
            } catch (OffsetOutOfRangeException e) {
                // retention or a truncation moved the replica past the copy meanwhile: mirror and go on
                source.underLock(() -> {
                    mirror();
                    return null;
                });
                continue;
            }
            if (slice.isEmpty()) {
                break;
            }
            int size = slice.sizeInBytes();
            if (!append(slice)) {
                break; // the replica changed under the read; the next step mirrors it first
            }
            copied += size;
        }
        return copied;
    }

    /**
     * Appends the batches of {@code slice} to the copy. False when they are not a whole, valid sequence
     * after the copy's end because the replica was truncated while they were read (the truncation is
     * recorded, and the next mirror cuts the copy); a batch that fails its checks without any truncation
     * is corrupt in the replica, and the move fails.
     */
    private boolean append(LogSlice slice) throws IOException {
        ByteBuffer buffer = ByteBuffer.allocate(slice.sizeInBytes());
        slice.records().readInto(buffer, 0);
        MemoryRecords records = MemoryRecords.readableRecords(buffer);
        java.util.Iterator<org.apache.kafka.common.record.internal.MutableRecordBatch> batches = records.batches().iterator();
        if (batches.hasNext()) {
            RecordBatchStart first = new RecordBatchStart(batches.next());
            long from = copy.logEndOffset();
            if (first.base() < from && from <= first.last() && copy.logStartOffset() == from) {
                // the replica's log start is inside its first batch (DeleteRecords): the empty copy starts where
                // that batch does, as a follower does, and moves its log start up to the replica's at the next mirror
                toCopy(() -> copy.truncateFullyAndStartAt(first.base()));
            }
        }
        try {
            toCopy(() -> copy.appendAsFollower(records));
            return true;
        } catch (CorruptRecordException | InvalidRecordException e) {
            boolean truncated = source.underLock(() -> {
                long t = source.takeMoveTruncation();
                if (t == Long.MAX_VALUE) {
                    return false;
                }
                toCopy(() -> {
                    if (t < copy.logEndOffset()) {
                        copy.truncateTo(t);
                    }
                });
                return true;
            });
            if (!truncated) {
                throw new KafkaStorageException("a batch of " + tp + " at offset " + slice.fetchOffset()
                        + " cannot be copied: " + e.getMessage(), e);
            }
            return false;
        }
    }

    /** The offsets of a batch, read before the batch's buffer is handed to the copy. */
    private record RecordBatchStart(long base, long last) {
        RecordBatchStart(org.apache.kafka.common.record.internal.RecordBatch batch) {
            this(batch.baseOffset(), batch.lastOffset());
        }
    }

    // ------------------------------------------------------------------ swapping

    /**
     * Under the replica's lock: mirrors, copies the rest (giving up past {@code swapMaxBytes}) and swaps.
     *
     * @return the bytes copied under the lock
     */
    private long swapIfCaughtUp() throws IOException {
        if (state != State.COPYING) {
            return 0;
        }
        lockedAtNanos = time.nanoseconds();
        mirror();
        long copied = 0;
        while (copy.logEndOffset() < source.logEndOffset()) {
            if (copied >= swapMaxBytes) {
                return copied; // the producers are faster than this pass: copy on without the lock
            }
            LogSlice slice = source.read(copy.logEndOffset(), CHUNK_BYTES, source.logEndOffset(), true);
            if (slice.isEmpty() || !append(slice)) {
                return copied;
            }
            copied += slice.sizeInBytes();
        }
        swap();
        return copied;
    }

    /** The swap (see the class comment); the caller holds the replica's lock and the copy equals the replica. */
    private void swap() {
        File sourceDir = source.dir();
        File finalDir = new File(destinationLogDir, LogFileNames.dirName(tp));
        try {
            hook.before(SwapStep.FLUSH_COPY);
            toCopy(() -> {
                copy.updateHighWatermark(source.highWatermark());
                copy.replaceEpochs(source.epochCache().entries());
                copy.flush();
            });
            copyPartitionMetadata(sourceDir);
            hook.before(SwapStep.WRITE_MARKER);
            removeStaleMarker(sourceDir);
            toCopy(() -> {
                File marker = new File(copyDir, LogFileNames.MOVE_COMMITTED_MARKER);
                DiskFaults.check(DiskFaults.Op.CREATE, marker.toPath());
                Files.newByteChannel(marker.toPath(), StandardOpenOption.CREATE, StandardOpenOption.WRITE).close();
                CheckpointFile.fsyncDirectory(copyDir.toPath());
            });
            hook.before(SwapStep.CHECKPOINT_DESTINATION);
            committing = true;
            host.checkpointDestination(destinationLogDir);
            hook.before(SwapStep.COMMIT);
            toCopy(() -> {
                if (finalDir.exists()) {
                    throw new IOException(finalDir + " already exists");
                }
                DiskFaults.check(DiskFaults.Op.RENAME, finalDir.toPath());
                Files.move(copyDir.toPath(), finalDir.toPath(), StandardCopyOption.ATOMIC_MOVE);
            });
        } catch (DestinationFailure e) {
            reportIfUnreported(e);
            fail("the destination failed before the move committed", e.getCause());
            return;
        } catch (IOException | RuntimeException e) {
            fail("the swap failed before the move committed", e);
            return;
        }
        // ---- committed: from here on the destination is the replica
        try {
            CheckpointFile.fsyncDirectory(destinationLogDir.toPath());
        } catch (IOException e) {
            host.reportFailure(destinationLogDir, e);
            failAfterCommit("cannot fsync " + destinationLogDir + " after moving " + tp + " there", e);
            return;
        }
        hook.before(SwapStep.RENAME_SOURCE);
        File renamed = new File(sourceLogDir, LogFileNames.deleteDirName(tp));
        boolean sourceGone = false;
        boolean sourceRenamed = false;
        try {
            DiskFaults.check(DiskFaults.Op.RENAME, renamed.toPath());
            Files.move(sourceDir.toPath(), renamed.toPath(), StandardCopyOption.ATOMIC_MOVE);
            sourceRenamed = true;
            CheckpointFile.fsyncDirectory(sourceLogDir.toPath());
            sourceGone = true;
        } catch (IOException e) {
            // the move stands; the next start removes the old copy (the marker says which one is the replica)
            LOG.error("{} moved to {}, but its old directory {} could not be removed: {}", tp, destinationLogDir,
                    sourceDir, e.getMessage());
            host.reportFailure(sourceLogDir, e);
        }
        hook.before(SwapStep.ADOPT);
        LogSegments replaced;
        try {
            replaced = source.adoptMovedCopy(copy, finalDir, sourceRenamed ? renamed : sourceDir);
        } catch (IOException | RuntimeException e) {
            host.reportFailure(destinationLogDir, e);
            failAfterCommit("cannot take over the moved files of " + tp + " in " + finalDir, e);
            return;
        }
        committing = false;
        state = State.DONE;
        hook.before(SwapStep.REMOVE_MARKER);
        if (sourceGone) {
            try {
                Files.deleteIfExists(new File(finalDir, LogFileNames.MOVE_COMMITTED_MARKER).toPath());
            } catch (IOException e) {
                LOG.warn("cannot remove the move marker of {} in {} (the next start removes it): {}", tp, finalDir,
                        e.getMessage());
            }
        }
        host.deleteLater(tp, replaced, sourceRenamed ? renamed : null, source.config().fileDeleteDelayMs());
        LOG.info("Moved {} to {} (log end offset {}; appends waited {} ms for the swap)", tp, destinationLogDir,
                source.logEndOffset(), (time.nanoseconds() - lockedAtNanos) / 1_000_000);
    }

    /**
     * The broker's topic-id file goes along (written without fsync by the broker; fsynced with the copy
     * here). One that cannot be read is left behind: the broker writes it again where it is missing.
     */
    private void copyPartitionMetadata(File sourceDir) {
        File from = new File(sourceDir, LogFileNames.PARTITION_METADATA);
        byte[] content;
        try {
            content = from.isFile() ? Files.readAllBytes(from.toPath()) : null;
        } catch (IOException e) {
            LOG.warn("cannot read {}; the moved replica goes without it: {}", from, e.getMessage());
            content = null;
        }
        if (content == null) {
            return;
        }
        byte[] bytes = content;
        toCopy(() -> {
            File to = new File(copyDir, LogFileNames.PARTITION_METADATA);
            DiskFaults.check(DiskFaults.Op.CREATE, to.toPath());
            Files.write(to.toPath(), bytes);
            try (var channel = java.nio.channels.FileChannel.open(to.toPath(), StandardOpenOption.WRITE)) {
                DiskFaults.check(DiskFaults.Op.FSYNC, to.toPath());
                channel.force(true);
            }
        });
    }

    /**
     * A write of the copy failed: one of the copy's own writes reported it already (its failure listener
     * is the destination's failure path); a file operation of the move itself is reported here.
     */
    private void reportIfUnreported(DestinationFailure e) {
        if (e.getCause() instanceof IOException io) {
            host.reportFailure(destinationLogDir, io);
        }
    }

    /**
     * A marker left in the replica's own directory by an earlier move whose last step failed would make
     * a start after this commit find two directories with markers: it goes first.
     */
    private void removeStaleMarker(File sourceDir) throws IOException {
        File stale = new File(sourceDir, LogFileNames.MOVE_COMMITTED_MARKER);
        if (stale.exists()) {
            try {
                Files.deleteIfExists(stale.toPath());
                CheckpointFile.fsyncDirectory(sourceDir.toPath());
            } catch (IOException e) {
                host.reportFailure(sourceDir.getParentFile(), e);
                throw e;
            }
        }
    }

    // ------------------------------------------------------------------ endings

    /** Ends the move before its commit: the copy is deleted and the replica stays where it is. */
    private void fail(String why, Throwable cause) {
        committing = false;
        state = State.FAILED;
        LOG.error("Moving {} to {} failed ({}); it stays in {}: {}", tp, destinationLogDir, why,
                source.dir().getParentFile(), cause == null ? "" : cause.toString());
        discardCopy(true);
    }

    /** A failure past the commit: the replica goes offline and the next start decides from the files. */
    private void failAfterCommit(String message, Exception cause) {
        committing = false;
        state = State.FAILED;
        source.failMove(message, cause);
    }

    /**
     * Stops a move that has not swapped (a new destination was asked for, the partition is deleted, or
     * the broker shuts down); waits for a step in progress. With {@code deleteCopy} false the copy's
     * directory stays, and the next start begins the move again.
     */
    synchronized void stop(boolean deleteCopy) {
        if (state != State.COPYING) {
            return;
        }
        state = State.STOPPED;
        committing = false;
        discardCopy(deleteCopy);
    }

    private void discardCopy(boolean delete) {
        try {
            copy.close();
        } catch (IOException | RuntimeException e) {
            LOG.debug("closing the copy of {} failed: {}", tp, e.toString());
        }
        if (delete) {
            try {
                org.apache.kafka.common.utils.Utils.delete(copyDir); // the next start deletes what is left
            } catch (IOException e) {
                LOG.warn("cannot delete {} (the next start removes it): {}", copyDir, e.getMessage());
            }
        }
    }

    // ------------------------------------------------------------------ failures of the copy

    /** Something written to the copy (the destination directory). */
    private interface CopyAction {
        void run() throws IOException;
    }

    /** A write to the copy failed: the destination's failure, not the replica's. */
    private static final class DestinationFailure extends RuntimeException {
        DestinationFailure(Exception cause) {
            super(cause);
        }
    }

    private void toCopy(CopyAction action) {
        try {
            action.run();
        } catch (IOException | KafkaStorageException e) {
            throw new DestinationFailure(e);
        }
    }

    @Override
    public String toString() {
        return "ReplicaMove(" + tp + " -> " + destinationLogDir + ", " + state + ", lag " + offsetLag() + ")";
    }
}
