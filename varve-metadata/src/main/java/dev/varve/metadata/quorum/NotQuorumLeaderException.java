package dev.varve.metadata.quorum;

import java.util.OptionalInt;

import org.apache.kafka.common.errors.NotControllerException;

/**
 * An append reached a node that is not the ready Raft leader. A subclass of Kafka's
 * {@link NotControllerException}, so {@code Errors.forException} maps it to {@code NOT_CONTROLLER}
 * (retriable); {@link #leaderId()} says where to go instead.
 *
 * <p>When it fails an append that this node had already accepted as leader (leadership was lost
 * before the commit), the entry may still commit under the next leader: the committed log, seen
 * through {@link MetadataListener#onCommitted}, is the only truth.
 */
public class NotQuorumLeaderException extends NotControllerException {
    private static final long serialVersionUID = 1L;

    private final transient OptionalInt leaderId;

    public NotQuorumLeaderException(String message, OptionalInt leaderId) {
        super(message);
        this.leaderId = leaderId;
    }

    /** The current leader's node id as this node knows it, empty when unknown (election running). */
    public OptionalInt leaderId() {
        return leaderId;
    }
}
