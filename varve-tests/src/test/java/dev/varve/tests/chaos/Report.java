package dev.varve.tests.chaos;

import java.util.Collections;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.SortedMap;
import java.util.SortedSet;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The verdict of {@link Checker#check}: per {@link Anomaly} a count and the first example, totals of the
 * run, and the liveness flag. Immutable.
 */
public final class Report {

    /** How often one anomaly occurred and a human-readable first example ({@code null} when count is 0). */
    public record Finding(int count, String firstExample) {
        public Finding {
            if (count < 0 || (count == 0) != (firstExample == null)) {
                throw new IllegalArgumentException("count " + count + ", example " + firstExample);
            }
        }
    }

    /**
     * What the run did. {@code unresolved}: sends invoked without an outcome by the end of the run (treated
     * as indefinite). {@code indefiniteLanded}: indefinite or unresolved sends whose value is in the final
     * read. {@code polls}: records polled (one per {@link History.Poll}).
     */
    public record Totals(int sendsInvoked, int acked, int failedDefinite, int failedIndefinite, int unresolved,
                         int indefiniteLanded, int polls, SortedMap<Integer, Integer> finalRecordsPerPartition) {
        public Totals {
            finalRecordsPerPartition = Collections.unmodifiableSortedMap(new TreeMap<>(finalRecordsPerPartition));
        }
    }

    /**
     * Whether the final read was complete: every partition that was written or polled was finally read and
     * every acknowledged value is in it. {@code ackedMissing} equals the {@link Anomaly#LOST} count;
     * {@code ackedUnread}: acknowledged values in partitions never finally read (not judged lost).
     * {@code healToFinalReadMs}: from the last {@link History.Heal} to the start of the first final read,
     * empty without either. {@code violated}: incomplete although the read started at least
     * {@code boundMs} after the heal (or there was no heal): the cluster did not recover in time. An
     * incomplete read started sooner is inconclusive for liveness.
     */
    public record Liveness(boolean complete, int ackedMissing, int ackedUnread, SortedSet<Integer> unreadPartitions,
                           OptionalLong healToFinalReadMs, long boundMs) {
        public Liveness {
            unreadPartitions = Collections.unmodifiableSortedSet(new TreeSet<>(unreadPartitions));
        }

        public boolean violated() {
            return !complete && (healToFinalReadMs.isEmpty() || healToFinalReadMs.getAsLong() >= boundMs);
        }

        /** One line: complete, violated or inconclusive, with the timing. */
        public String verdict() {
            String timing = healToFinalReadMs.isPresent()
                    ? "final read " + healToFinalReadMs.getAsLong() + " ms after heal (bound " + boundMs + " ms)"
                    : "no heal or no final read recorded";
            if (complete) {
                return "complete; " + timing;
            }
            String what = ackedMissing + " acked missing, " + ackedUnread + " acked in unread partitions "
                    + unreadPartitions;
            return (violated() ? "VIOLATED: " : "inconclusive (read too soon): ") + what + "; " + timing;
        }
    }

    private final Map<Anomaly, Finding> findings;
    private final Totals totals;
    private final Liveness liveness;

    public Report(Map<Anomaly, Finding> findings, Totals totals, Liveness liveness) {
        EnumMap<Anomaly, Finding> all = new EnumMap<>(Anomaly.class);
        for (Anomaly kind : Anomaly.values()) {
            all.put(kind, findings.getOrDefault(kind, new Finding(0, null)));
        }
        this.findings = Collections.unmodifiableMap(all);
        this.totals = Objects.requireNonNull(totals, "totals");
        this.liveness = Objects.requireNonNull(liveness, "liveness");
    }

    /** No anomaly of any kind. Liveness is reported apart and does not make a history invalid. */
    public boolean valid() {
        return found().isEmpty();
    }

    /** The kinds with a non-zero count. */
    public Set<Anomaly> found() {
        EnumSet<Anomaly> kinds = EnumSet.noneOf(Anomaly.class);
        findings.forEach((kind, finding) -> {
            if (finding.count() > 0) {
                kinds.add(kind);
            }
        });
        return kinds;
    }

    public int count(Anomaly kind) {
        return findings.get(kind).count();
    }

    public Optional<String> firstExample(Anomaly kind) {
        return Optional.ofNullable(findings.get(kind).firstExample());
    }

    public Map<Anomaly, Finding> findings() {
        return findings;
    }

    public Totals totals() {
        return totals;
    }

    public Liveness liveness() {
        return liveness;
    }

    /** A summary table, totals, liveness and the first example of each anomaly found. */
    @Override
    public String toString() {
        StringBuilder out = new StringBuilder();
        out.append(valid() ? "VALID" : "INVALID").append(" history\n");
        for (Map.Entry<Anomaly, Finding> e : findings.entrySet()) {
            out.append(String.format("  %-20s %8d%n", e.getKey(), e.getValue().count()));
        }
        out.append(String.format("sends: %d invoked, %d acked, %d failed definite, %d failed indefinite,"
                        + " %d unresolved, %d indefinite landed%n", totals.sendsInvoked(), totals.acked(),
                totals.failedDefinite(), totals.failedIndefinite(), totals.unresolved(), totals.indefiniteLanded()));
        out.append("polls: ").append(totals.polls()).append("; final records per partition: ")
                .append(totals.finalRecordsPerPartition()).append('\n');
        out.append("liveness: ").append(liveness.verdict()).append('\n');
        findings.forEach((kind, finding) -> {
            if (finding.count() > 0) {
                out.append("first ").append(kind).append(": ").append(finding.firstExample()).append('\n');
            }
        });
        return out.toString();
    }
}
