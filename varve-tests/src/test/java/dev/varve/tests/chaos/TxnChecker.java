package dev.varve.tests.chaos;

import dev.varve.tests.chaos.History.OffsetValue;
import dev.varve.tests.chaos.TxnHistory.Event;
import dev.varve.tests.chaos.TxnHistory.FinalRead;
import dev.varve.tests.chaos.TxnHistory.GroupOffsets;
import dev.varve.tests.chaos.TxnHistory.Heal;
import dev.varve.tests.chaos.TxnHistory.Outcome;
import dev.varve.tests.chaos.TxnHistory.Read;
import dev.varve.tests.chaos.TxnHistory.Txn;
import dev.varve.tests.chaos.TxnHistory.Write;

import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Supplier;
import java.util.stream.Collectors;

/**
 * Decides from a {@link TxnHistory} alone whether transactions were read aborted, torn, lost, applied
 * twice, or whether the consume-transform-produce loop's committed offsets disagree with its output; see
 * {@link TxnAnomaly}. Pure. Only what a correct Kafka-compatible broker can never show is flagged:
 * unknown transactions may land or not (all or nothing), checks that need a final read skip partitions
 * whose final read did not complete, and the offset checks run only when the group's offsets were
 * recorded after the processors stopped cleanly.
 *
 * <p>A malformed history (a value written twice, a transaction recorded twice) throws
 * {@link IllegalArgumentException}. Positions print as {@code topic/p<partition>@<offset>}.
 */
public final class TxnChecker {

    private TxnChecker() {
    }

    public static TxnReport check(TxnHistory history) {
        return new Analysis(history.events()).report();
    }

    private record Tp(String topic, int partition) {
        @Override
        public String toString() {
            return topic + "/p" + partition;
        }
    }

    private record Pos(String topic, int partition, long offset) {
        Tp tp() {
            return new Tp(topic, partition);
        }

        @Override
        public String toString() {
            return topic + "/p" + partition + "@" + offset;
        }
    }

    private static final class Tally {
        int count;
        long firstAt = Long.MAX_VALUE;
        Supplier<String> first;

        void add(long at, Supplier<String> example) {
            count++;
            if (first == null || at < firstAt) {
                firstAt = at;
                first = example;
            }
        }

        Report.Finding finding() {
            return count == 0 ? new Report.Finding(0, null) : new Report.Finding(count, first.get());
        }
    }

    private static final class Analysis {
        private final List<Event> events;
        private final long t0;
        private final OptionalLong lastHeal;
        private final Map<TxnAnomaly, Tally> tallies = new EnumMap<>(TxnAnomaly.class);
        private final Map<String, Txn> txnOf = new HashMap<>();
        private final Map<String, Write> writeOf = new HashMap<>();
        private final List<Txn> txns = new ArrayList<>();
        private final List<Read> reads = new ArrayList<>();
        private final Map<Tp, List<OffsetValue>> finals = new LinkedHashMap<>();
        private final Set<Tp> complete = new HashSet<>();
        private final Set<Tp> incomplete = new HashSet<>();
        /** Positions of each value in the final read. */
        private final Map<String, Set<Pos>> finalAt = new HashMap<>();
        /** Positions of each value anywhere (reads and final read), and the first time it was seen. */
        private final Map<String, Set<Pos>> seenAt = new LinkedHashMap<>();
        private final Map<String, Long> firstSeen = new HashMap<>();
        private GroupOffsets groupOffsets;

        Analysis(List<Event> events) {
            this.events = events;
            this.t0 = events.stream().mapToLong(Event::nanoTime).min().orElse(0);
            this.lastHeal = events.stream().filter(e -> e instanceof Heal).mapToLong(Event::nanoTime).max();
            for (TxnAnomaly kind : TxnAnomaly.values()) {
                tallies.put(kind, new Tally());
            }
            index();
        }

        private void index() {
            for (Event e : events) {
                if (e instanceof Txn txn) {
                    txns.add(txn);
                    for (Write w : txn.writes()) {
                        if (txnOf.putIfAbsent(w.value(), txn) != null) {
                            throw new IllegalArgumentException("malformed history: " + w.value() + " written twice: " + e);
                        }
                        writeOf.put(w.value(), w);
                    }
                } else if (e instanceof Read read) {
                    reads.add(read);
                    seen(read.value(), new Pos(read.topic(), read.partition(), read.offset()), read.nanoTime());
                } else if (e instanceof FinalRead read) {
                    Tp tp = new Tp(read.topic(), read.partition());
                    finals.computeIfAbsent(tp, k -> new ArrayList<>()).addAll(read.records());
                    (read.complete() ? complete : incomplete).add(tp);
                    for (OffsetValue r : read.records()) {
                        Pos at = new Pos(read.topic(), read.partition(), r.offset());
                        finalAt.computeIfAbsent(r.value(), k -> new LinkedHashSet<>()).add(at);
                        seen(r.value(), at, read.nanoTime());
                    }
                } else if (e instanceof GroupOffsets offsets) {
                    groupOffsets = offsets;
                }
            }
            complete.removeAll(incomplete); // one incomplete chunk makes the partition's final read incomplete
        }

        private void seen(String value, Pos at, long nanoTime) {
            seenAt.computeIfAbsent(value, k -> new LinkedHashSet<>()).add(at);
            firstSeen.merge(value, nanoTime, Math::min);
        }

        private boolean inFinal(String value, Tp tp) {
            return finalAt.getOrDefault(value, Set.of()).stream().anyMatch(at -> at.tp().equals(tp));
        }

        private static boolean isProcessor(Txn txn) {
            return txn.writes().stream().anyMatch(w -> w.topic().equals(TxnHistory.OUTPUT));
        }

        TxnReport report() {
            abortedReads();
            tornAndLost();
            duplicates();
            skippedReads();
            offsets();
            Map<TxnAnomaly, Report.Finding> findings = new EnumMap<>(TxnAnomaly.class);
            tallies.forEach((kind, tally) -> findings.put(kind, tally.finding()));
            return new TxnReport(findings, totals());
        }

        private void add(TxnAnomaly kind, long at, Supplier<String> example) {
            tallies.get(kind).add(at, example);
        }

        private void abortedReads() {
            seenAt.forEach((value, positions) -> {
                Txn txn = txnOf.get(value);
                Write w = writeOf.get(value);
                String why = txn == null ? "written by no transaction"
                        : txn.outcome() == Outcome.ABORTED ? "its transaction " + describe(txn) + " was aborted"
                        : positions.stream().anyMatch(at -> !at.tp().equals(new Tp(w.topic(), w.partition())))
                        ? "written to " + new Tp(w.topic(), w.partition()) + " only" : null;
                if (why != null) {
                    add(TxnAnomaly.ABORTED_READ, firstSeen.get(value), () -> value + ": " + why + ", yet seen at "
                            + sources(value));
                }
            });
        }

        private void tornAndLost() {
            Set<String> lost = new HashSet<>();
            for (Txn txn : txns) {
                if (txn.outcome() == Outcome.ABORTED || txn.writes().isEmpty()) {
                    continue;
                }
                if (!txn.writes().stream().allMatch(w -> complete.contains(new Tp(w.topic(), w.partition())))) {
                    continue;
                }
                List<Write> present = txn.writes().stream().filter(w -> inFinal(w.value(), new Tp(w.topic(), w.partition()))).toList();
                List<Write> missing = txn.writes().stream().filter(w -> !present.contains(w)).toList();
                if (!present.isEmpty() && !missing.isEmpty()) {
                    add(TxnAnomaly.TORN_TRANSACTION, txn.nanoTime(), () -> describe(txn) + ": the final read has "
                            + present.stream().map(w -> w.value() + " at " + finalAt.get(w.value())).collect(Collectors.joining(", "))
                            + " but not " + missing.stream().map(w -> w.value() + " (" + new Tp(w.topic(), w.partition()) + ")")
                            .collect(Collectors.joining(", ")));
                }
                if (txn.outcome() == Outcome.COMMITTED) {
                    for (Write w : missing) {
                        lost.add(w.value());
                        add(TxnAnomaly.LOST_WRITE, txn.nanoTime(), () -> w.value() + " of " + describe(txn)
                                + " is not in the final read of " + new Tp(w.topic(), w.partition()) + finalSize(new Tp(w.topic(), w.partition())));
                    }
                }
            }
            for (Read read : reads) {
                Tp tp = new Tp(read.topic(), read.partition());
                Txn txn = txnOf.get(read.value());
                Write w = writeOf.get(read.value());
                if (txn == null || txn.outcome() == Outcome.ABORTED || !tp.equals(new Tp(w.topic(), w.partition()))) {
                    continue; // an aborted read
                }
                if (complete.contains(tp) && !inFinal(read.value(), tp) && lost.add(read.value())) {
                    add(TxnAnomaly.LOST_WRITE, read.nanoTime(), () -> read.value() + " received by read_committed consumer "
                            + read.process() + " at " + new Pos(read.topic(), read.partition(), read.offset()) + " " + t(read.nanoTime())
                            + ", not in the final read of " + tp + finalSize(tp));
                }
            }
        }

        private void duplicates() {
            Set<String> counted = new HashSet<>();
            seenAt.forEach((value, positions) -> {
                if (positions.size() > 1 && counted.add(value)) {
                    add(TxnAnomaly.DUPLICATE, firstSeen.get(value), () -> value + " at " + positions.size()
                            + " positions: " + sources(value));
                }
            });
            Map<String, List<String>> derived = new LinkedHashMap<>();
            finals.forEach((tp, records) -> {
                if (tp.topic().equals(TxnHistory.OUTPUT)) {
                    for (OffsetValue r : records) {
                        String input = TxnHistory.inputOf(r.value());
                        if (input != null) {
                            derived.computeIfAbsent(input, k -> new ArrayList<>()).add(r.value() + " at " + tp + "@" + r.offset());
                        }
                    }
                }
            });
            derived.forEach((input, outputs) -> {
                if (outputs.size() > 1 && counted.add(input)) {
                    add(TxnAnomaly.DUPLICATE, firstSeen.getOrDefault(input, 0L), () -> "input " + input
                            + " was processed into " + outputs.size() + " committed records: " + outputs);
                }
            });
        }

        private void skippedReads() {
            record Stream(int process, Tp tp) {
            }
            Map<Stream, TreeSet<Long>> offsets = new LinkedHashMap<>();
            for (Read read : reads) {
                if (read.ordered()) {
                    offsets.computeIfAbsent(new Stream(read.process(), new Tp(read.topic(), read.partition())),
                            k -> new TreeSet<>()).add(read.offset());
                }
            }
            offsets.forEach((stream, seen) -> {
                if (!complete.contains(stream.tp()) || seen.size() < 2) {
                    return;
                }
                long lo = seen.first();
                long hi = seen.last();
                for (OffsetValue r : finals.get(stream.tp())) {
                    Txn txn = txnOf.get(r.value());
                    if (txn == null || txn.outcome() == Outcome.ABORTED) {
                        continue; // not a committed record: an aborted read
                    }
                    if (r.offset() > lo && r.offset() < hi && !seen.contains(r.offset())) {
                        Long before = seen.lower(r.offset());
                        Long after = seen.higher(r.offset());
                        add(TxnAnomaly.SKIPPED_READ, readTime(stream.process(), stream.tp(), after), () -> "reader "
                                + stream.process() + " received " + stream.tp() + "@" + before + " and @" + after
                                + " but not " + r.value() + " at @" + r.offset() + " (in the final read, of "
                                + describe(txn) + ")");
                    }
                }
            });
        }

        private long readTime(int process, Tp tp, long offset) {
            for (Read read : reads) {
                if (read.process() == process && read.offset() == offset && new Tp(read.topic(), read.partition()).equals(tp)) {
                    return read.nanoTime();
                }
            }
            return 0;
        }

        private boolean offsetsJudgeable() {
            if (groupOffsets == null) {
                return false;
            }
            Set<Tp> all = new HashSet<>(finals.keySet());
            return !all.isEmpty() && complete.containsAll(all)
                    && all.stream().anyMatch(tp -> tp.topic().equals(TxnHistory.INPUT))
                    && all.stream().anyMatch(tp -> tp.topic().equals(TxnHistory.OUTPUT));
        }

        private void offsets() {
            if (!offsetsJudgeable()) {
                return;
            }
            Map<Integer, Long> committed = groupOffsets.committed();
            Map<String, String> outputOf = new HashMap<>();
            finals.forEach((tp, records) -> {
                if (tp.topic().equals(TxnHistory.OUTPUT)) {
                    records.forEach(r -> {
                        String input = TxnHistory.inputOf(r.value());
                        if (input != null) {
                            outputOf.putIfAbsent(input, r.value());
                        }
                    });
                }
            });
            finals.forEach((tp, records) -> {
                if (!tp.topic().equals(TxnHistory.INPUT)) {
                    return;
                }
                long upTo = committed.getOrDefault(tp.partition(), 0L);
                for (OffsetValue r : records) {
                    if (r.offset() < upTo && !outputOf.containsKey(r.value())) {
                        add(TxnAnomaly.OFFSET_WITHOUT_OUTPUT, firstSeen.getOrDefault(r.value(), 0L), () -> "the group committed "
                                + tp + " up to " + upTo + ", covering " + r.value() + " at @" + r.offset()
                                + ", but the final read of " + TxnHistory.OUTPUT + " has no record derived from it");
                    }
                }
            });
            finals.forEach((tp, records) -> {
                if (!tp.topic().equals(TxnHistory.OUTPUT)) {
                    return;
                }
                for (OffsetValue r : records) {
                    String input = TxnHistory.inputOf(r.value());
                    if (input == null) {
                        continue;
                    }
                    Pos in = finalAt.getOrDefault(input, Set.of()).stream()
                            .filter(at -> at.topic().equals(TxnHistory.INPUT)).findFirst().orElse(null);
                    long upTo = in == null ? -1 : committed.getOrDefault(in.partition(), 0L);
                    if (in == null || in.offset() >= upTo) {
                        String why = in == null ? "whose input " + input + " is not in the final read of " + TxnHistory.INPUT
                                : "whose input " + input + " is at " + in + ", at or beyond the group's committed offset " + upTo;
                        add(TxnAnomaly.OUTPUT_WITHOUT_OFFSET, firstSeen.getOrDefault(r.value(), 0L), () -> r.value()
                                + " at " + tp + "@" + r.offset() + " " + why);
                    }
                }
            });
        }

        private TxnReport.Totals totals() {
            int[] writer = new int[3];
            int[] processor = new int[3];
            int landed = 0;
            int writerAfterHeal = 0;
            int processorAfterHeal = 0;
            for (Txn txn : txns) {
                boolean p = isProcessor(txn);
                (p ? processor : writer)[txn.outcome().ordinal()]++;
                if (txn.outcome() == Outcome.UNKNOWN && txn.writes().stream().anyMatch(w -> finalAt.containsKey(w.value()))) {
                    landed++;
                }
                if (txn.outcome() == Outcome.COMMITTED && lastHeal.isPresent() && txn.nanoTime() > lastHeal.getAsLong()) {
                    if (p) {
                        processorAfterHeal++;
                    } else {
                        writerAfterHeal++;
                    }
                }
            }
            int in = 0;
            int out = 0;
            for (Map.Entry<Tp, List<OffsetValue>> e : finals.entrySet()) {
                if (e.getKey().topic().equals(TxnHistory.INPUT)) {
                    in += e.getValue().size();
                } else {
                    out += e.getValue().size();
                }
            }
            boolean finalComplete = !finals.isEmpty() && incomplete.isEmpty();
            return new TxnReport.Totals(writer[0], writer[1], writer[2], processor[0], processor[1], processor[2], landed,
                    writerAfterHeal, processorAfterHeal, reads.size(), in, out, finalComplete, offsetsJudgeable());
        }

        // ------------------------------------------------------------------ examples

        private String t(long nanoTime) {
            return String.format("t=%.3fms", (nanoTime - t0) / 1e6);
        }

        private String describe(Txn txn) {
            return "transaction " + txn.name() + " of client " + txn.process() + " (" + txn.outcome() + " " + t(txn.nanoTime())
                    + ", " + txn.writes().size() + " writes)";
        }

        private String finalSize(Tp tp) {
            List<OffsetValue> records = finals.getOrDefault(tp, List.of());
            return " (" + records.size() + " records" + (records.isEmpty() ? "" : ", last offset "
                    + records.get(records.size() - 1).offset()) + ")";
        }

        /** Where {@code value} was seen: by which consumers (first time) and the final read. */
        private String sources(String value) {
            Map<Pos, List<String>> by = new LinkedHashMap<>();
            for (Read read : reads) {
                if (read.value().equals(value)) {
                    List<String> s = by.computeIfAbsent(new Pos(read.topic(), read.partition(), read.offset()), k -> new ArrayList<>());
                    String who = "consumer " + read.process();
                    if (s.stream().noneMatch(x -> x.startsWith(who + " "))) {
                        s.add(who + " " + t(read.nanoTime()));
                    }
                }
            }
            for (Pos at : finalAt.getOrDefault(value, Set.of())) {
                by.computeIfAbsent(at, k -> new ArrayList<>()).add("final read");
            }
            return by.entrySet().stream().map(e -> e.getKey() + " (" + String.join("; ", e.getValue()) + ")")
                    .collect(Collectors.joining(", "));
        }
    }
}
