package dev.varve.tests;

import java.util.ArrayList;
import java.util.List;

/** What a test opened (clients, brokers), closed in the reverse order at its end. */
final class Closer implements AutoCloseable {
    private final List<AutoCloseable> opened = new ArrayList<>();

    <T extends AutoCloseable> T add(T closeable) {
        opened.add(closeable);
        return closeable;
    }

    /** Closes everything opened so far, last first; the first failure is thrown once all are closed. */
    @Override
    public void close() throws Exception {
        Exception first = null;
        for (int i = opened.size() - 1; i >= 0; i--) {
            try {
                opened.get(i).close();
            } catch (Exception e) {
                first = first == null ? e : first;
            }
        }
        opened.clear();
        if (first != null) {
            throw first;
        }
    }
}
