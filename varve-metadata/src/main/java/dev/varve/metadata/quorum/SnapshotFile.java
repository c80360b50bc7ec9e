package dev.varve.metadata.quorum;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.zip.CRC32C;

/**
 * One metadata snapshot file: the owner's opaque bytes with the Raft position they cover and a checksum.
 *
 * <pre>
 *  offset  size  field
 *       0     4  magic 0x56525653 ("VRVS")
 *       4     2  format version (1)
 *       6     8  term of the last covered entry
 *      14     8  index of the last covered entry
 *      22     4  payload length in bytes
 *      26     4  CRC32C of bytes 4..25 and the payload
 *      30     n  payload: what SnapshotSource.snapshotAt returned
 * </pre>
 *
 * <p>Files are written as {@code <name>.tmp}, fsynced, renamed over the final name and the directory
 * fsynced, so a crash leaves either no snapshot or a whole one. The final name is Ratis'
 * {@code snapshot.<term>_<index>} so that Ratis can find, retain, purge and ship it to lagging
 * followers. Pure encode/decode are separate from the file I/O. Thread-safety: stateless.
 */
final class SnapshotFile {
    static final int MAGIC = 0x56525653;
    static final short VERSION = 1;
    static final int HEADER_BYTES = 30;
    /** Upper bound on a snapshot's payload; the length field is checked against it and the file size. */
    static final int MAX_PAYLOAD_BYTES = Integer.MAX_VALUE - HEADER_BYTES - 8;

    private SnapshotFile() {
    }

    /** A decoded snapshot. */
    record Contents(long term, long index, byte[] payload) {
    }

    static ByteBuffer encode(long term, long index, byte[] payload) {
        if (payload.length > MAX_PAYLOAD_BYTES) {
            throw new IllegalArgumentException("snapshot of " + payload.length + " bytes is too large");
        }
        ByteBuffer buf = ByteBuffer.allocate(HEADER_BYTES + payload.length);
        buf.putInt(MAGIC).putShort(VERSION).putLong(term).putLong(index).putInt(payload.length);
        CRC32C crc = new CRC32C();
        crc.update(buf.array(), 4, 22);
        crc.update(payload);
        buf.putInt((int) crc.getValue());
        buf.put(payload);
        return buf.flip();
    }

    /**
     * @throws IOException with a message naming {@code source} when the bytes are not a whole, intact
     *         snapshot (bad magic or version, truncated, length mismatch, CRC mismatch)
     */
    static Contents decode(byte[] bytes, Object source) throws IOException {
        if (bytes.length < HEADER_BYTES) {
            throw new IOException("snapshot " + source + " is truncated: " + bytes.length + " bytes");
        }
        ByteBuffer buf = ByteBuffer.wrap(bytes);
        int magic = buf.getInt();
        short version = buf.getShort();
        long term = buf.getLong();
        long index = buf.getLong();
        int length = buf.getInt();
        int storedCrc = buf.getInt();
        if (magic != MAGIC) {
            throw new IOException("snapshot " + source + " has bad magic 0x" + Integer.toHexString(magic));
        }
        if (version != VERSION) {
            throw new IOException("snapshot " + source + " has unsupported version " + version);
        }
        if (length < 0 || length != bytes.length - HEADER_BYTES) {
            throw new IOException("snapshot " + source + " declares " + length + " payload bytes but holds "
                    + (bytes.length - HEADER_BYTES));
        }
        CRC32C crc = new CRC32C();
        crc.update(bytes, 4, 22);
        crc.update(bytes, HEADER_BYTES, length);
        if ((int) crc.getValue() != storedCrc) {
            throw new IOException("snapshot " + source + " fails its CRC32C check");
        }
        byte[] payload = new byte[length];
        System.arraycopy(bytes, HEADER_BYTES, payload, 0, length);
        return new Contents(term, index, payload);
    }

    /** Writes {@code file} atomically (tmp, fsync, rename, fsync of the directory). */
    static void write(Path file, long term, long index, byte[] payload) throws IOException {
        Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
        ByteBuffer buf = encode(term, index, payload);
        try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.TRUNCATE_EXISTING,
                StandardOpenOption.WRITE)) {
            while (buf.hasRemaining()) {
                ch.write(buf);
            }
            ch.force(true);
        }
        try {
            Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (AtomicMoveNotSupportedException e) {
            Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING);
        }
        fsyncDirectory(file.getParent());
    }

    static Contents read(Path file) throws IOException {
        long size = Files.size(file);
        if (size > (long) MAX_PAYLOAD_BYTES + HEADER_BYTES) {
            throw new IOException("snapshot " + file + " is too large: " + size + " bytes");
        }
        return decode(Files.readAllBytes(file), file);
    }

    static void fsyncDirectory(Path dir) {
        try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
            ch.force(true);
        } catch (IOException e) {
            // Some platforms cannot open a directory for fsync; the rename is still atomic there.
        }
    }
}
