package dev.varve.broker.cluster;

import dev.varve.broker.replication.ReplicaLog;
import dev.varve.storage.EpochEntry;
import dev.varve.storage.PartitionLog;

import java.util.List;

/** A {@link PartitionLog} as the replication logic's {@link ReplicaLog}. */
record StorageReplicaLog(PartitionLog log) implements ReplicaLog {
    @Override
    public long logStartOffset() {
        return log.logStartOffset();
    }

    @Override
    public long logEndOffset() {
        return log.logEndOffset();
    }

    @Override
    public long highWatermark() {
        return log.highWatermark();
    }

    @Override
    public void updateHighWatermark(long offset) {
        log.updateHighWatermark(offset);
    }

    @Override
    public int latestEpoch() {
        return log.epochCache().latestEpoch().orElse(-1);
    }

    @Override
    public List<EpochEntry> epochEntries() {
        return log.epochCache().entries();
    }

    @Override
    public void assignEpoch(int epoch, long startOffset) {
        log.epochCache().assign(epoch, startOffset);
    }

    @Override
    public void truncateTo(long offset) {
        log.truncateTo(offset);
    }

    @Override
    public void truncateFullyAndStartAt(long offset) {
        log.truncateFullyAndStartAt(offset);
    }

    @Override
    public void deleteRecordsBefore(long offset) {
        log.deleteRecordsBefore(offset);
    }
}
