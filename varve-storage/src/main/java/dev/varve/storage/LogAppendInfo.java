package dev.varve.storage;

import org.apache.kafka.common.record.internal.RecordBatch;

/**
 * What an append did (or, for an empty request, would have done).
 *
 * @param firstOffset          offset of the first record appended, -1 when nothing was
 * @param lastOffset           offset of the last record appended, -1 when nothing was
 * @param maxTimestamp         largest record timestamp, NO_TIMESTAMP when none
 * @param offsetOfMaxTimestamp last offset of the batch holding maxTimestamp
 * @param logAppendTimeMs      the broker time stamped on LogAppendTime batches, else NO_TIMESTAMP
 * @param numRecords           records appended
 * @param numBatches           batches appended
 * @param validBytes           bytes appended
 */
public record LogAppendInfo(long firstOffset, long lastOffset, long maxTimestamp, long offsetOfMaxTimestamp,
                            long logAppendTimeMs, int numRecords, int numBatches, int validBytes) {
    public static final LogAppendInfo EMPTY =
            new LogAppendInfo(-1, -1, RecordBatch.NO_TIMESTAMP, -1, RecordBatch.NO_TIMESTAMP, 0, 0, 0);
}
