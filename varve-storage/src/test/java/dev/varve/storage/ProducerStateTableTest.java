package dev.varve.storage;

import dev.varve.storage.ProducerStateEntry.BatchMetadata;
import org.apache.kafka.common.InvalidRecordException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.OutOfOrderSequenceException;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The producer rules alone, without a log: batches are checked, then "written" at offsets we pick. */
class ProducerStateTableTest {
    private static final long T0 = 1_700_000_000_000L;
    private static final long PID = 4242L;
    private static final int MAX = Integer.MAX_VALUE;

    private final ProducerStateTable table = new ProducerStateTable(new TopicPartition("t", 0));
    private long nextOffset = 0;

    private static MutableRecordBatch batch(long pid, int epoch, int seq, int count) {
        return batch(pid, epoch, seq, count, T0);
    }

    private static MutableRecordBatch batch(long pid, int epoch, int seq, int count, long ts) {
        MemoryRecords records = TestRecords.idempotent(pid, (short) epoch, seq, count, ts);
        return records.batches().iterator().next();
    }

    /** Checks a request of one batch and, unless it is a duplicate, writes it at the next offsets. */
    private Optional<BatchMetadata> produce(MutableRecordBatch batch) {
        Optional<BatchMetadata> duplicate = table.checkAppend(List.of(batch), nextOffset == 0);
        if (duplicate.isEmpty()) {
            write(batch);
        }
        return duplicate;
    }

    private void write(MutableRecordBatch batch) {
        batch.setLastOffset(nextOffset + batch.countOrNull() - 1);
        nextOffset += batch.countOrNull();
        table.update(batch);
    }

    @Test
    void anUnknownProducerIsAcceptedAtAnySequence() {
        nextOffset = 40; // the log has held records (retention or DeleteRecords may have removed them)
        assertThat(produce(batch(PID, 0, 17, 3))).isEmpty();
        assertThat(table.entry(PID)).get().satisfies(e -> {
            assertThat(e.producerEpoch()).isEqualTo((short) 0);
            assertThat(e.lastSeq()).isEqualTo(19);
            assertThat(e.lastDataOffset()).isEqualTo(42);
        });
        assertThat(produce(batch(PID, 0, 20, 1))).isEmpty();
        assertThat(produce(batch(7L, 3, 0, 1))).isEmpty();
        assertThat(table.size()).isEqualTo(2);
    }

    /**
     * KAFKA-15591: a producer's request with sequences 0.. refused (NOT_LEADER_OR_FOLLOWER, the broker
     * had not applied the partition yet) and its next one, handled once it had, must not be appended
     * first: every retry of the first would then be out of order until the delivery timeout.
     */
    @Test
    void onALogThatNeverHeldARecordAProducerStartsAtSequenceZero() {
        assertThatThrownBy(() -> produce(batch(PID, 0, 5, 2)))
                .isInstanceOf(OutOfOrderSequenceException.class)
                .hasMessageContaining("5 (incoming seq. number)").hasMessageContaining("never held a record");
        assertThat(table.size()).isZero();
        assertThat(nextOffset).isZero();
        assertThat(produce(batch(PID, 0, 0, 5))).isEmpty(); // the first request's retry
        assertThat(produce(batch(PID, 0, 5, 2))).isEmpty(); // then the second one's
        assertThat(table.entry(PID).get().lastSeq()).isEqualTo(6);
        // Once the log has held a record, another producer it has no state for may start anywhere.
        assertThat(produce(batch(7L, 0, 9, 1))).isEmpty();
        // A new epoch of an unknown producer on a never-written log starts at 0 too.
        ProducerStateTable empty = new ProducerStateTable(new TopicPartition("t", 2));
        assertThatThrownBy(() -> empty.checkAppend(List.of(batch(PID, 3, 1, 1)), true)).isInstanceOf(OutOfOrderSequenceException.class);
        assertThat(empty.checkAppend(List.of(batch(PID, 3, 0, 1), batch(PID, 3, 1, 1)), true)).isEmpty();
    }

    @Test
    void aGapIsAnOutOfOrderSequence() {
        produce(batch(PID, 0, 0, 5));
        assertThatThrownBy(() -> produce(batch(PID, 0, 6, 1)))
                .isInstanceOf(OutOfOrderSequenceException.class).hasMessageContaining("6 (incoming seq. number), 4");
        assertThatThrownBy(() -> produce(batch(PID, 0, 3, 2))) // overlaps, not an exact retry
                .isInstanceOf(OutOfOrderSequenceException.class);
        assertThat(table.entry(PID).get().lastSeq()).isEqualTo(4);
    }

    @Test
    void anExactRetryOfOneOfTheLastFiveBatchesIsADuplicate() {
        List<BatchMetadata> written = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            produce(batch(PID, 0, i * 2, 2));
            written.add(table.entry(PID).get().batches().get(table.entry(PID).get().batches().size() - 1));
        }
        assertThat(table.entry(PID).get().batches()).hasSize(5).containsExactlyElementsOf(written.subList(1, 6));
        for (int i = 1; i < 6; i++) {
            Optional<BatchMetadata> dup = produce(batch(PID, 0, i * 2, 2));
            assertThat(dup).as("retry of batch %d", i).contains(written.get(i));
            assertThat(dup.get().firstOffset()).isEqualTo(i * 2L);
        }
        // The oldest batch fell out of the window: Kafka answers OUT_OF_ORDER_SEQUENCE_NUMBER.
        assertThatThrownBy(() -> produce(batch(PID, 0, 0, 2))).isInstanceOf(OutOfOrderSequenceException.class);
        assertThat(nextOffset).isEqualTo(12);
    }

    @Test
    void anOlderEpochIsRefused() {
        produce(batch(PID, 2, 0, 1));
        assertThatThrownBy(() -> produce(batch(PID, 1, 1, 1)))
                .isInstanceOf(InvalidProducerEpochException.class).hasMessageContaining("epoch 1");
        // Even an exact retry from the old epoch is not a duplicate.
        assertThatThrownBy(() -> produce(batch(PID, 1, 0, 1))).isInstanceOf(InvalidProducerEpochException.class);
    }

    @Test
    void aNewEpochStartsAtSequenceZero() {
        produce(batch(PID, 0, 0, 3));
        assertThatThrownBy(() -> produce(batch(PID, 1, 3, 1)))
                .isInstanceOf(OutOfOrderSequenceException.class).hasMessageContaining("new epoch");
        assertThat(produce(batch(PID, 1, 0, 2))).isEmpty();
        ProducerStateEntry e = table.entry(PID).get();
        assertThat(e.producerEpoch()).isEqualTo((short) 1);
        assertThat(e.batches()).hasSize(1); // the old epoch's batches are forgotten
        assertThat(produce(batch(PID, 1, 2, 1))).isEmpty();
        assertThatThrownBy(() -> produce(batch(PID, 0, 3, 1))).isInstanceOf(InvalidProducerEpochException.class);
    }

    @Test
    void sequencesWrapFromMaxValueToZero() {
        nextOffset = 10; // not a never-written log
        produce(batch(PID, 0, MAX - 2, 3)); // MAX-2 .. MAX
        assertThat(table.entry(PID).get().lastSeq()).isEqualTo(MAX);
        assertThatThrownBy(() -> produce(batch(PID, 0, 1, 1))).isInstanceOf(OutOfOrderSequenceException.class);
        assertThat(produce(batch(PID, 0, 0, 2))).isEmpty();
        assertThat(table.entry(PID).get().lastSeq()).isEqualTo(1);
        // A batch that itself spans the wrap: its last sequence wraps too.
        ProducerStateTable other = new ProducerStateTable(new TopicPartition("t", 1));
        MutableRecordBatch spanning = batch(9L, 0, MAX - 1, 4); // MAX-1, MAX, 0, 1
        assertThat(spanning.lastSequence()).isEqualTo(1);
        spanning.setLastOffset(3);
        other.update(spanning);
        BatchMetadata b = other.entry(9L).get().batches().get(0);
        assertThat(b.firstSeq()).isEqualTo(MAX - 1);
        assertThat(b.lastSeq()).isEqualTo(1);
        assertThat(other.checkAppend(List.of(batch(9L, 0, MAX - 1, 4)), false)).contains(b);
        assertThat(other.checkAppend(List.of(batch(9L, 0, 2, 1)), false)).isEmpty();
    }

    @Test
    void aNegativeSequenceIsAnInvalidRecord() {
        MemoryRecords records = TestRecords.idempotent(PID, (short) 0, 0, 1, T0);
        records.buffer().putInt(53, -1); // Kafka's builder refuses to write one
        assertThatThrownBy(() -> table.checkAppend(records.batches(), true))
                .isInstanceOf(InvalidRecordException.class).hasMessageContaining("sequence");
    }

    @Test
    void batchesWithoutAProducerIdAreIgnored() {
        MemoryRecords plain = TestRecords.batch(T0, "a", "b");
        assertThat(table.checkAppend(plain.batches(), true)).isEmpty();
        plain.batches().forEach(table::update);
        assertThat(table.size()).isZero();
    }

    @Test
    void laterBatchesOfARequestAreCheckedAgainstEarlierOnes() {
        produce(batch(PID, 0, 0, 2));
        assertThat(table.checkAppend(List.of(batch(PID, 0, 2, 2), batch(PID, 0, 4, 1)), false)).isEmpty();
        assertThatThrownBy(() -> table.checkAppend(List.of(batch(PID, 0, 2, 2), batch(PID, 0, 5, 1)), false))
                .isInstanceOf(OutOfOrderSequenceException.class);
        // A new producer: only its first batch may start anywhere.
        assertThat(table.checkAppend(List.of(batch(5L, 0, 100, 2), batch(5L, 0, 102, 1)), false)).isEmpty();
        assertThatThrownBy(() -> table.checkAppend(List.of(batch(5L, 0, 100, 2), batch(5L, 0, 200, 1)), false))
                .isInstanceOf(OutOfOrderSequenceException.class);
        assertThat(table.entry(5L)).isEmpty(); // checking changes nothing
    }

    @Test
    void aRequestWithADuplicateAnywhereIsADuplicate() {
        produce(batch(PID, 0, 0, 2));
        BatchMetadata original = table.entry(PID).get().batches().get(0);
        // As in Kafka: a new batch of another producer in the same request is not appended either.
        assertThat(table.checkAppend(List.of(batch(5L, 0, 0, 1), batch(PID, 0, 0, 2)), false)).contains(original);
    }

    @Test
    void replicatedBatchesAreAppliedWithoutChecks() {
        produce(batch(PID, 3, 0, 1));
        write(batch(PID, 1, 50, 2)); // an older epoch and a gap: a follower takes the leader's word
        ProducerStateEntry e = table.entry(PID).get();
        assertThat(e.producerEpoch()).isEqualTo((short) 1);
        assertThat(e.lastSeq()).isEqualTo(51);
        assertThat(e.batches()).hasSize(1);
        // A control batch that is no transaction marker (no COMMIT or ABORT record) moves only the epoch and the timestamp.
        table.update(PID, (short) 2, RecordBatch.NO_SEQUENCE, 10, 10, T0 + 5, true, false, null);
        assertThat(table.entry(PID).get()).satisfies(x -> {
            assertThat(x.producerEpoch()).isEqualTo((short) 2);
            assertThat(x.batches()).isEmpty();
            assertThat(x.lastTimestamp()).isEqualTo(T0 + 5);
        });
        assertThat(produce(batch(PID, 2, 0, 1))).isEmpty();
    }

    @Test
    void producersExpireAfterTheirLastWrite() {
        produce(batch(PID, 0, 0, 1, T0));
        produce(batch(7L, 0, 0, 1, T0 + 1000));
        assertThat(table.removeExpired(T0 + 86_400_000L - 1, 86_400_000L)).isZero();
        assertThat(table.removeExpired(T0 + 86_400_000L, 86_400_000L)).isOne();
        assertThat(table.entry(PID)).isEmpty();
        assertThat(table.entry(7L)).isPresent();
        // A forgotten producer is unknown again: any sequence.
        assertThat(produce(batch(PID, 0, 99, 1))).isEmpty();
    }

    private static MutableRecordBatch txnBatch(long pid, int epoch, int seq, int count) {
        return TestRecords.transactional(pid, (short) epoch, seq, count, T0).batches().iterator().next();
    }

    /** Writes a marker at the next offset as a leader would (checked first). */
    private Optional<ProducerStateTable.CompletedTxn> marker(long pid, int epoch, int coordinatorEpoch, boolean commit) {
        table.checkMarker(pid, (short) epoch, coordinatorEpoch);
        MutableRecordBatch m = TestRecords.marker(nextOffset, pid, (short) epoch, coordinatorEpoch, commit, T0)
                .batches().iterator().next();
        nextOffset++;
        return table.update(m);
    }

    @Test
    void aTransactionIsOpenFromItsFirstBatchUntilItsMarkerAndUnstableUntilTheHighWatermarkPassesTheMarker() {
        assertThat(table.firstUnstableOffset()).isEqualTo(-1);
        produce(batch(7L, 0, 0, 2));                    // 0-1, idempotent, no transaction
        produce(txnBatch(PID, 0, 0, 3));                 // 2-4 opens PID's transaction at 2
        produce(txnBatch(PID, 0, 3, 1));                 // 5 in the same transaction
        assertThat(table.entry(PID).get().currentTxnFirstOffset()).isEqualTo(2);
        assertThat(table.ongoingTransactions()).containsExactly(java.util.Map.entry(2L, PID));
        assertThat(table.firstUnstableOffset()).isEqualTo(2);

        Optional<ProducerStateTable.CompletedTxn> done = marker(PID, 0, 5, false); // ABORT at 6
        assertThat(done).contains(new ProducerStateTable.CompletedTxn(PID, 2, 6, true, 7));
        assertThat(table.entry(PID).get().inTransaction()).isFalse();
        assertThat(table.entry(PID).get().coordinatorEpoch()).isEqualTo(5);
        assertThat(table.ongoingTransactions()).isEmpty();
        // closed, but its marker is not below the high watermark yet
        assertThat(table.firstUnstableOffset()).isEqualTo(2);
        table.onHighWatermarkUpdated(6);
        assertThat(table.firstUnstableOffset()).isEqualTo(2);
        table.onHighWatermarkUpdated(7);
        assertThat(table.firstUnstableOffset()).isEqualTo(-1);
    }

    @Test
    void anAbortRecordsTheFirstOffsetOfTheOldestOtherOpenTransactionAsItsLastStableOffset() {
        produce(txnBatch(1L, 0, 0, 1));  // 0: producer 1 opens
        produce(txnBatch(2L, 0, 0, 1));  // 1: producer 2 opens
        produce(txnBatch(1L, 0, 1, 1));  // 2
        assertThat(marker(2L, 0, 0, false)).get().satisfies(t -> {   // ABORT of producer 2 at 3
            assertThat(t.firstOffset()).isEqualTo(1);
            assertThat(t.lastStableOffset()).isEqualTo(0); // producer 1's transaction is still open from 0
        });
        assertThat(marker(1L, 0, 0, true)).get().satisfies(t -> {    // COMMIT of producer 1 at 4
            assertThat(t.aborted()).isFalse();
            assertThat(t.firstOffset()).isEqualTo(0);
            assertThat(t.lastStableOffset()).isEqualTo(5);
        });
        // a marker for a producer with nothing open here closes an empty transaction at the marker
        assertThat(marker(9L, 0, 0, false)).contains(new ProducerStateTable.CompletedTxn(9L, 5, 5, true, 6));
    }

    @Test
    void aNonTransactionalWriteInsideAnOpenTransactionIsAnInvalidTxnState() {
        produce(txnBatch(PID, 0, 0, 1));
        assertThatThrownBy(() -> produce(batch(PID, 0, 1, 1)))
                .isInstanceOf(org.apache.kafka.common.errors.InvalidTxnStateException.class)
                .hasMessageContaining("expected a transactional write");
        marker(PID, 0, 0, true);
        assertThat(produce(batch(PID, 0, 1, 1))).isEmpty(); // once it is closed
    }

    /**
     * KIP-1228's check of a transactions V2 marker (Kafka 4.4's ProducerAppendInfo.checkProducerEpoch):
     * newer than the producer's epoch, or at it only as the retry of a marker already written (no
     * transaction open here, or the epoch exhausted at Short.MAX_VALUE).
     */
    @Test
    void aTransactionsV2MarkerMustBeNewerThanTheProducersEpochUnlessItIsTheRetryOfOneWritten() {
        short v2 = 2;
        produce(txnBatch(PID, 3, 0, 1));
        table.checkMarker(PID, (short) 4, 0, v2);
        assertThatThrownBy(() -> table.checkMarker(PID, (short) 3, 0, v2))
                .as("the transaction at epoch 3 is open").isInstanceOf(InvalidProducerEpochException.class);
        table.checkMarker(PID, (short) 3, 0, (short) 0); // a V1 end keeps the epoch
        table.checkMarker(PID, (short) 3, 0); // a request that does not say: as V1
        marker(PID, 4, 0, false);
        table.checkMarker(PID, (short) 4, 0, v2); // the retry of that marker: nothing open
        produce(txnBatch(PID, 4, 0, 1)); // the next transaction, at the bumped epoch
        assertThatThrownBy(() -> table.checkMarker(PID, (short) 4, 0, v2))
                .as("the previous transaction's marker, late").isInstanceOf(InvalidProducerEpochException.class);
        table.checkMarker(PID, (short) 5, 0, v2);
        assertThatThrownBy(() -> table.checkMarker(PID, (short) 3, 0, v2)).isInstanceOf(InvalidProducerEpochException.class);

        long other = PID + 1;
        produce(txnBatch(other, Short.MAX_VALUE, 0, 1));
        table.checkMarker(other, Short.MAX_VALUE, 0, v2); // an exhausted epoch cannot be bumped: taken, as in Kafka
    }

    @Test
    void markersFromAnOlderCoordinatorOrProducerEpochAreFencedAndANewerEpochMarkerForgetsTheBatches() {
        produce(txnBatch(PID, 3, 0, 2));
        marker(PID, 3, 7, true);
        produce(txnBatch(PID, 3, 2, 1));
        assertThatThrownBy(() -> table.checkMarker(PID, (short) 3, 6))
                .isInstanceOf(org.apache.kafka.common.errors.TransactionCoordinatorFencedException.class);
        assertThatThrownBy(() -> table.checkMarker(PID, (short) 2, 7))
                .isInstanceOf(InvalidProducerEpochException.class);
        // transactions V2: the coordinator bumps the epoch with every marker; sequences restart at 0
        marker(PID, 4, 7, false);
        ProducerStateEntry e = table.entry(PID).get();
        assertThat(e.producerEpoch()).isEqualTo((short) 4);
        assertThat(e.batches()).isEmpty();
        assertThat(produce(txnBatch(PID, 4, 0, 1))).isEmpty();
    }

    /** Checks with verification on (a leader that asks the coordinator, KIP-890) and writes. */
    private Optional<BatchMetadata> produceVerified(MutableRecordBatch batch, VerificationGuard guard) {
        Optional<BatchMetadata> duplicate = table.checkAppend(List.of(batch), nextOffset == 0, guard);
        if (duplicate.isEmpty()) {
            write(batch);
        }
        return duplicate;
    }

    @Test
    void aTransactionOpensOnlyWithTheGuardOfAVerificationThatNoMarkerOvertook() {
        // no verification started: the first transactional write is refused, nothing written
        assertThatThrownBy(() -> produceVerified(txnBatch(PID, 0, 0, 1), VerificationGuard.NONE))
                .isInstanceOf(org.apache.kafka.common.errors.InvalidTxnStateException.class)
                .hasMessageContaining("not part of an ongoing transaction");
        assertThat(nextOffset).isZero();

        VerificationGuard guard = table.startVerification(PID, (short) 0, false);
        assertThat(guard).isNotSameAs(VerificationGuard.NONE);
        assertThat(table.startVerification(PID, (short) 0, false)).isSameAs(guard); // a retry asks with the same guard
        // a guard of another verification does not open it
        ProducerStateTable other = new ProducerStateTable(new TopicPartition("t", 1));
        VerificationGuard foreign = other.startVerification(PID, (short) 0, false);
        assertThatThrownBy(() -> produceVerified(txnBatch(PID, 0, 0, 1), foreign))
                .isInstanceOf(org.apache.kafka.common.errors.InvalidTxnStateException.class);
        assertThat(produceVerified(txnBatch(PID, 0, 0, 2), guard)).isEmpty();  // 0-1: open
        // inside the open transaction nothing more is asked
        assertThat(table.startVerification(PID, (short) 0, false)).isSameAs(VerificationGuard.NONE);
        assertThat(produceVerified(txnBatch(PID, 0, 2, 1), VerificationGuard.NONE)).isEmpty();
        marker(PID, 0, 0, true);

        // the next transaction: verification starts, then the coordinator's marker (an abort after a
        // timeout, say) lands before the write: the write is refused and opens nothing
        VerificationGuard late = table.startVerification(PID, (short) 0, false);
        marker(PID, 1, 0, false);
        assertThatThrownBy(() -> produceVerified(txnBatch(PID, 1, 0, 1), late))
                .isInstanceOf(org.apache.kafka.common.errors.InvalidTxnStateException.class);
        assertThat(table.ongoingTransactions()).isEmpty();
        // an older epoch cannot even start one
        assertThatThrownBy(() -> table.startVerification(PID, (short) 0, false)).isInstanceOf(InvalidProducerEpochException.class);
        // without verification (the feature off) the table takes it as before
        assertThat(produce(txnBatch(PID, 1, 0, 1))).isEmpty();
        assertThat(table.ongoingTransactions()).hasSize(1);
    }

    /**
     * A TxnOffsetCommit the group coordinator verified (a coordinator append, KIP-890 for offsets):
     * written only with the live guard, refused once a marker overtook the verification.
     */
    @Test
    void aVerifiedOffsetCommitIsRefusedOnceAMarkerOvertookItsVerification() {
        VerificationGuard guard = table.startVerification(PID, (short) 0, false);
        MutableRecordBatch offsets = txnBatch(PID, 0, 0, 1);
        assertThatThrownBy(() -> table.checkCoordinatorAppend(List.of(offsets), VerificationGuard.NONE))
                .isInstanceOf(org.apache.kafka.common.errors.InvalidTxnStateException.class);
        table.checkCoordinatorAppend(List.of(offsets), guard);
        write(offsets);
        // inside the open transaction: no guard needed
        table.checkCoordinatorAppend(List.of(txnBatch(PID, 0, 0, 1)), VerificationGuard.NONE);
        marker(PID, 0, 0, true);

        VerificationGuard late = table.startVerification(PID, (short) 0, false);
        marker(PID, 1, 0, false); // the transaction timed out and was aborted meanwhile
        assertThatThrownBy(() -> table.checkCoordinatorAppend(List.of(txnBatch(PID, 1, 0, 1)), late))
                .isInstanceOf(org.apache.kafka.common.errors.InvalidTxnStateException.class);
        assertThat(table.ongoingTransactions()).isEmpty();
        // unverified (verification off, or a V0 request): taken as before
        table.checkCoordinatorAppend(List.of(txnBatch(PID, 1, 0, 1)), null);
    }

    /**
     * Transactions V2 (KIP-890 part 2): the coordinator writes the markers of the transaction at epoch 0
     * with epoch 1, the epoch of the producer's next transaction, and answers EndTxn before they are out.
     * The next transaction's first write may start its verification before that marker lands here (the
     * coordinator answers its add CONCURRENT_TRANSACTIONS until then): the marker at the guard's own
     * epoch leaves the V2 guard valid, and the write opens the transaction. Found by Kafka Connect's
     * exactly-once source tasks (transaction.boundary=interval), which write again as soon as a commit
     * returns and failed with INVALID_TXN_STATE when the marker voided every guard.
     */
    @Test
    void aV2GuardOutlivesThePreviousTransactionsMarkerAtItsEpochButNotAnyOther() {
        VerificationGuard first = table.startVerification(PID, (short) 0, true);
        assertThat(produceVerified(txnBatch(PID, 0, 0, 2), first)).isEmpty();
        // EndTxn v5 commits and bumps to epoch 1; the client writes at once, before the marker is here
        VerificationGuard next = table.startVerification(PID, (short) 1, true);
        assertThat(next).isNotSameAs(VerificationGuard.NONE);
        marker(PID, 1, 0, true);
        assertThat(table.startVerification(PID, (short) 1, true)).as("a retry after the marker").isSameAs(next);
        assertThat(produceVerified(txnBatch(PID, 1, 0, 1), next)).isEmpty();
        assertThat(table.ongoingTransactions()).hasSize(1);
        marker(PID, 2, 0, true);

        // a V2 guard of an older epoch than the marker's: a late write of the transaction just ended
        VerificationGuard late = table.startVerification(PID, (short) 2, true);
        marker(PID, 3, 0, false); // aborted (timed out) by the coordinator, bumping to 3
        assertThatThrownBy(() -> produceVerified(txnBatch(PID, 2, 0, 1), late))
                .isInstanceOf(org.apache.kafka.common.errors.InvalidTxnStateException.class);
        assertThat(table.ongoingTransactions()).isEmpty();

        // a V1 guard (the epoch does not move with markers) is void after any marker, even at its epoch
        ProducerStateTable v1 = new ProducerStateTable(new TopicPartition("t", 2));
        VerificationGuard old = v1.startVerification(PID + 1, (short) 0, false);
        v1.update(TestRecords.marker(0, PID + 1, (short) 0, 0, true, T0).batches().iterator().next());
        assertThatThrownBy(() -> v1.checkAppend(List.of(txnBatch(PID + 1, 0, 0, 1)), false, old))
                .isInstanceOf(org.apache.kafka.common.errors.InvalidTxnStateException.class);
    }

    @Test
    void aProducerWithAnOpenTransactionDoesNotExpireAndASnapshotLoadKeepsTheTransactionOpen() {
        produce(txnBatch(PID, 0, 0, 1));
        produce(batch(7L, 0, 0, 1));
        assertThat(table.removeExpired(T0 + 1_000_000, 1000)).isEqualTo(1); // producer 7 only
        assertThat(table.entry(PID)).isPresent();

        ProducerStateTable loaded = new ProducerStateTable(new TopicPartition("t", 0));
        loaded.load(table.entries().values());
        assertThat(loaded.ongoingTransactions()).containsExactly(java.util.Map.entry(0L, PID));
        assertThat(loaded.firstUnstableOffset()).isEqualTo(0);
    }
}
