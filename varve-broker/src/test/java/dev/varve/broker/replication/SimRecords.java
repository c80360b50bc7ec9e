package dev.varve.broker.replication;

import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.record.internal.Records;
import org.apache.kafka.common.record.internal.SimpleRecord;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;

/**
 * {@link SimLog} batches as the bytes a fetch answer carries: each batch is a real v2 record batch
 * (Kafka's {@link MemoryRecords}) with the batch's base offset and, as partition leader epoch, the epoch
 * its records were written in; one record per {@link SimLog.Rec}, whose value is the record's value as
 * eight bytes. A fetch answer has to carry records in its records field: the broker's fetch session
 * cache ({@code FetchSessions}) decides what an incremental answer includes by looking at it.
 */
final class SimRecords {
    private SimRecords() {
    }

    /** Whole batches, as {@link SimLog#batchesFrom} returns them, in one record set. */
    static MemoryRecords encode(List<SimLog.Rec> records) {
        if (records.isEmpty()) {
            return MemoryRecords.EMPTY;
        }
        List<ByteBuffer> batches = new ArrayList<>();
        int size = 0;
        int i = 0;
        while (i < records.size()) {
            SimLog.Rec first = records.get(i);
            int count = (int) (first.batchEnd() - first.batchBase());
            if (first.offset() != first.batchBase() || i + count > records.size()) {
                throw new ReplicationSimulation.InvariantViolation("not whole batches: " + records);
            }
            SimpleRecord[] batch = new SimpleRecord[count];
            for (int r = 0; r < count; r++) {
                batch[r] = new SimpleRecord(0L, ByteBuffer.allocate(Long.BYTES).putLong(0, records.get(i + r).value()).array());
            }
            ByteBuffer bytes = MemoryRecords.withRecords(RecordBatch.MAGIC_VALUE_V2, first.batchBase(), Compression.NONE,
                    TimestampType.CREATE_TIME, RecordBatch.NO_PRODUCER_ID, RecordBatch.NO_PRODUCER_EPOCH, RecordBatch.NO_SEQUENCE,
                    first.epoch(), false, batch).buffer();
            batches.add(bytes);
            size += bytes.remaining();
            i += count;
        }
        ByteBuffer all = ByteBuffer.allocate(size);
        batches.forEach(all::put);
        return MemoryRecords.readableRecords(all.flip());
    }

    /** The records of a fetch answer back as {@link SimLog.Rec}s; every batch must pass its CRC check. */
    static List<SimLog.Rec> decode(Records records) {
        List<SimLog.Rec> out = new ArrayList<>();
        if (!(records instanceof MemoryRecords memory)) {
            throw new ReplicationSimulation.InvariantViolation("fetched records are not in memory: " + records);
        }
        for (MutableRecordBatch batch : memory.batches()) {
            if (!batch.isValid()) {
                throw new ReplicationSimulation.InvariantViolation("corrupt batch at " + batch.baseOffset());
            }
            long end = batch.lastOffset() + 1;
            for (Record r : batch) {
                out.add(new SimLog.Rec(r.offset(), batch.partitionLeaderEpoch(), r.value().getLong(r.value().position()),
                        batch.baseOffset(), end));
            }
        }
        return out;
    }
}
