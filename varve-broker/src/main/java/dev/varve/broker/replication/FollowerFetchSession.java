package dev.varve.broker.replication;

import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.FetchResponseData;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.FetchMetadata;
import org.apache.kafka.common.requests.FetchRequest;

import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A follower's side of its incremental fetch session with one leader (KIP-227), built for fetchers of
 * thousands of partitions that are mostly idle. It speaks the protocol of Kafka's
 * {@code FetchSessionHandler} (a full fetch opens the session; each later fetch carries only the
 * partitions whose fetch position changed, and forgets those no longer fetched; an error or a lost
 * connection makes the next fetch full), but a fetch costs nothing per unchanged partition beyond a
 * comparison of the values last sent: Kafka's handler builds every partition's request entry and two
 * maps of the whole session at every fetch, twice a second per fetcher even when nothing moves, which
 * was most of an idle follower's fetch loop.
 *
 * <p>Topic ids only (Fetch v13 and later). Use: {@link #begin}, {@link #add} for each partition to fetch
 * now, {@link #build}; when the answer comes, {@link #handleResponse} (or {@link #handleError} when
 * none came), then {@link #sentFor} to find what each answered partition was fetched for.
 *
 * <p>Not thread-safe: one fetcher thread uses it, with one fetch in flight at a time.
 *
 * @param <S> the fetcher's own state of a partition (answers are matched to the very state object they were
 *            fetched for)
 */
public final class FollowerFetchSession<S> {
    private record Key(Uuid topicId, int partition) {
    }

    /** One partition as the leader's session holds it: what was last sent for it, and for which fetch state. */
    public static final class Sent<S> {
        private final Key key;
        private final TopicPartition tp;
        private S state;
        private long fetchOffset;
        private long logStartOffset;
        private int leaderEpoch;
        private int lastFetchedEpoch;
        private int maxBytes;
        private long round;

        private Sent(Key key, TopicPartition tp) {
            this.key = key;
            this.tp = tp;
        }

        /** The fetch state the partition was last fetched for. */
        public S state() {
            return state;
        }

        /** The fetch offset the leader holds for the partition (the one the last fetch read from). */
        public long fetchOffset() {
            return fetchOffset;
        }

        public TopicPartition tp() {
            return tp;
        }

        private boolean differs(S state, long fetchOffset, long logStartOffset, int leaderEpoch, int lastFetchedEpoch,
                                int maxBytes) {
            return this.state != state || this.fetchOffset != fetchOffset || this.logStartOffset != logStartOffset
                    || this.leaderEpoch != leaderEpoch || this.lastFetchedEpoch != lastFetchedEpoch || this.maxBytes != maxBytes;
        }

        private FetchRequest.PartitionData request() {
            return new FetchRequest.PartitionData(key.topicId(), fetchOffset, logStartOffset, maxBytes, Optional.of(leaderEpoch),
                    lastFetchedEpoch < 0 ? Optional.empty() : Optional.of(lastFetchedEpoch));
        }
    }

    /**
     * One fetch to send: its session metadata, the partitions to send (all of them for a full fetch, else
     * the changed and new ones), the partitions to forget, and every partition it fetches (sent or held by
     * the session), in session order.
     */
    public record Request<S>(FetchMetadata metadata, Map<TopicPartition, FetchRequest.PartitionData> toSend,
                             List<TopicIdPartition> toForget, List<Sent<S>> partitions) {
        public boolean isFull() {
            return metadata.isFull();
        }
    }

    private final LinkedHashMap<Key, Sent<S>> session = new LinkedHashMap<>();
    private int sessionId = FetchMetadata.INVALID_SESSION_ID;
    private int nextEpoch = FetchMetadata.INITIAL_EPOCH;
    private long round;
    private boolean full;
    private Map<TopicPartition, FetchRequest.PartitionData> toSend;
    private List<Sent<S>> fetched = new ArrayList<>();
    private boolean lastWasFull = true;

    /** Starts building the next fetch. */
    public void begin() {
        round++;
        full = nextEpoch == FetchMetadata.INITIAL_EPOCH;
        if (full) {
            session.clear();
        }
        toSend = new LinkedHashMap<>();
        fetched = new ArrayList<>(Math.max(16, session.size()));
    }

    /**
     * Fetches {@code tp} in this fetch, for {@code state}, from {@code fetchOffset}.
     *
     * @param lastFetchedEpoch the epoch of the follower's last batch, or -1 for none
     */
    public void add(S state, TopicPartition tp, Uuid topicId, long fetchOffset, long logStartOffset, int leaderEpoch,
                    int lastFetchedEpoch, int maxBytes) {
        if (topicId == null || Uuid.ZERO_UUID.equals(topicId)) {
            throw new IllegalArgumentException(tp + " has no topic id: a follower fetches by topic id (Fetch v13+)");
        }
        Key key = new Key(topicId, tp.partition());
        Sent<S> s = session.get(key);
        if (s == null) {
            s = new Sent<>(key, tp);
            session.put(key, s);
        } else if (s.round == round) {
            throw new IllegalArgumentException(tp + " added twice to one fetch");
        } else if (!full && !s.differs(state, fetchOffset, logStartOffset, leaderEpoch, lastFetchedEpoch, maxBytes)) {
            s.round = round;
            fetched.add(s);
            return; // the leader holds exactly this: nothing to send
        }
        s.state = state;
        s.fetchOffset = fetchOffset;
        s.logStartOffset = logStartOffset;
        s.leaderEpoch = leaderEpoch;
        s.lastFetchedEpoch = lastFetchedEpoch;
        s.maxBytes = maxBytes;
        s.round = round;
        fetched.add(s);
        toSend.put(tp, s.request());
    }

    /**
     * The fetch to send, or null when no partition was added (the session is then left as it was: what it
     * would have forgotten is forgotten by the next fetch sent).
     */
    public Request<S> build() {
        if (fetched.isEmpty()) {
            return null;
        }
        List<TopicIdPartition> toForget = new ArrayList<>();
        if (!full) {
            for (Iterator<Sent<S>> it = session.values().iterator(); it.hasNext(); ) {
                Sent<S> s = it.next();
                if (s.round != round) {
                    toForget.add(new TopicIdPartition(s.key.topicId(), s.tp));
                    it.remove();
                }
            }
        }
        lastWasFull = full;
        FetchMetadata metadata = new FetchMetadata(sessionId, full ? FetchMetadata.INITIAL_EPOCH : nextEpoch);
        return new Request<>(metadata, toSend, toForget, fetched);
    }

    /**
     * Takes the leader's answer to the last fetch built. False when it was refused at the session level
     * or did not fit the session: the next fetch is then full (closing the session unless the leader no
     * longer knows it), as Kafka's handler does.
     */
    public boolean handleResponse(FetchResponseData response) {
        Errors error = Errors.forCode(response.errorCode());
        if (error != Errors.NONE) {
            if (error == Errors.FETCH_SESSION_ID_NOT_FOUND) {
                sessionId = FetchMetadata.INVALID_SESSION_ID;
            }
            nextEpoch = FetchMetadata.INITIAL_EPOCH;
            return false;
        }
        if (!lastWasFull) {
            for (FetchResponseData.FetchableTopicResponse t : response.responses()) {
                for (FetchResponseData.PartitionData p : t.partitions()) {
                    if (!session.containsKey(new Key(t.topicId(), p.partitionIndex()))) {
                        nextEpoch = FetchMetadata.INITIAL_EPOCH; // an answer for a partition not in the session
                        return false;
                    }
                }
            }
        }
        if (response.sessionId() == FetchMetadata.INVALID_SESSION_ID) {
            // the leader keeps no session for us (its cache is full, or it closed ours): fetch in full
            sessionId = FetchMetadata.INVALID_SESSION_ID;
            nextEpoch = FetchMetadata.INITIAL_EPOCH;
        } else if (lastWasFull) {
            sessionId = response.sessionId();
            nextEpoch = FetchMetadata.nextEpoch(FetchMetadata.INITIAL_EPOCH);
        } else {
            nextEpoch = FetchMetadata.nextEpoch(nextEpoch);
        }
        return true;
    }

    /** No answer came (a lost connection, a timeout): the next fetch closes this session and opens a new one. */
    public void handleError() {
        nextEpoch = FetchMetadata.INITIAL_EPOCH;
    }

    /** What the answered partition {@code partition} of topic {@code topicId} was fetched for, or null if it is not in the session. */
    public Sent<S> sentFor(Uuid topicId, int partition) {
        return session.get(new Key(topicId, partition));
    }

    /** The session id (0 without a session) and the epoch of the next fetch (0: a full one). */
    public int sessionId() {
        return sessionId;
    }

    public int nextEpoch() {
        return nextEpoch;
    }

    /** Partitions the leader's session holds for this follower (as far as the follower knows). */
    public int size() {
        return session.size();
    }

    @Override
    public String toString() {
        return "FollowerFetchSession(id " + sessionId + ", next epoch " + nextEpoch + ", " + session.size() + " partitions)";
    }
}
