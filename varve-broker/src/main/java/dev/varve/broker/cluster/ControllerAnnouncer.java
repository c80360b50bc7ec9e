package dev.varve.broker.cluster;

import dev.varve.broker.WheelTimer;
import dev.varve.metadata.MetadataRecord;
import dev.varve.metadata.quorum.ControllerAnnouncement;
import dev.varve.metadata.quorum.ControllerReply;
import dev.varve.metadata.quorum.MetadataQuorum;
import org.apache.kafka.common.protocol.Errors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Tells the active controller who this controller is ({@link ControllerAnnouncement}: node id, directory
 * id, Raft endpoint), so that it is registered and, when outside the Raft configuration (a new controller,
 * or one dropped while it was away), added as an observer that follows the metadata log. KIP-853's
 * AddRaftVoter can then make it a voter.
 *
 * <p>Announces every {@link #FAST_MS} until the controller accepted and this node is in the configuration,
 * then every {@link #SLOW_MS}. Runs on the broker's timer; one announcement in flight at a time; never
 * blocks (the channel's futures complete the rounds).
 */
final class ControllerAnnouncer implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(ControllerAnnouncer.class);
    static final long FAST_MS = 1_000;
    static final long SLOW_MS = 10_000;
    /** How long one announcement may wait for an active controller. */
    private static final long ATTEMPT_MS = 10_000;

    private final ControllerChannel channel;
    private final MetadataQuorum quorum;
    private final WheelTimer timer;
    private final byte[] command;
    private final int nodeId;
    private volatile boolean closed;
    private volatile boolean accepted;
    private volatile Errors lastError = Errors.NONE;

    ControllerAnnouncer(ControllerChannel channel, MetadataQuorum quorum, WheelTimer timer,
                        MetadataRecord.ControllerRegistration registration) {
        this.channel = channel;
        this.quorum = quorum;
        this.timer = timer;
        this.command = ControllerAnnouncement.request(registration);
        this.nodeId = registration.controllerId();
    }

    void start() {
        announce();
    }

    private void announce() {
        if (closed) {
            return;
        }
        channel.sendRaw(command, ATTEMPT_MS).whenComplete((reply, error) -> {
            Errors e = error != null ? Errors.REQUEST_TIMED_OUT : reply.error();
            if (e == Errors.NONE) {
                if (!accepted) {
                    LOG.info("Controller {} announced itself to the active controller", nodeId);
                }
                accepted = true;
            } else if (e != lastError) {
                LOG.info("Controller {} could not announce itself yet: {}", nodeId,
                        error != null ? error.toString() : e + " " + reply.message());
            }
            lastError = e;
            boolean settled = e == Errors.NONE && quorum.inConfiguration();
            schedule(settled ? SLOW_MS : FAST_MS);
        });
    }

    private void schedule(long delayMs) {
        if (closed) {
            return;
        }
        try {
            timer.schedule(delayMs, this::announce);
        } catch (IllegalStateException stopped) {
            closed = true;
        }
    }

    /** Whether the active controller has accepted an announcement of this controller. */
    boolean accepted() {
        return accepted;
    }

    @Override
    public void close() {
        closed = true;
    }
}
