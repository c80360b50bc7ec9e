package dev.varve.storage;

import dev.varve.storage.ProducerStateEntry.BatchMetadata;
import dev.varve.storage.checkpoint.CheckpointFile;
import dev.varve.storage.checkpoint.CorruptCheckpointException;
import org.apache.kafka.common.record.internal.RecordBatch;

import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.CRC32C;

/**
 * A producer state snapshot, {@code <20-digit offset>.snapshot} in the partition directory: the
 * producer table as it was when the log ended at that offset. Kafka 4.x's layout byte for byte
 * (version 1 of its {@code ProducerSnapshot} message behind an int16 version prefix), so Kafka's
 * {@code DumpLogSegments} prints Varve's snapshots and Kafka can load them:
 *
 * <pre>
 *   0  version                int16   1
 *   2  crc                    uint32  CRC32C of every byte from offset 6 to the end
 *   6  entry count            int32
 *   10 entries, 46 bytes each:
 *        producerId int64 | epoch int16 | lastSequence int32 | lastOffset int64 | offsetDelta int32
 *        | timestamp int64 | coordinatorEpoch int32 | currentTxnFirstOffset int64 (-1: none open)
 * </pre>
 *
 * <p>Kafka writes one entry per producer: its last batch. Varve writes one entry per remembered
 * batch (up to five per producer, oldest first, all in the producer's current epoch), so a broker
 * restart keeps the whole deduplication window. A Kafka reader keeps the last entry it reads for a
 * producer id, which is the newest batch. To keep that true when Kafka filters expired entries at
 * load, the timestamps of a producer's older entries are written as at most the producer's last
 * timestamp. A producer with no batch in its epoch is one entry with last sequence and last offset
 * -1, as in Kafka.
 *
 * <p>Files are written to {@code name.tmp} and renamed into place, so a reader sees a whole file
 * or none; the CRC and an exact length check catch the rest. Pure encoding and decoding are
 * separate from the file I/O. Thread-safety: stateless.
 */
public final class ProducerSnapshotFile {
    public static final short VERSION = 1;
    static final int HEADER_BYTES = 10;
    static final int ENTRY_BYTES = 46;
    private static final int CRC_OFFSET = 2;
    private static final int ENTRIES_OFFSET = 6;

    private ProducerSnapshotFile() {
    }

    /** Encodes a producer table; producers in id order. */
    public static ByteBuffer encode(Collection<ProducerStateEntry> producers) {
        List<ProducerStateEntry> sorted = new ArrayList<>(producers);
        sorted.sort(Comparator.comparingLong(ProducerStateEntry::producerId));
        int count = 0;
        for (ProducerStateEntry p : sorted) {
            count += Math.max(1, p.batches().size());
        }
        ByteBuffer buf = ByteBuffer.allocate(HEADER_BYTES + count * ENTRY_BYTES);
        buf.putShort(VERSION);
        buf.putInt(0); // CRC, filled in below
        buf.putInt(count);
        for (ProducerStateEntry p : sorted) {
            List<BatchMetadata> batches = p.batches();
            if (batches.isEmpty()) {
                putEntry(buf, p, RecordBatch.NO_SEQUENCE, -1L, 0, p.lastTimestamp());
            }
            for (int i = 0; i < batches.size(); i++) {
                BatchMetadata b = batches.get(i);
                boolean last = i == batches.size() - 1;
                long ts = last ? p.lastTimestamp() : Math.min(b.timestamp(), p.lastTimestamp());
                putEntry(buf, p, b.lastSeq(), b.lastOffset(), b.offsetDelta(), ts);
            }
        }
        buf.flip();
        buf.putInt(CRC_OFFSET, (int) crcOf(buf));
        return buf;
    }

    private static void putEntry(ByteBuffer buf, ProducerStateEntry p, int lastSeq, long lastOffset,
                                 int offsetDelta, long timestamp) {
        buf.putLong(p.producerId());
        buf.putShort(p.producerEpoch());
        buf.putInt(lastSeq);
        buf.putLong(lastOffset);
        buf.putInt(offsetDelta);
        buf.putLong(timestamp);
        buf.putInt(p.coordinatorEpoch());
        buf.putLong(p.currentTxnFirstOffset());
    }

    private static long crcOf(ByteBuffer buf) {
        CRC32C crc = new CRC32C();
        crc.update(buf.duplicate().position(ENTRIES_OFFSET));
        return crc.getValue();
    }

    /**
     * Decodes a snapshot (Varve's or Kafka's). Several entries of one producer are applied in order,
     * as batches; the coordinator epoch and open transaction of a producer are its last entry's.
     *
     * @throws CorruptCheckpointException when the version, length, CRC or any field is invalid
     */
    public static List<ProducerStateEntry> decode(ByteBuffer buf) throws CorruptCheckpointException {
        ByteBuffer b = buf.duplicate();
        if (b.remaining() < HEADER_BYTES) {
            throw new CorruptCheckpointException("producer snapshot of " + b.remaining() + " bytes is too short");
        }
        int start = b.position();
        short version = b.getShort(start);
        if (version != VERSION) {
            throw new CorruptCheckpointException("producer snapshot has unknown version " + version);
        }
        long storedCrc = Integer.toUnsignedLong(b.getInt(start + CRC_OFFSET));
        CRC32C crc = new CRC32C();
        crc.update(b.duplicate().position(start + ENTRIES_OFFSET));
        if (crc.getValue() != storedCrc) {
            throw new CorruptCheckpointException("producer snapshot CRC " + storedCrc + " does not match its contents ("
                    + crc.getValue() + ")");
        }
        int count = b.getInt(start + ENTRIES_OFFSET);
        if (count < 0 || (long) count * ENTRY_BYTES != b.remaining() - HEADER_BYTES) {
            throw new CorruptCheckpointException("producer snapshot declares " + count + " entries but holds "
                    + (b.remaining() - HEADER_BYTES) + " bytes of entries");
        }
        b.position(start + HEADER_BYTES);
        Map<Long, ProducerStateEntry> producers = new LinkedHashMap<>();
        for (int i = 0; i < count; i++) {
            long producerId = b.getLong();
            short epoch = b.getShort();
            int lastSeq = b.getInt();
            long lastOffset = b.getLong();
            int offsetDelta = b.getInt();
            long timestamp = b.getLong();
            int coordinatorEpoch = b.getInt();
            long txnFirstOffset = b.getLong();
            if (producerId < 0 || lastOffset < -1
                    || (lastOffset >= 0 && (lastSeq < 0 || offsetDelta < 0 || offsetDelta > lastOffset))) {
                throw new CorruptCheckpointException("producer snapshot entry " + i + " is invalid: producerId "
                        + producerId + ", lastSequence " + lastSeq + ", lastOffset " + lastOffset + ", offsetDelta " + offsetDelta);
            }
            ProducerStateEntry entry = producers.getOrDefault(producerId, ProducerStateEntry.empty(producerId))
                    .withEpoch(epoch, timestamp);
            if (lastOffset >= 0) {
                entry = entry.withBatch(epoch, new BatchMetadata(lastSeq, lastOffset, offsetDelta, timestamp));
            }
            if (txnFirstOffset < -1) {
                throw new CorruptCheckpointException("producer snapshot entry " + i + " has an open transaction at offset "
                        + txnFirstOffset);
            }
            entry = new ProducerStateEntry(producerId, entry.producerEpoch(), entry.batches(), entry.lastTimestamp(),
                    coordinatorEpoch, txnFirstOffset);
            producers.put(producerId, entry);
        }
        return List.copyOf(producers.values());
    }

    /**
     * Writes a snapshot file atomically ({@code file.tmp}, then a rename). With {@code sync} the file
     * and its directory are fsynced before returning; otherwise call {@link #fsync} later.
     */
    public static void write(File file, Collection<ProducerStateEntry> producers, boolean sync) throws IOException {
        ByteBuffer bytes = encode(producers);
        Path path = file.toPath();
        Path tmp = path.resolveSibling(path.getFileName() + ".tmp");
        DiskFaults.check(DiskFaults.Op.CREATE, tmp);
        try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
            while (bytes.hasRemaining()) {
                ch.write(bytes);
            }
            if (sync) {
                DiskFaults.check(DiskFaults.Op.FSYNC, tmp);
                ch.force(true);
            }
        }
        DiskFaults.check(DiskFaults.Op.RENAME, path);
        try {
            Files.move(tmp, path, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        } catch (AtomicMoveNotSupportedException e) {
            Files.move(tmp, path, StandardCopyOption.REPLACE_EXISTING);
        }
        if (sync) {
            CheckpointFile.fsyncDirectory(path.getParent());
        }
    }

    /** Fsyncs a snapshot written without sync (its directory entry is the caller's to fsync). */
    public static void fsync(File file) throws IOException {
        try (FileChannel ch = FileChannel.open(file.toPath(), StandardOpenOption.READ)) {
            DiskFaults.check(DiskFaults.Op.FSYNC, file.toPath());
            ch.force(true);
        } catch (NoSuchFileException e) {
            // deleted since: nothing to make durable
        }
    }

    /**
     * Reads and decodes a snapshot file.
     *
     * @throws CorruptCheckpointException when its contents are invalid
     */
    public static List<ProducerStateEntry> read(File file) throws IOException {
        long size = Files.size(file.toPath());
        if (size > Integer.MAX_VALUE - 64) {
            throw new CorruptCheckpointException(file + " is too large for a producer snapshot (" + size + " bytes)");
        }
        try {
            return decode(ByteBuffer.wrap(Files.readAllBytes(file.toPath())));
        } catch (CorruptCheckpointException e) {
            throw new CorruptCheckpointException(file + ": " + e.getMessage());
        }
    }
}
