package dev.varve.metadata.quorum;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.ratis.RaftConfigKeys;
import org.apache.ratis.conf.RaftProperties;
import org.apache.ratis.netty.NettyConfigKeys;
import org.apache.ratis.proto.RaftProtos.RaftPeerRole;
import org.apache.ratis.protocol.ClientId;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftClientReply;
import org.apache.ratis.protocol.RaftClientRequest;
import org.apache.ratis.protocol.RaftGroup;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftPeer;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.protocol.exceptions.AlreadyClosedException;
import org.apache.ratis.protocol.exceptions.LeaderNotReadyException;
import org.apache.ratis.protocol.exceptions.LeaderSteppingDownException;
import org.apache.ratis.protocol.exceptions.NotLeaderException;
import org.apache.ratis.protocol.exceptions.ServerNotReadyException;
import org.apache.ratis.protocol.exceptions.TransferLeadershipException;
import org.apache.ratis.rpc.SupportedRpcType;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.server.RaftServerConfigKeys;
import org.apache.ratis.server.storage.RaftStorage;
import org.apache.ratis.thirdparty.com.google.protobuf.ByteString;
import org.apache.ratis.util.SizeInBytes;
import org.apache.ratis.util.TimeDuration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * This node's member of the metadata quorum: a Ratis server (Netty transport) whose replicated log
 * holds opaque metadata entries (one entry = one serialized batch of metadata records).
 *
 * <p>Voters elect a leader; the leader's controller is the only one that acts (it learns so from
 * {@link MetadataListener#onLeadershipChange} with {@code thisNodeLeads == true}). Listeners
 * (broker-only nodes) receive every committed entry but never vote or lead. Every member delivers the
 * committed log to its {@link MetadataListener} in order, once per index, on one thread; see that
 * interface for the exact contract.
 *
 * <p><b>On disk</b> ({@link QuorumConfig#storageDir()}):
 * <pre>
 * &lt;storageDir&gt;/&lt;group uuid&gt;/
 *   in_use.lock
 *   current/raft-meta, raft-meta.conf, log_&lt;first&gt;-&lt;last&gt;, log_inprogress_&lt;first&gt;   Ratis' log
 *   sm/snapshot.&lt;term&gt;_&lt;index&gt; (+ .md5)                                    see {@link SnapshotFile}
 * </pre>
 * A restart loads the newest intact snapshot and replays the log after it. After each snapshot the
 * closed log segments it covers are purged.
 *
 * <p><b>Threading.</b> All public methods are thread-safe. {@link #append} never blocks; its future
 * completes on a Ratis or internal thread, so callers must not block inside its callbacks.
 *
 * <p>Ratis appears only inside this package: callers see {@code byte[]}, node ids and Kafka exceptions.
 */
public final class MetadataQuorum implements AutoCloseable, MembershipControl.Raft {
    private static final Logger log = LoggerFactory.getLogger(MetadataQuorum.class);

    /** Pause before re-submitting an append that met a leader not ready yet (it is committing its first entry). */
    private static final long LEADER_NOT_READY_RETRY_MS = 10;

    private final QuorumConfig config;
    private final RaftGroupId groupId;
    private final RaftPeerId peerId;
    private final ClientId clientId = ClientId.randomId();
    private final AtomicLong callIds = new AtomicLong();
    private final MetadataStateMachine stateMachine;
    private final ScheduledExecutorService scheduler;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final RaftServer server;
    private final RaftServer.Division division;

    private MetadataQuorum(QuorumConfig config, MetadataListener listener, SnapshotSource snapshotSource)
            throws IOException {
        this.config = config;
        this.groupId = RaftGroupId.valueOf(config.groupUuid());
        this.peerId = peerIdOf(config.nodeId());
        this.scheduler = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "varve-metadata-quorum-" + config.nodeId());
            t.setDaemon(true);
            return t;
        });
        this.stateMachine = new MetadataStateMachine(config.nodeId(), listener, snapshotSource, this::onFatal);
        RaftServer built = null;
        try {
            RaftServer.Builder builder = RaftServer.newBuilder()
                    .setServerId(peerId)
                    // an observer starts with no configuration (Ratis' "initializing" state: it neither votes nor
                    // times out) until the leader's configuration names it; a restart recovers it from the log
                    .setGroup(config.role() == QuorumConfig.Role.OBSERVER ? RaftGroup.valueOf(groupId)
                            : RaftGroup.valueOf(groupId, peers(config)))
                    .setStateMachine(stateMachine)
                    .setProperties(properties(config, snapshotSource != null))
                    .setOption(RaftStorage.StartupOption.RECOVER);
            if (config.tls() != null) {
                builder.setParameters(config.tls().parameters());
            }
            built = builder.build();
            built.start();
            this.server = built;
            this.division = built.getDivision(groupId);
        } catch (IOException | RuntimeException e) {
            scheduler.shutdownNow();
            if (built != null) {
                closeQuietly(built);
            }
            throw e;
        }
        // Ratis' leader notifications cover elections; this also catches a leader that stepped down silently.
        long refreshMs = Math.max(50, config.electionTimeoutMinMs() / 2);
        scheduler.scheduleWithFixedDelay(stateMachine::requestLeadershipRefresh, refreshMs, refreshMs,
                TimeUnit.MILLISECONDS);
        if (snapshotSource != null && config.snapshotThresholdEntries() > 0) {
            scheduler.scheduleWithFixedDelay(this::snapshotIfBehind, SNAPSHOT_CHECK_MS, SNAPSHOT_CHECK_MS, TimeUnit.MILLISECONDS);
        }
    }

    /** How often the applied log is checked against the snapshot threshold ({@link #snapshotIfBehind}). */
    private static final long SNAPSHOT_CHECK_MS = 1_000;
    private final AtomicBoolean snapshotRequested = new AtomicBoolean();
    private final AtomicLong snapshotCallIds = new AtomicLong();

    /**
     * Ratis checks its snapshot threshold only right after it handed entries to the state machine, and
     * this state machine applies them on its own thread a moment later: after the last entry of a burst
     * the check may see too few applied and nothing checks again until the next entry, so the log would
     * stay unsnapshotted (and unpurged) for as long as the cluster is quiet. Asks Ratis for the snapshot
     * its threshold missed.
     */
    private void snapshotIfBehind() {
        try {
            var applied = stateMachine.getLastAppliedTermIndex();
            long threshold = config.snapshotThresholdEntries();
            if (closed.get() || applied == null || applied.getIndex() - stateMachine.snapshotIndex() < threshold
                    || !snapshotRequested.compareAndSet(false, true)) {
                return;
            }
            server.snapshotManagementAsync(org.apache.ratis.protocol.SnapshotManagementRequest.newCreate(ClientId.randomId(),
                    peerId, groupId, snapshotCallIds.incrementAndGet(), config.requestTimeoutMs(), threshold))
                    .whenComplete((reply, error) -> snapshotRequested.set(false));
        } catch (RuntimeException e) {
            snapshotRequested.set(false);
            log.debug("Node {}: snapshot request failed", config.nodeId(), e);
        }
    }

    /**
     * Starts this node's quorum member: recovers or formats its storage, loads the latest snapshot,
     * binds the Raft port and joins the group. Returns without waiting for an election.
     *
     * @param listener receives the committed log (see {@link MetadataListener})
     * @param snapshotSource supplies snapshots; {@code null} disables snapshots (the log is then kept
     *        whole and replayed entirely on restart)
     * @throws IOException when the storage cannot be used or the port cannot be bound
     */
    public static MetadataQuorum start(QuorumConfig config, MetadataListener listener, SnapshotSource snapshotSource)
            throws IOException {
        Objects.requireNonNull(config, "config");
        Objects.requireNonNull(listener, "listener");
        return new MetadataQuorum(config, listener, snapshotSource);
    }

    /**
     * Appends one entry to the metadata log.
     *
     * <p>The future completes with the entry's log index once a majority of voters has it and it has
     * been delivered to this node's {@link MetadataListener#onCommitted} — so when it completes, the
     * local image already contains it. It fails with:
     * <ul>
     *   <li>{@link NotQuorumLeaderException} (Kafka's NOT_CONTROLLER) when this node is not the leader, is
     *       a listener, has just been elected and is not ready within the request timeout, or lost
     *       leadership before the commit (then the entry may still commit: see that exception);</li>
     *   <li>{@link TimeoutException} (REQUEST_TIMED_OUT) after {@link QuorumConfig#requestTimeoutMs()};
     *       the entry may still commit;</li>
     *   <li>{@link IllegalArgumentException} when the entry is empty or above
     *       {@link QuorumConfig#maxEntryBytes()};</li>
     *   <li>{@link KafkaException} for anything else (the quorum member stopped after a listener failure, an
     *       I/O error in Ratis).</li>
     * </ul>
     *
     * @param entry the bytes to replicate; copied before this method returns
     */
    public CompletableFuture<Long> append(byte[] entry) {
        Objects.requireNonNull(entry, "entry");
        if (entry.length == 0 || entry.length > config.maxEntryBytes()) {
            return CompletableFuture.failedFuture(new IllegalArgumentException("metadata entry of " + entry.length
                    + " bytes; must be 1.." + config.maxEntryBytes()));
        }
        Throwable failed = stateMachine.failure();
        if (failed != null) {
            return CompletableFuture.failedFuture(new KafkaException("metadata quorum member " + config.nodeId()
                    + " stopped after a failure", failed));
        }
        if (closed.get()) {
            return CompletableFuture.failedFuture(notLeader("metadata quorum member " + config.nodeId()
                    + " is closed", OptionalInt.empty()));
        }
        if (!isVoterNow()) {
            return CompletableFuture.failedFuture(notLeader("node " + config.nodeId()
                    + " is not a voter of the metadata quorum", leaderId()));
        }
        CompletableFuture<Long> result = new CompletableFuture<>();
        long timeoutMs = config.requestTimeoutMs();
        ScheduledFuture<?> timeout = scheduler.schedule(() -> result.completeExceptionally(new TimeoutException(
                "metadata append not committed within " + timeoutMs + " ms; it may still commit")),
                timeoutMs, TimeUnit.MILLISECONDS);
        result.whenComplete((index, error) -> timeout.cancel(false));
        submit(Message.valueOf(ByteString.copyFrom(entry)), result, System.nanoTime() + timeoutMs * 1_000_000);
        return result;
    }

    private void submit(Message message, CompletableFuture<Long> result, long deadlineNanos) {
        if (result.isDone()) {
            return;
        }
        RaftClientRequest request = RaftClientRequest.newBuilder()
                .setClientId(clientId)
                .setServerId(peerId)
                .setGroupId(groupId)
                .setCallId(callIds.incrementAndGet())
                .setMessage(message)
                .setType(RaftClientRequest.writeRequestType())
                .build();
        CompletableFuture<RaftClientReply> reply;
        try {
            reply = server.submitClientRequestAsync(request);
        } catch (IOException | RuntimeException e) {
            result.completeExceptionally(translate(e));
            return;
        }
        reply.whenComplete((r, error) -> {
            if (error != null) {
                result.completeExceptionally(translate(unwrap(error)));
            } else if (r.isSuccess()) {
                result.complete(r.getLogIndex());
            } else if (r.getLeaderNotReadyException() != null && System.nanoTime() + LEADER_NOT_READY_RETRY_MS
                    * 1_000_000 < deadlineNanos && !closed.get()) {
                scheduleRetry(message, result, deadlineNanos);
            } else {
                result.completeExceptionally(translate(r.getException()));
            }
        });
    }

    private void scheduleRetry(Message message, CompletableFuture<Long> result, long deadlineNanos) {
        try {
            scheduler.schedule(() -> submit(message, result, deadlineNanos), LEADER_NOT_READY_RETRY_MS,
                    TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.RejectedExecutionException e) {
            result.completeExceptionally(notLeader("metadata quorum member " + config.nodeId() + " is closed",
                    OptionalInt.empty()));
        }
    }

    private static Throwable unwrap(Throwable t) {
        while (t instanceof CompletionException && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    /** Turns Ratis' exceptions into the Kafka types callers understand. */
    private RuntimeException translate(Throwable t) {
        if (t instanceof NotLeaderException nle) {
            RaftPeer suggested = nle.getSuggestedLeader();
            OptionalInt leader = suggested == null ? leaderId() : OptionalInt.of(nodeIdOf(suggested.getId()));
            if (leader.equals(OptionalInt.of(config.nodeId()))) {
                // Ratis fails pending requests this way when the leader steps down (it may win again).
                return notLeader("node " + config.nodeId() + " lost metadata leadership before the entry committed;"
                        + " it may still commit", OptionalInt.empty());
            }
            return notLeader("node " + config.nodeId() + " is not the metadata leader"
                    + leader.stream().mapToObj(id -> "; the leader is node " + id).findFirst().orElse(""), leader);
        }
        if (t instanceof LeaderNotReadyException) {
            return notLeader("node " + config.nodeId() + " was just elected metadata leader and is not ready yet",
                    OptionalInt.of(config.nodeId()));
        }
        if (t instanceof LeaderSteppingDownException || t instanceof TransferLeadershipException) {
            return notLeader("node " + config.nodeId() + " is stepping down as metadata leader", OptionalInt.empty());
        }
        if (t instanceof AlreadyClosedException || t instanceof ServerNotReadyException) {
            return notLeader("metadata quorum member " + config.nodeId() + " is not running: " + t.getMessage(),
                    OptionalInt.empty());
        }
        if (t instanceof RuntimeException re && !(t.getClass().getName().startsWith("org.apache.ratis."))) {
            return re;
        }
        return new KafkaException("metadata append failed on node " + config.nodeId() + ": " + t, t);
    }

    private static NotQuorumLeaderException notLeader(String message, OptionalInt leaderId) {
        return new NotQuorumLeaderException(message, leaderId);
    }

    /**
     * Sets the handler of commands sent with {@link ControllerClient} that reach this node while it leads
     * (the active controller). Without one, such commands fail.
     */
    public void setCommandHandler(CommandHandler handler) {
        stateMachine.setCommandHandler(handler);
    }

    /**
     * Whether this node is the leader and has announced it through
     * {@link MetadataListener#onLeadershipChange} (so its image includes everything committed before).
     * A snapshot of a moving fact: use the callback to start and stop acting.
     */
    public boolean isLeader() {
        return stateMachine.leads() && division.getInfo().isLeader();
    }

    /** The leader's node id as this node currently knows it; empty during an election. */
    public OptionalInt leaderId() {
        RaftPeerId leader = division.getInfo().getLeaderId();
        return leader == null ? OptionalInt.empty() : OptionalInt.of(nodeIdOf(leader));
    }

    /** One voter or observer as the leader sees it: Kafka's DescribeQuorum ReplicaState. Offsets are Raft log indexes plus one. */
    public record ReplicaState(int nodeId, long logEndOffset, long lastFetchTimestamp, long lastCaughtUpTimestamp) {
    }

    /**
     * The quorum as its leader sees it (Kafka's DescribeQuorum): the high watermark is the commit index plus
     * one; observers are the Raft listeners (and peers being caught up to join); {@code membership} is the
     * configuration they were read from.
     */
    public record QuorumState(int leaderId, long leaderEpoch, long highWatermark, java.util.List<ReplicaState> voters,
                              java.util.List<ReplicaState> observers, Membership membership) {
    }

    /**
     * The quorum's membership in one Raft configuration: voters and observers (Ratis listeners) by node id
     * with their Raft endpoints. {@code changing} while a change is not finished: the configuration is
     * transitional (old and new voters) or not yet committed.
     */
    public record Membership(Map<Integer, InetSocketAddress> voters, Map<Integer, InetSocketAddress> observers,
                             boolean changing) {
        public Membership {
            voters = java.util.Collections.unmodifiableMap(new java.util.TreeMap<>(voters));
            observers = java.util.Collections.unmodifiableMap(new java.util.TreeMap<>(observers));
        }
    }

    /** Whether this member is a voter in its current Raft configuration. */
    private boolean isVoterNow() {
        org.apache.ratis.server.RaftConfiguration conf = division.getRaftConf();
        return conf != null && conf.getPeer(peerId, RaftPeerRole.FOLLOWER) != null;
    }

    /**
     * This member's view of the membership: its current Raft configuration (which it learns from the log,
     * so a follower may lag the leader's by an entry).
     */
    public Membership membership() {
        org.apache.ratis.server.RaftConfiguration conf = division.getRaftConf();
        if (conf == null) {
            return new Membership(Map.of(), Map.of(), false);
        }
        Map<Integer, InetSocketAddress> voters = new java.util.TreeMap<>();
        Map<Integer, InetSocketAddress> observers = new java.util.TreeMap<>();
        for (RaftPeer p : conf.getCurrentPeers(RaftPeerRole.FOLLOWER)) {
            voters.put(nodeIdOf(p.getId()), addressOf(p));
        }
        for (RaftPeer p : conf.getCurrentPeers(RaftPeerRole.LISTENER)) {
            observers.put(nodeIdOf(p.getId()), addressOf(p));
        }
        boolean changing = !conf.getPreviousPeers(RaftPeerRole.FOLLOWER).isEmpty()
                || !conf.getPreviousPeers(RaftPeerRole.LISTENER).isEmpty()
                || conf.getLogEntryIndex() > division.getRaftLog().getLastCommittedIndex();
        return new Membership(voters, observers, changing);
    }

    /** Whether this member is part of the current Raft configuration at all (a voter or a listener). */
    public boolean inConfiguration() {
        org.apache.ratis.server.RaftConfiguration conf = division.getRaftConf();
        return conf != null && conf.getPeer(peerId, RaftPeerRole.FOLLOWER, RaftPeerRole.LISTENER) != null;
    }

    private static InetSocketAddress addressOf(RaftPeer p) {
        String a = p.getAddress();
        int colon = a == null ? -1 : a.lastIndexOf(':');
        if (colon < 0) {
            return InetSocketAddress.createUnresolved(a == null ? "" : a, 0);
        }
        String host = a.substring(0, colon);
        if (host.startsWith("[") && host.endsWith("]")) {
            host = host.substring(1, host.length() - 1);
        }
        try {
            return InetSocketAddress.createUnresolved(host, Integer.parseInt(a.substring(colon + 1)));
        } catch (IllegalArgumentException e) {
            return InetSocketAddress.createUnresolved(host, 0);
        }
    }

    /**
     * Replaces the membership (on the leader) with {@code voters} and {@code observers}, if it still is
     * {@code expected}: a Raft configuration change (Ratis stages new voters until they caught up, then
     * commits the joint and the new configuration). At most one change runs at a time. The future
     * completes once the new configuration is committed, or fails with
     * <ul>
     *   <li>{@link NotQuorumLeaderException} when this member does not lead;</li>
     *   <li>{@link TimeoutException} (Kafka's REQUEST_TIMED_OUT) when another change is in progress, the
     *       membership is no longer {@code expected}, a new voter did not catch up, or nothing committed
     *       within the request timeout (the change may still complete);</li>
     *   <li>{@link org.apache.kafka.common.errors.InvalidRequestException} when Ratis refuses the change
     *       itself (say, one that replaces a majority of the voters at once).</li>
     * </ul>
     */
    public CompletableFuture<Void> changeMembership(Membership expected, Map<Integer, InetSocketAddress> voters,
                                                    Map<Integer, InetSocketAddress> observers) {
        if (voters.isEmpty()) {
            return CompletableFuture.failedFuture(new org.apache.kafka.common.errors.InvalidRequestException(
                    "a metadata quorum needs at least one voter"));
        }
        if (!division.getInfo().isLeader()) {
            return CompletableFuture.failedFuture(notLeader("node " + config.nodeId() + " does not lead the metadata quorum",
                    leaderId()));
        }
        org.apache.ratis.server.RaftConfiguration conf = division.getRaftConf();
        Membership now = membership();
        if (now.changing() || !now.voters().equals(expected.voters()) || !now.observers().equals(expected.observers())) {
            return CompletableFuture.failedFuture(new TimeoutException("the metadata quorum's membership is changing"
                    + " (now voters " + now.voters().keySet() + ", observers " + now.observers().keySet() + "); try again"));
        }
        List<RaftPeer> newVoters = new ArrayList<>();
        voters.forEach((id, a) -> newVoters.add(peer(id, a, RaftPeerRole.FOLLOWER)));
        List<RaftPeer> newListeners = new ArrayList<>();
        observers.forEach((id, a) -> newListeners.add(peer(id, a, RaftPeerRole.LISTENER)));
        org.apache.ratis.protocol.SetConfigurationRequest.Arguments args =
                org.apache.ratis.protocol.SetConfigurationRequest.Arguments.newBuilder()
                        .setServersInNewConf(newVoters)
                        .setListenersInNewConf(newListeners)
                        .setServersInCurrentConf(new ArrayList<>(conf.getCurrentPeers(RaftPeerRole.FOLLOWER)))
                        .setListenersInCurrentConf(new ArrayList<>(conf.getCurrentPeers(RaftPeerRole.LISTENER)))
                        .setMode(org.apache.ratis.protocol.SetConfigurationRequest.Mode.COMPARE_AND_SET)
                        .build();
        org.apache.ratis.protocol.SetConfigurationRequest request = new org.apache.ratis.protocol.SetConfigurationRequest(
                clientId, peerId, groupId, callIds.incrementAndGet(), args);
        CompletableFuture<Void> result = new CompletableFuture<>();
        long timeoutMs = config.requestTimeoutMs();
        ScheduledFuture<?> timeout;
        try {
            timeout = scheduler.schedule(() -> result.completeExceptionally(new TimeoutException(
                    "the metadata quorum's membership change was not committed within " + timeoutMs
                            + " ms; it may still complete")), timeoutMs, TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.RejectedExecutionException e) {
            return CompletableFuture.failedFuture(notLeader("metadata quorum member " + config.nodeId() + " is closed",
                    OptionalInt.empty()));
        }
        result.whenComplete((v, error) -> timeout.cancel(false));
        log.info("Node {}: changing the metadata quorum's membership from voters {} observers {} to voters {} observers {}",
                config.nodeId(), now.voters().keySet(), now.observers().keySet(), voters.keySet(), observers.keySet());
        CompletableFuture<RaftClientReply> reply;
        try {
            reply = server.setConfigurationAsync(request);
        } catch (IOException | RuntimeException e) {
            result.completeExceptionally(translateMembership(e));
            return result;
        }
        reply.whenComplete((r, error) -> {
            if (error != null) {
                result.completeExceptionally(translateMembership(unwrap(error)));
            } else if (r.isSuccess()) {
                result.complete(null);
            } else {
                result.completeExceptionally(translateMembership(r.getException()));
            }
        });
        return result;
    }

    /**
     * Hands leadership (on the leader) to voter {@code nodeId}, which Ratis first catches up. Needed before
     * the leader is removed from the voters: Ratis closes a leader that is not in the committed new
     * configuration and never steps down one that became a listener. Completes once the other voter
     * leads; fails with {@link NotQuorumLeaderException} when this member does not lead, with
     * {@link TimeoutException} when the transfer did not happen: not in time (Ratis' TIMED_OUT), or another
     * leader was elected, this member again or a third voter (Ratis' DIFFERENT_LEADER, when the transferee's
     * election failed: slow votes on a busy machine). Either is transient; {@link MembershipControl}
     * retries.
     */
    public CompletableFuture<Void> transferLeadership(int nodeId) {
        if (!division.getInfo().isLeader()) {
            return CompletableFuture.failedFuture(notLeader("node " + config.nodeId() + " does not lead the metadata quorum",
                    leaderId()));
        }
        long timeoutMs = Math.max(3_000, 4 * config.electionTimeoutMaxMs());
        CompletableFuture<Void> result = new CompletableFuture<>();
        try {
            server.transferLeadershipAsync(new org.apache.ratis.protocol.TransferLeadershipRequest(clientId, peerId, groupId,
                    callIds.incrementAndGet(), peerIdOf(nodeId), timeoutMs)).whenComplete((r, error) -> {
                        if (error != null) {
                            result.completeExceptionally(translateMembership(unwrap(error)));
                        } else if (r.isSuccess()) {
                            result.complete(null);
                        } else {
                            Throwable t = r.getException();
                            result.completeExceptionally(t instanceof TransferLeadershipException
                                    ? new TimeoutException("leadership did not move to node " + nodeId + ": " + t.getMessage())
                                    : translateMembership(t));
                        }
                    });
        } catch (IOException | RuntimeException e) {
            result.completeExceptionally(translateMembership(e));
        }
        return result;
    }

    private RuntimeException translateMembership(Throwable t) {
        if (t instanceof org.apache.ratis.protocol.exceptions.ReconfigurationInProgressException) {
            return new TimeoutException("another membership change of the metadata quorum is in progress: " + t.getMessage());
        }
        if (t instanceof org.apache.ratis.protocol.exceptions.ReconfigurationTimeoutException) {
            return new TimeoutException("a new voter did not catch up with the metadata log in time: " + t.getMessage());
        }
        if (t instanceof org.apache.ratis.protocol.exceptions.SetConfigurationException) {
            String m = String.valueOf(t.getMessage());
            return m.contains("majority") ? new org.apache.kafka.common.errors.InvalidRequestException(m)
                    : new TimeoutException("the metadata quorum's membership changed meanwhile: " + m);
        }
        return translate(t);
    }

    /** When each follower was last seen caught up to the leader's log end (leader only). */
    private final java.util.concurrent.ConcurrentHashMap<Integer, Long> lastCaughtUp = new java.util.concurrent.ConcurrentHashMap<>();

    /**
     * The quorum's state from Ratis' leader: each voter's log end (its match index plus one; the
     * leader's own last index plus one), when the leader last heard from it, and when it was last
     * seen at the leader's log end. Only the leader knows its followers' progress.
     *
     * @throws NotQuorumLeaderException when this member does not lead
     */
    public QuorumState describe(long nowMs) {
        org.apache.ratis.server.DivisionInfo info = division.getInfo();
        if (!info.isLeader()) {
            throw notLeader("node " + config.nodeId() + " does not lead the metadata quorum", leaderId());
        }
        Membership membership = membership();
        // Ratis reports the followers (with their last contact) and their match indexes by two calls, in the
        // same order (its list of log appenders, listeners and peers being staged included); an appender
        // restarted between the calls moves to the end, so the two are paired only when the order read
        // before and after the indexes is the same
        java.util.List<org.apache.ratis.proto.RaftProtos.ServerRpcProto> followers = null;
        long[] match = null;
        for (int attempt = 0; attempt < 3 && followers == null; attempt++) {
            java.util.List<org.apache.ratis.proto.RaftProtos.ServerRpcProto> before = info.getRoleInfoProto().getLeaderInfo().getFollowerInfoList();
            long[] indexes = info.getFollowerMatchIndices();
            java.util.List<org.apache.ratis.proto.RaftProtos.ServerRpcProto> after = info.getRoleInfoProto().getLeaderInfo().getFollowerInfoList();
            if (indexes == null || !info.isLeader()) {
                throw notLeader("node " + config.nodeId() + " no longer leads the metadata quorum", leaderId());
            }
            if (indexes.length == before.size() && idsOf(before).equals(idsOf(after))) {
                followers = before;
                match = indexes;
            }
        }
        if (followers == null) {
            throw notLeader("the metadata quorum's followers changed while being described; ask again", leaderId());
        }
        long term = info.getCurrentTerm();
        if (term != describedTerm) { // a new leadership: what an earlier term saw of the followers is not this one's
            lastCaughtUp.clear();
            describedTerm = term;
        }
        long leaderEnd = lastLogIndex() + 1;
        java.util.Map<Integer, ReplicaState> seen = new java.util.HashMap<>();
        seen.put(config.nodeId(), new ReplicaState(config.nodeId(), leaderEnd, nowMs, nowMs));
        for (int i = 0; i < followers.size(); i++) {
            int id = nodeIdOf(RaftPeerId.valueOf(followers.get(i).getId().getId()));
            long end = match[i] + 1;
            long fetched = nowMs - followers.get(i).getLastRpcElapsedTimeMs();
            if (end >= leaderEnd) {
                lastCaughtUp.put(id, fetched);
            }
            seen.put(id, new ReplicaState(id, end, fetched, lastCaughtUp.getOrDefault(id, -1L)));
        }
        java.util.List<ReplicaState> voters = new java.util.ArrayList<>();
        for (int id : membership.voters().keySet()) {
            voters.add(seen.getOrDefault(id, new ReplicaState(id, -1, -1, -1)));
        }
        if (!membership.voters().containsKey(config.nodeId())) {
            voters.add(seen.get(config.nodeId())); // a leader being removed still leads until the change commits
        }
        java.util.List<ReplicaState> observers = new java.util.ArrayList<>();
        for (ReplicaState r : seen.values()) {
            if (!membership.voters().containsKey(r.nodeId()) && r.nodeId() != config.nodeId()) {
                observers.add(r);
            }
        }
        voters.sort(java.util.Comparator.comparingInt(ReplicaState::nodeId));
        observers.sort(java.util.Comparator.comparingInt(ReplicaState::nodeId));
        return new QuorumState(config.nodeId(), term, division.getRaftLog().getLastCommittedIndex() + 1, voters,
                observers, membership);
    }

    /** The term {@link #lastCaughtUp} was gathered in. */
    private volatile long describedTerm = -1;

    private static java.util.List<org.apache.ratis.thirdparty.com.google.protobuf.ByteString> idsOf(
            java.util.List<org.apache.ratis.proto.RaftProtos.ServerRpcProto> followers) {
        java.util.List<org.apache.ratis.thirdparty.com.google.protobuf.ByteString> ids = new java.util.ArrayList<>();
        for (org.apache.ratis.proto.RaftProtos.ServerRpcProto f : followers) {
            ids.add(f.getId().getId());
        }
        return ids;
    }

    /** The index of the last entry in this member's Raft log (committed or not); -1 if empty. */
    public long lastLogIndex() {
        org.apache.ratis.server.protocol.TermIndex last = division.getRaftLog().getLastEntryTermIndex();
        return last == null ? -1 : last.getIndex();
    }

    /** The current Raft term (the leader epoch). */
    public long currentTerm() {
        return division.getInfo().getCurrentTerm();
    }

    /** The last log index delivered to the listener (or covered by the loaded snapshot); -1 if none. */
    public long appliedIndex() {
        return stateMachine.getLastAppliedTermIndex().getIndex();
    }

    /** The index of the newest snapshot taken or loaded; -1 if none. */
    public long snapshotIndex() {
        return stateMachine.snapshotIndex();
    }

    public QuorumConfig config() {
        return config;
    }

    /** The listener failure that stopped this member, if any. */
    public Optional<Throwable> failure() {
        return Optional.ofNullable(stateMachine.failure());
    }

    /**
     * Stops the Raft server: committed entries still queued are delivered first, then (with
     * {@link QuorumConfig#snapshotOnClose()}) a snapshot is taken. Pending appends fail with
     * {@link NotQuorumLeaderException}. Idempotent; every caller returns once the member is fully stopped.
     */
    @Override
    public synchronized void close() {
        if (!closed.compareAndSet(false, true)) {
            return; // a second caller waited on the monitor until the first one finished
        }
        try {
            server.close();
        } catch (IOException e) {
            log.warn("Node {}: error closing the metadata quorum member", config.nodeId(), e);
        } finally {
            scheduler.shutdownNow();
            stateMachine.close();
        }
    }

    private void onFatal(Throwable t) {
        Thread stopper = new Thread(this::close, "varve-metadata-quorum-stop-" + config.nodeId());
        stopper.setDaemon(true);
        stopper.start();
    }

    // ---------------------------------------------------------------- Ratis set-up

    static RaftPeerId peerIdOf(int nodeId) {
        return RaftPeerId.valueOf(Integer.toString(nodeId));
    }

    static int nodeIdOf(RaftPeerId peerId) {
        return Integer.parseInt(peerId.toString());
    }

    private static List<RaftPeer> peers(QuorumConfig config) {
        List<RaftPeer> peers = new ArrayList<>();
        for (Map.Entry<Integer, InetSocketAddress> e : config.voters().entrySet()) {
            peers.add(peer(e.getKey(), e.getValue(), RaftPeerRole.FOLLOWER));
        }
        for (Map.Entry<Integer, InetSocketAddress> e : config.listeners().entrySet()) {
            peers.add(peer(e.getKey(), e.getValue(), RaftPeerRole.LISTENER));
        }
        return peers;
    }

    private static RaftPeer peer(int nodeId, InetSocketAddress address, RaftPeerRole role) {
        String host = address.getHostString();
        String hostPort = (host.indexOf(':') >= 0 ? "[" + host + "]" : host) + ":" + address.getPort();
        return RaftPeer.newBuilder().setId(peerIdOf(nodeId)).setAddress(hostPort).setStartupRole(role).build();
    }

    private static RaftProperties properties(QuorumConfig config, boolean snapshots) {
        RaftProperties p = new RaftProperties();
        if (config.tls() != null) {
            QuorumTls.useGrpc(p, config.address());
        } else {
            RaftConfigKeys.Rpc.setType(p, SupportedRpcType.NETTY);
            NettyConfigKeys.Server.setHost(p, config.address().getHostString());
            NettyConfigKeys.Server.setPort(p, config.address().getPort());
        }
        RaftServerConfigKeys.setStorageDir(p, List.of(config.storageDir().toFile()));

        RaftServerConfigKeys.Rpc.setTimeoutMin(p, ms(config.electionTimeoutMinMs()));
        RaftServerConfigKeys.Rpc.setTimeoutMax(p, ms(config.electionTimeoutMaxMs()));
        if (config.voters().size() == 1 && config.role() == QuorumConfig.Role.VOTER) {
            // Nobody to compete with: a single voter need not wait a whole election timeout at start.
            RaftServerConfigKeys.Rpc.setFirstElectionTimeoutMin(p, ms(10));
            RaftServerConfigKeys.Rpc.setFirstElectionTimeoutMax(p, ms(20));
        }
        // Server-to-server RPCs (append entries, votes) must be able to wait longer than an election round.
        RaftServerConfigKeys.Rpc.setRequestTimeout(p, ms(Math.max(3_000, 2 * config.electionTimeoutMaxMs())));

        // The leader's log appender otherwise waits up to 10 ms to batch: that is most of a commit's latency here.
        RaftServerConfigKeys.Log.Appender.setWaitTimeMin(p, ms(0));

        boolean autoSnapshot = snapshots && config.snapshotThresholdEntries() > 0;
        RaftServerConfigKeys.Snapshot.setAutoTriggerEnabled(p, autoSnapshot);
        if (autoSnapshot) {
            RaftServerConfigKeys.Snapshot.setAutoTriggerThreshold(p, config.snapshotThresholdEntries());
        }
        RaftServerConfigKeys.Snapshot.setTriggerWhenStopEnabled(p, snapshots && config.snapshotOnClose());
        RaftServerConfigKeys.Snapshot.setRetentionFileNum(p, config.snapshotsRetained());
        // Purge the log a snapshot covers even if a follower lags: it then gets the snapshot installed.
        RaftServerConfigKeys.Log.setPurgeUptoSnapshotIndex(p, true);
        RaftServerConfigKeys.Log.setPurgeGap(p, (int) Math.max(1, Math.min(1024,
                config.snapshotThresholdEntries() == 0 ? 1024 : config.snapshotThresholdEntries())));
        RaftServerConfigKeys.Log.setSegmentSizeMax(p, SizeInBytes.valueOf(config.logSegmentBytes()));
        return p;
    }

    private static TimeDuration ms(long millis) {
        return TimeDuration.valueOf(millis, TimeUnit.MILLISECONDS);
    }

    private static void closeQuietly(RaftServer server) {
        try {
            server.close();
        } catch (IOException | RuntimeException e) {
            log.debug("ignored while cleaning up a failed start", e);
        }
    }

    @Override
    public String toString() {
        return "MetadataQuorum{node=" + config.nodeId() + ", role=" + config.role() + ", group=" + groupId + "}";
    }
}
