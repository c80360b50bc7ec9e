package dev.varve.storage;

import dev.varve.storage.checkpoint.CheckpointFile;

import java.io.File;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.OptionalInt;

/**
 * The leader epochs of one partition and the offset each began at, checkpointed to
 * {@code leader-epoch-checkpoint} ({@code epoch startOffset} lines) on every change.
 *
 * <p>This is what lets a replica that becomes a follower truncate to where its log diverges from
 * the new leader's, instead of blindly to its high watermark (KIP-101). Epochs and start offsets are
 * strictly increasing. Thread-safe (all methods synchronize).
 *
 * <p>A truncation rewrites the checkpoint at once, atomically but without fsync (a broker taking over
 * thousands of partitions must not pay thousands of fsyncs, the problem Kafka fixed in KAFKA-15046). A
 * new epoch ({@link #assign}) is only written by the next {@link #flush()} or truncation: a broker
 * becoming leader of 10,000 partitions would otherwise write 10,000 files on the metadata thread
 * (Kafka also writes it in the background). {@link #flush()} writes and fsyncs; the log calls it
 * before moving its recovery point, so the epochs of every flushed batch are on disk, and epochs of
 * unflushed batches are rebuilt from the batches themselves when the log is recovered. A checkpoint
 * lost in a power failure is rebuilt from the batches' epochs when the log is loaded.
 */
public final class LeaderEpochCache {
    public static final int UNDEFINED_EPOCH = -1;
    public static final long UNDEFINED_EPOCH_OFFSET = -1L;

    /** The answer to OffsetForLeaderEpoch: the largest epoch at most the one asked and where it ended. */
    public record EpochEndOffset(int epoch, long endOffset) {
    }

    private static final CheckpointFile.Formatter<EpochEntry> FORMAT = new CheckpointFile.Formatter<>() {
        @Override
        public String toLine(EpochEntry e) {
            return e.epoch() + " " + e.startOffset();
        }

        @Override
        public EpochEntry fromLine(String line) {
            String[] parts = line.split(" ");
            if (parts.length != 2) {
                throw new IllegalArgumentException(line);
            }
            EpochEntry entry = new EpochEntry(Integer.parseInt(parts[0]), Long.parseLong(parts[1]));
            if (entry.epoch() < 0 || entry.startOffset() < 0) {
                throw new IllegalArgumentException(line);
            }
            return entry;
        }
    };

    private CheckpointFile<EpochEntry> checkpoint; // guarded by this; replaced when the replica moves
    private final List<EpochEntry> entries = new ArrayList<>();
    /**
     * The latest entry's epoch, {@link #NO_EPOCH} when there is none: read without the lock, since a
     * follower asks for it for every partition at every fetch.
     */
    private volatile int latest = NO_EPOCH;
    private static final int NO_EPOCH = Integer.MIN_VALUE;
    private boolean dirty;
    /** Entries assigned since the file was last written. */
    private boolean unwritten;

    private LeaderEpochCache(File file) {
        this.checkpoint = new CheckpointFile<>(file, FORMAT);
    }

    /**
     * Loads the checkpoint in {@code partitionDir}. A missing file is an empty cache; a malformed
     * one throws, and the loader rebuilds the cache from the batches' epochs.
     */
    public static LeaderEpochCache load(File partitionDir) throws IOException {
        LeaderEpochCache cache = new LeaderEpochCache(new File(partitionDir, LogFileNames.LEADER_EPOCH_CHECKPOINT));
        List<EpochEntry> read = cache.checkpoint.read();
        for (int i = 1; i < read.size(); i++) {
            if (read.get(i).epoch() <= read.get(i - 1).epoch() || read.get(i).startOffset() < read.get(i - 1).startOffset()) {
                throw new dev.varve.storage.checkpoint.CorruptCheckpointException(
                        cache.checkpoint.file() + " is not increasing at line " + (i + 3));
            }
        }
        cache.entries.addAll(read);
        cache.refreshLatest();
        return cache;
    }

    /** An empty cache writing to the checkpoint in {@code partitionDir} (replacing a corrupt one). */
    public static LeaderEpochCache empty(File partitionDir) {
        return new LeaderEpochCache(new File(partitionDir, LogFileNames.LEADER_EPOCH_CHECKPOINT));
    }

    /** Records that {@code epoch} began at {@code startOffset}, if it is newer than the latest epoch. */
    public synchronized void assign(int epoch, long startOffset) {
        if (epoch < 0) {
            return;
        }
        if (!entries.isEmpty()) {
            EpochEntry last = entries.get(entries.size() - 1);
            if (epoch <= last.epoch()) {
                return;
            }
            // A newer epoch starting before older entries means those entries were never committed.
            entries.removeIf(e -> e.startOffset() >= startOffset);
        }
        entries.add(new EpochEntry(epoch, startOffset));
        refreshLatest();
        unwritten = true; // written by the next flush or truncation
    }

    /** Caller holds the lock and has just changed the entries. */
    private void refreshLatest() {
        latest = entries.isEmpty() ? NO_EPOCH : entries.get(entries.size() - 1).epoch();
    }

    public OptionalInt latestEpoch() {
        int l = latest;
        return l == NO_EPOCH ? OptionalInt.empty() : OptionalInt.of(l);
    }

    /** The epoch of the batch holding {@code offset}, if known. */
    public synchronized OptionalInt epochForOffset(long offset) {
        for (int i = entries.size() - 1; i >= 0; i--) {
            if (entries.get(i).startOffset() <= offset) {
                return OptionalInt.of(entries.get(i).epoch());
            }
        }
        return OptionalInt.empty();
    }

    /**
     * Kafka's OffsetForLeaderEpoch answer: for the latest epoch, the log end offset; for an older
     * one, the start offset of the next larger epoch, paired with the largest epoch at most the
     * requested one; undefined when the requested epoch is newer than any known.
     */
    public synchronized EpochEndOffset endOffsetFor(int requestedEpoch, long logEndOffset) {
        if (requestedEpoch == UNDEFINED_EPOCH || entries.isEmpty()) {
            return new EpochEndOffset(UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET);
        }
        EpochEntry latest = entries.get(entries.size() - 1);
        if (latest.epoch() == requestedEpoch) {
            return new EpochEndOffset(requestedEpoch, logEndOffset);
        }
        EpochEntry floor = null;
        for (EpochEntry e : entries) {
            if (e.epoch() > requestedEpoch) {
                return floor == null
                        ? new EpochEndOffset(requestedEpoch, e.startOffset())
                        : new EpochEndOffset(floor.epoch(), e.startOffset());
            }
            floor = e;
        }
        return new EpochEndOffset(UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET);
    }

    /**
     * Drops entries starting at or after {@code endOffset} (the log was truncated there). The entries
     * are gone from memory even when writing the checkpoint fails (the write is retried by the next
     * flush).
     */
    public synchronized void truncateFromEnd(long endOffset) throws IOException {
        if (entries.removeIf(e -> e.startOffset() >= endOffset)) {
            refreshLatest();
            persist();
        }
    }

    /** Drops entries wholly before {@code startOffset} and moves the first one's start up to it. */
    public synchronized void truncateFromStart(long startOffset) throws IOException {
        boolean changed = false;
        while (entries.size() > 1 && entries.get(1).startOffset() <= startOffset) {
            entries.remove(0);
            changed = true;
        }
        if (!entries.isEmpty() && entries.get(0).startOffset() < startOffset) {
            entries.set(0, new EpochEntry(entries.get(0).epoch(), startOffset));
            changed = true;
        }
        if (changed) {
            refreshLatest();
            persist();
        }
    }

    /**
     * Makes the cache's entries exactly {@code source}'s (a moved replica's copy takes the epochs of the
     * log it replaces, including an epoch assigned on becoming leader before any batch of it); written
     * by the next flush.
     */
    synchronized void replaceWith(List<EpochEntry> source) {
        entries.clear();
        entries.addAll(source);
        refreshLatest();
        unwritten = true;
    }

    /**
     * The checkpoint now lives in {@code partitionDir} (the replica moved to another log directory);
     * the entries are written there by the next flush or close.
     */
    synchronized void relocate(File partitionDir) {
        checkpoint = new CheckpointFile<>(new File(partitionDir, LogFileNames.LEADER_EPOCH_CHECKPOINT), FORMAT);
        unwritten = true;
    }

    /** Empties the cache (and writes the empty checkpoint, so its absence later means loss). */
    public synchronized void clear() throws IOException {
        entries.clear();
        refreshLatest();
        persist();
    }

    public synchronized List<EpochEntry> entries() {
        return List.copyOf(entries);
    }

    private void persist() throws IOException {
        unwritten = true; // until the write succeeds: the next flush tries again
        checkpoint.write(entries, false);
        unwritten = false;
        dirty = true;
    }

    /** Writes (without fsync) epochs assigned since the file was last written; called when the log closes. */
    public synchronized void writeIfUnwritten() throws IOException {
        if (unwritten) {
            persist();
        }
    }

    /** Writes the checkpoint if epochs were assigned since, and fsyncs it if it changed since the last flush. */
    public synchronized void flush() throws IOException {
        writeIfUnwritten();
        if (!dirty) {
            return;
        }
        checkpoint.fsync();
        dirty = false;
    }
}
