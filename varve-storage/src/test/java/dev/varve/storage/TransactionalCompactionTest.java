package dev.varve.storage;

import dev.varve.storage.CompactionSupport.Read;
import dev.varve.storage.index.TransactionIndex.AbortedTxn;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.record.internal.ControlRecordType;
import org.apache.kafka.common.record.internal.FileLogInputStream.FileChannelRecordBatch;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.PriorityQueue;
import java.util.Set;

import static dev.varve.storage.CompactionSupport.batch;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The cleaner and transactions, as Kafka's cleaner treats them: an aborted transaction's records go when
 * their segment is cleaned; a marker stays while its transaction may have data before it, is stamped
 * with a delete horizon (KIP-534) once the transaction is empty, and goes after the horizon; the
 * cleaned {@code .txnindex} lists exactly the aborted transactions that keep data, so a read_committed
 * read (Kafka's consumer algorithm over {@link PartitionLog#abortedTransactions}) never sees an aborted
 * record; a reload gives the same state.
 */
class TransactionalCompactionTest {
    private static final long T0 = 1_700_000_000_000L;
    private static final long DELETE_RETENTION_MS = 10_000;
    private static final long PRODUCER_EXPIRATION_MS = 60_000;
    private static final TopicPartition TP = new TopicPartition("compacted", 0);

    @TempDir
    File tmp;
    private final MockTime time = new MockTime(T0);
    private final ManualScheduler scheduler = new ManualScheduler(time);
    /** The log the cleaner sees (replaced by a reload). */
    private final List<PartitionLog> logs = new ArrayList<>();
    private final Map<Long, Integer> sequences = new HashMap<>();
    private LogCleanerManager cleaner;

    @AfterEach
    void tearDown() throws IOException {
        for (PartitionLog log : logs) {
            log.close();
        }
    }

    private File dir() {
        return new File(tmp, "compacted-0");
    }

    private PartitionLog open(int segmentBytes) throws IOException {
        PartitionLog log = PartitionLog.open(dir(), TP, CompactionSupport.compacted(segmentBytes, DELETE_RETENTION_MS), time,
                scheduler);
        logs.add(log);
        cleaner = CompactionSupport.manager(CompactionSupport.cleanerConfig(64 * 1024), tmp, time, logs, SegmentSwap.Hook.NONE);
        return log;
    }

    private PartitionLog log() {
        return logs.get(0);
    }

    /** A transactional batch of {@code pid} (epoch 0) with the producer's next sequence. */
    private MemoryRecords txn(long pid, String... keyValues) {
        SimpleRecord[] records = new SimpleRecord[keyValues.length / 2];
        for (int i = 0; i < records.length; i++) {
            records[i] = new SimpleRecord(T0, keyValues[2 * i].getBytes(), keyValues[2 * i + 1].getBytes());
        }
        int seq = sequences.getOrDefault(pid, 0);
        sequences.put(pid, seq + records.length);
        return MemoryRecords.withTransactionalRecords(Compression.NONE, pid, (short) 0, seq, records);
    }

    private void append(MemoryRecords records) {
        log().appendAsLeader(records, 0);
    }

    private void commit(long pid) {
        log().appendMarkerAsLeader(pid, (short) 0, 0, true, 0);
    }

    private void abort(long pid) {
        log().appendMarkerAsLeader(pid, (short) 0, 0, false, 0);
    }

    /** Rolls and moves the high watermark to the log end: everything up to the last stable offset is cleanable. */
    private void rollAndReplicate() {
        log().roll();
        log().updateHighWatermark(log().logEndOffset());
    }

    // ------------------------------------------------------------------ reading

    /** A batch as read back. */
    record Batch(long base, long last, long producerId, boolean transactional, boolean control,
                 OptionalLong deleteHorizonMs, ControlRecordType marker, List<Read> records) {
    }

    /** Every batch from the log start to the log end, following gaps. */
    private static List<Batch> batches(PartitionLog log) {
        List<Batch> out = new ArrayList<>();
        long next = log.logStartOffset();
        while (next < log.logEndOffset()) {
            List<Batch> read = new ArrayList<>();
            for (FileChannelRecordBatch b : log.read(next, 1 << 20, log.logEndOffset(), true).records().batches()) {
                b.ensureValid();
                List<Read> records = new ArrayList<>();
                ControlRecordType marker = null;
                for (Record r : b) {
                    if (b.isControlBatch()) {
                        marker = ControlRecordType.parse(r.key());
                    } else {
                        records.add(new Read(r.offset(), CompactionSupport.string(r.key()), CompactionSupport.string(r.value()),
                                r.timestamp(), null, b.deleteHorizonMs()));
                    }
                }
                read.add(new Batch(b.baseOffset(), b.lastOffset(), b.producerId(), b.isTransactional(), b.isControlBatch(),
                        b.deleteHorizonMs(), marker, records));
            }
            assertThat(read).as("a read at %d below the log end", next).isNotEmpty();
            out.addAll(read);
            next = read.get(read.size() - 1).last() + 1;
        }
        return out;
    }

    /** Every data record's "key=value", in offset order. */
    private static List<String> values(PartitionLog log) {
        List<String> out = new ArrayList<>();
        for (Batch b : batches(log)) {
            b.records().forEach(r -> out.add(r.key() + "=" + r.value()));
        }
        return out;
    }

    /** The markers with a control record left: "COMMIT@offset by producer" etc. */
    private static List<Batch> markers(PartitionLog log) {
        return batches(log).stream().filter(b -> b.control() && b.marker() != null).toList();
    }

    /**
     * What a read_committed consumer reads from the log start to the last stable offset, with Kafka's
     * consumer algorithm: the aborted transactions of the fetch, ordered by first offset, mark their
     * producer aborted from that offset until its ABORT marker; transactional batches of an aborted
     * producer are skipped, and so are control batches.
     */
    private static List<String> readCommitted(PartitionLog log) {
        long lso = log.lastStableOffset();
        PriorityQueue<AbortedTxn> aborted = new PriorityQueue<>(Comparator.comparingLong(AbortedTxn::firstOffset));
        aborted.addAll(log.abortedTransactions(log.logStartOffset(), lso));
        Set<Long> abortedProducers = new HashSet<>();
        List<String> out = new ArrayList<>();
        for (Batch b : batches(log)) {
            if (b.last() >= lso) {
                break;
            }
            while (!aborted.isEmpty() && aborted.peek().firstOffset() <= b.last()) {
                abortedProducers.add(aborted.poll().producerId());
            }
            if (b.control()) {
                if (b.marker() == ControlRecordType.ABORT) {
                    abortedProducers.remove(b.producerId());
                }
            } else if (!(b.transactional() && abortedProducers.contains(b.producerId()))) {
                b.records().forEach(r -> out.add(r.key() + "=" + r.value()));
            }
        }
        return out;
    }

    /** The latest value per key among "key=value" strings, in the order of the keys' latest records. */
    private static List<String> latestPerKey(List<String> keyValues) {
        Map<String, String> latest = new LinkedHashMap<>();
        for (String kv : keyValues) {
            String key = kv.substring(0, kv.indexOf('='));
            latest.remove(key);
            latest.put(key, kv);
        }
        return List.copyOf(latest.values());
    }

    /**
     * Every aborted-transaction index entry still has its ABORT marker (with its record) in the log: an
     * entry without its marker would keep a read_committed consumer skipping the producer's later data.
     */
    private static void checkEveryIndexEntryHasItsMarker(PartitionLog log) {
        Map<Long, Batch> markersByOffset = new HashMap<>();
        markers(log).forEach(m -> markersByOffset.put(m.base(), m));
        for (AbortedTxn t : log.abortedTransactions(0, log.logEndOffset())) {
            Batch marker = markersByOffset.get(t.lastOffset());
            assertThat(marker).as("the ABORT marker of %s", t).isNotNull();
            assertThat(marker.marker()).isEqualTo(ControlRecordType.ABORT);
            assertThat(marker.producerId()).isEqualTo(t.producerId());
        }
    }

    private int clean() {
        int rounds = cleaner.cleanUntilDone(20);
        checkEveryIndexEntryHasItsMarker(log());
        CompactionSupport.checkSegmentsDisjoint(log());
        return rounds;
    }

    // ------------------------------------------------------------------ tests

    @Test
    void abortedRecordsGoAndEachKeyKeepsItsLatestCommittedValueWhileAnOpenTransactionIsLeftAlone() throws IOException {
        PartitionLog log = open(300);
        append(batch(T0, "k0", "p0"));
        append(txn(1, "k1", "c1a", "k0", "c1b"));
        commit(1);
        append(txn(2, "k0", "x2", "k2", "x2b"));
        abort(2);
        append(batch(T0, "k3", "p3"));
        log.roll();
        append(txn(3, "k2", "c3"));
        commit(3);
        append(txn(4, "k1", "x4"));
        log.roll(); // producer 4's aborted transaction spans two segments
        append(txn(4, "k4", "x4b"));
        abort(4);
        append(batch(T0, "k4", "p4b"));
        append(txn(1, "k3", "c1c"));
        commit(1);
        log.roll();
        append(txn(5, "k0", "open")); // never decided: the last stable offset stays here
        rollAndReplicate();
        long lso = log.lastStableOffset();
        Map<Long, Long> ongoing = log.ongoingTransactions();
        List<String> committedBefore = readCommitted(log);
        assertThat(values(log)).contains("k0=x2", "k2=x2b", "k1=x4", "k4=x4b");

        assertThat(clean()).isGreaterThan(0);

        List<String> below = new ArrayList<>();
        for (Batch b : batches(log)) {
            if (b.last() < lso) {
                b.records().forEach(r -> below.add(r.key() + "=" + r.value()));
            }
        }
        assertThat(below).as("below the last stable offset: exactly each key's latest committed value")
                .containsExactlyInAnyOrder("k1=c1a", "k0=c1b", "k2=c3", "k4=p4b", "k3=c1c");
        assertThat(values(log)).as("no aborted record is left; the open transaction's is")
                .doesNotContain("k0=x2", "k2=x2b", "k1=x4", "k4=x4b").contains("k0=open");
        assertThat(readCommitted(log)).containsExactlyInAnyOrderElementsOf(latestPerKey(committedBefore));
        assertThat(log.lastStableOffset()).isEqualTo(lso);
        assertThat(log.ongoingTransactions()).isEqualTo(ongoing);
    }

    @Test
    void aMarkerStaysWhileItsTransactionHasDataThenGetsADeleteHorizonAndGoesAfterIt() throws IOException {
        PartitionLog log = open(100_000);
        append(txn(1, "a", "committed-1"));
        commit(1);                                       // offset 1
        append(txn(2, "b", "aborted-2"));
        abort(2);                                        // offset 3
        append(batch(T0, "c", "plain"));
        append(batch(T0, "a", "plain-a"));               // replaces producer 1's committed value
        rollAndReplicate();
        // Forgotten producers: their batches need not be kept for deduplication, so they can go.
        time.advance(PRODUCER_EXPIRATION_MS);
        assertThat(log.removeExpiredProducers(PRODUCER_EXPIRATION_MS)).isEqualTo(2);

        // Round 1: the aborted record and the superseded committed one go; the round read data of both
        // transactions, so both markers stay as they were, and producer 2's index entry with its marker.
        clean();
        assertThat(values(log)).containsExactly("c=plain", "a=plain-a");
        assertThat(markers(log)).extracting(Batch::base).containsExactly(1L, 3L);
        assertThat(markers(log)).allSatisfy(m -> assertThat(m.deleteHorizonMs()).isEmpty());
        assertThat(log.abortedTransactions(0, log.logEndOffset())).extracting(AbortedTxn::producerId).containsExactly(2L);

        // Round 2 (new data makes the log dirty): both transactions are empty now; their markers get a
        // delete horizon of now + delete.retention.ms, and the index no longer lists producer 2.
        append(batch(T0, "d", "1"));
        rollAndReplicate();
        long stampedAt = time.milliseconds();
        clean();
        assertThat(markers(log)).extracting(Batch::base).containsExactly(1L, 3L);
        assertThat(markers(log)).allSatisfy(m ->
                assertThat(m.deleteHorizonMs()).hasValue(stampedAt + DELETE_RETENTION_MS));
        assertThat(log.abortedTransactions(0, log.logEndOffset())).isEmpty();
        assertThat(readCommitted(log)).containsExactly("c=plain", "a=plain-a", "d=1");

        // Before the horizon they stay, however often the log is cleaned.
        time.advance(DELETE_RETENTION_MS - 1);
        append(batch(T0, "e", "1"));
        rollAndReplicate();
        clean();
        assertThat(markers(log)).extracting(Batch::base).containsExactly(1L, 3L);

        // At the horizon a round runs for them alone (nothing else is dirty) and drops them.
        time.advance(1);
        assertThat(clean()).as("a round for the expired markers").isEqualTo(1);
        assertThat(markers(log)).isEmpty();
        assertThat(values(log)).containsExactly("c=plain", "a=plain-a", "d=1", "e=1");
        assertThat(readCommitted(log)).containsExactly("c=plain", "a=plain-a", "d=1", "e=1");
        assertThat(log.ongoingTransactions()).isEmpty();
        assertThat(log.lastStableOffset()).isEqualTo(log.highWatermark());
    }

    @Test
    void aCommitMarkerStaysForAsLongAsItsTransactionKeepsARecordEvenInAnEarlierSegmentGroup() throws IOException {
        PartitionLog log = open(300);
        // Segment 0: producer 1's committed value (a key's latest, so it stays); big enough that its
        // segment and the marker's are never rewritten as one group.
        append(txn(1, "kept", "v".repeat(180)));
        log.roll();
        commit(1);
        append(batch(T0, "x", "y".repeat(60)));
        rollAndReplicate();
        time.advance(PRODUCER_EXPIRATION_MS);
        log.removeExpiredProducers(PRODUCER_EXPIRATION_MS);
        for (int i = 0; i < 4; i++) {
            clean();
            time.advance(DELETE_RETENTION_MS + 1);
            append(batch(T0, "x", "y" + i));
            rollAndReplicate();
        }
        clean();
        assertThat(markers(log)).as("the commit marker of a transaction with a record left")
                .singleElement().satisfies(m -> {
                    assertThat(m.marker()).isEqualTo(ControlRecordType.COMMIT);
                    assertThat(m.deleteHorizonMs()).isEmpty();
                });
        assertThat(values(log)).contains("kept=" + "v".repeat(180));
        // Without snapshots the state is rebuilt from the log: the transaction is closed by its marker.
        PartitionLog reloaded = reloadWithoutSnapshots();
        assertThat(reloaded.ongoingTransactions()).isEmpty();
        assertThat(reloaded.lastStableOffset()).isEqualTo(reloaded.highWatermark());
    }

    @Test
    void readCommittedSkipsTheAbortedDataTheCleanerHasNotReachedAtEveryStep() throws IOException {
        PartitionLog log = open(100_000);
        append(txn(1, "a", "aborted-1"));                // in a segment the first round cleans
        append(batch(T0, "b", "1"));
        log.roll();
        append(txn(3, "c", "aborted-3"));                // in the active segment: never cleaned in round 1
        abort(1);                                        // producer 1's marker too
        abort(3);
        append(batch(T0, "d", "1"));
        log.updateHighWatermark(log.logEndOffset());
        time.advance(PRODUCER_EXPIRATION_MS);
        log.removeExpiredProducers(PRODUCER_EXPIRATION_MS);
        List<String> expected = List.of("b=1", "d=1");
        assertThat(readCommitted(log)).isEqualTo(expected);

        clean(); // drops producer 1's record; its marker and index entry are in the active segment
        assertThat(values(log)).doesNotContain("a=aborted-1").contains("c=aborted-3");
        assertThat(readCommitted(log)).isEqualTo(expected);

        rollAndReplicate();
        append(batch(T0, "e", "1"));
        rollAndReplicate();
        clean(); // now producer 3's record goes too; producer 1's transaction is empty
        assertThat(values(log)).doesNotContain("a=aborted-1", "c=aborted-3");
        assertThat(log.abortedTransactions(0, log.logEndOffset())).extracting(AbortedTxn::producerId).containsExactly(3L);
        assertThat(readCommitted(log)).isEqualTo(List.of("b=1", "d=1", "e=1"));

        append(batch(T0, "f", "1"));
        rollAndReplicate();
        clean();
        assertThat(log.abortedTransactions(0, log.logEndOffset())).isEmpty();
        assertThat(readCommitted(log)).isEqualTo(List.of("b=1", "d=1", "e=1", "f=1"));
    }

    @Test
    void aReloadAfterCleaningGivesTheSameStateWithAndWithoutProducerSnapshots() throws IOException {
        PartitionLog log = open(300);
        for (int round = 0; round < 3; round++) {
            for (long pid = 10; pid < 14; pid++) {
                append(txn(pid, "k" + pid % 3, "p" + pid + "-r" + round, "j" + round, "v" + pid));
                if ((pid + round) % 2 == 0) {
                    commit(pid);
                } else {
                    abort(pid);
                }
                append(batch(T0, "plain" + pid % 2, "r" + round));
            }
            if (round == 1) {
                append(txn(20, "late", "open")); // open across the reload: the last stable offset stays here
            }
            rollAndReplicate();
            clean();
            time.advance(DELETE_RETENTION_MS / 2);
        }
        // the open transaction's segment is past the last stable offset: it keeps its records
        assertThat(values(log)).contains("late=open");
        State before = State.of(log);
        assertThat(before.ongoing()).containsOnlyKeys(before.lso());

        log.close();
        logs.clear();
        PartitionLog clean = PartitionLog.open(dir(), TP, log.config(), time, scheduler, 0, log.logEndOffset(),
                before.hw(), true);
        logs.add(clean);
        assertThat(State.of(clean)).as("after a clean restart").isEqualTo(before);
        assertThat(clean.abortedTransactions(0, clean.logEndOffset()))
                .isEqualTo(before.aborted());

        PartitionLog rebuilt = reloadWithoutSnapshots();
        State after = State.of(rebuilt);
        assertThat(after.withoutIndex()).as("after a crash, rebuilt from the log alone").isEqualTo(before.withoutIndex());
        checkEveryIndexEntryHasItsMarker(rebuilt);
        // and cleaning goes on from there
        rebuilt.updateHighWatermark(rebuilt.logEndOffset());
        clean();
        assertThat(readCommitted(rebuilt)).isEqualTo(before.committed());
    }

    /** What a reload must give back. */
    record State(List<String> values, List<String> committed, long hw, long lso, Map<Long, Long> ongoing,
                 Map<Long, String> producers, List<AbortedTxn> aborted) {
        static State of(PartitionLog log) {
            Map<Long, String> producers = new HashMap<>();
            log.activeProducers().forEach((id, e) -> producers.put(id, "epoch " + e.producerEpoch() + " lastSeq "
                    + e.lastSeq() + " lastDataOffset " + e.lastDataOffset() + " txn " + e.currentTxnFirstOffset()));
            return new State(TransactionalCompactionTest.values(log), readCommitted(log), log.highWatermark(), log.lastStableOffset(),
                    log.ongoingTransactions(), producers, log.abortedTransactions(0, log.logEndOffset()));
        }

        /** Without the index entries: a rebuild also indexes the ABORT markers of emptied transactions (harmless). */
        State withoutIndex() {
            return new State(values, committed, hw, lso, ongoing, producers, List.of());
        }
    }

    /** Closes the log, deletes its producer snapshots and opens it as after a crash (full recovery and replay). */
    private PartitionLog reloadWithoutSnapshots() throws IOException {
        PartitionLog log = log();
        long hw = log.highWatermark();
        log.close();
        logs.clear();
        for (File f : dir().listFiles((d, n) -> n.endsWith(".snapshot"))) {
            Files.delete(f.toPath());
        }
        PartitionLog reopened = PartitionLog.open(dir(), TP, log.config(), time, scheduler, 0, 0, hw, false);
        logs.add(reopened);
        return reopened;
    }

    @Test
    void theLastMarkerOfAProducerWithoutDataLeftIsKeptEmptySoItsEpochSurvivesAReload() throws IOException {
        PartitionLog log = open(100_000);
        append(txn(7, "k", "aborted"));
        // a marker in a new epoch (a coordinator that bumped it, as transactions V2 do at every end): the
        // partition remembers producer 7 at epoch 1 with no data batch of that epoch
        log.appendMarkerAsLeader(7, (short) 1, 0, false, 0);
        append(batch(T0, "k", "plain"));
        rollAndReplicate();
        assertThat(log.producerState(7)).hasValueSatisfying(e -> {
            assertThat(e.producerEpoch()).isEqualTo((short) 1);
            assertThat(e.isEmpty()).isTrue();
        });
        for (int i = 0; i < 3; i++) {
            clean();
            time.advance(DELETE_RETENTION_MS);
            append(batch(T0, "k", "plain" + i));
            rollAndReplicate();
        }
        clean();
        assertThat(values(log)).doesNotContain("k=aborted");
        assertThat(markers(log)).as("no marker record left").isEmpty();
        assertThat(batches(log)).as("the marker's batch stays, empty")
                .filteredOn(b -> b.control() && b.producerId() == 7).singleElement()
                .satisfies(b -> assertThat(b.records()).isEmpty());

        PartitionLog reloaded = reloadWithoutSnapshots();
        assertThat(reloaded.producerState(7)).as("the epoch, rebuilt from the empty marker batch")
                .hasValueSatisfying(e -> assertThat(e.producerEpoch()).isEqualTo((short) 1));
        assertThat(reloaded.ongoingTransactions()).isEmpty();
    }
}
