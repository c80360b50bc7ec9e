package dev.varve.broker.group.assignor;

import org.apache.kafka.common.Uuid;

import java.util.Map;
import java.util.Set;

/**
 * A server-side partition assignor of a KIP-848 consumer group ({@code group.consumer.assignors}):
 * computes the group's target assignment from the members' subscriptions, the topics that exist
 * and the previous target assignment.
 *
 * <p>Implementations are pure and stateless: no I/O, no clock, no randomness, safe to share
 * between threads. The result depends only on the spec's content, not on the order of its
 * member list.
 */
public interface ServerAssignor {

    /** The name clients ask for in {@code ConsumerGroupHeartbeat.ServerAssignor}: "uniform" or "range". */
    String name();

    /**
     * The target assignment. Every member of the spec appears in the result, possibly with an
     * empty map; a member never gets a topic entry with an empty partition set. Each partition of
     * every existing topic with at least one subscriber goes to exactly one of its subscribers.
     * Never mutates the input; the returned maps and sets are unmodifiable.
     *
     * @throws IllegalArgumentException if two members share a member id
     */
    Map<String, Map<Uuid, Set<Integer>>> assign(AssignmentSpec spec);

    /** The assignor with this name ("uniform" or "range"). */
    static ServerAssignor byName(String name) {
        if (UniformAssignor.NAME.equals(name)) {
            return UniformAssignor.INSTANCE;
        }
        if (RangeAssignor.NAME.equals(name)) {
            return RangeAssignor.INSTANCE;
        }
        throw new IllegalArgumentException("Unknown server assignor: " + name);
    }
}
