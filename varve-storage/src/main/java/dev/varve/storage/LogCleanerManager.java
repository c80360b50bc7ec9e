package dev.varve.storage;

import dev.varve.storage.checkpoint.OffsetCheckpointFile;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.utils.Time;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.File;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.Supplier;

/**
 * The log cleaner of a broker: which compacted log to clean next, the {@code cleaner-offset-checkpoint}
 * of each log directory, and the workers that run on the log manager's scheduler.
 *
 * <pre>
 *   &lt;log.dir&gt;/cleaner-offset-checkpoint     per partition: the first offset not cleaned yet ("first dirty")
 * </pre>
 *
 * <p>Choosing a log (Kafka's rules): among logs with {@code cleanup.policy} containing {@code compact}, the
 * cleanable section runs from the first dirty offset to the first segment that is the active one, is not
 * wholly below the high watermark, or holds a record newer than {@code min.compaction.lag.ms}. A log is a
 * candidate when its dirty bytes are more than {@code min.cleanable.dirty.ratio} of its clean plus dirty
 * bytes, or when its oldest dirty batch is older than {@code max.compaction.lag.ms}; the candidate past
 * its max lag, else the dirtiest, is cleaned. With no candidate, a log whose kept tombstones and
 * transaction markers have all reached their delete horizon is re-cleaned to drop them.
 *
 * <p>Each of the {@code log.cleaner.threads} workers is a periodic scheduler task
 * ({@code log.cleaner.backoff.ms}); a pass cleans logs until none is a candidate (at most a few per pass,
 * so one pass never monopolises a scheduler thread for long) and then waits for the next period.
 *
 * <p>Thread-safety: safe; the manager's state is guarded by its monitor, never held while cleaning. A log
 * is cleaned by at most one worker at a time; {@link #abortAndPause} waits until its round has stopped.
 */
public final class LogCleanerManager {
    private static final Logger LOG = LoggerFactory.getLogger(LogCleanerManager.class);
    /** Rounds one pass of a worker runs at most before yielding its scheduler thread. */
    static final int MAX_ROUNDS_PER_PASS = 8;

    private final CleanerConfig config;
    private final Time time;
    private final Supplier<Collection<PartitionLog>> logs;
    private final List<LogCleaner> workers = new ArrayList<>();
    /** Guarded by this. */
    private final Map<File, Map<TopicPartition, Long>> checkpoints = new HashMap<>();
    private final Set<TopicPartition> inProgress = new HashSet<>();
    private final Set<TopicPartition> paused = new HashSet<>();
    private final Set<TopicPartition> aborting = new HashSet<>();
    private final Set<TopicPartition> uncleanable = new HashSet<>();
    private final Map<TopicPartition, Long> deleteHorizons = new HashMap<>();
    private boolean shutdown;

    /**
     * @param logs     the logs to consider (the log manager's current ones)
     * @param swapHook called before each step of a segment swap (tests inject crashes; otherwise NONE)
     */
    LogCleanerManager(CleanerConfig config, List<File> logDirs, Time time, Supplier<Collection<PartitionLog>> logs,
                      SegmentSwap.Hook swapHook) {
        this.config = config;
        this.time = time;
        this.logs = logs;
        for (int i = 0; i < config.threads(); i++) {
            workers.add(new LogCleaner(config, time, swapHook));
        }
        for (File dir : logDirs) {
            Map<TopicPartition, Long> read = new HashMap<>();
            try {
                read.putAll(new OffsetCheckpointFile(new File(dir, LogFileNames.CLEANER_OFFSET_CHECKPOINT)).read());
            } catch (IOException | RuntimeException e) {
                LOG.warn("ignoring unreadable {} in {} (compacted logs are cleaned from their start): {}",
                        LogFileNames.CLEANER_OFFSET_CHECKPOINT, dir, e.getMessage());
            }
            checkpoints.put(dir.getAbsoluteFile(), read);
        }
    }

    /** Schedules one periodic task per worker. */
    void startup(Scheduler scheduler) {
        long period = Math.max(1, config.backoffMs());
        for (int i = 0; i < workers.size(); i++) {
            LogCleaner worker = workers.get(i);
            scheduler.schedulePeriodic("log-cleaner-" + i, () -> runPass(worker), period, period);
        }
    }

    private void runPass(LogCleaner worker) {
        for (int i = 0; i < MAX_ROUNDS_PER_PASS; i++) {
            if (cleanOnce(worker).isEmpty()) {
                return;
            }
        }
    }

    /** Cleans the filthiest log now with the first worker; empty when nothing is cleanable. */
    public Optional<CleanResult> cleanFilthiestLog() {
        return cleanOnce(workers.get(0));
    }

    /** Cleans until no log is a candidate (at most {@code maxRounds} rounds); returns the rounds run. */
    public int cleanUntilDone(int maxRounds) {
        int rounds = 0;
        while (rounds < maxRounds && cleanFilthiestLog().isPresent()) {
            rounds++;
        }
        return rounds;
    }

    /** What one round did, for logs, metrics and tests. */
    public record CleanResult(TopicPartition topicPartition, long firstDirtyOffset, long endOffset, boolean completed,
                              long bytesRead, long bytesWritten, long recordsRead, long recordsRetained, long elapsedNanos) {
    }

    private Optional<CleanResult> cleanOnce(LogCleaner worker) {
        long nowMs = time.milliseconds();
        Choice choice = choose(nowMs);
        if (choice == null) {
            return Optional.empty();
        }
        TopicPartition tp = choice.log.topicPartition();
        try {
            LogCleaner.Result r = worker.clean(choice.log, choice.view, choice.range.firstDirty(),
                    choice.range.firstUncleanable(), () -> isAborting(tp));
            if (r.completed()) {
                recordDone(choice.log, r);
            }
            LOG.info("{}: cleaned offsets {}-{} ({}): read {} bytes, wrote {}, kept {} of {} records ({} of aborted"
                            + " transactions and {} markers dropped) in {} ms",
                    tp, r.firstDirtyOffset(), r.endOffset(), r.completed() ? "complete" : "stopped: the log changed",
                    r.bytesRead(), r.bytesWritten(), r.recordsRetained(), r.recordsRead(), r.abortedDropped(),
                    r.markersDropped(), r.elapsedNanos() / 1_000_000);
            return Optional.of(new CleanResult(tp, r.firstDirtyOffset(), r.endOffset(), r.completed(), r.bytesRead(),
                    r.bytesWritten(), r.recordsRead(), r.recordsRetained(), r.elapsedNanos()));
        } catch (LogCleaner.AbortedException e) {
            LOG.info("{}: cleaning aborted", tp);
            return Optional.of(new CleanResult(tp, choice.range.firstDirty(), choice.range.firstDirty(), false, 0, 0, 0, 0, 0));
        } catch (IOException | RuntimeException e) {
            LOG.error("{}: cleaning failed; the partition is not cleaned again until restart", tp, e);
            synchronized (this) {
                uncleanable.add(tp);
            }
            return Optional.of(new CleanResult(tp, choice.range.firstDirty(), choice.range.firstDirty(), false, 0, 0, 0, 0, 0));
        } finally {
            synchronized (this) {
                inProgress.remove(tp);
                notifyAll();
            }
        }
    }

    private record Choice(PartitionLog log, PartitionLog.CleaningView view, CleanableRange range) {
    }

    /** Picks a log and marks it in progress, or returns null. */
    private synchronized Choice choose(long nowMs) {
        if (shutdown) {
            return null;
        }
        Choice best = null;
        Choice tombstonesOnly = null;
        for (PartitionLog log : logs.get()) {
            TopicPartition tp = log.topicPartition();
            if (!log.config().compact() || inProgress.contains(tp) || paused.contains(tp) || uncleanable.contains(tp)) {
                continue;
            }
            PartitionLog.CleaningView view = log.cleaningView();
            if (view == null || !view.config().compact()) {
                continue;
            }
            Long checkpoint = checkpointsOf(log).get(tp);
            CleanableRange range;
            try {
                range = CleanableRange.of(view, checkpoint == null ? -1 : Math.min(checkpoint, view.truncatedTo()), nowMs);
            } catch (RuntimeException e) {
                LOG.warn("{}: cannot measure the dirty section: {}", tp, e.toString());
                continue;
            }
            if (checkpoint != null && view.truncatedTo() < checkpoint) {
                checkpointsOf(log).put(tp, range.firstDirty());
            }
            Choice c = new Choice(log, view, range);
            if (range.isCandidate(view.config().minCleanableDirtyRatio())) {
                if (best == null || range.compareTo(best.range) > 0) {
                    best = c;
                }
            } else if (tombstonesOnly == null) {
                Long horizon = deleteHorizons.get(tp);
                if (horizon != null && horizon != RecordBatch.NO_TIMESTAMP && horizon <= nowMs && range.firstDirty() > view.segments().get(0).segment().baseOffset()) {
                    tombstonesOnly = new Choice(log, view, new CleanableRange(range.firstDirty(), range.firstDirty(),
                            range.cleanBytes(), 0, false));
                }
            }
        }
        Choice chosen = best != null ? best : tombstonesOnly;
        if (chosen != null) {
            inProgress.add(chosen.log.topicPartition());
        }
        return chosen;
    }

    private synchronized boolean isAborting(TopicPartition tp) {
        return shutdown || aborting.contains(tp);
    }

    private synchronized void recordDone(PartitionLog log, LogCleaner.Result r) {
        TopicPartition tp = log.topicPartition();
        if (aborting.contains(tp) || shutdown) {
            return;
        }
        checkpointsOf(log).put(tp, r.endOffset());
        deleteHorizons.put(tp, r.latestDeleteHorizonMs());
        writeCheckpoint(log.dir().getParentFile());
    }

    private Map<TopicPartition, Long> checkpointsOf(PartitionLog log) {
        return checkpoints.computeIfAbsent(log.dir().getParentFile().getAbsoluteFile(), d -> new HashMap<>());
    }

    private void writeCheckpoint(File logDir) {
        Map<TopicPartition, Long> offsets = checkpoints.getOrDefault(logDir.getAbsoluteFile(), Map.of());
        try {
            new OffsetCheckpointFile(new File(logDir, LogFileNames.CLEANER_OFFSET_CHECKPOINT)).write(offsets);
        } catch (IOException e) {
            // Losing it costs only work: the next round starts from an older dirty offset.
            LOG.warn("cannot write {} in {}", LogFileNames.CLEANER_OFFSET_CHECKPOINT, logDir, e);
        }
    }

    /** The first dirty offset the cleaner checkpointed for {@code tp}, if any. */
    public synchronized Optional<Long> checkpointedOffset(TopicPartition tp) {
        for (Map<TopicPartition, Long> m : checkpoints.values()) {
            Long v = m.get(tp);
            if (v != null) {
                return Optional.of(v);
            }
        }
        return Optional.empty();
    }

    /**
     * Stops cleaning {@code tp}: a round in progress is aborted (its unfinished replacement deleted) and
     * this call waits until it has stopped; no new round starts until {@link #resume}.
     */
    public void abortAndPause(TopicPartition tp) {
        synchronized (this) {
            paused.add(tp);
            aborting.add(tp);
            try {
                while (inProgress.contains(tp)) {
                    wait();
                }
            } catch (InterruptedException e) {
                throw new org.apache.kafka.common.errors.InterruptException(e); // re-sets the interrupt flag
            } finally {
                aborting.remove(tp);
            }
        }
    }

    public synchronized void resume(TopicPartition tp) {
        paused.remove(tp);
    }

    /** {@code tp}'s replica moved from {@code fromLogDir} to {@code toLogDir}: its checkpoint entry follows it. */
    void moved(TopicPartition tp, File fromLogDir, File toLogDir) {
        synchronized (this) {
            Map<TopicPartition, Long> from = checkpoints.get(fromLogDir.getAbsoluteFile());
            Long firstDirty = from == null ? null : from.remove(tp);
            if (firstDirty != null) {
                checkpoints.computeIfAbsent(toLogDir.getAbsoluteFile(), d -> new HashMap<>()).put(tp, firstDirty);
                writeCheckpoint(toLogDir);
                writeCheckpoint(fromLogDir);
            }
        }
    }

    /** Forgets a deleted partition (after {@link #abortAndPause}): its checkpoint entry goes too. */
    void remove(TopicPartition tp, File logDir) {
        synchronized (this) {
            paused.remove(tp);
            uncleanable.remove(tp);
            deleteHorizons.remove(tp);
            Map<TopicPartition, Long> m = checkpoints.get(logDir.getAbsoluteFile());
            if (m != null && m.remove(tp) != null) {
                writeCheckpoint(logDir);
            }
        }
    }

    /** Aborts every round and waits until they have stopped; no round starts afterwards. */
    void shutdown() {
        synchronized (this) {
            shutdown = true;
            try {
                while (!inProgress.isEmpty()) {
                    wait();
                }
            } catch (InterruptedException e) {
                throw new org.apache.kafka.common.errors.InterruptException(e); // re-sets the interrupt flag
            }
        }
    }
}
