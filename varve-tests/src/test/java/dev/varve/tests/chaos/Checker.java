package dev.varve.tests.chaos;

import dev.varve.tests.chaos.History.Event;
import dev.varve.tests.chaos.History.FinalRead;
import dev.varve.tests.chaos.History.Heal;
import dev.varve.tests.chaos.History.OffsetValue;
import dev.varve.tests.chaos.History.Poll;
import dev.varve.tests.chaos.History.SendFail;
import dev.varve.tests.chaos.History.SendInvoke;
import dev.varve.tests.chaos.History.SendOk;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Supplier;
import java.util.stream.Collectors;

/**
 * Decides from a {@link History} alone whether a Kafka-style log lost, duplicated, reordered, rewrote,
 * or invented data; see {@link Anomaly} for the exact definition of each kind. Pure: no I/O, no clock,
 * one pass to index the history plus one per kind, O(n log n) in the number of events.
 *
 * <p>The history must be well formed, or {@link #check} throws {@link IllegalArgumentException} (a
 * runner bug must not read as a verdict): values are invoked once, each send has at most one outcome,
 * with the invoke's process and partition, no earlier than the invoke.
 *
 * <p>Examples name positions as {@code p<partition>@<offset>} and times as milliseconds since the
 * earliest event of the history. The "first" example of a kind is the earliest in history time where
 * the kind has one (the ack of a LOST value, the poll of a LOST_READ, the first observation of an
 * UNEXPECTED value, the later invoke of a REORDER), else the first found in recording order.
 */
public final class Checker {

    /** @param livenessBoundMs a final read this long after the heal must be complete ({@link Report.Liveness}) */
    public record Options(long livenessBoundMs) {
        public Options {
            if (livenessBoundMs < 0) {
                throw new IllegalArgumentException("livenessBoundMs " + livenessBoundMs + " < 0");
            }
        }

        public static Options defaults() {
            return new Options(30_000);
        }
    }

    private Checker() {
    }

    public static Report check(History history, Options options) {
        return new Analysis(history.events(), options).report();
    }

    private record Position(int partition, long offset) {
        @Override
        public String toString() {
            return "p" + partition + "@" + offset;
        }
    }

    /** A send and its outcome: {@link SendOk}, {@link SendFail} or {@code null} (unresolved). */
    private static final class Send {
        final SendInvoke invoke;
        Event outcome;

        Send(SendInvoke invoke) {
            this.invoke = invoke;
        }

        SendOk ok() {
            return outcome instanceof SendOk ok ? ok : null;
        }

        boolean failedDefinitely() {
            return outcome instanceof SendFail fail && fail.definite();
        }

        boolean indefinite() {
            return outcome == null || outcome instanceof SendFail fail && !fail.definite();
        }
    }

    /**
     * Distinct values per key in first-seen order. Nearly every key has one value, so a set is allocated
     * only for keys with two or more: those are the interesting ones ({@link #multiples()}).
     */
    private static final class SparseMultimap<K, V> {
        private final Map<K, V> first = new HashMap<>();
        private final Map<K, Set<V>> more = new LinkedHashMap<>();

        void put(K key, V value) {
            V seen = first.putIfAbsent(key, value);
            if (seen != null && !seen.equals(value)) {
                more.computeIfAbsent(key, k -> new LinkedHashSet<>(List.of(seen))).add(value);
            }
        }

        Set<V> get(K key) {
            Set<V> all = more.get(key);
            if (all != null) {
                return all;
            }
            V one = first.get(key);
            return one == null ? Set.of() : Set.of(one);
        }

        Map<K, Set<V>> multiples() {
            return more;
        }
    }

    /** Count and the example with the smallest ordering key (ties: the first offered). */
    private static final class Tally {
        int count;
        long firstKey;
        String first;

        void add(long orderKey, Supplier<String> example) {
            if (count == 0 || orderKey < firstKey) {
                firstKey = orderKey;
                first = example.get();
            }
            count++;
        }

        Report.Finding finding() {
            return new Report.Finding(count, first);
        }
    }

    private static final class Analysis {
        private final List<Event> events;
        private final Options options;
        private final long t0;
        private final Map<String, Send> sends = new LinkedHashMap<>();
        private final List<Poll> polls = new ArrayList<>();
        /** Acked offsets, polls and the final read: INCONSISTENT_OFFSET. */
        private final SparseMultimap<Position, String> valuesAt = new SparseMultimap<>();
        /** Polls and the final read: DUPLICATE. */
        private final SparseMultimap<String, Position> seenAt = new SparseMultimap<>();
        private final SparseMultimap<String, Position> finalAt = new SparseMultimap<>();
        private final Set<Position> finalPositions = new HashSet<>();
        private final Set<Integer> activePartitions = new TreeSet<>();
        private final Set<Integer> readPartitions = new TreeSet<>();
        private final OptionalLong lastHealNs;
        private final OptionalLong firstFinalReadNs;
        private final Map<Anomaly, Tally> tallies = new EnumMap<>(Anomaly.class);

        Analysis(List<Event> events, Options options) {
            this.events = events;
            this.options = options;
            this.t0 = events.stream().mapToLong(Event::nanoTime).min().orElse(0);
            this.lastHealNs = events.stream().filter(e -> e instanceof Heal).mapToLong(Event::nanoTime).max();
            this.firstFinalReadNs = events.stream().filter(e -> e instanceof FinalRead).mapToLong(Event::nanoTime).min();
            for (Anomaly kind : Anomaly.values()) {
                tallies.put(kind, new Tally());
            }
            index();
        }

        private void index() {
            for (Event e : events) { // invokes first: outcomes may be recorded out of order in tests
                if (e instanceof SendInvoke invoke) {
                    if (sends.putIfAbsent(invoke.value(), new Send(invoke)) != null) {
                        throw malformed("value sent twice", e);
                    }
                    activePartitions.add(invoke.partition());
                }
            }
            for (Event e : events) {
                if (e instanceof SendOk ok) {
                    resolve(ok.value(), ok.process(), ok.partition(), e);
                    valuesAt.put(new Position(ok.partition(), ok.offset()), ok.value());
                } else if (e instanceof SendFail fail) {
                    resolve(fail.value(), fail.process(), fail.partition(), e);
                } else if (e instanceof Poll poll) {
                    Position at = new Position(poll.partition(), poll.offset());
                    polls.add(poll);
                    activePartitions.add(poll.partition());
                    valuesAt.put(at, poll.value());
                    seenAt.put(poll.value(), at);
                } else if (e instanceof FinalRead read) {
                    readPartitions.add(read.partition());
                    for (OffsetValue record : read.records()) {
                        Position at = new Position(read.partition(), record.offset());
                        valuesAt.put(at, record.value());
                        seenAt.put(record.value(), at);
                        finalAt.put(record.value(), at);
                        finalPositions.add(at);
                    }
                }
            }
        }

        private void resolve(String value, int process, int partition, Event outcome) {
            Send send = sends.get(value);
            if (send == null) {
                throw malformed("outcome of a send never invoked", outcome);
            }
            if (send.outcome != null) {
                throw malformed("second outcome (first " + send.outcome + ")", outcome);
            }
            if (send.invoke.process() != process || send.invoke.partition() != partition) {
                throw malformed("process or partition differs from " + send.invoke, outcome);
            }
            if (outcome.nanoTime() < send.invoke.nanoTime()) {
                throw malformed("outcome before " + send.invoke, outcome);
            }
            send.outcome = outcome;
        }

        private static IllegalArgumentException malformed(String why, Event event) {
            return new IllegalArgumentException("malformed history: " + why + ": " + event);
        }

        Report report() {
            int ackedUnread = lost();
            duplicates();
            reorders();
            inconsistentOffsets();
            lostReads();
            unexpected();
            Map<Anomaly, Report.Finding> findings = new EnumMap<>(Anomaly.class);
            tallies.forEach((kind, tally) -> findings.put(kind, tally.finding()));

            Set<Integer> unread = new TreeSet<>(activePartitions);
            unread.removeAll(readPartitions);
            int ackedMissing = tallies.get(Anomaly.LOST).count;
            OptionalLong healToRead = lastHealNs.isPresent() && firstFinalReadNs.isPresent()
                    ? OptionalLong.of(Math.floorDiv(firstFinalReadNs.getAsLong() - lastHealNs.getAsLong(), 1_000_000L))
                    : OptionalLong.empty();
            Report.Liveness liveness = new Report.Liveness(unread.isEmpty() && ackedMissing == 0, ackedMissing,
                    ackedUnread, new TreeSet<>(unread), healToRead, options.livenessBoundMs());
            return new Report(findings, totals(), liveness);
        }

        /** LOST; returns the acked values whose partition was never finally read. */
        private int lost() {
            int ackedUnread = 0;
            for (Send send : sends.values()) {
                SendOk ok = send.ok();
                if (ok == null) {
                    continue;
                }
                if (!readPartitions.contains(ok.partition())) {
                    ackedUnread++;
                } else if (finalOffset(ok.value(), ok.partition()) < 0) {
                    tallies.get(Anomaly.LOST).add(ok.nanoTime(), () -> ok.value() + " acked to producer "
                            + ok.process() + " at " + new Position(ok.partition(), ok.offset()) + " " + t(ok.nanoTime())
                            + "; not in the final read; " + finalContext(new Position(ok.partition(), ok.offset())));
                }
            }
            return ackedUnread;
        }

        private void duplicates() {
            seenAt.multiples().forEach((value, positions) -> tallies.get(Anomaly.DUPLICATE).add(0, () -> value
                    + " at " + positions.size() + " positions: " + positions.stream()
                    .map(at -> at + " (" + sourcesOf(at, value) + ")").collect(Collectors.joining(", "))));
        }

        /** Per (partition, producer): acked sends by ack time, each b checked against the highest offset acked before b's invoke. */
        private void reorders() {
            record Producer(int partition, int process) {
            }
            Map<Producer, List<Send>> groups = new LinkedHashMap<>();
            for (Send send : sends.values()) {
                SendOk ok = send.ok();
                if (ok != null && finalOffset(ok.value(), ok.partition()) >= 0) {
                    groups.computeIfAbsent(new Producer(ok.partition(), ok.process()), k -> new ArrayList<>()).add(send);
                }
            }
            for (List<Send> group : groups.values()) {
                group.sort(Comparator.comparingLong(s -> s.outcome.nanoTime()));
                int[] highestUpTo = new int[group.size()]; // index of the highest final offset among group[0..i]
                for (int i = 0; i < group.size(); i++) {
                    highestUpTo[i] = i > 0 && offset(group.get(highestUpTo[i - 1])) > offset(group.get(i)) ? highestUpTo[i - 1] : i;
                }
                for (Send b : group) {
                    int ackedBefore = countAckedBefore(group, b.invoke.nanoTime());
                    if (ackedBefore == 0) {
                        continue;
                    }
                    Send a = group.get(highestUpTo[ackedBefore - 1]);
                    if (offset(a) > offset(b)) {
                        tallies.get(Anomaly.REORDER).add(b.invoke.nanoTime(), () -> "producer " + a.invoke.process()
                                + " on p" + a.invoke.partition() + ": " + a.invoke.value() + " acked " + t(a.outcome.nanoTime())
                                + " is at final offset " + offset(a) + ", but " + b.invoke.value() + " invoked later "
                                + t(b.invoke.nanoTime()) + " is at final offset " + offset(b));
                    }
                }
            }
        }

        private int countAckedBefore(List<Send> byAckTime, long nanoTime) {
            int lo = 0;
            int hi = byAckTime.size();
            while (lo < hi) {
                int mid = (lo + hi) >>> 1;
                if (byAckTime.get(mid).outcome.nanoTime() < nanoTime) {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            return lo;
        }

        private long offset(Send send) {
            return finalOffset(send.invoke.value(), send.invoke.partition());
        }

        private void inconsistentOffsets() {
            valuesAt.multiples().forEach((at, values) -> tallies.get(Anomaly.INCONSISTENT_OFFSET).add(0, () -> at
                    + " holds " + values.size() + " values: " + values.stream()
                    .map(value -> value + " (" + sourcesOf(at, value) + ")").collect(Collectors.joining(", "))));
        }

        private void lostReads() {
            Set<List<Object>> counted = new HashSet<>(); // (position, value): polled again is the same read
            for (Poll poll : polls) {
                Position at = new Position(poll.partition(), poll.offset());
                if (!readPartitions.contains(poll.partition()) || finalAt.get(poll.value()).contains(at)
                        || !counted.add(List.of(at, poll.value()))) {
                    continue;
                }
                tallies.get(Anomaly.LOST_READ).add(poll.nanoTime(), () -> poll.value() + " polled by consumer "
                        + poll.process() + " at " + at + " " + t(poll.nanoTime()) + "; " + finalContext(at)
                        + finalElsewhere(poll.value()));
            }
        }

        private void unexpected() {
            Map<String, Event> firstSeen = new LinkedHashMap<>();
            for (Event e : events) {
                if (e instanceof Poll poll) {
                    firstSeen.putIfAbsent(poll.value(), e);
                } else if (e instanceof FinalRead read) {
                    read.records().forEach(r -> firstSeen.putIfAbsent(r.value(), e));
                }
            }
            firstSeen.forEach((value, seen) -> {
                Send send = sends.get(value);
                String why = send == null ? "never sent"
                        : send.failedDefinitely() ? "its send by producer " + send.invoke.process() + " failed definitely "
                        + t(send.outcome.nanoTime())
                        : seenAt.get(value).stream().anyMatch(at -> at.partition() != send.invoke.partition())
                        ? "sent to p" + send.invoke.partition() + " only" : null;
                if (why != null) {
                    tallies.get(Anomaly.UNEXPECTED).add(seen.nanoTime(), () -> value + ": " + why + ", yet seen at "
                            + seenAt.get(value).stream().map(at -> at + " (" + sourcesOf(at, value) + ")")
                            .collect(Collectors.joining(", ")));
                }
            });
        }

        private Report.Totals totals() {
            int acked = 0;
            int definite = 0;
            int indefinite = 0;
            int unresolved = 0;
            int landed = 0;
            for (Send send : sends.values()) {
                if (send.ok() != null) {
                    acked++;
                } else if (send.failedDefinitely()) {
                    definite++;
                } else if (send.outcome == null) {
                    unresolved++;
                } else {
                    indefinite++;
                }
                if (send.indefinite() && finalOffset(send.invoke.value(), send.invoke.partition()) >= 0) {
                    landed++;
                }
            }
            TreeMap<Integer, Integer> perPartition = new TreeMap<>();
            readPartitions.forEach(p -> perPartition.put(p, 0));
            finalPositions.forEach(at -> perPartition.merge(at.partition(), 1, Integer::sum));
            return new Report.Totals(sends.size(), acked, definite, indefinite, unresolved, landed, polls.size(), perPartition);
        }

        /** The lowest offset of {@code value} in the final read of {@code partition}, or -1. */
        private long finalOffset(String value, int partition) {
            long lowest = -1;
            for (Position at : finalAt.get(value)) {
                if (at.partition() == partition && (lowest < 0 || at.offset() < lowest)) {
                    lowest = at.offset();
                }
            }
            return lowest;
        }

        // ------------------------------------------------------------------ examples (built lazily, once per kind)

        private String t(long nanoTime) {
            return String.format("t=%.3fms", (nanoTime - t0) / 1e6);
        }

        /** Who reported {@code value} at {@code at}: acks, polls (first and how many), the final read. */
        private String sourcesOf(Position at, String value) {
            List<String> sources = new ArrayList<>();
            Poll firstPoll = null;
            int pollCount = 0;
            boolean inFinal = false;
            for (Event e : events) {
                if (e instanceof SendOk ok && ok.value().equals(value) && ok.partition() == at.partition()
                        && ok.offset() == at.offset()) {
                    sources.add("acked to producer " + ok.process() + " " + t(ok.nanoTime()));
                } else if (e instanceof Poll poll && poll.value().equals(value) && poll.partition() == at.partition()
                        && poll.offset() == at.offset()) {
                    firstPoll = firstPoll == null ? poll : firstPoll;
                    pollCount++;
                } else if (e instanceof FinalRead read && read.partition() == at.partition()) {
                    inFinal |= read.records().contains(new OffsetValue(at.offset(), value));
                }
            }
            if (firstPoll != null) {
                sources.add("polled by consumer " + firstPoll.process() + " " + t(firstPoll.nanoTime())
                        + (pollCount > 1 ? ", " + pollCount + " polls" : ""));
            }
            if (inFinal) {
                sources.add("final read");
            }
            return String.join("; ", sources);
        }

        /** What the final read holds at {@code at}, or how far that partition's final read goes. */
        private String finalContext(Position at) {
            Set<String> there = new LinkedHashSet<>();
            long count = 0;
            long max = -1;
            for (Event e : events) {
                if (e instanceof FinalRead read && read.partition() == at.partition()) {
                    for (OffsetValue record : read.records()) {
                        count++;
                        max = Math.max(max, record.offset());
                        if (record.offset() == at.offset()) {
                            there.add(record.value());
                        }
                    }
                }
            }
            return there.isEmpty()
                    ? "at " + at + " the final read has nothing (" + count + " records of p" + at.partition()
                    + ", last offset " + max + ")"
                    : "at " + at + " the final read has " + String.join(", ", there);
        }

        private String finalElsewhere(String value) {
            Set<Position> elsewhere = finalAt.get(value);
            return elsewhere.isEmpty() ? "" : "; the final read has it at " + elsewhere;
        }
    }
}
