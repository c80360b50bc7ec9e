package dev.varve.storage;

import dev.varve.storage.checkpoint.CorruptCheckpointException;
import dev.varve.storage.index.CorruptIndexException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.File;
import java.io.IOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalLong;
import java.util.TreeMap;

/**
 * Opens a partition directory: removes leftovers of interrupted deletions, opens segments in offset
 * order, and after an unclean shutdown recovers every segment at or past the recovery point (valid
 * prefix kept, torn or corrupt tail cut, indexes rebuilt). With {@code verifyAll} (the broker's
 * {@code log.startup.verify}) every other segment is verified too — each batch's CRC and every
 * index entry ({@link SegmentRecovery#verify}) — and recovered the same way when it fails, so
 * corruption at rest (bit rot, a damaged file, a truncated flushed segment) is found before the log
 * serves anything. A corrupt segment never stops the load:
 * it is cut back to its last valid batch and the segments after it are removed, because offsets
 * past a hole cannot be trusted to be contiguous. Producer state is loaded last, from the latest
 * producer snapshot at or below the recovered log end plus the batch headers after it.
 */
final class LogLoader {
    private static final Logger LOG = LoggerFactory.getLogger(LogLoader.class);

    /** What is known about the partition from its directory's checkpoint files. */
    record Checkpoints(long logStartOffset, long recoveryPoint, long highWatermark, boolean cleanShutdown) {
        static final Checkpoints NEW = new Checkpoints(0, 0, 0, true);
    }

    /**
     * @param created whether the partition directory did not exist before this load
     * @param damaged whether the load cut records that had been flushed (or written before a clean
     *                shutdown): corruption at rest rather than an unflushed tail lost in a crash
     */
    record Loaded(LogSegments segments, LeaderEpochCache epochCache, ProducerStateManager producerState,
                  long logStartOffset, long logEndOffset, long recoveryPoint, long highWatermark, boolean created,
                  boolean damaged) {
    }

    /** What recovering or verifying the segments found. */
    private record RecoveryResult(long recoveryPoint, boolean damaged) {
    }

    private LogLoader() {
    }

    static Loaded load(File dir, TopicPartition tp, LogConfig config, Checkpoints checkpoints, long nowMs) throws IOException {
        return load(dir, tp, config, checkpoints, true, nowMs);
    }

    /** @param verifyAll also verify segments below the recovery point (every segment after a clean shutdown) */
    static Loaded load(File dir, TopicPartition tp, LogConfig config, Checkpoints checkpoints, boolean verifyAll,
                       long nowMs) throws IOException {
        if (createIfAbsent(dir)) {
            return loadCreated(dir, tp, config, checkpoints, nowMs);
        }
        completeInterruptedSwaps(dir, tp, config, nowMs);
        TreeMap<Long, File> logFiles = new TreeMap<>();
        File[] files = dir.listFiles();
        if (files == null) {
            throw new IOException("cannot list " + dir);
        }
        for (File f : files) {
            String name = f.getName();
            if (name.endsWith(LogFileNames.DELETED_SUFFIX) || name.endsWith(".tmp")) {
                Files.deleteIfExists(f.toPath());
                continue;
            }
            OptionalLong base = LogFileNames.baseOffsetOf(name, LogFileNames.LOG_SUFFIX);
            if (base.isPresent()) {
                logFiles.put(base.getAsLong(), f);
            }
        }
        // Index files whose log file is gone are leftovers of an interrupted deletion.
        for (File f : files) {
            for (String suffix : List.of(LogFileNames.INDEX_SUFFIX, LogFileNames.TIME_INDEX_SUFFIX, LogFileNames.TXN_INDEX_SUFFIX)) {
                OptionalLong base = LogFileNames.baseOffsetOf(f.getName(), suffix);
                if (base.isPresent() && !logFiles.containsKey(base.getAsLong())) {
                    Files.deleteIfExists(f.toPath());
                }
            }
        }

        LeaderEpochCache epochCache;
        boolean rebuildEpochs = false;
        boolean hasData = logFiles.values().stream().anyMatch(f -> f.length() > 0);
        try {
            epochCache = LeaderEpochCache.load(dir);
            if (hasData && !new File(dir, LogFileNames.LEADER_EPOCH_CHECKPOINT).exists()) {
                // The checkpoint is written with the first epoch assigned (the first batch, or becoming
                // leader): a missing one with data present was lost (it is not fsynced on every change).
                // A new, empty log writes none: thousands of new partitions must not cost a file each.
                rebuildEpochs = true;
                if (checkpoints.cleanShutdown()) {
                    LOG.warn("{}: the leader epoch checkpoint is missing; rebuilding it from the log", tp);
                } else {
                    // expected after a crash: new epochs are written by the next flush, not when assigned
                    LOG.debug("{}: the leader epoch checkpoint is missing after a crash; rebuilding it from the log", tp);
                }
                epochCache.clear();
            }
        } catch (CorruptCheckpointException e) {
            LOG.warn("{}: {}; rebuilding the leader epoch cache from the log", tp, e.getMessage());
            epochCache = LeaderEpochCache.empty(dir);
            rebuildEpochs = true;
        }

        LogSegments segments = new LogSegments();
        for (long base : logFiles.keySet()) {
            segments.add(LogSegment.open(dir, base, config, nowMs));
        }

        long recoveryPoint = checkpoints.recoveryPoint();
        // The transaction indexes of the segments past the recovery point may lack entries that were
        // not fsynced, or hold some of a lost tail: they are rebuilt by the producer-state replay below,
        // which then starts from a snapshot no later than the first of them.
        long rebuildTxnIndexesFrom = Long.MAX_VALUE;
        if (!checkpoints.cleanShutdown() && !segments.isEmpty()) {
            LogSegment firstUnflushed = segments.floor(recoveryPoint);
            rebuildTxnIndexesFrom = firstUnflushed == null ? segments.first().baseOffset() : firstUnflushed.baseOffset();
            for (LogSegment s : segments.all()) {
                if (s.baseOffset() >= rebuildTxnIndexesFrom) {
                    s.txnIndex().reset();
                }
            }
        }
        SegmentRecovery recovery = new SegmentRecovery();
        LeaderEpochCache cache = epochCache;
        boolean damaged = false;
        if (!checkpoints.cleanShutdown() || verifyAll) {
            // After a clean shutdown everything was flushed: nothing is past the recovery point.
            long flushedBelow = checkpoints.cleanShutdown() ? Long.MAX_VALUE : recoveryPoint;
            RecoveryResult result = recoverSegments(tp, segments, flushedBelow, checkpoints.logStartOffset(), verifyAll, recovery,
                    cache);
            recoveryPoint = result.recoveryPoint();
            damaged = result.damaged();
        } else {
            checkIndexes(tp, segments, recovery, cache);
        }
        if (rebuildEpochs) {
            cache.clear(); // recovery may have assigned epochs of the unflushed tail only
            for (LogSegment s : segments.all()) {
                s.log().batches().forEach(b -> cache.assign(b.partitionLeaderEpoch(), b.baseOffset()));
            }
        }

        if (segments.isEmpty()) {
            long start = checkpoints.logStartOffset();
            segments.add(LogSegment.open(dir, start, config, nowMs));
        }
        long logEndOffset = segments.active().readNextOffset();
        long logStartOffset = Math.max(checkpoints.logStartOffset(), segments.first().baseOffset());
        if (logStartOffset > logEndOffset) {
            // The records below the checkpointed log start offset are gone (deleted or lost with an
            // unflushed tail): start an empty log there, as Kafka does.
            LOG.warn("{}: log start offset {} is past the log end {}; starting an empty log at {}",
                    tp, logStartOffset, logEndOffset, logStartOffset);
            for (LogSegment s : segments.all()) {
                s.deleteIfExists();
            }
            segments = new LogSegments();
            segments.add(LogSegment.open(dir, logStartOffset, config, nowMs));
            cache.clear();
            logEndOffset = logStartOffset;
        }
        // Start first: moving the first entry up to the log start can put it at the log end, where
        // no batch of that epoch exists.
        cache.truncateFromStart(logStartOffset);
        cache.truncateFromEnd(logEndOffset);
        recoveryPoint = checkpoints.cleanShutdown() ? logEndOffset : Math.min(recoveryPoint, logEndOffset);
        long hw = Math.max(logStartOffset, Math.min(checkpoints.highWatermark(), logEndOffset));
        // Last, over the final segments: snapshots past the recovered log end are deleted first.
        ProducerStateManager producerState = ProducerStateManager.load(dir, tp, segments, logEndOffset,
                Math.min(logEndOffset, rebuildTxnIndexesFrom));
        return new Loaded(segments, cache, producerState, logStartOffset, logEndOffset, recoveryPoint, hw, false, damaged);
    }

    /**
     * Creates {@code dir} if it does not exist, in one mkdir: true if this call created it. The log
     * manager serialises the creation of a partition's directory, so a created directory is empty.
     */
    private static boolean createIfAbsent(File dir) throws IOException {
        try {
            Files.createDirectory(dir.toPath());
            return true;
        } catch (FileAlreadyExistsException e) {
            if (!dir.isDirectory()) {
                throw new IOException(dir + " exists and is not a directory", e);
            }
            return false;
        } catch (NoSuchFileException e) { // the log directory itself is missing
            Files.createDirectories(dir.toPath());
            return true;
        }
    }

    /**
     * A directory this load just created holds nothing: one empty segment at the checkpointed log
     * start, no epochs, no producers. Nothing is listed, read or recovered: opening thousands of new
     * partitions takes about 0.6x the time of the general path (docs/benchmarks.md); the result equals
     * what the general path gives for an empty directory ({@code LogLoaderTest}).
     */
    private static Loaded loadCreated(File dir, TopicPartition tp, LogConfig config, Checkpoints checkpoints, long nowMs)
            throws IOException {
        long start = checkpoints.logStartOffset();
        LogSegments segments = new LogSegments();
        segments.add(LogSegment.open(dir, start, config, nowMs));
        long recoveryPoint = checkpoints.cleanShutdown() ? start : Math.min(checkpoints.recoveryPoint(), start);
        return new Loaded(segments, LeaderEpochCache.empty(dir), ProducerStateManager.empty(dir, tp), start, start,
                recoveryPoint, start, true, false);
    }

    /**
     * Finishes what a crash interrupted in the cleaner's segment swap (see {@link SegmentSwap}):
     * {@code *.cleaned} files (a replacement still being written) are deleted, so the old segments
     * stay; a {@code <base>.log.swap} (a complete, fsynced replacement) wins: it is checked and
     * re-indexed like an unflushed segment, every regular segment whose base offset lies in
     * [base, end of the swap) is deleted, and the swap's files take their regular names. A
     * {@code .swap} index without its log file is a leftover and is deleted.
     */
    static void completeInterruptedSwaps(File dir, TopicPartition tp, LogConfig config, long nowMs) throws IOException {
        File[] files = dir.listFiles();
        if (files == null) {
            throw new IOException("cannot list " + dir);
        }
        TreeMap<Long, File> swaps = new TreeMap<>();
        for (File f : files) {
            String name = f.getName();
            if (name.endsWith(LogFileNames.CLEANED_SUFFIX)) {
                LOG.info("{}: deleting {}, left by an interrupted cleaning", tp, name);
                Files.deleteIfExists(f.toPath());
            } else if (name.endsWith(LogFileNames.SWAP_SUFFIX)) {
                String regular = name.substring(0, name.length() - LogFileNames.SWAP_SUFFIX.length());
                OptionalLong base = LogFileNames.baseOffsetOf(regular, LogFileNames.LOG_SUFFIX);
                if (base.isPresent()) {
                    swaps.put(base.getAsLong(), f);
                }
            }
        }
        for (File f : files) {
            String name = f.getName();
            if (name.endsWith(LogFileNames.SWAP_SUFFIX) && !swaps.containsValue(f)) {
                String regular = name.substring(0, name.length() - LogFileNames.SWAP_SUFFIX.length());
                boolean hasLog = false;
                for (String suffix : List.of(LogFileNames.INDEX_SUFFIX, LogFileNames.TIME_INDEX_SUFFIX, LogFileNames.TXN_INDEX_SUFFIX)) {
                    OptionalLong base = LogFileNames.baseOffsetOf(regular, suffix);
                    hasLog |= base.isPresent() && swaps.containsKey(base.getAsLong());
                }
                if (!hasLog) {
                    Files.deleteIfExists(f.toPath());
                }
            }
        }
        if (swaps.isEmpty()) {
            return;
        }
        SegmentRecovery recovery = new SegmentRecovery();
        for (long base : swaps.keySet()) {
            LogSegment swap = LogSegment.open(dir, base, config, nowMs, LogFileNames.SWAP_SUFFIX);
            long end;
            try {
                recovery.recover(swap, batch -> { });
                end = Math.max(swap.readNextOffset(), base + 1);
                swap.onBecomeInactive();
            } catch (IOException | RuntimeException e) {
                swap.close();
                throw e;
            }
            File[] current = dir.listFiles();
            if (current == null) {
                throw new IOException("cannot list " + dir);
            }
            for (File f : current) {
                OptionalLong old = LogFileNames.baseOffsetOf(f.getName(), LogFileNames.LOG_SUFFIX);
                if (old.isPresent() && old.getAsLong() >= base && old.getAsLong() < end) {
                    LOG.info("{}: completing an interrupted swap: {} is replaced by the compacted {}", tp, f.getName(), swaps.get(base).getName());
                    Files.deleteIfExists(f.toPath());
                    Files.deleteIfExists(LogFileNames.offsetIndexFile(dir, old.getAsLong()).toPath());
                    Files.deleteIfExists(LogFileNames.timeIndexFile(dir, old.getAsLong()).toPath());
                }
            }
            swap.changeFileSuffixes(LogFileNames.SWAP_SUFFIX, "");
            swap.close();
        }
        dev.varve.storage.checkpoint.CheckpointFile.fsyncDirectory(dir.toPath());
    }

    /**
     * Recovers segments at or past the recovery point and, with {@code verifyAll}, every segment below
     * it that fails {@link SegmentRecovery#verify}; below it without {@code verifyAll}, only segments
     * whose indexes look wrong are recovered. Bytes cut from a segment below the recovery point are
     * damage at rest (reported in the result): the segments after it are removed like after any hole.
     */
    private static RecoveryResult recoverSegments(TopicPartition tp, LogSegments segments, long recoveryPoint, long logStartOffset,
                                                  boolean verifyAll, SegmentRecovery recovery, LeaderEpochCache cache)
            throws IOException {
        List<LogSegment> all = new ArrayList<>(segments.all());
        boolean truncatedAHole = false;
        boolean damaged = false;
        for (int i = 0; i < all.size(); i++) {
            LogSegment s = all.get(i);
            if (truncatedAHole) {
                LOG.warn("{}: deleting {} which follows a truncated segment", tp, s);
                segments.remove(s.baseOffset());
                s.deleteIfExists();
                continue;
            }
            long next = i + 1 < all.size() ? all.get(i + 1).baseOffset() : Long.MAX_VALUE;
            if (next <= logStartOffset) {
                // Wholly below the log start: never read again (retention deletes it). It may also be the
                // leftover of a deletion whose rename failed, with a hole after it that means nothing.
                continue;
            }
            boolean unflushed = next > recoveryPoint;
            if (!unflushed) {
                if (verifyAll) {
                    String problem = recovery.verify(s);
                    if (problem == null) {
                        problem = contiguityProblem(s, next);
                    }
                    if (problem == null) {
                        continue;
                    }
                    LOG.error("{}: {} of {} failed verification: {}; recovering it", tp, s, s.log().file(), problem);
                } else if (indexesTrustworthy(tp, s)) {
                    String problem = contiguityProblem(s, next);
                    if (problem == null) {
                        continue;
                    }
                    LOG.error("{}: {} of {}: {}; recovering it", tp, s, s.log().file(), problem);
                }
            }
            int cut = recovery.recover(s, batch -> assignEpoch(cache, batch));
            if (next != Long.MAX_VALUE && s.readNextOffset() > next) {
                // Overlap: batches past the next segment's base (a truncation whose ftruncate a power failure
                // undid, with the recovery point not yet lowered). The next segment was written later: keep it.
                int overlapping = s.truncateTo(next);
                LOG.error("{}: {} overlaps the next segment at {}: {} bytes cut", tp, s, next, overlapping);
                damaged |= !unflushed;
            }
            if (!unflushed && cut > 0) {
                LOG.error("{}: {} bytes of flushed data in {} were corrupt and are cut; the records from offset {} on"
                        + " must be fetched again from another replica", tp, cut, s.log().file(), s.readNextOffset());
                damaged = true;
            }
            if (i + 1 < all.size()) {
                // A segment that lost bytes, or ends short of the next one's base (a tail lost at a batch
                // boundary), leaves a hole: offsets after it cannot be served contiguously.
                if (cut > 0 || s.readNextOffset() != next) {
                    truncatedAHole = true;
                    damaged |= !unflushed;
                } else {
                    s.onBecomeInactive(); // trimmed indexes with the final time-index entry, as on roll
                }
            }
        }
        long end = segments.isEmpty() ? recoveryPoint : segments.active().readNextOffset();
        return new RecoveryResult(Math.min(recoveryPoint, end), damaged);
    }

    /**
     * For a segment below the recovery point that is not the last: null when it ends exactly where the
     * next one begins, else what is wrong (a hole or an overlap). Trusted segments are checked too:
     * their CRCs can be valid while their extent is not (see {@link #recoverSegments}).
     */
    private static String contiguityProblem(LogSegment s, long next) {
        if (next == Long.MAX_VALUE) {
            return null;
        }
        try {
            long end = s.readNextOffset();
            return end == next ? null
                    : end < next ? "it ends at " + end + ", short of the next segment's base " + next
                    : "it ends at " + end + ", past the next segment's base " + next;
        } finally {
            s.offsetIndex().closeMapping();
            s.timeIndex().closeMapping();
        }
    }

    /** For a segment below the recovery point: whether its indexes can be used as they are. */
    private static boolean indexesTrustworthy(TopicPartition tp, LogSegment s) {
        if (s.size() > 0 && (s.offsetIndex().wasMissing() || s.timeIndex().wasMissing())) {
            LOG.warn("{}: an index of {} is missing; rebuilding", tp, s);
            return false;
        }
        try {
            s.offsetIndex().fullCheck();
            s.timeIndex().fullCheck();
            if (!s.lastIndexEntriesMatchLog()) {
                throw new CorruptIndexException("the last index entries of " + s + " do not match its log");
            }
            return true;
        } catch (CorruptIndexException e) {
            LOG.warn("{}: {}; rebuilding", tp, e.getMessage());
            return false;
        } finally {
            s.offsetIndex().closeMapping();
            s.timeIndex().closeMapping();
        }
    }

    private static void assignEpoch(LeaderEpochCache cache, RecordBatch batch) {
        if (batch.partitionLeaderEpoch() != RecordBatch.NO_PARTITION_LEADER_EPOCH) {
            cache.assign(batch.partitionLeaderEpoch(), batch.baseOffset());
        }
    }

    /**
     * After a clean shutdown indexes were trimmed and flushed: check each one's length and last
     * entries with positional reads (mapping thousands of idle indexes at start-up would cost
     * address space for nothing); rebuild whatever fails.
     */
    private static void checkIndexes(TopicPartition tp, LogSegments segments, SegmentRecovery recovery,
                                     LeaderEpochCache cache) throws IOException {
        for (LogSegment s : segments.all()) {
            try {
                if (s.size() > 0 && (s.offsetIndex().wasMissing() || s.timeIndex().wasMissing())) {
                    throw new CorruptIndexException("an index of " + s + " is missing");
                }
                s.offsetIndex().sanityCheck();
                s.timeIndex().sanityCheck();
            } catch (CorruptIndexException e) {
                LOG.warn("{}: {}; rebuilding", tp, e.getMessage());
                recovery.recover(s, batch -> assignEpoch(cache, batch));
            }
        }
    }
}
