package dev.varve.broker;

import dev.varve.storage.checkpoint.CheckpointFile;
import org.apache.kafka.common.errors.CoordinatorLoadInProgressException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * Hands out producer ids, durably unique.
 *
 * <p>Single node: ids are reserved in blocks of {@link #BLOCK_SIZE} by writing the block's end to
 * {@code <log dir>/varve-producer-ids} before any id of the block is given out, so a restart (clean
 * or not) never reuses one.
 *
 * <p>Cluster: blocks come from the controller (AllocateProducerIds), unique cluster-wide. As Kafka's
 * RPCProducerIdManager does, the next block is requested in the background once {@link
 * #PREFETCH_PERCENT}% of the current one is used, and no caller ever waits for the controller: when
 * no id is at hand (the first request, or the controller slower than the producers), the caller gets
 * COORDINATOR_LOAD_IN_PROGRESS, which clients retry.
 */
public final class ProducerIdManager {
    private static final Logger LOG = LoggerFactory.getLogger(ProducerIdManager.class);
    public static final int BLOCK_SIZE = 1000;
    public static final String FILE_NAME = "varve-producer-ids";
    /** Cluster mode: the share of a block used when the next one is requested. */
    static final int PREFETCH_PERCENT = 90;
    /** Cluster mode: after a failed request, how long before the next one. */
    static final long RETRY_BACKOFF_MS = 100;

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

    /** Cluster mode: reserves the next block of ids with the controller; completes with {first, size}. */
    public interface BlockSource {
        CompletableFuture<long[]> nextBlock();
    }

    private final CheckpointFile<Long> file;
    private final BlockSource blocks;
    private final org.apache.kafka.common.utils.Time time;
    private long next;
    private long blockStart;
    private long blockEnd;
    /** Cluster mode: a block received ahead of need, {first, size}; null when none. */
    private long[] prefetched;
    private boolean requesting;
    private long retryAtMs;

    /** Cluster mode: ids come in blocks from the controller (AllocateProducerIds), unique cluster-wide. */
    public ProducerIdManager(BlockSource blocks, org.apache.kafka.common.utils.Time time) {
        this.file = null;
        this.blocks = blocks;
        this.time = time;
    }

    public ProducerIdManager(File dir) throws IOException {
        this.file = new CheckpointFile<>(new File(dir, FILE_NAME), FORMAT);
        this.blocks = null;
        this.time = null;
        List<Long> saved = file.read();
        this.next = saved.isEmpty() ? 0 : saved.get(0);
        this.blockEnd = next;
    }

    /**
     * The next id.
     *
     * @throws CoordinatorLoadInProgressException cluster mode, when no id is at hand yet (retriable)
     */
    public synchronized long nextProducerId() {
        if (blocks != null) {
            return nextFromBlocks();
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

    private long nextFromBlocks() {
        if (next >= blockEnd && prefetched != null) {
            useBlock(prefetched);
            prefetched = null;
        }
        if (next < blockEnd) {
            long id = next++;
            if (prefetched == null && (next - blockStart) * 100 >= (blockEnd - blockStart) * PREFETCH_PERCENT) {
                requestBlock();
            }
            return id;
        }
        requestBlock();
        throw new CoordinatorLoadInProgressException("waiting for a block of producer ids from the controller");
    }

    private void useBlock(long[] block) {
        blockStart = block[0];
        next = block[0];
        blockEnd = block[0] + block[1];
    }

    /** Starts one request for the next block unless one is in flight or a failed one is backing off. */
    private void requestBlock() {
        if (requesting || time.milliseconds() < retryAtMs) {
            return;
        }
        requesting = true;
        CompletableFuture<long[]> reply;
        try {
            reply = blocks.nextBlock();
        } catch (RuntimeException e) {
            reply = CompletableFuture.failedFuture(e);
        }
        reply.whenComplete((block, error) -> {
            synchronized (this) {
                requesting = false;
                if (error != null || block == null || block[1] <= 0) {
                    retryAtMs = time.milliseconds() + RETRY_BACKOFF_MS;
                    LOG.warn("no block of producer ids from the controller (the next request retries): {}",
                            error != null ? error.toString() : "an empty block");
                } else if (next >= blockEnd) {
                    useBlock(block);
                } else {
                    prefetched = block;
                }
            }
        });
    }
}
