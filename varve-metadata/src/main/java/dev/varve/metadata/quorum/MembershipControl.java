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
 * removes it.
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

    private final int nodeId;
    private final MetadataLoader loader;
    private final Time time;
    private final Consumer<Runnable> eventThread;
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
     * @param register    commits a controller's registration record (through the controller's decisions)
     */
    MembershipControl(int nodeId, MetadataLoader loader, Time time, Consumer<Runnable> eventThread,
                      Consumer<MetadataRecord.ControllerRegistration> register) {
        this.nodeId = nodeId;
        this.loader = loader;
        this.time = time;
        this.eventThread = eventThread;
        this.register = register;
    }

    void setClusterId(String clusterId) {
        this.clusterId = clusterId;
    }

    void setListenerName(String name) {
        this.listenerName = name;
    }

    /** AddRaftVoter or RemoveRaftVoter from a client (forwarded by a broker). */
    void handle(MetadataQuorum quorum, ControllerEnvelope.Request request, CompletableFuture<byte[]> result) {
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
        MetadataQuorum.Membership snapshot = quorum.membership();
        VoterChanges.Membership membership = membership(snapshot);
        MetadataQuorum.QuorumState state;
        try {
            state = quorum.describe(time.milliseconds());
        } catch (NotQuorumLeaderException e) {
            result.complete(ControllerReply.error(Errors.NOT_CONTROLLER, e.getMessage()).encode());
            return;
        }
        Map<Integer, MetadataRecord.ControllerRegistration> registered = loader.image().controllers();
        VoterChanges.Decision decision;
        if (request.key() == ApiKeys.ADD_RAFT_VOTER) {
            decision = VoterChanges.addVoter((AddRaftVoterRequestData) request.data(), clusterId, listenerName, membership,
                    registered, caughtUp(state, time.milliseconds()));
        } else {
            decision = VoterChanges.removeVoter((RemoveRaftVoterRequestData) request.data(), clusterId, nodeId, membership,
                    registered, reachable(state, time.milliseconds()));
        }
        if (decision instanceof VoterChanges.Refuse r) {
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
        if (decision instanceof VoterChanges.TransferLeadership t) {
            LOG.info("Node {} hands metadata leadership to node {} before removing itself from the voters", nodeId, t.successor());
            quorum.transferLeadership(t.successor()).whenComplete((v, error) -> eventThread.accept(() -> {
                changing = false;
                if (error != null) {
                    mine.complete(answer(request, errorOf(error), messageOf(error)));
                } else {
                    // the sender asks again; the new leader removes this node
                    mine.complete(ControllerReply.error(Errors.NOT_CONTROLLER, "leadership moved to node " + t.successor()
                            + " to remove voter " + nodeId).encode());
                }
            }));
            return;
        }
        VoterChanges.Membership next = ((VoterChanges.Change) decision).next();
        LOG.info("{}: voters {} -> {}, observers {} -> {}", request.key().name, membership.voters().keySet(),
                next.voters().keySet(), membership.observers().keySet(), next.observers().keySet());
        quorum.changeMembership(snapshot, addresses(next.voters()), addresses(next.observers()))
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

    /** A controller announcing itself ({@link ControllerAnnouncement}). */
    void announce(MetadataQuorum quorum, byte[] command, CompletableFuture<byte[]> result) {
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
