package dev.varve.storage;

import org.apache.kafka.common.record.internal.RecordBatch;

/**
 * What an append did (or, for an empty request, would have done).
 *
 * <p>For a request answered as a {@linkplain #duplicate() duplicate} (a producer retried a batch the
 * log already holds), nothing was appended: the offsets, timestamp and offset of the max timestamp
 * are those of the original batch, and the counts are 0. The broker answers such a request with
 * error NONE and {@link #firstOffset()} as the base offset, as Kafka does.
 *
 * @param firstOffset          offset of the first record appended (of the original batch for a duplicate), -1 when nothing was
 * @param lastOffset           offset of the last record appended (of the original batch for a duplicate), -1 when nothing was
 * @param maxTimestamp         largest record timestamp, NO_TIMESTAMP when none
 * @param offsetOfMaxTimestamp last offset of the batch holding maxTimestamp
 * @param logAppendTimeMs      the broker time stamped on LogAppendTime batches (the original one for a duplicate), else NO_TIMESTAMP
 * @param numRecords           records appended
 * @param numBatches           batches appended
 * @param validBytes           bytes appended
 * @param duplicate            the request was a retry of a batch already in the log: nothing was appended
 */
public record LogAppendInfo(long firstOffset, long lastOffset, long maxTimestamp, long offsetOfMaxTimestamp,
                            long logAppendTimeMs, int numRecords, int numBatches, int validBytes, boolean duplicate) {
    public static final LogAppendInfo EMPTY =
            new LogAppendInfo(-1, -1, RecordBatch.NO_TIMESTAMP, -1, RecordBatch.NO_TIMESTAMP, 0, 0, 0);

    /** An append that happened (not a duplicate). */
    public LogAppendInfo(long firstOffset, long lastOffset, long maxTimestamp, long offsetOfMaxTimestamp,
                         long logAppendTimeMs, int numRecords, int numBatches, int validBytes) {
        this(firstOffset, lastOffset, maxTimestamp, offsetOfMaxTimestamp, logAppendTimeMs, numRecords, numBatches,
                validBytes, false);
    }

    /**
     * The answer to a retried batch: the original batch's offsets, nothing appended.
     *
     * @param logAppendTime whether the topic stamps LogAppendTime (the original batch's timestamp is then
     *                      the broker time it was appended at)
     */
    static LogAppendInfo duplicateOf(ProducerStateEntry.BatchMetadata original, boolean logAppendTime) {
        return new LogAppendInfo(original.firstOffset(), original.lastOffset(), original.timestamp(),
                original.lastOffset(), logAppendTime ? original.timestamp() : RecordBatch.NO_TIMESTAMP, 0, 0, 0, true);
    }
}
