package dev.varve.tests.chaos;

import dev.varve.tests.chaos.GroupHistory.Acked;
import dev.varve.tests.chaos.GroupHistory.Assigned;
import dev.varve.tests.chaos.GroupHistory.Commit;
import dev.varve.tests.chaos.GroupHistory.Delivered;
import dev.varve.tests.chaos.GroupHistory.Event;
import dev.varve.tests.chaos.GroupHistory.FinalOffsets;
import dev.varve.tests.chaos.GroupHistory.Heal;
import dev.varve.tests.chaos.GroupHistory.Lost;
import dev.varve.tests.chaos.GroupHistory.Revoked;
import dev.varve.tests.chaos.GroupHistory.Settled;
import dev.varve.tests.chaos.GroupHistory.Stalled;
import dev.varve.tests.chaos.GroupHistory.Started;
import dev.varve.tests.chaos.GroupHistory.Stop;
import dev.varve.tests.chaos.GroupHistory.Stopped;
import dev.varve.tests.chaos.GroupHistory.Subscription;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Supplier;

/**
 * Decides from a {@link GroupHistory} alone whether a KIP-848 consumer group gave a partition to two members
 * at once, accepted a fenced member's commit, let a committed offset go backwards or moved past acknowledged
 * records nobody read; see {@link GroupAnomaly}. Pure.
 *
 * <p>Ownership: member {@code m} owns partition {@code p} from its onPartitionsAssigned naming {@code p} to its
 * onPartitionsRevoked or onPartitionsLost naming {@code p}, or to its {@link Stopped} (a crashed member stops
 * acting at once). Kafka's consumer protocol revokes before it assigns, so two intervals of a partition may
 * only overlap when the earlier owner was fenced, or left when its poll interval expired, without knowing it
 * yet (a zombie): its interval then ends with onPartitionsLost, or with a revocation that it ran late, after
 * the coordinator had fenced it, and the onPartitionsLost that follows names the partition again. A member
 * back from a stall past its poll interval (it left the group meanwhile) may also run, in its next poll, an
 * onPartitionsAssigned it had queued before, then its onPartitionsLost: that late assignment ends at the
 * onPartitionsLost. Such overlaps are counted, not flagged; any other overlap is a
 * {@link GroupAnomaly#DOUBLE_OWNER}. The workload
 * stops a member only right after one of its commits succeeded (the coordinator had just accepted its member
 * epoch), so a stop never ends the interval of a zombie.
 *
 * <p>Offsets: the register "committed offset of p" is observed by every successful commit (it holds the
 * committed value at some instant between send and answer), by the first record a newly assigned owner is
 * delivered (it resumed at the committed offset it read back), and by the final Admin read. A correct
 * coordinator only ever moves it forward, since only the current owner commits and the next owner resumes
 * where it committed; failed commits (which may have landed) are not observations.
 *
 * <p>Times print as milliseconds since the first event.
 */
public final class GroupChecker {

    private GroupChecker() {
    }

    public static GroupReport check(GroupHistory history) {
        return new Analysis(history.events()).report();
    }

    /** How an ownership interval ended. */
    private enum End {
        REVOKED, LOST, STOPPED, OPEN
    }

    private static final class Interval {
        final String member;
        final int partition;
        final long start;
        long end = Long.MAX_VALUE;
        End how = End.OPEN;
        String stop = "";
        /** Revoked, then an onPartitionsLost of the same member named the partition again: fenced while revoking. */
        boolean lostAfterRevoke;
        /**
         * Opened by an onPartitionsAssigned that the member ran in its first poll after a stall past its poll
         * interval and that an onPartitionsLost followed in that same poll: an assignment of the membership it had
         * already lost (the client leaves the group when the poll interval expires and runs the callbacks it had
         * queued when it polls again). Ends at that onPartitionsLost.
         */
        boolean stale;
        long firstDeliveryAt = Long.MAX_VALUE;
        long firstDeliveryOffset = -1;

        Interval(String member, int partition, long start) {
            this.member = member;
            this.partition = partition;
            this.start = start;
        }

        boolean fenced() {
            return how == End.LOST || (how == End.REVOKED && lostAfterRevoke);
        }

        /** An interval whose overlaps Kafka's semantics explain: it belonged to a fenced member. */
        boolean explained() {
            return fenced() || stale;
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
        private final Map<GroupAnomaly, Tally> tallies = new EnumMap<>(GroupAnomaly.class);
        private final Tally zombies = new Tally();
        private final Map<String, List<Event>> byMember = new LinkedHashMap<>();
        private final Map<String, Acked> acked = new HashMap<>();
        private final Map<String, List<Delivered>> deliveries = new HashMap<>();
        private final Map<Integer, List<Commit>> okCommits = new TreeMap<>();
        private final Map<Integer, List<Interval>> intervals = new TreeMap<>();
        private final Map<String, Started> started = new LinkedHashMap<>();
        private final Map<String, Stopped> stopped = new HashMap<>();
        private int commitsFailed;
        private int delivered;
        private int assigned;
        private int revoked;
        private int lost;
        private int stalls;
        private Settled settled;
        private FinalOffsets finalOffsets;
        private Heal heal;

        Analysis(List<Event> unordered) {
            List<Event> sorted = new ArrayList<>(unordered);
            sorted.sort(Comparator.comparingLong(Event::nanoTime)); // stable: a thread's events keep their order
            this.events = sorted;
            this.t0 = sorted.isEmpty() ? 0 : sorted.get(0).nanoTime();
            for (GroupAnomaly kind : GroupAnomaly.values()) {
                tallies.put(kind, new Tally());
            }
            index();
            ownership();
        }

        private void index() {
            for (Event e : events) {
                if (e instanceof Acked a) {
                    if (acked.putIfAbsent(a.value(), a) != null) {
                        throw new IllegalArgumentException("malformed history: " + a.value() + " acknowledged twice: " + e);
                    }
                } else if (e instanceof Started s) {
                    if (started.putIfAbsent(s.member(), s) != null) {
                        throw new IllegalArgumentException("malformed history: member " + s.member() + " started twice");
                    }
                    member(s.member()).add(e);
                } else if (e instanceof Assigned a) {
                    assigned++;
                    member(a.member()).add(e);
                } else if (e instanceof Revoked r) {
                    revoked++;
                    member(r.member()).add(e);
                } else if (e instanceof Lost l) {
                    lost++;
                    member(l.member()).add(e);
                } else if (e instanceof Delivered d) {
                    delivered++;
                    deliveries.computeIfAbsent(d.value(), k -> new ArrayList<>()).add(d);
                    member(d.member()).add(e);
                } else if (e instanceof Commit c) {
                    if (c.ok()) {
                        c.offsets().keySet().forEach(p -> okCommits.computeIfAbsent(p, k -> new ArrayList<>()).add(c));
                    } else {
                        commitsFailed++;
                    }
                    member(c.member()).add(e);
                } else if (e instanceof Stalled s) {
                    stalls++;
                    member(s.member()).add(e);
                } else if (e instanceof Stopped s) {
                    stopped.putIfAbsent(s.member(), s);
                    member(s.member()).add(e);
                } else if (e instanceof Settled s) {
                    settled = s;
                } else if (e instanceof FinalOffsets f) {
                    finalOffsets = f;
                } else if (e instanceof Heal h) {
                    heal = h;
                }
            }
        }

        private List<Event> member(String name) {
            return byMember.computeIfAbsent(name, k -> new ArrayList<>());
        }

        /** Builds every member's ownership intervals from its own events, in order. */
        private void ownership() {
            byMember.forEach((name, memberEvents) -> {
                Map<Integer, Interval> open = new HashMap<>();
                Map<Integer, Interval> revokedLast = new HashMap<>(); // partition -> its interval just revoked
                boolean afterStall = false; // from a stall to the member's first delivery or successful commit
                List<Interval> openedAfterStall = new ArrayList<>();
                for (Event e : memberEvents) {
                    if (e instanceof Stalled) {
                        afterStall = true;
                        openedAfterStall.clear();
                    } else if (e instanceof Delivered || (e instanceof Commit c && c.ok())) {
                        afterStall = false;
                        openedAfterStall.clear();
                    }
                    if (e instanceof Assigned a) {
                        for (int p : a.partitions()) {
                            if (!open.containsKey(p)) {
                                Interval i = new Interval(name, p, a.nanoTime());
                                open.put(p, i);
                                intervals.computeIfAbsent(p, k -> new ArrayList<>()).add(i);
                                revokedLast.remove(p);
                                if (afterStall) {
                                    openedAfterStall.add(i);
                                }
                            }
                        }
                    } else if (e instanceof Revoked r) {
                        for (int p : r.partitions()) {
                            Interval i = open.remove(p);
                            if (i != null) {
                                close(i, End.REVOKED, r.nanoTime(), "");
                                revokedLast.put(p, i);
                            }
                        }
                    } else if (e instanceof Lost l) {
                        for (int p : l.partitions()) {
                            Interval i = open.remove(p);
                            if (i != null) {
                                close(i, End.LOST, l.nanoTime(), "");
                            } else if (revokedLast.containsKey(p)) {
                                revokedLast.remove(p).lostAfterRevoke = true;
                            }
                        }
                        for (Interval i : openedAfterStall) {
                            if (open.remove(i.partition, i)) {
                                close(i, End.LOST, l.nanoTime(), "");
                                i.stale = true;
                            }
                        }
                        openedAfterStall.clear();
                    } else if (e instanceof Delivered d) {
                        Interval i = open.get(d.partition());
                        if (i != null && d.nanoTime() < i.firstDeliveryAt) {
                            i.firstDeliveryAt = d.nanoTime();
                            i.firstDeliveryOffset = d.offset();
                        }
                    } else if (e instanceof Stopped s) {
                        for (Interval i : open.values()) {
                            close(i, End.STOPPED, s.nanoTime(), s.how().name());
                        }
                        open.clear();
                        revokedLast.clear();
                    }
                }
            });
            intervals.values().forEach(list -> list.sort(Comparator.comparingLong(i -> i.start)));
        }

        private static void close(Interval i, End how, long at, String stop) {
            i.end = at;
            i.how = how;
            i.stop = stop;
        }

        private void add(GroupAnomaly kind, long at, Supplier<String> example) {
            tallies.get(kind).add(at, example);
        }

        GroupReport report() {
            overlaps();
            commitsForward();
            resumes();
            finalOffsetsForward();
            skipped();
            Map<GroupAnomaly, Report.Finding> findings = new EnumMap<>(GroupAnomaly.class);
            tallies.forEach((kind, tally) -> findings.put(kind, tally.finding()));
            return new GroupReport(findings, totals());
        }

        // ------------------------------------------------------------------ ownership

        private void overlaps() {
            intervals.forEach((p, list) -> {
                for (int a = 0; a < list.size(); a++) {
                    Interval first = list.get(a);
                    for (int b = a + 1; b < list.size(); b++) {
                        Interval second = list.get(b);
                        if (second.start >= first.end) {
                            break; // sorted by start: no later interval overlaps the first one either
                        }
                        if (second.stale) {
                            // a late assignment of a member that had already left: never a real owner, so the
                            // first owner's commits meanwhile are its own (seed 23696867653538)
                            zombies.add(second.start, () -> "p" + p + ": " + describe(first) + " overlapped " + describe(second));
                        } else if (first.fenced()) {
                            zombies.add(second.start, () -> "p" + p + ": " + describe(first) + " overlapped " + describe(second));
                            zombieCommits(first, second);
                        } else {
                            add(GroupAnomaly.DOUBLE_OWNER, second.start, () -> "p" + p + ": " + describe(first)
                                    + ", yet " + describe(second));
                        }
                    }
                }
            });
        }

        /**
         * The first successful commit of the zombie {@code first} sent once {@code second} owned the partition, if any:
         * the coordinator still took that member's commits after it had given the partition away.
         */
        private void zombieCommits(Interval first, Interval second) {
            Commit accepted = null;
            for (Commit c : okCommits.getOrDefault(first.partition, List.of())) {
                if (c.member().equals(first.member) && c.startNanos() >= second.start && c.startNanos() < first.end
                        && (accepted == null || c.startNanos() < accepted.startNanos())) {
                    accepted = c;
                }
            }
            if (accepted != null) {
                Commit c = accepted;
                add(GroupAnomaly.ZOMBIE_COMMIT, c.startNanos(), () -> first.member + " committed p" + first.partition
                        + " at " + c.offsets().get(first.partition) + " (sent " + t(c.startNanos()) + ", ok "
                        + t(c.nanoTime()) + ") although " + second.member + " had been assigned it " + t(second.start)
                        + " (" + describe(second) + "); " + describe(first));
            }
        }

        private String describe(Interval i) {
            String end = switch (i.how) {
                case REVOKED -> "revoked " + t(i.end) + (i.lostAfterRevoke ? ", then lost" : "");
                case LOST -> (i.stale ? "lost (a late assignment after a stall) " : "lost ") + t(i.end);
                case STOPPED -> "stopped (" + i.stop + ") " + t(i.end);
                default -> "still owned at the end";
            };
            return i.member + " owned it from " + t(i.start) + " to " + end;
        }

        // ------------------------------------------------------------------ offsets

        /** A successful commit lower than one that completed before it was sent. */
        private void commitsForward() {
            okCommits.forEach((p, commits) -> {
                List<Commit> byEnd = new ArrayList<>(commits);
                byEnd.sort(Comparator.comparingLong(Commit::nanoTime));
                List<Commit> byStart = new ArrayList<>(commits);
                byStart.sort(Comparator.comparingLong(Commit::startNanos));
                int done = 0;
                Commit highest = null;
                for (Commit c : byStart) {
                    while (done < byEnd.size() && byEnd.get(done).nanoTime() < c.startNanos()) {
                        Commit d = byEnd.get(done++);
                        if (highest == null || d.offsets().get(p) > highest.offsets().get(p)) {
                            highest = d;
                        }
                    }
                    if (highest != null && c.offsets().get(p) < highest.offsets().get(p)) {
                        Commit before = highest;
                        add(GroupAnomaly.OFFSET_BACKWARDS, c.nanoTime(), () -> c.member() + " committed p" + p + " at "
                                + c.offsets().get(p) + " (sent " + t(c.startNanos()) + ", ok " + t(c.nanoTime()) + ") after "
                                + before.member() + "'s commit at " + before.offsets().get(p) + " had succeeded "
                                + t(before.nanoTime()));
                    }
                }
            });
        }

        /** The highest successful commit of {@code p} answered before {@code at}, or null. */
        private Commit highestBefore(int p, long at) {
            Commit highest = null;
            for (Commit c : okCommits.getOrDefault(p, List.of())) {
                if (c.nanoTime() < at && (highest == null || c.offsets().get(p) > highest.offsets().get(p))) {
                    highest = c;
                }
            }
            return highest;
        }

        /** A new owner's first record below a commit that completed before it was assigned the partition. */
        private void resumes() {
            intervals.forEach((p, list) -> {
                for (Interval i : list) {
                    if (i.firstDeliveryOffset < 0) {
                        continue;
                    }
                    Commit before = highestBefore(p, i.start);
                    if (before != null && i.firstDeliveryOffset < before.offsets().get(p)) {
                        add(GroupAnomaly.OFFSET_BACKWARDS, i.firstDeliveryAt, () -> i.member + ", assigned p" + p + " "
                                + t(i.start) + ", was first delivered offset " + i.firstDeliveryOffset + " " + t(i.firstDeliveryAt)
                                + ", below " + before.member() + "'s commit at " + before.offsets().get(p)
                                + " that had succeeded " + t(before.nanoTime()));
                    }
                }
            });
        }

        /** The final committed offset (Admin) below a successful commit, or missing. */
        private void finalOffsetsForward() {
            if (finalOffsets == null) {
                return;
            }
            okCommits.forEach((p, commits) -> {
                Commit highest = highestBefore(p, finalOffsets.startNanos());
                if (highest == null) {
                    return;
                }
                Long last = finalOffsets.committed().get(p);
                if (last == null || last < highest.offsets().get(p)) {
                    add(GroupAnomaly.OFFSET_BACKWARDS, finalOffsets.nanoTime(), () -> "the final committed offset of p" + p
                            + " is " + (last == null ? "missing" : last) + ", below " + highest.member() + "'s commit at "
                            + highest.offsets().get(p) + " that had succeeded " + t(highest.nanoTime()));
                }
            });
        }

        // ------------------------------------------------------------------ skipped records

        private boolean wasDelivered(Acked a) {
            for (Delivered d : deliveries.getOrDefault(a.value(), List.of())) {
                if (d.partition() == a.partition() && d.offset() == a.offset()) {
                    return true;
                }
            }
            return false;
        }

        private void skipped() {
            if (finalOffsets == null) {
                return;
            }
            for (Acked a : acked.values()) {
                Long upTo = finalOffsets.committed().get(a.partition());
                if (upTo != null && a.offset() < upTo && !wasDelivered(a)) {
                    List<Delivered> elsewhere = deliveries.getOrDefault(a.value(), List.of());
                    add(GroupAnomaly.SKIPPED, a.nanoTime(), () -> a.value() + " acknowledged at p" + a.partition() + "@"
                            + a.offset() + " " + t(a.nanoTime()) + ", below the final committed offset " + upTo
                            + ", was never delivered there" + (elsewhere.isEmpty() ? "" : " (delivered at "
                            + elsewhere.stream().map(d -> "p" + d.partition() + "@" + d.offset() + " to " + d.member()).toList() + ")"));
                }
            }
        }

        // ------------------------------------------------------------------ totals

        private GroupReport.Totals totals() {
            Map<Subscription, Integer> bySubscription = new EnumMap<>(Subscription.class);
            int statics = 0;
            for (Started s : started.values()) {
                bySubscription.merge(s.subscription(), 1, Integer::sum);
                if (s.instanceId() != null) {
                    statics++;
                }
            }
            Map<Stop, Integer> stops = new EnumMap<>(Stop.class);
            stopped.values().forEach(s -> stops.merge(s.how(), 1, Integer::sum));
            String firstError = stopped.values().stream().filter(s -> s.how() == Stop.ERROR)
                    .min(Comparator.comparingLong(Stopped::nanoTime))
                    .map(s -> s.member() + " " + t(s.nanoTime()) + ": " + s.detail()).orElse(null);
            int commitsOk = (int) events.stream().filter(e -> e instanceof Commit c && c.ok()).count();
            int duplicateValues = 0;
            int extra = 0;
            for (List<Delivered> ds : deliveries.values()) {
                if (ds.size() > 1) {
                    duplicateValues++;
                    extra += ds.size() - 1;
                }
            }
            int judged = 0;
            boolean complete = false;
            if (finalOffsets != null) {
                for (Acked a : acked.values()) {
                    Long upTo = finalOffsets.committed().get(a.partition());
                    if (upTo != null && a.offset() < upTo) {
                        judged++;
                    }
                }
                complete = !finalOffsets.endOffsets().isEmpty() && finalOffsets.endOffsets().entrySet().stream()
                        .allMatch(e -> e.getValue() == 0 || e.getValue().equals(finalOffsets.committed().get(e.getKey())));
            }
            String[] detail = {"no description of the group"};
            boolean isSettled = settled != null && settled(detail);
            long healToSettle = heal != null && settled != null ? (settled.nanoTime() - heal.nanoTime()) / 1_000_000 : -1;
            return new GroupReport.Totals(started.size(), statics, bySubscription, stops, firstError, stalls, assigned,
                    revoked, lost,
                    zombies.count, zombies.count == 0 ? null : zombies.first.get(), commitsOk, commitsFailed, acked.size(),
                    delivered, duplicateValues, extra, judged, finalOffsets != null, complete, isSettled, detail[0],
                    healToSettle);
        }

        /**
         * Whether the description says Stable with each partition owned by exactly one member, its members are those
         * started and not stopped at that moment, and each one's assignment is what its callbacks say it owns.
         */
        private boolean settled(String[] detail) {
            long at = settled.nanoTime();
            Map<String, Set<Integer>> byCallbacks = new TreeMap<>();
            for (String m : started.keySet()) {
                Stopped s = stopped.get(m);
                if (started.get(m).nanoTime() < at && (s == null || s.nanoTime() > at)) {
                    byCallbacks.put(m, new TreeSet<>());
                }
            }
            intervals.forEach((p, list) -> list.stream().filter(i -> i.start < at && i.end > at)
                    .forEach(i -> byCallbacks.computeIfAbsent(i.member, k -> new TreeSet<>()).add(p)));
            Map<Integer, Integer> owners = new HashMap<>();
            settled.assignments().values().forEach(ps -> ps.forEach(p -> owners.merge(p, 1, Integer::sum)));
            Set<Integer> unowned = new TreeSet<>();
            Set<Integer> shared = new TreeSet<>();
            for (int p = 0; p < settled.partitions(); p++) {
                int n = owners.getOrDefault(p, 0);
                if (n == 0) {
                    unowned.add(p);
                } else if (n > 1) {
                    shared.add(p);
                }
            }
            Map<String, Set<Integer>> described = new TreeMap<>(settled.assignments());
            StringBuilder why = new StringBuilder("state " + settled.state() + ", " + described.size() + " members "
                    + described);
            boolean ok = settled.state().equals("Stable") && unowned.isEmpty() && shared.isEmpty();
            if (!unowned.isEmpty()) {
                why.append("; unowned ").append(unowned);
            }
            if (!shared.isEmpty()) {
                why.append("; described in two members ").append(shared);
            }
            Map<String, Set<Integer>> describedSorted = new TreeMap<>();
            described.forEach((m, ps) -> describedSorted.put(m, new TreeSet<>(ps)));
            if (!describedSorted.equals(byCallbacks)) {
                ok = false;
                why.append("; the members' callbacks say ").append(byCallbacks);
            }
            detail[0] = why.toString();
            return ok;
        }

        private String t(long nanoTime) {
            return String.format("t=%.3fms", (nanoTime - t0) / 1e6);
        }
    }

}
