package dev.varve.broker.replication;

import java.util.ArrayDeque;
import java.util.function.Consumer;

/**
 * The simulation's event trace: the last {@code capacity} lines are kept for the failure message; every
 * line also goes to an optional sink (a replay prints the whole trace), and into a running hash so two
 * runs of one seed can be compared cheaply (replay determinism).
 */
final class SimTrace {
    private final ArrayDeque<String> last = new ArrayDeque<>();
    private final int capacity;
    private final Consumer<String> sink;
    private long hash = 1125899906842597L;
    long lines;

    SimTrace(int capacity, Consumer<String> sink) {
        this.capacity = capacity;
        this.sink = sink;
    }

    void log(long nowMs, String event) {
        String line = "t=" + nowMs + " " + event;
        lines++;
        hash = 31 * hash + line.hashCode();
        if (last.size() == capacity) {
            last.removeFirst();
        }
        last.addLast(line);
        if (sink != null) {
            sink.accept(line);
        }
    }

    /** A digest of every line logged so far. */
    long hash() {
        return hash;
    }

    String lastLines() {
        return String.join("\n", last);
    }
}
