package dev.varve.metadata.quorum;

import java.util.List;
import java.util.OptionalInt;
import java.util.concurrent.CopyOnWriteArrayList;

import dev.varve.metadata.MetadataImage;
import dev.varve.metadata.MetadataRecord;
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

    /** Most recent committed entries kept for brokers that follow the log by fetching it ({@link MetadataFetch}). */
    static final int RETAINED_ENTRIES = 4096;
    static final long RETAINED_BYTES = 16L * 1024 * 1024;

    private final int retainedEntries;
    private final long retainedBytes;
    private final List<ImageListener> listeners = new CopyOnWriteArrayList<>();
    // Guarded by "this": recent entries by index, and the image offset just before the first of them.
    private final java.util.TreeMap<Long, byte[]> recent = new java.util.TreeMap<>();
    private long recentBytes;
    private long recentBase = -1;
    private volatile MetadataImage image = MetadataImage.EMPTY;
    private volatile OptionalInt leaderId = OptionalInt.empty();

    public MetadataLoader() {
        this(RETAINED_ENTRIES, RETAINED_BYTES);
    }

    /** @param retainedEntries, retainedBytes how much of the recent log to keep for fetching brokers */
    public MetadataLoader(int retainedEntries, long retainedBytes) {
        this.retainedEntries = retainedEntries;
        this.retainedBytes = retainedBytes;
    }

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

    /** Answers to recent controller commands kept for their retries ({@link #replyTo}). */
    static final int RETAINED_REPLIES = 8192;
    static final long RETAINED_REPLY_BYTES = 32L * 1024 * 1024;

    /** The committed answer to a controller command: its response bytes and the entry's offset. */
    public record CommittedReply(long offset, byte[] response) {
    }

    // Guarded by "this": answers to recent commands by request id, oldest first.
    private final java.util.LinkedHashMap<org.apache.kafka.common.Uuid, CommittedReply> replies = new java.util.LinkedHashMap<>();
    private long replyBytes;

    /**
     * The answer committed for the command with {@code requestId}, if it was decided recently (the last
     * {@value #RETAINED_REPLIES} commands that changed metadata, within {@value #RETAINED_REPLY_BYTES}
     * bytes, since this node last loaded a snapshot).
     */
    public synchronized java.util.Optional<CommittedReply> replyTo(org.apache.kafka.common.Uuid requestId) {
        return java.util.Optional.ofNullable(replies.get(requestId));
    }

    /**
     * Apply thread only: the records of the open metadata transaction ({@link MetadataRecord.BeginTransaction}),
     * or null when none is open. They reach the image together at its end, or never (aborted).
     */
    private volatile List<MetadataRecord> openTransaction;
    /** The index of the last entry handled (the image offset lags it while a transaction is open). */
    private volatile long lastIndex = -1;

    /** Whether a metadata transaction is open (begun and neither ended nor aborted). */
    public boolean inTransaction() {
        return openTransaction != null;
    }

    /** The index of the last committed entry handled here, applied or buffered in an open transaction. */
    public long lastIndex() {
        return lastIndex;
    }

    @Override
    public void onCommitted(long index, long term, byte[] entry) {
        List<MetadataRecord> records = MetadataRecordSerde.deserialize(entry);
        List<MetadataRecord> apply = new java.util.ArrayList<>(records.size());
        for (MetadataRecord r : records) {
            if (r instanceof MetadataRecord.BeginTransaction) {
                if (openTransaction != null) {
                    throw new dev.varve.metadata.CorruptMetadataException("metadata transaction begun at " + index
                            + " while another is open");
                }
                openTransaction = new java.util.ArrayList<>();
            } else if (r instanceof MetadataRecord.EndTransaction) {
                if (openTransaction == null) {
                    throw new dev.varve.metadata.CorruptMetadataException("metadata transaction ended at " + index + " but none is open");
                }
                apply.addAll(openTransaction);
                openTransaction = null;
            } else if (r instanceof MetadataRecord.AbortTransaction) {
                openTransaction = null; // an abort with none open is harmless (a controller that found one)
            } else if (openTransaction != null) {
                openTransaction.add(r);
            } else {
                apply.add(r);
            }
        }
        lastIndex = index;
        MetadataImage next = openTransaction != null && apply.isEmpty() ? null : image.apply(index, apply);
        synchronized (this) {
            for (MetadataRecord r : apply) {
                if (r instanceof MetadataRecord.CommandReply reply) {
                    byte[] bytes = reply.response();
                    CommittedReply old = replies.put(reply.requestId(), new CommittedReply(index, bytes));
                    replyBytes += bytes.length - (old == null ? 0 : old.response().length);
                }
            }
            var it = replies.values().iterator();
            while (it.hasNext() && (replies.size() > RETAINED_REPLIES || replyBytes > RETAINED_REPLY_BYTES)) {
                replyBytes -= it.next().response().length;
                it.remove();
            }
            recent.put(index, entry);
            recentBytes += entry.length;
            while (recent.size() > retainedEntries || recentBytes > retainedBytes) {
                var first = recent.pollFirstEntry();
                recentBytes -= first.getValue().length;
                recentBase = first.getKey();
            }
        }
        if (next != null) {
            publish(next); // inside an open transaction nothing is published: no image holds part of it
        }
    }

    @Override
    public void onSnapshotLoaded(long index, byte[] snapshot) {
        MetadataImage next = MetadataImage.fromSnapshot(index, MetadataRecordSerde.deserialize(snapshot));
        openTransaction = null; // a snapshot is never taken inside a transaction: it starts after any
        lastIndex = index;
        synchronized (this) {
            recent.clear();
            recentBytes = 0;
            recentBase = next.offset();
        }
        publish(next);
    }

    /**
     * What a broker whose image is at {@code afterOffset} needs next: the retained entries after it (up
     * to about {@code maxBytes}, at least one), or, when entries it needs are no longer retained, a
     * snapshot of the current image. Empty entries when it is up to date.
     */
    public synchronized MetadataFetch.Answer entriesAfter(long afterOffset, int maxBytes) {
        MetadataImage current = image;
        if (afterOffset >= lastIndex) {
            return MetadataFetch.Answer.upToDate();
        }
        if (afterOffset < recentBase) {
            return MetadataFetch.Answer.snapshot(current.offset(), MetadataRecordSerde.serialize(current.toRecords()));
        }
        java.util.List<MetadataFetch.Entry> out = new java.util.ArrayList<>();
        long bytes = 0;
        for (var e : recent.tailMap(afterOffset, false).entrySet()) {
            if (!out.isEmpty() && bytes + e.getValue().length > maxBytes) {
                break;
            }
            out.add(new MetadataFetch.Entry(e.getKey(), e.getValue()));
            bytes += e.getValue().length;
        }
        return MetadataFetch.Answer.entries(out);
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

    /** No snapshot inside an open metadata transaction (its records are in no image yet; Ratis asks again later). */
    @Override
    public byte[] snapshotAt(long appliedIndex) {
        if (openTransaction != null) {
            return null;
        }
        return MetadataRecordSerde.serialize(image.toRecords());
    }
}
