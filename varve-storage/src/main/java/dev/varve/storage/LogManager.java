package dev.varve.storage;

import dev.varve.storage.checkpoint.OffsetCheckpointFile;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.KafkaStorageException;
import org.apache.kafka.common.utils.Time;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;

/**
 * All partition logs of one broker across its log directories.
 *
 * <pre>
 *   &lt;log.dir&gt;/
 *     .kafka_cleanshutdown                present only while the broker is cleanly stopped
 *     recovery-point-offset-checkpoint    below these offsets everything is fsynced
 *     log-start-offset-checkpoint         DeleteRecords and retention positions
 *     replication-offset-checkpoint       high watermarks
 *     orders-0/  orders-1/  ...           one directory per partition
 * </pre>
 *
 * Loads every partition at start-up (recovering after an unclean shutdown), creates and deletes
 * partitions, and runs the background work on the injected scheduler: retention, flush.ms,
 * checkpoints, producer id expiration, and the log cleaner ({@link LogCleanerManager}) for compacted
 * topics. A partition that cannot be loaded is reported offline; it
 * never stops the others.
 */
public final class LogManager implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(LogManager.class);

    private final LogManagerConfig managerConfig;
    private final Function<String, LogConfig> topicConfigs;
    private final Time time;
    private final Scheduler scheduler;
    private final Map<TopicPartition, PartitionLog> logs = new ConcurrentHashMap<>();
    private final Set<TopicPartition> offline = ConcurrentHashMap.newKeySet();
    /** Partitions whose load cut flushed records (corruption at rest), see {@link #damagedAtLoad()}. */
    private final Set<TopicPartition> damagedAtLoad = ConcurrentHashMap.newKeySet();
    /** Absolute paths of log directories where a write failed (see {@link #failedLogDirs()}). */
    private final Set<String> failedDirs = ConcurrentHashMap.newKeySet();
    private final List<Runnable> failureListeners = new java.util.concurrent.CopyOnWriteArrayList<>();
    /** Creation and deletion of one partition's log hold its stripe; close() holds the write lock. */
    private final Object[] createLocks = new Object[64];
    private final java.util.concurrent.locks.ReentrantReadWriteLock lifecycleLock = new java.util.concurrent.locks.ReentrantReadWriteLock();
    {
        for (int i = 0; i < createLocks.length; i++) {
            createLocks[i] = new Object();
        }
    }
    /** Null when log.cleaner.enable is false. */
    private final LogCleanerManager cleaner;
    private volatile boolean started;
    private volatile boolean closed;

    /**
     * @param topicConfigs the log settings of each topic (defaults plus its overrides)
     */
    public LogManager(LogManagerConfig managerConfig, Function<String, LogConfig> topicConfigs, Time time, Scheduler scheduler) {
        this(managerConfig, topicConfigs, time, scheduler, SegmentSwap.Hook.NONE);
    }

    /** As above, with a hook called before each step of the cleaner's segment swaps (crash-injection tests). */
    LogManager(LogManagerConfig managerConfig, Function<String, LogConfig> topicConfigs, Time time, Scheduler scheduler,
               SegmentSwap.Hook swapHook) {
        this.managerConfig = managerConfig;
        this.topicConfigs = topicConfigs;
        this.time = time;
        this.scheduler = scheduler;
        this.cleaner = managerConfig.cleaner().enable()
                ? new LogCleanerManager(managerConfig.cleaner(), managerConfig.logDirs(), time, logs::values, swapHook)
                : null;
    }

    /** Loads all partitions and schedules background tasks. */
    public void startup() throws IOException {
        for (File dir : managerConfig.logDirs()) {
            loadDir(dir);
        }
        scheduler.schedulePeriodic("log-retention", this::cleanupLogs,
                managerConfig.retentionCheckIntervalMs(), managerConfig.retentionCheckIntervalMs());
        scheduler.schedulePeriodic("log-flusher", this::flushDueLogs,
                managerConfig.flushCheckIntervalMs(), managerConfig.flushCheckIntervalMs());
        scheduler.schedulePeriodic("recovery-point-checkpoint", () -> checkpoint(Checkpoint.RECOVERY_POINT),
                managerConfig.recoveryPointCheckpointIntervalMs(), managerConfig.recoveryPointCheckpointIntervalMs());
        scheduler.schedulePeriodic("log-start-offset-checkpoint", () -> checkpoint(Checkpoint.LOG_START_OFFSET),
                managerConfig.logStartOffsetCheckpointIntervalMs(), managerConfig.logStartOffsetCheckpointIntervalMs());
        scheduler.schedulePeriodic("high-watermark-checkpoint", () -> checkpoint(Checkpoint.HIGH_WATERMARK),
                managerConfig.highWatermarkCheckpointIntervalMs(), managerConfig.highWatermarkCheckpointIntervalMs());
        scheduler.schedulePeriodic("producer-id-expiration", this::removeExpiredProducers,
                managerConfig.producerIdExpirationCheckIntervalMs(), managerConfig.producerIdExpirationCheckIntervalMs());
        if (cleaner != null) {
            cleaner.startup(scheduler);
        }
        started = true;
    }

    private void loadDir(File dir) throws IOException {
        Files.createDirectories(dir.toPath());
        File marker = new File(dir, LogFileNames.CLEAN_SHUTDOWN_MARKER);
        boolean clean = marker.exists();
        Map<TopicPartition, Long> recoveryPoints = readCheckpoint(dir, LogFileNames.RECOVERY_POINT_CHECKPOINT);
        Map<TopicPartition, Long> startOffsets = readCheckpoint(dir, LogFileNames.LOG_START_OFFSET_CHECKPOINT);
        Map<TopicPartition, Long> highWatermarks = readCheckpoint(dir, LogFileNames.HIGH_WATERMARK_CHECKPOINT);
        File[] children = dir.listFiles(File::isDirectory);
        if (children == null) {
            throw new IOException("cannot list " + dir);
        }
        if (!clean && children.length > 0) {
            LOG.info("{} was not shut down cleanly: recovering partitions past their recovery points", dir);
        }
        // Partitions load in parallel (num.recovery.threads.per.data.dir): after an unclean shutdown each
        // one re-reads its unflushed tail, and a broker with thousands of partitions is otherwise back only
        // after all of them, one at a time. This thread loads too; the scheduler's threads help (a test
        // scheduler that runs nothing leaves it to this thread alone).
        record Found(File dir, TopicPartition tp) {
        }
        java.util.Queue<Found> queue = new java.util.concurrent.ConcurrentLinkedQueue<>();
        for (File child : children) {
            if (child.getName().endsWith(LogFileNames.DELETE_DIR_SUFFIX)) {
                deleteRecursively(child.toPath());
                continue;
            }
            TopicPartition tp = LogFileNames.parseDirName(child.getName());
            if (tp == null) {
                LOG.warn("ignoring {}: not a partition directory", child);
            } else {
                queue.add(new Found(child, tp));
            }
        }
        java.util.concurrent.atomic.AtomicInteger loading = new java.util.concurrent.atomic.AtomicInteger();
        Runnable worker = () -> {
            while (true) {
                loading.incrementAndGet(); // before the poll: the caller waits for every partition taken
                Found found = queue.poll();
                try {
                    if (found == null) {
                        return;
                    }
                    loadPartition(found.dir(), found.tp(), startOffsets, recoveryPoints, highWatermarks, clean);
                } finally {
                    loading.decrementAndGet();
                }
            }
        };
        int helpers = Math.min(managerConfig.recoveryThreadsPerDataDir(), queue.size()) - 1;
        for (int i = 0; i < helpers; i++) {
            scheduler.scheduleOnce("log-recovery-" + dir.getName(), worker, 0);
        }
        worker.run();
        while (loading.get() > 0) { // helpers finishing the partitions they took
            java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);
        }
        // The marker describes the state at start-up only: from now on a crash is unclean.
        Files.deleteIfExists(marker.toPath());
    }

    /** Opens one partition found at start-up; a partition that cannot be loaded is offline, the others go on. */
    private void loadPartition(File child, TopicPartition tp, Map<TopicPartition, Long> startOffsets,
                               Map<TopicPartition, Long> recoveryPoints, Map<TopicPartition, Long> highWatermarks, boolean clean) {
        try {
            PartitionLog log = PartitionLog.open(child, tp, topicConfigs.apply(tp.topic()), time, scheduler,
                    startOffsets.getOrDefault(tp, 0L), recoveryPoints.getOrDefault(tp, 0L),
                    highWatermarks.getOrDefault(tp, 0L), clean, managerConfig.startupVerification().verifiesAll(clean));
            if (log.damagedAtLoad()) {
                damagedAtLoad.add(tp);
            }
            watch(log);
            PartitionLog previous = logs.putIfAbsent(tp, log);
            if (previous != null) {
                log.close();
                LOG.error("{} exists in two log directories ({} and {}); using the first", tp, previous.dir(), child);
            } else {
                // Kafka skips expired producers when it loads a snapshot.
                log.removeExpiredProducers(managerConfig.producerIdExpirationMs());
            }
        } catch (IOException | RuntimeException e) {
            LOG.error("cannot load {} from {}; the partition is offline", tp, child, e);
            offline.add(tp);
        }
    }

    private Map<TopicPartition, Long> readCheckpoint(File dir, String name) {
        try {
            return new OffsetCheckpointFile(new File(dir, name)).read();
        } catch (IOException e) {
            LOG.warn("ignoring unreadable checkpoint {}: {}", new File(dir, name), e.getMessage());
            return Map.of();
        }
    }

    /** The log of {@code tp}, created in the least-loaded log directory if absent. */
    public PartitionLog getOrCreateLog(TopicPartition tp) {
        PartitionLog existing = logs.get(tp);
        if (existing != null) {
            return existing;
        }
        // Creations of different partitions run in parallel (a broker taking on a topic of thousands of
        // partitions creates them from several threads); the read lock keeps close() out meanwhile.
        lifecycleLock.readLock().lock();
        try {
            synchronized (stripe(tp)) {
                ensureOpen();
                existing = logs.get(tp);
                if (existing != null) {
                    return existing;
                }
                if (offline.contains(tp)) {
                    throw new KafkaStorageException(tp + " is offline");
                }
                File parent = leastLoadedDir();
                File dir = new File(parent, LogFileNames.dirName(tp));
                try {
                    // The new directory's entry in its parent is fsynced by the log's first flush.
                    PartitionLog log = PartitionLog.open(dir, tp, topicConfigs.apply(tp.topic()), time, scheduler);
                    watch(log);
                    logs.put(tp, log);
                    return log;
                } catch (IOException e) {
                    markFailed(parent, e);
                    throw new KafkaStorageException("cannot create log " + dir, e);
                }
            }
        } finally {
            lifecycleLock.readLock().unlock();
        }
    }

    private Object stripe(TopicPartition tp) {
        return createLocks[Math.floorMod(tp.hashCode(), createLocks.length)];
    }

    private File leastLoadedDir() {
        if (managerConfig.logDirs().size() == 1) {
            return managerConfig.logDirs().get(0);
        }
        Map<String, Integer> counts = new HashMap<>();
        for (PartitionLog log : logs.values()) {
            counts.merge(log.dir().getParentFile().getAbsolutePath(), 1, Integer::sum);
        }
        File best = managerConfig.logDirs().get(0);
        int bestCount = Integer.MAX_VALUE;
        for (File dir : managerConfig.logDirs()) {
            int c = counts.getOrDefault(dir.getAbsolutePath(), 0);
            if (c < bestCount) {
                best = dir;
                bestCount = c;
            }
        }
        return best;
    }

    private void watch(PartitionLog log) {
        File logDir = log.dir().getParentFile();
        log.onStorageFailure(e -> markFailed(logDir, e));
        log.onRecoveryPointLowered(() -> loweredRecoveryPoints.add(logDir));
    }

    /** Log directories where a truncation lowered a recovery point since their checkpoint was last written. */
    private final Set<File> loweredRecoveryPoints = ConcurrentHashMap.newKeySet();

    /**
     * Writes the recovery-point checkpoint of every log directory where a truncation lowered a
     * recovery point since it was last written, as Kafka does after truncating. Replica fetchers
     * call it after each fetch answer, before appending more to the truncated logs: a checkpoint
     * that still named the old recovery point would let the next start trust, without recovering
     * them, bytes the truncation removed (after a power failure the file may show them again). One
     * write per directory however many partitions the answer truncated. Cheap when nothing was
     * truncated.
     */
    public void checkpointLoweredRecoveryPoints() {
        if (loweredRecoveryPoints.isEmpty()) {
            return;
        }
        for (File dir : new ArrayList<>(loweredRecoveryPoints)) {
            loweredRecoveryPoints.remove(dir);
            try {
                checkpointDir(dir, Checkpoint.RECOVERY_POINT);
            } catch (KafkaStorageException e) {
                loweredRecoveryPoints.add(dir); // tried again next time; the directory is marked failed
                throw e;
            }
        }
    }

    private void markFailed(File logDir, Exception cause) {
        String path = logDir.getAbsolutePath();
        if (failedDirs.add(path)) {
            LOG.error("log directory {} failed ({}): its partitions answer KAFKA_STORAGE_ERROR to writes that fail", path,
                    cause.getMessage());
            for (Runnable listener : failureListeners) {
                try {
                    listener.run();
                } catch (RuntimeException e) {
                    LOG.warn("a storage failure listener failed", e);
                }
            }
        }
    }

    /**
     * Log directories where a write, roll, fsync or checkpoint failed since start-up (a full disk, an
     * unwritable or failing device). Nothing already written was changed by the failure: appends are
     * cut back to their start, and the recovery point stays below anything not fsynced. A single node
     * keeps retrying writes (they succeed again once space returns); a cluster broker with a failed
     * directory asks the controller to fence it, so leadership moves away, until it restarts.
     */
    public Set<String> failedLogDirs() {
        return Set.copyOf(failedDirs);
    }

    /** Called once for each log directory when it first fails (on the thread that saw the failure). */
    public void addStorageFailureListener(Runnable listener) {
        failureListeners.add(listener);
    }

    /** The log cleaner (compaction of {@code cleanup.policy=compact} topics), unless log.cleaner.enable is false. */
    public Optional<LogCleanerManager> cleaner() {
        return Optional.ofNullable(cleaner);
    }

    public Optional<PartitionLog> getLog(TopicPartition tp) {
        return Optional.ofNullable(logs.get(tp));
    }

    public Collection<PartitionLog> allLogs() {
        return logs.values();
    }

    public Set<TopicPartition> offlinePartitions() {
        return Set.copyOf(offline);
    }

    /**
     * Partitions whose start-up found corrupt flushed data and cut it ({@link PartitionLog#damagedAtLoad()}):
     * their replicas here hold less than they acknowledged, so a cluster broker registers as after an
     * unclean shutdown (it must not stay an in-sync replica or be elected with the damaged logs).
     */
    public Set<TopicPartition> damagedAtLoad() {
        return Set.copyOf(damagedAtLoad);
    }

    /** Applies a topic's new settings to its open logs. */
    public void updateTopicConfig(String topic, LogConfig config) {
        for (PartitionLog log : logs.values()) {
            if (log.topicPartition().topic().equals(topic)) {
                log.updateConfig(config);
            }
        }
    }

    /**
     * Kafka's DeleteRecords: moves the log start offset and checkpoints it before returning, so the
     * deleted records stay deleted after a crash.
     */
    public long deleteRecordsBefore(TopicPartition tp, long offset) {
        PartitionLog log = logs.get(tp);
        if (log == null) {
            throw new org.apache.kafka.common.errors.UnknownTopicOrPartitionException(tp + " has no log here");
        }
        long start = log.deleteRecordsBefore(offset);
        checkpointDir(log.dir().getParentFile(), Checkpoint.LOG_START_OFFSET);
        return start;
    }

    /**
     * Deletes a partition: its directory is renamed {@code <name>.<id>-delete} at once (so a restart
     * never loads it again) and removed in the background.
     */
    public void deleteLog(TopicPartition tp) {
        if (cleaner != null) {
            cleaner.abortAndPause(tp); // a round in progress stops before the directory moves
        }
        PartitionLog log;
        synchronized (stripe(tp)) {
            log = logs.remove(tp);
        }
        if (log == null) {
            if (cleaner != null) {
                cleaner.resume(tp);
            }
            return;
        }
        if (cleaner != null) {
            cleaner.remove(tp, log.dir().getParentFile());
        }
        try {
            log.close();
            File target = new File(log.dir().getParentFile(), LogFileNames.dirName(tp) + "."
                    + UUID.randomUUID().toString().replace("-", "") + LogFileNames.DELETE_DIR_SUFFIX);
            Files.move(log.dir().toPath(), target.toPath(), java.nio.file.StandardCopyOption.ATOMIC_MOVE);
            dev.varve.storage.checkpoint.CheckpointFile.fsyncDirectory(target.getParentFile().toPath());
            scheduler.scheduleOnce("delete-log-" + tp, () -> {
                try {
                    deleteRecursively(target.toPath());
                } catch (IOException e) {
                    LOG.warn("cannot remove {}", target, e);
                }
            }, log.config().fileDeleteDelayMs());
        } catch (IOException e) {
            throw new KafkaStorageException("cannot delete log of " + tp, e);
        }
    }

    /** Runs retention on every log; returns the number of segments deleted. */
    public int cleanupLogs() {
        int deleted = 0;
        for (PartitionLog log : logs.values()) {
            try {
                deleted += log.deleteOldSegments();
            } catch (KafkaStorageException e) {
                LOG.error("retention failed for {}", log.topicPartition(), e);
            }
        }
        if (deleted > 0) {
            checkpoint(Checkpoint.LOG_START_OFFSET);
        }
        return deleted;
    }

    /**
     * Forgets idempotent producers idle for {@code producer.id.expiration.ms} in every log.
     *
     * @return how many were forgotten
     */
    public int removeExpiredProducers() {
        int removed = 0;
        for (PartitionLog log : logs.values()) {
            try {
                removed += log.removeExpiredProducers(managerConfig.producerIdExpirationMs());
            } catch (RuntimeException e) {
                LOG.error("producer id expiration failed for {}", log.topicPartition(), e);
            }
        }
        return removed;
    }

    private void flushDueLogs() {
        for (PartitionLog log : logs.values()) {
            try {
                log.flushIfDue();
            } catch (KafkaStorageException e) {
                LOG.error("flush failed for {}", log.topicPartition(), e);
            }
        }
    }

    enum Checkpoint {
        RECOVERY_POINT(LogFileNames.RECOVERY_POINT_CHECKPOINT),
        LOG_START_OFFSET(LogFileNames.LOG_START_OFFSET_CHECKPOINT),
        HIGH_WATERMARK(LogFileNames.HIGH_WATERMARK_CHECKPOINT);

        final String fileName;

        Checkpoint(String fileName) {
            this.fileName = fileName;
        }

        long valueOf(PartitionLog log) {
            return switch (this) {
                case RECOVERY_POINT -> log.recoveryPoint();
                case LOG_START_OFFSET -> log.logStartOffset();
                case HIGH_WATERMARK -> log.highWatermark();
            };
        }
    }

    /** Writes one kind of checkpoint for every log directory. */
    public void checkpointAll() {
        for (Checkpoint c : Checkpoint.values()) {
            checkpoint(c);
        }
    }

    private void checkpoint(Checkpoint kind) {
        for (File dir : managerConfig.logDirs()) {
            checkpointDir(dir, kind);
        }
    }

    private synchronized void checkpointDir(File dir, Checkpoint kind) {
        Map<TopicPartition, Long> offsets = new HashMap<>();
        String path = dir.getAbsolutePath();
        for (PartitionLog log : logs.values()) {
            if (log.dir().getParentFile().getAbsolutePath().equals(path)) {
                offsets.put(log.topicPartition(), kind.valueOf(log));
            }
        }
        try {
            new OffsetCheckpointFile(new File(dir, kind.fileName)).write(offsets);
        } catch (IOException e) {
            markFailed(dir, e);
            throw new KafkaStorageException("cannot write " + kind.fileName + " in " + dir, e);
        }
    }

    private void ensureOpen() {
        if (closed) {
            throw new KafkaStorageException("log manager is shut down");
        }
    }

    /**
     * Clean shutdown: flush every log, write all checkpoints, close the files, then leave the
     * clean-shutdown marker so the next start skips recovery.
     */
    @Override
    public void close() throws IOException {
        lifecycleLock.writeLock().lock();
        try {
            if (closed) {
                return;
            }
            closed = true;
        } finally {
            lifecycleLock.writeLock().unlock();
        }
        if (cleaner != null) {
            cleaner.shutdown(); // waits for rounds in progress to stop; none leaves a swap behind
        }
        IOException failure = null;
        for (PartitionLog log : logs.values()) {
            try {
                log.flush();
                if (log.isOffline()) {
                    // its files may not match what it acknowledged: the next start must recover them
                    failure = new IOException(log.topicPartition() + " went offline after a disk failure");
                }
            } catch (KafkaStorageException e) {
                failure = new IOException("flush of " + log.topicPartition() + " failed", e);
            }
        }
        if (started || !logs.isEmpty()) {
            checkpointAll();
        }
        for (PartitionLog log : logs.values()) {
            try {
                log.close();
            } catch (IOException e) {
                failure = e;
            }
        }
        if (failure != null) {
            throw failure; // no marker: the next start recovers
        }
        for (File dir : managerConfig.logDirs()) {
            Files.createDirectories(dir.toPath());
            File marker = new File(dir, LogFileNames.CLEAN_SHUTDOWN_MARKER);
            Files.write(marker.toPath(), new byte[0]);
            dev.varve.storage.checkpoint.CheckpointFile.fsyncDirectory(dir.toPath());
        }
    }

    private static void deleteRecursively(Path root) throws IOException {
        org.apache.kafka.common.utils.Utils.delete(root.toFile()); // recursive; a missing path is fine
    }
}
