package dev.varve.broker;

import dev.varve.storage.LogSlice;
import dev.varve.storage.PartitionLog;
import org.apache.kafka.common.record.internal.RecordBatch;

/**
 * Reads a partition of an internal topic ({@code __consumer_offsets}, {@code __transaction_state})
 * from its log start to {@code end}, batch by batch, for a coordinator's load.
 */
final class InternalTopicReplay {
    /** Bytes read per step; a larger batch is still read whole. */
    private static final int BUFFER_BYTES = 5 * 1024 * 1024;

    /** What a load does with one batch. */
    interface BatchVisitor {
        /**
         * @param from the first offset not replayed yet: records of {@code batch} below it were (a read
         *             may start inside a batch)
         */
        void accept(RecordBatch batch, long from);
    }

    private InternalTopicReplay() {
    }

    /** Hands every batch that ends at or after the log start, up to {@code end}, to {@code visitor}, in order. */
    static void replay(PartitionLog log, long end, BatchVisitor visitor) {
        long next = log.logStartOffset();
        while (next < end) {
            LogSlice slice = log.read(next, BUFFER_BYTES, end, true);
            if (slice.isEmpty()) {
                break;
            }
            long before = next;
            for (RecordBatch batch : slice.records().batches()) {
                if (batch.lastOffset() < next) {
                    continue;
                }
                visitor.accept(batch, next);
                next = batch.nextOffset();
            }
            if (next == before) {
                break; // no progress: never loop on a log that reads nothing new
            }
        }
    }
}
