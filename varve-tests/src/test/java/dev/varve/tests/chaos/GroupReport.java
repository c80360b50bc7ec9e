package dev.varve.tests.chaos;

import java.util.Collections;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * The verdict of {@link GroupChecker#check}: per {@link GroupAnomaly} a count and the first example, what the
 * group workload did, what Kafka's semantics allow and the checker therefore only counts (fenced zombies'
 * overlaps, duplicates), and whether the group settled. Immutable.
 */
public final class GroupReport {

    /**
     * What the workload did. {@code members}: consumer instances started ({@code staticMembers} of them with
     * the static member's instance id), by subscription; {@code stops}: how members stopped, {@code firstError} the
     * first error a member's consumer failed with (null if none); {@code stalls}:
     * members that stopped polling past their poll interval; callbacks as recorded; {@code zombieOverlaps}:
     * pairs of overlapping ownership intervals explained by the earlier owner being fenced (its interval ended
     * with onPartitionsLost, or its revocation was followed by an onPartitionsLost naming the same partition),
     * with the first one; {@code acked}: records the producer had acknowledged, {@code ackedJudged} of them below
     * their partition's final committed offset; {@code duplicateValues}: values delivered more than once,
     * {@code extraDeliveries} the deliveries beyond the first; {@code offsetsJudged}: the final committed
     * offsets were read; {@code finalComplete}: they equal the topic's end offsets (the group consumed
     * everything); {@code settled}: the group was described Stable after the heal with every partition owned
     * by exactly one member, its members those alive, and each one's assignment what its callbacks said
     * ({@code settleDetail} says what was seen); {@code healToSettleMs} -1 without a heal or a description.
     */
    public record Totals(int members, int staticMembers, Map<GroupHistory.Subscription, Integer> bySubscription,
                         Map<GroupHistory.Stop, Integer> stops, String firstError, int stalls, int assigned, int revoked, int lost,
                         int zombieOverlaps, String firstZombieOverlap, int commitsOk, int commitsFailed,
                         int acked, int delivered, int duplicateValues, int extraDeliveries, int ackedJudged,
                         boolean offsetsJudged, boolean finalComplete, boolean settled, String settleDetail,
                         long healToSettleMs) {
        public Totals {
            bySubscription = Collections.unmodifiableMap(new EnumMap<>(bySubscription.isEmpty()
                    ? Map.of(GroupHistory.Subscription.NAME, 0) : bySubscription));
            stops = Collections.unmodifiableMap(new EnumMap<>(stops.isEmpty() ? Map.of(GroupHistory.Stop.END, 0) : stops));
            Objects.requireNonNull(settleDetail, "settleDetail");
        }

        public int stops(GroupHistory.Stop how) {
            return stops.getOrDefault(how, 0);
        }
    }

    private final Map<GroupAnomaly, Report.Finding> findings;
    private final Totals totals;

    public GroupReport(Map<GroupAnomaly, Report.Finding> findings, Totals totals) {
        EnumMap<GroupAnomaly, Report.Finding> all = new EnumMap<>(GroupAnomaly.class);
        for (GroupAnomaly kind : GroupAnomaly.values()) {
            all.put(kind, findings.getOrDefault(kind, new Report.Finding(0, null)));
        }
        this.findings = Collections.unmodifiableMap(all);
        this.totals = Objects.requireNonNull(totals, "totals");
    }

    /** No anomaly. Settling and completeness are reported apart (liveness) and do not make a history invalid. */
    public boolean valid() {
        return found().isEmpty();
    }

    public Set<GroupAnomaly> found() {
        EnumSet<GroupAnomaly> kinds = EnumSet.noneOf(GroupAnomaly.class);
        findings.forEach((kind, finding) -> {
            if (finding.count() > 0) {
                kinds.add(kind);
            }
        });
        return kinds;
    }

    public int count(GroupAnomaly kind) {
        return findings.get(kind).count();
    }

    public Optional<String> firstExample(GroupAnomaly kind) {
        return Optional.ofNullable(findings.get(kind).firstExample());
    }

    public Totals totals() {
        return totals;
    }

    @Override
    public String toString() {
        StringBuilder out = new StringBuilder();
        out.append(valid() ? "VALID" : "INVALID").append(" consumer-group history\n");
        findings.forEach((kind, finding) -> out.append(String.format("  %-20s %8d%n", kind, finding.count())));
        out.append(String.format("members: %d started (%d static instances; by subscription %s); stopped %s; %d stalls%n",
                totals.members(), totals.staticMembers(), totals.bySubscription(), totals.stops(), totals.stalls()));
        if (totals.firstError() != null) {
            out.append("first member error: ").append(totals.firstError()).append('\n');
        }
        out.append(String.format("callbacks: %d assigned, %d revoked, %d lost; %d overlaps of fenced zombies%s%n",
                totals.assigned(), totals.revoked(), totals.lost(), totals.zombieOverlaps(),
                totals.firstZombieOverlap() == null ? "" : " (first: " + totals.firstZombieOverlap() + ")"));
        out.append(String.format("commits: %d ok, %d failed; records: %d acked, %d delivered, %d values delivered more"
                        + " than once (%d extra deliveries); %d acked below the final committed offsets%s%n",
                totals.commitsOk(), totals.commitsFailed(), totals.acked(), totals.delivered(), totals.duplicateValues(),
                totals.extraDeliveries(), totals.ackedJudged(), totals.offsetsJudged() ? "" : " (NO final offsets: not judged)"));
        out.append(String.format("final offsets %s; group %s%s%n",
                totals.finalComplete() ? "at the end of every partition" : "NOT at the end of every partition",
                totals.settled() ? "settled" : "NOT settled", (totals.healToSettleMs() >= 0
                        ? " " + totals.healToSettleMs() + " ms after the heal" : "") + ": " + totals.settleDetail()));
        findings.forEach((kind, finding) -> {
            if (finding.count() > 0) {
                out.append("first ").append(kind).append(": ").append(finding.firstExample()).append('\n');
            }
        });
        return out.toString();
    }
}
