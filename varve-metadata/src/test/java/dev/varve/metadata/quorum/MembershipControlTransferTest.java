package dev.varve.metadata.quorum;

import dev.varve.metadata.ControllerEnvelope;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.message.RemoveRaftVoterRequestData;
import org.apache.kafka.common.message.RemoveRaftVoterResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.utils.Time;
import org.junit.jupiter.api.Test;

import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * RemoveRaftVoter of the leader when handing leadership over fails, as Ratis' transfer does now and then
 * on a busy machine (DIFFERENT_LEADER: the transferee's election was lost and the old leader, or a third
 * voter, was elected; or TIMED_OUT). Pure: a fake quorum whose transfers the test completes, a fake
 * clock and timer, the event thread being the test's.
 */
class MembershipControlTransferTest {
    private static final int SELF = 2;

    private long now = 1_000_000;
    private final List<Object[]> timers = new ArrayList<>(); // {dueMs, task}
    private final FakeRaft raft = new FakeRaft();
    private final Time time = new Time() {
        @Override
        public long milliseconds() {
            return now;
        }

        @Override
        public long nanoseconds() {
            return now * 1_000_000;
        }

        @Override
        public void sleep(long ms) {
            now += ms;
        }

        @Override
        public void waitObject(Object obj, Supplier<Boolean> condition, long deadlineMs) {
            throw new UnsupportedOperationException();
        }
    };
    private final MembershipControl control = new MembershipControl(SELF, new MetadataLoader(16, MetadataLoader.RETAINED_BYTES),
            time, Runnable::run, (delayMs, task) -> timers.add(new Object[] {now + delayMs, task}), r -> { });

    /** Voters 1..3 (node 2 leads) or as a test sets them; transfers complete when the test says. */
    private final class FakeRaft implements MembershipControl.Raft {
        final Map<Integer, InetSocketAddress> voters = new TreeMap<>(Map.of(1, addr(1), 2, addr(2), 3, addr(3)));
        boolean leads = true;
        boolean changing;
        final List<Integer> transfersTo = new ArrayList<>();
        final List<CompletableFuture<Void>> transfers = new ArrayList<>();
        int changes;

        @Override
        public MetadataQuorum.Membership membership() {
            return new MetadataQuorum.Membership(voters, Map.of(), changing);
        }

        @Override
        public MetadataQuorum.QuorumState describe(long nowMs) {
            if (!leads) {
                throw new NotQuorumLeaderException("node " + SELF + " does not lead the metadata quorum", OptionalInt.of(3));
            }
            List<MetadataQuorum.ReplicaState> states = new ArrayList<>();
            voters.keySet().forEach(id -> states.add(new MetadataQuorum.ReplicaState(id, 100, nowMs - 10, nowMs - 10)));
            return new MetadataQuorum.QuorumState(SELF, 5, 100, states, List.of(), membership());
        }

        @Override
        public CompletableFuture<Void> changeMembership(MetadataQuorum.Membership expected,
                                                        Map<Integer, InetSocketAddress> voters,
                                                        Map<Integer, InetSocketAddress> observers) {
            changes++;
            return new CompletableFuture<>();
        }

        @Override
        public CompletableFuture<Void> transferLeadership(int nodeId) {
            transfersTo.add(nodeId);
            CompletableFuture<Void> f = new CompletableFuture<>();
            transfers.add(f);
            return f;
        }

        CompletableFuture<Void> lastTransfer() {
            return transfers.get(transfers.size() - 1);
        }
    }

    private static InetSocketAddress addr(int id) {
        return InetSocketAddress.createUnresolved("h" + id, 9000 + id);
    }

    /** Moves the clock on, running the timers that come due. */
    private void advance(long ms) {
        long until = now + ms;
        while (true) {
            Object[] next = timers.stream().filter(t -> (long) t[0] <= until)
                    .min((a, b) -> Long.compare((long) a[0], (long) b[0])).orElse(null);
            if (next == null) {
                break;
            }
            timers.remove(next);
            now = Math.max(now, (long) next[0]);
            ((Runnable) next[1]).run();
        }
        now = until;
    }

    private CompletableFuture<byte[]> removeSelf() {
        return removeSelf(Uuid.randomUuid());
    }

    private CompletableFuture<byte[]> removeSelf(Uuid requestId) {
        byte[] command = ControllerEnvelope.encodeRequest(ApiKeys.REMOVE_RAFT_VOTER, ApiKeys.REMOVE_RAFT_VOTER.latestVersion(),
                new RemoveRaftVoterRequestData().setClusterId(null).setVoterId(SELF).setVoterDirectoryId(new Uuid(100, SELF)), requestId);
        CompletableFuture<byte[]> result = new CompletableFuture<>();
        control.handle(raft, ControllerEnvelope.decodeRequest(command), result);
        return result;
    }

    /** The error the sender sees: the reply's (NOT_CONTROLLER) or the RemoveRaftVoter response's. */
    private static Errors error(CompletableFuture<byte[]> result) {
        assertThat(result).isDone();
        ControllerReply reply = ControllerReply.decode(result.join());
        if (reply.error() != Errors.NONE) {
            return reply.error();
        }
        RemoveRaftVoterResponseData r = (RemoveRaftVoterResponseData) ControllerEnvelope.decodeResponse(
                ApiKeys.REMOVE_RAFT_VOTER, ApiKeys.REMOVE_RAFT_VOTER.latestVersion(), reply.response());
        return Errors.forCode(r.errorCode());
    }

    private static TimeoutException differentLeader(int to, int current) {
        return new TimeoutException("leadership did not move to node " + to + ": " + SELF + "@group-1: Failed to transfer"
                + " leadership to " + to + " (the current leader is " + current + "): DIFFERENT_LEADER");
    }

    @Test
    void aTransferLostToAReElectedLeaderIsRetriedToAnotherVoterAndTheSenderThenAsksTheNewLeader() {
        CompletableFuture<byte[]> result = removeSelf();
        assertThat(raft.transfersTo).containsExactly(1);

        // node 1's election was lost; node 2 was elected again
        raft.lastTransfer().completeExceptionally(differentLeader(1, SELF));
        assertThat(result).as("a transient failed transfer must not fail the request").isNotDone();
        advance(MembershipControl.TRANSFER_RETRY_BACKOFF_MS);
        assertThat(raft.transfersTo).containsExactly(1, 3);

        raft.lastTransfer().complete(null);
        assertThat(error(result)).isEqualTo(Errors.NOT_CONTROLLER); // the broker's channel asks node 3, which removes node 2
        assertThat(raft.changes).isZero();
    }

    @Test
    void aTransferThatEndsWithAThirdLeaderSendsTheSenderThere() {
        CompletableFuture<byte[]> result = removeSelf();
        raft.leads = false; // node 3 won the election that node 1 started
        raft.lastTransfer().completeExceptionally(differentLeader(1, 3));
        assertThat(error(result)).isEqualTo(Errors.NOT_CONTROLLER);
        assertThat(timers).isEmpty();

        // this node leads again later: the sender's retry is decided afresh, not refused as "in progress"
        raft.leads = true;
        CompletableFuture<byte[]> retried = removeSelf();
        assertThat(retried).isNotDone();
        assertThat(raft.transfersTo).containsExactly(1, 1);
    }

    @Test
    void aRetryWaitsWhileTheNewTermsConfigurationIsNotCommitted() {
        CompletableFuture<byte[]> result = removeSelf();
        raft.changing = true; // re-elected: the new term's configuration entry is not committed yet
        raft.lastTransfer().completeExceptionally(differentLeader(1, SELF));
        advance(MembershipControl.TRANSFER_RETRY_BACKOFF_MS);
        assertThat(result).isNotDone();
        assertThat(raft.transfersTo).containsExactly(1);

        raft.changing = false;
        advance(MembershipControl.TRANSFER_RETRY_BACKOFF_MS);
        assertThat(raft.transfersTo).containsExactly(1, 3);
        raft.lastTransfer().complete(null);
        assertThat(error(result)).isEqualTo(Errors.NOT_CONTROLLER);
    }

    @Test
    void theSendersRetryJoinsTheRunningRemovalWhileTransfersAreRetried() {
        Uuid id = Uuid.randomUuid();
        CompletableFuture<byte[]> first = removeSelf(id);
        raft.lastTransfer().completeExceptionally(new TimeoutException("leadership did not move to node 1: TIMED_OUT"));
        CompletableFuture<byte[]> resent = removeSelf(id);
        assertThat(raft.transfersTo).containsExactly(1);

        CompletableFuture<byte[]> other = removeSelf(); // another request meanwhile: one change at a time
        assertThat(error(other)).isEqualTo(Errors.REQUEST_TIMED_OUT);

        advance(MembershipControl.TRANSFER_RETRY_BACKOFF_MS);
        raft.lastTransfer().complete(null);
        assertThat(error(first)).isEqualTo(Errors.NOT_CONTROLLER);
        assertThat(error(resent)).isEqualTo(Errors.NOT_CONTROLLER);
    }

    @Test
    void whenLeadershipNeverMovesTheAnswerIsRequestTimedOutAtTheDeadline() {
        CompletableFuture<byte[]> result = removeSelf();
        long start = now;
        while (!result.isDone()) {
            assertThat(now - start).isLessThan(MembershipControl.TRANSFER_DEADLINE_MS + 10_000);
            advance(3_000); // each attempt takes a while
            int to = raft.transfersTo.get(raft.transfersTo.size() - 1);
            raft.lastTransfer().completeExceptionally(new TimeoutException("leadership did not move to node " + to + ": TIMED_OUT"));
            advance(MembershipControl.TRANSFER_RETRY_BACKOFF_MS);
        }
        assertThat(error(result)).isEqualTo(Errors.REQUEST_TIMED_OUT);
        assertThat(ControllerReply.decode(result.join()).error()).isEqualTo(Errors.NONE);
        assertThat(raft.transfersTo).hasSizeGreaterThan(2).containsOnly(1, 3);
        assertThat(raft.transfersTo.subList(0, 3)).containsExactly(1, 3, 1);

        // the controller is free for the next request
        CompletableFuture<byte[]> next = removeSelf();
        assertThat(next).isNotDone();
    }
}
