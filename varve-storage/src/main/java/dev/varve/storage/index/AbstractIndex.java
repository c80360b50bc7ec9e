package dev.varve.storage.index;

import org.apache.kafka.common.utils.Utils;
import org.apache.kafka.common.utils.internals.ByteBufferUnmapper;

import dev.varve.storage.DiskFaults;

import java.io.File;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;

/**
 * A sparse, sorted, fixed-entry-size index file beside a log segment, memory-mapped lazily.
 *
 * <pre>
 *   file:  | entry 0 | entry 1 | ... | entry n-1 | (preallocated zeros while the segment is active) |
 *          '--- entrySize bytes each, keys strictly increasing -----'
 * </pre>
 *
 * The active segment's index is preallocated to {@code maxIndexSizeBytes} so appends never grow the
 * file; {@link #trimToValidSize()} cuts it to {@code entries * entrySize} when the segment becomes
 * inactive or is closed. The number of valid entries is the file length divided by the entry size
 * for an existing file (callers trim before a clean shutdown and rebuild after an unclean one), and
 * zero for a new file.
 *
 * <p>The mapping is created on first use, not when the index is opened, so thousands of partitions
 * with many closed segments cost file handles only when they are read. The file of a new index is
 * created only when it is first written, flushed, trimmed (its segment becomes inactive) or closed:
 * only the active segment of a log can lack its index files, and only while they have no entries. Subclasses define the entry
 * layout and the key they are searched by.
 *
 * <p>Entries are appended with a positional {@code write(2)} through a channel held open while the
 * index takes appends, not through the mapping: the first store into each page of a freshly
 * preallocated, sparse mapping is a page fault that allocates on the file system, and on ext4 under a
 * resyncing broker's writes and the metadata log's fsyncs it took 54 ms on average (268 ms at worst;
 * 0.1 ms for the write), which made one fetcher taking on 1,000 partitions spend a minute and more in
 * index appends. Lookups read the mapping, which shares the page cache with the writes.
 *
 * <p>Thread-safety: appends and structural changes (truncate, resize, close) are made by the single
 * writer of the owning log; lookups run concurrently. Every access to the mapping holds this
 * index's monitor, because touching a buffer after it is unmapped (on trim or close) would crash the
 * JVM; the critical sections are a binary search long.
 */
public abstract class AbstractIndex implements AutoCloseable {
    private volatile File file;
    protected final long baseOffset;
    private final int maxIndexSizeBytes;
    private final int entrySize;
    private MappedByteBuffer mmap; // null until first use
    /** The channel appends write through, opened by the first append and closed by a trim or close. */
    private FileChannel appender;
    /** One entry, encoded before it is written (appends hold the monitor). */
    private final ByteBuffer entryBuffer;
    private volatile int entries;
    private int fileLength;
    private boolean dirty;
    private final boolean wasMissing;
    /** The file does not exist yet (a new, empty index): nothing to map, flush or trim. */
    private boolean absent;
    /** Deleted with its segment: never created again. */
    private boolean deleted;

    protected AbstractIndex(File file, long baseOffset, int maxIndexSizeBytes, int entrySize) throws IOException {
        if (maxIndexSizeBytes < entrySize) {
            throw new IllegalArgumentException("index size " + maxIndexSizeBytes + " is smaller than one entry (" + entrySize + ")");
        }
        this.file = file;
        this.baseOffset = baseOffset;
        this.entrySize = entrySize;
        this.maxIndexSizeBytes = roundDown(maxIndexSizeBytes, entrySize);
        this.entryBuffer = ByteBuffer.allocate(entrySize);
        if (file.exists()) {
            long length = file.length();
            if (length > Integer.MAX_VALUE) {
                throw new CorruptIndexException("index " + file + " is larger than 2 GiB");
            }
            this.fileLength = (int) length;
            this.entries = (int) (length / entrySize);
            this.wasMissing = false;
        } else {
            // Created on first write, flush or close, not now: a broker taking on thousands of new
            // partitions would otherwise create two empty index files for each (Kafka's LazyIndex).
            this.fileLength = 0;
            this.entries = 0;
            this.wasMissing = true;
            this.absent = true;
        }
    }

    private static int roundDown(int value, int multiple) {
        return value / multiple * multiple;
    }

    public File file() {
        return file;
    }

    public long baseOffset() {
        return baseOffset;
    }

    public int entries() {
        return entries;
    }

    protected int entrySize() {
        return entrySize;
    }

    /** How many entries fit in the preallocated file. */
    public int maxEntries() {
        return Math.max(maxIndexSizeBytes, fileLength) / entrySize;
    }

    public boolean isFull() {
        return entries >= maxEntries();
    }

    /** Size the valid entries occupy, in bytes. */
    public int sizeInBytes() {
        return entries * entrySize;
    }

    /** The mapping for lookups, created on first use; never grows the file. */
    protected final synchronized MappedByteBuffer mmap() {
        if (mmap == null) {
            mmap = map();
        }
        return mmap;
    }

    /**
     * The channel for appends: the file is preallocated to the maximum size first (so a mapping made
     * for lookups covers every entry that can be appended).
     */
    private FileChannel appender() throws IOException {
        if (fileLength < (entries + 1) * entrySize) {
            unmapQuietly();
            try (RandomAccessFile raf = new RandomAccessFile(file, "rw")) {
                raf.setLength(maxIndexSizeBytes);
                fileLength = maxIndexSizeBytes;
            }
        }
        if (appender == null) {
            absent = false;
            appender = FileChannel.open(file.toPath(), StandardOpenOption.WRITE);
        }
        return appender;
    }

    private void closeAppender() {
        if (appender != null) {
            try {
                appender.close();
            } catch (IOException e) {
                // nothing buffered in the channel itself: its writes are in the page cache already
            }
            appender = null;
        }
    }

    private MappedByteBuffer map() {
        try (RandomAccessFile raf = new RandomAccessFile(file, "rw")) {
            absent = false;
            MappedByteBuffer buffer = raf.getChannel().map(FileChannel.MapMode.READ_WRITE, 0, fileLength);
            buffer.position(entries * entrySize);
            return buffer;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot map index " + file, e);
        }
    }

    /** Appends one entry; the caller has checked ordering and fullness. */
    protected final synchronized void appendEntry(EntryWriter writer) {
        if (entries >= maxEntries()) {
            throw new IllegalStateException("index " + file + " is full (" + entries + " entries)");
        }
        entryBuffer.clear();
        writer.write(entryBuffer);
        entryBuffer.flip();
        if (entryBuffer.remaining() != entrySize) {
            throw new IllegalStateException("an entry of " + entryBuffer.remaining() + " bytes in " + file + " (entries are " + entrySize + ")");
        }
        try {
            FileChannel channel = appender();
            long position = (long) entries * entrySize;
            while (entryBuffer.hasRemaining()) {
                position += channel.write(entryBuffer, position);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot append to index " + file, e);
        }
        entries++;
        dirty = true;
    }

    @FunctionalInterface
    protected interface EntryWriter {
        void write(ByteBuffer buffer);
    }

    /** Drops every entry at or after index {@code n}. */
    protected final synchronized void truncateToEntries(int n) {
        if (n < 0 || n > entries) {
            throw new IllegalArgumentException("cannot truncate " + file + " to " + n + " of " + entries + " entries");
        }
        entries = n;
        dirty = true;
        if (mmap != null) {
            mmap.position(n * entrySize);
        }
    }

    /** Removes all entries. */
    public void reset() {
        truncateToEntries(0);
    }

    /**
     * Binary search over entries for the largest entry whose key is at most {@code target}.
     *
     * @return the slot, or -1 when every entry's key is larger (or there are none)
     */
    protected final synchronized int largestLowerBoundSlot(long target, KeyReader key) {
        int n = entries;
        if (n == 0) {
            return -1;
        }
        MappedByteBuffer buffer = mmap().duplicate();
        if (key.read(buffer, 0) > target) {
            return -1;
        }
        int lo = 0;
        int hi = n - 1;
        while (lo < hi) {
            int mid = (lo + hi + 1) >>> 1;
            if (key.read(buffer, mid) <= target) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        return lo;
    }

    @FunctionalInterface
    protected interface KeyReader {
        long read(java.nio.ByteBuffer buffer, int slot);
    }

    /** A read-only view of the mapping for lookups; position and limit are the caller's. */
    protected final synchronized java.nio.ByteBuffer view() {
        return mmap().duplicate();
    }

    /** Forces the entries (and a trim) to disk, whether or not the file is mapped. */
    public synchronized void flush() throws IOException {
        if (absent) {
            materialize();
        }
        if (!dirty) {
            return;
        }
        // fsync of the file also writes back pages dirtied through a (current or past) mapping.
        try (FileChannel channel = FileChannel.open(file.toPath(), StandardOpenOption.WRITE)) {
            DiskFaults.check(DiskFaults.Op.FSYNC, file.toPath());
            channel.force(true);
        }
        dirty = false;
    }

    /** Creates the (empty) file of a new index that was never written. */
    private void materialize() throws IOException {
        if (absent && !deleted) {
            DiskFaults.check(DiskFaults.Op.CREATE, file.toPath());
            Files.newByteChannel(file.toPath(), StandardOpenOption.CREATE, StandardOpenOption.WRITE).close();
            absent = false;
            dirty = true;
        }
    }

    /** Whether the file did not exist when this index was opened (a new index, or one that was lost). */
    public boolean wasMissing() {
        return wasMissing;
    }

    /** Cuts the file to the valid entries (used when the segment becomes inactive or closes). */
    public synchronized void trimToValidSize() throws IOException {
        resize(entries * entrySize);
        materialize(); // an inactive segment always has its index files
    }

    private void resize(int newLength) throws IOException {
        if (newLength == fileLength) {
            return;
        }
        DiskFaults.check(DiskFaults.Op.TRUNCATE, file.toPath());
        absent = false;
        unmapQuietly();
        closeAppender();
        try (RandomAccessFile raf = new RandomAccessFile(file, "rw")) {
            raf.setLength(newLength);
        }
        fileLength = newLength;
        dirty = true;
    }

    /**
     * Checks the structure cheaply: whole entries, and the last two entries in order. Reads the tail
     * with a positional read instead of mapping the file, so checking thousands of indexes at
     * start-up maps none of them.
     */
    public synchronized void sanityCheck() throws IOException {
        checkLength();
        int from = Math.max(0, entries - 2);
        if (entries == 0) {
            return;
        }
        if (mmap != null) {
            verifyEntries(view(), from, entries);
            return;
        }
        // Read the tail into a buffer laid out as the whole file, so slot numbers stay absolute.
        ByteBuffer asWhole = ByteBuffer.allocate(entries * entrySize);
        asWhole.position(from * entrySize);
        try (FileChannel channel = FileChannel.open(file.toPath(), StandardOpenOption.READ)) {
            Utils.readFully(channel, asWhole, (long) from * entrySize);
        }
        if (asWhole.hasRemaining()) {
            throw new CorruptIndexException("index " + file + " is shorter than its entries");
        }
        verifyEntries(asWhole.clear(), from, entries);
    }

    /** Checks every entry (ordering and bounds); used after an unclean shutdown. */
    public synchronized void fullCheck() {
        checkLength();
        if (entries > 0) {
            verifyEntries(view(), 0, entries);
        }
    }

    private void checkLength() {
        if (fileLength % entrySize != 0) {
            throw new CorruptIndexException("index " + file + " has length " + fileLength
                    + ", not a multiple of the entry size " + entrySize);
        }
    }

    /**
     * Verifies the entries in slots [{@code fromSlot}, {@code toSlot}) of {@code buffer}, where slot i
     * starts at byte {@code i * entrySize}; throws {@link CorruptIndexException}.
     */
    protected abstract void verifyEntries(ByteBuffer buffer, int fromSlot, int toSlot);

    /**
     * Points this index at its file's new path after its partition directory was renamed (a moved
     * replica): the open mapping and append channel stay valid, later opens use the new path.
     */
    public synchronized void updateParentDir(File parentDir) {
        file = new File(parentDir, file.getName());
    }

    public synchronized void renameTo(File target) throws IOException {
        if (!absent && file.exists()) {
            DiskFaults.check(DiskFaults.Op.RENAME, target.toPath());
            Files.move(file.toPath(), target.toPath(), StandardCopyOption.ATOMIC_MOVE);
        }
        file = target;
    }

    public synchronized boolean deleteIfExists() throws IOException {
        unmapQuietly();
        closeAppender();
        absent = true;
        deleted = true;
        return Files.deleteIfExists(file.toPath());
    }

    /** Unmaps and closes the append channel; the next use opens them again. Used to bound memory and descriptors for idle indexes. */
    public synchronized void closeMapping() {
        unmapQuietly();
        closeAppender();
    }

    @Override
    public synchronized void close() throws IOException {
        trimToValidSize(); // a clean shutdown leaves every index file in place
        unmapQuietly();
        closeAppender();
    }

    private void unmapQuietly() {
        if (mmap != null) {
            try {
                ByteBufferUnmapper.unmap(file.getAbsolutePath(), mmap);
            } catch (IOException e) {
                // The mapping is released by GC eventually; nothing is lost.
            }
            mmap = null;
        }
    }

    protected int relativeOffset(long offset) {
        long relative = offset - baseOffset;
        if (relative < 0 || relative > Integer.MAX_VALUE) {
            throw new IndexOffsetOverflowException("offset " + offset + " does not fit index with base " + baseOffset);
        }
        return (int) relative;
    }

    /** Whether {@code offset} can be stored relative to this index's base offset. */
    public boolean canAppendOffset(long offset) {
        long relative = offset - baseOffset;
        return relative >= 0 && relative <= Integer.MAX_VALUE;
    }

    @Override
    public String toString() {
        return getClass().getSimpleName() + "(" + file + ", entries=" + entries + ")";
    }
}
