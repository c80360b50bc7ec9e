package dev.varve.metadata;

import dev.varve.metadata.MetadataRecord.ControllerRegistration;
import dev.varve.metadata.MetadataRecord.Endpoint;
import dev.varve.metadata.VoterChanges.Change;
import dev.varve.metadata.VoterChanges.Membership;
import dev.varve.metadata.VoterChanges.Refuse;
import dev.varve.metadata.VoterChanges.TransferLeadership;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.AddRaftVoterRequestData;
import org.apache.kafka.common.message.RemoveRaftVoterRequestData;
import org.apache.kafka.common.protocol.Errors;
import org.junit.jupiter.api.Test;

import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;

class VoterChangesTest {
    private static final String CLUSTER = "cluster-a";
    private static final String LISTENER = "CONTROLLER";

    private static Endpoint at(int id) {
        return new Endpoint(LISTENER, "h" + id, 9000 + id);
    }

    private static Uuid dir(int id) {
        return new Uuid(id, id);
    }

    private static Map<Integer, ControllerRegistration> registered(int... ids) {
        Map<Integer, ControllerRegistration> out = new TreeMap<>();
        for (int id : ids) {
            out.put(id, new ControllerRegistration(id, dir(id), at(id)));
        }
        return out;
    }

    /** Voters 1..3, observer 4. */
    private static Membership threeAndAnObserver() {
        return new Membership(Map.of(1, at(1), 2, at(2), 3, at(3)), Map.of(4, at(4)), false);
    }

    private static AddRaftVoterRequestData add(int id, Uuid directory, String listener, String host, int port) {
        AddRaftVoterRequestData r = new AddRaftVoterRequestData().setClusterId(null).setVoterId(id).setVoterDirectoryId(directory).setTimeoutMs(30_000);
        if (listener != null) {
            r.listeners().add(new AddRaftVoterRequestData.Listener().setName(listener).setHost(host).setPort(port));
        }
        return r;
    }

    private static AddRaftVoterRequestData add(int id) {
        return add(id, dir(id), LISTENER, "h" + id, 9000 + id);
    }

    private static RemoveRaftVoterRequestData remove(int id, Uuid directory) {
        return new RemoveRaftVoterRequestData().setClusterId(null).setVoterId(id).setVoterDirectoryId(directory);
    }

    private static Errors refusal(VoterChanges.Decision d) {
        assertThat(d).isInstanceOf(Refuse.class);
        return ((Refuse) d).error();
    }

    @Test
    void aCaughtUpObserverBecomesAVoterAtTheRequestsEndpoint() {
        VoterChanges.Decision d = VoterChanges.addVoter(add(4, dir(4), LISTENER, "new-host", 9444), CLUSTER, LISTENER,
                threeAndAnObserver(), registered(1, 2, 3, 4), Set.of(4));
        assertThat(d).isInstanceOf(Change.class);
        Membership next = ((Change) d).next();
        assertThat(next.voters()).containsOnlyKeys(1, 2, 3, 4);
        assertThat(next.voters().get(4)).isEqualTo(new Endpoint(LISTENER, "new-host", 9444));
        assertThat(next.observers()).isEmpty();
    }

    @Test
    void addVoterRefusesBadInputWithKafkasErrors() {
        Membership m = threeAndAnObserver();
        Map<Integer, ControllerRegistration> reg = registered(1, 2, 3, 4);
        Set<Integer> caughtUp = Set.of(4);
        assertThat(refusal(VoterChanges.addVoter(add(4).setClusterId("other"), CLUSTER, LISTENER, m, reg, caughtUp)))
                .isEqualTo(Errors.INCONSISTENT_CLUSTER_ID);
        assertThat(VoterChanges.addVoter(add(4).setClusterId(CLUSTER), CLUSTER, LISTENER, m, reg, caughtUp)).isInstanceOf(Change.class);
        assertThat(refusal(VoterChanges.addVoter(add(-1, dir(4), LISTENER, "h", 1), CLUSTER, LISTENER, m, reg, caughtUp)))
                .isEqualTo(Errors.INVALID_REQUEST);
        assertThat(refusal(VoterChanges.addVoter(add(4, Uuid.ZERO_UUID, LISTENER, "h4", 9004), CLUSTER, LISTENER, m, reg, caughtUp)))
                .isEqualTo(Errors.INVALID_REQUEST);
        assertThat(refusal(VoterChanges.addVoter(add(4, dir(4), null, null, 0), CLUSTER, LISTENER, m, reg, caughtUp)))
                .isEqualTo(Errors.INVALID_REQUEST);
        assertThat(refusal(VoterChanges.addVoter(add(4, dir(4), "OTHER", "h4", 9004), CLUSTER, LISTENER, m, reg, caughtUp)))
                .isEqualTo(Errors.INVALID_REQUEST);
        assertThat(refusal(VoterChanges.addVoter(add(4, dir(4), LISTENER, "", 9004), CLUSTER, LISTENER, m, reg, caughtUp)))
                .isEqualTo(Errors.INVALID_REQUEST);
        // already a voter
        assertThat(refusal(VoterChanges.addVoter(add(2), CLUSTER, LISTENER, m, reg, caughtUp))).isEqualTo(Errors.DUPLICATE_VOTER);
        // a change in progress
        Membership changing = new Membership(m.voters(), m.observers(), true);
        assertThat(refusal(VoterChanges.addVoter(add(4), CLUSTER, LISTENER, changing, reg, caughtUp))).isEqualTo(Errors.REQUEST_TIMED_OUT);
        // unknown node, another directory, lagging: Kafka answers REQUEST_TIMED_OUT (the observer is not caught up)
        assertThat(refusal(VoterChanges.addVoter(add(7), CLUSTER, LISTENER, m, reg, caughtUp))).isEqualTo(Errors.REQUEST_TIMED_OUT);
        assertThat(refusal(VoterChanges.addVoter(add(4, dir(9), LISTENER, "h4", 9004), CLUSTER, LISTENER, m, reg, caughtUp)))
                .isEqualTo(Errors.REQUEST_TIMED_OUT);
        assertThat(refusal(VoterChanges.addVoter(add(4), CLUSTER, LISTENER, m, reg, Set.of()))).isEqualTo(Errors.REQUEST_TIMED_OUT);
        assertThat(refusal(VoterChanges.addVoter(add(4), CLUSTER, LISTENER, m, registered(1, 2, 3), caughtUp)))
                .isEqualTo(Errors.REQUEST_TIMED_OUT);
    }

    @Test
    void aRemovedVoterStaysAnObserverWhileReachableAndIsDroppedOtherwise() {
        Membership m = new Membership(Map.of(1, at(1), 2, at(2), 3, at(3), 4, at(4), 5, at(5)), Map.of(), false);
        Map<Integer, ControllerRegistration> reg = registered(1, 2, 3, 4, 5);
        Change kept = (Change) VoterChanges.removeVoter(remove(2, dir(2)), CLUSTER, 1, m, reg, Set.of(2, 3, 4, 5));
        assertThat(kept.next().voters()).containsOnlyKeys(1, 3, 4, 5);
        assertThat(kept.next().observers()).containsOnlyKeys(2);
        Change dropped = (Change) VoterChanges.removeVoter(remove(2, dir(2)), CLUSTER, 1, m, reg, Set.of(3, 4, 5));
        assertThat(dropped.next().voters()).containsOnlyKeys(1, 3, 4, 5);
        assertThat(dropped.next().observers()).isEmpty();
    }

    @Test
    void removingTheLeaderHandsLeadershipToAReachableVoterFirst() {
        Membership m = new Membership(Map.of(1, at(1), 2, at(2), 3, at(3)), Map.of(), false);
        VoterChanges.Decision d = VoterChanges.removeVoter(remove(1, dir(1)), CLUSTER, 1, m, registered(1, 2, 3), Set.of(3));
        assertThat(d).isEqualTo(new TransferLeadership(3));
        assertThat(VoterChanges.removeVoter(remove(1, dir(1)), CLUSTER, 1, m, registered(1, 2, 3), Set.of(2, 3)))
                .isEqualTo(new TransferLeadership(2));
    }

    @Test
    void afterFailedTransfersTheLeaderTriesTheReachableVoterTriedLeast() {
        Membership m = new Membership(Map.of(1, at(1), 2, at(2), 3, at(3), 4, at(4), 5, at(5)), Map.of(), false);
        Map<Integer, ControllerRegistration> reg = registered(1, 2, 3, 4, 5);
        Set<Integer> reachable = Set.of(1, 3, 4); // 5 is not heard from
        assertThat(VoterChanges.removeVoter(remove(2, dir(2)), CLUSTER, 2, m, reg, reachable, Map.of()))
                .isEqualTo(new TransferLeadership(1));
        assertThat(VoterChanges.removeVoter(remove(2, dir(2)), CLUSTER, 2, m, reg, reachable, Map.of(1, 1)))
                .isEqualTo(new TransferLeadership(3));
        assertThat(VoterChanges.removeVoter(remove(2, dir(2)), CLUSTER, 2, m, reg, reachable, Map.of(1, 1, 3, 1)))
                .isEqualTo(new TransferLeadership(4));
        // every reachable voter was tried once: round again, never to the one it does not hear from
        assertThat(VoterChanges.removeVoter(remove(2, dir(2)), CLUSTER, 2, m, reg, reachable, Map.of(1, 1, 3, 1, 4, 1)))
                .isEqualTo(new TransferLeadership(1));
        assertThat(VoterChanges.removeVoter(remove(2, dir(2)), CLUSTER, 2, m, reg, reachable, Map.of(1, 2, 3, 1, 4, 1)))
                .isEqualTo(new TransferLeadership(3));
    }

    @Test
    void removeVoterRefusesBadInputWithKafkasErrors() {
        Membership m = threeAndAnObserver();
        Map<Integer, ControllerRegistration> reg = registered(1, 2, 3, 4);
        assertThat(refusal(VoterChanges.removeVoter(remove(2, dir(2)).setClusterId("other"), CLUSTER, 1, m, reg, Set.of())))
                .isEqualTo(Errors.INCONSISTENT_CLUSTER_ID);
        assertThat(refusal(VoterChanges.removeVoter(remove(-3, dir(2)), CLUSTER, 1, m, reg, Set.of())))
                .isEqualTo(Errors.INVALID_REQUEST);
        assertThat(refusal(VoterChanges.removeVoter(remove(2, Uuid.ZERO_UUID), CLUSTER, 1, m, reg, Set.of())))
                .isEqualTo(Errors.INVALID_REQUEST);
        // not a voter (an observer is not one either), another directory
        assertThat(refusal(VoterChanges.removeVoter(remove(9, dir(9)), CLUSTER, 1, m, reg, Set.of()))).isEqualTo(Errors.VOTER_NOT_FOUND);
        assertThat(refusal(VoterChanges.removeVoter(remove(4, dir(4)), CLUSTER, 1, m, reg, Set.of()))).isEqualTo(Errors.VOTER_NOT_FOUND);
        assertThat(refusal(VoterChanges.removeVoter(remove(2, dir(7)), CLUSTER, 1, m, reg, Set.of()))).isEqualTo(Errors.VOTER_NOT_FOUND);
        // the last voter
        Membership alone = new Membership(Map.of(1, at(1)), Map.of(), false);
        assertThat(refusal(VoterChanges.removeVoter(remove(1, dir(1)), CLUSTER, 1, alone, reg, Set.of()))).isEqualTo(Errors.VOTER_NOT_FOUND);
        // a change in progress
        Membership changing = new Membership(m.voters(), m.observers(), true);
        assertThat(refusal(VoterChanges.removeVoter(remove(2, dir(2)), CLUSTER, 1, changing, reg, Set.of())))
                .isEqualTo(Errors.REQUEST_TIMED_OUT);
        // a voter that never registered a directory matches any directory id
        assertThat(VoterChanges.removeVoter(remove(2, dir(8)), CLUSTER, 1, m, registered(1, 3, 4), Set.of())).isInstanceOf(Change.class);
    }

    @Test
    void anAnnouncedControllerIsRegisteredAndBecomesAnObserver() {
        Membership m = new Membership(Map.of(1, at(1), 2, at(2), 3, at(3)), Map.of(), false);
        ControllerRegistration four = new ControllerRegistration(4, dir(4), at(4));
        VoterChanges.Announcement a = VoterChanges.announce(four, m, registered(1, 2, 3));
        assertThat(a.record()).isEqualTo(four);
        assertThat(((Change) a.decision()).next().observers()).containsOnlyKeys(4);
        // again, once it observes: nothing to do
        Membership observed = ((Change) a.decision()).next();
        VoterChanges.Announcement again = VoterChanges.announce(four, observed, registered(1, 2, 3, 4));
        assertThat(again.record()).isNull();
        assertThat(again.decision()).isInstanceOf(VoterChanges.Unchanged.class);
        // a voter announcing itself the first time is only registered
        VoterChanges.Announcement voter = VoterChanges.announce(new ControllerRegistration(2, dir(2), at(2)), m, registered(1));
        assertThat(voter.record()).isNotNull();
        assertThat(voter.decision()).isInstanceOf(VoterChanges.Unchanged.class);
        // while another change runs it is registered and asked to come back
        VoterChanges.Announcement busy = VoterChanges.announce(four, new Membership(m.voters(), Map.of(), true), registered(1, 2, 3));
        assertThat(busy.record()).isEqualTo(four);
        assertThat(refusal(busy.decision())).isEqualTo(Errors.REQUEST_TIMED_OUT);
    }

    @Test
    void aVoterCannotChangeItsDirectory() {
        Membership m = new Membership(Map.of(1, at(1), 2, at(2), 3, at(3)), Map.of(), false);
        VoterChanges.Announcement a = VoterChanges.announce(new ControllerRegistration(2, dir(99), at(2)), m, registered(1, 2, 3));
        assertThat(a.record()).isNull();
        assertThat(refusal(a.decision())).isEqualTo(Errors.INCONSISTENT_VOTER_SET);
        // an observer may (its disk was replaced before it became a voter)
        Membership withObserver = threeAndAnObserver();
        VoterChanges.Announcement o = VoterChanges.announce(new ControllerRegistration(4, dir(44), at(4)), withObserver,
                registered(1, 2, 3, 4));
        assertThat(o.record()).isNotNull();
        assertThat(VoterChanges.announce(new ControllerRegistration(4, Uuid.ZERO_UUID, at(4)), withObserver, Map.of()).decision())
                .isInstanceOf(Refuse.class);
    }
}
