package dev.varve.broker.cluster;

import dev.varve.metadata.MetadataImage;
import dev.varve.metadata.quorum.MetadataLoader;

import java.util.OptionalInt;
import java.util.concurrent.CompletableFuture;

/**
 * Holds metadata images back from a listener until this broker has caught up with the metadata log,
 * then hands it the image of that moment and every image after it.
 *
 * <p>Why: at start-up a node replays the metadata log (a voter from its own Raft log, a broker-only
 * node from the controller) and passes through every historical state on the way. Acting on those
 * states would make the broker lead partitions in long-gone leader epochs, accept writes there and let
 * other replaying brokers follow it, so that writes are acknowledged in an epoch the real history has
 * already left, and truncated away later (the fault-injection runner found exactly this after a
 * whole-cluster crash). Kafka's brokers likewise publish metadata to the replica manager only once
 * the controller says they have caught up. The controller's heartbeat answer {@code isCaughtUp}
 * means the broker's image has reached the log's end as of its registration.
 *
 * <p>Thread-safety: images arrive on the loader's apply thread and the catch-up on the lifecycle's
 * thread; both deliver under this object's lock, in offset order, never the same image twice.
 */
final class CatchUpGate implements MetadataLoader.ImageListener {
    private final java.util.function.Supplier<MetadataImage> current;
    private final MetadataLoader.ImageListener target;
    private boolean open;
    private MetadataImage delivered = MetadataImage.EMPTY;

    /** @param current the newest image this gate's source has delivered (handed over when the gate opens) */
    CatchUpGate(java.util.function.Supplier<MetadataImage> current, MetadataLoader.ImageListener target,
                CompletableFuture<Void> caughtUp) {
        this.current = current;
        this.target = target;
        caughtUp.thenRun(this::openGate);
    }

    private synchronized void openGate() {
        open = true;
        deliver(current.get());
    }

    @Override
    public synchronized void onImage(MetadataImage previous, MetadataImage next) {
        if (open) {
            deliver(next);
        }
    }

    private void deliver(MetadataImage next) {
        if (next == delivered || (delivered != MetadataImage.EMPTY && next.offset() <= delivered.offset())) {
            return; // already delivered (the gate opened with this image)
        }
        MetadataImage previous = delivered;
        delivered = next;
        target.onImage(previous, next);
    }

    @Override
    public void onLeadershipChange(OptionalInt leaderId, boolean thisNodeLeads, long term) {
        target.onLeadershipChange(leaderId, thisNodeLeads, term);
    }
}
