package dev.varve.metadata.quorum;

import java.util.List;
import java.util.OptionalInt;
import java.util.concurrent.CopyOnWriteArrayList;

import dev.varve.metadata.MetadataImage;
import dev.varve.metadata.MetadataRecordSerde;

/**
 * Turns the committed metadata log into {@link MetadataImage}s: every entry is one serialized batch of
 * records ({@link MetadataRecordSerde}); snapshots are the image's records. Publishes each new image and
 * every leadership change to its listeners, on the quorum's apply thread, in log order.
 *
 * <p>{@link #image()} may be read from any thread (the latest published image).
 */
public final class MetadataLoader implements MetadataListener, SnapshotSource {

    /** Receives images in log order on the apply thread; must not block for long and must not throw. */
    public interface ImageListener {
        void onImage(MetadataImage previous, MetadataImage next);

        default void onLeadershipChange(OptionalInt leaderId, boolean thisNodeLeads, long term) {
        }
    }

    private final List<ImageListener> listeners = new CopyOnWriteArrayList<>();
    private volatile MetadataImage image = MetadataImage.EMPTY;
    private volatile OptionalInt leaderId = OptionalInt.empty();

    /** Adds a listener; call before the quorum starts so it sees every image. */
    public void addListener(ImageListener listener) {
        listeners.add(listener);
    }

    public MetadataImage image() {
        return image;
    }

    /** The quorum leader (active controller) as last announced; empty during elections. */
    public OptionalInt leaderId() {
        return leaderId;
    }

    @Override
    public void onCommitted(long index, long term, byte[] entry) {
        publish(image.apply(index, MetadataRecordSerde.deserialize(entry)));
    }

    @Override
    public void onSnapshotLoaded(long index, byte[] snapshot) {
        publish(MetadataImage.fromSnapshot(index, MetadataRecordSerde.deserialize(snapshot)));
    }

    private void publish(MetadataImage next) {
        MetadataImage previous = image;
        image = next;
        for (ImageListener l : listeners) {
            l.onImage(previous, next);
        }
    }

    @Override
    public void onLeadershipChange(OptionalInt leaderId, boolean thisNodeLeads, long term) {
        this.leaderId = leaderId;
        for (ImageListener l : listeners) {
            l.onLeadershipChange(leaderId, thisNodeLeads, term);
        }
    }

    @Override
    public byte[] snapshotAt(long appliedIndex) {
        return MetadataRecordSerde.serialize(image.toRecords());
    }
}
