package dev.varve.tests.chaos;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * What happened during a fault-injection run, as the clients saw it: every send with its outcome,
 * every record a consumer polled, the final read of every partition after the faults healed, and
 * when the last fault ended. {@link Checker} decides from it alone whether data was lost.
 *
 * <p>Recording is lock-free ({@link ConcurrentLinkedQueue}): producers, consumers and the nemesis
 * record from their own threads, and 100k events cost a few megabytes and no contention. Times are
 * {@link System#nanoTime()} readings of the one runner JVM, so they compare across threads.
 * {@link #events()} returns the events in recording order; the checker never relies on that order
 * for verdicts, only to pick which example to print first.
 *
 * <p>Conventions the checker relies on (the runner guarantees them):
 * <ul>
 *   <li>every value is unique across the run (process id + sequence) and sent once, to one partition;
 *   <li>each send has one {@code SendInvoke} and at most one outcome ({@code SendOk} or
 *       {@code SendFail}); an invoke without an outcome (run ended first) is treated as indefinite;
 *   <li>the final read covers each partition from its first offset (no retention deletes during the
 *       run); it may be recorded as several {@code FinalRead} chunks per partition.
 * </ul>
 */
public final class History {

    /** One recorded fact. */
    public sealed interface Event permits SendInvoke, SendOk, SendFail, Poll, FinalRead, Heal {
        long nanoTime();
    }

    /** Producer {@code process} called {@code send(value)} to {@code partition}. */
    public record SendInvoke(int process, int partition, String value, long nanoTime) implements Event {
        public SendInvoke {
            Objects.requireNonNull(value, "value");
        }
    }

    /** The send of {@code value} was acknowledged (acks=all) at {@code offset}. */
    public record SendOk(int process, int partition, String value, long offset, long nanoTime) implements Event {
        public SendOk {
            Objects.requireNonNull(value, "value");
            if (offset < 0) {
                throw new IllegalArgumentException("offset " + offset + " < 0 for " + value);
            }
        }
    }

    /**
     * The send of {@code value} failed. {@code definite}: the client knows it was not written (for example
     * NOT_ENOUGH_REPLICAS before the append); otherwise (timeout, disconnect, unknown) it may be in the log.
     */
    public record SendFail(int process, int partition, String value, boolean definite, long nanoTime) implements Event {
        public SendFail {
            Objects.requireNonNull(value, "value");
        }
    }

    /** Consumer {@code process} received {@code value} at {@code offset} of {@code partition}. */
    public record Poll(int process, int partition, long offset, String value, long nanoTime) implements Event {
        public Poll {
            Objects.requireNonNull(value, "value");
        }
    }

    /** One record of a final read. */
    public record OffsetValue(long offset, String value) {
        public OffsetValue {
            Objects.requireNonNull(value, "value");
        }
    }

    /**
     * Records of {@code partition} read after the faults healed, from the beginning; {@code nanoTime} is
     * when this read started (the checker reports how long after {@link Heal} the first one began).
     */
    public record FinalRead(int partition, List<OffsetValue> records, long nanoTime) implements Event {
        public FinalRead {
            records = List.copyOf(records);
        }
    }

    /** The last fault ended (every process resumed, every network partition healed). */
    public record Heal(long nanoTime) implements Event {
    }

    private final ConcurrentLinkedQueue<Event> events = new ConcurrentLinkedQueue<>();

    /** Records {@code event}; safe from any thread. */
    public History add(Event event) {
        events.add(Objects.requireNonNull(event, "event"));
        return this;
    }

    public void sendInvoke(int process, int partition, String value, long nanoTime) {
        add(new SendInvoke(process, partition, value, nanoTime));
    }

    public void sendOk(int process, int partition, String value, long offset, long nanoTime) {
        add(new SendOk(process, partition, value, offset, nanoTime));
    }

    public void sendFail(int process, int partition, String value, boolean definite, long nanoTime) {
        add(new SendFail(process, partition, value, definite, nanoTime));
    }

    public void poll(int process, int partition, long offset, String value, long nanoTime) {
        add(new Poll(process, partition, offset, value, nanoTime));
    }

    public void finalRead(int partition, List<OffsetValue> records, long nanoTime) {
        add(new FinalRead(partition, records, nanoTime));
    }

    public void heal(long nanoTime) {
        add(new Heal(nanoTime));
    }

    /** A snapshot of the events recorded so far, in recording order. */
    public List<Event> events() {
        return List.copyOf(new ArrayList<>(events));
    }

    /** A history holding {@code events} in this order (tests, replays). */
    public static History of(List<? extends Event> events) {
        History history = new History();
        events.forEach(history::add);
        return history;
    }
}
