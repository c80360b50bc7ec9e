package dev.varve.cli;

import dev.varve.storage.LogConfig;
import dev.varve.storage.LogFileNames;
import dev.varve.storage.PartitionLog;
import dev.varve.storage.Scheduler;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.config.TopicConfig;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.utils.Time;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

import java.io.File;
import java.io.PrintWriter;
import java.io.RandomAccessFile;
import java.io.StringWriter;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

class LogCommandTest {
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

    private record Result(int status, String out) {
    }

    private static Result run(String... args) {
        StringWriter out = new StringWriter();
        CommandLine cmd = new CommandLine(new VarveCommand());
        cmd.setOut(new PrintWriter(out));
        cmd.setErr(new PrintWriter(out));
        int status = cmd.execute(args);
        return new Result(status, out.toString());
    }

    private File writeLog() throws Exception {
        File dir = new File(tmp, "t-0");
        LogConfig config = LogConfig.fromMap(Map.of(TopicConfig.INDEX_INTERVAL_BYTES_CONFIG, 0));
        try (PartitionLog log = PartitionLog.open(dir, new TopicPartition("t", 0), config, Time.SYSTEM, NO_SCHEDULER)) {
            for (int i = 0; i < 3; i++) {
                log.appendAsLeader(MemoryRecords.withRecords(Compression.NONE,
                        new SimpleRecord(1000L + i, ("k" + i).getBytes(), ("value-" + i).getBytes()),
                        new SimpleRecord(1000L + i, null, "x".getBytes())), 7);
            }
        }
        return dir;
    }

    @Test
    void dumpsBatchesRecordsAndIndexes() throws Exception {
        File dir = writeLog();
        Result r = run("log", "dump", "--records", LogFileNames.logFile(dir, 0).getPath());
        assertThat(r.status()).isZero();
        assertThat(r.out()).contains("baseOffset: 0 lastOffset: 1 count: 2", "baseOffset: 4 lastOffset: 5 count: 2",
                "leaderEpoch: 7", "crcValid: true", "| offset: 5 timestamp: 1002 keySize: -1 valueSize: 1",
                "batches: 3 invalid: 0");
        Result index = run("log", "dump", LogFileNames.offsetIndexFile(dir, 0).getPath());
        assertThat(index.out()).contains("offset: 3 position: ", "offset: 5 position: ", "entries: 2");
    }

    @Test
    void reportsACorruptBatchAndFails() throws Exception {
        File dir = writeLog();
        File log = LogFileNames.logFile(dir, 0);
        try (RandomAccessFile raf = new RandomAccessFile(log, "rw")) {
            raf.seek(raf.length() - 2);
            raf.write(0x5a ^ raf.read());
        }
        Result r = run("log", "dump", log.getPath());
        assertThat(r.status()).isEqualTo(1);
        assertThat(r.out()).contains("crcValid: false", "invalid: 1");
    }

    @Test
    void aMissingFileIsAnErrorNotACrash() {
        Result r = run("log", "dump", new File(tmp, "00000000000000000000.log").getPath());
        assertThat(r.status()).isEqualTo(1);
        assertThat(r.out()).contains("no such file");
    }
}
