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

    private final CheckpointFile<Long> file;
    private long next;
    private long blockEnd;

    public ProducerIdManager(File dir) throws IOException {
        this.file = new CheckpointFile<>(new File(dir, FILE_NAME), FORMAT);
        List<Long> saved = file.read();
        this.next = saved.isEmpty() ? 0 : saved.get(0);
        this.blockEnd = next;
    }

    public synchronized long nextProducerId() {
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
