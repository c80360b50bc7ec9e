package dev.varve.broker;

import dev.varve.storage.checkpoint.CheckpointFile;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.List;

/**
 * Hands out producer ids, durably unique: ids are reserved in blocks of {@link #BLOCK_SIZE} by
 * writing the block's end to {@code <log dir>/varve-producer-ids} before any id of the block is
 * given out, so a restart (clean or not) never reuses one. The metadata quorum takes this over with
 * clustering (Kafka's producer-id blocks).
 */
public final class ProducerIdManager {
    public static final int BLOCK_SIZE = 1000;
    public static final String FILE_NAME = "varve-producer-ids";

    private static final CheckpointFile.Formatter<Long> FORMAT = new CheckpointFile.Formatter<>() {
        @Override
        public String toLine(Long v) {
            return Long.toString(v);
        }

        @Override
        public Long fromLine(String line) {
            long v = Long.parseLong(line);
            if (v < 0) {
                throw new IllegalArgumentException(line);
            }
            return v;
        }
    };

    /** Cluster mode: reserves the next block of ids with the controller; returns {first, size}. */
    public interface BlockSource {
        long[] nextBlock();
    }

    private final CheckpointFile<Long> file;
    private final BlockSource blocks;
    private long next;
    private long blockEnd;

    /** Cluster mode: ids come in blocks from the controller (AllocateProducerIds), unique cluster-wide. */
    public ProducerIdManager(BlockSource blocks) {
        this.file = null;
        this.blocks = blocks;
    }

    public ProducerIdManager(File dir) throws IOException {
        this.file = new CheckpointFile<>(new File(dir, FILE_NAME), FORMAT);
        this.blocks = null;
        List<Long> saved = file.read();
        this.next = saved.isEmpty() ? 0 : saved.get(0);
        this.blockEnd = next;
    }

    public synchronized long nextProducerId() {
        if (blocks != null && next >= blockEnd) {
            long[] block = blocks.nextBlock();
            next = block[0];
            blockEnd = block[0] + block[1];
        }
        if (next >= blockEnd) {
            blockEnd = next + BLOCK_SIZE;
            try {
                file.write(List.of(blockEnd));
            } catch (IOException e) {
                throw new UncheckedIOException("cannot reserve producer ids in " + file.file(), e);
            }
        }
        return next++;
    }
}
