package dev.varve.broker.group.assignor;

import java.util.AbstractSet;
import java.util.Arrays;
import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.Set;

/**
 * Compact unmodifiable sets of partition numbers: a range {@code [from, to)} or a sorted int
 * array. They iterate in ascending order and are equal to any {@link Set} with the same elements.
 */
final class IntSets {
    private IntSets() {
    }

    /** The set of the given distinct ascending values (the array is taken, not copied). */
    static Set<Integer> of(int[] ascending) {
        int n = ascending.length;
        if (n == 0) {
            return Set.of();
        }
        if (ascending[n - 1] - ascending[0] == n - 1) {
            return new Range(ascending[0], ascending[n - 1] + 1);
        }
        return new Sorted(ascending);
    }

    static Set<Integer> range(int from, int to) {
        return from >= to ? Set.of() : new Range(from, to);
    }

    private static final class Range extends AbstractSet<Integer> {
        private final int from;
        private final int to;

        Range(int from, int to) {
            this.from = from;
            this.to = to;
        }

        @Override
        public int size() {
            return to - from;
        }

        @Override
        public boolean contains(Object o) {
            return o instanceof Integer i && i >= from && i < to;
        }

        @Override
        public Iterator<Integer> iterator() {
            return new Iterator<>() {
                private int next = from;

                @Override
                public boolean hasNext() {
                    return next < to;
                }

                @Override
                public Integer next() {
                    if (next >= to) {
                        throw new NoSuchElementException();
                    }
                    return next++;
                }
            };
        }

        @Override
        public int hashCode() {
            // the sum of the elements, as Set.hashCode specifies for Integers
            return (int) (((long) from + to - 1) * (to - from) / 2);
        }

        @Override
        public String toString() {
            return "[" + from + ".." + (to - 1) + "]";
        }
    }

    private static final class Sorted extends AbstractSet<Integer> {
        private final int[] values;

        Sorted(int[] values) {
            this.values = values;
        }

        @Override
        public int size() {
            return values.length;
        }

        @Override
        public boolean contains(Object o) {
            return o instanceof Integer i && Arrays.binarySearch(values, i) >= 0;
        }

        @Override
        public Iterator<Integer> iterator() {
            return new Iterator<>() {
                private int next;

                @Override
                public boolean hasNext() {
                    return next < values.length;
                }

                @Override
                public Integer next() {
                    if (next >= values.length) {
                        throw new NoSuchElementException();
                    }
                    return values[next++];
                }
            };
        }

        @Override
        public int hashCode() {
            int h = 0;
            for (int v : values) {
                h += v;
            }
            return h;
        }
    }
}
