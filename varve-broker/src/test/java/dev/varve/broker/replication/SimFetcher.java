package dev.varve.broker.replication;

import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.FetchRequestData;
import org.apache.kafka.common.message.FetchResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.FetchRequest;
import org.apache.kafka.common.requests.FetchResponse;
import dev.varve.storage.LeaderEpochCache.EpochEndOffset;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * One follower broker's fetcher of one leader broker in the simulation (the broker's
 * {@code ReplicaFetcherThread}, one per leader): every partition this broker follows from that leader,
 * one Fetch in flight, built with the broker's own {@link FollowerFetchSession} (an
 * incremental fetch session, KIP-227: a request carries only partitions whose fetch position changed, an
 * answer only partitions with news) and sent as the Fetch wire objects ({@link FetchRequestData} of
 * {@link #VERSION}, topic ids). What each partition's answer means is {@link FollowerReplica}'s; the
 * records arrive as real record batches ({@link SimRecords}).
 *
 * <p>As in the broker: partitions backing off after an error are left out of a request (the session
 * forgets them until they are due again); a session error (FETCH_SESSION_ID_NOT_FOUND,
 * INVALID_FETCH_SESSION_EPOCH) makes the next fetch a full one; a lost fetch times out and the session
 * is told ({@link FollowerFetchSession#handleError}), so the next fetch closes it and opens a new one. A
 * partition's answer is applied only to the very fetch state it was requested for, at the log end it was
 * requested at: a partition removed and re-added (new leader epoch) or whose log moved while the fetch
 * was in flight ignores it. The out-of-range round trip (ListOffsets) is folded into the answer: the
 * leader sends its log start and end with an OFFSET_OUT_OF_RANGE.
 *
 * <p>A fetcher lives while it has partitions (the broker stops a thread when it loses its last one): a
 * new one starts a new session, the old session stays in the leader's cache until evicted.
 */
final class SimFetcher {
    /** The Fetch version of every request and answer (topic ids, v13+; the replica's state, v15+). */
    static final short VERSION = ApiKeys.FETCH.latestVersion();
    private static final long FETCH_TIMEOUT_MS = 60;
    static final long FETCH_BACKOFF_MS = 15;
    private static final int PARTITION_MAX_BYTES = 1 << 20;

    /** A partition to fetch (the broker's FollowerPartition): a new fetch state whenever it differs. */
    record Target(TopicPartition tp, Uuid topicId, int leaderEpoch, SimBroker.Replica replica) {
    }

    /** One partition's fetch state: a new object every time the partition is (re)added. */
    private static final class State {
        final Target target;
        long retryAtMs;
        /** The check for a log without epochs has run ({@link FollowerReplica#start}). */
        boolean started;

        State(Target target) {
            this.target = target;
        }

        SimLog log() {
            return target.replica().log;
        }
    }

    /** A leader's answer: the Fetch response and, folded in, the ListOffsets answers for out-of-range partitions. */
    record Answer(FetchResponseData response, Map<TopicPartition, long[]> leaderOffsets) {
    }

    private final SimBroker owner;
    final int leaderId;
    private final long incarnation;
    private final FollowerFetchSession<State> session = new FollowerFetchSession<>();
    private final LinkedHashMap<TopicPartition, State> partitions = new LinkedHashMap<>();
    private boolean stopped;
    private long fetchSeq;
    private long outstandingFetch = -1;
    private boolean fetchScheduled;

    SimFetcher(SimBroker owner, int leaderId) {
        this.owner = owner;
        this.leaderId = leaderId;
        this.incarnation = owner.incarnation;
    }

    boolean isEmpty() {
        return partitions.isEmpty();
    }

    /** Starts fetching these (a partition whose target differs gets a new fetch state). */
    void addPartitions(List<Target> added) {
        for (Target t : added) {
            State current = partitions.get(t.tp());
            if (current == null || !current.target.equals(t)) {
                partitions.put(t.tp(), new State(t));
            }
        }
        scheduleFetch(0);
    }

    /** Stops fetching these: an answer in flight no longer touches their logs. */
    void removePartitions(List<TopicPartition> removed) {
        removed.forEach(partitions::remove);
    }

    /** The thread stops: nothing in flight is applied any more. */
    void stop() {
        stopped = true;
    }

    private boolean live() {
        return !stopped && owner.live(incarnation);
    }

    private void scheduleFetch(long delayMs) {
        if (fetchScheduled || !live()) {
            return;
        }
        fetchScheduled = true;
        owner.net.schedule(delayMs, () -> {
            fetchScheduled = false;
            sendFetch();
        });
    }

    /** ReplicaFetcherThread.fetchOnce and buildFetch: one Fetch for every partition not backing off. */
    private void sendFetch() {
        if (!live() || outstandingFetch >= 0 || partitions.isEmpty()) {
            return;
        }
        long now = owner.net.nowMs;
        long nextDue = Long.MAX_VALUE;
        session.begin();
        for (State s : partitions.values()) {
            if (s.retryAtMs > now) {
                nextDue = Math.min(nextDue, s.retryAtMs);
                continue;
            }
            SimLog log = s.log();
            if (!s.started) {
                s.started = true;
                long before = log.leo();
                FollowerReplica.start(log).ifPresent(step -> owner.sim.trace("b" + owner.id + " " + s.target.tp() + " has no epochs: truncates "
                        + before + " -> " + log.leo() + " (" + step + ")"));
            }
            int lastEpoch = owner.options.policy() == ReplicationSimulation.TruncationPolicy.HIGH_WATERMARK
                    ? EpochEndOffsets.UNDEFINED_EPOCH : log.latestEpochOrUndefined();
            session.add(s, s.target.tp(), s.target.topicId(), log.leo(), log.logStartOffset(), s.target.leaderEpoch(),
                    lastEpoch == EpochEndOffsets.UNDEFINED_EPOCH ? -1 : lastEpoch, PARTITION_MAX_BYTES);
        }
        FollowerFetchSession.Request<State> sent = session.build();
        if (sent == null) {
            scheduleFetch(nextDue - now); // everything backs off: the thread waits for the first one due
            return;
        }
        FetchRequestData request = new FetchRequest.Builder(VERSION, VERSION, owner.id, owner.brokerEpoch, 0, 1, sent.toSend())
                .removed(sent.toForget())
                .metadata(sent.metadata())
                .build(VERSION).data();
        long fetchId = ++fetchSeq;
        outstandingFetch = fetchId;
        SimBroker leader = owner.sim.brokers.get(leaderId);
        owner.net.send(owner.id, leaderId, describe(request),
                () -> leader.onFetchRequest(request, VERSION, answer -> owner.net.send(leaderId, owner.id, describe(answer),
                        () -> onAnswer(fetchId, sent, answer))));
        owner.net.schedule(FETCH_TIMEOUT_MS, () -> {
            if (live() && outstandingFetch == fetchId) {
                // the broker's connection: a lost or refused request (DisconnectException); every partition backs off
                outstandingFetch = -1;
                session.handleError();
                backOff(sent.partitions(), owner.net.nowMs);
                scheduleFetch(FETCH_BACKOFF_MS);
            }
        });
    }

    /** ReplicaFetcherThread.handleFetchResponse. */
    private void onAnswer(long fetchId, FollowerFetchSession.Request<State> sent, Answer answer) {
        if (!live() || outstandingFetch != fetchId) {
            return; // an answer to a fetch that timed out, or to a thread that stopped
        }
        outstandingFetch = -1;
        long now = owner.net.nowMs;
        FetchResponseData body = answer.response();
        if (!session.handleResponse(body)) {
            Errors e = Errors.forCode(body.errorCode());
            if (e == Errors.NONE) { // the leader's session sends only partitions it holds for this follower
                throw new IllegalStateException("b" + leaderId + " answered b" + owner.id + " for a partition outside its session: "
                        + describe(answer));
            }
            if (e == Errors.FETCH_SESSION_ID_NOT_FOUND || e == Errors.INVALID_FETCH_SESSION_EPOCH
                    || e == Errors.FETCH_SESSION_TOPIC_ID_ERROR) {
                owner.sim.onSessionError(e);
                owner.sim.trace("b" + owner.id + " fetch session with b" + leaderId + " refused with " + e + ": fetching in full");
                scheduleFetch(0);
                return;
            }
        }
        if (body.errorCode() != Errors.NONE.code()) {
            backOff(sent.partitions(), now);
            scheduleFetch(FETCH_BACKOFF_MS);
            return;
        }
        boolean appended = false;
        for (FetchResponseData.FetchableTopicResponse t : body.responses()) {
            for (FetchResponseData.PartitionData pd : t.partitions()) {
                FollowerFetchSession.Sent<State> e = session.sentFor(t.topicId(), pd.partitionIndex());
                if (e == null) {
                    continue;
                }
                State s = e.state();
                if (partitions.get(e.tp()) != s || s.log().leo() != e.fetchOffset()) {
                    // removed or re-added while the fetch was in flight, or the log moved: the answer is stale
                    owner.sim.trace("b" + owner.id + " ignores the stale answer for " + e.tp() + " (hw " + pd.highWatermark() + ")");
                    continue;
                }
                appended |= handlePartition(s, pd, answer.leaderOffsets().get(e.tp()), now);
            }
        }
        // An idle leader holds a fetch in its purgatory for a while; a busy one answers at once.
        scheduleFetch(appended ? owner.random.nextInt(2) : 5 + owner.random.nextInt(10));
    }

    /** ReplicaFetcherThread.handlePartition; true when records were appended. */
    private boolean handlePartition(State s, FetchResponseData.PartitionData pd, long[] leaderOffsets, long now) {
        SimLog log = s.log();
        String name = "b" + owner.id + " " + s.target.tp();
        Errors error = Errors.forCode(pd.errorCode());
        Optional<FetchResponseData.EpochEndOffset> diverging = FetchResponse.divergingEpoch(pd);
        switch (FollowerReplica.classify(error, diverging.isPresent())) {
            case OUT_OF_RANGE -> {
                if (leaderOffsets == null) {
                    s.retryAtMs = now + FETCH_BACKOFF_MS;
                    return false;
                }
                long before = log.leo();
                FollowerReplica.OutOfRange r = FollowerReplica.resolveOutOfRange(log, leaderOffsets[0], leaderOffsets[1]);
                owner.sim.trace(name + " out of range at " + before + " (leader [" + leaderOffsets[0] + ", " + leaderOffsets[1] + "]): "
                        + r + " -> " + log.leo());
                if (r == FollowerReplica.OutOfRange.RETRY) {
                    s.retryAtMs = now + FETCH_BACKOFF_MS;
                }
                return false;
            }
            case NOT_SERVED_YET, OTHER_ERROR -> {
                s.retryAtMs = now + FETCH_BACKOFF_MS;
                return false;
            }
            case DIVERGING -> {
                FollowerReplica.Divergence d = FollowerReplica.truncateOnDivergence(log,
                        new EpochEndOffset(diverging.get().epoch(), diverging.get().endOffset()));
                if (d.step().belowHighWatermark()) {
                    owner.sim.truncationsBelowHighWatermark++;
                }
                owner.sim.trace(name + " truncates " + d.logEndBefore() + " -> " + log.leo() + " (" + d.step() + ")");
                if (!d.changed()) {
                    s.retryAtMs = now + FETCH_BACKOFF_MS;
                }
                return false;
            }
            case RECORDS -> {
                List<SimLog.Rec> batches = SimRecords.decode(FetchResponse.recordsOrFail(pd));
                if (!batches.isEmpty()) {
                    owner.sim.checkLogMatching(owner, s.target.tp().partition(), batches);
                    log.appendBatch(batches);
                }
                FollowerReplica.afterRecords(log, pd.highWatermark(), pd.logStartOffset());
                s.target.replica().followerHighWatermark(s.target.leaderEpoch());
                return !batches.isEmpty();
            }
        }
        throw new IllegalStateException("unreachable");
    }

    private static void backOff(Iterable<FollowerFetchSession.Sent<State>> sent, long now) {
        for (FollowerFetchSession.Sent<State> s : sent) {
            s.state().retryAtMs = Math.max(s.state().retryAtMs, now + FETCH_BACKOFF_MS);
        }
    }

    // ---------------------------------------------------------------- trace

    private static String describe(FetchRequestData r) {
        StringBuilder b = new StringBuilder("fetch s").append(r.sessionId()).append('/').append(r.sessionEpoch()).append(" [");
        for (FetchRequestData.FetchTopic t : r.topics()) {
            for (FetchRequestData.FetchPartition p : t.partitions()) {
                b.append(" p").append(p.partition()).append('@').append(p.fetchOffset()).append(" e").append(p.currentLeaderEpoch());
            }
        }
        b.append(" ]");
        for (FetchRequestData.ForgottenTopic t : r.forgottenTopicsData()) {
            b.append(" forget ").append(t.partitions());
        }
        return b.toString();
    }

    private static String describe(Answer a) {
        FetchResponseData r = a.response();
        StringBuilder b = new StringBuilder("fetch answer s").append(r.sessionId());
        if (r.errorCode() != 0) {
            return b.append(' ').append(Errors.forCode(r.errorCode())).toString();
        }
        b.append(" [");
        for (FetchResponseData.FetchableTopicResponse t : r.responses()) {
            for (FetchResponseData.PartitionData p : t.partitions()) {
                b.append(" p").append(p.partitionIndex()).append(':');
                if (p.errorCode() != 0) {
                    b.append(Errors.forCode(p.errorCode()));
                } else if (FetchResponse.isDivergingEpoch(p)) {
                    b.append("diverging ").append(p.divergingEpoch().epoch()).append('@').append(p.divergingEpoch().endOffset());
                } else {
                    b.append(FetchResponse.recordsSize(p)).append("B hw ").append(p.highWatermark());
                }
            }
        }
        return b.append(" ]").toString();
    }
}
