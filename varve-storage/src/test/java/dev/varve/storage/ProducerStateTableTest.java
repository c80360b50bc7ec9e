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
        // A transaction marker (control batch) moves only the epoch and the timestamp.
        table.update(PID, (short) 2, RecordBatch.NO_SEQUENCE, 10, 10, T0 + 5, true);
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
}
