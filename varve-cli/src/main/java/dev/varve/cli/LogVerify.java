package dev.varve.cli;

import dev.varve.cli.client.Output;
import dev.varve.storage.LogFileNames;
import org.apache.kafka.common.record.internal.FileLogInputStream.FileChannelRecordBatch;
import org.apache.kafka.common.record.internal.FileRecords;
import picocli.CommandLine.Command;
import picocli.CommandLine.ITypeConverter;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

import java.io.File;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.Callable;

/**
 * {@code varve log verify}: checks segment files offline (the broker need not run, and nothing is
 * written): every batch's CRC, offsets increasing within and across the segments of a partition
 * directory, index entries pointing at batches inside the log, no trailing partial batch. Gaps between
 * offsets are reported as notes (compaction leaves them), not problems.
 */
@Command(name = "verify", mixinStandardHelpOptions = true,
        description = {"Check segment files offline: batch CRCs, offsets increasing and contiguous across a partition's segments,",
                ".index/.timeindex entries pointing into the log, trailing partial batches. Exit 1 on any problem.",
                "A DIR is a partition directory (all its segments), or a log directory (each partition directory in it)."})
final class LogVerify implements Callable<Integer> {
    @Spec
    CommandSpec spec;

    @Parameters(arity = "1..*", paramLabel = "DIR|FILE", description = "Partition or log directories, or segment files (.log, .index, .timeindex).")
    List<File> paths;

    @Option(names = {"-o", "--output"}, paramLabel = "FORMAT", converter = OutputConverter.class, defaultValue = "text",
            description = "text (default), json or yaml.")
    Output output = Output.TEXT;

    static final class OutputConverter implements ITypeConverter<Output> {
        @Override
        public Output convert(String value) {
            return Output.parse(value);
        }
    }

    /** What was found in one directory's segments. */
    static final class Report {
        String path;
        int segments;
        long batches;
        long bytes;
        long firstOffset = -1;
        long lastOffset = -1;
        final List<Map<String, Object>> problems = new ArrayList<>();
        final List<Map<String, Object>> notes = new ArrayList<>();

        Report(String path) {
            this.path = path;
        }

        void problem(File file, Long position, Long offset, String what) {
            problems.add(entry(file, position, offset, what));
        }

        void note(File file, Long position, Long offset, String what) {
            notes.add(entry(file, position, offset, what));
        }

        private static Map<String, Object> entry(File file, Long position, Long offset, String what) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("file", file.getPath());
            m.put("position", position);
            m.put("offset", offset);
            m.put("problem", what);
            return m;
        }

        Map<String, Object> data() {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("path", path);
            m.put("ok", problems.isEmpty());
            m.put("segments", segments);
            m.put("batches", batches);
            m.put("bytes", bytes);
            m.put("first-offset", firstOffset < 0 ? null : firstOffset);
            m.put("last-offset", lastOffset < 0 ? null : lastOffset);
            m.put("problems", problems);
            m.put("notes", notes);
            return m;
        }
    }

    @Override
    public Integer call() {
        List<Report> reports = new ArrayList<>();
        for (File path : paths) {
            if (path.isDirectory()) {
                TreeSet<Long> bases = bases(path);
                File[] children = path.listFiles(File::isDirectory);
                if (bases.isEmpty() && children != null && children.length > 0) {
                    java.util.Arrays.sort(children);
                    boolean any = false;
                    for (File child : children) {
                        TreeSet<Long> b = bases(child);
                        if (!b.isEmpty()) {
                            reports.add(verifyDir(child, b, true));
                            any = true;
                        }
                    }
                    if (any) {
                        continue;
                    }
                }
                Report r = verifyDir(path, bases, true);
                if (bases.isEmpty()) {
                    r.problem(path, null, null, "no segment files (NNNNNNNNNNNNNNNNNNNN.log) in this directory");
                }
                reports.add(r);
            } else if (!path.exists()) {
                Report r = new Report(path.getPath());
                r.problem(path, null, null, "no such file or directory");
                reports.add(r);
            } else {
                String name = path.getName();
                OptionalLong base = OptionalLong.empty();
                for (String suffix : List.of(LogFileNames.LOG_SUFFIX, LogFileNames.INDEX_SUFFIX, LogFileNames.TIME_INDEX_SUFFIX)) {
                    if (name.endsWith(suffix)) {
                        base = LogFileNames.baseOffsetOf(name, suffix);
                    }
                }
                if (base.isEmpty()) {
                    Report r = new Report(path.getPath());
                    r.problem(path, null, null, "not a segment file (NNNNNNNNNNNNNNNNNNNN.log, .index or .timeindex)");
                    reports.add(r);
                } else {
                    File dir = path.getAbsoluteFile().getParentFile();
                    Report r = verifyDir(dir, new TreeSet<>(List.of(base.getAsLong())), false);
                    r.path = path.getPath();
                    reports.add(r);
                }
            }
        }
        PrintWriter out = spec.commandLine().getOut();
        List<Map<String, Object>> data = new ArrayList<>();
        reports.forEach(r -> data.add(r.data()));
        int problems = reports.stream().mapToInt(r -> r.problems.size()).sum();
        output.emit(out, data, o -> {
            for (Report r : reports) {
                String range = r.firstOffset < 0 ? "no batches" : "offsets " + r.firstOffset + ".." + r.lastOffset;
                o.printf("%s: %s (%d segment%s, %d batches, %s, %d bytes)%n", r.path,
                        r.problems.isEmpty() ? "OK" : r.problems.size() + " problem" + (r.problems.size() == 1 ? "" : "s"),
                        r.segments, r.segments == 1 ? "" : "s", r.batches, range, r.bytes);
                for (Map<String, Object> p : r.problems) {
                    o.println("  PROBLEM " + where(p) + p.get("problem"));
                }
                for (Map<String, Object> n : r.notes) {
                    o.println("  note    " + where(n) + n.get("problem"));
                }
            }
        });
        if (problems > 0) {
            spec.commandLine().getErr().println("error: " + problems + " problem" + (problems == 1 ? "" : "s")
                    + " found in the segment files (listed above)");
            spec.commandLine().getErr().flush();
        }
        return problems == 0 ? 0 : 1;
    }

    private static String where(Map<String, Object> p) {
        StringBuilder sb = new StringBuilder(new File((String) p.get("file")).getName());
        if (p.get("position") != null) {
            sb.append(" position ").append(p.get("position"));
        }
        if (p.get("offset") != null) {
            sb.append(" offset ").append(p.get("offset"));
        }
        return sb.append(": ").toString();
    }

    static TreeSet<Long> bases(File dir) {
        TreeSet<Long> out = new TreeSet<>();
        String[] names = dir.list();
        if (names == null) {
            return out;
        }
        for (String n : names) {
            for (String suffix : List.of(LogFileNames.LOG_SUFFIX, LogFileNames.INDEX_SUFFIX, LogFileNames.TIME_INDEX_SUFFIX)) {
                if (n.endsWith(suffix)) {
                    LogFileNames.baseOffsetOf(n, suffix).ifPresent(out::add);
                }
            }
        }
        return out;
    }

    /** The batches of one segment, by position. */
    record Batch(long position, long base, long last, int size, long maxTimestamp) {
    }

    private static Report verifyDir(File dir, TreeSet<Long> bases, boolean acrossSegments) {
        Report report = new Report(dir.getPath());
        long previousLast = -1;
        File previousFile = null;
        for (long base : bases) {
            File log = LogFileNames.logFile(dir, base);
            TreeMap<Long, Batch> batches = new TreeMap<>();
            if (!log.isFile()) {
                report.problem(log, null, null, "missing: the segment's index files are here but its .log is not");
            } else {
                report.segments++;
                report.bytes += log.length();
                verifyLog(log, base, batches, report);
                if (!batches.isEmpty()) {
                    Batch first = batches.firstEntry().getValue();
                    Batch last = batches.lastEntry().getValue();
                    if (acrossSegments && previousLast >= 0) {
                        if (base <= previousLast) {
                            report.problem(log, null, base, "the segment starts at offset " + base + " but "
                                    + previousFile.getName() + " already holds offsets up to " + previousLast);
                        } else if (first.base > previousLast + 1) {
                            report.note(log, first.position, first.base, "offsets " + (previousLast + 1) + ".." + (first.base - 1)
                                    + " are in no segment (normal after compaction or deleted records)");
                        }
                    }
                    if (report.firstOffset < 0) {
                        report.firstOffset = first.base;
                    }
                    report.lastOffset = Math.max(report.lastOffset, last.last);
                    previousLast = last.last;
                    previousFile = log;
                }
            }
            File index = LogFileNames.offsetIndexFile(dir, base);
            if (index.isFile()) {
                verifyOffsetIndex(index, base, log.length(), batches, report);
            }
            File timeIndex = LogFileNames.timeIndexFile(dir, base);
            if (timeIndex.isFile()) {
                verifyTimeIndex(timeIndex, base, batches, report);
            }
        }
        return report;
    }

    private static void verifyLog(File file, long base, TreeMap<Long, Batch> batches, Report report) {
        long previousLast = -1;
        long covered = 0;
        try (FileRecords log = FileRecords.open(file, false)) {
            try {
                for (FileChannelRecordBatch b : log.batches()) {
                    long pos = b.position();
                    covered = pos + b.sizeInBytes();
                    report.batches++;
                    if (!b.isValid()) {
                        String why;
                        try {
                            b.ensureValid();
                            why = "invalid batch";
                        } catch (RuntimeException e) {
                            why = e.getMessage();
                        }
                        report.problem(file, pos, b.baseOffset(), "batch of offsets " + b.baseOffset() + ".." + b.lastOffset()
                                + " (" + b.sizeInBytes() + " bytes) is corrupt: " + why);
                    }
                    if (b.lastOffset() < b.baseOffset()) {
                        report.problem(file, pos, b.baseOffset(), "batch's last offset " + b.lastOffset() + " is below its base offset");
                    }
                    if (previousLast < 0 && b.baseOffset() < base) {
                        report.problem(file, pos, b.baseOffset(), "first batch starts below the segment's base offset " + base);
                    }
                    if (previousLast >= 0 && b.baseOffset() <= previousLast) {
                        report.problem(file, pos, b.baseOffset(), "offsets go backwards: the batch starts at " + b.baseOffset()
                                + " after a batch ending at " + previousLast);
                    } else if (previousLast >= 0 && b.baseOffset() > previousLast + 1) {
                        report.note(file, pos, b.baseOffset(), "offsets " + (previousLast + 1) + ".." + (b.baseOffset() - 1)
                                + " are missing between batches (normal after compaction)");
                    }
                    previousLast = Math.max(previousLast, b.lastOffset());
                    batches.put(pos, new Batch(pos, b.baseOffset(), b.lastOffset(), b.sizeInBytes(), b.maxTimestamp()));
                }
            } catch (RuntimeException e) {
                // a length field too small to be a batch: nothing after it can be read
                report.problem(file, covered, null, "unreadable batch header: " + e.getMessage()
                        + " (the rest of the file, " + (log.sizeInBytes() - covered) + " bytes, cannot be checked)");
                return;
            }
            long trailing = log.sizeInBytes() - covered;
            if (trailing > 0) {
                report.problem(file, covered, null, trailing + " trailing bytes are not a whole batch (a write cut short, or a"
                        + " corrupt batch length)");
            }
        } catch (IOException e) {
            report.problem(file, null, null, "cannot read: " + e.getMessage());
        }
    }

    /** The file's entries of {@code size} bytes, without the zeroed slots preallocated after them. */
    private static ByteBuffer entries(File file, int size, Report report) throws IOException {
        byte[] bytes = Files.readAllBytes(file.toPath());
        if (bytes.length % size != 0) {
            report.problem(file, null, null, "size " + bytes.length + " is not a whole number of " + size + "-byte entries");
        }
        int n = bytes.length / size;
        while (n > 0 && allZero(bytes, (n - 1) * size, size)) {
            n--;
        }
        return ByteBuffer.wrap(bytes, 0, n * size).slice();
    }

    private static boolean allZero(byte[] b, int from, int len) {
        for (int i = from; i < from + len; i++) {
            if (b[i] != 0) {
                return false;
            }
        }
        return true;
    }

    private static void verifyOffsetIndex(File file, long base, long logSize, TreeMap<Long, Batch> batches, Report report) {
        try {
            ByteBuffer buf = entries(file, 8, report);
            long prevOffset = -1;
            long prevPosition = -1;
            for (int i = 0; buf.remaining() >= 8; i++) {
                long offset = base + buf.getInt();
                long position = buf.getInt();
                String entry = "index entry " + i + " (offset " + offset + ", position " + position + ")";
                if (offset <= prevOffset || position <= prevPosition) {
                    report.problem(file, position, offset, entry + " does not come after the previous entry (offset "
                            + prevOffset + ", position " + prevPosition + ")");
                }
                prevOffset = offset;
                prevPosition = position;
                if (position < 0 || position >= logSize) {
                    report.problem(file, position, offset, entry + " points outside the log (" + logSize + " bytes)");
                    continue;
                }
                Batch b = batches.get(position);
                if (b == null) {
                    report.problem(file, position, offset, entry + " does not point at the start of a batch");
                } else if (offset < b.base || offset > b.last) {
                    report.problem(file, position, offset, entry + " points at the batch of offsets " + b.base + ".." + b.last
                            + ", which does not hold it");
                }
            }
        } catch (IOException e) {
            report.problem(file, null, null, "cannot read: " + e.getMessage());
        }
    }

    private static void verifyTimeIndex(File file, long base, TreeMap<Long, Batch> batches, Report report) {
        try {
            ByteBuffer buf = entries(file, 12, report);
            long last = batches.isEmpty() ? -1 : batches.lastEntry().getValue().last;
            long prevTimestamp = Long.MIN_VALUE;
            long prevOffset = -1;
            for (int i = 0; buf.remaining() >= 12; i++) {
                long timestamp = buf.getLong();
                long offset = base + buf.getInt();
                String entry = "time index entry " + i + " (timestamp " + timestamp + ", offset " + offset + ")";
                if (timestamp < prevTimestamp || offset < prevOffset) {
                    report.problem(file, null, offset, entry + " goes backwards from the previous one");
                }
                prevTimestamp = timestamp;
                prevOffset = offset;
                if (offset > last) {
                    report.problem(file, null, offset, entry + " points past the log's last offset " + (last < 0 ? "(it has none)" : last));
                }
            }
        } catch (IOException e) {
            report.problem(file, null, null, "cannot read: " + e.getMessage());
        }
    }
}
