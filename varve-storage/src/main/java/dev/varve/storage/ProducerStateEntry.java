package dev.varve.storage;

import org.apache.kafka.common.record.internal.DefaultRecordBatch;
import org.apache.kafka.common.record.internal.RecordBatch;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * What a partition remembers about one idempotent producer: its epoch, the metadata of its last
 * {@value #NUM_BATCHES_TO_RETAIN} batches (oldest first) and the timestamp of its last write.
 * Kafka's {@code ProducerStateEntry}, as an immutable value.
 *
 * <pre>
 *   producerId 4242, epoch 3, lastTimestamp 1700000000123
 *   batches: [seq 10-14 @ offsets 100-104] [seq 15-15 @ 130-130] ... (at most 5, oldest first)
 * </pre>
 *
 * <p>Five is the most batches a producer may have in flight per partition with idempotence on
 * ({@code max.in.flight.requests.per.connection <= 5}), so any retry the producer can send is either
 * one of these batches (a duplicate) or the next sequence. A change of epoch forgets the batches:
 * sequences restart at 0 in a new epoch.
 *
 * <p>Thread-safety: immutable.
 *
 * @param producerId    the producer id
 * @param producerEpoch its current epoch ({@link RecordBatch#NO_PRODUCER_EPOCH} for an unknown producer)
 * @param batches       metadata of its last batches, oldest first, at most {@value #NUM_BATCHES_TO_RETAIN}
 * @param lastTimestamp max timestamp of its last write (a batch or a transaction marker); what
 *                      {@code producer.id.expiration.ms} is measured from
 * @param coordinatorEpoch      the epoch of the transaction coordinator that wrote the producer's
 *                              last marker, -1 before any: a marker from an older coordinator is fenced
 * @param currentTxnFirstOffset the first offset of the producer's ongoing transaction in this
 *                              partition, -1 when none is open
 */
public record ProducerStateEntry(long producerId, short producerEpoch, List<BatchMetadata> batches, long lastTimestamp,
                                 int coordinatorEpoch, long currentTxnFirstOffset) {
    /** Batches remembered per producer: Kafka's NUM_BATCHES_TO_RETAIN, the idempotent in-flight limit. */
    public static final int NUM_BATCHES_TO_RETAIN = 5;

    /**
     * One batch a producer wrote: Kafka's {@code BatchMetadata}, stored as in Kafka's snapshot
     * (last sequence, last offset, offset delta, timestamp); the first sequence and offset are
     * derived. A batch's sequences and offsets advance together (one per record), with sequences
     * wrapping from {@link Integer#MAX_VALUE} to 0.
     *
     * @param lastSeq     sequence of the batch's last record
     * @param lastOffset  offset of the batch's last record
     * @param offsetDelta last offset minus first offset (records in the batch minus one)
     * @param timestamp   the batch's max timestamp (the broker time for LogAppendTime topics)
     */
    public record BatchMetadata(int lastSeq, long lastOffset, int offsetDelta, long timestamp) {
        public BatchMetadata {
            if (lastSeq < 0 || lastOffset < 0 || offsetDelta < 0 || lastOffset - offsetDelta < 0) {
                throw new IllegalArgumentException("invalid batch metadata: lastSeq " + lastSeq + ", lastOffset "
                        + lastOffset + ", offsetDelta " + offsetDelta);
            }
        }

        public int firstSeq() {
            return DefaultRecordBatch.decrementSequence(lastSeq, offsetDelta);
        }

        public long firstOffset() {
            return lastOffset - offsetDelta;
        }

        @Override
        public String toString() {
            return "seq " + firstSeq() + "-" + lastSeq + " @ " + firstOffset() + "-" + lastOffset + " ts " + timestamp;
        }
    }

    public ProducerStateEntry {
        if (batches.size() > NUM_BATCHES_TO_RETAIN) {
            throw new IllegalArgumentException(batches.size() + " batches for producer " + producerId
                    + "; at most " + NUM_BATCHES_TO_RETAIN + " are kept");
        }
        batches = List.copyOf(batches);
    }

    /** An idempotent producer's entry with no transaction state. */
    public ProducerStateEntry(long producerId, short producerEpoch, List<BatchMetadata> batches, long lastTimestamp) {
        this(producerId, producerEpoch, batches, lastTimestamp, -1, -1L);
    }

    /** Whether the producer has a transaction open in this partition. */
    public boolean inTransaction() {
        return currentTxnFirstOffset >= 0;
    }

    /** This entry with a transaction open from {@code firstOffset}. */
    public ProducerStateEntry withTxnStarted(long firstOffset) {
        return new ProducerStateEntry(producerId, producerEpoch, batches, lastTimestamp, coordinatorEpoch, firstOffset);
    }

    /**
     * This entry after a transaction marker of {@code epoch} from coordinator epoch {@code
     * coordinatorEpoch}: no transaction open. A marker in a newer epoch (transactions V2 bump the
     * epoch at every commit or abort) forgets the batches, as a new epoch does.
     */
    public ProducerStateEntry withTxnEnded(short epoch, int coordinatorEpoch, long timestamp) {
        List<BatchMetadata> kept = epoch == producerEpoch ? batches : List.of();
        return new ProducerStateEntry(producerId, epoch, kept, timestamp, coordinatorEpoch, -1L);
    }

    /** A producer the partition knows nothing about. */
    public static ProducerStateEntry empty(long producerId) {
        return new ProducerStateEntry(producerId, RecordBatch.NO_PRODUCER_EPOCH, List.of(), RecordBatch.NO_TIMESTAMP, -1, -1L);
    }

    /** Whether no batch of the current epoch is remembered. */
    public boolean isEmpty() {
        return batches.isEmpty();
    }

    /** Sequence of the last record written in the current epoch, or {@link RecordBatch#NO_SEQUENCE}. */
    public int lastSeq() {
        return batches.isEmpty() ? RecordBatch.NO_SEQUENCE : batches.get(batches.size() - 1).lastSeq();
    }

    /** Offset of the last record written in the current epoch, or -1. */
    public long lastDataOffset() {
        return batches.isEmpty() ? -1L : batches.get(batches.size() - 1).lastOffset();
    }

    /** The remembered batch of {@code epoch} with exactly this sequence range, if any (Kafka's findDuplicateBatch). */
    public Optional<BatchMetadata> findDuplicate(short epoch, int firstSeq, int lastSeq) {
        if (epoch != producerEpoch) {
            return Optional.empty();
        }
        for (BatchMetadata b : batches) {
            if (b.firstSeq() == firstSeq && b.lastSeq() == lastSeq) {
                return Optional.of(b);
            }
        }
        return Optional.empty();
    }

    /** This entry in {@code epoch}: a different epoch forgets the batches (sequences restart at 0). */
    public ProducerStateEntry withEpoch(short epoch, long timestamp) {
        List<BatchMetadata> kept = epoch == producerEpoch ? batches : List.of();
        return new ProducerStateEntry(producerId, epoch, kept, timestamp, coordinatorEpoch, currentTxnFirstOffset);
    }

    /** This entry after {@code batch} was written in {@code epoch}: the oldest batch drops out past five. */
    public ProducerStateEntry withBatch(short epoch, BatchMetadata batch) {
        List<BatchMetadata> next = new ArrayList<>(NUM_BATCHES_TO_RETAIN);
        if (epoch == producerEpoch) {
            next.addAll(batches.size() == NUM_BATCHES_TO_RETAIN ? batches.subList(1, batches.size()) : batches);
        }
        next.add(batch);
        return new ProducerStateEntry(producerId, epoch, next, batch.timestamp(), coordinatorEpoch, currentTxnFirstOffset);
    }
}
