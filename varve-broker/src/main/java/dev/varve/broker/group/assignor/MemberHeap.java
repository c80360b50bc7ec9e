package dev.varve.broker.group.assignor;

import java.util.Arrays;

/**
 * An indexed binary heap of member indexes ordered by an external int key array (a member's
 * partition count), least first or greatest first, ties by lower member index. Supports changing a
 * member's key in place ({@link #update}) and removal, in O(log n).
 */
final class MemberHeap {
    private final int[] heap;
    private final int[] pos;
    private final int[] key;
    private final boolean greatestFirst;
    private int size;

    MemberHeap(int members, int[] key, boolean greatestFirst) {
        this.heap = new int[members];
        this.pos = new int[members];
        Arrays.fill(pos, -1);
        this.key = key;
        this.greatestFirst = greatestFirst;
    }

    int peek() {
        return size == 0 ? -1 : heap[0];
    }

    boolean contains(int m) {
        return pos[m] >= 0;
    }

    void add(int m) {
        heap[size] = m;
        pos[m] = size;
        size++;
        siftUp(size - 1);
    }

    /** Restores the order after member {@code m}'s key changed. */
    void update(int m) {
        int i = pos[m];
        siftUp(i);
        siftDown(pos[m]);
    }

    void remove(int m) {
        int i = pos[m];
        pos[m] = -1;
        size--;
        if (i < size) {
            int last = heap[size];
            heap[i] = last;
            pos[last] = i;
            siftUp(i);
            siftDown(pos[last]);
        }
    }

    void clear() {
        for (int i = 0; i < size; i++) {
            pos[heap[i]] = -1;
        }
        size = 0;
    }

    private boolean before(int a, int b) {
        int ka = key[a];
        int kb = key[b];
        if (ka != kb) {
            return greatestFirst ? ka > kb : ka < kb;
        }
        return a < b;
    }

    private void siftUp(int i) {
        int m = heap[i];
        while (i > 0) {
            int parent = (i - 1) >>> 1;
            int p = heap[parent];
            if (!before(m, p)) {
                break;
            }
            heap[i] = p;
            pos[p] = i;
            i = parent;
        }
        heap[i] = m;
        pos[m] = i;
    }

    private void siftDown(int i) {
        int m = heap[i];
        while (true) {
            int child = 2 * i + 1;
            if (child >= size) {
                break;
            }
            if (child + 1 < size && before(heap[child + 1], heap[child])) {
                child++;
            }
            int c = heap[child];
            if (!before(c, m)) {
                break;
            }
            heap[i] = c;
            pos[c] = i;
            i = child;
        }
        heap[i] = m;
        pos[m] = i;
    }
}
