package dev.varve.metadata.quorum;

/**
 * Supplies the state to snapshot; provided by the owner of the {@link MetadataQuorum}.
 *
 * <p>Called on the quorum's apply thread (the same thread as the {@link MetadataListener} callbacks),
 * between two deliveries, so the state it serializes is exactly the state after {@code appliedIndex}.
 * It is called when {@link QuorumConfig#snapshotThresholdEntries()} entries were applied since the last
 * snapshot and, if {@link QuorumConfig#snapshotOnClose()}, during a clean close. It must not throw;
 * a failure is logged and the snapshot skipped (the log is then kept until a later snapshot works).
 */
@FunctionalInterface
public interface SnapshotSource {

    /**
     * @param appliedIndex the last Raft log index applied; may be above the last index passed to
     *        {@link MetadataListener#onCommitted} because Raft configuration entries occupy indexes too
     * @return the serialized state; the quorum stores it with a CRC and hands it back unchanged to
     *         {@link MetadataListener#onSnapshotLoaded}
     */
    byte[] snapshotAt(long appliedIndex);
}
