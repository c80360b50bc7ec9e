package dev.varve.tests.chaos;

import java.util.Collections;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The verdict of {@link TxnChecker#check}: per {@link TxnAnomaly} a count and the first example, totals
 * of the transactional workload, and its liveness figures. Immutable.
 */
public final class TxnReport {

    /**
     * What the workload did. Writer and processor transactions apart; {@code unknownLanded}: unknown
     * transactions (either kind) whose values are in the final read; {@code committedAfterHeal}: writer and
     * processor transactions whose commit returned after the last heal; {@code finalComplete}: every
     * partition of both topics was finally read to its high watermark; {@code offsetsChecked}: the group's
     * final offsets were recorded (the processors stopped cleanly) and judged.
     */
    public record Totals(int writerCommitted, int writerAborted, int writerUnknown, int processorCommitted,
                         int processorAborted, int processorUnknown, int unknownLanded,
                         int writerCommittedAfterHeal, int processorCommittedAfterHeal, int reads,
                         int finalInputRecords, int finalOutputRecords, boolean finalComplete, boolean offsetsChecked) {
    }

    private final Map<TxnAnomaly, Report.Finding> findings;
    private final Totals totals;

    public TxnReport(Map<TxnAnomaly, Report.Finding> findings, Totals totals) {
        EnumMap<TxnAnomaly, Report.Finding> all = new EnumMap<>(TxnAnomaly.class);
        for (TxnAnomaly kind : TxnAnomaly.values()) {
            all.put(kind, findings.getOrDefault(kind, new Report.Finding(0, null)));
        }
        this.findings = Collections.unmodifiableMap(all);
        this.totals = totals;
    }

    public boolean valid() {
        return found().isEmpty();
    }

    public Set<TxnAnomaly> found() {
        EnumSet<TxnAnomaly> kinds = EnumSet.noneOf(TxnAnomaly.class);
        findings.forEach((kind, finding) -> {
            if (finding.count() > 0) {
                kinds.add(kind);
            }
        });
        return kinds;
    }

    public int count(TxnAnomaly kind) {
        return findings.get(kind).count();
    }

    public Optional<String> firstExample(TxnAnomaly kind) {
        return Optional.ofNullable(findings.get(kind).firstExample());
    }

    public Totals totals() {
        return totals;
    }

    @Override
    public String toString() {
        StringBuilder out = new StringBuilder();
        out.append(valid() ? "VALID" : "INVALID").append(" transactional history\n");
        findings.forEach((kind, finding) -> out.append(String.format("  %-22s %8d%n", kind, finding.count())));
        out.append(String.format("writer txns: %d committed, %d aborted, %d unknown; processor txns: %d committed,"
                        + " %d aborted, %d unknown; %d unknown landed%n", totals.writerCommitted(), totals.writerAborted(),
                totals.writerUnknown(), totals.processorCommitted(), totals.processorAborted(), totals.processorUnknown(),
                totals.unknownLanded()));
        out.append(String.format("committed after the heal: %d writer, %d processor; reads: %d; final records: %d %s,"
                        + " %d %s; final read %s; group offsets %s%n", totals.writerCommittedAfterHeal(),
                totals.processorCommittedAfterHeal(), totals.reads(), totals.finalInputRecords(), TxnHistory.INPUT,
                totals.finalOutputRecords(), TxnHistory.OUTPUT, totals.finalComplete() ? "complete" : "INCOMPLETE",
                totals.offsetsChecked() ? "checked" : "NOT checked"));
        findings.forEach((kind, finding) -> {
            if (finding.count() > 0) {
                out.append("first ").append(kind).append(": ").append(finding.firstExample()).append('\n');
            }
        });
        return out.toString();
    }
}
