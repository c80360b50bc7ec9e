package dev.varve.broker.cluster;

import dev.varve.metadata.quorum.ControllerReply;
import dev.varve.metadata.quorum.MetadataFetch;
import dev.varve.metadata.quorum.MetadataLoader;
import org.apache.kafka.common.protocol.Errors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.concurrent.TimeUnit;

/**
 * A broker that is not a metadata voter follows the committed metadata log by fetching it from the
 * active controller ({@link MetadataFetch}), as Kafka's brokers fetch {@code __cluster_metadata}: one
 * thread asks for what follows its image's offset, applies the entries (or a snapshot, when it is too
 * far behind) to its {@link MetadataLoader} in order, and asks again; the controller holds a fetch
 * briefly when there is nothing new.
 */
final class MetadataFollower implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(MetadataFollower.class);
    private static final int MAX_BYTES = 4 * 1024 * 1024;
    private static final long BACKOFF_MS = 200;

    private final ControllerChannel channel;
    private final MetadataLoader loader;
    private final Thread thread;
    private volatile boolean running = true;

    MetadataFollower(ControllerChannel channel, MetadataLoader loader, int nodeId) {
        this.channel = channel;
        this.loader = loader;
        this.thread = new Thread(this::run, "varve-metadata-follower-" + nodeId);
        thread.setDaemon(true);
    }

    void start() {
        thread.start();
    }

    private void run() {
        boolean reported = false;
        while (running) {
            try {
                long after = loader.lastIndex(); // past the image while a metadata transaction is open
                ControllerReply reply = channel.sendRaw(MetadataFetch.request(after, MAX_BYTES), 10_000)
                        .get(15, TimeUnit.SECONDS);
                if (reply.error() != Errors.NONE) {
                    throw reply.error().exception(reply.message());
                }
                MetadataFetch.Answer answer = MetadataFetch.Answer.decode(reply.response());
                if (answer.isSnapshot()) {
                    LOG.info("Loading a metadata snapshot at offset {} from the controller", answer.snapshotOffset());
                    loader.onSnapshotLoaded(answer.snapshotOffset(), answer.snapshot());
                } else {
                    for (MetadataFetch.Entry e : answer.entries()) {
                        if (e.index() > loader.lastIndex()) {
                            loader.onCommitted(e.index(), 0, e.bytes());
                        }
                    }
                }
                if (reported) {
                    LOG.info("Following the metadata log again");
                    reported = false;
                }
            } catch (InterruptedException e) {
                return;
            } catch (Exception e) {
                if (!running) {
                    return;
                }
                if (!reported) {
                    LOG.warn("Cannot fetch metadata from the controller ({}); retrying", e.toString());
                    reported = true;
                }
                try {
                    Thread.sleep(BACKOFF_MS);
                } catch (InterruptedException ie) {
                    return;
                }
            }
        }
    }

    @Override
    public void close() {
        running = false;
        thread.interrupt();
        try {
            thread.join(5_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
