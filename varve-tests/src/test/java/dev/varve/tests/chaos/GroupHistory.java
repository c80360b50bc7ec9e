package dev.varve.tests.chaos;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * What the group workload ({@link GroupWorkload}) saw during a fault-injection run: the acknowledged
 * records of {@link #TOPIC}, every member's life (started, its rebalance callbacks, the records it was
 * delivered, its commits and their results, how it stopped), the group as described once it settled, and
 * the group's committed offsets read at the very end. {@link GroupChecker} judges it. Lock-free like
 * {@link History}; every time is {@link System#nanoTime()} of this JVM (one monotonic clock).
 *
 * <p>Conventions the checker relies on: a member is one consumer instance (a static member restarted is a
 * new member with the same instance id); a member's events are recorded by its own thread, in order;
 * rebalance callbacks run in that thread inside poll or close, so the records a member is delivered and the
 * commits it sends lie between the callbacks that bracket its ownership. Partitions are those of
 * {@link #TOPIC}; an offset committed is the next offset to read.
 */
public final class GroupHistory {
    /** The topic the group reads. */
    public static final String TOPIC = "chaos-group";
    /** The KIP-848 consumer group ({@code group.protocol=consumer}). */
    public static final String GROUP = "chaos-grp";

    /** How a member subscribes. */
    public enum Subscription {
        /** {@code subscribe(List.of(TOPIC))}. */
        NAME,
        /** A {@link org.apache.kafka.clients.consumer.SubscriptionPattern}: the regex is resolved by the broker. */
        REGEX,
        /** A {@link java.util.regex.Pattern}: the client resolves it against the topics it knows. */
        PATTERN
    }

    /** How a member's consumer was stopped. */
    public enum Stop {
        /** close() leaving the group (the rebalance callbacks ran and were recorded). */
        LEAVE,
        /**
         * A crash: the member stopped acting at once (callbacks no longer recorded) and closed without leaving
         * the group ({@code REMAIN_IN_GROUP}: no leave heartbeat); the coordinator holds its partitions until
         * its session expires, as after a kill -9 of a consumer process.
         */
        CRASH,
        /** A static member's restart: close with {@code REMAIN_IN_GROUP} (a static leave, epoch -2), then a new instance with its id. */
        BOUNCE,
        /** The consumer threw (a fatal error) and was closed. */
        ERROR,
        /** The end of the run, after the group settled: close() leaving the group. */
        END
    }

    public sealed interface Event permits Acked, Started, Assigned, Revoked, Lost, Delivered, Commit, Stalled,
            Stopped, Settled, FinalOffsets, Heal {
        long nanoTime();
    }

    /** The producer's send of {@code value} to {@code partition} was acknowledged at {@code offset}. */
    public record Acked(int partition, long offset, String value, long nanoTime) implements Event {
        public Acked {
            Objects.requireNonNull(value, "value");
        }
    }

    /** Member {@code member} (a new consumer instance) subscribed; {@code instanceId} null for a dynamic member. */
    public record Started(String member, Subscription subscription, String instanceId, long nanoTime) implements Event {
        public Started {
            Objects.requireNonNull(member, "member");
            Objects.requireNonNull(subscription, "subscription");
        }
    }

    /** onPartitionsAssigned of {@code member}: it owns {@code partitions} from now on. */
    public record Assigned(String member, Set<Integer> partitions, long nanoTime) implements Event {
        public Assigned {
            Objects.requireNonNull(member, "member");
            partitions = Set.copyOf(partitions);
        }
    }

    /** onPartitionsRevoked of {@code member}: it gave {@code partitions} up cleanly. */
    public record Revoked(String member, Set<Integer> partitions, long nanoTime) implements Event {
        public Revoked {
            Objects.requireNonNull(member, "member");
            partitions = Set.copyOf(partitions);
        }
    }

    /**
     * onPartitionsLost of {@code member}: it learnt that it no longer owns {@code partitions} (fenced, or it
     * left the group after its poll interval expired); another member may have owned them for a while already.
     */
    public record Lost(String member, Set<Integer> partitions, long nanoTime) implements Event {
        public Lost {
            Objects.requireNonNull(member, "member");
            partitions = Set.copyOf(partitions);
        }
    }

    /** A poll of {@code member} returned {@code value} at {@code partition}/{@code offset}. */
    public record Delivered(String member, int partition, long offset, String value, long nanoTime) implements Event {
        public Delivered {
            Objects.requireNonNull(member, "member");
            Objects.requireNonNull(value, "value");
        }
    }

    /**
     * A commitSync of {@code offsets} (partition to next offset) by {@code member}, sent at {@code startNanos},
     * answered at {@code nanoTime}: {@code ok}, or failed with {@code error} (failed or timed out: it may
     * have landed; the checker relies on successful commits only).
     */
    public record Commit(String member, Map<Integer, Long> offsets, boolean ok, String error, long startNanos,
                         long nanoTime) implements Event {
        public Commit {
            Objects.requireNonNull(member, "member");
            offsets = Map.copyOf(offsets);
        }
    }

    /** {@code member} stopped polling from {@code startNanos} to {@code nanoTime} (a zombie: past its poll interval). */
    public record Stalled(String member, long startNanos, long nanoTime) implements Event {
        public Stalled {
            Objects.requireNonNull(member, "member");
        }
    }

    /**
     * {@code member} stopped ({@code how}); whatever it still owned by its callbacks ends here. For a
     * {@link Stop#CRASH} or {@link Stop#BOUNCE} this is recorded before the consumer is closed, and nothing
     * of the member is recorded afterwards.
     */
    public record Stopped(String member, Stop how, String detail, long nanoTime) implements Event {
        public Stopped {
            Objects.requireNonNull(member, "member");
            Objects.requireNonNull(how, "how");
        }
    }

    /**
     * The group as described (Admin describeConsumerGroups) once it settled after the heal, or when the wait
     * gave up: its state (Kafka's name, "Stable"...), each member's assignment by member name (client.id), and
     * the number of partitions of {@link #TOPIC}.
     */
    public record Settled(String state, Map<String, Set<Integer>> assignments, int partitions, long nanoTime)
            implements Event {
        public Settled {
            Objects.requireNonNull(state, "state");
            TreeMap<String, Set<Integer>> copy = new TreeMap<>();
            assignments.forEach((m, ps) -> copy.put(m, Set.copyOf(new TreeSet<>(ps))));
            assignments = Map.copyOf(copy);
        }
    }

    /**
     * The group's committed offsets (Admin listConsumerGroupOffsets; a partition absent has none) and the
     * topic's end offsets, read between {@code startNanos} and {@code nanoTime}, after every member stopped
     * and the producer was closed.
     */
    public record FinalOffsets(Map<Integer, Long> committed, Map<Integer, Long> endOffsets, long startNanos,
                               long nanoTime) implements Event {
        public FinalOffsets {
            committed = Map.copyOf(committed);
            endOffsets = Map.copyOf(endOffsets);
        }
    }

    /** The last fault ended; the membership changes stop. */
    public record Heal(long nanoTime) implements Event {
    }

    private final ConcurrentLinkedQueue<Event> events = new ConcurrentLinkedQueue<>();

    public GroupHistory add(Event event) {
        events.add(Objects.requireNonNull(event, "event"));
        return this;
    }

    public List<Event> events() {
        return List.copyOf(new ArrayList<>(events));
    }

    /**
     * Writes every event, in time order, one a line (ms since the first, and the wall-clock time of day to match
     * the brokers' logs), for a failed run's evidence.
     */
    public void dump(java.nio.file.Path file) throws java.io.IOException {
        List<Event> sorted = new ArrayList<>(events());
        sorted.sort(java.util.Comparator.comparingLong(Event::nanoTime));
        long t0 = sorted.isEmpty() ? 0 : sorted.get(0).nanoTime();
        long wallMinusNanoMs = System.currentTimeMillis() - System.nanoTime() / 1_000_000;
        java.time.format.DateTimeFormatter clock = java.time.format.DateTimeFormatter.ofPattern("HH:mm:ss.SSS")
                .withZone(java.time.ZoneId.systemDefault());
        StringBuilder out = new StringBuilder();
        for (Event e : sorted) {
            out.append(String.format("%12.3f %s %s%n", (e.nanoTime() - t0) / 1e6,
                    clock.format(java.time.Instant.ofEpochMilli(wallMinusNanoMs + e.nanoTime() / 1_000_000)), e));
        }
        java.nio.file.Files.createDirectories(file.toAbsolutePath().getParent());
        java.nio.file.Files.writeString(file, out);
    }
}
