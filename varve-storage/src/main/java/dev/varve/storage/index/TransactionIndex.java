package dev.varve.storage.index;

import dev.varve.storage.DiskFaults;

import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;

/**
 * The aborted-transaction index of one segment, {@code <base offset>.txnindex}: one entry for each
 * transaction whose ABORT marker is in the segment, in marker order. Kafka's format byte for byte,
 * so Kafka's {@code DumpLogSegments} and {@code TransactionIndex} read Varve's files:
 *
 * <pre>
 *   entry (34 bytes): version int16 (0) | producerId int64 | firstOffset int64 | lastOffset int64
 *                     | lastStableOffset int64
 * </pre>
 *
 * {@code firstOffset} is the transaction's first data offset, {@code lastOffset} its marker's, and
 * {@code lastStableOffset} the partition's last stable offset once the abort completed: a
 * read_committed fetch ending below it needs no entry of a later segment.
 *
 * <p>Most segments never see an aborted transaction: the file is created by the first entry, and no
 * descriptor is held between operations (aborts and read_committed fetches that span one are rare
 * next to appends), so the index costs nothing per partition at rest. A torn last entry (a crash
 * mid-write) is ignored by reads; the log rebuilds the index of every segment it recovers.
 *
 * <p>Thread-safety: the owning log's single writer appends, truncates and renames; reads may run
 * concurrently and see a prefix of the entries. The methods are synchronized on the index.
 */
public final class TransactionIndex {
    public static final short VERSION = 0;
    public static final int ENTRY_SIZE = 34;

    /** One aborted transaction. */
    public record AbortedTxn(long producerId, long firstOffset, long lastOffset, long lastStableOffset) {
        public AbortedTxn {
            if (firstOffset < 0 || lastOffset < firstOffset) {
                throw new IllegalArgumentException("invalid aborted transaction of producer " + producerId
                        + ": first offset " + firstOffset + ", last offset " + lastOffset);
            }
        }
    }

    /**
     * The entries a fetch must report, and whether they are all of them: {@code complete} once an entry's
     * last stable offset reaches the fetch's upper bound, so no later segment can add one.
     */
    public record Search(List<AbortedTxn> aborted, boolean complete) {
    }

    private final long baseOffset;
    private File file;
    /** The last entry's marker offset, -1 before the first; read from the file on first need. */
    private long lastOffset = -1;
    private boolean lastOffsetKnown;
    private boolean dirty;
    private boolean deleted;

    public TransactionIndex(long baseOffset, File file) {
        this.baseOffset = baseOffset;
        this.file = file;
    }

    public long baseOffset() {
        return baseOffset;
    }

    public synchronized File file() {
        return file;
    }

    /**
     * Appends an aborted transaction. Its marker must follow the last one indexed, as in Kafka.
     *
     * @throws IllegalArgumentException when its last offset is not above the last entry's
     */
    public synchronized void append(AbortedTxn txn) throws IOException {
        if (deleted) {
            throw new IllegalStateException("the transaction index " + file + " was deleted");
        }
        long last = lastOffset();
        if (txn.lastOffset() <= last) {
            throw new IllegalArgumentException("the last offset of an appended aborted transaction must increase: "
                    + txn.lastOffset() + " is not above " + last + " in " + file);
        }
        ByteBuffer entry = ByteBuffer.allocate(ENTRY_SIZE);
        entry.putShort(VERSION).putLong(txn.producerId()).putLong(txn.firstOffset()).putLong(txn.lastOffset())
                .putLong(txn.lastStableOffset()).flip();
        if (!file.exists()) {
            DiskFaults.check(DiskFaults.Op.CREATE, file.toPath());
        }
        try (FileChannel ch = FileChannel.open(file.toPath(), StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
            long end = validLength(ch.size());
            while (entry.hasRemaining()) {
                end += ch.write(entry, end);
            }
            ch.truncate(end); // a torn entry left past the valid ones goes
        }
        lastOffset = txn.lastOffset();
        lastOffsetKnown = true;
        dirty = true;
    }

    /**
     * Appends {@code txn} unless its marker is at or below the last one indexed (recovery replays
     * markers the index may already hold).
     *
     * @return whether it was appended
     */
    public synchronized boolean appendIfAbsent(AbortedTxn txn) throws IOException {
        if (txn.lastOffset() <= lastOffset()) {
            return false;
        }
        append(txn);
        return true;
    }

    /** Every entry, in order. */
    public synchronized List<AbortedTxn> all() throws IOException {
        List<AbortedTxn> out = new ArrayList<>();
        forEach(t -> {
            out.add(t);
            return true;
        });
        return out;
    }

    /**
     * The aborted transactions that overlap [{@code fetchOffset}, {@code upperBoundOffset}): those
     * whose marker is at or after the fetch offset and whose first offset is below the bound.
     */
    public synchronized Search collect(long fetchOffset, long upperBoundOffset) throws IOException {
        if (lastOffset() < 0) {
            return new Search(List.of(), false); // no entry: known without a system call after the first look
        }
        List<AbortedTxn> out = new ArrayList<>();
        boolean[] complete = {false};
        forEach(t -> {
            if (t.lastOffset() >= fetchOffset && t.firstOffset() < upperBoundOffset) {
                out.add(t);
            }
            if (t.lastStableOffset() >= upperBoundOffset) {
                complete[0] = true;
                return false;
            }
            return true;
        });
        return new Search(out, complete[0]);
    }

    /** Drops the entries whose marker is at or above {@code offset}. */
    public synchronized void truncateTo(long offset) throws IOException {
        if (!file.exists()) {
            return;
        }
        long[] keep = {0};
        long[] last = {-1};
        forEach(t -> {
            if (t.lastOffset() >= offset) {
                return false;
            }
            keep[0] += ENTRY_SIZE;
            last[0] = t.lastOffset();
            return true;
        });
        try (FileChannel ch = FileChannel.open(file.toPath(), StandardOpenOption.WRITE)) {
            if (ch.size() > keep[0]) {
                ch.truncate(keep[0]);
                dirty = true;
            }
        }
        lastOffset = last[0];
        lastOffsetKnown = true;
    }

    /** Removes every entry (the segment is being rebuilt). */
    public synchronized void reset() throws IOException {
        Files.deleteIfExists(file.toPath());
        lastOffset = -1;
        lastOffsetKnown = true;
        dirty = false;
    }

    /** Fsyncs the file if entries were written since the last flush. */
    public synchronized void flush() throws IOException {
        if (!dirty) {
            return;
        }
        try (FileChannel ch = FileChannel.open(file.toPath(), StandardOpenOption.WRITE)) {
            DiskFaults.check(DiskFaults.Op.FSYNC, file.toPath());
            ch.force(true);
        } catch (NoSuchFileException gone) {
            // reset or truncated away: nothing to sync
        }
        dirty = false;
    }

    /** Renames the file (a segment swap or deletion suffix); a missing file just takes the new name. */
    /** Points this index at its file's new path after its partition directory was renamed. */
    public synchronized void updateParentDir(File parentDir) {
        file = new File(parentDir, file.getName());
    }

    public synchronized void renameTo(File to) throws IOException {
        if (file.exists()) {
            Files.move(file.toPath(), to.toPath(), StandardCopyOption.REPLACE_EXISTING);
        }
        file = to;
    }

    public synchronized void deleteIfExists() throws IOException {
        deleted = true;
        Files.deleteIfExists(file.toPath());
    }

    public synchronized boolean isEmpty() {
        return !file.exists() || file.length() < ENTRY_SIZE;
    }

    private long lastOffset() throws IOException {
        if (!lastOffsetKnown) {
            long[] last = {-1};
            forEach(t -> {
                last[0] = t.lastOffset();
                return true;
            });
            lastOffset = last[0];
            lastOffsetKnown = true;
        }
        return lastOffset;
    }

    private static long validLength(long size) {
        return size - size % ENTRY_SIZE;
    }

    private interface Visitor {
        /** @return whether to go on */
        boolean visit(AbortedTxn txn);
    }

    private void forEach(Visitor visitor) throws IOException {
        FileChannel ch;
        try {
            ch = FileChannel.open(file.toPath(), StandardOpenOption.READ);
        } catch (NoSuchFileException none) {
            return;
        }
        try (ch) {
            long end = validLength(ch.size());
            ByteBuffer buf = ByteBuffer.allocate(ENTRY_SIZE * 256);
            long position = 0;
            while (position < end) {
                buf.clear().limit((int) Math.min(buf.capacity(), end - position));
                while (buf.hasRemaining()) {
                    int n = ch.read(buf, position + buf.position());
                    if (n < 0) {
                        throw new IOException(file + " ended at " + (position + buf.position()) + " while reading " + end + " bytes");
                    }
                }
                buf.flip();
                while (buf.remaining() >= ENTRY_SIZE) {
                    short version = buf.getShort();
                    if (version != VERSION) {
                        throw new CorruptIndexException("entry at " + (position + buf.position() - 2) + " of " + file
                                + " has version " + version + "; only " + VERSION + " is known");
                    }
                    AbortedTxn txn;
                    try {
                        txn = new AbortedTxn(buf.getLong(), buf.getLong(), buf.getLong(), buf.getLong());
                    } catch (IllegalArgumentException e) {
                        throw new CorruptIndexException(file + ": " + e.getMessage());
                    }
                    if (!visitor.visit(txn)) {
                        return;
                    }
                }
                position += buf.limit();
            }
        }
    }

    @Override
    public synchronized String toString() {
        return "TransactionIndex(" + file + ")";
    }
}
