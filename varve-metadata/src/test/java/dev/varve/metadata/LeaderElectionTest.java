package dev.varve.metadata;

import dev.varve.metadata.LeaderElection.Kind;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Set;
import java.util.function.IntPredicate;

import static org.assertj.core.api.Assertions.assertThat;

class LeaderElectionTest {
    private static PartitionState p(List<Integer> isr, List<Integer> elr, List<Integer> lastKnown, int leader) {
        return new PartitionState(0, List.of(1, 2, 3), isr, elr, lastKnown, leader, 5, 9);
    }

    private static IntPredicate live(Integer... ids) {
        Set<Integer> s = Set.of(ids);
        return s::contains;
    }

    @Test
    void eligibleLeaderStays() {
        LeaderElection.Result r = LeaderElection.elect(p(List.of(1, 2), List.of(), List.of(), 2), live(1, 2), false, 1);
        assertThat(r.kind()).isEqualTo(Kind.UNCHANGED);
        assertThat(r.leader()).isEqualTo(2);
    }

    @Test
    void firstLiveIsrMemberInReplicaOrder() {
        LeaderElection.Result r = LeaderElection.elect(p(List.of(3, 2), List.of(), List.of(), 1), live(2, 3), false, 1);
        assertThat(r.kind()).isEqualTo(Kind.ISR);
        assertThat(r.leader()).isEqualTo(2);
    }

    @Test
    void replicasBeingRemovedAreTheLastResort() {
        // Replica 1 is being removed by a reassignment: another eligible ISR member is preferred, even
        // though 1 comes first in replica order; 1 is elected only when nobody else can lead.
        PartitionState moving = new PartitionState(0, List.of(1, 2, 3), List.of(1, 2, 3), List.of(), List.of(), -1, 5, 9,
                List.of(), List.of(1));
        assertThat(LeaderElection.elect(moving, live(1, 2, 3), false, 1).leader()).isEqualTo(2);
        assertThat(LeaderElection.elect(moving, live(1, 3), false, 1).leader()).isEqualTo(3);
        assertThat(LeaderElection.elect(moving, live(1), false, 1).leader()).isEqualTo(1);
    }

    @Test
    void neverOutsideTheIsrWhenUncleanIsOff() {
        LeaderElection.Result r = LeaderElection.elect(p(List.of(1), List.of(), List.of(), 1), live(2, 3), false, 1);
        assertThat(r.kind()).isEqualTo(Kind.NONE);
        assertThat(r.leader()).isEqualTo(-1);
        assertThat(r.isr()).containsExactly(1);
    }

    @Test
    void uncleanElectionWhenEnabled() {
        LeaderElection.Result r = LeaderElection.elect(p(List.of(1), List.of(), List.of(), 1), live(3), true, 1);
        assertThat(r.kind()).isEqualTo(Kind.UNCLEAN);
        assertThat(r.leader()).isEqualTo(3);
        assertThat(r.isr()).containsExactly(3);
    }

    @Test
    void elrMemberLeadsWhenNoIsrMemberIsLiveAndOldIsrJoinsElr() {
        LeaderElection.Result r = LeaderElection.elect(p(List.of(1), List.of(2), List.of(), -1), live(2), false, 2);
        assertThat(r.kind()).isEqualTo(Kind.ELR);
        assertThat(r.leader()).isEqualTo(2);
        assertThat(r.isr()).containsExactly(2);
        assertThat(r.elr()).containsExactly(1);
    }

    @Test
    void lastReplicaStandingIsElectedWhenNobodyIsProvablyBetter() {
        LeaderElection.Result r = LeaderElection.elect(p(List.of(), List.of(), List.of(1), -1), live(1), false, 1);
        assertThat(r.kind()).isEqualTo(Kind.LAST_KNOWN_ELR);
        assertThat(r.leader()).isEqualTo(1);
        assertThat(r.isr()).containsExactly(1);
        assertThat(r.lastKnownElr()).isEmpty();
    }

    @Test
    void lastReplicaStandingWaitsForAnElrMember() {
        // 1 restarted uncleanly; 2 holds every acks=all record but is down: wait for 2
        LeaderElection.Result r = LeaderElection.elect(p(List.of(), List.of(2), List.of(1), -1), live(1), false, 2);
        assertThat(r.kind()).isEqualTo(Kind.NONE);
        r = LeaderElection.elect(p(List.of(), List.of(2), List.of(1), -1), live(1, 2), false, 2);
        assertThat(r.leader()).isEqualTo(2);
    }

    @Test
    void elrFollowsMinIsr() {
        List<Integer> replicas = List.of(1, 2, 3);
        assertThat(LeaderElection.elrAfterIsrChange(replicas, List.of(1, 2, 3), List.of(1, 2), List.of(), 2)).isEmpty();
        assertThat(LeaderElection.elrAfterIsrChange(replicas, List.of(1, 2), List.of(1), List.of(), 2)).containsExactly(2);
        assertThat(LeaderElection.elrAfterIsrChange(replicas, List.of(1), List.of(1, 3), List.of(2), 2)).isEmpty();
        assertThat(LeaderElection.elrAfterIsrChange(replicas, List.of(1), List.of(1, 3), List.of(2), 3)).containsExactly(2);
    }
}
