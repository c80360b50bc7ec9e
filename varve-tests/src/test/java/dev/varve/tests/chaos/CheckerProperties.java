package dev.varve.tests.chaos;

import dev.varve.tests.chaos.History.Event;
import dev.varve.tests.chaos.History.FinalRead;
import dev.varve.tests.chaos.History.OffsetValue;
import dev.varve.tests.chaos.History.Poll;
import dev.varve.tests.chaos.History.SendFail;
import dev.varve.tests.chaos.History.SendInvoke;
import dev.varve.tests.chaos.History.SendOk;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Random histories from a model log are valid; the same histories with one anomaly of a given kind
 * injected report exactly that kind.
 *
 * <p>The model: a few producers send to a few partitions with several sends in flight at once. A send
 * is appended to its partition's log at some moment between its invoke and its outcome (or not at all);
 * an appended send is acked or fails indefinitely, one never appended fails definitely or indefinitely,
 * and sends still in flight at the end stay unresolved, appended or not. Consumers poll the log from a
 * position they sometimes rewind. At the end every partition is read, in one chunk or two overlapping
 * ones. Anything appended counts as committed, so every poll is of a committed prefix.
 *
 * <p>The jqwik seed is fixed, so every run explores the same histories; a failure prints the
 * generator seed, which replays with {@code generate(new Random(seed))}.
 */
class CheckerProperties {
    private static final int INJECTED_PRODUCER = 900;
    private static final int INJECTED_CONSUMER = 999;

    /** Events and what the model knows about them. */
    record Generated(List<Event> events, int acked, int indefiniteLanded) {
    }

    @Property(tries = 400)
    void modelHistoriesAreValid(@ForAll long seed) {
        Generated generated = generate(new Random(seed));

        Report report = Checker.check(History.of(generated.events()), Checker.Options.defaults());

        assertThat(report.valid()).as("seed %d:%n%s", seed, report).isTrue();
        assertThat(report.liveness().complete()).as("seed %d", seed).isTrue();
        assertThat(report.totals().acked()).isEqualTo(generated.acked());
        assertThat(report.totals().indefiniteLanded()).isEqualTo(generated.indefiniteLanded());
    }

    @Property(tries = 600)
    void oneInjectedAnomalyIsReportedAsExactlyItsKind(@ForAll long seed, @ForAll Anomaly kind) {
        Random random = new Random(seed);
        List<Event> mutated = mutate(generate(random).events(), kind, random);

        Report report = Checker.check(History.of(mutated), Checker.Options.defaults());

        assertThat(report.found()).as("seed %d, %s:%n%s", seed, kind, report).containsExactly(kind);
        assertThat(report.firstExample(kind)).isPresent();
    }

    // ------------------------------------------------------------------ the model

    static Generated generate(Random random) {
        int partitions = 1 + random.nextInt(3);
        int producers = 1 + random.nextInt(3);
        int consumers = random.nextInt(3);
        List<List<String>> log = new ArrayList<>();
        for (int p = 0; p < partitions; p++) {
            log.add(new ArrayList<>());
        }
        List<Event> events = new ArrayList<>();
        List<InFlight> inFlight = new ArrayList<>();
        int[] sequence = new int[producers];
        long[][] position = new long[consumers][partitions];
        long t = 5_000_000_000L;
        int acked = 0;
        int landed = 0;

        // One acked send up front, so the final read is never empty.
        events.add(new SendInvoke(0, 0, "v0-" + sequence[0]++, t++));
        log.get(0).add("v0-0");
        events.add(new SendOk(0, 0, "v0-0", 0, t++));
        acked++;

        int steps = random.nextInt(300);
        for (int step = 0; step < steps; step++) {
            t += 1 + random.nextInt(1_000_000);
            int choice = random.nextInt(100);
            if (choice < 30) {
                int producer = random.nextInt(producers);
                InFlight send = new InFlight(producer, random.nextInt(partitions), "v" + producer + "-" + sequence[producer]++);
                inFlight.add(send);
                events.add(new SendInvoke(send.producer, send.partition, send.value, t));
            } else if (choice < 50) {
                List<InFlight> unappended = inFlight.stream().filter(s -> s.offset < 0).collect(Collectors.toList());
                if (!unappended.isEmpty()) {
                    InFlight send = unappended.get(random.nextInt(unappended.size()));
                    send.offset = log.get(send.partition).size();
                    log.get(send.partition).add(send.value);
                }
            } else if (choice < 75) {
                if (!inFlight.isEmpty()) {
                    InFlight send = inFlight.remove(random.nextInt(inFlight.size()));
                    if (send.offset >= 0 && random.nextInt(4) > 0) {
                        events.add(new SendOk(send.producer, send.partition, send.value, send.offset, t));
                        acked++;
                    } else {
                        boolean definite = send.offset < 0 && random.nextInt(5) < 3;
                        events.add(new SendFail(send.producer, send.partition, send.value, definite, t));
                        landed += send.offset >= 0 ? 1 : 0;
                    }
                }
            } else if (choice < 95) {
                if (consumers > 0) {
                    int consumer = random.nextInt(consumers);
                    int partition = random.nextInt(partitions);
                    long[] at = position[consumer];
                    if (random.nextInt(7) == 0) {
                        at[partition] = at[partition] == 0 ? 0 : random.nextInt((int) at[partition] + 1); // rewind
                    }
                    List<String> committed = log.get(partition);
                    for (int n = random.nextInt(6); n > 0 && at[partition] < committed.size(); n--, at[partition]++) {
                        int offset = (int) at[partition];
                        events.add(new Poll(100 + consumer, partition, offset, committed.get(offset), t++));
                    }
                }
            } else {
                events.add(new History.Heal(t));
            }
        }
        for (InFlight send : inFlight) { // unresolved at the end: may still land
            if (send.offset < 0 && random.nextBoolean()) {
                send.offset = log.get(send.partition).size();
                log.get(send.partition).add(send.value);
            }
            landed += send.offset >= 0 ? 1 : 0;
        }
        t += 1_000_000_000L;
        for (int p = 0; p < partitions; p++) {
            List<OffsetValue> records = new ArrayList<>();
            for (int offset = 0; offset < log.get(p).size(); offset++) {
                records.add(new OffsetValue(offset, log.get(p).get(offset)));
            }
            if (records.size() > 1 && random.nextBoolean()) { // two chunks sharing one record
                int cut = random.nextInt(records.size() - 1);
                events.add(new FinalRead(p, records.subList(0, cut + 1), t++));
                events.add(new FinalRead(p, records.subList(cut, records.size()), t++));
            } else {
                events.add(new FinalRead(p, records, t++));
            }
        }
        return new Generated(events, acked, landed);
    }

    private static final class InFlight {
        final int producer;
        final int partition;
        final String value;
        long offset = -1; // where it was appended; -1: not (yet)

        InFlight(int producer, int partition, String value) {
            this.producer = producer;
            this.partition = partition;
            this.value = value;
        }
    }

    // ------------------------------------------------------------------ mutations: each adds exactly one kind

    static List<Event> mutate(List<Event> events, Anomaly kind, Random random) {
        List<Event> out = new ArrayList<>(events);
        Map<Integer, TreeMap<Long, String>> log = finalLog(out);
        long t = out.stream().mapToLong(Event::nanoTime).max().orElseThrow() + 1_000;
        String fresh = "x" + random.nextInt(1_000_000);
        int partition = pick(random, List.copyOf(log.keySet()));
        List<SendOk> oks = out.stream().filter(e -> e instanceof SendOk).map(e -> (SendOk) e).collect(Collectors.toList());
        switch (kind) {
            case LOST -> { // the log forgets an acked value nobody polled, or an ack past its end
                Set<String> polled = out.stream().filter(e -> e instanceof Poll).map(e -> ((Poll) e).value())
                        .collect(Collectors.toSet());
                List<SendOk> unpolled = oks.stream().filter(ok -> !polled.contains(ok.value())).collect(Collectors.toList());
                if (!unpolled.isEmpty()) {
                    SendOk ok = pick(random, unpolled);
                    log.get(ok.partition()).remove(ok.offset());
                } else {
                    out.add(new SendInvoke(INJECTED_PRODUCER, partition, fresh, t));
                    out.add(new SendOk(INJECTED_PRODUCER, partition, fresh, end(log.get(partition)), t + 1));
                }
            }
            case DUPLICATE -> { // a copy of some record appended to its partition
                TreeMap<Long, String> nonEmpty = log.get(oks.get(0).partition());
                String value = pick(random, List.copyOf(nonEmpty.values()));
                nonEmpty.put(end(nonEmpty), value);
            }
            case REORDER -> reorder(out, log, oks, random, fresh, t);
            case INCONSISTENT_OFFSET -> { // an ack names an offset that holds another value
                List<SendOk> crowded = oks.stream().filter(ok -> log.get(ok.partition()).size() > 1).collect(Collectors.toList());
                if (!crowded.isEmpty()) {
                    SendOk ok = pick(random, crowded);
                    List<Long> others = log.get(ok.partition()).keySet().stream().filter(o -> o != ok.offset())
                            .collect(Collectors.toList());
                    out.set(out.indexOf(ok), new SendOk(ok.process(), ok.partition(), ok.value(), pick(random, others), ok.nanoTime()));
                } else {
                    SendOk victim = oks.get(0);
                    TreeMap<Long, String> p = log.get(victim.partition());
                    out.add(new SendInvoke(INJECTED_PRODUCER, victim.partition(), fresh, t));
                    out.add(new SendOk(INJECTED_PRODUCER, victim.partition(), fresh, victim.offset(), t + 1));
                    p.put(end(p), fresh);
                }
            }
            case LOST_READ -> { // an indefinite send read past the log end, then truncated away
                out.add(new SendInvoke(INJECTED_PRODUCER, partition, fresh, t));
                out.add(new SendFail(INJECTED_PRODUCER, partition, fresh, false, t + 1));
                out.add(new Poll(INJECTED_CONSUMER, partition, end(log.get(partition)), fresh, t + 2));
            }
            case UNEXPECTED -> { // a definitely failed or never sent value at the end of a partition
                List<SendFail> definite = out.stream().filter(e -> e instanceof SendFail f && f.definite())
                        .map(e -> (SendFail) e).collect(Collectors.toList());
                if (!definite.isEmpty() && random.nextBoolean()) {
                    SendFail fail = pick(random, definite);
                    log.get(fail.partition()).put(end(log.get(fail.partition())), fail.value());
                } else {
                    log.get(partition).put(end(log.get(partition)), fresh);
                }
            }
        }
        return withFinalLog(out, log);
    }

    /**
     * Swaps the offsets of two acked values of one producer and partition, the second invoked after the
     * first was acked, everywhere (acks, polls, final read); without such a pair, injects one at the end.
     */
    private static void reorder(List<Event> out, Map<Integer, TreeMap<Long, String>> log, List<SendOk> oks,
                                Random random, String fresh, long t) {
        Map<String, Long> invokedAt = new HashMap<>();
        out.stream().filter(e -> e instanceof SendInvoke).forEach(e -> invokedAt.put(((SendInvoke) e).value(), e.nanoTime()));
        List<SendOk[]> pairs = new ArrayList<>();
        for (SendOk a : oks) {
            for (SendOk b : oks) {
                if (a.process() == b.process() && a.partition() == b.partition() && a.nanoTime() < invokedAt.get(b.value())) {
                    pairs.add(new SendOk[] {a, b});
                }
            }
        }
        if (pairs.isEmpty()) {
            TreeMap<Long, String> p = log.get(oks.get(0).partition());
            int partition = oks.get(0).partition();
            long end = end(p);
            out.add(new SendInvoke(INJECTED_PRODUCER, partition, fresh + "a", t));
            out.add(new SendOk(INJECTED_PRODUCER, partition, fresh + "a", end + 1, t + 1));
            out.add(new SendInvoke(INJECTED_PRODUCER, partition, fresh + "b", t + 2));
            out.add(new SendOk(INJECTED_PRODUCER, partition, fresh + "b", end, t + 3));
            p.put(end, fresh + "b");
            p.put(end + 1, fresh + "a");
            return;
        }
        SendOk[] pair = pick(random, pairs);
        Map<String, Long> moved = Map.of(pair[0].value(), pair[1].offset(), pair[1].value(), pair[0].offset());
        out.replaceAll(e -> {
            if (e instanceof SendOk ok && moved.containsKey(ok.value())) {
                return new SendOk(ok.process(), ok.partition(), ok.value(), moved.get(ok.value()), ok.nanoTime());
            }
            if (e instanceof Poll poll && moved.containsKey(poll.value())) {
                return new Poll(poll.process(), poll.partition(), moved.get(poll.value()), poll.value(), poll.nanoTime());
            }
            return e;
        });
        moved.forEach((value, offset) -> log.get(pair[0].partition()).put(offset, value));
    }

    /** Every partition's final read merged into offset -> value. */
    private static Map<Integer, TreeMap<Long, String>> finalLog(List<Event> events) {
        Map<Integer, TreeMap<Long, String>> log = new TreeMap<>();
        for (Event e : events) {
            if (e instanceof FinalRead read) {
                TreeMap<Long, String> p = log.computeIfAbsent(read.partition(), k -> new TreeMap<>());
                read.records().forEach(r -> p.put(r.offset(), r.value()));
            }
        }
        return log;
    }

    /** {@code events} with their final reads replaced by one read per partition of {@code log}. */
    private static List<Event> withFinalLog(List<Event> events, Map<Integer, TreeMap<Long, String>> log) {
        long readAt = events.stream().filter(e -> e instanceof FinalRead).mapToLong(Event::nanoTime).min().orElseThrow();
        List<Event> out = events.stream().filter(e -> !(e instanceof FinalRead)).collect(Collectors.toList());
        log.forEach((partition, records) -> out.add(new FinalRead(partition, records.entrySet().stream()
                .map(r -> new OffsetValue(r.getKey(), r.getValue())).collect(Collectors.toList()), readAt)));
        return out;
    }

    private static long end(TreeMap<Long, String> partition) {
        return partition.isEmpty() ? 0 : partition.lastKey() + 1;
    }

    private static <T> T pick(Random random, List<T> from) {
        return from.get(random.nextInt(from.size()));
    }
}
