package dev.varve.storage;

import dev.varve.storage.index.TransactionIndex.AbortedTxn;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.errors.InvalidTxnStateException;
import org.apache.kafka.common.errors.TransactionCoordinatorFencedException;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Transactions in one partition's log: the last stable offset, markers, the aborted-transaction
 * index (Kafka's {@code .txnindex}), and all of it across clean restarts, crashes and truncation.
 */
class TransactionalLogTest {
    private static final long T0 = 1_700_000_000_000L;
    private static final TopicPartition TP = new TopicPartition("payments", 0);

    @TempDir
    File tmp;
    private final MockTime time = new MockTime(T0);
    private final ManualScheduler scheduler = new ManualScheduler(time);
    private final List<PartitionLog> opened = new ArrayList<>();
    private File dir;

    private static LogConfig small() {
        return LogConfig.fromMap(Map.of(TopicConfig.SEGMENT_BYTES_CONFIG, 400,
                TopicConfig.FILE_DELETE_DELAY_MS_CONFIG, 1000L, TopicConfig.RETENTION_MS_CONFIG, -1L));
    }

    private PartitionLog open() throws IOException {
        dir = new File(tmp, "payments-0");
        PartitionLog log = PartitionLog.open(dir, TP, small(), time, scheduler);
        opened.add(log);
        return log;
    }

    @AfterEach
    void closeAll() throws IOException {
        for (PartitionLog log : opened) {
            log.close();
        }
    }

    private static MemoryRecords txn(long pid, int seq, int count) {
        return TestRecords.transactional(pid, (short) 0, seq, count, T0);
    }

    private static void commitAll(PartitionLog log) {
        log.updateHighWatermark(log.logEndOffset());
    }

    @Test
    void theLastStableOffsetStopsAtTheOldestOpenTransactionUntilItsMarkerIsReplicated() throws IOException {
        PartitionLog log = open();
        log.appendAsLeader(TestRecords.idempotent(7, (short) 0, 0, 2, T0), 0); // 0-1
        log.appendAsLeader(txn(1, 0, 3), 0);                                    // 2-4: producer 1 opens at 2
        log.appendAsLeader(txn(2, 0, 1), 0);                                    // 5: producer 2 opens at 5
        commitAll(log);
        assertThat(log.highWatermark()).isEqualTo(6);
        assertThat(log.lastStableOffset()).isEqualTo(2);
        assertThat(log.ongoingTransactions()).containsExactly(Map.entry(2L, 1L), Map.entry(5L, 2L));

        log.appendMarkerAsLeader(1, (short) 0, 0, true, 0);                      // COMMIT at 6
        assertThat(log.lastStableOffset()).as("the commit is not replicated yet").isEqualTo(2);
        log.updateHighWatermark(7);
        assertThat(log.lastStableOffset()).as("producer 2 still open from 5").isEqualTo(5);
        log.appendMarkerAsLeader(2, (short) 0, 0, false, 0);                     // ABORT at 7
        commitAll(log);
        assertThat(log.lastStableOffset()).isEqualTo(8).isEqualTo(log.highWatermark());
        assertThat(log.firstUnstableOffset()).isEmpty();

        // only the abort is indexed, with the last stable offset after it
        assertThat(log.abortedTransactions(0, 8)).containsExactly(new AbortedTxn(2, 5, 7, 8));
        assertThat(log.abortedTransactions(0, 5)).as("ends before the aborted data").isEmpty();
        assertThat(log.abortedTransactions(8, 9)).as("starts after the marker").isEmpty();
    }

    /**
     * Found by ChaosTest (seed 38961992805745): an abort whose marker is in a segment starting at or
     * past the fetch's upper bound (another transaction still open below it) was not reported, so a
     * read_committed consumer took its records for committed ones.
     */
    @Test
    void anAbortWhoseMarkerIsInASegmentPastTheUpperBoundIsStillReported() throws IOException {
        PartitionLog log = open();
        log.appendAsLeader(txn(1, 0, 2), 0); // 0-1: producer 1 opens at 0
        log.appendAsLeader(txn(2, 0, 1), 0); // 2: producer 2 opens at 2
        log.roll();                          // the next segment starts at 3
        log.appendMarkerAsLeader(1, (short) 0, 0, false, 0); // ABORT of producer 1 at 3
        commitAll(log);
        assertThat(log.lastStableOffset()).as("producer 2 still open from 2").isEqualTo(2);
        assertThat(log.numberOfSegments()).isEqualTo(2);

        // a read_committed fetch from 0 returns [0, 2): producer 1's aborted records
        assertThat(log.abortedTransactions(0, log.lastStableOffset()))
                .containsExactly(new AbortedTxn(1, 0, 3, 2));
    }

    /**
     * Random interleavings of producers' transactions over many small segments: every read_committed
     * fetch is told exactly the aborted transactions that overlap what it may read, as a brute-force
     * model of the log computes them.
     */
    @Test
    void everyFetchIsToldExactlyTheAbortsThatOverlapIt() throws IOException {
        for (int seed = 0; seed < 60; seed++) {
            java.util.Random random = new java.util.Random(seed);
            dir = new File(tmp, "payments-" + seed);
            PartitionLog log = PartitionLog.open(dir, TP, small(), time, scheduler);
            opened.add(log);
            Map<Long, Long> open = new java.util.HashMap<>(); // producer -> first offset
            Map<Long, Integer> seqs = new java.util.HashMap<>();
            List<AbortedTxn> aborts = new ArrayList<>();
            for (int step = 0; step < 80; step++) {
                long pid = 1 + random.nextInt(4);
                if (open.containsKey(pid) && random.nextInt(3) == 0) {
                    boolean commit = random.nextBoolean();
                    long first = open.remove(pid);
                    long marker = log.logEndOffset();
                    log.appendMarkerAsLeader(pid, (short) 0, 0, commit, 0);
                    if (!commit) {
                        aborts.add(new AbortedTxn(pid, first, marker, 0));
                    }
                } else {
                    int count = 1 + random.nextInt(3);
                    int seq = seqs.getOrDefault(pid, 0);
                    long at = log.logEndOffset();
                    log.appendAsLeader(txn(pid, seq, count), 0);
                    seqs.put(pid, seq + count);
                    open.putIfAbsent(pid, at);
                }
                if (random.nextInt(4) == 0) {
                    log.updateHighWatermark(log.logEndOffset() - random.nextInt(3));
                }
                long lso = log.lastStableOffset();
                long start = lso == 0 ? 0 : random.nextLong(lso);
                List<List<Long>> expected = aborts.stream()
                        .filter(t -> t.lastOffset() >= start && t.firstOffset() < lso)
                        .map(t -> List.of(t.producerId(), t.firstOffset(), t.lastOffset())).toList();
                List<List<Long>> actual = log.abortedTransactions(start, lso).stream()
                        .map(t -> List.of(t.producerId(), t.firstOffset(), t.lastOffset())).toList();
                assertThat(actual).as("seed %d step %d: fetch [%d, %d) over %d segments", seed, step, start, lso,
                        log.numberOfSegments()).containsExactlyElementsOf(expected);
            }
        }
    }

    @Test
    void leaderChecksRefuseANonTransactionalWriteInsideATransactionAndAFencedCoordinator() throws IOException {
        PartitionLog log = open();
        log.appendAsLeader(txn(1, 0, 1), 0);
        assertThatThrownBy(() -> log.appendAsLeader(TestRecords.idempotent(1, (short) 0, 1, 1, T0), 0))
                .isInstanceOf(InvalidTxnStateException.class);
        log.appendMarkerAsLeader(1, (short) 0, 3, false, 0);
        long end = log.logEndOffset();
        assertThatThrownBy(() -> log.appendMarkerAsLeader(1, (short) 0, 2, true, 0))
                .isInstanceOf(TransactionCoordinatorFencedException.class);
        assertThat(log.logEndOffset()).as("nothing written by a refused marker").isEqualTo(end);
    }

    @Test
    void abortsAcrossSegmentsAreAllFoundAndTheIndexFilesAreKafkas() throws IOException {
        PartitionLog log = open();
        for (int i = 0; i < 12; i++) {
            log.appendAsLeader(txn(100 + i, 0, 2), 0);
            log.appendMarkerAsLeader(100 + i, (short) 0, 0, i % 2 == 1, 0); // even i: ABORT
            commitAll(log);
        }
        assertThat(log.numberOfSegments()).isGreaterThan(3);
        List<AbortedTxn> all = log.abortedTransactions(0, log.logEndOffset());
        assertThat(all).extracting(AbortedTxn::producerId).containsExactly(100L, 102L, 104L, 106L, 108L, 110L);
        for (AbortedTxn t : all) {
            assertThat(t.lastOffset() - t.firstOffset()).isEqualTo(2); // two records, then the marker
        }
        // a fetch in the middle gets the aborts that overlap it only
        AbortedTxn third = all.get(2);
        assertThat(log.abortedTransactions(third.firstOffset(), third.lastOffset())).containsExactly(third);

        // each .txnindex file is read by Kafka's TransactionIndex as the same entries
        File[] files = dir.listFiles((d, n) -> n.endsWith(".txnindex"));
        assertThat(files).isNotEmpty();
        List<Long> kafkaRead = new ArrayList<>();
        for (File f : files) {
            long base = Long.parseLong(f.getName().substring(0, 20));
            try (org.apache.kafka.storage.internals.log.TransactionIndex k =
                         new org.apache.kafka.storage.internals.log.TransactionIndex(base, f)) {
                k.allAbortedTxns().forEach(t -> kafkaRead.add(t.producerId()));
            }
        }
        assertThat(kafkaRead).containsExactlyInAnyOrder(100L, 102L, 104L, 106L, 108L, 110L);
    }

    @Test
    void aCleanRestartKeepsOpenTransactionsAndTheIndex() throws IOException {
        PartitionLog log = open();
        log.appendAsLeader(txn(1, 0, 2), 0);
        log.appendMarkerAsLeader(1, (short) 0, 0, false, 0);
        log.appendAsLeader(txn(2, 0, 2), 0); // open at 3
        commitAll(log);
        long hw = log.highWatermark();
        log.flush();
        log.close();
        opened.clear();
        PartitionLog reopened = PartitionLog.open(dir, TP, small(), time, scheduler, 0, hw, hw, true);
        opened.add(reopened);
        assertThat(reopened.lastStableOffset()).isEqualTo(3);
        assertThat(reopened.ongoingTransactions()).containsExactly(Map.entry(3L, 2L));
        assertThat(reopened.abortedTransactions(0, hw)).containsExactly(new AbortedTxn(1, 0, 2, 3));
        reopened.appendMarkerAsLeader(2, (short) 0, 0, true, 0);
        commitAll(reopened);
        assertThat(reopened.lastStableOffset()).isEqualTo(reopened.highWatermark());
    }

    @Test
    void aCrashRebuildsTheIndexOfTheUnflushedSegmentsFromTheLog() throws IOException {
        PartitionLog log = open();
        for (int i = 0; i < 8; i++) {
            log.appendAsLeader(txn(100 + i, 0, 2), 0);
            log.appendMarkerAsLeader(100 + i, (short) 0, 0, false, 0);
        }
        log.appendAsLeader(txn(200, 0, 1), 0); // left open
        commitAll(log);
        List<AbortedTxn> before = log.abortedTransactions(0, log.logEndOffset());
        assertThat(before).hasSize(8);
        long end = log.logEndOffset();
        // the crash: nothing was flushed, and the index files are lost or torn
        for (File f : dir.listFiles((d, n) -> n.endsWith(".txnindex"))) {
            if (f.getName().startsWith("00000000000000000000")) {
                assertThat(f.delete()).isTrue();
            } else {
                try (java.io.RandomAccessFile raf = new java.io.RandomAccessFile(f, "rw")) {
                    raf.setLength(raf.length() - 5);
                }
            }
        }
        opened.clear(); // abandoned, never closed
        PartitionLog recovered = PartitionLog.open(dir, TP, small(), time, scheduler, 0, 0, end, false);
        opened.add(recovered);
        assertThat(recovered.logEndOffset()).isEqualTo(end);
        assertThat(recovered.abortedTransactions(0, end)).isEqualTo(before);
        assertThat(recovered.ongoingTransactions()).containsExactly(Map.entry(end - 1, 200L));
        assertThat(recovered.lastStableOffset()).isEqualTo(end - 1);
    }

    @Test
    void truncationBelowAMarkerReopensItsTransactionAndDropsItsIndexEntry() throws IOException {
        PartitionLog log = open();
        log.appendAsLeader(txn(1, 0, 2), 0);                  // 0-1
        log.appendMarkerAsLeader(1, (short) 0, 0, false, 0);   // ABORT at 2
        log.appendAsLeader(txn(2, 0, 1), 0);                  // 3
        log.appendMarkerAsLeader(2, (short) 0, 0, false, 0);   // ABORT at 4
        assertThat(log.abortedTransactions(0, 5)).hasSize(2);
        log.truncateTo(4); // a new leader never had the second marker
        assertThat(log.abortedTransactions(0, 5)).containsExactly(new AbortedTxn(1, 0, 2, 3));
        assertThat(log.ongoingTransactions()).containsExactly(Map.entry(3L, 2L));
        log.updateHighWatermark(4);
        assertThat(log.lastStableOffset()).isEqualTo(3);
        // the new leader's marker closes it again
        log.appendAsFollower(TestRecords.marker(4, 2, (short) 0, 1, true, T0));
        log.updateHighWatermark(5);
        assertThat(log.lastStableOffset()).isEqualTo(5);
        assertThat(log.abortedTransactions(0, 5)).hasSize(1);
    }

    @Test
    void aFollowerTracksTransactionsFromReplicatedBatchesAlone() throws IOException {
        PartitionLog log = open();
        MemoryRecords data = txn(1, 0, 2); // offsets 0-1 as the leader assigned them
        log.appendAsFollower(data);
        log.appendAsFollower(TestRecords.marker(2, 1, (short) 0, 0, false, T0));
        log.updateHighWatermark(2);
        assertThat(log.lastStableOffset()).isEqualTo(0);
        log.updateHighWatermark(3);
        assertThat(log.lastStableOffset()).isEqualTo(3);
        assertThat(log.abortedTransactions(0, 3)).containsExactly(new AbortedTxn(1, 0, 2, 3));
    }

    @Test
    void aReplicatedMarkerWhoseControlRecordCannotBeReadIsRefusedBeforeAnythingIsWritten() throws IOException {
        PartitionLog log = open();
        log.appendAsFollower(txn(1, 0, 1)); // offset 0, producer 1 opens
        java.nio.ByteBuffer buf = java.nio.ByteBuffer.allocate(256);
        org.apache.kafka.common.record.internal.MemoryRecordsBuilder b = MemoryRecords.builder(buf,
                org.apache.kafka.common.record.internal.RecordBatch.CURRENT_MAGIC_VALUE, org.apache.kafka.common.compress.Compression.NONE,
                org.apache.kafka.common.record.TimestampType.CREATE_TIME, 1L, T0, 1L, (short) 0, -1, true, true, 0);
        // a COMMIT key (version 0, type 1) with a one-byte value: no coordinator epoch in it
        b.appendControlRecord(T0, org.apache.kafka.common.record.internal.ControlRecordType.COMMIT, java.nio.ByteBuffer.wrap(new byte[] {0}));
        MemoryRecords bad = b.build();
        assertThatThrownBy(() -> log.appendAsFollower(bad))
                .isInstanceOf(org.apache.kafka.common.errors.CorruptRecordException.class);
        assertThat(log.logEndOffset()).isEqualTo(1);
        assertThat(log.size()).as("no bytes of it in the segment").isEqualTo(txn(1, 0, 1).sizeInBytes());
        assertThat(log.ongoingTransactions()).containsExactly(Map.entry(0L, 1L));
    }

    @Test
    void aCoordinatorsTransactionalBatchesAreCheckedOnlyForTheProducerEpoch() throws IOException {
        PartitionLog log = open();
        // a TxnOffsetCommit batch starts at sequence 0 every time: as a client's it would be a duplicate
        LogAppendInfo first = log.appendAsLeader(txn(1, 0, 2), 0, AppendOrigin.COORDINATOR);
        LogAppendInfo again = log.appendAsLeader(txn(1, 0, 2), 0, AppendOrigin.COORDINATOR);
        assertThat(again.duplicate()).isFalse();
        assertThat(again.firstOffset()).isEqualTo(first.lastOffset() + 1);
        assertThat(log.ongoingTransactions()).containsExactly(Map.entry(0L, 1L));
        log.appendMarkerAsLeader(1, (short) 1, 0, true, 0); // a newer epoch (transactions V2 bump it at the end)
        assertThatThrownBy(() -> log.appendAsLeader(txn(1, 0, 1), 0, AppendOrigin.COORDINATOR))
                .isInstanceOf(org.apache.kafka.common.errors.InvalidProducerEpochException.class);
        assertThat(log.logEndOffset()).isEqualTo(5);
        // the same batch from a client is the duplicate it looks like
        assertThat(log.appendAsLeader(TestRecords.transactional(1, (short) 1, 0, 1, T0), 0).duplicate()).isFalse();
        assertThat(log.appendAsLeader(TestRecords.transactional(1, (short) 1, 0, 1, T0), 0).duplicate()).isTrue();
    }

    /**
     * Transactions V2 (KIP-1228, as Kafka 4.4 checks it): a marker at the producer's epoch that comes
     * after the producer's next transaction began here (sent late by a deposed coordinator, or a delayed
     * request) is refused, so it cannot end that transaction with the previous one's outcome, as it
     * did in ChaosTest seed 30901281307092 (a committed transaction's writes on two partitions aborted
     * by the previous transaction's late ABORT). The retry of a marker already written is taken; a V1
     * marker (its end keeps the epoch) is checked as before.
     */
    @Test
    void aLateTransactionsV2MarkerCannotEndTheProducersNextTransaction() throws IOException {
        PartitionLog log = open();
        log.appendAsLeader(TestRecords.transactional(1, (short) 0, 0, 1, T0), 0);  // T0 at epoch 0, offset 0
        log.appendMarkerAsLeader(1, (short) 1, 0, false, 0, (short) 2);           // its ABORT, at the bumped epoch
        log.appendMarkerAsLeader(1, (short) 1, 0, false, 0, (short) 2);           // a retry: nothing open, taken
        long next = log.logEndOffset();
        log.appendAsLeader(TestRecords.transactional(1, (short) 1, 0, 2, T0), 0);  // T1 at epoch 1
        long end = log.logEndOffset();

        assertThatThrownBy(() -> log.appendMarkerAsLeader(1, (short) 1, 0, false, 0, (short) 2))
                .as("T0's ABORT once more, after T1 began")
                .isInstanceOf(org.apache.kafka.common.errors.InvalidProducerEpochException.class)
                .hasMessageContaining("not newer");
        assertThat(log.logEndOffset()).as("nothing written").isEqualTo(end);
        assertThat(log.ongoingTransactions()).containsExactly(Map.entry(next, 1L));

        log.appendMarkerAsLeader(1, (short) 2, 0, true, 0, (short) 2);            // T1's COMMIT
        log.updateHighWatermark(log.logEndOffset());
        assertThat(log.abortedTransactions(0, log.logEndOffset())).extracting(AbortedTxn::firstOffset)
                .as("T1's records are in no aborted transaction").allMatch(first -> first < next);

        // V1: the end keeps the epoch, so a marker at the producer's epoch is the next one's
        log.appendAsLeader(TestRecords.transactional(2, (short) 5, 0, 1, T0), 0);
        log.appendMarkerAsLeader(2, (short) 5, 0, true, 0, (short) 0);
        log.appendAsLeader(TestRecords.transactional(2, (short) 5, 1, 1, T0), 0);
        log.appendMarkerAsLeader(2, (short) 5, 0, false, 0, (short) 0);
        assertThat(log.ongoingTransactions()).isEmpty();
    }
}
