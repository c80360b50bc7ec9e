package dev.varve.broker.replication;

import org.apache.kafka.common.utils.Time;

import java.util.HashSet;
import java.util.PriorityQueue;
import java.util.Random;
import java.util.Set;

/**
 * The simulation's one event queue and its network. Everything that happens (a message arriving, a
 * timer firing, a fault beginning or ending) is an event at a simulated time; events run in time order,
 * ties in the order they were scheduled, so one seed gives one history.
 *
 * <p>Messages between nodes (brokers {@code 0..2}, the controller {@link #CONTROLLER}) are events too:
 * {@link #send} drops a message with probability {@code dropRate} or when the link is cut, and otherwise
 * delivers it after a random delay (sometimes a long one), so messages on one link overtake each other.
 * A message in flight is also lost if the link is cut when it would arrive. A link can also be slow for
 * a while (up to a given extra delay per message). Links are undirected.
 *
 * <p>Not thread-safe; owned by one {@link ReplicationSimulation}.
 */
final class SimNetwork {
    static final int CONTROLLER = 3;

    /** One scheduled event. {@code seq} breaks ties between events at the same time: first scheduled runs first. */
    private record Event(long atMs, long seq, Runnable action) implements Comparable<Event> {
        @Override
        public int compareTo(Event o) {
            int c = Long.compare(atMs, o.atMs);
            return c != 0 ? c : Long.compare(seq, o.seq);
        }
    }

    private final Random random;
    private final SimTrace trace;
    private final PriorityQueue<Event> queue = new PriorityQueue<>();
    private final Set<Integer> cutLinks = new HashSet<>();
    /** Links that are slow for a while: their messages take up to this much longer (a follower falls behind). */
    private final java.util.Map<Integer, Integer> slowLinks = new java.util.HashMap<>();
    private long seq;
    long nowMs;
    double dropRate;
    int minDelayMs = 1;
    int maxDelayMs = 8;
    /** Chance that a message takes up to ten times the usual maximum delay (heavy reordering). */
    double slowRate = 0.03;
    long messagesSent;
    long messagesDropped;

    SimNetwork(Random random, SimTrace trace, long startMs) {
        this.random = random;
        this.trace = trace;
        this.nowMs = startMs;
    }

    /** The simulated clock as Kafka's {@link Time} (for code that asks for one, e.g. the fetch session cache); it never sleeps. */
    Time time() {
        return dev.varve.broker.ManualTime.viewOf(() -> nowMs);
    }

    /** Runs {@code action} {@code delayMs} from now. */
    void schedule(long delayMs, Runnable action) {
        if (delayMs < 0) {
            throw new IllegalArgumentException("negative delay " + delayMs);
        }
        queue.add(new Event(nowMs + delayMs, seq++, action));
    }

    /**
     * Sends a message: {@code deliver} runs at {@code to} after a random delay, unless the message is
     * dropped or the link is cut now or at delivery. The receiver checks that it is still up.
     */
    void send(int from, int to, String what, Runnable deliver) {
        messagesSent++;
        if (isCut(from, to) || random.nextDouble() < dropRate) {
            messagesDropped++;
            trace.log(nowMs, "drop " + name(from) + "->" + name(to) + " " + what);
            return;
        }
        int delay = minDelayMs + random.nextInt(maxDelayMs - minDelayMs + 1);
        if (random.nextDouble() < slowRate) {
            delay += random.nextInt(10 * maxDelayMs);
        }
        Integer slowMs = slowLinks.get(key(from, to));
        if (slowMs != null) {
            delay += random.nextInt(slowMs + 1);
        }
        schedule(delay, () -> {
            if (isCut(from, to)) {
                messagesDropped++;
                trace.log(nowMs, "lost in flight " + name(from) + "->" + name(to) + " " + what);
                return;
            }
            deliver.run();
        });
    }

    /** Runs the next event; false when there is none. */
    boolean step() {
        Event e = queue.poll();
        if (e == null) {
            return false;
        }
        nowMs = e.atMs();
        e.action().run();
        return true;
    }

    void cut(int a, int b) {
        cutLinks.add(key(a, b));
    }

    void heal(int a, int b) {
        cutLinks.remove(key(a, b));
    }

    void healAll() {
        cutLinks.clear();
        slowLinks.clear();
    }

    /** Messages between {@code a} and {@code b} take up to {@code extraMs} longer; 0 ends it. */
    void slow(int a, int b, int extraMs) {
        if (extraMs <= 0) {
            slowLinks.remove(key(a, b));
        } else {
            slowLinks.put(key(a, b), extraMs);
        }
    }

    boolean isCut(int a, int b) {
        return a != b && cutLinks.contains(key(a, b));
    }

    boolean anyCut() {
        return !cutLinks.isEmpty();
    }

    String cutsDescription() {
        StringBuilder b = new StringBuilder();
        for (int x = 0; x <= CONTROLLER; x++) {
            for (int y = x + 1; y <= CONTROLLER; y++) {
                if (isCut(x, y)) {
                    b.append(b.isEmpty() ? "" : " ").append(name(x)).append('|').append(name(y));
                }
            }
        }
        return b.isEmpty() ? "none" : b.toString();
    }

    static String name(int node) {
        return node == CONTROLLER ? "ctl" : "b" + node;
    }

    private static int key(int a, int b) {
        return Math.min(a, b) * 16 + Math.max(a, b);
    }
}
