package dev.varve.metadata;

import dev.varve.metadata.MetadataRecord.ControllerRegistration;
import dev.varve.metadata.MetadataRecord.Endpoint;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.AddRaftVoterRequestData;
import org.apache.kafka.common.message.RemoveRaftVoterRequestData;
import org.apache.kafka.common.protocol.Errors;

import java.util.Collections;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;

/**
 * The rules of KIP-853's membership changes, decided on plain values: AddRaftVoter, RemoveRaftVoter and
 * a controller announcing itself. The caller (the active controller) reads the quorum's membership from
 * Raft, asks here what to do, and carries it out (a Raft configuration change, a leadership transfer, a
 * {@link ControllerRegistration} record). Kafka's error codes for bad input:
 * <ul>
 *   <li>INCONSISTENT_CLUSTER_ID: the request names another cluster (a null cluster id is accepted);</li>
 *   <li>INVALID_REQUEST: no valid voter (negative id, zero directory id) or, for AddRaftVoter, no endpoint
 *       for the controller listener;</li>
 *   <li>REQUEST_TIMED_OUT: a membership change is in progress, or the controller to add is not a caught-up
 *       observer with that directory id (Kafka's "lagging behind"); the caller may try again;</li>
 *   <li>DUPLICATE_VOTER: the id is already a voter;</li>
 *   <li>VOTER_NOT_FOUND: removing an id (and directory id) that is not a voter, or the last voter.</li>
 * </ul>
 *
 * <p>Pure and stateless.
 */
public final class VoterChanges {
    private VoterChanges() {
    }

    /**
     * The quorum's membership as the leader's Raft configuration has it: voters and observers (Raft
     * listeners) by node id with their Raft endpoints; {@code changing} while a change is not committed.
     */
    public record Membership(Map<Integer, Endpoint> voters, Map<Integer, Endpoint> observers, boolean changing) {
        public Membership {
            voters = Collections.unmodifiableMap(new TreeMap<>(voters));
            observers = Collections.unmodifiableMap(new TreeMap<>(observers));
        }

        boolean contains(int id) {
            return voters.containsKey(id) || observers.containsKey(id);
        }
    }

    /** What to do about a request: answer an error, change the membership, or first hand leadership over. */
    public sealed interface Decision {
    }

    /** Refuse with a Kafka error and a message for the operator. */
    public record Refuse(Errors error, String message) implements Decision {
        public Refuse {
            Objects.requireNonNull(error, "error");
            if (error == Errors.NONE) {
                throw new IllegalArgumentException("a refusal needs an error");
            }
        }
    }

    /** Replace the membership with {@code next} (compare-and-set against the one decided on). */
    public record Change(Membership next) implements Decision {
    }

    /**
     * The voter to remove leads: Raft cannot remove its own leader cleanly, so leadership moves to
     * {@code successor} first and the request is decided again there. The successor is a voter the leader
     * hears from, preferring one that fewer failed transfers were tried to (then the lowest id).
     */
    public record TransferLeadership(int successor) implements Decision {
    }

    /** Nothing to change. */
    public record Unchanged() implements Decision {
    }

    /**
     * AddRaftVoter: makes the observer {@code voterId} a voter, reachable at the request's endpoint for
     * {@code controllerListener}.
     *
     * @param registered        the controllers' registrations (their directory ids)
     * @param caughtUpObservers observers that fetched recently and are close to the leader's log end
     */
    public static Decision addVoter(AddRaftVoterRequestData request, String clusterId, String controllerListener,
                                    Membership membership, Map<Integer, ControllerRegistration> registered,
                                    Set<Integer> caughtUpObservers) {
        Refuse wrongCluster = checkCluster(request.clusterId(), clusterId);
        if (wrongCluster != null) {
            return wrongCluster;
        }
        int id = request.voterId();
        Uuid directory = request.voterDirectoryId();
        if (id < 0 || directory == null || Uuid.ZERO_UUID.equals(directory)) {
            return new Refuse(Errors.INVALID_REQUEST, "Add voter request didn't include a valid voter (id " + id
                    + ", directory id " + directory + ")");
        }
        AddRaftVoterRequestData.Listener listener = request.listeners().find(controllerListener);
        if (listener == null) {
            return new Refuse(Errors.INVALID_REQUEST, "Add voter request didn't include an endpoint for the controller"
                    + " listener " + controllerListener + " (it named " + listenerNames(request) + ")");
        }
        if (listener.host() == null || listener.host().isBlank() || listener.port() < 1 || listener.port() > 65_535) {
            return new Refuse(Errors.INVALID_REQUEST, "Add voter request's endpoint " + listener.host() + ":" + listener.port()
                    + " for " + controllerListener + " is not a host and port");
        }
        if (membership.changing()) {
            return inProgress();
        }
        if (membership.voters().containsKey(id)) {
            return new Refuse(Errors.DUPLICATE_VOTER, "The voter id " + id + " is already part of the set of voters "
                    + membership.voters().keySet());
        }
        ControllerRegistration r = registered.get(id);
        if (!membership.observers().containsKey(id) || r == null) {
            return new Refuse(Errors.REQUEST_TIMED_OUT, "Controller " + id + " is not an observer of the metadata quorum:"
                    + " start it (process.roles with controller, node.id " + id + ") and try again once it follows the log");
        }
        if (!r.directoryId().equals(directory)) {
            return new Refuse(Errors.REQUEST_TIMED_OUT, "Controller " + id + " observes the metadata quorum with directory id "
                    + r.directoryId() + ", not " + directory);
        }
        if (!caughtUpObservers.contains(id)) {
            return new Refuse(Errors.REQUEST_TIMED_OUT, "Controller " + id + " is lagging behind the metadata log; try again");
        }
        Map<Integer, Endpoint> voters = new TreeMap<>(membership.voters());
        voters.put(id, new Endpoint(controllerListener, listener.host(), listener.port()));
        Map<Integer, Endpoint> observers = new TreeMap<>(membership.observers());
        observers.remove(id);
        return new Change(new Membership(voters, observers, false));
    }

    /**
     * RemoveRaftVoter: removes voter {@code voterId} with its directory id (which must not be zero, as in
     * Kafka; any directory id matches a voter that never registered one). A voter still in touch with the leader ({@code reachable}) stays
     * an observer, as in Kafka, so it keeps following the log until it is shut down; one that is not is
     * dropped from the configuration.
     */
    public static Decision removeVoter(RemoveRaftVoterRequestData request, String clusterId, int leaderId,
                                       Membership membership, Map<Integer, ControllerRegistration> registered,
                                       Set<Integer> reachable) {
        return removeVoter(request, clusterId, leaderId, membership, registered, reachable, Map.of());
    }

    /**
     * RemoveRaftVoter decided again after leadership transfers failed ({@code transfersTried}: how many
     * were tried to each voter), so that removing the leader tries another successor next (a reachable
     * voter tried least, then the lowest id) rather than the same one over and over.
     */
    public static Decision removeVoter(RemoveRaftVoterRequestData request, String clusterId, int leaderId,
                                       Membership membership, Map<Integer, ControllerRegistration> registered,
                                       Set<Integer> reachable, Map<Integer, Integer> transfersTried) {
        Refuse wrongCluster = checkCluster(request.clusterId(), clusterId);
        if (wrongCluster != null) {
            return wrongCluster;
        }
        int id = request.voterId();
        Uuid directory = request.voterDirectoryId() == null ? Uuid.ZERO_UUID : request.voterDirectoryId();
        if (id < 0 || Uuid.ZERO_UUID.equals(directory)) {
            return new Refuse(Errors.INVALID_REQUEST, "Remove voter request didn't include a valid voter (id " + id
                    + ", directory id " + directory + ")");
        }
        if (membership.changing()) {
            return inProgress();
        }
        ControllerRegistration r = registered.get(id);
        Uuid known = r == null ? Uuid.ZERO_UUID : r.directoryId();
        if (!membership.voters().containsKey(id) || !(known.equals(directory) || Uuid.ZERO_UUID.equals(known))) {
            return new Refuse(Errors.VOTER_NOT_FOUND, "Cannot remove voter " + id + " with directory id " + directory
                    + " from the set of voters " + describe(membership, registered));
        }
        if (membership.voters().size() == 1) {
            return new Refuse(Errors.VOTER_NOT_FOUND, "Cannot remove voter " + id + ": it is the last voter of the metadata quorum");
        }
        if (id == leaderId) {
            int successor = -1;
            for (int other : membership.voters().keySet()) { // ascending ids: only a strictly better one replaces
                if (other != id && (successor < 0 || betterSuccessor(other, successor, reachable, transfersTried))) {
                    successor = other;
                }
            }
            return new TransferLeadership(successor);
        }
        Map<Integer, Endpoint> voters = new TreeMap<>(membership.voters());
        Endpoint removed = voters.remove(id);
        Map<Integer, Endpoint> observers = new TreeMap<>(membership.observers());
        if (reachable.contains(id)) {
            observers.put(id, removed);
        }
        return new Change(new Membership(voters, observers, false));
    }

    /**
     * A controller announced itself: its registration is recorded when new or changed (a controller whose id
     * is a voter registered with another directory is refused: a voter's identity does not change), and a
     * controller outside the configuration becomes an observer so it follows the log.
     *
     * @return the record to commit (null when unchanged) and the membership decision
     */
    public static Announcement announce(ControllerRegistration registration, Membership membership,
                                        Map<Integer, ControllerRegistration> registered) {
        ControllerRegistration before = registered.get(registration.controllerId());
        int id = registration.controllerId();
        if (Uuid.ZERO_UUID.equals(registration.directoryId())) {
            return new Announcement(null, new Refuse(Errors.INVALID_REQUEST, "controller " + id + " has no directory id"));
        }
        if (before != null && !before.directoryId().equals(registration.directoryId()) && membership.voters().containsKey(id)) {
            return new Announcement(null, new Refuse(Errors.INCONSISTENT_VOTER_SET, "controller " + id + " is a voter with"
                    + " directory id " + before.directoryId() + " but announced directory id " + registration.directoryId()
                    + ": remove the voter with its old directory id (remove-controller) before it can join again"));
        }
        ControllerRegistration record = registration.equals(before) ? null : registration;
        if (membership.contains(id)) {
            return new Announcement(record, new Unchanged());
        }
        if (membership.changing()) {
            return new Announcement(record, inProgress());
        }
        Map<Integer, Endpoint> observers = new TreeMap<>(membership.observers());
        observers.put(id, registration.endpoint());
        return new Announcement(record, new Change(new Membership(membership.voters(), observers, false)));
    }

    /** The outcome of a controller's announcement: a registration record to commit (or null) and what to do. */
    public record Announcement(ControllerRegistration record, Decision decision) {
    }

    private static boolean betterSuccessor(int a, int b, Set<Integer> reachable, Map<Integer, Integer> tried) {
        if (reachable.contains(a) != reachable.contains(b)) {
            return reachable.contains(a);
        }
        return tried.getOrDefault(a, 0) < tried.getOrDefault(b, 0);
    }

    private static Refuse checkCluster(String requested, String clusterId) {
        if (requested != null && !requested.equals(clusterId)) {
            return new Refuse(Errors.INCONSISTENT_CLUSTER_ID, "The given cluster id \"" + requested
                    + "\" doesn't match the cluster id \"" + clusterId + "\"");
        }
        return null;
    }

    private static Refuse inProgress() {
        return new Refuse(Errors.REQUEST_TIMED_OUT, "A change of the metadata quorum's voters is in progress; try again");
    }

    private static String listenerNames(AddRaftVoterRequestData request) {
        StringBuilder b = new StringBuilder("[");
        for (AddRaftVoterRequestData.Listener l : request.listeners()) {
            b.append(b.length() > 1 ? ", " : "").append(l.name());
        }
        return b.append(']').toString();
    }

    private static String describe(Membership membership, Map<Integer, ControllerRegistration> registered) {
        StringBuilder b = new StringBuilder("[");
        for (int id : membership.voters().keySet()) {
            ControllerRegistration r = registered.get(id);
            b.append(b.length() > 1 ? ", " : "").append(id).append('/').append(r == null ? "?" : r.directoryId());
        }
        return b.append(']').toString();
    }
}
