package dev.varve.tests.chaos;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.stream.Stream;

/**
 * Makes a stopped node lose what the operating system had not yet written to disk, as a power failure
 * does: in every partition directory of a topic, the log is cut at a random byte between the
 * position of the node's checkpointed recovery point (below it everything was fsynced) and the log's
 * end. The segment holding the cut keeps the bytes before it (a cut inside a batch leaves a torn
 * batch); every later segment loses all its bytes but its file stays, as a file created but never
 * flushed does. Index files are left as they were, now describing bytes that are gone.
 *
 * <p>The checkpointed recovery point is at or below the real fsynced position, so this can take
 * more than a real power failure would: a stronger fault, never a weaker one.
 */
final class TailCutter {
    private static final int BATCH_HEADER_BYTES = 61;

    private TailCutter() {
    }

    /** Cuts the tails of {@code topic}'s partitions under {@code dataDir}; returns one line per cut. */
    static List<String> cut(Path dataDir, String topic, Random random) throws IOException {
        Map<Integer, Long> recoveryPoints = recoveryPoints(dataDir.resolve("recovery-point-offset-checkpoint"), topic);
        List<String> cuts = new ArrayList<>();
        List<Path> partitionDirs;
        try (Stream<Path> dirs = Files.list(dataDir)) {
            partitionDirs = dirs.filter(d -> Files.isDirectory(d) && d.getFileName().toString().matches(java.util.regex.Pattern.quote(topic) + "-\\d+"))
                    .sorted().toList();
        }
        for (Path dir : partitionDirs) {
            int partition = Integer.parseInt(dir.getFileName().toString().substring(topic.length() + 1));
            long recoveryPoint = recoveryPoints.getOrDefault(partition, 0L);
            String cut = cutPartition(dir, recoveryPoint, random);
            if (cut != null) {
                cuts.add(dir.getFileName() + ": " + cut);
            }
        }
        return cuts;
    }

    private static String cutPartition(Path dir, long recoveryPoint, Random random) throws IOException {
        TreeMap<Long, Path> segments = new TreeMap<>();
        try (Stream<Path> files = Files.list(dir)) {
            files.filter(f -> f.getFileName().toString().endsWith(".log")).forEach(f -> {
                String name = f.getFileName().toString();
                segments.put(Long.parseLong(name.substring(0, name.length() - 4)), f);
            });
        }
        Map.Entry<Long, Path> first = segments.floorEntry(recoveryPoint);
        if (first == null) {
            first = segments.firstEntry();
        }
        if (first == null) {
            return null;
        }
        // the unflushed bytes, in log order: from the recovery point's batch in its segment to the end
        List<Path> unflushed = new ArrayList<>(segments.tailMap(first.getKey(), true).values());
        long[] from = new long[unflushed.size()];
        long[] size = new long[unflushed.size()];
        long total = 0;
        for (int i = 0; i < unflushed.size(); i++) {
            size[i] = Files.size(unflushed.get(i));
            from[i] = i == 0 ? positionOf(unflushed.get(0), recoveryPoint) : 0;
            total += size[i] - from[i];
        }
        if (total == 0) {
            return null;
        }
        long kept = (long) (random.nextDouble() * total);
        long keep = kept;
        String what = null;
        for (int i = 0; i < unflushed.size(); i++) {
            long available = size[i] - from[i];
            if (keep >= available) {
                keep -= available;
                continue;
            }
            long cutAt = from[i] + keep;
            truncate(unflushed.get(i), cutAt);
            if (what == null) {
                what = String.format("cut %s at byte %d of %d (recovery point %d), %d bytes lost in all",
                        unflushed.get(i).getFileName(), cutAt, size[i], recoveryPoint, total - kept);
            }
            keep = 0;
        }
        return what;
    }

    /** The byte position of the batch holding {@code offset} (or of the first batch after it), else the file's end. */
    private static long positionOf(Path segment, long offset) throws IOException {
        try (FileChannel ch = FileChannel.open(segment, StandardOpenOption.READ)) {
            long size = ch.size();
            long position = 0;
            ByteBuffer header = ByteBuffer.allocate(BATCH_HEADER_BYTES);
            while (position + BATCH_HEADER_BYTES <= size) {
                header.clear();
                ch.read(header, position);
                long baseOffset = header.getLong(0);
                int length = header.getInt(8);
                int lastOffsetDelta = header.getInt(23);
                if (baseOffset + lastOffsetDelta >= offset || length <= 0) {
                    return position;
                }
                position += 12L + length;
            }
            return Math.min(position, size);
        }
    }

    private static void truncate(Path file, long size) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.WRITE)) {
            ch.truncate(size);
        }
    }

    /** Kafka's offset checkpoint format: a version line, a count line, then "topic partition offset" lines. */
    private static Map<Integer, Long> recoveryPoints(Path checkpoint, String topic) throws IOException {
        Map<Integer, Long> points = new HashMap<>();
        if (!Files.exists(checkpoint)) {
            return points;
        }
        List<String> lines = Files.readAllLines(checkpoint);
        for (int i = 2; i < lines.size(); i++) {
            String[] parts = lines.get(i).trim().split(" ");
            if (parts.length == 3 && parts[0].equals(topic)) {
                points.put(Integer.parseInt(parts[1]), Long.parseLong(parts[2]));
            }
        }
        return points;
    }
}
