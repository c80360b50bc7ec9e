package dev.varve.storage;

import org.apache.kafka.common.InvalidRecordException;
import org.apache.kafka.common.errors.CorruptRecordException;
import org.apache.kafka.common.errors.InvalidTimestampException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.utils.internals.AbstractIterator;
import org.apache.kafka.common.utils.internals.BufferSupplier;
import org.apache.kafka.common.utils.internals.CloseableIterator;

import java.util.ArrayList;
import java.util.List;

/**
 * Checks batches before anything is written and assigns their offsets. Pure: no I/O, no clock (the
 * time is a parameter). Every batch of a request is checked ({@link #validate}) before the first
 * offset is assigned ({@link #assignOffsets}), so a request with one bad batch changes nothing; the
 * log checks producer state between the two steps.
 *
 * <p>Errors are Kafka's exception types, so the broker maps them to wire error codes directly:
 * {@link CorruptRecordException} (CORRUPT_MESSAGE: bad CRC or framing), {@link RecordTooLargeException}
 * (MESSAGE_TOO_LARGE) and {@link InvalidRecordException} (INVALID_RECORD) for a malformed batch; records a
 * well-formed batch holds but the topic refuses (no key on a compacted topic, a timestamp out of bounds)
 * are named together in a {@link RecordsRejectedException} (KIP-467), whose {@code error()} is
 * INVALID_RECORD or INVALID_TIMESTAMP.
 */
public final class BatchValidator {
    private BatchValidator() {
    }

    /**
     * A producer request whose batches passed every check and whose offsets are not assigned yet
     * (the log checks producer state in between). Only {@link #assignOffsets} consumes it.
     */
    public static final class Validated {
        private final List<MutableRecordBatch> batches;
        private final long[] maxRecordTimestamps;
        private final int totalRecords;
        private final int sizeInBytes;

        private Validated(List<MutableRecordBatch> batches, long[] maxRecordTimestamps, int totalRecords, int sizeInBytes) {
            this.batches = batches;
            this.maxRecordTimestamps = maxRecordTimestamps;
            this.totalRecords = totalRecords;
            this.sizeInBytes = sizeInBytes;
        }

        /** The request's batches, in order (views over the request buffer). */
        public List<MutableRecordBatch> batches() {
            return batches;
        }
    }

    /**
     * Validates batches from a producer and rewrites them in place: offsets from {@code nextOffset},
     * the leader epoch, LogAppendTime or corrected CreateTime maximum timestamps.
     */
    public static LogAppendInfo validateAndAssignOffsets(MemoryRecords records, long nextOffset, int leaderEpoch,
                                                         LogConfig config, long nowMs) {
        return assignOffsets(validate(records, config, nowMs), nextOffset, leaderEpoch, config, nowMs);
    }

    /**
     * Checks every batch of a producer request without changing anything. Throws the exceptions
     * listed in the class comment.
     */
    public static Validated validate(MemoryRecords records, LogConfig config, long nowMs) {
        List<MutableRecordBatch> batches = framedBatches(records);
        long[] maxRecordTimestamps = new long[batches.size()];
        int totalRecords = 0;
        for (int i = 0; i < batches.size(); i++) {
            MutableRecordBatch batch = batches.get(i);
            checkBatchHeader(batch, config);
            if (batch.baseOffset() != 0) {
                throw new InvalidRecordException("the base offset of a produced batch must be 0, not " + batch.baseOffset());
            }
            if (batch.isControlBatch()) {
                throw new InvalidRecordException("clients may not send control batches");
            }
            if (batch.hasProducerId() && batch.baseSequence() < 0) {
                throw new InvalidRecordException("invalid sequence number " + batch.baseSequence()
                        + " in a batch of producer " + batch.producerId());
            }
            maxRecordTimestamps[i] = checkRecords(batch, config, nowMs);
            totalRecords += batch.countOrNull();
        }
        return new Validated(batches, maxRecordTimestamps, totalRecords, records.sizeInBytes());
    }

    /**
     * The batches rewritten with the topic's codec ({@code compression.type} other than
     * {@code producer}), as Kafka recompresses on the leader; null when every batch has it already.
     * Each batch keeps its records (offset deltas, timestamps, keys, values, headers) and its
     * producer id, epoch, base sequence and transactional flag; the result is validated again (its
     * size against {@code max.message.bytes}) before offsets are assigned.
     */
    public static MemoryRecords recompressed(Validated validated, LogConfig config) {
        java.util.Optional<org.apache.kafka.common.record.internal.CompressionType> target = config.targetCompression();
        if (target.isEmpty() || validated.batches.stream().allMatch(b -> b.compressionType() == target.get())) {
            return null;
        }
        org.apache.kafka.common.compress.Compression codec = org.apache.kafka.common.compress.Compression.of(target.get()).build();
        List<java.nio.ByteBuffer> rewritten = new ArrayList<>(validated.batches.size());
        int total = 0;
        for (MutableRecordBatch batch : validated.batches) {
            java.nio.ByteBuffer out = java.nio.ByteBuffer.allocate(Math.max(256, batch.sizeInBytes()));
            org.apache.kafka.common.record.internal.MemoryRecordsBuilder builder = MemoryRecords.builder(out,
                    RecordBatch.MAGIC_VALUE_V2, codec, TimestampType.CREATE_TIME, batch.baseOffset(), // the type is stamped with the offsets
                    RecordBatch.NO_TIMESTAMP, batch.producerId(), batch.producerEpoch(), batch.baseSequence(),
                    batch.isTransactional(), false, batch.partitionLeaderEpoch());
            try (CloseableIterator<Record> records = batch.streamingIterator(BufferSupplier.NO_CACHING)) {
                while (records.hasNext()) {
                    Record r = records.next();
                    builder.appendWithOffset(r.offset(), r.timestamp(), r.key(), r.value(), r.headers());
                }
            }
            java.nio.ByteBuffer built = builder.build().buffer();
            rewritten.add(built);
            total += built.remaining();
        }
        java.nio.ByteBuffer all = java.nio.ByteBuffer.allocate(total);
        rewritten.forEach(all::put);
        all.flip();
        return MemoryRecords.readableRecords(all);
    }

    /**
     * Assigns offsets from {@code nextOffset} to validated batches and stamps them (leader epoch,
     * LogAppendTime or the corrected CreateTime maximum timestamp). Cannot fail.
     */
    public static LogAppendInfo assignOffsets(Validated validated, long nextOffset, int leaderEpoch,
                                              LogConfig config, long nowMs) {
        List<MutableRecordBatch> batches = validated.batches;
        if (batches.isEmpty()) {
            return LogAppendInfo.EMPTY;
        }
        long offset = nextOffset;
        long maxTimestamp = RecordBatch.NO_TIMESTAMP;
        long offsetOfMaxTimestamp = -1;
        boolean logAppendTime = config.timestampType() == TimestampType.LOG_APPEND_TIME;
        for (int i = 0; i < batches.size(); i++) {
            MutableRecordBatch batch = batches.get(i);
            int count = batch.countOrNull();
            batch.setLastOffset(offset + count - 1);
            batch.setPartitionLeaderEpoch(leaderEpoch);
            if (logAppendTime) {
                batch.setMaxTimestamp(TimestampType.LOG_APPEND_TIME, nowMs);
            } else {
                batch.setMaxTimestamp(TimestampType.CREATE_TIME, validated.maxRecordTimestamps[i]);
            }
            if (batch.maxTimestamp() > maxTimestamp) {
                maxTimestamp = batch.maxTimestamp();
                offsetOfMaxTimestamp = batch.lastOffset();
            }
            offset += count;
        }
        return new LogAppendInfo(nextOffset, offset - 1, maxTimestamp, offsetOfMaxTimestamp,
                logAppendTime ? nowMs : RecordBatch.NO_TIMESTAMP, validated.totalRecords, batches.size(),
                validated.sizeInBytes);
    }

    /**
     * Validates batches replicated from a leader: offsets are already assigned and must start at or
     * after {@code logEndOffset} and increase; contents are protected by the CRC.
     */
    public static LogAppendInfo validateReplicated(MemoryRecords records, long logEndOffset) {
        List<MutableRecordBatch> batches = framedBatches(records);
        if (batches.isEmpty()) {
            return LogAppendInfo.EMPTY;
        }
        long expectedAtLeast = logEndOffset;
        long maxTimestamp = RecordBatch.NO_TIMESTAMP;
        long offsetOfMaxTimestamp = -1;
        int totalRecords = 0;
        for (MutableRecordBatch batch : batches) {
            checkMagicAndCrc(batch);
            if (batch.baseOffset() < expectedAtLeast || batch.lastOffset() < batch.baseOffset()) {
                throw new InvalidRecordException("replicated batch " + batch.baseOffset() + "-" + batch.lastOffset()
                        + " does not follow offset " + (expectedAtLeast - 1));
            }
            expectedAtLeast = batch.lastOffset() + 1;
            if (batch.maxTimestamp() > maxTimestamp) {
                maxTimestamp = batch.maxTimestamp();
                offsetOfMaxTimestamp = batch.lastOffset();
            }
            Integer count = batch.countOrNull();
            totalRecords += count == null ? 0 : count;
        }
        return new LogAppendInfo(batches.get(0).baseOffset(), expectedAtLeast - 1, maxTimestamp, offsetOfMaxTimestamp,
                RecordBatch.NO_TIMESTAMP, totalRecords, batches.size(), records.sizeInBytes());
    }

    /** Splits the buffer into batches; the batches must cover it exactly (no partial trailing batch). */
    private static List<MutableRecordBatch> framedBatches(MemoryRecords records) {
        List<MutableRecordBatch> batches = new ArrayList<>();
        int covered = 0;
        try {
            AbstractIterator<MutableRecordBatch> it = records.batchIterator();
            while (it.hasNext()) {
                MutableRecordBatch batch = it.next();
                covered += batch.sizeInBytes();
                batches.add(batch);
            }
        } catch (CorruptRecordException e) {
            throw e;
        } catch (RuntimeException e) {
            throw new CorruptRecordException("malformed record batch framing: " + e.getMessage());
        }
        if (covered != records.sizeInBytes()) {
            throw new CorruptRecordException("record set of " + records.sizeInBytes() + " bytes ends with "
                    + (records.sizeInBytes() - covered) + " bytes that are not a whole batch");
        }
        return batches;
    }

    private static void checkMagicAndCrc(RecordBatch batch) {
        if (batch.magic() != RecordBatch.MAGIC_VALUE_V2) {
            throw new InvalidRecordException("record batch magic " + batch.magic() + " is not supported; only v2 batches are");
        }
        if (!batch.isValid()) {
            throw new CorruptRecordException("record batch at offset " + batch.baseOffset() + " fails its CRC check");
        }
    }

    private static void checkBatchHeader(RecordBatch batch, LogConfig config) {
        if (batch.sizeInBytes() > config.maxMessageBytes()) {
            throw new RecordTooLargeException("record batch of " + batch.sizeInBytes()
                    + " bytes is larger than max.message.bytes (" + config.maxMessageBytes() + ")");
        }
        checkMagicAndCrc(batch);
        long countFromOffsets = batch.lastOffset() - batch.baseOffset() + 1;
        Integer count = batch.countOrNull();
        if (count == null || count <= 0) {
            throw new InvalidRecordException("record batch declares " + count + " records");
        }
        if (countFromOffsets != count) {
            throw new InvalidRecordException("record batch offset range " + countFromOffsets
                    + " does not match its record count " + count);
        }
    }

    /**
     * Walks the records of a batch (skipping keys and values, so nothing is allocated by their
     * declared sizes): offsets consecutive, count as declared, timestamps within bounds, and on a
     * compacted topic ({@code cleanup.policy} with {@code compact}) a key on every record.
     *
     * @return the largest record timestamp
     */
    private static long checkRecords(RecordBatch batch, LogConfig config, long nowMs) {
        int expected = batch.countOrNull();
        long maxTimestamp = RecordBatch.NO_TIMESTAMP;
        boolean checkTimestamps = config.timestampType() == TimestampType.CREATE_TIME;
        boolean requireKeys = config.compact();
        int seen = 0;
        // KIP-467: records a valid batch may hold but this topic refuses (no key on a compacted topic, a
        // timestamp out of bounds) are collected, each with its index, and refused together at the end
        java.util.List<RecordsRejectedException.RecordError> rejected = null;
        boolean anyTimestamp = false;
        try (CloseableIterator<Record> records = recordsOf(batch)) {
            while (records.hasNext()) {
                Record record = records.next();
                if (record.offset() != batch.baseOffset() + seen) {
                    throw new InvalidRecordException("record " + seen + " of a batch has offset delta "
                            + (record.offset() - batch.baseOffset()));
                }
                boolean keyless = requireKeys && !record.hasKey();
                if (keyless) {
                    // Kafka's LogValidator refuses these too: the cleaner could never keep them.
                    rejected = rejected != null ? rejected : new java.util.ArrayList<>();
                    rejected.add(new RecordsRejectedException.RecordError(seen, "Compacted topic cannot accept message without key"));
                }
                long ts = record.timestamp();
                if (checkTimestamps && !keyless) { // one error per record, the key's first, as Kafka reports them
                    try {
                        checkTimestamp(ts, config, nowMs);
                    } catch (InvalidTimestampException e) {
                        rejected = rejected != null ? rejected : new java.util.ArrayList<>();
                        rejected.add(new RecordsRejectedException.RecordError(seen, e.getMessage()));
                        anyTimestamp = true;
                    }
                }
                maxTimestamp = Math.max(maxTimestamp, ts);
                seen++;
                if (seen > expected) {
                    break;
                }
            }
        } catch (InvalidRecordException | InvalidTimestampException e) {
            throw e;
        } catch (RuntimeException e) {
            throw new InvalidRecordException("malformed record in batch: " + e);
        }
        if (seen != expected) {
            throw new InvalidRecordException("record batch declares " + expected + " records but holds " + (seen > expected ? "more" : seen));
        }
        if (rejected != null) {
            throw new RecordsRejectedException(rejected, anyTimestamp);
        }
        return maxTimestamp;
    }

    private static CloseableIterator<Record> recordsOf(RecordBatch batch) {
        if (batch instanceof MutableRecordBatch mutable) {
            return mutable.skipKeyValueIterator(BufferSupplier.NO_CACHING);
        }
        return batch.streamingIterator(BufferSupplier.NO_CACHING);
    }

    private static void checkTimestamp(long ts, LogConfig config, long nowMs) {
        if (ts == RecordBatch.NO_TIMESTAMP) {
            return;
        }
        if (ts < 0) {
            throw new InvalidTimestampException("record timestamp " + ts + " is negative");
        }
        if (nowMs - ts > config.timestampBeforeMaxMs()) {
            throw new InvalidTimestampException("record timestamp " + ts + " is more than message.timestamp.before.max.ms ("
                    + config.timestampBeforeMaxMs() + ") before the broker time " + nowMs);
        }
        if (ts - nowMs > config.timestampAfterMaxMs()) {
            throw new InvalidTimestampException("record timestamp " + ts + " is more than message.timestamp.after.max.ms ("
                    + config.timestampAfterMaxMs() + ") after the broker time " + nowMs);
        }
    }
}
