package dev.varve.broker.group;

import org.apache.kafka.common.record.internal.SimpleRecord;

import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * Where the coordinator writes its records: the {@code __consumer_offsets} partition of a group.
 *
 * <p>An append writes the records to the local log before it returns (callers hold the group's
 * lock, so the stored order is the order of changes) and never waits for other nodes: the returned
 * {@link Write} completes once the records are committed (every in-sync replica has them), or
 * exceptionally with a Kafka exception when they are not. A caller applies a change to memory only
 * when its write completes normally, so what a client was told is what the next coordinator replays.
 */
public interface GroupStore {
    /**
     * @throws org.apache.kafka.common.errors.ApiException when the records cannot even be appended
     *         locally (not the leader, the ISR too small, the log offline)
     */
    Write append(String groupId, List<SimpleRecord> records);

    /**
     * A local append and its replication.
     *
     * @param lastOffset the offset of the append's last record in the offsets partition: later writes
     *                   have larger ones, which is how a change that completes late knows it was
     *                   superseded
     * @param committed  completes when the records are committed; exceptionally when they will not be
     */
    record Write(long lastOffset, CompletableFuture<Void> committed) {
        public static Write committedAt(long lastOffset) {
            return new Write(lastOffset, CompletableFuture.completedFuture(null));
        }
    }
}
