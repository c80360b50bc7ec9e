package dev.varve.broker.replication;

import dev.varve.storage.EpochEntry;

import java.util.List;

/**
 * The log under one replica, as the replication logic sees it: offsets, the high watermark and the
 * leader-epoch cache, and the two ways to cut it. The broker passes its {@code PartitionLog}; the
 * simulation an in-memory log with the same rules (a truncation removes the batch that holds the
 * offset whole and cuts the epoch cache at the new end; the high watermark stays within the log).
 * Appends are not here: their record types differ, and the replica logic only needs to know the log
 * end moved ({@link PartitionReplica#onLeaderAppend}).
 */
public interface ReplicaLog {
    long logStartOffset();

    long logEndOffset();

    long highWatermark();

    /** Sets the high watermark, clamped to the log. */
    void updateHighWatermark(long offset);

    /** The latest leader epoch in the epoch cache, or -1 when it is empty (no copy of the entries). */
    int latestEpoch();

    /** The leader-epoch cache's entries, oldest first (a snapshot). */
    List<EpochEntry> epochEntries();

    /** Makes {@code epoch} the latest, starting at {@code startOffset} (ignored when not newer than the latest). */
    void assignEpoch(int epoch, long startOffset);

    /** Removes everything at and after {@code offset} (the batch holding it goes whole). */
    void truncateTo(long offset);

    /** Empties the log and restarts it at {@code offset}. */
    void truncateFullyAndStartAt(long offset);

    /** Moves the log start up to {@code offset} (retention or DeleteRecords on the leader). */
    void deleteRecordsBefore(long offset);
}
