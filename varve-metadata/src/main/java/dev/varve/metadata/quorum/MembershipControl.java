package dev.varve.metadata.quorum;

import java.net.InetSocketAddress;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.Consumer;

import dev.varve.metadata.ControllerEnvelope;
import dev.varve.metadata.MetadataRecord;
import dev.varve.metadata.VoterChanges;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.message.AddRaftVoterRequestData;
import org.apache.kafka.common.message.AddRaftVoterResponseData;
import org.apache.kafka.common.message.RemoveRaftVoterRequestData;
import org.apache.kafka.common.message.RemoveRaftVoterResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.utils.Time;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The active controller's side of KIP-853: AddRaftVoter, RemoveRaftVoter and controllers announcing
 * themselves ({@link ControllerAnnouncement}), decided by {@link VoterChanges} on the quorum's Raft
 * membership and carried out as Raft configuration changes ({@link MetadataQuorum#changeMembership}).
 *
 * <p>One change at a time: while one runs, others are answered REQUEST_TIMED_OUT (Kafka's answer; the
 * caller tries again). A retry of a request (same request id, as the Ratis client resends a command whose
 * attempt took a second) joins the running change or gets its answer. Removing the leader first hands
 * leadership to another voter and answers NOT_CONTROLLER, so the sender asks the new leader, which
 * removes it. A transfer that fails (Ratis' DIFFERENT_LEADER when the transferee's election was lost and
 * this node or a third voter leads again, or TIMED_OUT) does not fail the request: when another node
 * leads now the answer is NOT_CONTROLLER too (that leader removes this node); while this node still
 * leads, the removal is decided again and the transfer retried, to the reachable voter tried least, for
 * up to {@link #TRANSFER_DEADLINE_MS}; only then is it REQUEST_TIMED_OUT.
 *
 * <p>Runs on the controller's event thread only (all methods, and the completions it schedules through
 * {@code eventThread}); never blocks: Raft's answers complete futures.
 */
final class MembershipControl {
    private static final Logger LOG = LoggerFactory.getLogger(MembershipControl.class);

    /** An observer is caught up when it fetched within this time... */
    static final long CAUGHT_UP_CONTACT_MS = 5_000;
    /** ...and is at most this many entries behind the leader (Ratis then catches it up before the change). */
    static final long CAUGHT_UP_MAX_LAG_ENTRIES = 1_000;
    /** Answers of finished changes kept for their late retries. */
    private static final int ANSWERS_KEPT = 64;
    /**
     * How long RemoveRaftVoter of the leader starts new leadership transfers for (each may take Ratis'
     * transfer timeout, 4 election timeouts); well inside the 30 s a broker's channel and Kafka's admin
     * client wait for the answer.
     */
    static final long TRANSFER_DEADLINE_MS = 15_000;
    /** The pause before a failed leadership transfer is tried again. */
    static final long TRANSFER_RETRY_BACKOFF_MS = 200;

    /** What membership changes need of the metadata quorum: {@link MetadataQuorum} (a fake in unit tests). */
    interface Raft {
        MetadataQuorum.Membership membership();

        /** @throws NotQuorumLeaderException when this member does not lead */
        MetadataQuorum.QuorumState describe(long nowMs);

        CompletableFuture<Void> changeMembership(MetadataQuorum.Membership expected, Map<Integer, InetSocketAddress> voters,
                                                 Map<Integer, InetSocketAddress> observers);

        CompletableFuture<Void> transferLeadership(int nodeId);
    }

    /** Runs a task on the controller's event thread after a delay; false when the controller is closed. */
    interface Later {
        boolean schedule(long delayMs, Runnable task);
    }

    private final int nodeId;
    private final MetadataLoader loader;
    private final Time time;
    private final Consumer<Runnable> eventThread;
    private final Later later;
    private final Consumer<MetadataRecord.ControllerRegistration> register;
    private volatile String clusterId;
    private volatile String listenerName = "CONTROLLER";

    /** Whether a Raft configuration change (or leadership transfer) started here is running. */
    private boolean changing;
    private final Map<Uuid, CompletableFuture<byte[]>> running = new LinkedHashMap<>();
    private final Map<Uuid, byte[]> answered = new LinkedHashMap<>(16, 0.75f, false) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Uuid, byte[]> eldest) {
            return size() > ANSWERS_KEPT;
        }
    };

    /**
     * @param eventThread runs a task on the controller's event thread
     * @param later       runs a task on the controller's event thread after a delay
     * @param register    commits a controller's registration record (through the controller's decisions)
     */
    MembershipControl(int nodeId, MetadataLoader loader, Time time, Consumer<Runnable> eventThread, Later later,
                      Consumer<MetadataRecord.ControllerRegistration> register) {
        this.nodeId = nodeId;
        this.loader = loader;
        this.time = time;
        this.eventThread = eventThread;
        this.later = later;
        this.register = register;
    }

    void setClusterId(String clusterId) {
        this.clusterId = clusterId;
    }

    void setListenerName(String name) {
        this.listenerName = name;
    }

    /** AddRaftVoter or RemoveRaftVoter from a client (forwarded by a broker). */
    void handle(Raft quorum, ControllerEnvelope.Request request, CompletableFuture<byte[]> result) {
        if (request.hasRequestId()) {
            byte[] done = answered.get(request.requestId());
            if (done != null) {
                result.complete(done);
                return;
            }
            CompletableFuture<byte[]> first = running.get(request.requestId());
            if (first != null) {
                first.whenComplete((bytes, error) -> result.complete(bytes));
                return;
            }
        }
        Decided decided;
        try {
            decided = decide(quorum, request, Map.of());
        } catch (NotQuorumLeaderException e) {
            result.complete(ControllerReply.error(Errors.NOT_CONTROLLER, e.getMessage()).encode());
            return;
        }
        if (decided.decision() instanceof VoterChanges.Refuse r) {
            result.complete(answer(request, r.error(), r.message()));
            return;
        }
        if (changing) {
            result.complete(answer(request, Errors.REQUEST_TIMED_OUT, "A change of the metadata quorum's voters is in progress; try again"));
            return;
        }
        CompletableFuture<byte[]> mine = new CompletableFuture<>();
        if (request.hasRequestId()) {
            running.put(request.requestId(), mine);
            mine.whenComplete((bytes, error) -> {
                running.remove(request.requestId());
                if (bytes != null && ControllerReply.decode(bytes).error() == Errors.NONE) {
                    answered.put(request.requestId(), bytes);
                }
            });
        }
        mine.whenComplete((bytes, error) -> result.complete(bytes));
        changing = true;
        carryOut(quorum, request, decided, new Transfers(time.milliseconds() + TRANSFER_DEADLINE_MS), mine);
    }

    /** A decision and the membership it was made on. */
    private record Decided(VoterChanges.Decision decision, MetadataQuorum.Membership snapshot,
                           VoterChanges.Membership membership) {
    }

    /** The leadership transfers one RemoveRaftVoter of the leader tried: to whom, how often, and until when. */
    private static final class Transfers {
        final long deadlineMs;
        final Map<Integer, Integer> tried = new TreeMap<>();
        String lastFailure;

        Transfers(long deadlineMs) {
            this.deadlineMs = deadlineMs;
        }

        int attempts() {
            return tried.values().stream().mapToInt(Integer::intValue).sum();
        }
    }

    /** @throws NotQuorumLeaderException when this node does not lead */
    private Decided decide(Raft quorum, ControllerEnvelope.Request request, Map<Integer, Integer> transfersTried) {
        MetadataQuorum.Membership snapshot = quorum.membership();
        VoterChanges.Membership membership = membership(snapshot);
        MetadataQuorum.QuorumState state = quorum.describe(time.milliseconds());
        Map<Integer, MetadataRecord.ControllerRegistration> registered = loader.image().controllers();
        VoterChanges.Decision decision;
        if (request.key() == ApiKeys.ADD_RAFT_VOTER) {
            decision = VoterChanges.addVoter((AddRaftVoterRequestData) request.data(), clusterId, listenerName, membership,
                    registered, caughtUp(state, time.milliseconds()));
        } else {
            decision = VoterChanges.removeVoter((RemoveRaftVoterRequestData) request.data(), clusterId, nodeId, membership,
                    registered, reachable(state, time.milliseconds()), transfersTried);
        }
        return new Decided(decision, snapshot, membership);
    }

    /** Carries out a change or a leadership transfer ({@code changing} is set); completes {@code mine} when done. */
    private void carryOut(Raft quorum, ControllerEnvelope.Request request, Decided decided, Transfers transfers,
                          CompletableFuture<byte[]> mine) {
        if (decided.decision() instanceof VoterChanges.TransferLeadership t) {
            transfer(quorum, request, t.successor(), transfers, mine);
            return;
        }
        VoterChanges.Membership membership = decided.membership();
        VoterChanges.Membership next = ((VoterChanges.Change) decided.decision()).next();
        LOG.info("{}: voters {} -> {}, observers {} -> {}", request.key().name, membership.voters().keySet(),
                next.voters().keySet(), membership.observers().keySet(), next.observers().keySet());
        quorum.changeMembership(decided.snapshot(), addresses(next.voters()), addresses(next.observers()))
                .whenComplete((v, error) -> eventThread.accept(() -> {
                    changing = false;
                    if (error == null) {
                        mine.complete(answer(request, Errors.NONE, null));
                    } else if (unwrap(error) instanceof NotQuorumLeaderException) {
                        mine.complete(ControllerReply.error(Errors.NOT_CONTROLLER, messageOf(error)).encode());
                    } else {
                        LOG.warn("{} failed: {}", request.key().name, messageOf(error));
                        mine.complete(answer(request, errorOf(error), messageOf(error)));
                    }
                }));
    }

    private void transfer(Raft quorum, ControllerEnvelope.Request request, int successor, Transfers transfers,
                          CompletableFuture<byte[]> mine) {
        transfers.tried.merge(successor, 1, Integer::sum);
        LOG.info("Node {} hands metadata leadership to node {} before removing itself from the voters (attempt {})",
                nodeId, successor, transfers.attempts());
        quorum.transferLeadership(successor).whenComplete((v, error) -> eventThread.accept(() -> {
            if (error == null) {
                changing = false;
                // the sender asks again; the new leader removes this node
                mine.complete(ControllerReply.error(Errors.NOT_CONTROLLER, "leadership moved to node " + successor
                        + " to remove voter " + nodeId).encode());
                return;
            }
            transfers.lastFailure = messageOf(error);
            LOG.info("Node {}: handing metadata leadership to node {} failed: {}", nodeId, successor, transfers.lastFailure);
            again(quorum, request, transfers, mine, false);
        }));
    }

    /**
     * After a failed leadership transfer ({@code act} false) or the pause before the next attempt
     * ({@code act} true), decided again: when another node leads now (the transferee, or a third voter
     * that won the election) that leader removes this node, so the sender is sent there with
     * NOT_CONTROLLER; a refusal other than "in progress" (say, the voter was removed meanwhile) is the
     * answer; otherwise, after a pause, the transfer is tried again (to the reachable voter tried least),
     * until {@link Transfers#deadlineMs}, then REQUEST_TIMED_OUT.
     */
    private void again(Raft quorum, ControllerEnvelope.Request request, Transfers transfers,
                       CompletableFuture<byte[]> mine, boolean act) {
        Decided decided;
        try {
            decided = decide(quorum, request, transfers.tried);
        } catch (NotQuorumLeaderException e) {
            changing = false;
            mine.complete(ControllerReply.error(Errors.NOT_CONTROLLER, "node " + nodeId + " no longer leads the metadata"
                    + " quorum (" + e.getMessage() + "); the new leader removes voter " + nodeId).encode());
            return;
        }
        if (decided.decision() instanceof VoterChanges.Refuse r) {
            if (r.error() != Errors.REQUEST_TIMED_OUT) {
                changing = false;
                mine.complete(answer(request, r.error(), r.message()));
                return;
            }
            transfers.lastFailure = r.message(); // a new term's configuration entry is not committed yet
        } else if (act) {
            carryOut(quorum, request, decided, transfers, mine);
            return;
        }
        if (time.milliseconds() + TRANSFER_RETRY_BACKOFF_MS >= transfers.deadlineMs) {
            changing = false;
            LOG.warn("Node {}: metadata leadership did not move in {} attempts within {} ms; last: {}", nodeId,
                    transfers.attempts(), TRANSFER_DEADLINE_MS, transfers.lastFailure);
            mine.complete(answer(request, Errors.REQUEST_TIMED_OUT, "Leadership of the metadata quorum did not move away from"
                    + " voter " + nodeId + " to remove it (" + transfers.attempts() + " attempts; last: "
                    + transfers.lastFailure + "); try again"));
            return;
        }
        if (!later.schedule(TRANSFER_RETRY_BACKOFF_MS, () -> again(quorum, request, transfers, mine, true))) {
            changing = false;
            mine.complete(ControllerReply.error(Errors.NOT_CONTROLLER, "controller " + nodeId + " is closed").encode());
        }
    }

    /** A controller announcing itself ({@link ControllerAnnouncement}). */
    void announce(Raft quorum, byte[] command, CompletableFuture<byte[]> result) {
        MetadataRecord.ControllerRegistration registration;
        try {
            registration = ControllerAnnouncement.parse(command);
        } catch (ApiException e) {
            result.complete(ControllerReply.error(Errors.INVALID_REQUEST, e.getMessage()).encode());
            return;
        }
        MetadataQuorum.Membership snapshot = quorum.membership();
        VoterChanges.Membership membership = membership(snapshot);
        VoterChanges.Announcement a = VoterChanges.announce(registration, membership, loader.image().controllers());
        if (a.record() != null) {
            register.accept(a.record());
        }
        if (a.decision() instanceof VoterChanges.Refuse r) {
            result.complete(ControllerReply.error(r.error(), r.message()).encode());
            return;
        }
        if (!(a.decision() instanceof VoterChanges.Change c)) {
            result.complete(ControllerReply.ok(loader.image().offset(), new byte[0]).encode());
            return;
        }
        if (changing) {
            result.complete(ControllerReply.error(Errors.REQUEST_TIMED_OUT, "a membership change is in progress").encode());
            return;
        }
        changing = true;
        LOG.info("Controller {} at {}:{} joins the metadata quorum as an observer", registration.controllerId(),
                registration.endpoint().host(), registration.endpoint().port());
        quorum.changeMembership(snapshot, addresses(c.next().voters()), addresses(c.next().observers()))
                .whenComplete((v, error) -> eventThread.accept(() -> {
                    changing = false;
                    result.complete(error == null ? ControllerReply.ok(loader.image().offset(), new byte[0]).encode()
                            : ControllerReply.error(unwrap(error) instanceof NotQuorumLeaderException ? Errors.NOT_CONTROLLER
                            : errorOf(error), messageOf(error)).encode());
                }));
    }

    /** The quorum's membership in {@link VoterChanges}' terms (endpoints named after the controller listener). */
    VoterChanges.Membership membership(MetadataQuorum.Membership m) {
        return new VoterChanges.Membership(endpoints(m.voters()), endpoints(m.observers()), m.changing());
    }

    private Map<Integer, MetadataRecord.Endpoint> endpoints(Map<Integer, InetSocketAddress> addresses) {
        Map<Integer, MetadataRecord.Endpoint> out = new TreeMap<>();
        addresses.forEach((id, a) -> out.put(id, new MetadataRecord.Endpoint(listenerName,
                a.getHostString().isEmpty() ? "?" : a.getHostString(), a.getPort())));
        return out;
    }

    private static Map<Integer, InetSocketAddress> addresses(Map<Integer, MetadataRecord.Endpoint> endpoints) {
        Map<Integer, InetSocketAddress> out = new TreeMap<>();
        endpoints.forEach((id, e) -> out.put(id, InetSocketAddress.createUnresolved(e.host(), e.port())));
        return out;
    }

    /** Observers that fetched recently and are close to the leader's log end. */
    private static Set<Integer> caughtUp(MetadataQuorum.QuorumState state, long now) {
        Set<Integer> out = new HashSet<>();
        for (MetadataQuorum.ReplicaState r : state.observers()) {
            if (r.lastFetchTimestamp() >= now - CAUGHT_UP_CONTACT_MS
                    && r.logEndOffset() >= state.highWatermark() - CAUGHT_UP_MAX_LAG_ENTRIES) {
                out.add(r.nodeId());
            }
        }
        return out;
    }

    /** Voters and observers the leader heard from recently. */
    private static Set<Integer> reachable(MetadataQuorum.QuorumState state, long now) {
        Set<Integer> out = new HashSet<>();
        for (MetadataQuorum.ReplicaState r : state.voters()) {
            if (r.lastFetchTimestamp() >= now - CAUGHT_UP_CONTACT_MS) {
                out.add(r.nodeId());
            }
        }
        return out;
    }

    private byte[] answer(ControllerEnvelope.Request request, Errors error, String message) {
        ApiMessage data = request.key() == ApiKeys.ADD_RAFT_VOTER
                ? new AddRaftVoterResponseData().setErrorCode(error.code()).setErrorMessage(message)
                : new RemoveRaftVoterResponseData().setErrorCode(error.code()).setErrorMessage(message);
        return ControllerReply.ok(loader.image().offset(),
                ControllerEnvelope.encodeResponse(request.key(), request.version(), data)).encode();
    }

    private static Throwable unwrap(Throwable t) {
        while (t instanceof CompletionException && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    private static Errors errorOf(Throwable error) {
        return Errors.forException(unwrap(error));
    }

    private static String messageOf(Throwable error) {
        return String.valueOf(unwrap(error).getMessage());
    }
}
