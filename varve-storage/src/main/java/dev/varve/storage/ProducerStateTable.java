package dev.varve.storage;

import dev.varve.storage.ProducerStateEntry.BatchMetadata;
import org.apache.kafka.common.InvalidRecordException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.CorruptRecordException;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.InvalidTxnStateException;
import org.apache.kafka.common.errors.OutOfOrderSequenceException;
import org.apache.kafka.common.errors.TransactionCoordinatorFencedException;
import org.apache.kafka.common.record.internal.ControlRecordType;
import org.apache.kafka.common.record.internal.DefaultRecordBatch;
import org.apache.kafka.common.record.internal.EndTransactionMarker;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.utils.internals.BufferSupplier;
import org.apache.kafka.common.utils.internals.CloseableIterator;

import java.util.Collection;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * The producer state of one partition: producer id to {@link ProducerStateEntry}, the transactions
 * open in it, and the rules Kafka applies to a producer's batches. Pure: no I/O, no clock (times are parameters).
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
 * <p>Transactions, as in Kafka's {@code ProducerStateManager}: a producer's first transactional
 * batch opens its transaction at that batch's base offset; its COMMIT or ABORT marker (a control
 * batch written by the transaction coordinator) closes it, giving a {@link CompletedTxn} from the
 * first offset to the marker's. A closed transaction stays <em>unreplicated</em> until the high
 * watermark passes its marker ({@link #onHighWatermarkUpdated}). The {@linkplain
 * #firstUnstableOffset first unstable offset} is the lowest first offset of a transaction open or
 * unreplicated; the log's last stable offset is that or the high watermark, whichever is lower.
 * A leader also checks:
 * <ol start="7">
 *   <li>A non-transactional batch from a producer with a transaction open: {@link InvalidTxnStateException}.</li>
 *   <li>A marker from a coordinator epoch older than the producer's last marker's:
 *       {@link TransactionCoordinatorFencedException}; a marker of an older producer epoch, or of a
 *       transactions V2 transaction whose epoch is not newer (unless the retry of a marker already
 *       written): {@link InvalidProducerEpochException}.</li>
 * </ol>
 *
 * <p>Thread-safety: none; the owning log calls it under its lock.
 */
public final class ProducerStateTable {
    private final TopicPartition topicPartition;
    private final Map<Long, ProducerStateEntry> producers = new HashMap<>();
    /** Open transactions: first offset to producer id. */
    private final TreeMap<Long, Long> ongoing = new TreeMap<>();
    /** Closed transactions whose marker the high watermark has not passed: first offset to the transaction. */
    private final TreeMap<Long, CompletedTxn> unreplicated = new TreeMap<>();
    /** Verifications in progress (KIP-890): producer id to the guard its first transactional write must present. */
    private final Map<Long, VerificationGuard> verifying = new HashMap<>();

    /**
     * A transaction closed by its marker.
     *
     * @param firstOffset      its first offset in this partition (the marker's own offset when the
     *                         producer wrote nothing here in the transaction)
     * @param lastOffset       the marker's offset
     * @param aborted          an ABORT marker
     * @param lastStableOffset the partition's first unstable offset once it closed (the first offset of
     *                         the oldest other open transaction, else the marker's offset + 1): what the
     *                         transaction index records
     */
    public record CompletedTxn(long producerId, long firstOffset, long lastOffset, boolean aborted, long lastStableOffset) {
        /** Its entry in the transaction index of the segment holding its marker. */
        public dev.varve.storage.index.TransactionIndex.AbortedTxn indexEntry() {
            return new dev.varve.storage.index.TransactionIndex.AbortedTxn(producerId, firstOffset, lastOffset, lastStableOffset);
        }
    }

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
        return checkAppend(batches, neverWritten, null);
    }

    /**
     * {@link #checkAppend(Iterable, boolean)}, and with {@code guard} not null (the leader verifies
     * transactions, KIP-890): a transactional batch that would start its producer's transaction here
     * must come with the guard {@link #startVerification} handed out and no marker written since.
     *
     * @throws InvalidTxnStateException a transactional batch without a valid verification
     */
    public Optional<BatchMetadata> checkAppend(Iterable<? extends RecordBatch> batches, boolean neverWritten,
                                               VerificationGuard guard) {
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
            if (!batch.isTransactional() && committed != null && committed.inTransaction()) {
                throw new InvalidTxnStateException("expected a transactional write from producer " + producerId
                        + " in " + topicPartition + ": its transaction is open from offset " + committed.currentTxnFirstOffset());
            }
            if (guard != null && batch.isTransactional() && !pending.containsKey(producerId)) {
                requireVerified(producerId, epoch, guard);
            }
            Pending current = pending.computeIfAbsent(producerId, id -> Pending.of(committed));
            check(producerId, current, epoch, firstSeq, neverWritten);
            pending.put(producerId, new Pending(epoch, batch.lastSequence()));
        }
        return Optional.empty();
    }

    /** Whether {@code producerId} has a transaction open here, at {@code epoch}. */
    public boolean hasOngoingTransaction(long producerId, short epoch) {
        ProducerStateEntry e = producers.get(producerId);
        return e != null && e.inTransaction() && e.producerEpoch() == epoch;
    }

    /**
     * A leader is about to ask the transaction coordinator whether {@code producerId}'s write at
     * {@code epoch} belongs to its transaction: {@link VerificationGuard#NONE} when its transaction is
     * already open here (nothing to ask), else the guard the write must present (the one already
     * handed out, when a verification of the same or an older epoch is in progress).
     *
     * @param supportsEpochBump the write comes from a transactions V2 client (see {@link VerificationGuard})
     * @throws InvalidProducerEpochException the epoch is older than the producer's current one
     */
    public VerificationGuard startVerification(long producerId, short epoch, boolean supportsEpochBump) {
        if (hasOngoingTransaction(producerId, epoch)) {
            return VerificationGuard.NONE;
        }
        ProducerStateEntry e = producers.get(producerId);
        if (e != null && epoch < e.producerEpoch()) {
            throw new InvalidProducerEpochException("epoch " + epoch + " of producer " + producerId + " in "
                    + topicPartition + " is older than its current epoch " + e.producerEpoch());
        }
        VerificationGuard current = verifying.get(producerId);
        if (current == null || current.producerEpoch() < epoch) {
            current = new VerificationGuard(epoch, supportsEpochBump);
            verifying.put(producerId, current);
        }
        return current;
    }

    /**
     * Checks a coordinator's batches ({@link AppendOrigin#COORDINATOR}) before offsets are assigned:
     * their sequences are not the producer's, so only an epoch older than the producer's current one is
     * refused.
     *
     * @throws InvalidProducerEpochException for an epoch older than the producer's current one
     */
    public void checkCoordinatorAppend(Iterable<? extends RecordBatch> batches) {
        checkCoordinatorAppend(batches, null);
    }

    /**
     * {@link #checkCoordinatorAppend(Iterable)}, and with {@code guard} not null (a TxnOffsetCommit the
     * group coordinator verified, KIP-890): a transactional batch that would start its producer's
     * transaction here must come with the guard {@link #startVerification} handed out and no marker
     * written since.
     *
     * @throws InvalidTxnStateException a transactional batch without a valid verification
     */
    public void checkCoordinatorAppend(Iterable<? extends RecordBatch> batches, VerificationGuard guard) {
        for (RecordBatch batch : batches) {
            if (!batch.hasProducerId()) {
                continue;
            }
            ProducerStateEntry e = producers.get(batch.producerId());
            if (e != null && batch.producerEpoch() < e.producerEpoch()) {
                throw new InvalidProducerEpochException("epoch " + batch.producerEpoch() + " of producer "
                        + batch.producerId() + " in " + topicPartition + " is older than its current epoch "
                        + e.producerEpoch());
            }
            if (guard != null && batch.isTransactional()) {
                requireVerified(batch.producerId(), batch.producerEpoch(), guard);
            }
        }
    }

    /** A transactional write of {@code producerId} at {@code epoch}: its transaction is open here, or {@code guard} is the live verification. */
    private void requireVerified(long producerId, short epoch, VerificationGuard guard) {
        if (hasOngoingTransaction(producerId, epoch)) {
            return;
        }
        VerificationGuard expected = verifying.get(producerId);
        if (guard == VerificationGuard.NONE || expected != guard) {
            throw new InvalidTxnStateException("Record was not part of an ongoing transaction: producer "
                    + producerId + " at epoch " + epoch + " has no transaction open in " + topicPartition
                    + " that its transaction coordinator confirmed");
        }
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

    /**
     * Checks a transaction marker of a transactions V1 coordinator (or of unknown version: a
     * WriteTxnMarkers below v2): {@link #checkMarker(long, short, int, short)} at version 0.
     */
    public void checkMarker(long producerId, short epoch, int coordinatorEpoch) {
        checkMarker(producerId, epoch, coordinatorEpoch, (short) 0);
    }

    /**
     * Checks a transaction marker the coordinator asks a leader to write (WriteTxnMarkers), of a
     * transaction of {@code transactionVersion} (KIP-1228, as Kafka 4.4 checks it). A transactions V2
     * end bumps the epoch, so its marker must carry an epoch above the producer's: one at the
     * producer's epoch is the retry of a marker already written, allowed only while no transaction of
     * the producer is open here. Otherwise it is a marker come late (a deposed coordinator's, a delayed
     * request) that would end the producer's next transaction, begun at that epoch, with the previous
     * one's outcome.
     *
     * @throws TransactionCoordinatorFencedException the producer's last marker came from a newer coordinator epoch
     * @throws InvalidProducerEpochException        the marker's producer epoch is older than the producer's
     *                                              (V2: not newer, unless the retry of a marker already written)
     */
    public void checkMarker(long producerId, short epoch, int coordinatorEpoch, short transactionVersion) {
        ProducerStateEntry e = producers.get(producerId);
        if (e == null) {
            return;
        }
        if (e.coordinatorEpoch() > coordinatorEpoch) {
            throw new TransactionCoordinatorFencedException("a marker of coordinator epoch " + coordinatorEpoch + " for producer "
                    + producerId + " in " + topicPartition + " is older than its last marker's, " + e.coordinatorEpoch());
        }
        boolean v2 = transactionVersion >= 2;
        short current = e.producerEpoch();
        if (v2 ? epoch <= current : epoch < current) {
            if (v2 && epoch == current && (!e.inTransaction() || epoch == Short.MAX_VALUE)) {
                return; // the retry of a marker already written: it closes nothing
            }
            throw new InvalidProducerEpochException("a marker of epoch " + epoch + " for producer " + producerId + " in "
                    + topicPartition + (v2 ? " is not newer than its current epoch " + current
                    + " (transactions V2: the end bumps the epoch), and its transaction at that epoch is open here"
                    : " is older than its current epoch " + current));
        }
    }

    /**
     * Applies a batch as written to the log (offsets assigned), without checks.
     *
     * @return the transaction a marker closed, if the batch is a COMMIT or ABORT marker
     */
    public Optional<CompletedTxn> update(RecordBatch batch) {
        if (!batch.hasProducerId()) {
            return Optional.empty();
        }
        EndTransactionMarker marker = batch.isControlBatch() ? markerOf(batch) : null;
        return update(batch.producerId(), batch.producerEpoch(), batch.baseSequence(), batch.baseOffset(),
                batch.lastOffset(), batch.maxTimestamp(), batch.isControlBatch(), batch.isTransactional(), marker);
    }

    /**
     * The COMMIT or ABORT marker of a control batch, null for another control record (Kafka's
     * metadata log uses other types; they close nothing).
     *
     * @throws CorruptRecordException for a control batch whose first record is not a control record
     */
    public static EndTransactionMarker markerOf(RecordBatch batch) {
        try (CloseableIterator<Record> records = batch.streamingIterator(BufferSupplier.NO_CACHING)) {
            if (!records.hasNext()) {
                return null;
            }
            Record r = records.next();
            ControlRecordType type = r.hasKey() ? ControlRecordType.parse(r.key()) : ControlRecordType.UNKNOWN;
            if (type != ControlRecordType.COMMIT && type != ControlRecordType.ABORT) {
                return null;
            }
            return EndTransactionMarker.deserialize(r);
        } catch (InvalidRecordException | IllegalArgumentException
                 | java.nio.BufferUnderflowException e) {
            throw new CorruptRecordException("control batch at offset " + batch.baseOffset() + " holds no valid marker: "
                    + e.getMessage());
        }
    }

    /**
     * Applies a batch as written to the log, from its header fields (and, for a COMMIT or ABORT
     * marker, its control record), without checks. A marker closes the producer's transaction; a
     * data batch without a valid sequence only moves the epoch.
     *
     * @return the transaction a marker closed
     */
    public Optional<CompletedTxn> update(long producerId, short epoch, int baseSequence, long baseOffset, long lastOffset,
                                         long maxTimestamp, boolean controlBatch, boolean transactional,
                                         EndTransactionMarker marker) {
        if (producerId == RecordBatch.NO_PRODUCER_ID) {
            return Optional.empty();
        }
        ProducerStateEntry entry = producers.getOrDefault(producerId, ProducerStateEntry.empty(producerId));
        if (controlBatch) {
            if (marker == null) {
                producers.put(producerId, entry.withEpoch(epoch, maxTimestamp));
                return Optional.empty();
            }
            VerificationGuard guard = verifying.get(producerId);
            if (guard == null || !guard.supportsEpochBump() || guard.producerEpoch() != epoch) {
                verifying.remove(producerId); // a verification begun before the marker is void
            } // else the V2 producer's next transaction, at the epoch this marker bumped to: still valid
            long first = entry.inTransaction() ? entry.currentTxnFirstOffset() : baseOffset;
            if (entry.inTransaction()) {
                ongoing.remove(first);
            }
            Long nextOpen = null;
            for (Map.Entry<Long, Long> open : ongoing.entrySet()) {
                if (open.getValue() != producerId) {
                    nextOpen = open.getKey();
                    break;
                }
            }
            CompletedTxn done = new CompletedTxn(producerId, first, baseOffset, marker.controlType() == ControlRecordType.ABORT,
                    nextOpen != null ? nextOpen : baseOffset + 1);
            unreplicated.put(first, done);
            producers.put(producerId, entry.withTxnEnded(epoch, marker.coordinatorEpoch(), maxTimestamp));
            return Optional.of(done);
        }
        long offsetDelta = lastOffset - baseOffset;
        if (baseSequence < 0 || offsetDelta < 0 || offsetDelta > Integer.MAX_VALUE || baseOffset < 0) {
            entry = entry.withEpoch(epoch, maxTimestamp);
        } else {
            int lastSeq = DefaultRecordBatch.incrementSequence(baseSequence, (int) offsetDelta);
            entry = entry.withBatch(epoch, new BatchMetadata(lastSeq, lastOffset, (int) offsetDelta, maxTimestamp));
        }
        if (transactional && !entry.inTransaction() && baseOffset >= 0) {
            verifying.remove(producerId); // verified: the transaction is open now
            entry = entry.withTxnStarted(baseOffset);
            ongoing.put(baseOffset, producerId);
        }
        producers.put(producerId, entry);
        return Optional.empty();
    }

    /** Forgets the closed transactions whose marker is below {@code highWatermark}: they are stable. */
    public void onHighWatermarkUpdated(long highWatermark) {
        unreplicated.values().removeIf(t -> t.lastOffset() < highWatermark);
    }

    /**
     * The lowest first offset of a transaction open or closed above the high watermark, or -1 when
     * there is none: the log's last stable offset is this or the high watermark, whichever is lower.
     */
    public long firstUnstableOffset() {
        long first = Long.MAX_VALUE;
        if (!ongoing.isEmpty()) {
            first = ongoing.firstKey();
        }
        if (!unreplicated.isEmpty()) {
            first = Math.min(first, unreplicated.firstKey());
        }
        return first == Long.MAX_VALUE ? -1 : first;
    }

    /** The open transactions: first offset to producer id, ascending. */
    public Map<Long, Long> ongoingTransactions() {
        return java.util.Collections.unmodifiableSortedMap(new TreeMap<>(ongoing));
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
            ProducerStateEntry e = it.next();
            if (!e.inTransaction() && nowMs - e.lastTimestamp() >= expirationMs) {
                it.remove();
                removed++;
            }
        }
        return removed;
    }

    /** Replaces the table with {@code entries} (a loaded snapshot). */
    public void load(Collection<ProducerStateEntry> entries) {
        clear();
        for (ProducerStateEntry e : entries) {
            producers.put(e.producerId(), e);
            if (e.inTransaction()) {
                ongoing.put(e.currentTxnFirstOffset(), e.producerId());
            }
        }
    }

    public void clear() {
        verifying.clear();
        producers.clear();
        ongoing.clear();
        unreplicated.clear();
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
