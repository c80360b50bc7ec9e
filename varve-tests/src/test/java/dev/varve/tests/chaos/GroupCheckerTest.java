package dev.varve.tests.chaos;

import dev.varve.tests.chaos.GroupHistory.Stop;
import dev.varve.tests.chaos.GroupHistory.Subscription;
import org.junit.jupiter.api.Test;

import java.util.Map;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Hand-written consumer-group histories for {@link GroupChecker}: a clean run, then each anomaly added on its
 * own, and histories that look suspicious but are Kafka's semantics. Times are milliseconds.
 *
 * <p>The clean run, on a topic of two partitions (acknowledged: p0 0 g0, 1 g1, 2 g4; p1 0 g2, 1 g3, 2 g5):
 * <pre>
 *  60 a assigned p0 p1; delivered p0@0, p1@0; commits p0=1 p1=1 (90-100)
 * 120 a revokes p1; 130 b assigned p1; delivered p1@1; commits p1=2 (150-160)
 * 170 a delivered p0@1, then stalls (180-300): a zombie
 * 210 c (static) assigned p0 while a still believes it owns it; delivered p0@1 (again), p0@2; commits p0=3 (250-260)
 * 310 a's commit p0=2 fails; 330 a loses p0 (the overlap 210-330 is a fenced zombie's: allowed)
 * 350 b delivered p1@2, 360 b crashes (without committing it)
 * 400 heal; 420 a assigned p1, delivered p1@2 (again), commits p1=3 (440-450)
 * 500 described: Stable, a p1, c p0; then a and c leave; final offsets p0=3 p1=3 (the end offsets)
 * </pre>
 */
class GroupCheckerTest {
    private final GroupHistory history = new GroupHistory();
    private Map<Integer, Long> finalCommitted = Map.of(0, 3L, 1, 3L);
    private Map<Integer, Long> endOffsets = Map.of(0, 3L, 1, 3L);
    private String settledState = "Stable";
    private Map<String, Set<Integer>> described = Map.of("a", Set.of(1), "c", Set.of(0));

    private static long ms(long ms) {
        return ms * 1_000_000L;
    }

    private void acked(long at, int partition, long offset, String value) {
        history.add(new GroupHistory.Acked(partition, offset, value, ms(at)));
    }

    private void started(long at, String member, Subscription subscription, String instanceId) {
        history.add(new GroupHistory.Started(member, subscription, instanceId, ms(at)));
    }

    private void assigned(long at, String member, Integer... partitions) {
        history.add(new GroupHistory.Assigned(member, Set.of(partitions), ms(at)));
    }

    private void revoked(long at, String member, Integer... partitions) {
        history.add(new GroupHistory.Revoked(member, Set.of(partitions), ms(at)));
    }

    private void lost(long at, String member, Integer... partitions) {
        history.add(new GroupHistory.Lost(member, Set.of(partitions), ms(at)));
    }

    private void delivered(long at, String member, int partition, long offset, String value) {
        history.add(new GroupHistory.Delivered(member, partition, offset, value, ms(at)));
    }

    private void commit(long from, long to, String member, boolean ok, Map<Integer, Long> offsets) {
        history.add(new GroupHistory.Commit(member, offsets, ok, ok ? null : "UnknownMemberIdException", ms(from), ms(to)));
    }

    private void stopped(long at, String member, Stop how) {
        history.add(new GroupHistory.Stopped(member, how, "", ms(at)));
    }

    private void cleanRun() {
        acked(10, 0, 0, "g0");
        acked(20, 1, 0, "g2");
        acked(30, 0, 1, "g1");
        acked(40, 1, 1, "g3");
        started(50, "a", Subscription.NAME, null);
        assigned(60, "a", 0, 1);
        delivered(70, "a", 0, 0, "g0");
        delivered(80, "a", 1, 0, "g2");
        commit(90, 100, "a", true, Map.of(0, 1L, 1, 1L));
        started(110, "b", Subscription.REGEX, null);
        revoked(120, "a", 1);
        assigned(130, "b", 1);
        delivered(140, "b", 1, 1, "g3");
        commit(150, 160, "b", true, Map.of(1, 2L));
        delivered(170, "a", 0, 1, "g1");
        history.add(new GroupHistory.Stalled("a", ms(180), ms(300)));
        started(200, "c", Subscription.PATTERN, "static");
        assigned(210, "c", 0);
        acked(220, 0, 2, "g4");
        delivered(230, "c", 0, 1, "g1");
        delivered(240, "c", 0, 2, "g4");
        commit(250, 260, "c", true, Map.of(0, 3L));
        commit(310, 320, "a", false, Map.of(0, 2L));
        lost(330, "a", 0);
        acked(340, 1, 2, "g5");
        delivered(350, "b", 1, 2, "g5");
        stopped(360, "b", Stop.CRASH);
        history.add(new GroupHistory.Heal(ms(400)));
        assigned(420, "a", 1);
        delivered(430, "a", 1, 2, "g5");
        commit(440, 450, "a", true, Map.of(1, 3L));
    }

    private GroupReport check() {
        history.add(new GroupHistory.Settled(settledState, described, 2, ms(500)));
        revoked(510, "a", 1);
        stopped(520, "a", Stop.END);
        revoked(530, "c", 0);
        stopped(540, "c", Stop.END);
        history.add(new GroupHistory.FinalOffsets(finalCommitted, endOffsets, ms(550), ms(560)));
        return GroupChecker.check(history);
    }

    private static void assertOnly(GroupReport report, GroupAnomaly kind, int count) {
        assertThat(report.found()).as(report.toString()).containsExactly(kind);
        assertThat(report.count(kind)).as(report.toString()).isEqualTo(count);
        assertThat(report.firstExample(kind)).isPresent();
        assertThat(report.toString()).contains("first " + kind + ": ");
    }

    @Test
    void cleanHistoryIsValid() {
        cleanRun();

        GroupReport report = check();

        assertThat(report.valid()).as(report.toString()).isTrue();
        GroupReport.Totals t = report.totals();
        assertThat(t.members()).isEqualTo(3);
        assertThat(t.staticMembers()).isEqualTo(1);
        assertThat(t.bySubscription()).containsEntry(Subscription.NAME, 1).containsEntry(Subscription.REGEX, 1)
                .containsEntry(Subscription.PATTERN, 1);
        assertThat(t.stops(Stop.CRASH)).isEqualTo(1);
        assertThat(t.stops(Stop.END)).isEqualTo(2);
        assertThat(t.stops(Stop.LEAVE)).isZero();
        assertThat(t.stalls()).isEqualTo(1);
        assertThat(t.assigned()).isEqualTo(4);
        assertThat(t.revoked()).isEqualTo(3);
        assertThat(t.lost()).isEqualTo(1);
        assertThat(t.zombieOverlaps()).isEqualTo(1);
        assertThat(t.firstZombieOverlap()).contains("p0: a owned it from t=50.000ms to lost t=320.000ms");
        assertThat(t.commitsOk()).isEqualTo(4);
        assertThat(t.commitsFailed()).isEqualTo(1);
        assertThat(t.acked()).isEqualTo(6);
        assertThat(t.delivered()).isEqualTo(8);
        assertThat(t.duplicateValues()).isEqualTo(2);
        assertThat(t.extraDeliveries()).isEqualTo(2);
        assertThat(t.ackedJudged()).isEqualTo(6);
        assertThat(t.offsetsJudged()).isTrue();
        assertThat(t.finalComplete()).isTrue();
        assertThat(t.settled()).as(t.settleDetail()).isTrue();
        assertThat(t.healToSettleMs()).isEqualTo(100);
    }

    // ------------------------------------------------------------------ ownership

    @Test
    void aPartitionAssignedBeforeItsOwnerRevokedItHasTwoOwners() {
        cleanRun();
        started(265, "d", Subscription.NAME, null);
        assigned(270, "d", 0); // c owns p0 since 210 and revokes it only at 530
        revoked(275, "d", 0);
        stopped(278, "d", Stop.LEAVE);

        GroupReport report = check();

        assertOnly(report, GroupAnomaly.DOUBLE_OWNER, 1);
        assertThat(report.firstExample(GroupAnomaly.DOUBLE_OWNER).orElseThrow())
                .contains("p0: c owned it from t=200.000ms to revoked t=520.000ms, yet d owned it from t=260.000ms");
        assertThat(report.totals().zombieOverlaps()).as("a, the zombie, overlaps d too: allowed").isEqualTo(2);
    }

    @Test
    void aPartitionAssignedBeforeItsOwnerCrashedHasTwoOwners() {
        cleanRun();
        started(341, "e", Subscription.NAME, null);
        assigned(345, "e", 1); // b owns p1 until it crashes at 360
        revoked(347, "e", 1);
        stopped(348, "e", Stop.LEAVE);

        GroupReport report = check();

        assertOnly(report, GroupAnomaly.DOUBLE_OWNER, 1);
        assertThat(report.firstExample(GroupAnomaly.DOUBLE_OWNER).orElseThrow()).contains("stopped (CRASH)");
    }

    @Test
    void aRevocationRunLateByAFencedMemberIsAZombieNotADoubleOwner() {
        cleanRun();
        started(335, "e", Subscription.NAME, null);
        assigned(340, "e", 1); // b was fenced (it does not know yet) ...
        revoked(345, "b", 1); // ... runs the revocation it had been sent ...
        lost(346, "b", 1); // ... and then learns it was fenced: the lost partitions name p1 again
        revoked(380, "e", 1);
        stopped(390, "e", Stop.LEAVE);

        GroupReport report = check();

        assertThat(report.valid()).as(report.toString()).isTrue();
        assertThat(report.totals().zombieOverlaps()).isEqualTo(2);
    }

    @Test
    void withoutTheLostCallbackALateRevocationIsADoubleOwner() {
        cleanRun();
        started(335, "e", Subscription.NAME, null);
        assigned(340, "e", 1);
        revoked(345, "b", 1);
        revoked(380, "e", 1);
        stopped(390, "e", Stop.LEAVE);

        assertOnly(check(), GroupAnomaly.DOUBLE_OWNER, 1);
    }

    @Test
    void anAssignmentRunLateAfterAStallIsNotADoubleOwner() {
        cleanRun();
        started(370, "f", Subscription.NAME, null);
        assigned(372, "f", 1); // b crashed at 360; f stalls with p1, leaves the group, a gets p1 at 420 (f: a zombie)
        history.add(new GroupHistory.Stalled("f", ms(373), ms(425)));
        assigned(426, "f", 1, 0); // queued before it left the group, run in its first poll after the stall ...
        lost(427, "f", 1); // ... then its lost partitions, without p0, not yet its when it left (c owns p0)
        stopped(428, "f", Stop.LEAVE);

        GroupReport report = check();

        assertThat(report.valid()).as(report.toString()).isTrue();
        assertThat(report.totals().firstZombieOverlap()).isNotNull();
        assertThat(report.totals().zombieOverlaps()).isEqualTo(3); // a/c on p0 as before; f on p1 with a, f on p0 with c
    }

    @Test
    void theOwnersCommitDuringAnotherMembersLateAssignmentIsNoZombieCommit() {
        cleanRun();
        started(370, "f", Subscription.NAME, null);
        assigned(372, "f", 1);
        history.add(new GroupHistory.Stalled("f", ms(373), ms(425)));
        assigned(426, "f", 1, 0); // late, after the stall: f left the group; c owns p0
        lost(427, "f", 1);
        stopped(428, "f", Stop.LEAVE);
        commit(430, 432, "c", true, Map.of(0, 1L)); // c, the real owner of p0, commits meanwhile ...
        lost(440, "c", 0); // ... and is fenced later (seed 23696867653538 of the chaos run)

        GroupReport report = check();
        assertThat(report.count(GroupAnomaly.ZOMBIE_COMMIT)).as(report.toString()).isZero();
    }

    @Test
    void withoutTheStallALateAssignmentIsADoubleOwner() {
        cleanRun();
        started(370, "f", Subscription.NAME, null);
        assigned(426, "f", 0); // c owns p0
        lost(427, "f", 1);
        stopped(428, "f", Stop.LEAVE);

        assertOnly(check(), GroupAnomaly.DOUBLE_OWNER, 1);
    }

    @Test
    void aZombiesCommitAcceptedAfterItsPartitionMovedIsFound() {
        cleanRun();
        commit(222, 228, "a", true, Map.of(0, 2L)); // sent after c was assigned p0 (210), before a lost it (330)

        GroupReport report = check();

        assertOnly(report, GroupAnomaly.ZOMBIE_COMMIT, 1);
        assertThat(report.firstExample(GroupAnomaly.ZOMBIE_COMMIT).orElseThrow())
                .contains("a committed p0 at 2 (sent t=212.000ms").contains("c had been assigned it t=200.000ms");
    }

    @Test
    void aZombieCommitIsCountedOncePerOverlap() {
        cleanRun();
        commit(222, 228, "a", true, Map.of(0, 2L));
        commit(232, 238, "a", true, Map.of(0, 2L));

        assertOnly(check(), GroupAnomaly.ZOMBIE_COMMIT, 1);
    }

    @Test
    void aZombiesFailedCommitIsFine() {
        cleanRun();
        commit(222, 228, "a", false, Map.of(0, 2L));

        GroupReport report = check();

        assertThat(report.valid()).as(report.toString()).isTrue();
        assertThat(report.totals().commitsFailed()).isEqualTo(2);
    }

    // ------------------------------------------------------------------ offsets

    @Test
    void aCommitBelowOneThatCompletedBeforeIsBackwards() {
        cleanRun();
        commit(170, 175, "b", true, Map.of(1, 1L)); // p1=2 succeeded at 160

        GroupReport report = check();

        assertOnly(report, GroupAnomaly.OFFSET_BACKWARDS, 1);
        assertThat(report.firstExample(GroupAnomaly.OFFSET_BACKWARDS).orElseThrow())
                .contains("b committed p1 at 1").contains("after b's commit at 2 had succeeded t=150.000ms");
    }

    @Test
    void commitsThatOverlapInTimeAreNotOrdered() {
        cleanRun();
        commit(155, 165, "b", true, Map.of(1, 1L)); // sent before the p1=2 commit (150-160) was answered

        assertThat(check().valid()).isTrue();
    }

    @Test
    void aNewOwnerResumingBelowACompletedCommitIsBackwards() {
        cleanRun();
        delivered(425, "a", 1, 1, "g3"); // assigned p1 at 420, but b had committed p1=2 at 160

        GroupReport report = check();

        assertOnly(report, GroupAnomaly.OFFSET_BACKWARDS, 1);
        assertThat(report.firstExample(GroupAnomaly.OFFSET_BACKWARDS).orElseThrow())
                .contains("a, assigned p1 t=410.000ms, was first delivered offset 1");
    }

    @Test
    void aFinalOffsetBelowASuccessfulCommitIsBackwards() {
        cleanRun();
        finalCommitted = Map.of(0, 3L, 1, 2L);

        GroupReport report = check();

        assertOnly(report, GroupAnomaly.OFFSET_BACKWARDS, 1);
        assertThat(report.firstExample(GroupAnomaly.OFFSET_BACKWARDS).orElseThrow())
                .contains("the final committed offset of p1 is 2, below a's commit at 3");
        assertThat(report.totals().finalComplete()).isFalse();
    }

    @Test
    void aMissingFinalOffsetIsBackwards() {
        cleanRun();
        finalCommitted = Map.of(0, 3L);

        GroupReport report = check();

        assertOnly(report, GroupAnomaly.OFFSET_BACKWARDS, 1);
        assertThat(report.firstExample(GroupAnomaly.OFFSET_BACKWARDS).orElseThrow())
                .contains("the final committed offset of p1 is missing");
    }

    // ------------------------------------------------------------------ skipped records

    @Test
    void anAcknowledgedRecordBelowTheFinalOffsetNobodyReadIsSkipped() {
        cleanRun();
        acked(245, 0, 3, "g6");
        finalCommitted = Map.of(0, 4L, 1, 3L);
        endOffsets = Map.of(0, 4L, 1, 3L);

        GroupReport report = check();

        assertOnly(report, GroupAnomaly.SKIPPED, 1);
        assertThat(report.firstExample(GroupAnomaly.SKIPPED).orElseThrow())
                .contains("g6 acknowledged at p0@3").contains("below the final committed offset 4");
        assertThat(report.totals().ackedJudged()).isEqualTo(7);
    }

    @Test
    void aRecordDeliveredAtAnotherOffsetDoesNotCount() {
        cleanRun();
        acked(245, 0, 3, "g6");
        delivered(246, "c", 1, 3, "g6"); // c does not own p1 but the checker looks at partition and offset only
        finalCommitted = Map.of(0, 4L, 1, 3L);
        endOffsets = Map.of(0, 4L, 1, 4L);

        GroupReport report = check();

        assertOnly(report, GroupAnomaly.SKIPPED, 1);
        assertThat(report.firstExample(GroupAnomaly.SKIPPED).orElseThrow()).contains("(delivered at [p1@3 to c])");
    }

    @Test
    void recordsAboveTheFinalOffsetAreNotJudged() {
        cleanRun();
        acked(345, 1, 3, "g7"); // never delivered, but the group never committed past it
        endOffsets = Map.of(0, 3L, 1, 4L);

        GroupReport report = check();

        assertThat(report.valid()).as(report.toString()).isTrue();
        assertThat(report.totals().ackedJudged()).isEqualTo(6);
        assertThat(report.totals().finalComplete()).as("the group did not read to the end").isFalse();
    }

    @Test
    void withoutFinalOffsetsNothingIsJudged() {
        cleanRun();
        history.add(new GroupHistory.Settled(settledState, described, 2, ms(500)));

        GroupReport report = GroupChecker.check(history);

        assertThat(report.valid()).isTrue();
        assertThat(report.totals().offsetsJudged()).isFalse();
        assertThat(report.totals().ackedJudged()).isZero();
        assertThat(report.toString()).contains("NO final offsets");
    }

    // ------------------------------------------------------------------ settling

    @Test
    void aGroupNotStableHasNotSettled() {
        cleanRun();
        settledState = "Reconciling";

        GroupReport report = check();

        assertThat(report.valid()).isTrue();
        assertThat(report.totals().settled()).isFalse();
        assertThat(report.totals().settleDetail()).contains("state Reconciling");
    }

    @Test
    void anUnownedPartitionOrACrashedMemberStillDescribedIsNotSettled() {
        cleanRun();
        described = Map.of("a", Set.of(1), "c", Set.of());

        GroupReport unowned = check();

        assertThat(unowned.totals().settled()).isFalse();
        assertThat(unowned.totals().settleDetail()).contains("unowned [0]").contains("the members' callbacks say");

        GroupCheckerTest other = new GroupCheckerTest();
        other.cleanRun();
        other.described = Map.of("a", Set.of(1), "b", Set.of(), "c", Set.of(0));
        GroupReport withCrashed = other.check();
        assertThat(withCrashed.totals().settled()).isFalse();
        assertThat(withCrashed.totals().settleDetail()).contains("the members' callbacks say {a=[1], c=[0]}");
    }

    @Test
    void aValueAcknowledgedTwiceIsAMalformedHistory() {
        acked(10, 0, 0, "g0");
        acked(20, 0, 1, "g0");

        assertThatThrownBy(() -> GroupChecker.check(history)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("g0 acknowledged twice");
    }
}
