package dev.varve.broker.cluster;

import dev.varve.broker.cluster.ReplicaFetcherManager.FollowerPartition;
import dev.varve.storage.ExecutorScheduler;
import dev.varve.storage.LogConfig;
import dev.varve.storage.LogSlice;
import dev.varve.storage.PartitionLog;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.record.internal.FileLogInputStream.FileChannelRecordBatch;
import org.apache.kafka.common.record.internal.FileRecords;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.utils.Time;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A single node cannot spread corruption: a leader whose segment rots on disk while it runs serves
 * the damaged batch, and the follower refuses it (CRC check before any append), keeps everything
 * before it, does not crash or drop the partition, and retries; once the leader serves sound bytes
 * again (repaired, or another leader) the follower catches up byte for byte.
 */
class FollowerCorruptionTest {
    private static final TopicPartition TP = new TopicPartition("t", 0);
    private static final Uuid TOPIC_ID = Uuid.fromString("Zp3sUtMIQW6tNjXLbnH4BA");
    private static final LogConfig LOG_CONFIG = LogConfig.fromMap(Map.of(TopicConfig.SEGMENT_BYTES_CONFIG, 2048));
    private static final ReplicaFetcherConfig FETCHER_CONFIG = new ReplicaFetcherConfig(1_048_576, 10_485_760, 50, 1, 100, 5_000, 1);

    @TempDir
    Path tmp;
    private final ExecutorScheduler scheduler = new ExecutorScheduler(1, "test-scheduler");
    private final ReplicaFetcherManager manager = new ReplicaFetcherManager(2, () -> 7L, FETCHER_CONFIG, Time.SYSTEM);
    private final List<PartitionLog> logs = new ArrayList<>();
    private ReplicaFetcherTest.StubLeader leader;

    @AfterEach
    void tearDown() throws Exception {
        manager.close();
        if (leader != null) {
            leader.stop();
        }
        for (PartitionLog log : logs) {
            log.close();
        }
        scheduler.close();
    }

    private PartitionLog log(String name) throws IOException {
        PartitionLog log = PartitionLog.open(tmp.resolve(name).resolve(TP.toString()).toFile(), TP, LOG_CONFIG, Time.SYSTEM, scheduler);
        logs.add(log);
        return log;
    }

    @Test
    void aFollowerRefusesABatchThatFailsItsCrcAndResumesOnceTheLeaderServesSoundBytes() throws Exception {
        PartitionLog leaderLog = log("leader");
        for (int i = 0; i < 40; i++) {
            SimpleRecord[] rs = new SimpleRecord[3];
            for (int r = 0; r < 3; r++) {
                rs[r] = new SimpleRecord(1_700_000_000_000L + i, ("k" + r).getBytes(), ("v" + i + "-" + r).getBytes());
            }
            leaderLog.appendAsLeader(MemoryRecords.withRecords(Compression.NONE, rs), 0);
        }
        leaderLog.updateHighWatermark(leaderLog.logEndOffset());
        // Rot one byte of a batch in the middle of the leader's second segment, under the running leader.
        List<Long> bases = leaderLog.segmentBaseOffsets();
        assertThat(bases.size()).isGreaterThan(2);
        File segment = new File(leaderLog.dir(), String.format("%020d.log", bases.get(1)));
        long badOffset;
        long badPosition;
        try (FileRecords records = FileRecords.open(segment)) {
            List<FileChannelRecordBatch> batches = new ArrayList<>();
            records.batches().forEach(batches::add);
            FileChannelRecordBatch bad = batches.get(batches.size() / 2);
            badOffset = bad.baseOffset();
            badPosition = bad.position() + bad.sizeInBytes() - 2;
        }
        flip(segment, badPosition);

        leader = new ReplicaFetcherTest.StubLeader(1, Map.of(0, leaderLog), 0, tmp.resolve("broker-1").toFile());
        leader.startServer();
        PartitionLog follower = log("follower");
        manager.addPartitions(leader.endpoint(), List.of(new FollowerPartition(TP, TOPIC_ID, 0, follower)));

        // Everything before the damaged batch arrives; the damaged batch never does.
        await().atMost(10, TimeUnit.SECONDS).until(() -> follower.logEndOffset() == badOffset);
        int fetchesBefore = leader.fetches.size();
        await().atMost(10, TimeUnit.SECONDS).until(() -> leader.fetches.size() >= fetchesBefore + 3);
        assertThat(follower.logEndOffset()).isEqualTo(badOffset);
        assertThat(manager.partitions()).containsExactly(TP); // still fetching: it backs off and retries
        assertThat(leader.fetches).allMatch(f -> f.fetchOffset() <= badOffset);
        for (RecordBatch b : allBatches(follower)) {
            assertThat(b.isValid()).isTrue();
        }

        flip(segment, badPosition); // the leader serves sound bytes again
        await().atMost(10, TimeUnit.SECONDS).until(() -> follower.logEndOffset() == leaderLog.logEndOffset());
        assertThat(bytes(follower)).isEqualTo(bytes(leaderLog));
    }

    private static void flip(File file, long position) throws IOException {
        try (RandomAccessFile raf = new RandomAccessFile(file, "rw")) {
            raf.seek(position);
            int b = raf.read();
            raf.seek(position);
            raf.write(b ^ 0x24);
        }
    }

    private static List<RecordBatch> allBatches(PartitionLog log) {
        List<RecordBatch> out = new ArrayList<>();
        long offset = log.logStartOffset();
        while (offset < log.logEndOffset()) {
            LogSlice slice = log.read(offset, 1 << 20, log.logEndOffset(), true);
            for (RecordBatch b : slice.records().batches()) {
                out.add(b);
                offset = b.nextOffset();
            }
        }
        return out;
    }

    private static List<ByteBuffer> bytes(PartitionLog log) {
        List<ByteBuffer> out = new ArrayList<>();
        for (RecordBatch b : allBatches(log)) {
            ByteBuffer buffer = ByteBuffer.allocate(b.sizeInBytes());
            b.writeTo(buffer);
            out.add(buffer.flip());
        }
        return out;
    }
}
