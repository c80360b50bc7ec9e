package dev.varve.storage;

import dev.varve.storage.CompactionSupport.Read;
import org.apache.kafka.common.InvalidRecordException;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.record.internal.ControlRecordType;
import org.apache.kafka.common.record.internal.EndTransactionMarker;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static dev.varve.storage.CompactionSupport.batch;
import static dev.varve.storage.CompactionSupport.readAll;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class LogCleanerTest {
    private static final long T0 = 1_700_000_000_000L;
    private static final TopicPartition TP = new TopicPartition("compacted", 0);

    @TempDir
    Path tmp;
    private MockTime time;
    private ManualScheduler scheduler;
    private final List<PartitionLog> open = new ArrayList<>();

    @BeforeEach
    void setUp() {
        time = new MockTime(T0);
        scheduler = new ManualScheduler(time);
    }

    @AfterEach
    void tearDown() throws IOException {
        for (PartitionLog log : open) {
            log.close();
        }
    }

    private PartitionLog log(LogConfig config) throws IOException {
        PartitionLog log = PartitionLog.open(tmp.resolve("compacted-0").toFile(), TP, config, time, scheduler);
        open.add(log);
        return log;
    }

    private LogCleanerManager cleaner(PartitionLog log, long dedupeBytes) {
        return CompactionSupport.manager(CompactionSupport.cleanerConfig(dedupeBytes), tmp.toFile(), time, List.of(log),
                SegmentSwap.Hook.NONE);
    }

    /** Appends, rolls and commits everything, so that all of it is cleanable. */
    private static void appendAll(PartitionLog log, MemoryRecords... batches) {
        for (MemoryRecords b : batches) {
            log.appendAsLeader(b, 0);
        }
        log.roll();
        log.updateHighWatermark(log.logEndOffset());
    }

    @Test
    void keepsTheLatestValuePerKeyAtItsOriginalOffset() throws IOException {
        PartitionLog log = log(CompactionSupport.compacted(300, 1000));
        for (int i = 0; i < 30; i++) {
            log.appendAsLeader(batch(T0 + i, "k" + (i % 3), "v" + i), 0);
        }
        appendAll(log);
        LogCleanerManager cleaner = cleaner(log, 64 * 1024);
        assertThat(cleaner.cleanUntilDone(10)).isGreaterThan(0);
        List<Read> records = readAll(log);
        assertThat(records).extracting(Read::offset).containsExactly(27L, 28L, 29L);
        assertThat(records).extracting(Read::value).containsExactly("v27", "v28", "v29");
        assertThat(records).extracting(Read::timestamp).containsExactly(T0 + 27, T0 + 28, T0 + 29);
        assertThat(log.logEndOffset()).isEqualTo(30);
        CompactionSupport.checkSegmentsDisjoint(log);
        assertThat(cleaner.checkpointedOffset(TP)).contains(30L);
        assertThat(new File(tmp.toFile(), LogFileNames.CLEANER_OFFSET_CHECKPOINT)).exists();
        // Reads between the gaps land on the next kept batch.
        assertThat(log.read(3, 1000, 30, true).records().batches().iterator().next().lastOffset()).isGreaterThanOrEqualTo(3);
        // The next round merges the now small segments (at most segment.bytes together).
        int segmentsBefore = log.numberOfSegments();
        appendAll(log, batch(T0, "k0", "last"));
        cleaner.cleanUntilDone(10);
        assertThat(log.numberOfSegments()).isLessThan(segmentsBefore);
        assertThat(readAll(log)).extracting(Read::value).containsExactly("v28", "v29", "last");
        CompactionSupport.checkSegmentsDisjoint(log);
    }

    @Test
    void aBatchThatRottedOnDiskIsNeverRewrittenWithAFreshCrc() throws IOException {
        PartitionLog log = log(CompactionSupport.compacted(300, 1000));
        for (int i = 0; i < 30; i++) {
            log.appendAsLeader(batch(T0 + i, "k" + (i % 3), "v" + i), 0);
        }
        appendAll(log);
        File first = LogFileNames.logFile(tmp.resolve("compacted-0").toFile(), log.segmentBaseOffsets().get(0));
        byte[] before = java.nio.file.Files.readAllBytes(first.toPath());
        try (java.io.RandomAccessFile raf = new java.io.RandomAccessFile(first, "rw")) {
            raf.seek(before.length - 2); // a value byte of the segment's last batch
            raf.write(before[before.length - 2] ^ 0x40);
        }
        LogCleanerManager cleaner = cleaner(log, 64 * 1024);
        cleaner.cleanUntilDone(10);
        // The damaged segment is left as it is (start-up verification or a replica repairs it), not laundered.
        byte[] after = java.nio.file.Files.readAllBytes(first.toPath());
        assertThat(after.length).isEqualTo(before.length);
        assertThat(after[before.length - 2]).isEqualTo((byte) (before[before.length - 2] ^ 0x40));
    }

    @Test
    void aTombstoneStaysForDeleteRetentionAfterItsFirstCleaningThenGoes() throws IOException {
        PartitionLog log = log(CompactionSupport.compacted(100_000, 5_000));
        appendAll(log, batch(T0, "a", "1", "b", "1"), batch(T0, "a", null));
        LogCleanerManager cleaner = cleaner(log, 64 * 1024);
        cleaner.cleanUntilDone(10);
        List<Read> afterFirst = readAll(log);
        assertThat(afterFirst).extracting(Read::key).containsExactly("b", "a");
        Read tombstone = afterFirst.get(1);
        assertThat(tombstone.value()).isNull();
        assertThat(tombstone.deleteHorizonMs()).hasValue(T0 + 5_000);
        assertThat(tombstone.timestamp()).isEqualTo(T0); // timestamps survive the new base timestamp

        time.advance(4_999);
        appendAll(log, batch(T0, "c", "1"));
        cleaner.cleanUntilDone(10);
        assertThat(readAll(log)).extracting(Read::key).containsExactly("b", "a", "c");

        time.advance(1);
        assertThat(cleaner.cleanUntilDone(10)).as("a pass only for the expired tombstone").isEqualTo(1);
        assertThat(readAll(log)).extracting(Read::key).containsExactly("b", "c");
    }

    @Test
    void aRoundForExpiredTombstonesAloneNeverUsesTheKeyMapOfAnotherLog() throws IOException {
        PartitionLog a = log(CompactionSupport.compacted(100_000, 5_000));
        PartitionLog b = PartitionLog.open(tmp.resolve("other-0").toFile(), new TopicPartition("other", 0),
                CompactionSupport.compacted(100_000, 5_000), time, scheduler);
        open.add(b);
        List<PartitionLog> logs = new ArrayList<>(List.of(a));
        LogCleanerManager cleaner = CompactionSupport.manager(CompactionSupport.cleanerConfig(64 * 1024), tmp.toFile(), time,
                logs, SegmentSwap.Hook.NONE);
        appendAll(a, batch(T0, "k", "kept"), batch(T0, "gone", null));
        cleaner.cleanUntilDone(10); // a's tombstone gets its horizon
        // then the worker cleans another log in which "k" has a later offset than in a
        logs.add(b);
        for (int i = 0; i < 20; i++) {
            b.appendAsLeader(batch(T0, "k", "b" + i), 0);
        }
        appendAll(b);
        cleaner.cleanUntilDone(10);
        time.advance(5_000);
        assertThat(cleaner.cleanUntilDone(10)).as("a round for a's expired tombstone").isEqualTo(1);
        assertThat(readAll(a)).extracting(Read::value).containsExactly("kept");
    }

    @Test
    void everyCodecIsFilteredAndRecompressedWithItsOwnCodec() throws IOException {
        PartitionLog log = log(CompactionSupport.compacted(100_000, 1000));
        List<Compression> codecs = List.of(Compression.NONE, Compression.gzip().build(), Compression.snappy().build(),
                Compression.lz4().build(), Compression.zstd().build());
        for (Compression c : codecs) {
            log.appendAsLeader(CompactionSupport.batch(c, List.of(new CompactionSupport.KV("x-" + c.type(), "old", T0, "h1"),
                    new CompactionSupport.KV("y-" + c.type(), "keep", T0 + 1, "h2"))), 0);
        }
        for (Compression c : codecs) {
            log.appendAsLeader(batch(T0 + 2, "x-" + c.type(), "new"), 0);
        }
        appendAll(log);
        cleaner(log, 64 * 1024).cleanUntilDone(10);
        List<Read> records = readAll(log);
        assertThat(records).filteredOn(r -> r.key().startsWith("x-")).extracting(Read::value).containsOnly("new");
        assertThat(records).filteredOn(r -> r.key().startsWith("y-")).hasSize(5)
                .allSatisfy(r -> {
                    assertThat(r.value()).isEqualTo("keep");
                    assertThat(r.header()).isEqualTo("h2");
                    assertThat(r.timestamp()).isEqualTo(T0 + 1);
                });
        List<String> kept = new ArrayList<>();
        log.read(0, 1 << 20, log.logEndOffset(), true).records().batches()
                .forEach(b -> kept.add(b.compressionType().name));
        assertThat(kept.subList(0, 5)).containsExactly("none", "gzip", "snappy", "lz4", "zstd");
    }

    @Test
    void recordsWithoutKeysAreRefusedOnAppendAndDroppedByTheCleaner() throws IOException {
        PartitionLog log = log(CompactionSupport.compacted(100_000, 1000));
        assertThatThrownBy(() -> log.appendAsLeader(MemoryRecords.withRecords(Compression.NONE,
                new SimpleRecord(T0, null, "v".getBytes())), 0))
                .isInstanceOf(InvalidRecordException.class)
                .hasMessageContaining("Compacted topic cannot accept message without key");
        // A follower (or an old delete-policy log switched to compact) may still hold some.
        log.appendAsFollower(MemoryRecords.withRecords(0L, Compression.NONE,
                new SimpleRecord(T0, null, "keyless".getBytes()), new SimpleRecord(T0, "k".getBytes(), "v".getBytes())));
        appendAll(log);
        cleaner(log, 64 * 1024).cleanUntilDone(10);
        assertThat(readAll(log)).extracting(Read::key).containsExactly("k");
    }

    @Test
    void theLastBatchOfAProducerIsKeptEmptySoDeduplicationSurvivesAReload() throws IOException {
        PartitionLog log = log(CompactionSupport.compacted(100_000, 1000));
        log.appendAsLeader(MemoryRecords.withIdempotentRecords(Compression.NONE, 7L, (short) 0, 0,
                new SimpleRecord(T0, "k".getBytes(), "old".getBytes())), 0);
        log.appendAsLeader(batch(T0, "k", "new"), 0);
        appendAll(log);
        cleaner(log, 64 * 1024).cleanUntilDone(10);
        assertThat(readAll(log)).extracting(Read::value).containsExactly("new");
        List<CompactionSupport.ReadBatch> batches = CompactionSupport.readAllBatches(log);
        assertThat(batches.get(0).base()).isEqualTo(0);
        assertThat(batches.get(0).records()).isEmpty();
        // Reload without snapshots: the producer's sequence comes back from the empty batch.
        log.close();
        open.remove(log);
        for (File f : tmp.resolve("compacted-0").toFile().listFiles((d, n) -> n.endsWith(".snapshot"))) {
            Files.delete(f.toPath());
        }
        PartitionLog again = log(CompactionSupport.compacted(100_000, 1000));
        assertThat(again.producerState(7L)).hasValueSatisfying(e -> assertThat(e.lastSeq()).isEqualTo(0));
        LogAppendInfo retry = again.appendAsLeader(MemoryRecords.withIdempotentRecords(Compression.NONE, 7L, (short) 0, 0,
                new SimpleRecord(T0, "k".getBytes(), "old".getBytes())), 0);
        assertThat(retry.duplicate()).isTrue();
    }

    @Test
    void aMarkerWithoutDataIsKeptUntilItsDeleteHorizonThenDropped() throws IOException {
        PartitionLog log = log(CompactionSupport.compacted(100_000, 1000));
        log.appendAsFollower(MemoryRecords.withRecords(0L, Compression.NONE, new SimpleRecord(T0, "k".getBytes(), "a".getBytes())));
        log.appendAsFollower(MemoryRecords.withEndTransactionMarker(1L, T0, 0, 9L, (short) 0,
                new EndTransactionMarker(ControlRecordType.COMMIT, 0)));
        log.appendAsFollower(MemoryRecords.withRecords(2L, Compression.NONE, new SimpleRecord(T0, "k".getBytes(), "b".getBytes())));
        appendAll(log);
        log.removeExpiredProducers(0); // producer 9 forgotten: nothing keeps its marker for its epoch
        LogCleanerManager cleaner = cleaner(log, 64 * 1024);
        cleaner.cleanUntilDone(10);
        // its transaction has no data: the marker stays, stamped with a delete horizon, until then
        List<CompactionSupport.ReadBatch> batches = CompactionSupport.readAllBatches(log);
        assertThat(batches).extracting(CompactionSupport.ReadBatch::base).containsExactly(1L, 2L);
        assertThat(batches.get(0).records()).singleElement()
                .satisfies(r -> assertThat(r.deleteHorizonMs()).hasValue(T0 + 1000));
        time.advance(1000);
        assertThat(cleaner.cleanUntilDone(10)).as("a round for the expired marker").isEqualTo(1);
        assertThat(CompactionSupport.readAllBatches(log)).extracting(CompactionSupport.ReadBatch::base).containsExactly(2L);
    }

    @Test
    void abortedTransactionsWhoseBatchesStayAreIndexedInTheCleanedSegmentsAndAcrossARestart() throws IOException {
        PartitionLog log = log(CompactionSupport.compacted(300, 1000));
        for (int i = 0; i < 6; i++) {
            long pid = 50 + i;
            log.appendAsLeader(MemoryRecords.withTransactionalRecords(Compression.NONE, pid, (short) 0, 0,
                    new SimpleRecord(T0, ("k" + i % 2).getBytes(), ("v" + i).getBytes())), 0);
            log.appendMarkerAsLeader(pid, (short) 0, 0, i % 3 != 0, 0); // i = 0 and 3 abort
        }
        appendAll(log);
        List<dev.varve.storage.index.TransactionIndex.AbortedTxn> before = log.abortedTransactions(0, log.logEndOffset());
        assertThat(before).extracting(dev.varve.storage.index.TransactionIndex.AbortedTxn::producerId).containsExactly(50L, 53L);
        // every segment is rewritten (key k0 and k1 keep only their latest values), each into a new file
        assertThat(cleaner(log, 64 * 1024).cleanUntilDone(10)).isGreaterThan(0);
        assertThat(CompactionSupport.readAllBatches(log)).as("older values compacted away (each producer's last batch stays, empty)")
                .anySatisfy(b -> assertThat(b.records()).isEmpty());
        assertThat(readAll(log)).as("data records (the markers' control records aside)").extracting(Read::value)
                .filteredOn(v -> v.startsWith("v")).containsExactly("v4", "v5");
        // the aborted transactions' records are gone, but their batches stay (empty) as the last batches
        // of producers the partition remembers: their markers and index entries stay with them
        assertThat(log.abortedTransactions(0, log.logEndOffset())).isEqualTo(before);

        long hw = log.highWatermark();
        log.flush();
        log.close();
        open.clear();
        PartitionLog reopened = PartitionLog.open(tmp.resolve("compacted-0").toFile(), TP, log.config(), time, scheduler,
                0, hw, hw, true);
        open.add(reopened);
        assertThat(reopened.abortedTransactions(0, reopened.logEndOffset())).isEqualTo(before);
    }

    private static MemoryRecords txnBatch(long producerId, String key, String value) {
        return MemoryRecords.withTransactionalRecords(Compression.NONE, producerId, (short) 0, 0,
                new SimpleRecord(T0, key.getBytes(), value.getBytes()));
    }

    @Test
    void anAbortedOrStillOpenTransactionNeverCompactsAwayTheCommittedValueItWouldHaveReplaced() throws IOException {
        PartitionLog log = log(CompactionSupport.compacted(100_000, 1000));
        log.appendAsLeader(batch(T0, "a", "a-committed", "b", "b-committed"), 0);
        log.appendAsLeader(txnBatch(70, "a", "a-aborted"), 0);
        log.appendMarkerAsLeader(70, (short) 0, 0, false, 0); // producer 70 aborts
        log.roll();
        log.appendAsLeader(batch(T0, "c", "c-committed"), 0);
        log.roll();
        log.appendAsLeader(txnBatch(71, "b", "b-open"), 0); // producer 71's transaction stays open
        log.roll();
        log.appendAsLeader(batch(T0, "d", "d-committed"), 0);
        log.roll();
        log.updateHighWatermark(log.logEndOffset());
        assertThat(log.lastStableOffset()).as("the open transaction's first offset").isEqualTo(5);

        cleaner(log, 64 * 1024).cleanUntilDone(10);
        // a: the aborted value is no key's latest value, so the committed one stays (and the aborted
        // record goes); b: the open transaction's segment is past the last stable offset and is neither
        // cleaned nor used to clean
        assertThat(readAll(log)).extracting(Read::value)
                .contains("a-committed", "b-committed", "c-committed", "d-committed", "b-open")
                .doesNotContain("a-aborted");
    }

    @Test
    void neverTouchesTheActiveSegmentUncommittedRecordsOrRecordsYoungerThanTheMinLag() throws IOException {
        LogConfig config = CompactionSupport.compacted(100_000, 1000).with(TopicConfig.MIN_COMPACTION_LAG_MS_CONFIG, 10_000L);
        PartitionLog log = log(config);
        log.appendAsLeader(batch(T0, "k", "1"), 0);
        log.appendAsLeader(batch(T0, "k", "2"), 0);
        log.roll();
        log.appendAsLeader(batch(T0 + 20_000, "k", "3"), 0);
        log.roll();
        log.appendAsLeader(batch(T0 + 20_000, "k", "4"), 0); // active
        log.updateHighWatermark(log.logEndOffset());
        time.advance(15_000); // now = T0 + 15s: segment 0 is old enough, segment 2 is not
        LogCleanerManager cleaner = cleaner(log, 64 * 1024);
        cleaner.cleanUntilDone(10);
        assertThat(readAll(log)).extracting(Read::value).containsExactly("2", "3", "4");
        assertThat(cleaner.checkpointedOffset(TP)).contains(2L);

        time.advance(20_000); // now T0 + 35 s: segment 2 (T0 + 20 s) is 15 s old
        cleaner.cleanUntilDone(10);
        assertThat(readAll(log)).extracting(Read::value).containsExactly("3", "4");

        log.roll(); // "4" (offset 3) leaves the active segment; the high watermark stays at 4
        log.appendAsLeader(batch(T0 + 30_000, "k", "5"), 0);
        log.roll();
        time.advance(30_000);
        cleaner.cleanUntilDone(10);
        assertThat(readAll(log)).as("offsets above the high watermark are not cleaned (nor used to clean)")
                .extracting(Read::value).containsExactly("4", "5");
    }

    @Test
    void theDirtyRatioAndTheMaxCompactionLagDecide() throws IOException {
        LogConfig config = CompactionSupport.compacted(100_000, 1000)
                .with(Map.of(TopicConfig.MIN_CLEANABLE_DIRTY_RATIO_CONFIG, 0.99, TopicConfig.MAX_COMPACTION_LAG_MS_CONFIG, 60_000L));
        PartitionLog log = log(config);
        appendAll(log, batch(T0, "a", "1", "b", "1"));
        LogCleanerManager cleaner = cleaner(log, 64 * 1024);
        assertThat(cleaner.cleanUntilDone(10)).as("all dirty: ratio 1.0 > 0.99").isEqualTo(1);
        appendAll(log, batch(T0, "a", "2"));
        assertThat(cleaner.cleanUntilDone(10)).as("ratio below 0.99").isZero();
        time.advance(60_001);
        assertThat(cleaner.cleanUntilDone(10)).as("past max.compaction.lag.ms").isEqualTo(1);
        assertThat(readAll(log)).extracting(Read::value).containsExactly("1", "2");
    }

    @Test
    void aSmallMapCleansInSeveralRounds() throws IOException {
        PartitionLog log = log(CompactionSupport.compacted(400, 1000));
        for (int i = 0; i < 200; i++) {
            log.appendAsLeader(batch(T0, "k" + (i % 60), "v" + i), 0);
        }
        appendAll(log);
        LogCleanerManager cleaner = cleaner(log, 1024); // 42 slots, 37 keys per round
        assertThat(cleaner.cleanUntilDone(100)).isGreaterThan(1);
        List<Read> records = readAll(log);
        assertThat(records).hasSize(60);
        assertThat(records).allSatisfy(r -> assertThat(r.offset()).isGreaterThanOrEqualTo(140));
        CompactionSupport.checkSegmentsDisjoint(log);
    }

    @Test
    void pureCompactIgnoresTimeRetentionButCompactDeleteApplies() throws IOException {
        LogConfig compact = CompactionSupport.compacted(256, 1000).with(TopicConfig.RETENTION_MS_CONFIG, 1000L);
        PartitionLog log = log(compact);
        for (int i = 0; i < 10; i++) {
            log.appendAsLeader(batch(T0, "k" + i, "v"), 0);
        }
        appendAll(log);
        time.advance(10_000);
        assertThat(log.deleteOldSegments()).isZero();
        log.updateConfig(compact.with(TopicConfig.CLEANUP_POLICY_CONFIG, "compact,delete"));
        assertThat(log.config().cleanupPolicy()).isEqualTo("compact,delete");
        assertThat(log.deleteOldSegments()).isGreaterThan(0);
    }

    @Test
    void aRoundStopsWithoutChangesWhenTheLogIsTruncatedUnderIt() throws IOException {
        PartitionLog log = log(CompactionSupport.compacted(300, 1000));
        for (int i = 0; i < 30; i++) {
            log.appendAsLeader(batch(T0, "k" + (i % 3), "v" + i), 0);
        }
        appendAll(log);
        List<Read> before = readAll(log);
        PartitionLog.CleaningView view = log.cleaningView();
        log.truncateTo(20);
        LogCleaner worker = new LogCleaner(CompactionSupport.cleanerConfig(64 * 1024), time, SegmentSwap.Hook.NONE);
        CleanableRange range = CleanableRange.of(view, -1, time.milliseconds());
        LogCleaner.Result result = worker.clean(log, view, range.firstDirty(), range.firstUncleanable(), () -> false);
        assertThat(result.completed()).isFalse();
        assertThat(readAll(log)).isEqualTo(before.stream().filter(r -> r.offset() < 20).toList());
        assertThat(tmp.resolve("compacted-0").toFile().list((d, n) -> n.endsWith(".cleaned") || n.endsWith(".swap"))).isEmpty();
        // The next round starts below the truncation point and works.
        LogCleanerManager cleaner = cleaner(log, 64 * 1024);
        log.roll();
        cleaner.cleanUntilDone(10);
        assertThat(readAll(log)).extracting(Read::value).containsExactlyInAnyOrder("v17", "v18", "v19");
    }

    @Test
    void startUpDeletesCleanedFilesAndCompletesSwaps() throws IOException {
        PartitionLog log = log(CompactionSupport.compacted(300, 1000));
        for (int i = 0; i < 30; i++) {
            log.appendAsLeader(batch(T0, "k" + (i % 3), "v" + i), 0);
        }
        appendAll(log);
        Path dir = tmp.resolve("compacted-0");
        Files.write(dir.resolve("00000000000000000000.log.cleaned"), new byte[]{1, 2, 3});
        Files.write(dir.resolve("00000000000000000099.index.swap"), new byte[0]);
        log.close();
        open.remove(log);
        PartitionLog again = PartitionLog.open(dir.toFile(), TP, CompactionSupport.compacted(300, 1000), time, scheduler,
                0, 0, 30, false);
        open.add(again);
        assertThat(dir.toFile().list((d, n) -> n.endsWith(".cleaned") || n.endsWith(".swap"))).isEmpty();
        assertThat(readAll(again)).hasSize(30);
    }

    @Test
    void theCheckpointSurvivesARestartOfTheLogManager() throws IOException {
        File logDir = tmp.resolve("data").toFile();
        LogConfig config = CompactionSupport.compacted(300, 1000);
        LogManagerConfig managerConfig = LogManagerConfig.defaults(List.of(logDir))
                .withCleaner(CompactionSupport.cleanerConfig(64 * 1024));
        LogManager manager = new LogManager(managerConfig, t -> config, time, scheduler);
        manager.startup();
        PartitionLog log = manager.getOrCreateLog(TP);
        for (int i = 0; i < 30; i++) {
            log.appendAsLeader(batch(T0, "k" + (i % 3), "v" + i), 0);
        }
        log.roll();
        log.updateHighWatermark(log.logEndOffset());
        scheduler.tick(1000); // the cleaner's period (log.cleaner.backoff.ms)
        assertThat(readAll(log)).extracting(Read::value).containsExactly("v27", "v28", "v29");
        manager.close();
        LogManager restarted = new LogManager(managerConfig, t -> config, time, scheduler);
        restarted.startup();
        assertThat(restarted.cleaner()).isPresent();
        assertThat(restarted.cleaner().get().checkpointedOffset(TP)).contains(30L);
        assertThat(readAll(restarted.getLog(TP).orElseThrow())).hasSize(3);
        restarted.deleteLog(TP);
        assertThat(restarted.cleaner().get().checkpointedOffset(TP)).isEmpty();
        restarted.close();
        Optional<LogCleanerManager> none = new LogManager(managerConfig.withCleaner(CleanerConfig.DEFAULT.withEnable(false)),
                t -> config, time, scheduler).cleaner();
        assertThat(none).isEmpty();
    }
}
