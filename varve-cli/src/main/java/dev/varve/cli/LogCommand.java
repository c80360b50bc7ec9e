package dev.varve.cli;

import dev.varve.storage.LogFileNames;
import dev.varve.storage.index.OffsetIndex;
import dev.varve.storage.index.OffsetPosition;
import dev.varve.storage.index.TimeIndex;
import dev.varve.storage.index.TimestampOffset;
import org.apache.kafka.common.record.internal.FileLogInputStream.FileChannelRecordBatch;
import org.apache.kafka.common.record.internal.FileRecords;
import org.apache.kafka.common.record.internal.Record;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

import java.io.File;
import java.io.IOException;
import java.io.PrintWriter;
import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.Callable;

/** {@code varve log ...}: look inside partition directories on disk. */
@Command(name = "log", description = "Inspect log segment files.", mixinStandardHelpOptions = true,
        subcommands = {LogCommand.Dump.class, LogVerify.class})
final class LogCommand {

    @Command(name = "dump", mixinStandardHelpOptions = true,
            description = "Print the batches of .log files (and the entries of .index/.timeindex files).")
    static final class Dump implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @Parameters(arity = "1..*", paramLabel = "FILE", description = "Segment files: NNN.log, NNN.index or NNN.timeindex.")
        List<File> files;

        @Option(names = "--records", description = "Also print every record (offset, timestamp, key and value sizes).")
        boolean records;

        @Override
        public Integer call() {
            PrintWriter out = spec.commandLine().getOut();
            PrintWriter err = spec.commandLine().getErr();
            int status = 0;
            for (File file : files) {
                out.println("Dumping " + file);
                try {
                    if (!file.isFile()) {
                        throw new IOException("no such file");
                    }
                    String name = file.getName();
                    if (name.endsWith(LogFileNames.LOG_SUFFIX)) {
                        status |= dumpLog(file, out);
                    } else if (name.endsWith(LogFileNames.TIME_INDEX_SUFFIX)) {
                        dumpTimeIndex(file, baseOffsetOf(file, LogFileNames.TIME_INDEX_SUFFIX), out);
                    } else if (name.endsWith(LogFileNames.INDEX_SUFFIX)) {
                        dumpOffsetIndex(file, baseOffsetOf(file, LogFileNames.INDEX_SUFFIX), out);
                    } else {
                        err.println(file + ": not a .log, .index or .timeindex file");
                        status = 1;
                    }
                } catch (IOException | RuntimeException e) {
                    err.println(file + ": " + e.getMessage());
                    status = 1;
                }
            }
            out.flush();
            return status;
        }

        private static long baseOffsetOf(File file, String suffix) {
            OptionalLong base = LogFileNames.baseOffsetOf(file.getName(), suffix);
            if (base.isEmpty()) {
                throw new IllegalArgumentException("the file name is not a 20-digit base offset");
            }
            return base.getAsLong();
        }

        private int dumpLog(File file, PrintWriter out) throws IOException {
            int invalid = 0;
            try (FileRecords log = FileRecords.open(file, false)) {
                int batches = 0;
                for (FileChannelRecordBatch batch : log.batches()) {
                    boolean valid = batch.isValid();
                    invalid += valid ? 0 : 1;
                    batches++;
                    out.printf("baseOffset: %d lastOffset: %d count: %s position: %d size: %d magic: %d compression: %s"
                                    + " leaderEpoch: %d producerId: %d producerEpoch: %d baseSequence: %d"
                                    + " transactional: %b control: %b timestampType: %s maxTimestamp: %d crcValid: %b%n",
                            batch.baseOffset(), batch.lastOffset(), batch.countOrNull(), batch.position(), batch.sizeInBytes(),
                            batch.magic(), batch.compressionType().name, batch.partitionLeaderEpoch(), batch.producerId(),
                            batch.producerEpoch(), batch.baseSequence(), batch.isTransactional(), batch.isControlBatch(),
                            batch.timestampType(), batch.maxTimestamp(), valid);
                    if (records && valid) {
                        for (Record r : batch) {
                            out.printf("  | offset: %d timestamp: %d keySize: %d valueSize: %d headers: %d%n",
                                    r.offset(), r.timestamp(), r.keySize(), r.valueSize(), r.headers().length);
                        }
                    }
                }
                int covered = 0;
                for (FileChannelRecordBatch batch : log.batches()) {
                    covered = batch.position() + batch.sizeInBytes();
                }
                out.printf("batches: %d invalid: %d bytes: %d trailing bytes not in a whole batch: %d%n",
                        batches, invalid, log.sizeInBytes(), log.sizeInBytes() - covered);
            }
            return invalid == 0 ? 0 : 1;
        }

        private static void dumpOffsetIndex(File file, long base, PrintWriter out) throws IOException {
            try (OffsetIndex index = new OffsetIndex(file, base, (int) Math.max(file.length(), 64))) {
                for (int i = 0; i < index.entries(); i++) {
                    OffsetPosition e = index.entry(i);
                    out.printf("offset: %d position: %d%n", e.offset(), e.position());
                }
                out.printf("entries: %d%n", index.entries());
            }
        }

        private static void dumpTimeIndex(File file, long base, PrintWriter out) throws IOException {
            try (TimeIndex index = new TimeIndex(file, base, (int) Math.max(file.length(), 64))) {
                for (int i = 0; i < index.entries(); i++) {
                    TimestampOffset e = index.entry(i);
                    out.printf("timestamp: %d offset: %d%n", e.timestamp(), e.offset());
                }
                out.printf("entries: %d%n", index.entries());
            }
        }
    }
}
