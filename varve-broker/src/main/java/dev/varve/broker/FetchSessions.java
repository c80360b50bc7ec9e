package dev.varve.broker;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.FetchRequestData;
import org.apache.kafka.common.message.FetchResponseData;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.FetchMetadata;
import org.apache.kafka.common.utils.Time;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.function.IntSupplier;

/**
 * Incremental fetch sessions (KIP-227): a client (a consumer or a follower) that fetches the same
 * partitions over and over sends them once; later requests carry only the partitions whose fetch
 * position changed, and responses carry only the partitions with something new (records, a moved
 * high watermark, log start or last stable offset, an error). A follower of 1,000 idle partitions
 * then exchanges a few dozen bytes per fetch instead of 1,000 partition entries each way.
 *
 * <p>Protocol, as Kafka's broker implements it ({@code FetchMetadata}):
 * <ul>
 *   <li>session 0, epoch -1: a full fetch without a session;</li>
 *   <li>session 0 or N, epoch 0: a full fetch that (closing N) opens a new session when a slot is free;
 *       the answer names the new session id, or 0 when the cache is full;</li>
 *   <li>session N, epoch E &gt; 0: an incremental fetch; E must be the session's next epoch
 *       (INVALID_FETCH_SESSION_EPOCH otherwise; FETCH_SESSION_ID_NOT_FOUND for an unknown N); the
 *       request's partitions are added or updated, its forgotten topics removed;</li>
 *   <li>session N, epoch -1: closes N, then a full fetch without a session.</li>
 * </ul>
 * A session keeps the way it names topics (ids from Fetch v13, names before): a request of the other
 * kind gets FETCH_SESSION_TOPIC_ID_ERROR.
 *
 * <p>The cache holds at most {@code max.incremental.fetch.session.cache.slots} sessions. When it is
 * full, a new session takes the slot of one idle for longer than the eviction time ({@link #MIN_EVICTION_MS}
 * unless given), or a
 * follower's new session takes the least recently used consumer session's slot (replication comes
 * first, as in Kafka); otherwise the client keeps fetching without a session.
 *
 * <p>Thread-safe: the cache is guarded by its own lock, each session by its monitor (a client sends one
 * request of a session at a time).
 */
public final class FetchSessions {
    /** Kafka's {@code min.incremental.fetch.session.eviction.ms} (an internal constant there too). */
    public static final long MIN_EVICTION_MS = 120_000;

    private final int maxSlots;
    private final Time time;
    private final long minEvictionMs;
    /** Where new session ids come from (positive ints; a taken or non-positive one is drawn again). */
    private final IntSupplier sessionIds;
    private final LinkedHashMap<Integer, Session> sessions = new LinkedHashMap<>(16, 0.75f, true);
    private long created;
    private long evicted;
    private final java.util.concurrent.atomic.AtomicLong incrementalFetches = new java.util.concurrent.atomic.AtomicLong();
    private final java.util.concurrent.atomic.AtomicLong omittedPartitions = new java.util.concurrent.atomic.AtomicLong();

    public FetchSessions(int maxSlots, Time time) {
        this(maxSlots, time, MIN_EVICTION_MS, () -> ThreadLocalRandom.current().nextInt(1, Integer.MAX_VALUE));
    }

    /**
     * A cache with its own eviction time and session ids: the replication simulation draws ids from its
     * seeded random (a seed must replay exactly, and ThreadLocalRandom differs per run) and scales the
     * eviction time down to its seconds-long histories.
     *
     * @param minEvictionMs a session idle for longer than this may lose its slot to a new one
     * @param sessionIds    new session ids (positive)
     */
    public FetchSessions(int maxSlots, Time time, long minEvictionMs, IntSupplier sessionIds) {
        this.maxSlots = maxSlots;
        this.time = time;
        this.minEvictionMs = minEvictionMs;
        this.sessionIds = sessionIds;
    }

    /** What one partition of a session last asked for and was last told. */
    private static final class Cached {
        final Key key;
        FetchRequestData.FetchPartition request;
        long highWatermark = Long.MIN_VALUE;
        long lastStableOffset = Long.MIN_VALUE;
        long logStartOffset = Long.MIN_VALUE;

        Cached(Key key, FetchRequestData.FetchPartition request) {
            this.key = key;
            this.request = request;
        }

        /**
         * Nothing is known to have reached the client: the next answer carries the partition. After a
         * diverging-epoch answer, whose high watermark, log start and last stable offset a follower does
         * not take (it truncates first, and the log below the truncation point may still differ from the
         * leader's). Remembering them as sent would leave an idle follower with its old high watermark
         * until the leader's moves again (found by the replication simulation: a follower restarted with
         * an old HW checkpoint, truncated on its first fetch, never learned the HW of an idle partition).
         */
        void forgetAnswered() {
            highWatermark = Long.MIN_VALUE;
            lastStableOffset = Long.MIN_VALUE;
            logStartOffset = Long.MIN_VALUE;
        }
    }

    private record Key(Uuid topicId, String topic, int partition) {
    }

    /**
     * A session's partitions as a fetch reads them: grouped by topic in the order they joined, and each
     * one's {@link Cached} in the same order (an answer lists its partitions in that order). Never mutated.
     */
    private record View(List<FetchRequestData.FetchTopic> topics, Cached[] inOrder) {
        static View of(Session session) {
            Map<Object, FetchRequestData.FetchTopic> byTopic = new LinkedHashMap<>();
            Map<Object, List<Cached>> cachedByTopic = new LinkedHashMap<>();
            for (Cached c : session.partitions.values()) {
                Key k = c.key;
                Object topicKey = session.usesTopicIds ? k.topicId() : k.topic();
                byTopic.computeIfAbsent(topicKey,
                        x -> new FetchRequestData.FetchTopic().setTopicId(k.topicId() == null ? Uuid.ZERO_UUID : k.topicId())
                                .setTopic(k.topic() == null ? "" : k.topic()))
                        .partitions().add(c.request); // replaced by update(), never mutated
                cachedByTopic.computeIfAbsent(topicKey, x -> new ArrayList<>()).add(c);
            }
            List<Cached> inOrder = new ArrayList<>(session.partitions.size());
            cachedByTopic.values().forEach(inOrder::addAll);
            return new View(List.copyOf(byTopic.values()), inOrder.toArray(new Cached[0]));
        }
    }

    private static final class Session {
        final int id;
        final boolean follower;
        final boolean usesTopicIds;
        /** In the order partitions were added (the response order, as Kafka keeps it). */
        final LinkedHashMap<Key, Cached> partitions = new LinkedHashMap<>();
        int nextEpoch = 1;
        long lastUsedMs;
        /**
         * The partitions grouped by topic as a fetch reads them, or null once a request changed them: an
         * idle follower's incremental fetch names no partition, and then reuses this as it is (rebuilding
         * it for thousands of partitions twice a second per follower was most of an idle leader's work).
         */
        View view;
        /** What the fetch handler keeps between this session's fetches ({@link Context#handlerState}); cleared with the view. */
        Object handlerState;

        Session(int id, boolean follower, boolean usesTopicIds, long nowMs) {
            this.id = id;
            this.follower = follower;
            this.usesTopicIds = usesTopicIds;
            this.lastUsedMs = nowMs;
        }
    }

    /**
     * How one Fetch request is served: the topics and partitions to read (the whole session for an
     * incremental fetch), and {@link #finish} to turn the full answer into the one to send.
     */
    public interface Context {
        /** The partitions to read, grouped by topic, each with the position to read from. */
        List<FetchRequestData.FetchTopic> topics();

        /**
         * The response to send for {@code full} (an answer for every partition of {@link #topics()}):
         * with the session id, and for an incremental fetch only the partitions that changed; remembers
         * what was sent. Call once.
         */
        FetchResponseData finish(FetchResponseData full);

        /** A session-level error to answer with at once (nothing is read), or NONE. */
        default Errors error() {
            return Errors.NONE;
        }

        /**
         * Whether this request is an incremental fetch that left the session's partitions and positions as
         * they were (it named and forgot no partition): the fetch reads exactly what the last one read.
         */
        default boolean unchangedIncremental() {
            return false;
        }

        /**
         * What the fetch handler keeps with the session from one fetch to the next, or null (outside a
         * session, and whenever a request changed the session's partitions).
         */
        default Object handlerState() {
            return null;
        }

        /** Keeps {@code state} with the session for its next fetch (ignored outside a session). */
        default void handlerState(Object state) {
        }
    }

    /** A request refused at the session level: the error to answer with (and session id 0). */
    public static Context refused(Errors error) {
        return new Sessionless(List.of(), error);
    }

    /**
     * A fetch outside any session: a full fetch of {@code topics} (every partition answered), or, with
     * an {@code error}, a refusal that reads nothing.
     */
    private record Sessionless(List<FetchRequestData.FetchTopic> topics, Errors error) implements Context {
        @Override
        public FetchResponseData finish(FetchResponseData full) {
            return error == Errors.NONE ? full.setSessionId(0)
                    : new FetchResponseData().setErrorCode(error.code()).setSessionId(0);
        }
    }

    /** The context of {@code request} (a Fetch of {@code version}); {@code follower} for a replica's fetch. */
    public Context newContext(FetchRequestData request, short version, boolean follower) {
        boolean usesTopicIds = version >= 13;
        int sessionId = request.sessionId();
        int epoch = request.sessionEpoch();
        long now = time.milliseconds();
        if (epoch == FetchMetadata.FINAL_EPOCH) {
            if (sessionId != 0) {
                remove(sessionId);
            }
            return sessionless(request);
        }
        if (epoch == FetchMetadata.INITIAL_EPOCH) {
            if (sessionId != 0) {
                remove(sessionId);
            }
            Session s = open(follower, usesTopicIds, now);
            if (s == null) {
                return sessionless(request);
            }
            synchronized (s) {
                update(s, request);
            }
            return new SessionContext(s, request, true);
        }
        Session s;
        synchronized (this) {
            s = sessions.get(sessionId);
        }
        if (s == null) {
            return refused(Errors.FETCH_SESSION_ID_NOT_FOUND);
        }
        synchronized (s) {
            if (s.usesTopicIds != usesTopicIds) {
                return refused(Errors.FETCH_SESSION_TOPIC_ID_ERROR);
            }
            if (epoch != s.nextEpoch) {
                return refused(Errors.INVALID_FETCH_SESSION_EPOCH);
            }
            s.lastUsedMs = now;
            update(s, request);
            return new SessionContext(s, request, false);
        }
    }

    /** Sessions in the cache now. */
    public synchronized int size() {
        return sessions.size();
    }

    /** Sessions opened and evicted since start (tests and metrics). */
    public synchronized long created() {
        return created;
    }

    public synchronized long evicted() {
        return evicted;
    }

    /** Incremental fetches answered so far. */
    public long incrementalFetches() {
        return incrementalFetches.get();
    }

    /** Partitions left out of incremental answers because nothing changed for them. */
    public long omittedPartitions() {
        return omittedPartitions.get();
    }

    private synchronized void remove(int sessionId) {
        sessions.remove(sessionId);
    }

    private synchronized Session open(boolean follower, boolean usesTopicIds, long now) {
        if (maxSlots <= 0) {
            return null;
        }
        if (sessions.size() >= maxSlots && !evictOne(follower, now)) {
            return null;
        }
        int id;
        do {
            id = sessionIds.getAsInt();
        } while (id <= 0 || sessions.containsKey(id));
        Session s = new Session(id, follower, usesTopicIds, now);
        sessions.put(id, s);
        created++;
        return s;
    }

    /** Frees one slot: an idle session first, else (for a follower) the least recently used consumer session. */
    private boolean evictOne(boolean follower, long now) {
        Session victim = null;
        for (Session s : sessions.values()) { // least recently used first
            if (now - s.lastUsedMs > minEvictionMs) {
                victim = s;
                break;
            }
        }
        if (victim == null && follower) {
            for (Session s : sessions.values()) {
                if (!s.follower) {
                    victim = s;
                    break;
                }
            }
        }
        if (victim == null) {
            return false;
        }
        sessions.remove(victim.id);
        evicted++;
        return true;
    }

    /** Adds or updates the request's partitions and removes its forgotten ones. Caller holds s. */
    private static void update(Session s, FetchRequestData request) {
        for (FetchRequestData.FetchTopic t : request.topics()) {
            for (FetchRequestData.FetchPartition p : t.partitions()) {
                s.view = null;
                Key key = key(s.usesTopicIds, t.topicId(), t.topic(), p.partition());
                Cached c = s.partitions.get(key);
                if (c == null) {
                    s.partitions.put(key, new Cached(key, p.duplicate()));
                } else {
                    if (c.request.currentLeaderEpoch() != p.currentLeaderEpoch()) {
                        // The client re-added the partition for another leader epoch and may have dropped the
                        // answer it had in flight for the old one (a fetcher ignores answers for partitions
                        // that changed meanwhile): what that answer carried counts as not sent.
                        c.highWatermark = Long.MIN_VALUE;
                        c.lastStableOffset = Long.MIN_VALUE;
                        c.logStartOffset = Long.MIN_VALUE;
                    }
                    c.request = p.duplicate();
                }
            }
        }
        for (FetchRequestData.ForgottenTopic t : request.forgottenTopicsData()) {
            for (int partition : t.partitions()) {
                s.view = null;
                s.partitions.remove(key(s.usesTopicIds, t.topicId(), t.topic(), partition));
            }
        }
    }

    private static Key key(boolean usesTopicIds, Uuid topicId, String topic, int partition) {
        return usesTopicIds ? new Key(topicId == null ? Uuid.ZERO_UUID : topicId, null, partition)
                : new Key(null, topic == null ? "" : topic, partition);
    }

    private static Context sessionless(FetchRequestData request) {
        return new Sessionless(request.topics(), Errors.NONE);
    }

    private final class SessionContext implements Context {
        private final Session session;
        private final boolean fullFetch;
        private final boolean unchanged;
        /** The whole session, grouped by topic in the order partitions joined it. */
        private final View view;

        SessionContext(Session session, FetchRequestData request, boolean fullFetch) { // caller holds session
            this.session = session;
            this.fullFetch = fullFetch;
            this.unchanged = !fullFetch && request.topics().isEmpty() && request.forgottenTopicsData().isEmpty();
            if (session.view == null) {
                session.view = View.of(session);
                session.handlerState = null; // it was kept for the partitions of the old view
            }
            this.view = session.view;
        }

        @Override
        public List<FetchRequestData.FetchTopic> topics() {
            return view.topics();
        }

        @Override
        public boolean unchangedIncremental() {
            return unchanged;
        }

        @Override
        public Object handlerState() {
            synchronized (session) {
                return session.view == view ? session.handlerState : null;
            }
        }

        @Override
        public void handlerState(Object state) {
            synchronized (session) {
                if (session.view == view) {
                    session.handlerState = state;
                }
            }
        }

        /**
         * The cached state of the {@code index}-th partition of an answer to {@link #topics()}: found by
         * position while the session is as this fetch read it (nothing to hash for thousands of partitions),
         * else by key (null once the partition left the session).
         */
        private Cached cachedFor(int index, FetchResponseData.FetchableTopicResponse t, FetchResponseData.PartitionData p) {
            if (session.view == view && index < view.inOrder().length) {
                Cached c = view.inOrder()[index];
                Key k = c.key;
                if (k.partition() == p.partitionIndex() && (session.usesTopicIds
                        ? java.util.Objects.equals(k.topicId(), t.topicId()) : java.util.Objects.equals(k.topic(), t.topic()))) {
                    return c;
                }
            }
            return session.partitions.get(key(session.usesTopicIds, t.topicId(), t.topic(), p.partitionIndex()));
        }

        @Override
        public FetchResponseData finish(FetchResponseData full) {
            synchronized (session) {
                if (full.errorCode() != Errors.NONE.code()) {
                    return full.setSessionId(session.id);
                }
                List<FetchResponseData.FetchableTopicResponse> kept = new ArrayList<>();
                int index = 0;
                for (FetchResponseData.FetchableTopicResponse t : full.responses()) {
                    List<FetchResponseData.PartitionData> changed = new ArrayList<>();
                    for (FetchResponseData.PartitionData p : t.partitions()) {
                        Cached c = cachedFor(index++, t, p);
                        boolean respond = fullFetch || mustRespond(c, p);
                        if (c != null && respond) {
                            if (isDiverging(p)) {
                                c.forgetAnswered();
                            } else {
                                c.highWatermark = p.highWatermark();
                                c.lastStableOffset = p.lastStableOffset();
                                c.logStartOffset = p.logStartOffset();
                            }
                        }
                        if (respond) {
                            changed.add(p);
                        }
                    }
                    if (!changed.isEmpty() || fullFetch) {
                        kept.add(new FetchResponseData.FetchableTopicResponse().setTopic(t.topic()).setTopicId(t.topicId())
                                .setPartitions(changed));
                    }
                }
                if (!fullFetch) {
                    int answered = 0;
                    for (FetchResponseData.FetchableTopicResponse t : kept) {
                        answered += t.partitions().size();
                    }
                    incrementalFetches.incrementAndGet();
                    omittedPartitions.addAndGet(Math.max(0, session.partitions.size() - answered));
                    // the session opened at epoch 0 expects 1 next; each incremental fetch moves it on
                    session.nextEpoch = session.nextEpoch == Integer.MAX_VALUE ? 1 : session.nextEpoch + 1;
                }
                session.lastUsedMs = time.milliseconds();
                return full.setResponses(kept).setSessionId(session.id);
            }
        }
    }

    private static boolean isDiverging(FetchResponseData.PartitionData p) {
        return p.divergingEpoch() != null && p.divergingEpoch().epoch() >= 0;
    }

    /** Whether an incremental response must carry the partition (Kafka's rule). */
    private static boolean mustRespond(Cached c, FetchResponseData.PartitionData p) {
        if (c == null || p.errorCode() != Errors.NONE.code()) {
            return true;
        }
        if (p.records() != null && p.records().sizeInBytes() > 0) {
            return true;
        }
        if (isDiverging(p)) {
            return true;
        }
        if (p.preferredReadReplica() >= 0) {
            return true; // KIP-392: the consumer must learn where to read from, as Kafka's session answers
        }
        return p.highWatermark() != c.highWatermark || p.lastStableOffset() != c.lastStableOffset
                || p.logStartOffset() != c.logStartOffset;
    }

    @Override
    public String toString() {
        return "FetchSessions(" + size() + "/" + maxSlots + ")";
    }
}
