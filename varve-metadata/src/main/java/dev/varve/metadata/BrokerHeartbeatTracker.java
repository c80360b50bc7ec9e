package dev.varve.metadata;

import java.util.HashMap;
import java.util.Map;

/**
 * The active controller's soft state about broker sessions: last contact, and the metadata offsets a
 * broker must reach before it is unfenced or may finish a controlled shutdown. Not replicated: a new
 * active controller starts empty and gives every broker a fresh session from its first {@code tick}
 * or heartbeat (as Kafka's {@code BrokerHeartbeatManager} does).
 *
 * <p>Time is the caller's {@code nowMs} (monotonic milliseconds). Not thread-safe: owned by the
 * controller's single event thread.
 */
final class BrokerHeartbeatTracker {
    /** No target offset yet. */
    static final long UNSET = -1;

    static final class Session {
        final long brokerEpoch;
        long lastContactMs;
        long catchUpOffset = UNSET;
        long shutdownOffset = UNSET;

        Session(long brokerEpoch, long lastContactMs) {
            this.brokerEpoch = brokerEpoch;
            this.lastContactMs = lastContactMs;
        }
    }

    private final Map<Integer, Session> sessions = new HashMap<>();

    /** The session of this broker epoch, created (contacted now) when missing or of an older epoch. */
    Session session(int brokerId, long brokerEpoch, long nowMs) {
        Session s = sessions.get(brokerId);
        if (s == null || s.brokerEpoch != brokerEpoch) {
            s = new Session(brokerEpoch, nowMs);
            sessions.put(brokerId, s);
        }
        return s;
    }

    void touch(int brokerId, long brokerEpoch, long nowMs) {
        Session s = session(brokerId, brokerEpoch, nowMs);
        s.lastContactMs = Math.max(s.lastContactMs, nowMs);
    }

    /** Whether the broker's session is still open at {@code nowMs}; a session unknown so far opens now. */
    boolean isAlive(int brokerId, long brokerEpoch, long nowMs, long sessionTimeoutMs) {
        return nowMs - session(brokerId, brokerEpoch, nowMs).lastContactMs <= sessionTimeoutMs;
    }

    void remove(int brokerId) {
        sessions.remove(brokerId);
    }
}
