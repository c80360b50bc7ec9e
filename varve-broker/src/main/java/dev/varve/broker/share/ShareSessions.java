package dev.varve.broker.share;

import org.apache.kafka.common.TopicIdPartition;
import org.apache.kafka.common.protocol.Errors;

import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Share sessions (KIP-932): one per (group, member) on this broker, holding the partitions the member
 * fetches and the epoch its next request must carry. ShareSessionEpoch 0 opens (or replaces) a session
 * with the request's partitions; a positive epoch must be the session's (INVALID_SHARE_SESSION_EPOCH,
 * SHARE_SESSION_NOT_FOUND without a session) and adds the request's partitions and drops the forgotten
 * ones; -1 closes it. At most {@code group.share.max.share.sessions} sessions: a new one beyond that
 * is SHARE_SESSION_LIMIT_REACHED. Thread-safe (one monitor; every operation is a few map operations).
 */
public final class ShareSessions {
    public static final int INITIAL_EPOCH = 0;
    public static final int FINAL_EPOCH = -1;

    public record Key(String groupId, String memberId) {
    }

    /** A session as seen by one request: the partitions it fetches (a copy) and the epoch of the request after it. */
    public record View(Errors error, List<TopicIdPartition> partitions) {
        static View error(Errors e) {
            return new View(e, List.of());
        }
    }

    private static final class Session {
        int nextEpoch = 1;
        final Set<TopicIdPartition> partitions = new LinkedHashSet<>();
    }

    private final int maxSessions;
    private final Map<Key, Session> sessions = new HashMap<>();

    public ShareSessions(int maxSessions) {
        this.maxSessions = maxSessions;
    }

    /** ShareFetch with epoch 0: a new session with {@code partitions}, replacing the member's old one. */
    public synchronized View open(Key key, Collection<TopicIdPartition> partitions) {
        if (!sessions.containsKey(key) && sessions.size() >= maxSessions) {
            return View.error(Errors.SHARE_SESSION_LIMIT_REACHED);
        }
        Session s = new Session();
        s.partitions.addAll(partitions);
        sessions.put(key, s);
        return new View(Errors.NONE, List.copyOf(s.partitions));
    }

    /** ShareFetch with a positive epoch: the session's partitions after adding and forgetting; the epoch advances. */
    public synchronized View next(Key key, int epoch, Collection<TopicIdPartition> added, Collection<TopicIdPartition> forgotten) {
        Session s = sessions.get(key);
        if (s == null) {
            return View.error(Errors.SHARE_SESSION_NOT_FOUND);
        }
        if (epoch != s.nextEpoch) {
            return View.error(Errors.INVALID_SHARE_SESSION_EPOCH);
        }
        s.partitions.addAll(added);
        s.partitions.removeAll(forgotten);
        s.nextEpoch = s.nextEpoch == Integer.MAX_VALUE ? 1 : s.nextEpoch + 1;
        return new View(Errors.NONE, List.copyOf(s.partitions));
    }

    /**
     * ShareAcknowledge: its epoch must be the session's (0 never is: only a ShareFetch opens a session);
     * the epoch advances; -1 needs a session, which the caller then closes.
     */
    public synchronized Errors acknowledge(Key key, int epoch) {
        if (epoch == INITIAL_EPOCH) {
            return Errors.INVALID_SHARE_SESSION_EPOCH;
        }
        Session s = sessions.get(key);
        if (s == null) {
            return Errors.SHARE_SESSION_NOT_FOUND;
        }
        if (epoch == FINAL_EPOCH) {
            return Errors.NONE;
        }
        if (epoch != s.nextEpoch) {
            return Errors.INVALID_SHARE_SESSION_EPOCH;
        }
        s.nextEpoch = s.nextEpoch == Integer.MAX_VALUE ? 1 : s.nextEpoch + 1;
        return Errors.NONE;
    }

    /** Whether the member has a session (a final-epoch request needs one). */
    public synchronized boolean exists(Key key) {
        return sessions.containsKey(key);
    }

    /** Closes a session; true when there was one. */
    public synchronized boolean remove(Key key) {
        return sessions.remove(key) != null;
    }

    /** Closes every session of a group (the group is deleted). */
    public synchronized void removeGroup(String groupId) {
        sessions.keySet().removeIf(k -> k.groupId().equals(groupId));
    }

    public synchronized int size() {
        return sessions.size();
    }
}
