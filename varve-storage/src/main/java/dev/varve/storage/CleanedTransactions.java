package dev.varve.storage;

import dev.varve.storage.PartitionLog.SegmentRef;
import dev.varve.storage.index.TransactionIndex;
import dev.varve.storage.index.TransactionIndex.AbortedTxn;
import org.apache.kafka.common.InvalidRecordException;
import org.apache.kafka.common.record.internal.ControlRecordType;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.utils.internals.BufferSupplier;
import org.apache.kafka.common.utils.internals.CloseableIterator;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * What one cleaning round knows about transactions: which data batches an aborted transaction wrote,
 * and, as the round walks the log batch by batch from its first segment, whether a transaction marker
 * still has data of its transaction before it. Kafka's cleaner keeps the same state across the groups
 * of a round (its {@code CleanedTransactionMetadata}); the rules are Kafka's:
 *
 * <ul>
 *   <li>A transactional data batch of producer P at offset o belongs to an aborted transaction when an
 *       entry of P in a segment's {@code .txnindex} covers o (from the transaction's first offset to
 *       its ABORT marker). The cleaner drops its records.</li>
 *   <li>A COMMIT or ABORT marker of P ends the transactional data of P read since P's previous marker.
 *       If the round read any (kept or dropped: the marker must outlive every batch of its
 *       transaction, and the round cannot tell yet whether a batch it read survives), the marker stays
 *       as it is, and an ABORT marker's index entry goes to the cleaned segment's {@code .txnindex}.
 *       Otherwise its transaction is <em>empty</em>: the entry is not carried over (no aborted record is
 *       left for read_committed to skip) and the marker may go once its delete horizon has passed.</li>
 *   <li>An empty control batch (a marker whose record an earlier round dropped, kept as a header for
 *       its producer) is empty too; a control batch of another type is never empty.</li>
 * </ul>
 *
 * <p>So a round drops an aborted transaction's records; a later round finds its marker empty and
 * stamps it with a delete horizon (KIP-534); a round after the horizon drops the marker. The index entry
 * of an aborted transaction is dropped only in the round that first finds it empty, while its marker is
 * still there: a read_committed reader never meets an index entry without its marker, which would make
 * it skip the producer's later, committed data.
 *
 * <p>Memory: one map entry per aborted transaction in the log's {@code .txnindex} files, and one per
 * producer with transactional data read since its last marker.
 *
 * <p>Thread-safety: none; one round of one worker.
 */
final class CleanedTransactions {
    /** Aborted transactions by producer, by marker offset. */
    private final Map<Long, TreeMap<Long, AbortedTxn>> aborted = new HashMap<>();
    /** Producers with transactional data read since their last marker. */
    private final Set<Long> withData = new HashSet<>();
    private TransactionIndex output;

    private CleanedTransactions() {
    }

    /** The aborted transactions indexed in {@code segments} (all of the log's, the active one too). */
    static CleanedTransactions of(List<SegmentRef> segments) throws IOException {
        CleanedTransactions t = new CleanedTransactions();
        for (SegmentRef ref : segments) {
            for (AbortedTxn txn : ref.segment().txnIndex().all()) {
                t.aborted.computeIfAbsent(txn.producerId(), k -> new TreeMap<>()).put(txn.lastOffset(), txn);
            }
        }
        return t;
    }

    /** Whether an aborted transaction of {@code producerId} covers {@code offset}. */
    boolean isAborted(long producerId, long offset) {
        TreeMap<Long, AbortedTxn> txns = aborted.get(producerId);
        if (txns == null) {
            return false;
        }
        Map.Entry<Long, AbortedTxn> first = txns.ceilingEntry(offset); // the first marker at or after offset
        return first != null && first.getValue().firstOffset() <= offset;
    }

    /** Where the index entries of aborted transactions that keep data go: the cleaned segment's index. */
    void writeIndexTo(TransactionIndex index) {
        this.output = index;
    }

    /**
     * A data batch read by the round (every batch in log order, each once).
     *
     * @return whether it belongs to an aborted transaction (its records go)
     */
    boolean onDataBatch(RecordBatch batch) {
        if (!batch.isTransactional() || !batch.hasProducerId()) {
            return false;
        }
        withData.add(batch.producerId());
        return isAborted(batch.producerId(), batch.baseOffset());
    }

    /**
     * A control batch read by the round (every batch in log order, each once). Carries the index entry of
     * an ABORT marker whose transaction keeps data to the output index.
     *
     * @return whether its transaction is empty (the marker may go once its delete horizon has passed)
     * @throws UncheckedIOException when the output index cannot be written
     */
    boolean onControlBatch(RecordBatch batch) {
        ControlRecordType type;
        try (CloseableIterator<Record> records = batch.streamingIterator(BufferSupplier.NO_CACHING)) {
            if (!records.hasNext()) {
                return true;
            }
            Record r = records.next();
            type = r.hasKey() ? ControlRecordType.parse(r.key()) : ControlRecordType.UNKNOWN;
        } catch (InvalidRecordException | IllegalArgumentException e) {
            type = ControlRecordType.UNKNOWN;
        }
        if (type != ControlRecordType.COMMIT && type != ControlRecordType.ABORT) {
            return false;
        }
        long producerId = batch.producerId();
        boolean hadData = withData.remove(producerId);
        if (!hadData) {
            return true;
        }
        if (type == ControlRecordType.ABORT) {
            TreeMap<Long, AbortedTxn> txns = aborted.get(producerId);
            AbortedTxn entry = txns == null ? null : txns.get(batch.baseOffset());
            if (entry != null && output != null) {
                try {
                    output.append(entry);
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            }
        }
        return false;
    }
}
