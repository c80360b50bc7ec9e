package dev.varve.storage;

import dev.varve.storage.ProducerStateEntry.BatchMetadata;
import org.apache.kafka.common.InvalidRecordException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.OutOfOrderSequenceException;
import org.apache.kafka.common.record.internal.DefaultRecordBatch;
import org.apache.kafka.common.record.internal.RecordBatch;

import java.util.Collection;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.Optional;

/**
 * The idempotent-producer state of one partition: producer id to {@link ProducerStateEntry}, and the
 * rules Kafka applies to a producer's batches. Pure: no I/O, no clock (times are parameters).
 *
 * <p>A leader {@linkplain #checkAppend checks} a request's batches before it assigns offsets, then
 * {@linkplain #update updates} the table with the batches as written. Replicated batches and batches
 * replayed from the log at start-up are applied with {@link #update} alone, without checks (Kafka
 * does the same: the leader already checked them). Batches without a producer id are ignored.
 *
 * <p>The rules, from Kafka 4.x's {@code ProducerAppendInfo} and {@code UnifiedLog}, for idempotent
 * producers without transactions:
 * <ol>
 *   <li>A batch whose epoch and exact sequence range match one of the producer's last five batches is
 *       a duplicate: the whole request is answered with that batch's original offsets and nothing
 *       is appended (even when other batches of the request are new, as in Kafka).</li>
 *   <li>An epoch below the producer's current one: {@link InvalidProducerEpochException}.</li>
 *   <li>A newer epoch must start at sequence 0: otherwise {@link OutOfOrderSequenceException}.</li>
 *   <li>In the current epoch the first sequence must follow the last one written (Integer.MAX_VALUE
 *       wraps to 0): otherwise {@link OutOfOrderSequenceException}. That includes the retry of a
 *       batch older than the last five.</li>
 *   <li>A producer id the partition has no state for (new, or expired) is accepted at any sequence,
 *       as Kafka does since KIP-360 (no UNKNOWN_PRODUCER_ID from the broker), except on a log that
 *       has never held a record (log end offset 0): there the first sequence must be 0, else
 *       {@link OutOfOrderSequenceException}, as in Kafka 4.5 (KAFKA-15591). Without it a producer's
 *       second request, handled by a broker that became leader between its first and second request
 *       (the first refused with NOT_LEADER_OR_FOLLOWER), is appended, and every retry of the first
 *       is out of order until the delivery timeout fails it. A log emptied by retention or
 *       DeleteRecords has a log end above 0 and still accepts any first sequence.</li>
 *   <li>A negative base sequence in a batch with a producer id: {@link InvalidRecordException}.</li>
 * </ol>
 * Within one request, later batches of a producer are checked against the earlier ones. Unlike
 * Kafka, the unknown-producer leniency covers only a producer's first batch in the request: Kafka
 * also lets a second, non-contiguous batch of a new producer through.
 *
 * <p>Thread-safety: none; the owning log calls it under its lock.
 */
public final class ProducerStateTable {
    private final TopicPartition topicPartition;
    private final Map<Long, ProducerStateEntry> producers = new HashMap<>();

    /** A producer's epoch and last sequence while a request is checked. */
    private record Pending(short epoch, int lastSeq) {
        static Pending of(ProducerStateEntry e) {
            return e == null ? new Pending(RecordBatch.NO_PRODUCER_EPOCH, RecordBatch.NO_SEQUENCE)
                    : new Pending(e.producerEpoch(), e.lastSeq());
        }
    }

    public ProducerStateTable(TopicPartition topicPartition) {
        this.topicPartition = topicPartition;
    }

    /**
     * Checks a producer request's batches (in order) before offsets are assigned.
     *
     * @param neverWritten whether the log has never held a record (its log end offset is 0): then a
     *                     producer without state must start at sequence 0
     * @return the metadata of the original batch when one of them is a duplicate (append nothing and
     *         answer with its offsets), empty when all of them may be appended
     * @throws InvalidProducerEpochException for an epoch older than the producer's current one
     * @throws OutOfOrderSequenceException   for a sequence gap, or a new epoch not starting at 0
     * @throws InvalidRecordException        for a negative base sequence
     */
    public Optional<BatchMetadata> checkAppend(Iterable<? extends RecordBatch> batches, boolean neverWritten) {
        Map<Long, Pending> pending = null;
        for (RecordBatch batch : batches) {
            if (!batch.hasProducerId()) {
                continue;
            }
            long producerId = batch.producerId();
            short epoch = batch.producerEpoch();
            int firstSeq = batch.baseSequence();
            if (firstSeq < 0) {
                throw new InvalidRecordException("invalid sequence number " + firstSeq + " in a batch of producer "
                        + producerId + " for " + topicPartition);
            }
            ProducerStateEntry committed = producers.get(producerId);
            if (committed != null) {
                Optional<BatchMetadata> duplicate = committed.findDuplicate(epoch, firstSeq, batch.lastSequence());
                if (duplicate.isPresent()) {
                    return duplicate;
                }
            }
            if (pending == null) {
                pending = new HashMap<>();
            }
            Pending current = pending.computeIfAbsent(producerId, id -> Pending.of(committed));
            check(producerId, current, epoch, firstSeq, neverWritten);
            pending.put(producerId, new Pending(epoch, batch.lastSequence()));
        }
        return Optional.empty();
    }

    private void check(long producerId, Pending current, short epoch, int firstSeq, boolean neverWritten) {
        if (epoch < current.epoch()) {
            throw new InvalidProducerEpochException("epoch " + epoch + " of producer " + producerId + " in "
                    + topicPartition + " is older than its current epoch " + current.epoch());
        }
        if (current.epoch() == RecordBatch.NO_PRODUCER_EPOCH) {
            if (neverWritten && firstSeq != 0) {
                // The client retries this without bumping its epoch (the batch is not the next one it
                // expects to be acknowledged), so its lower sequences get in first.
                throw new OutOfOrderSequenceException("out of order sequence number for producer " + producerId + " in "
                        + topicPartition + ": " + firstSeq + " (incoming seq. number) on a partition that has never held"
                        + " a record: a producer's first batch there starts at sequence 0");
            }
            return; // unknown producer: any sequence (KIP-360)
        }
        if (epoch != current.epoch()) {
            if (firstSeq != 0) {
                throw new OutOfOrderSequenceException("invalid sequence number " + firstSeq + " for the new epoch "
                        + epoch + " of producer " + producerId + " in " + topicPartition + " (current epoch "
                        + current.epoch() + "): a new epoch starts at sequence 0");
            }
        } else if (!inSequence(current.lastSeq(), firstSeq)) {
            throw new OutOfOrderSequenceException("out of order sequence number for producer " + producerId + " in "
                    + topicPartition + ": " + firstSeq + " (incoming seq. number), " + current.lastSeq()
                    + " (current end sequence number)");
        }
    }

    /** Whether {@code nextSeq} may follow {@code lastSeq}; sequences wrap from Integer.MAX_VALUE to 0. */
    static boolean inSequence(int lastSeq, int nextSeq) {
        return nextSeq == lastSeq + 1L || (nextSeq == 0 && lastSeq == Integer.MAX_VALUE);
    }

    /** Applies a batch as written to the log (offsets assigned), without checks. */
    public void update(RecordBatch batch) {
        if (batch.hasProducerId()) {
            update(batch.producerId(), batch.producerEpoch(), batch.baseSequence(), batch.baseOffset(),
                    batch.lastOffset(), batch.maxTimestamp(), batch.isControlBatch());
        }
    }

    /**
     * Applies a batch as written to the log, from its header fields, without checks. A control batch
     * (a transaction marker replicated from a Kafka leader) only moves the epoch and the timestamp; a
     * data batch without a valid sequence only moves the epoch.
     */
    public void update(long producerId, short epoch, int baseSequence, long baseOffset, long lastOffset,
                       long maxTimestamp, boolean controlBatch) {
        if (producerId == RecordBatch.NO_PRODUCER_ID) {
            return;
        }
        ProducerStateEntry entry = producers.getOrDefault(producerId, ProducerStateEntry.empty(producerId));
        long offsetDelta = lastOffset - baseOffset;
        if (controlBatch || baseSequence < 0 || offsetDelta < 0 || offsetDelta > Integer.MAX_VALUE || baseOffset < 0) {
            entry = entry.withEpoch(epoch, maxTimestamp);
        } else {
            int lastSeq = DefaultRecordBatch.incrementSequence(baseSequence, (int) offsetDelta);
            entry = entry.withBatch(epoch, new BatchMetadata(lastSeq, lastOffset, (int) offsetDelta, maxTimestamp));
        }
        producers.put(producerId, entry);
    }

    /**
     * Forgets producers whose last write is at least {@code expirationMs} old (Kafka's
     * {@code producer.id.expiration.ms}, measured from the batch timestamps as Kafka does).
     *
     * @return how many were removed
     */
    public int removeExpired(long nowMs, long expirationMs) {
        int removed = 0;
        for (Iterator<ProducerStateEntry> it = producers.values().iterator(); it.hasNext(); ) {
            if (nowMs - it.next().lastTimestamp() >= expirationMs) {
                it.remove();
                removed++;
            }
        }
        return removed;
    }

    /** Replaces the table with {@code entries} (a loaded snapshot). */
    public void load(Collection<ProducerStateEntry> entries) {
        producers.clear();
        for (ProducerStateEntry e : entries) {
            producers.put(e.producerId(), e);
        }
    }

    public void clear() {
        producers.clear();
    }

    public Optional<ProducerStateEntry> entry(long producerId) {
        return Optional.ofNullable(producers.get(producerId));
    }

    /** A copy of the table. */
    public Map<Long, ProducerStateEntry> entries() {
        return Map.copyOf(producers);
    }

    public int size() {
        return producers.size();
    }
}
