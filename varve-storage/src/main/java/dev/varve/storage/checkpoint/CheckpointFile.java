package dev.varve.storage.checkpoint;

import java.io.BufferedWriter;
import java.io.File;
import dev.varve.storage.DiskFaults;

import java.io.FileOutputStream;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

/**
 * A small text file of entries in Kafka's checkpoint layout, replaced atomically.
 *
 * <pre>
 *   0            &lt;- format version
 *   2            &lt;- number of entries
 *   entry line
 *   entry line
 * </pre>
 *
 * {@link #write} writes a temporary file, fsyncs it, renames it over the old one and fsyncs the
 * directory, so a crash leaves either the old or the new contents. {@link #read} refuses anything
 * malformed with {@link CorruptCheckpointException}; callers decide what a lost checkpoint costs.
 */
public final class CheckpointFile<T> {
    /** Turns an entry into one line of text and back. */
    public interface Formatter<T> {
        String toLine(T entry);

        /** Parses one line; throws IllegalArgumentException (or any RuntimeException) when malformed. */
        T fromLine(String line);
    }

    public static final int VERSION = 0;

    private final Path path;
    private final Formatter<T> formatter;

    public CheckpointFile(File file, Formatter<T> formatter) {
        this.path = file.toPath();
        this.formatter = formatter;
    }

    public File file() {
        return path.toFile();
    }

    /** Replaces the file atomically and durably (fsync of the file and its directory). */
    public synchronized void write(Collection<T> entries) throws IOException {
        write(entries, true);
    }

    /**
     * Replaces the file atomically; with {@code sync} false the new contents reach the disk when the
     * OS writes them back or at the next {@link #fsync()}. After a power failure the file then holds
     * the old contents, the new ones, or nothing readable (which {@link #read} reports as corrupt).
     */
    public synchronized void write(Collection<T> entries, boolean sync) throws IOException {
        Path tmp = path.resolveSibling(path.getFileName() + ".tmp");
        DiskFaults.check(DiskFaults.Op.CREATE, tmp);
        try (FileOutputStream out = new FileOutputStream(tmp.toFile());
             BufferedWriter writer = new BufferedWriter(new OutputStreamWriter(out, StandardCharsets.UTF_8))) {
            writer.write(Integer.toString(VERSION));
            writer.newLine();
            writer.write(Integer.toString(entries.size()));
            writer.newLine();
            for (T entry : entries) {
                writer.write(formatter.toLine(entry));
                writer.newLine();
            }
            writer.flush();
            if (sync) {
                DiskFaults.check(DiskFaults.Op.FSYNC, tmp);
                out.getFD().sync();
            }
        }
        DiskFaults.check(DiskFaults.Op.RENAME, path);
        try {
            Files.move(tmp, path, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (AtomicMoveNotSupportedException e) {
            Files.move(tmp, path, StandardCopyOption.REPLACE_EXISTING);
        }
        if (sync) {
            fsyncDirectory(path.getParent());
        }
    }

    /** Makes the last {@link #write(Collection, boolean)} durable. */
    public synchronized void fsync() throws IOException {
        try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ)) {
            DiskFaults.check(DiskFaults.Op.FSYNC, path);
            channel.force(true);
        } catch (NoSuchFileException e) {
            return;
        }
        fsyncDirectory(path.getParent());
    }

    /** The entries, or an empty list when the file does not exist. */
    public synchronized List<T> read() throws IOException {
        List<String> lines;
        try {
            lines = Files.readAllLines(path, StandardCharsets.UTF_8);
        } catch (NoSuchFileException e) {
            return List.of();
        } catch (java.nio.charset.MalformedInputException e) {
            throw new CorruptCheckpointException(path + " is not text");
        }
        if (lines.size() < 2) {
            throw new CorruptCheckpointException(path + " has no header");
        }
        int version = parseInt(lines.get(0), "version");
        if (version != VERSION) {
            throw new CorruptCheckpointException(path + " has unknown version " + version);
        }
        int count = parseInt(lines.get(1), "entry count");
        if (count < 0 || count != lines.size() - 2) {
            throw new CorruptCheckpointException(path + " says " + count + " entries but holds " + (lines.size() - 2));
        }
        List<T> entries = new ArrayList<>(count);
        for (int i = 2; i < lines.size(); i++) {
            try {
                entries.add(formatter.fromLine(lines.get(i).trim()));
            } catch (RuntimeException e) {
                throw new CorruptCheckpointException(path + " line " + (i + 1) + " is malformed: " + lines.get(i));
            }
        }
        return entries;
    }

    private int parseInt(String s, String what) throws CorruptCheckpointException {
        try {
            return Integer.parseInt(s.trim());
        } catch (NumberFormatException e) {
            throw new CorruptCheckpointException(path + " has a malformed " + what + ": " + s);
        }
    }

    /** Makes a rename or file creation in {@code dir} durable. */
    public static void fsyncDirectory(Path dir) throws IOException {
        if (dir == null) {
            return;
        }
        DiskFaults.check(DiskFaults.Op.DIRECTORY_FSYNC, dir);
        try (FileChannel channel = FileChannel.open(dir, StandardOpenOption.READ)) {
            channel.force(true);
        } catch (IOException e) {
            // Some file systems cannot open directories; the rename is still atomic there.
            if (Files.isDirectory(dir) && System.getProperty("os.name", "").toLowerCase().contains("win")) {
                return;
            }
            throw e;
        }
    }
}
