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
 *
 * <p>Moves a replica to another of its log directories on request ({@link #alterLogDir}, Kafka's
 * AlterReplicaLogDirs): a {@link ReplicaMove} per partition, copied by one scheduler task at a time
 * (at most {@link #MOVE_PASS_BYTES} per pass, paced by {@code replica.alter.log.dirs.io.max.bytes.per.second}),
 * swapped under the partition's lock. At start-up, before any partition loads, leftovers of moves are
 * settled ({@link #settleMoves}): an unfinished copy ({@code -future}) is deleted and its move begun
 * again once the logs are loaded; of a partition found in two directories, the one holding
 * {@link LogFileNames#MOVE_COMMITTED_MARKER} is the replica and the other is deleted.
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
    /** Bytes a mover pass copies at most (all moves together), before it yields its scheduler thread. */
    static final long MOVE_PASS_BYTES = 8L * 1024 * 1024;
    /** Bytes a move may still copy under the partition's lock when it swaps; beyond that it copies on unlocked. */
    static final long MOVE_SWAP_MAX_BYTES = 1024 * 1024;
    /** Replica moves between log directories in progress, by partition. */
    private final Map<TopicPartition, ReplicaMove> moves = new ConcurrentHashMap<>();
    /** Where a partition's log goes when it is created here (AlterReplicaLogDirs before the replica exists). */
    private final Map<TopicPartition, File> preferredDirs = new ConcurrentHashMap<>();
    private final java.util.concurrent.atomic.AtomicBoolean moverScheduled = new java.util.concurrent.atomic.AtomicBoolean();
    private final ReplicaMove.Hook moveHook;
    private final ReplicaMove.Host moveHost = new ReplicaMove.Host() {
        @Override
        public void checkpointDestination(File logDir) {
            for (Checkpoint kind : Checkpoint.values()) {
                checkpointDir(logDir, kind);
            }
        }

        @Override
        public void reportFailure(File logDir, Exception cause) {
            markFailed(logDir, cause);
        }

        @Override
        public void deleteLater(TopicPartition tp, LogSegments replaced, File dirToDelete, long delayMs) {
            scheduler.scheduleOnce("delete-moved-log-" + tp, () -> {
                for (LogSegment s : replaced.all()) {
                    try {
                        if (dirToDelete != null) {
                            s.deleteIfExists();
                        } else {
                            s.close();
                        }
                    } catch (IOException | RuntimeException e) {
                        LOG.debug("cannot release {} of {}: {}", s, tp, e.toString());
                    }
                }
                if (dirToDelete != null) {
                    try {
                        deleteRecursively(dirToDelete.toPath());
                    } catch (IOException e) {
                        LOG.warn("cannot remove {}", dirToDelete, e);
                    }
                }
            }, delayMs);
        }

        @Override
        public void deleteFilesLater(TopicPartition tp, List<File> files, long delayMs) {
            scheduler.scheduleOnce("delete-moved-files-" + tp, () -> {
                for (File f : files) {
                    try {
                        Files.deleteIfExists(f.toPath());
                    } catch (IOException e) {
                        LOG.debug("cannot remove {}: {}", f, e.toString());
                    }
                }
            }, delayMs);
        }
    };
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
        this(managerConfig, topicConfigs, time, scheduler, swapHook, ReplicaMove.Hook.NONE);
    }

    /** As above, with a hook called before each step of a replica move's swap (crash-injection tests). */
    LogManager(LogManagerConfig managerConfig, Function<String, LogConfig> topicConfigs, Time time, Scheduler scheduler,
               SegmentSwap.Hook swapHook, ReplicaMove.Hook moveHook) {
        this.moveHook = moveHook;
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
        Settled settled = settleMoves();
        for (File dir : managerConfig.logDirs()) {
            loadDir(dir, settled.notLoaded());
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
        settled.restart().forEach((tp, destination) -> {
            PartitionLog log = logs.get(tp);
            if (log != null && !sameDir(log.dir().getParentFile(), destination)) {
                try {
                    alterLogDir(tp, destination);
                    LOG.info("{}: its move to {} was interrupted; it starts over", tp, destination);
                } catch (RuntimeException e) {
                    LOG.warn("{}: cannot start its interrupted move to {} again: {}", tp, destination, e.getMessage());
                }
            }
        });
    }

    /**
     * What {@link #settleMoves} found: partition directories not to load (an old copy that could not be
     * removed) and moves to begin again (partition to destination log directory).
     */
    private record Settled(Set<File> notLoaded, Map<TopicPartition, File> restart) {
    }

    /**
     * Settles what replica moves left behind (see {@link ReplicaMove}): an unfinished copy
     * ({@code <topic>-<partition>.<id>-future}) is deleted, and the move restarted after loading; a
     * committed copy (a partition directory holding {@link LogFileNames#MOVE_COMMITTED_MARKER}) is the
     * replica, so the partition's directory in any other log directory is renamed away for deletion and
     * the marker removed. Only the log directories are listed here, not the partition directories.
     */
    private Settled settleMoves() throws IOException {
        Set<File> notLoaded = new java.util.HashSet<>();
        Map<TopicPartition, File> restart = new HashMap<>();
        Map<TopicPartition, File> committed = new HashMap<>();
        for (File logDir : managerConfig.logDirs()) {
            Files.createDirectories(logDir.toPath());
            File[] children = logDir.listFiles(File::isDirectory);
            if (children == null) {
                continue; // loadDir reports it
            }
            for (File child : children) {
                TopicPartition future = LogFileNames.parseFutureDirName(child.getName());
                if (future != null) {
                    LOG.info("{}: deleting the unfinished copy {} left by an interrupted move", future, child);
                    try {
                        deleteRecursively(child.toPath());
                    } catch (IOException e) {
                        LOG.error("{}: cannot delete {}; it is ignored", future, child, e);
                    }
                    restart.put(future, logDir);
                    continue;
                }
                TopicPartition tp = LogFileNames.parseDirName(child.getName());
                if (tp != null && new File(child, LogFileNames.MOVE_COMMITTED_MARKER).exists()) {
                    committed.put(tp, child);
                }
            }
        }
        for (Map.Entry<TopicPartition, File> e : committed.entrySet()) {
            TopicPartition tp = e.getKey();
            File replica = e.getValue();
            boolean clean = true;
            for (File logDir : managerConfig.logDirs()) {
                File other = new File(logDir, LogFileNames.dirName(tp));
                if (sameDir(other, replica) || !other.exists()) {
                    continue;
                }
                File renamed = new File(logDir, LogFileNames.deleteDirName(tp));
                try {
                    Files.move(other.toPath(), renamed.toPath(), java.nio.file.StandardCopyOption.ATOMIC_MOVE);
                    dev.varve.storage.checkpoint.CheckpointFile.fsyncDirectory(logDir.toPath());
                    LOG.info("{}: {} replaced {} in a move before the last shutdown; deleting the old copy", tp, replica, other);
                } catch (IOException ex) {
                    LOG.error("{}: cannot remove the old copy {} of a moved replica (now {}); it is not loaded", tp, other,
                            replica, ex);
                    notLoaded.add(other.getAbsoluteFile());
                    clean = false;
                }
            }
            if (clean) {
                try {
                    Files.deleteIfExists(new File(replica, LogFileNames.MOVE_COMMITTED_MARKER).toPath());
                } catch (IOException ex) {
                    LOG.warn("{}: cannot remove {} (harmless: no other copy is left)", tp, LogFileNames.MOVE_COMMITTED_MARKER, ex);
                }
            }
        }
        return new Settled(notLoaded, restart);
    }

    private static boolean sameDir(File a, File b) {
        return a.toPath().toAbsolutePath().normalize().equals(b.toPath().toAbsolutePath().normalize());
    }

    private void loadDir(File dir, Set<File> notLoaded) throws IOException {
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
            } else if (notLoaded.contains(child.getAbsoluteFile())) {
                LOG.warn("not loading {}: another log directory holds the replica of {}", child, tp);
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
                File preferred = preferredDirs.remove(tp);
                File parent = preferred != null && !failedDirs.contains(preferred.getAbsolutePath()) ? preferred : leastLoadedDir();
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
        // the directory at the time of the event: a replica moves between log directories
        log.onStorageFailure(e -> markFailed(log.dir().getParentFile(), e));
        log.onRecoveryPointLowered(() -> loweredRecoveryPoints.add(log.dir().getParentFile()));
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

    // ---------------------------------------------------------------- moving replicas between log directories

    /** What {@link #alterLogDir} did. */
    public enum AlterLogDirResult {
        /** A move to the directory started. */
        MOVING,
        /** The replica is already in the directory, or already moving there (a move elsewhere was stopped). */
        ALREADY_THERE,
        /** There is no log of the partition here: it will be created in the directory (remembered until then). */
        NO_LOG
    }

    /** A replica's copy in another log directory while it moves there (Kafka's "future" replica). */
    public record FutureReplica(TopicPartition topicPartition, File logDir, long sizeInBytes, long offsetLag) {
    }

    /**
     * The configured log directory named by {@code path}: its absolute path as configured, or
     * normalized (as DescribeLogDirs reports it); empty for any other path (Kafka's LOG_DIR_NOT_FOUND).
     */
    public Optional<File> logDir(String path) {
        for (File dir : managerConfig.logDirs()) {
            if (dir.getAbsolutePath().equals(path) || dir.toPath().toAbsolutePath().normalize().toString().equals(path)) {
                return Optional.of(dir);
            }
        }
        return Optional.empty();
    }

    /**
     * Moves the replica of {@code tp} to {@code logDir} (one of {@link #logDir}'s answers) while it keeps
     * serving: the copy is made in the background and swapped in (see {@link ReplicaMove}). A move to
     * another directory already in progress is stopped first; asking for the directory the replica is in
     * stops a move and keeps it there. Without a log here, the directory is remembered for when it is
     * created.
     *
     * @throws KafkaStorageException the directory failed, the partition is offline, or the copy cannot be created
     * @throws org.apache.kafka.common.errors.LogDirNotFoundException {@code dir} is not one of {@code log.dirs}
     */
    public AlterLogDirResult alterLogDir(TopicPartition tp, File dir) {
        File logDir = managerConfig.logDirs().stream().filter(d -> sameDir(d, dir)).findFirst()
                .orElseThrow(() -> new org.apache.kafka.common.errors.LogDirNotFoundException(dir + " is not in log.dirs"));
        if (failedDirs.contains(logDir.getAbsolutePath())) {
            throw new KafkaStorageException("log directory " + logDir.getAbsolutePath() + " is offline");
        }
        ReplicaMove started;
        lifecycleLock.readLock().lock();
        try {
            synchronized (stripe(tp)) {
                ensureOpen();
                PartitionLog log = logs.get(tp);
                if (log == null) {
                    if (offline.contains(tp)) {
                        throw new KafkaStorageException(tp + " is offline");
                    }
                    preferredDirs.put(tp, logDir);
                    return AlterLogDirResult.NO_LOG;
                }
                if (log.isOffline()) {
                    throw new KafkaStorageException(tp + " is offline");
                }
                ReplicaMove current = moves.get(tp);
                if (current != null) {
                    if (current.isActive() && sameDir(current.destinationLogDir(), logDir)) {
                        return AlterLogDirResult.ALREADY_THERE;
                    }
                    stopMove(current, true);
                }
                if (sameDir(log.dir().getParentFile(), logDir)) {
                    return AlterLogDirResult.ALREADY_THERE;
                }
                File target = new File(logDir, LogFileNames.dirName(tp));
                if (target.exists()) {
                    // a directory this broker did not load (the partition was found twice at start-up)
                    throw new KafkaStorageException("cannot move " + tp + " to " + logDir + ": " + target + " exists");
                }
                if (cleaner != null) {
                    cleaner.abortAndPause(tp); // as Kafka: no compaction while the copy is made
                }
                try {
                    started = ReplicaMove.start(log, logDir, time, scheduler, MOVE_SWAP_MAX_BYTES, moveHost, moveHook);
                } catch (IOException | RuntimeException e) {
                    if (cleaner != null) {
                        cleaner.resume(tp);
                    }
                    markFailed(logDir, e);
                    throw new KafkaStorageException("cannot create the copy of " + tp + " in " + logDir, e);
                }
                moves.put(tp, started);
            }
        } finally {
            lifecycleLock.readLock().unlock();
        }
        scheduleMover(0);
        return AlterLogDirResult.MOVING;
    }

    /** Replicas being copied to another log directory, with their size there and how far behind they are. */
    public List<FutureReplica> futureReplicas() {
        List<FutureReplica> out = new ArrayList<>();
        for (ReplicaMove m : moves.values()) {
            if (m.isActive()) {
                out.add(new FutureReplica(m.topicPartition(), m.destinationLogDir(), m.copy().size(), m.offsetLag()));
            }
        }
        return out;
    }

    /** The log directory {@code tp} is moving to, if it is. */
    public Optional<File> movingTo(TopicPartition tp) {
        ReplicaMove m = moves.get(tp);
        return m != null && m.isActive() ? Optional.of(m.destinationLogDir()) : Optional.empty();
    }

    private void scheduleMover(long delayMs) {
        if (!moves.isEmpty() && moverScheduled.compareAndSet(false, true)) {
            scheduler.scheduleOnce("replica-alter-log-dirs", this::runMoverPass, delayMs);
        }
    }

    /**
     * One pass of the mover: each move copies its share of {@link #MOVE_PASS_BYTES} (fewer when paced by
     * {@code replica.alter.log.dirs.io.max.bytes.per.second}); the next pass is scheduled while any move
     * is left, right away or after the time the bytes copied are worth at that rate.
     */
    private void runMoverPass() {
        moverScheduled.set(false);
        if (closed) {
            return;
        }
        long rate = managerConfig.replicaMoveBytesPerSecond();
        long budget = rate == Long.MAX_VALUE ? MOVE_PASS_BYTES : Math.max(1, Math.min(MOVE_PASS_BYTES, rate / 10));
        long copied = stepMoves(budget);
        long delayMs = rate == Long.MAX_VALUE ? 0 : Math.max(1, copied * 1000 / rate);
        scheduleMover(delayMs);
    }

    /** Runs one step of every move, each with an equal share of {@code maxBytes}; returns the bytes copied. */
    long stepMoves(long maxBytes) {
        List<ReplicaMove> current = List.copyOf(moves.values());
        if (current.isEmpty()) {
            return 0;
        }
        long share = Math.max(1, maxBytes / current.size());
        long copied = 0;
        for (ReplicaMove m : current) {
            try {
                copied += m.step(share);
            } catch (RuntimeException e) {
                LOG.error("moving {} failed", m.topicPartition(), e);
                m.stop(true);
            }
            if (!m.isActive()) {
                endMove(m);
            }
        }
        return copied;
    }

    /** After a move ended: forgotten, compaction resumed (its checkpoint entry follows the replica). */
    private void endMove(ReplicaMove m) {
        TopicPartition tp = m.topicPartition();
        if (!moves.remove(tp, m)) {
            return;
        }
        if (cleaner != null) {
            if (m.state() == ReplicaMove.State.DONE) {
                cleaner.moved(tp, m.sourceLogDir(), m.destinationLogDir());
            }
            cleaner.resume(tp);
        }
    }

    private void stopMove(ReplicaMove m, boolean deleteCopy) {
        m.stop(deleteCopy);
        endMove(m);
    }

    /**
     * Deletes a partition: its directory is renamed {@code <name>.<id>-delete} at once (so a restart
     * never loads it again) and removed in the background.
     */
    public void deleteLog(TopicPartition tp) {
        preferredDirs.remove(tp);
        if (cleaner != null) {
            cleaner.abortAndPause(tp); // a round in progress stops before the directory moves
        }
        PartitionLog log;
        ReplicaMove move;
        synchronized (stripe(tp)) {
            log = logs.remove(tp);
            move = moves.get(tp); // no move starts once the log is gone
        }
        if (move != null) {
            move.stop(true); // its copy goes first; waits for a step in progress (a swap completes)
            moves.remove(tp, move);
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
        for (ReplicaMove m : moves.values()) {
            // a move about to commit here: the destination must know the partition's offsets before its directory
            // is the replica's (its recovery point there is at least the replica's: the copy is fsynced)
            if (m.committing() && m.destinationLogDir().getAbsolutePath().equals(path)) {
                offsets.put(m.topicPartition(), kind.valueOf(m.source()));
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
        for (ReplicaMove m : List.copyOf(moves.values())) {
            m.stop(false); // waits for a step in progress; the copy's directory stays, so the next start moves it again
        }
        moves.clear();
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
