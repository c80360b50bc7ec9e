package dev.varve.broker.cluster;

import dev.varve.metadata.MetadataImage;
import dev.varve.metadata.quorum.MetadataLoader;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.List;
import java.util.OptionalInt;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * Hands metadata images to the broker's components on a thread of its own, so that the one delivering
 * to it never waits for them: the quorum's apply thread (and with it every controller commit) for the
 * topic registry and the controller channel's waiters ({@code varve-metadata-publisher-<nodeId>}),
 * and those for the replicas creating logs and moving fetchers ({@code varve-replica-publisher-<nodeId>}).
 *
 * <p><b>Coalescing.</b> Images that arrive while a delivery runs are not queued one by one: the next
 * delivery hands each listener {@code (last delivered, newest)}, one pass over a delta that may span many
 * metadata entries. A topic of 10,000 partitions followed by 10,000 leader changes is applied as one
 * delta, not 10,001 (Kafka's broker-side MetadataLoader publishes the same way). Listeners must
 * therefore compare the two images they get, never assume they are one entry apart.
 *
 * <p><b>Order.</b> Listeners are called in the order they were added, each with the same pair; an image
 * is {@link #published()} once every listener has seen it. A listener that throws is logged and the
 * others still run. Leadership changes are passed on at once, on the caller's thread.
 */
final class MetadataPublisher implements MetadataLoader.ImageListener, AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(MetadataPublisher.class);

    private final List<MetadataLoader.ImageListener> listeners = new CopyOnWriteArrayList<>();
    private final Thread thread;
    // guarded by "this"
    private MetadataImage latest = MetadataImage.EMPTY;
    private boolean closed;
    /** Publisher thread only. */
    private MetadataImage delivered = MetadataImage.EMPTY;
    private volatile MetadataImage published = MetadataImage.EMPTY;

    MetadataPublisher(String threadName) {
        this.thread = new Thread(this::run, threadName);
        thread.setDaemon(true);
        thread.start();
    }

    /** Adds a listener; call before the first image arrives so it sees every one. */
    void addListener(MetadataLoader.ImageListener listener) {
        listeners.add(listener);
    }

    /** The newest image every listener has been given. */
    MetadataImage published() {
        return published;
    }

    @Override
    public synchronized void onImage(MetadataImage previous, MetadataImage next) {
        if (next.offset() >= latest.offset()) { // never back to an older image (EMPTY is at -1)
            latest = next;
            notifyAll();
        }
    }

    @Override
    public void onLeadershipChange(OptionalInt leaderId, boolean thisNodeLeads, long term) {
        for (MetadataLoader.ImageListener l : listeners) {
            l.onLeadershipChange(leaderId, thisNodeLeads, term);
        }
    }

    private void run() {
        while (true) {
            MetadataImage next;
            synchronized (this) {
                while (!closed && latest == delivered) {
                    try {
                        wait();
                    } catch (InterruptedException e) {
                        return;
                    }
                }
                if (closed) {
                    return;
                }
                next = latest;
            }
            for (MetadataLoader.ImageListener l : listeners) {
                try {
                    l.onImage(delivered, next);
                } catch (RuntimeException e) {
                    LOG.error("A metadata listener failed on the image at offset {}", next.offset(), e);
                }
            }
            delivered = next;
            published = next;
        }
    }

    @Override
    public void close() {
        synchronized (this) {
            closed = true;
            notifyAll();
        }
        try {
            thread.join(10_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
