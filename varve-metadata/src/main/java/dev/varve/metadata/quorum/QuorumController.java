package dev.varve.metadata.quorum;

import java.util.ArrayDeque;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.ArrayList;
import java.util.OptionalInt;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import dev.varve.metadata.BrokerRegistration;
import dev.varve.metadata.ControllerApis;
import dev.varve.metadata.ControllerEnvelope;
import dev.varve.metadata.ControllerLogic;
import dev.varve.metadata.ControllerResult;
import dev.varve.metadata.MetadataImage;
import dev.varve.metadata.MetadataRecord;
import dev.varve.metadata.MetadataRecordSerde;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.utils.Time;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The controller role of a voter: while this node leads the metadata quorum it is the active
 * controller. It serves commands from brokers ({@link ControllerClient} → {@link CommandHandler}) and
 * fences brokers whose sessions expire, deciding with {@link ControllerLogic} and committing the records
 * through {@link MetadataQuorum#append}.
 *
 * <p><b>Decisions in order, committed in batches.</b> Everything runs on one event thread. Commands that
 * arrive while an entry is being committed wait; then all of them are decided in arrival order, each on
 * the image including the decisions before it, and their records go into one entry (group commit), so
 * every decision sees every earlier one (two CreateTopics of one name, two producer-id blocks, can never
 * both succeed) and a burst of commands costs one quorum round trip. Batches without records (most
 * heartbeats) are answered at once. A new term starts with fresh heartbeat sessions (brokers get a full
 * session timeout to reach the new controller).
 *
 * <p><b>Retries.</b> A command carrying a request id ({@link ControllerEnvelope}) is decided once: a
 * retry that arrives while it waits or commits joins it, and a retry after the commit, at this or any
 * later controller, gets the committed answer ({@link MetadataRecord.CommandReply},
 * {@link MetadataLoader#replyTo}).
 *
 * <p>If an append fails (leadership lost, timeout), the entry may still commit later; the controller
 * answers the command with the error and decides nothing more until the quorum re-announces this node
 * as leader, which happens only after everything committed before is applied.
 */
public final class QuorumController implements CommandHandler, MetadataLoader.ImageListener, AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(QuorumController.class);

    private final int nodeId;
    private final MetadataLoader loader;
    private final Supplier<ControllerLogic> logicFactory;
    private final Time time;
    private final long tickIntervalMs;
    private final long preferredElectionIntervalMs;
    /** Event thread only: when the next preferred-leader election runs. */
    private long nextPreferredElectionMs;
    private final ScheduledExecutorService events;
    private volatile MetadataQuorum quorum;

    // event thread only
    private ControllerApis apis;
    private ControllerLogic logic;
    private boolean active;
    private long activeTerm = -1;
    private boolean inFlight;
    private final Deque<Pending> waiting = new ArrayDeque<>();
    /** Commands with a request id that are waiting or being committed, by id (their retries join them). */
    private final java.util.Map<org.apache.kafka.common.Uuid, CompletableFuture<byte[]>> pendingById = new java.util.HashMap<>();
    private ScheduledFuture<?> ticker;
    /** After a failed append: the leader's last log index then; active again once applied up to it. */
    private long recoverAtIndex = -1;
    private long recoverTerm = -1;

    /** Without automatic preferred-leader elections. */
    public QuorumController(int nodeId, MetadataLoader loader, Supplier<ControllerLogic> logicFactory, Time time,
                            long tickIntervalMs) {
        this(nodeId, loader, logicFactory, time, tickIntervalMs, 0);
    }

    /**
     * @param preferredElectionIntervalMs how often leaders are moved back to their preferred replica
     *        (Kafka's {@code auto.leader.rebalance.enable} with {@code leader.imbalance.check.interval.seconds});
     *        0 disables it
     */
    public QuorumController(int nodeId, MetadataLoader loader, Supplier<ControllerLogic> logicFactory, Time time,
                            long tickIntervalMs, long preferredElectionIntervalMs) {
        this.nodeId = nodeId;
        this.loader = loader;
        this.logicFactory = logicFactory;
        this.time = time;
        this.tickIntervalMs = tickIntervalMs;
        this.preferredElectionIntervalMs = preferredElectionIntervalMs;
        this.events = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "varve-controller-" + nodeId);
            t.setDaemon(true);
            return t;
        });
        loader.addListener(this);
        this.membership = new MembershipControl(nodeId, loader, time, this::run, this::runLater, this::register);
    }

    /** KIP-853: AddRaftVoter, RemoveRaftVoter and controllers announcing themselves. */
    private final MembershipControl membership;

    /** The cluster id AddRaftVoter and RemoveRaftVoter requests are checked against (Kafka's INCONSISTENT_CLUSTER_ID). */
    public void setClusterId(String clusterId) {
        membership.setClusterId(clusterId);
    }

    /** Event thread only: commits a controller's registration among the next decisions. */
    private void register(MetadataRecord.ControllerRegistration registration) {
        if (!active) {
            return;
        }
        waiting.add(new Pending(null, new CompletableFuture<>(), registration));
        drain();
    }

    private void serveAnnouncement(byte[] command, CompletableFuture<byte[]> result) {
        MetadataQuorum q = quorum;
        if (!active || q == null) {
            result.complete(ControllerReply.error(Errors.NOT_CONTROLLER, "node " + nodeId + " is not the active controller").encode());
            return;
        }
        membership.announce(q, command, result);
    }

    /** Probes silent brokers' endpoints (null: brokers are fenced by session timeout only). */
    private volatile EndpointProbe probe;
    /** Brokers (id to broker epoch) a probe found gone, for the next tick to fence; written by the probe thread. */
    private final java.util.concurrent.ConcurrentHashMap<Integer, Long> refused = new java.util.concurrent.ConcurrentHashMap<>();

    /**
     * Fences a silent broker as soon as nothing listens on its endpoints ({@link EndpointProbe}),
     * instead of only after {@code broker.session.timeout.ms}. The controller closes the probe.
     */
    public void setEndpointProbe(EndpointProbe probe) {
        this.probe = probe;
    }

    /** Binds the quorum this controller appends to; call right after the quorum started. */
    public void attach(MetadataQuorum quorum) {
        this.quorum = quorum;
        quorum.setCommandHandler(this);
    }

    /** Whether this node is the active controller right now. */
    public boolean isActive() {
        return active;
    }

    /** At most this many commands are decided into one metadata entry. */
    static final int MAX_COMMANDS_PER_ENTRY = 1000;
    /**
     * A decision joins an entry only if the entry then holds at most this many records (a decision
     * larger than this goes alone), so a batch stays well under the entry size limit.
     */
    static final int MAX_RECORDS_PER_ENTRY = 5000;

    /** How long a metadata fetch with nothing new waits for a change (below the brokers' attempt timeout). */
    static final long FETCH_MAX_WAIT_MS = 400;

    private record FetchWaiter(long afterOffset, int maxBytes, CompletableFuture<byte[]> result) {
    }

    /** Event thread only: metadata fetches waiting for a new entry. */
    private final java.util.List<FetchWaiter> fetchWaiters = new java.util.ArrayList<>();

    @Override
    public void onImage(MetadataImage previous, MetadataImage next) {
        // decisions read loader.image() directly; parked metadata fetches get the new entries
        run(() -> {
            for (FetchWaiter w : java.util.List.copyOf(fetchWaiters)) {
                MetadataFetch.Answer a = loader.entriesAfter(w.afterOffset(), w.maxBytes());
                if (a.isSnapshot() || !a.entries().isEmpty()) {
                    fetchWaiters.remove(w);
                    w.result().complete(ControllerReply.ok(loader.image().offset(), a.encode()).encode());
                }
            }
        });
    }

    /** A broker that is not a voter follows the metadata log (see {@link MetadataFetch}). */
    private void serveFetch(byte[] command, CompletableFuture<byte[]> result) {
        if (!active) {
            result.complete(ControllerReply.error(Errors.NOT_CONTROLLER, "node " + nodeId + " is not the active controller").encode());
            return;
        }
        long[] req;
        try {
            req = MetadataFetch.parse(command);
        } catch (ApiException e) {
            result.complete(ControllerReply.error(Errors.INVALID_REQUEST, e.getMessage()).encode());
            return;
        }
        MetadataFetch.Answer a = loader.entriesAfter(req[0], (int) Math.max(1, Math.min(Integer.MAX_VALUE, req[1])));
        if (a.isSnapshot() || !a.entries().isEmpty()) {
            result.complete(ControllerReply.ok(loader.image().offset(), a.encode()).encode());
            return;
        }
        FetchWaiter w = new FetchWaiter(req[0], (int) req[1], result);
        fetchWaiters.add(w);
        events.schedule(() -> {
            if (fetchWaiters.remove(w)) {
                w.result().complete(ControllerReply.ok(loader.image().offset(), a.encode()).encode());
            }
        }, FETCH_MAX_WAIT_MS, TimeUnit.MILLISECONDS);
    }

    @Override
    public void onLeadershipChange(OptionalInt leaderId, boolean thisNodeLeads, long term) {
        run(() -> {
            recoverAtIndex = -1;
            if (thisNodeLeads && !(active && activeTerm == term)) {
                activate(term);
            } else if (!thisNodeLeads && active) {
                LOG.info("Node {} is no longer the active controller", nodeId);
                resign();
            }
        });
    }

    private void activate(long term) {
        LOG.info("Node {} is the active controller (term {})", nodeId, term);
        active = true;
        activeTerm = term;
        logic = logicFactory.get();
        apis = new ControllerApis(logic);
        nextPreferredElectionMs = time.milliseconds() + preferredElectionIntervalMs;
        if (ticker == null) {
            ticker = events.scheduleWithFixedDelay(this::tick, tickIntervalMs, tickIntervalMs, TimeUnit.MILLISECONDS);
        }
        if (loader.inTransaction()) {
            // the previous controller failed inside a metadata transaction: none of it was applied anywhere,
            // and its command (retried by its sender) is decided afresh
            LOG.warn("Node {}: aborting the metadata transaction the previous controller left open", nodeId);
            commit(List.of(new MetadataRecord.AbortTransaction("controller " + nodeId + " took over in term " + term)),
                    offset -> { }, error -> { });
            return;
        }
        drain();
    }

    private void resign() {
        active = false;
        for (FetchWaiter w : fetchWaiters) {
            w.result().complete(ControllerReply.error(Errors.NOT_CONTROLLER, "node " + nodeId + " resigned").encode());
        }
        fetchWaiters.clear();
        apis = null;
        logic = null;
        // queued commands go back to their senders, who retry at the new leader
        Pending p;
        while ((p = waiting.poll()) != null) {
            finish(p, ControllerReply.error(Errors.NOT_CONTROLLER, "node " + nodeId + " resigned").encode());
        }
    }

    @Override
    public CompletableFuture<byte[]> handle(byte[] command) {
        CompletableFuture<byte[]> result = new CompletableFuture<>();
        Runnable task = MetadataFetch.isFetch(command) ? () -> serveFetch(command, result)
                : ControllerAnnouncement.isAnnouncement(command) ? () -> serveAnnouncement(command, result)
                : () -> serve(command, result);
        if (!run(task)) {
            result.complete(ControllerReply.error(Errors.NOT_CONTROLLER, "controller " + nodeId + " is closed").encode());
        }
        return result;
    }

    /** The metadata log as Kafka's tools name it (kafka-metadata-quorum.sh asks for it). */
    static final org.apache.kafka.common.TopicPartition METADATA_PARTITION =
            new org.apache.kafka.common.TopicPartition("__cluster_metadata", 0);

    private volatile String controllerListenerName = "CONTROLLER";

    /** The listener name reported for the voters' endpoints in DescribeQuorum (controller.listener.names' first). */
    public void setControllerListenerName(String name) {
        this.controllerListenerName = name;
        membership.setListenerName(name);
    }

    /**
     * Kafka's DescribeQuorum answered from Ratis' state ({@link MetadataQuorum#describe}): the leader,
     * its epoch (the Raft term), the high watermark (commit index + 1), each voter's and observer's log end
     * and last fetch, with the directory ids the controllers registered (zero while unknown), and the
     * voters' Raft endpoints. Observers are the controllers that follow the Raft log without voting;
     * broker-only nodes read the metadata through the controller, not the Raft log, and are not listed. An
     * unknown topic or partition gets UNKNOWN_TOPIC_OR_PARTITION as from Kafka.
     */
    private org.apache.kafka.common.message.DescribeQuorumResponseData describeQuorum(
            org.apache.kafka.common.message.DescribeQuorumRequestData request) {
        boolean valid = request.topics().size() == 1
                && request.topics().get(0).topicName().equals(METADATA_PARTITION.topic())
                && request.topics().get(0).partitions().size() == 1
                && request.topics().get(0).partitions().get(0).partitionIndex() == METADATA_PARTITION.partition();
        if (!valid) {
            return org.apache.kafka.common.requests.DescribeQuorumResponse.singletonErrorResponse(METADATA_PARTITION,
                    Errors.UNKNOWN_TOPIC_OR_PARTITION);
        }
        MetadataQuorum q = quorum;
        MetadataQuorum.QuorumState state;
        try {
            if (q == null) {
                throw new NotQuorumLeaderException("no quorum attached", java.util.OptionalInt.empty());
            }
            state = q.describe(time.milliseconds());
        } catch (NotQuorumLeaderException e) {
            return org.apache.kafka.common.requests.DescribeQuorumResponse.singletonErrorResponse(METADATA_PARTITION,
                    Errors.NOT_LEADER_OR_FOLLOWER);
        }
        java.util.Map<Integer, MetadataRecord.ControllerRegistration> registered = loader.image().controllers();
        org.apache.kafka.common.message.DescribeQuorumResponseData.PartitionData partition =
                new org.apache.kafka.common.message.DescribeQuorumResponseData.PartitionData()
                        .setPartitionIndex(METADATA_PARTITION.partition())
                        .setLeaderId(state.leaderId())
                        .setLeaderEpoch((int) Math.min(Integer.MAX_VALUE, state.leaderEpoch()))
                        .setHighWatermark(state.highWatermark())
                        .setCurrentVoters(replicaStates(state.voters(), registered))
                        .setObservers(replicaStates(state.observers(), registered));
        org.apache.kafka.common.message.DescribeQuorumResponseData.NodeCollection nodes =
                new org.apache.kafka.common.message.DescribeQuorumResponseData.NodeCollection();
        state.membership().voters().forEach((id, address) -> {
            MetadataRecord.ControllerRegistration r = registered.get(id);
            boolean same = r != null && r.endpoint().port() == address.getPort()
                    && r.endpoint().host().equals(address.getHostString());
            org.apache.kafka.common.message.DescribeQuorumResponseData.ListenerCollection listeners =
                    new org.apache.kafka.common.message.DescribeQuorumResponseData.ListenerCollection();
            listeners.add(new org.apache.kafka.common.message.DescribeQuorumResponseData.Listener()
                    .setName(same ? r.endpoint().name() : controllerListenerName)
                    .setHost(address.getHostString()).setPort(address.getPort()));
            nodes.add(new org.apache.kafka.common.message.DescribeQuorumResponseData.Node().setNodeId(id).setListeners(listeners));
        });
        return org.apache.kafka.common.requests.DescribeQuorumResponse.singletonResponse(METADATA_PARTITION, partition, nodes);
    }

    private static List<org.apache.kafka.common.message.DescribeQuorumResponseData.ReplicaState> replicaStates(
            List<MetadataQuorum.ReplicaState> replicas, java.util.Map<Integer, MetadataRecord.ControllerRegistration> registered) {
        List<org.apache.kafka.common.message.DescribeQuorumResponseData.ReplicaState> out = new ArrayList<>();
        for (MetadataQuorum.ReplicaState r : replicas) {
            MetadataRecord.ControllerRegistration reg = registered.get(r.nodeId());
            out.add(new org.apache.kafka.common.message.DescribeQuorumResponseData.ReplicaState()
                    .setReplicaId(r.nodeId())
                    .setReplicaDirectoryId(reg == null ? org.apache.kafka.common.Uuid.ZERO_UUID : reg.directoryId())
                    .setLogEndOffset(r.logEndOffset())
                    .setLastFetchTimestamp(r.lastFetchTimestamp()).setLastCaughtUpTimestamp(r.lastCaughtUpTimestamp()));
        }
        return out;
    }

    private void serve(byte[] command, CompletableFuture<byte[]> result) {
        if (!active) {
            result.complete(ControllerReply.error(Errors.NOT_CONTROLLER, "node " + nodeId + " is not the active controller").encode());
            return;
        }
        ControllerEnvelope.Request request;
        try {
            request = ControllerEnvelope.decodeRequest(command);
        } catch (ApiException e) {
            result.complete(ControllerReply.error(Errors.forException(e), e.getMessage()).encode());
            return;
        }
        if (request.key() == org.apache.kafka.common.protocol.ApiKeys.DESCRIBE_QUORUM) {
            // a read of the quorum's state, not a decision: answered at once, never queued behind commits
            try {
                byte[] response = ControllerEnvelope.encodeResponse(request.key(), request.version(),
                        describeQuorum((org.apache.kafka.common.message.DescribeQuorumRequestData) request.data()));
                result.complete(ControllerReply.ok(loader.image().offset(), response).encode());
            } catch (RuntimeException e) {
                LOG.warn("describing the metadata quorum failed", e);
                result.complete(ControllerReply.error(Errors.UNKNOWN_SERVER_ERROR, String.valueOf(e)).encode());
            }
            return;
        }
        if (request.key() == org.apache.kafka.common.protocol.ApiKeys.ADD_RAFT_VOTER
                || request.key() == org.apache.kafka.common.protocol.ApiKeys.REMOVE_RAFT_VOTER) {
            // a Raft configuration change, not a metadata decision: answered when Raft has committed it
            try {
                membership.handle(quorum, request, result);
            } catch (RuntimeException e) {
                LOG.warn("{} failed", request.key().name, e);
                result.complete(ControllerReply.error(Errors.UNKNOWN_SERVER_ERROR, String.valueOf(e)).encode());
            }
            return;
        }
        if (request.hasRequestId()) {
            // A retry of a command this controller is deciding, or one already committed (by any
            // controller): it gets the first attempt's answer, never a second decision.
            CompletableFuture<byte[]> first = pendingById.get(request.requestId());
            if (first != null) {
                first.whenComplete((bytes, error) -> result.complete(bytes));
                return;
            }
            java.util.Optional<MetadataLoader.CommittedReply> committed = loader.replyTo(request.requestId());
            if (committed.isPresent()) {
                result.complete(ControllerReply.ok(committed.get().offset(), committed.get().response()).encode());
                return;
            }
            pendingById.put(request.requestId(), result);
        }
        waiting.add(new Pending(request, result, null));
        drain();
    }

    /**
     * A command waiting for its decision, or decided and waiting for its records to commit; or (with a
     * {@code registration} and no request) a controller's registration to record.
     */
    private record Pending(ControllerEnvelope.Request request, CompletableFuture<byte[]> result,
                           MetadataRecord.ControllerRegistration registration) {
    }

    /** Event thread only: completes a command's future and forgets its request id. */
    private void finish(Pending p, byte[] reply) {
        if (p.request() != null && p.request().hasRequestId()) {
            pendingById.remove(p.request().requestId(), p.result());
        }
        p.result().complete(reply);
    }

    /**
     * Decides every waiting command, in arrival order, each on the image including the decisions before
     * it, and commits all their records as one entry (group commit): a burst of commands costs one
     * quorum round trip, not one each. The records of one decision always travel in one entry. Every
     * command of the batch is answered once the entry is committed (a command that changed nothing may
     * still have read the batch's uncommitted changes); a batch without records is answered at once.
     */
    private void drain() {
        while (!inFlight && active && !waiting.isEmpty()) {
            MetadataImage projected = loader.image();
            List<MetadataRecord> records = new ArrayList<>();
            List<Pending> decided = new ArrayList<>();
            List<byte[]> responses = new ArrayList<>();
            long nowMs = time.milliseconds();
            while (!waiting.isEmpty() && decided.size() < MAX_COMMANDS_PER_ENTRY && records.size() < MAX_RECORDS_PER_ENTRY) {
                Pending p = waiting.poll();
                if (p.registration() != null) {
                    MetadataRecord.ControllerRegistration r = p.registration();
                    if (!r.equals(projected.controllers().get(r.controllerId()))) {
                        records.add(r);
                        projected = projected.apply(projected.offset(), List.of(r));
                    }
                    decided.add(p);
                    responses.add(new byte[0]);
                    continue;
                }
                ControllerEnvelope.Request request = p.request();
                ControllerResult<ApiMessage> decision;
                byte[] response;
                MetadataImage after;
                try {
                    decision = apis.handle(projected, request.key(), request.data(), nowMs);
                    response = ControllerEnvelope.encodeResponse(request.key(), request.version(), decision.response());
                    after = decision.records().isEmpty() ? projected : projected.apply(projected.offset(), decision.records());
                } catch (ApiException e) {
                    finish(p, ControllerReply.error(Errors.forException(e), e.getMessage()).encode());
                    continue;
                } catch (RuntimeException e) {
                    LOG.error("controller failed to decide a command", e);
                    finish(p, ControllerReply.error(Errors.UNKNOWN_SERVER_ERROR, String.valueOf(e)).encode());
                    continue;
                }
                if (!records.isEmpty() && records.size() + decision.records().size() > MAX_RECORDS_PER_ENTRY) {
                    // would make the entry too large: decided again, first, in the next entry (nothing of it
                    // was committed or answered)
                    waiting.addFirst(p);
                    break;
                }
                // An AlterPartition is remembered even when it changed nothing (refused): its retry
                // arriving later, once the refused replica became eligible, must get the refusal, not a
                // second decision — its leader reverted on the refusal and no longer counts that replica
                // in its high watermark, so a late acceptance would put a replica lacking committed
                // records into the ISR. Other commands that changed nothing are decided again, harmlessly.
                boolean remember = request.hasRequestId()
                        && (!decision.records().isEmpty() || request.key() == org.apache.kafka.common.protocol.ApiKeys.ALTER_PARTITION);
                if (!decision.records().isEmpty() || remember) {
                    records.addAll(decision.records());
                    if (remember) {
                        records.add(new MetadataRecord.CommandReply(request.requestId(), response));
                    }
                    projected = after;
                }
                decided.add(p);
                responses.add(response);
            }
            if (records.isEmpty()) {
                long offset = loader.image().offset();
                for (int i = 0; i < decided.size(); i++) {
                    finish(decided.get(i), ControllerReply.ok(offset, responses.get(i)).encode());
                }
                continue;
            }
            if (decided.size() > 1) {
                LOG.debug("Committing {} decisions ({} records) in one metadata entry", decided.size(), records.size());
            }
            commit(records, offset -> {
                for (int i = 0; i < decided.size(); i++) {
                    finish(decided.get(i), ControllerReply.ok(offset, responses.get(i)).encode());
                }
            }, error -> {
                for (Pending p : decided) {
                    finish(p, ControllerReply.error(error, "the metadata change may not have been committed").encode());
                }
            });
        }
    }

    private void tick() {
        MetadataQuorum q = quorum;
        if (!active && recoverAtIndex >= 0 && q != null && q.isLeader() && q.currentTerm() == recoverTerm
                && q.appliedIndex() >= recoverAtIndex) {
            // the failed entry is applied or was never appended: the image is complete again
            recoverAtIndex = -1;
            activate(recoverTerm);
        }
        if (!active || inFlight) {
            return;
        }
        try {
            long now = time.milliseconds();
            MetadataImage image = loader.image();
            EndpointProbe p = probe;
            if (p != null) {
                for (BrokerRegistration b : logic.silentBrokers(image, now)) {
                    p.probe(b.id(), b.endpoints(), () -> refused.put(b.id(), b.brokerEpoch()));
                }
            }
            Map<Integer, Long> gone = refused.isEmpty() ? Map.of() : Map.copyOf(refused);
            ControllerResult<Set<Integer>> fenced = logic.tick(image, now, gone);
            gone.forEach(refused::remove);
            if (!fenced.records().isEmpty()) {
                Set<Integer> probed = new java.util.TreeSet<>(fenced.response());
                probed.retainAll(gone.keySet());
                Set<Integer> timedOut = new java.util.TreeSet<>(fenced.response());
                timedOut.removeAll(probed);
                LOG.info("Fencing brokers {}", (timedOut.isEmpty() ? "" : timedOut + ": no heartbeat within the session timeout")
                        + (timedOut.isEmpty() || probed.isEmpty() ? "" : "; ")
                        + (probed.isEmpty() ? "" : probed + ": silent and nothing listening on their endpoints"));
                commit(fenced.records(), offset -> { }, error -> { });
                return;
            }
            if (preferredElectionIntervalMs > 0 && now >= nextPreferredElectionMs) {
                nextPreferredElectionMs = now + preferredElectionIntervalMs;
                ControllerResult<?> balance = logic.electLeaders(loader.image(), org.apache.kafka.common.ElectionType.PREFERRED, null);
                if (!balance.records().isEmpty()) {
                    LOG.info("Moving leadership back to preferred replicas ({} change(s))", balance.records().size());
                    commit(balance.records(), offset -> { }, error -> { });
                }
            }
        } catch (RuntimeException e) {
            LOG.error("controller tick failed", e);
        }
    }

    private void commit(List<? extends MetadataRecord> records, java.util.function.LongConsumer onCommitted,
                        java.util.function.Consumer<Errors> onFailed) {
        inFlight = true;
        MetadataQuorum q = quorum;
        CompletableFuture<Long> appended;
        if (q == null) {
            appended = CompletableFuture.failedFuture(new IllegalStateException("no quorum attached"));
        } else {
            byte[] whole = MetadataRecordSerde.serialize(records);
            appended = whole.length <= q.config().maxEntryBytes() ? q.append(whole)
                    : appendInParts(q, records, q.config().maxEntryBytes());
        }
        appended.whenComplete((index, error) -> run(() -> {
            inFlight = false;
            if (error == null) {
                onCommitted.accept(index);
                drain();
            } else {
                Throwable t = error instanceof java.util.concurrent.CompletionException && error.getCause() != null
                        ? error.getCause() : error;
                LOG.warn("Metadata append failed on node {}: {}", nodeId, t.toString());
                onFailed.accept(t instanceof NotQuorumLeaderException ? Errors.NOT_CONTROLLER : Errors.forException(t));
                // The entry may still commit: decide nothing more until it is applied (or leadership moves).
                if (active) {
                    long term = activeTerm;
                    resign();
                    if (q != null && q.isLeader()) {
                        recoverAtIndex = q.lastLogIndex();
                        recoverTerm = term;
                    }
                }
            }
        }));
    }

    /** Room kept in each part of a metadata transaction for the markers and the entry's framing. */
    private static final int TRANSACTION_OVERHEAD_BYTES = 1024;

    /**
     * Appends records too large for one entry as a metadata transaction (KIP-868): the first part opens
     * it, the last closes it, one after the other; no node applies any of them before the close, and a
     * controller that takes over an unclosed one aborts it ({@link #activate}). Nothing else is decided
     * meanwhile (this controller is in flight). Completes with the index of the closing entry.
     */
    private CompletableFuture<Long> appendInParts(MetadataQuorum q, List<? extends MetadataRecord> records, int maxEntryBytes) {
        int empty = MetadataRecordSerde.serialize(List.of()).length;
        int budget = maxEntryBytes - empty - TRANSACTION_OVERHEAD_BYTES;
        List<List<MetadataRecord>> parts = new ArrayList<>();
        List<MetadataRecord> part = new ArrayList<>();
        part.add(new MetadataRecord.BeginTransaction(records.size() + " records"));
        long partBytes = 0;
        for (MetadataRecord r : records) {
            int size = MetadataRecordSerde.serialize(List.of(r)).length - empty;
            if (size > budget) {
                return CompletableFuture.failedFuture(new IllegalArgumentException("one metadata record of " + size
                        + " bytes is larger than an entry may be (" + maxEntryBytes + ")"));
            }
            if (partBytes + size > budget) {
                parts.add(part);
                part = new ArrayList<>();
                partBytes = 0;
            }
            part.add(r);
            partBytes += size;
        }
        part.add(new MetadataRecord.EndTransaction());
        parts.add(part);
        LOG.info("Committing {} metadata records as a transaction of {} entries", records.size(), parts.size());
        CompletableFuture<Long> chain = CompletableFuture.completedFuture(-1L);
        for (List<MetadataRecord> p : parts) {
            byte[] bytes = MetadataRecordSerde.serialize(p);
            chain = chain.thenCompose(previous -> q.append(bytes));
        }
        return chain;
    }

    /** Told how long each controller event waited in the queue and then took, in ms (Kafka's ControllerEventManager metrics). */
    public interface EventTimes {
        void event(long queueMs, long processingMs);
    }

    private volatile EventTimes eventTimes;

    public void setEventTimes(EventTimes eventTimes) {
        this.eventTimes = eventTimes;
    }

    private boolean run(Runnable r) {
        try {
            long queued = time.nanoseconds();
            events.execute(() -> {
                long started = time.nanoseconds();
                try {
                    r.run();
                } catch (RuntimeException e) {
                    LOG.error("controller event failed", e);
                }
                EventTimes times = eventTimes;
                if (times != null) {
                    times.event((started - queued) / 1_000_000, (time.nanoseconds() - started) / 1_000_000);
                }
            });
            return true;
        } catch (RejectedExecutionException e) {
            return false;
        }
    }

    /** Runs {@code r} as an event after {@code delayMs}; false once the controller is closed. */
    private boolean runLater(long delayMs, Runnable r) {
        try {
            events.schedule(() -> {
                try {
                    r.run();
                } catch (RuntimeException e) {
                    LOG.error("controller event failed", e);
                }
            }, delayMs, TimeUnit.MILLISECONDS);
            return true;
        } catch (RejectedExecutionException e) {
            return false;
        }
    }

    @Override
    public void close() {
        EndpointProbe p = probe;
        if (p != null) {
            p.close();
        }
        events.shutdownNow();
        try {
            events.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
