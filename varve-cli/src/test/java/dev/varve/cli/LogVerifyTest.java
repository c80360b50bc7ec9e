package dev.varve.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.varve.storage.LogConfig;
import dev.varve.storage.LogFileNames;
import dev.varve.storage.PartitionLog;
import dev.varve.storage.Scheduler;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.record.internal.FileLogInputStream.FileChannelRecordBatch;
import org.apache.kafka.common.record.internal.FileRecords;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.utils.Time;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.io.PrintWriter;
import java.io.RandomAccessFile;
import java.io.StringWriter;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code varve log verify} on segment files written by the storage engine, then damaged. */
class LogVerifyTest {
    @TempDir
    File tmp;

    private static final Scheduler NO_SCHEDULER = new Scheduler() {
        @Override
        public void scheduleOnce(String name, Runnable task, long delayMs) {
        }

        @Override
        public void schedulePeriodic(String name, Runnable task, long delayMs, long periodMs) {
        }
    };

    private record Result(int status, String out, String err) {
        JsonNode json() throws Exception {
            return new ObjectMapper().readTree(out);
        }
    }

    private static Result run(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        var cmd = VarveCommand.commandLine();
        cmd.setOut(new PrintWriter(out));
        cmd.setErr(new PrintWriter(err));
        int status = cmd.execute(args);
        return new Result(status, out.toString(), err.toString());
    }

    /** A partition directory of 3 segments (bases 0, 6, 12), each of 3 batches of 2 records, indexed every batch. */
    private File writeLog(String name) throws Exception {
        File dir = new File(tmp, name + "-0");
        LogConfig config = LogConfig.fromMap(Map.of(TopicConfig.INDEX_INTERVAL_BYTES_CONFIG, 0));
        try (PartitionLog log = PartitionLog.open(dir, new TopicPartition(name, 0), config, Time.SYSTEM, NO_SCHEDULER)) {
            for (int s = 0; s < 3; s++) {
                if (s > 0) {
                    log.roll();
                }
                for (int i = 0; i < 3; i++) {
                    log.appendAsLeader(MemoryRecords.withRecords(Compression.NONE,
                            new SimpleRecord(1000L + i, ("k" + i).getBytes(), ("value-" + i).getBytes()),
                            new SimpleRecord(1000L + i, null, "x".getBytes())), 7);
                }
            }
        }
        return dir;
    }

    private static List<FileChannelRecordBatch> batches(File log) throws Exception {
        List<FileChannelRecordBatch> out = new ArrayList<>();
        try (FileRecords records = FileRecords.open(log, false)) {
            records.batches().forEach(out::add);
        }
        return out;
    }

    @Test
    void aCleanLogVerifies() throws Exception {
        File dir = writeLog("clean");
        assertThat(LogVerify.bases(dir)).containsExactly(0L, 6L, 12L);
        Result r = run("log", "verify", dir.getPath());
        assertThat(r.status()).as(r.out() + r.err()).isZero();
        assertThat(r.out()).startsWith(dir.getPath() + ": OK (3 segments, 9 batches, offsets 0..17, ");
        assertThat(r.err()).isEmpty();

        // the parent (a log directory) verifies each partition in it; one segment file verifies that segment
        Result all = run("log", "verify", tmp.getPath(), "-o", "json");
        assertThat(all.status()).isZero();
        assertThat(all.json()).hasSize(1);
        assertThat(all.json().get(0).get("ok").asBoolean()).isTrue();
        assertThat(all.json().get(0).get("segments").asInt()).isEqualTo(3);
        assertThat(all.json().get(0).get("last-offset").asLong()).isEqualTo(17);
        Result one = run("log", "verify", LogFileNames.logFile(dir, 6).getPath());
        assertThat(one.status()).isZero();
        assertThat(one.out()).contains(": OK (1 segment, 3 batches, offsets 6..11, ");
    }

    @Test
    void aFlippedByteIsReportedWithItsPositionAndOffset() throws Exception {
        File dir = writeLog("flipped");
        File log = LogFileNames.logFile(dir, 6);
        FileChannelRecordBatch second = batches(log).get(1);
        long at = second.position() + second.sizeInBytes() - 3; // in the batch's records, under its CRC
        try (RandomAccessFile raf = new RandomAccessFile(log, "rw")) {
            raf.seek(at);
            int b = raf.read();
            raf.seek(at);
            raf.write(b ^ 0x40);
        }
        Result r = run("log", "verify", dir.getPath());
        assertThat(r.status()).isEqualTo(1);
        assertThat(r.out()).contains(dir.getPath() + ": 1 problem (3 segments, 9 batches, offsets 0..17")
                .contains("  PROBLEM 00000000000000000006.log position " + second.position() + " offset 8: batch of offsets 8..9 ("
                        + second.sizeInBytes() + " bytes) is corrupt: ")
                .containsPattern("(?i)crc");
        assertThat(r.err()).isEqualTo("error: 1 problem found in the segment files (listed above)\n");

        JsonNode json = run("log", "verify", "-o", "json", log.getPath()).json();
        JsonNode p = json.get(0).get("problems").get(0);
        assertThat(json.get(0).get("ok").asBoolean()).isFalse();
        assertThat(p.get("position").asLong()).isEqualTo(second.position());
        assertThat(p.get("offset").asLong()).isEqualTo(8);
        assertThat(p.get("file").asText()).isEqualTo(log.getPath());
    }

    @Test
    void aTrailingPartialBatchIsReported() throws Exception {
        File dir = writeLog("torn");
        File log = LogFileNames.logFile(dir, 12);
        long size = log.length();
        FileChannelRecordBatch last = batches(log).get(2);
        try (RandomAccessFile raf = new RandomAccessFile(log, "rw")) {
            raf.setLength(size - 5);
        }
        Result r = run("log", "verify", dir.getPath());
        assertThat(r.status()).isEqualTo(1);
        assertThat(r.out()).contains("PROBLEM 00000000000000000012.log position " + last.position() + ": "
                + (last.sizeInBytes() - 5) + " trailing bytes are not a whole batch");
        // the indexes still point at the torn batch (the first batch of a segment is never indexed: entry 1 is the last batch)
        assertThat(r.out()).contains("00000000000000000012.index position " + last.position() + " offset 17: index entry 1 (offset 17, position " + last.position() + ") does not point at the start of a batch")
                .contains("00000000000000000012.timeindex offset 17: time index entry 1 (timestamp 1002, offset 17) points past the log's last offset 15");
    }

    @Test
    void offsetsGoingBackwardsAcrossSegmentsAndABadIndexAreProblemsAndGapsAreNotes() throws Exception {
        File dir = writeLog("mixed");
        // segment 6 renamed to 3 (it overlaps segment 0, which ends at 5); segment 12 to 30 (its batches start below 30)
        for (long[] move : new long[][] {{6, 3}, {12, 30}}) {
            for (String suffix : List.of(LogFileNames.LOG_SUFFIX, LogFileNames.INDEX_SUFFIX, LogFileNames.TIME_INDEX_SUFFIX)) {
                Files.move(new File(dir, LogFileNames.filenamePrefix(move[0]) + suffix).toPath(),
                        new File(dir, LogFileNames.filenamePrefix(move[1]) + suffix).toPath());
            }
        }
        Result moved = run("log", "verify", dir.getPath());
        assertThat(moved.status()).isEqualTo(1);
        assertThat(moved.out()).contains("00000000000000000003.log offset 3: the segment starts at offset 3 but"
                        + " 00000000000000000000.log already holds offsets up to 5")
                .contains("00000000000000000030.log position 0 offset 12: first batch starts below the segment's base offset 30");

        // an index entry pointing into the middle of a batch
        File dir2 = writeLog("index");
        File index = LogFileNames.offsetIndexFile(dir2, 0);
        byte[] bytes = Files.readAllBytes(index.toPath());
        ByteBuffer.wrap(bytes).putInt(4, ByteBuffer.wrap(bytes).getInt(4) + 1);
        Files.write(index.toPath(), bytes);
        Result bad = run("log", "verify", dir2.getPath());
        assertThat(bad.status()).isEqualTo(1);
        assertThat(bad.out()).containsPattern("00000000000000000000\\.index position \\d+ offset 3: index entry 0 \\(offset 3, position \\d+\\)"
                + " does not point at the start of a batch");

        // a gap between segments (segment 6 gone): a note, not a problem
        File dir3 = writeLog("gap");
        for (String suffix : List.of(LogFileNames.LOG_SUFFIX, LogFileNames.INDEX_SUFFIX, LogFileNames.TIME_INDEX_SUFFIX)) {
            Files.delete(new File(dir3, LogFileNames.filenamePrefix(6) + suffix).toPath());
        }
        Result note = run("log", "verify", dir3.getPath());
        assertThat(note.status()).as(note.out()).isZero();
        assertThat(note.out()).contains(": OK (2 segments, 6 batches, offsets 0..17")
                .contains("note    00000000000000000012.log position 0 offset 12: offsets 6..11 are in no segment");
    }

    @Test
    void missingAndForeignPathsAreProblems() {
        Result r = run("log", "verify", new File(tmp, "nope").getPath(), tmp.getPath());
        assertThat(r.status()).isEqualTo(1);
        assertThat(r.out()).contains("nope: no such file or directory")
                .contains("no segment files (NNNNNNNNNNNNNNNNNNNN.log) in this directory");
    }
}
