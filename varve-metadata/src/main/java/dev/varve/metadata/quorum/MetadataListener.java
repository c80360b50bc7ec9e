package dev.varve.metadata.quorum;

import java.util.OptionalInt;

/**
 * Receives the committed metadata log, in order, from {@link MetadataQuorum}.
 *
 * <p><b>Threading.</b> Every callback of one {@code MetadataQuorum} (including
 * {@link SnapshotSource#snapshotAt}) runs on the same single thread, named
 * {@code varve-metadata-apply-<nodeId>}, one at a time, so an implementation needs no locking for
 * state only these callbacks touch; state read by other threads must be published safely (for
 * example, an immutable image in a volatile field).
 *
 * <p><b>Order and exactly-once.</b> Within one run of a node: optionally one
 * {@link #onSnapshotLoaded} first, then {@link #onCommitted} for every committed entry above it in
 * strictly increasing index order, each index at most once. Indexes are Raft log indexes and have
 * gaps: Raft's own configuration entries occupy indexes too. {@link #onSnapshotLoaded} may come again
 * later when the leader installs a newer snapshot on a node that fell too far behind; it replaces the
 * whole state and the next entry is above its index. After a restart the node is rebuilt from its
 * latest snapshot plus the log after it, so the listener sees those entries again in the new run
 * (never twice in the same run).
 *
 * <p><b>Failure.</b> A callback must not throw: a committed entry cannot be skipped without the
 * replicas diverging. If one throws, the quorum treats it as fatal: it stops delivering, fails
 * pending and future appends, shuts the Raft server down and reports the cause through
 * {@link MetadataQuorum#failure()}. The owner should then stop the node.
 */
public interface MetadataListener {

    /**
     * One committed entry, exactly as given to {@link MetadataQuorum#append} on the leader.
     *
     * @param index the entry's Raft log index (strictly increasing, with gaps)
     * @param term the Raft term in which the entry was appended (the leader epoch)
     * @param entry the entry's bytes; owned by the callee
     */
    void onCommitted(long index, long term, byte[] entry);

    /**
     * The state must be replaced by this snapshot, taken when every entry up to {@code index} had been
     * applied. Called before any {@link #onCommitted} when a node starts from a snapshot, and when the
     * leader installs a snapshot on a lagging node.
     *
     * @param index the last log index covered by the snapshot
     * @param snapshot the bytes {@link SnapshotSource#snapshotAt} returned, verified against their CRC
     */
    void onSnapshotLoaded(long index, byte[] snapshot);

    /**
     * Leadership changed. {@code thisNodeLeads} becomes true only once this node is the Raft leader,
     * its leadership is established (an entry of its term is committed) <em>and</em> every entry
     * committed before it became leader has been delivered to this listener, so the controller may act
     * on a complete image. It becomes false as soon as Raft reports another leader or none.
     *
     * @param leaderId the leader's node id, empty while an election is running
     * @param thisNodeLeads whether this node is the leader and may act as the active controller
     * @param term the Raft term (leader epoch) the information belongs to
     */
    void onLeadershipChange(OptionalInt leaderId, boolean thisNodeLeads, long term);
}
