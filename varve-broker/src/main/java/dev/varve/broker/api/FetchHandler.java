package dev.varve.broker.api;

import dev.varve.broker.BrokerContext;
import dev.varve.broker.FetchSessions;
import dev.varve.broker.TopicRegistry.TopicInfo;
import dev.varve.broker.cluster.ClusterReplicaManager;
import dev.varve.broker.replication.LeaderState;
import dev.varve.storage.LogSlice;
import dev.varve.storage.PartitionLog;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.FetchRequestData;
import org.apache.kafka.common.message.FetchResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.requests.AbstractRequest;
import org.apache.kafka.common.requests.AbstractResponse;
import org.apache.kafka.common.requests.FetchRequest;
import org.apache.kafka.common.requests.FetchResponse;
import org.apache.kafka.common.requests.RequestContext;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;

/**
 * Fetch: reads each partition as a file slice of whole batches (sent with sendfile, never copied
 * through the heap), bounded by the high watermark, by each partition's max bytes and by the
 * request's total max bytes (the first partition with data always returns at least one batch, so a
 * large batch cannot block a consumer). When fewer than {@code min.bytes} are ready the request
 * waits in the purgatory until that many are (it tries again after every append and high-watermark
 * move of its partitions) or {@code max.wait.ms} passes.
 *
 * <p>Incremental fetch sessions (KIP-227, {@link FetchSessions}): a session's fetch reads every
 * partition of the session and answers only those with something new.
 */
public final class FetchHandler extends AllVersionsHandler {
    private final BrokerContext broker;

    public FetchHandler(BrokerContext broker) {
        super(ApiKeys.FETCH);
        this.broker = broker;
    }

    @Override
    public CompletableFuture<AbstractResponse> handle(RequestContext context, AbstractRequest request) {
        FetchRequest req = (FetchRequest) request;
        FetchRequestData data = req.data();
        FetchSessions.Context session = broker.fetchSessions().newContext(data, req.version(), isFollower(data));
        if (session.error() != Errors.NONE) {
            return CompletableFuture.completedFuture(FetchResponse.of(session.finish(null)));
        }
        CompletableFuture<AbstractResponse> result = new CompletableFuture<>();
        boolean follower = isFollower(data);
        result.thenAccept(r -> countOut((FetchResponse) r, follower));
        int minBytes = Math.max(1, data.minBytes());
        dev.varve.broker.FetchPurgatory purgatory = broker.replicaManager().purgatory();
        // a follower's read moves the high watermarks of its partitions one by one: the fetches that wait
        // on them are tried once at the end, not once per partition
        Supplier<Read> read = () -> read(session.topics(), data, req.version(), context, LeaderState.NEVER_MS);
        Supplier<Read> reread = follower ? () -> purgatory.coalescingWakes(read) : read;
        long wakesBeforeRead = purgatory.wakes();
        long now = System.currentTimeMillis();
        if (data.maxWaitMs() > 0 && session.unchangedIncremental() && session.handlerState() instanceof QuietRead quiet
                && quiet.wakes() == wakesBeforeRead && now - quiet.atMs() >= 0 && now - quiet.atMs() < quietReadReuseMs()
                && followerAllowed(data, context)) {
            // An idle follower's fetch: its session is as it was at its last read, that read found nothing to
            // send and the follower settled in every ISR, and no partition of this broker has changed since
            // (no append, HW move or metadata wake). Reading its thousands of partitions again would find
            // the same nothing, so it waits for any change without reading; its answer names no partition.
            // The follower is at every log end now: a read woken by a change counts it caught up as of now.
            Supplier<Read> wokenRead = () -> purgatory.coalescingWakes(() -> read(session.topics(), data, req.version(), context, now));
            purgatory.watchAny(data.maxWaitMs(), () -> answer(result, session, wokenRead, 0),
                    () -> result.complete(FetchResponse.of(session.finish(new FetchResponseData()))), wakesBeforeRead);
            return result;
        }
        Read first = reread.get();
        session.handlerState(first.quiet() ? new QuietRead(wakesBeforeRead, now) : null);
        // a fetch naming no partition (none in its session either) has nothing to wait for: Kafka answers
        // it at once whatever its max.wait.ms, and so does Varve (it would otherwise hold its connection)
        if (first.ready(minBytes) || data.maxWaitMs() <= 0 || first.partitions.isEmpty()) {
            result.complete(FetchResponse.of(session.finish(first.response)));
            return result;
        }
        // woken by an append or a high-watermark move: answer only once min.bytes are readable; at the
        // timeout, with whatever there is — and a fetch nothing woke (no append, HW move or leadership
        // change of its partitions) that found no records answers with its first read: reading thousands
        // of idle partitions again would only find the same nothing (idle followers of thousands of
        // partitions time out twice a second each)
        java.util.concurrent.atomic.AtomicBoolean woken = new java.util.concurrent.atomic.AtomicBoolean();
        broker.replicaManager().purgatory().watch(first.partitions, data.maxWaitMs(),
                () -> {
                    woken.set(true);
                    return answer(result, session, reread, minBytes);
                },
                () -> answer(result, session, woken.get() || first.bytes() > 0 ? reread : () -> first, 0), wakesBeforeRead);
        return result;
    }

    /** Kafka's BrokerTopicMetrics of what a fetch's answer carries, counted once per answer (not per read). */
    private void countOut(FetchResponse response, boolean follower) {
        dev.varve.broker.metrics.BrokerTopicStats stats = broker.metrics().topics();
        for (FetchResponseData.FetchableTopicResponse t : response.data().responses()) {
            String name = t.topic() != null && !t.topic().isEmpty() ? t.topic()
                    : broker.topics().get(t.topicId()).map(TopicInfo::name).orElse(null);
            if (name == null) {
                continue;
            }
            for (FetchResponseData.PartitionData p : t.partitions()) {
                if (p.errorCode() != Errors.NONE.code()) {
                    if (p.errorCode() != Errors.UNKNOWN_TOPIC_OR_PARTITION.code() && p.errorCode() != Errors.UNKNOWN_TOPIC_ID.code()) {
                        stats.fetchFailed(name);
                    }
                    continue;
                }
                stats.fetched(name, p.records() == null ? 0 : p.records().sizeInBytes(), follower);
            }
        }
    }

    /** Reads again and answers when at least {@code minBytes} are readable (or on an error); true once answered. */
    private static boolean answer(CompletableFuture<AbstractResponse> result, FetchSessions.Context session,
                                  Supplier<Read> reread, int minBytes) {
        try {
            Read again = reread.get();
            if (!again.ready(minBytes)) {
                return false;
            }
            result.complete(FetchResponse.of(session.finish(again.response)));
        } catch (RuntimeException e) {
            result.completeExceptionally(e);
        }
        return true;
    }

    /**
     * A follower session's last read that found nothing to send: no records, no error, the follower a
     * settled member of every partition's ISR (nothing its fetch could propose) and every high watermark
     * at its log end (nothing that time alone could move).
     *
     * @param wakes the purgatory's wake count before that read
     * @param atMs  when it was made
     */
    private record QuietRead(long wakes, long atMs) {
    }

    /**
     * How long a quiet read stands for an idle follower's fetches. Its fetches record the follower's
     * position (ISR membership, the low watermark) only when they read, so it is well within
     * {@code replica.lag.time.max.ms}; and at most 5 s, which also bounds how late a change that wakes
     * no fetch (a log start moved by retention, an ACL change) reaches an idle follower.
     */
    private long quietReadReuseMs() {
        ClusterReplicaManager cluster = broker.replicaManager().cluster();
        return cluster == null ? 0 : Math.min(5_000, cluster.replicaLagTimeMaxMs() / 4);
    }

    /** Whether {@code data} is a fetch of a follower this broker takes as one (its identity, and CLUSTER_ACTION with an authorizer). */
    private boolean followerAllowed(FetchRequestData data, RequestContext context) {
        ClusterReplicaManager cluster = broker.replicaManager().cluster();
        if (!isFollower(data) || cluster == null) {
            return false;
        }
        return cluster.checkFollower(replicaId(data), replicaEpoch(data), context.clientAddress) == Errors.NONE
                && broker.authorizer().authorizeCluster(context, org.apache.kafka.common.acl.AclOperation.CLUSTER_ACTION);
    }

    /** The fetching replica's id (Fetch v15+ carries it in ReplicaState), or -1 for a consumer. */
    private static int replicaId(FetchRequestData data) {
        return data.replicaState() != null && data.replicaState().replicaId() >= 0 ? data.replicaState().replicaId() : data.replicaId();
    }

    private static long replicaEpoch(FetchRequestData data) {
        return data.replicaState() != null ? data.replicaState().replicaEpoch() : -1;
    }

    private static boolean isFollower(FetchRequestData data) {
        return data.replicaId() >= 0 || (data.replicaState() != null && data.replicaState().replicaId() >= 0);
    }

    private record Read(FetchResponseData response, long bytes, boolean answerNow, List<TopicPartition> partitions,
                        boolean quiet) {
        /** Whether to answer now: enough bytes, or something the client must see at once (an error, a truncation, a preferred read replica). */
        boolean ready(int minBytes) {
            return bytes >= minBytes || answerNow;
        }
    }

    /** @param caughtUpAtMs for a follower's fetch held unread: when it was last known at every log end (else NEVER_MS) */
    private Read read(List<FetchRequestData.FetchTopic> topics, FetchRequestData data, short version, RequestContext context,
                      long caughtUpAtMs) {
        java.net.InetAddress from = context.clientAddress;
        dev.varve.broker.security.AclAuthorizer auth = broker.authorizer();
        boolean readCommitted = data.isolationLevel() == IsolationLevel.READ_COMMITTED.id();
        boolean follower = isFollower(data);
        int replicaId = replicaId(data);
        long replicaEpoch = replicaEpoch(data);
        // a v11+ consumer may be sent to another replica (KIP-392): the selector gets its rack (client.rack,
        // possibly empty), id and address, as Kafka's does
        String listener = context.listenerName == null ? null : context.listenerName.value();
        org.apache.kafka.common.replica.ClientMetadata clientMetadata = follower || version < 11 || listener == null ? null
                : new org.apache.kafka.common.replica.ClientMetadata.DefaultClientMetadata(data.rackId() == null ? "" : data.rackId(),
                context.clientId() == null ? "" : context.clientId(), from, context.principal, listener);
        // a fetch posing as a follower's is refused whole, as Kafka refuses one without ClusterAction
        Errors refused = follower && broker.replicaManager().cluster() != null
                ? broker.replicaManager().cluster().checkFollower(replicaId, replicaEpoch, from) : Errors.NONE;
        FetchResponseData response = new FetchResponseData().setErrorCode(refused.code()).setSessionId(0);
        // with an authorizer, a follower needs CLUSTER_ACTION on the cluster: without it every partition is
        // TOPIC_AUTHORIZATION_FAILED, as Kafka answers
        boolean clusterAction = !follower || auth.authorizeCluster(context, org.apache.kafka.common.acl.AclOperation.CLUSTER_ACTION);
        long remaining = data.maxBytes() <= 0 ? Integer.MAX_VALUE : data.maxBytes();
        dev.varve.broker.quota.ClientQuotaManager clientQuotas = broker.quotas();
        if (!follower && clientQuotas != null && clientQuotas.active()) {
            // a consumer held to a byte rate gets at most a window's worth at once, as in Kafka
            remaining = Math.min(remaining, clientQuotas.maxFetchBytes(context.principal.getName(),
                    context.clientId() == null ? "" : context.clientId()));
        }
        long total = 0;
        boolean answerNow = false;
        boolean settled = follower && clusterAction;
        List<TopicPartition> partitions = new ArrayList<>();
        for (FetchRequestData.FetchTopic topic : topics) {
            Optional<TopicInfo> info = topic.topic() == null || topic.topic().isEmpty()
                    ? broker.topics().get(topic.topicId())
                    : broker.topics().get(topic.topic());
            FetchResponseData.FetchableTopicResponse tr = new FetchResponseData.FetchableTopicResponse()
                    .setTopic(topic.topic())
                    .setTopicId(topic.topicId() == null ? Uuid.ZERO_UUID : topic.topicId());
            for (FetchRequestData.FetchPartition p : topic.partitions()) {
                FetchResponseData.PartitionData pd = new FetchResponseData.PartitionData()
                        .setPartitionIndex(p.partition())
                        .setHighWatermark(-1).setLastStableOffset(-1).setLogStartOffset(-1)
                        .setRecords(MemoryRecords.EMPTY);
                String name = info.map(TopicInfo::name).orElse(topic.topic() == null || topic.topic().isEmpty() ? null : topic.topic());
                if (!clusterAction || (!follower && name != null && !auth.authorize(context,
                        org.apache.kafka.common.acl.AclOperation.READ, org.apache.kafka.common.resource.ResourceType.TOPIC, name))) {
                    // checked before existence, as in Kafka
                    pd.setErrorCode(Errors.TOPIC_AUTHORIZATION_FAILED.code());
                    answerNow = true;
                } else if (info.isEmpty()) {
                    boolean byId = topic.topic() == null || topic.topic().isEmpty();
                    pd.setErrorCode((byId ? Errors.UNKNOWN_TOPIC_ID : Errors.UNKNOWN_TOPIC_OR_PARTITION).code());
                    answerNow = true;
                } else if (follower && broker.replicaManager().cluster() == null) {
                    // A single node has no follower replicas: a fetch claiming to come from one (it would
                    // read past the high watermark) is refused, as Kafka refuses an unassigned replica.
                    pd.setErrorCode(Errors.NOT_LEADER_OR_FOLLOWER.code());
                    answerNow = true;
                } else if (refused != Errors.NONE) {
                    pd.setErrorCode(refused.code());
                    answerNow = true;
                } else if (follower) {
                    TopicPartition tp = new TopicPartition(info.get().name(), p.partition());
                    partitions.add(tp);
                    ClusterReplicaManager.FollowerRead fr = broker.replicaManager().cluster().followerFetch(tp, replicaId,
                            replicaEpoch, p.currentLeaderEpoch(), p.fetchOffset(), p.lastFetchedEpoch(), p.logStartOffset(),
                            caughtUpAtMs);
                    // a HW below the log end may move with time alone (a follower out of the ISR ageing out of it)
                    settled &= fr.settledIsrMember() && fr.highWatermark() == fr.logEndOffset();
                    if (fr.error() != Errors.NONE) {
                        pd.setErrorCode(fr.error().code());
                        answerNow = true;
                    } else {
                        pd.setErrorCode(Errors.NONE.code()).setHighWatermark(fr.highWatermark())
                                .setLastStableOffset(fr.highWatermark()).setLogStartOffset(fr.log().logStartOffset());
                        if (fr.diverging().isPresent()) {
                            pd.setDivergingEpoch(new FetchResponseData.EpochEndOffset()
                                    .setEpoch(fr.diverging().get().epoch()).setEndOffset(fr.diverging().get().endOffset()));
                            answerNow = true; // answer at once: the follower must truncate
                        } else {
                            dev.varve.broker.cluster.ReplicationQuotas quotas = broker.replicaManager().cluster().quotas();
                            boolean throttled = quotas != null && quotas.isLeaderThrottled(tp);
                            settled &= !throttled; // a throttled replica may be held back: read it every time
                            try {
                                // leader.replication.throttled.rate reached: a throttled replica gets nothing this time
                                int maxBytes = throttled && quotas.leader().exceeded() ? 0
                                        : (int) Math.min(p.partitionMaxBytes(), remaining);
                                LogSlice slice = maxBytes == 0 ? null
                                        : fr.log().read(p.fetchOffset(), maxBytes, fr.logEndOffset(), total == 0);
                                if (slice == null) {
                                    tr.partitions().add(pd);
                                    continue;
                                }
                                if (throttled) {
                                    quotas.leader().record(slice.sizeInBytes());
                                }
                                pd.setRecords(slice.records());
                                total += slice.sizeInBytes();
                                remaining = Math.max(0, remaining - slice.sizeInBytes());
                            } catch (RuntimeException e) {
                                pd.setErrorCode(Errors.forException(e).code());
                                answerNow = true;
                            }
                        }
                    }
                } else {
                    TopicPartition tp = new TopicPartition(info.get().name(), p.partition());
                    partitions.add(tp);
                    try {
                        dev.varve.broker.cluster.ClusterReplicaManager cluster = broker.replicaManager().cluster();
                        // KIP-392: Fetch v11+ consumers may read from a follower (up to the high watermark it
                        // learned), and a leader with a replica.selector.class may point them at one
                        boolean followerReads = version >= 11;
                        PartitionLog log = cluster != null
                                ? cluster.consumerLog(tp, p.currentLeaderEpoch(), followerReads)
                                : broker.replicaManager().log(tp);
                        long hw = log.highWatermark();
                        long lso = log.lastStableOffset();
                        if (cluster != null && followerReads && clientMetadata != null) {
                            java.util.OptionalInt preferred = cluster.preferredReadReplica(tp, p.fetchOffset(), clientMetadata, listener);
                            if (preferred.isPresent()) {
                                pd.setErrorCode(Errors.NONE.code()).setHighWatermark(hw).setLastStableOffset(lso)
                                        .setLogStartOffset(log.logStartOffset()).setPreferredReadReplica(preferred.getAsInt())
                                        .setRecords(org.apache.kafka.common.record.internal.MemoryRecords.EMPTY);
                                tr.partitions().add(pd);
                                answerNow = true; // as Kafka does: the consumer goes to that replica
                                continue;
                            }
                        }
                        // read_committed consumers read below the last stable offset, and learn which of
                        // the transactions in what they read were aborted (their client drops those records)
                        long bound = readCommitted ? lso : hw;
                        int maxBytes = (int) Math.min(p.partitionMaxBytes(), remaining);
                        LogSlice slice = log.read(p.fetchOffset(), Math.max(0, maxBytes), bound, total == 0);
                        pd.setErrorCode(Errors.NONE.code())
                                .setHighWatermark(hw)
                                .setLastStableOffset(lso)
                                .setLogStartOffset(version >= 5 ? log.logStartOffset() : -1)
                                .setRecords(slice.records());
                        if (readCommitted) {
                            List<FetchResponseData.AbortedTransaction> aborted = new ArrayList<>();
                            if (!slice.isEmpty()) {
                                for (dev.varve.storage.index.TransactionIndex.AbortedTxn t
                                        : log.abortedTransactions(p.fetchOffset(), bound)) {
                                    aborted.add(new FetchResponseData.AbortedTransaction()
                                            .setProducerId(t.producerId()).setFirstOffset(t.firstOffset()));
                                }
                            }
                            pd.setAbortedTransactions(aborted);
                        }
                        total += slice.sizeInBytes();
                        remaining = Math.max(0, remaining - slice.sizeInBytes());
                    } catch (RuntimeException e) {
                        pd.setErrorCode(Errors.forException(e).code());
                        answerNow = true;
                    }
                }
                tr.partitions().add(pd);
            }
            response.responses().add(tr);
        }
        return new Read(response, total, answerNow, partitions, settled && total == 0 && !answerNow && !partitions.isEmpty());
    }
}
