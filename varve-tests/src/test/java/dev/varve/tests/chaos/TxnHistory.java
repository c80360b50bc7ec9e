package dev.varve.tests.chaos;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * What the transactional workload ({@link TxnWorkload}) saw during a fault-injection run: every
 * transaction with its writes and outcome, every record a read_committed consumer received, the final
 * read_committed read of both topics, the consumer group's committed offsets once the processors
 * stopped, and when the faults healed. {@link TxnChecker} judges it. Lock-free like {@link History}.
 *
 * <p>Conventions the checker relies on: every value is written by one transaction only, once; a value
 * the processors derive from input value {@code v} is {@code v + "=>" + <processor txn>}
 * ({@link #inputOf}); transactions are recorded once, when their outcome is known (or at the end, as
 * {@link Outcome#UNKNOWN}).
 */
public final class TxnHistory {
    /** The topic the writers write and the processors read. */
    public static final String INPUT = "chaos-txn";
    /** The topic the processors write, one derived record per input record. */
    public static final String OUTPUT = "chaos-txn-out";
    static final String DERIVED = "=>";

    /** How a transaction ended, as its client knows it. */
    public enum Outcome {
        /** commitTransaction returned. */
        COMMITTED,
        /** We aborted it, or it failed before commitTransaction was called (fencing then aborts it). */
        ABORTED,
        /** commitTransaction threw (or never returned): it may have committed or not, but all or nothing. */
        UNKNOWN
    }

    public sealed interface Event permits Txn, Read, FinalRead, GroupOffsets, Heal {
        long nanoTime();
    }

    /** One record a transaction sent. */
    public record Write(String topic, int partition, String value) {
        public Write {
            Objects.requireNonNull(topic, "topic");
            Objects.requireNonNull(value, "value");
        }
    }

    /**
     * Transaction {@code name} of client {@code process} wrote {@code writes} (sent, maybe not acknowledged),
     * between {@code startNanos} and {@code nanoTime} (when its outcome was known).
     */
    public record Txn(int process, String name, List<Write> writes, Outcome outcome, long startNanos, long nanoTime)
            implements Event {
        public Txn {
            writes = List.copyOf(writes);
            Objects.requireNonNull(outcome, "outcome");
        }
    }

    /**
     * Consumer {@code process} (read_committed) received {@code value} at {@code offset}. {@code ordered}: the
     * consumer reads every partition it was assigned from the start and never seeks, so the offsets it
     * receives of a partition must include every committed record between them (a reader; the processors
     * seek back after a failure and are not ordered).
     */
    public record Read(int process, boolean ordered, String topic, int partition, long offset, String value,
                       long nanoTime) implements Event {
        public Read {
            Objects.requireNonNull(topic, "topic");
            Objects.requireNonNull(value, "value");
        }
    }

    /**
     * The read_committed records of one partition after the run quiesced, from its start; {@code complete}:
     * read up to the partition's high watermark (else the checks that need the final read skip it).
     */
    public record FinalRead(String topic, int partition, List<History.OffsetValue> records, boolean complete,
                            long nanoTime) implements Event {
        public FinalRead {
            records = List.copyOf(records);
        }
    }

    /**
     * The processors' group committed these offsets of {@link #INPUT} (partition to next offset; absent: none),
     * read with require_stable after every processor stopped cleanly and its transactional id was
     * re-initialised (so no transaction of theirs is pending).
     */
    public record GroupOffsets(Map<Integer, Long> committed, long nanoTime) implements Event {
        public GroupOffsets {
            committed = Map.copyOf(committed);
        }
    }

    /** The last fault ended. */
    public record Heal(long nanoTime) implements Event {
    }

    private final ConcurrentLinkedQueue<Event> events = new ConcurrentLinkedQueue<>();

    public TxnHistory add(Event event) {
        events.add(Objects.requireNonNull(event, "event"));
        return this;
    }

    public List<Event> events() {
        return List.copyOf(new ArrayList<>(events));
    }

    /** The input value {@code output} was derived from, or null if it is not a derived value. */
    public static String inputOf(String output) {
        int at = output.indexOf(DERIVED);
        return at < 0 ? null : output.substring(0, at);
    }

    /** The value a processor writes for {@code input} in its transaction {@code txn}. */
    public static String derived(String input, String txn) {
        return input + DERIVED + txn;
    }

    /** Every event in time order, one a line with its time from the first event and its wall clock, to {@code file}. */
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
