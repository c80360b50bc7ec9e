package dev.varve.metadata;

import java.util.AbstractList;
import java.util.Arrays;
import java.util.RandomAccess;

/**
 * An immutable list of a topic's partitions stored in fixed-size chunks, so that a new version with
 * one partition changed copies one chunk and the chunk table ({@code size / 32} references) instead
 * of the whole list: images of topics with thousands of partitions share everything unchanged.
 *
 * <p>{@link Builder} batches many changes (a whole Raft entry, or a snapshot being replayed): each
 * chunk is copied at most once per builder. Immutable lists are thread-safe; builders are not.
 */
final class PartitionList extends AbstractList<PartitionState> implements RandomAccess {
    private static final int SHIFT = 5;
    private static final int CHUNK = 1 << SHIFT;
    private static final int MASK = CHUNK - 1;

    static final PartitionList EMPTY = new PartitionList(new PartitionState[0][], 0);

    private final PartitionState[][] chunks;
    private final int size;

    private PartitionList(PartitionState[][] chunks, int size) {
        this.chunks = chunks;
        this.size = size;
    }

    @Override
    public PartitionState get(int index) {
        if (index < 0 || index >= size) {
            throw new IndexOutOfBoundsException("partition " + index + " of " + size);
        }
        return chunks[index >>> SHIFT][index & MASK];
    }

    @Override
    public int size() {
        return size;
    }

    Builder toBuilder() {
        return new Builder(this);
    }

    /** Collects changes to a {@link PartitionList}; copy-on-first-write per chunk. Single use: {@link #build()} once. */
    static final class Builder {
        private PartitionState[][] chunks;
        private boolean[] owned;
        private int size;
        private boolean built;

        private Builder(PartitionList base) {
            this.chunks = base.chunks.clone();
            this.owned = new boolean[chunks.length];
            this.size = base.size;
        }

        int size() {
            return size;
        }

        PartitionState get(int index) {
            if (index < 0 || index >= size) {
                throw new IndexOutOfBoundsException("partition " + index + " of " + size);
            }
            return chunks[index >>> SHIFT][index & MASK];
        }

        /** Replaces {@code index} (an existing partition) or appends it when {@code index == size()}. */
        Builder set(int index, PartitionState value) {
            if (built) {
                throw new IllegalStateException("builder already built");
            }
            if (index < 0 || index > size) {
                throw new IllegalStateException("partition " + index + " written before partitions " + size + ".." + (index - 1));
            }
            int c = index >>> SHIFT;
            if (c == chunks.length) {
                int newLength = Math.max(4, chunks.length * 2);
                chunks = Arrays.copyOf(chunks, newLength);
                owned = Arrays.copyOf(owned, newLength);
            }
            if (chunks[c] == null) {
                chunks[c] = new PartitionState[CHUNK];
                owned[c] = true;
            } else if (!owned[c]) {
                chunks[c] = chunks[c].clone();
                owned[c] = true;
            }
            chunks[c][index & MASK] = value;
            if (index == size) {
                size++;
            }
            return this;
        }

        PartitionList build() {
            built = true;
            int used = (size + CHUNK - 1) >>> SHIFT;
            return new PartitionList(used == chunks.length ? chunks : Arrays.copyOf(chunks, used), size);
        }
    }
}
