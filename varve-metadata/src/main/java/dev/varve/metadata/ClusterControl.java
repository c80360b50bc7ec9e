package dev.varve.metadata;

import dev.varve.metadata.MetadataRecord.BeginControlledShutdown;
import dev.varve.metadata.MetadataRecord.Endpoint;
import dev.varve.metadata.MetadataRecord.FenceBroker;
import dev.varve.metadata.MetadataRecord.RegisterBroker;
import dev.varve.metadata.MetadataRecord.UnfenceBroker;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.protocol.Errors;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeSet;

/**
 * Broker lifecycle: registration, heartbeats, fencing on session expiry, unfencing once caught up, and
 * controlled shutdown (Kafka's {@code ClusterControlManager} plus {@code BrokerHeartbeatManager}).
 *
 * <pre>
 *   register ──► fenced ──(heartbeat, metadata offset caught up)──► unfenced
 *                  ▲                                                 │
 *                  ├──────── session timeout (tick) ◄────────────────┤
 *                  │                                                 ▼
 *                  └─(heartbeat: no leaderships, caught up)── in controlled shutdown ◄─ heartbeat(wantShutDown)
 * </pre>
 *
 * <p>A broker becoming ineligible leaves ISRs and hands its leaderships over in the same Raft entry
 * ({@link PartitionControl#brokersLeft}); a broker becoming unfenced gets leaderless partitions
 * elected ({@link PartitionControl#electLeaderless}).
 *
 * <p>Keeps session soft state ({@link BrokerHeartbeatTracker}): not thread-safe, owned by the active
 * controller's event thread. Time is the caller's monotonic {@code nowMs}.
 */
public final class ClusterControl {
    /**
     * BrokerRegistration.
     *
     * @param previousBrokerEpoch the broker epoch the process had when it last shut down cleanly (written
     *                            with its clean-shutdown marker after the logs were flushed), or -1: a
     *                            mismatch means an unclean shutdown (see {@link LeaderElection})
     */
    public record BrokerRegistrationRequest(int brokerId, Uuid incarnationId, List<Endpoint> listeners, String rack,
                                            long previousBrokerEpoch) {
        public BrokerRegistrationRequest {
            Objects.requireNonNull(incarnationId, "incarnationId");
            listeners = List.copyOf(listeners);
        }
    }

    public record BrokerRegistrationReply(Errors error, long brokerEpoch) {
    }

    /** BrokerHeartbeat: {@code currentMetadataOffset} is the offset of the broker's latest applied image. */
    public record BrokerHeartbeatRequest(int brokerId, long brokerEpoch, long currentMetadataOffset, boolean wantFence,
                                         boolean wantShutDown) {
    }

    public record BrokerHeartbeatReply(Errors error, boolean isCaughtUp, boolean isFenced, boolean shouldShutDown) {
    }

    private final ControllerConfig config;
    private final PartitionControl partitions;
    private final BrokerHeartbeatTracker sessions = new BrokerHeartbeatTracker();

    public ClusterControl(ControllerConfig config, PartitionControl partitions) {
        this.config = config;
        this.partitions = partitions;
    }

    /**
     * Registers a broker process. The same incarnation again is a retry (same epoch, nothing written).
     * Another incarnation of an id whose session is still open and which did not shut down cleanly is
     * refused (DUPLICATE_BROKER_REGISTRATION: a stale or duplicate process); otherwise the new
     * registration gets a higher broker epoch, starts fenced, and replaces the old one — whose
     * leaderships move away in the same entry; after an unclean shutdown it also leaves ISRs and ELRs.
     */
    public ControllerResult<BrokerRegistrationReply> register(MetadataImage image, BrokerRegistrationRequest req, long nowMs) {
        if (req.brokerId() < 0 || req.listeners().isEmpty()) {
            return ControllerResult.of(new BrokerRegistrationReply(Errors.INVALID_REGISTRATION, -1));
        }
        BrokerRegistration existing = image.broker(req.brokerId()).orElse(null);
        if (existing != null && existing.incarnationId().equals(req.incarnationId())) {
            sessions.touch(req.brokerId(), existing.brokerEpoch(), nowMs);
            return ControllerResult.of(new BrokerRegistrationReply(Errors.NONE, existing.brokerEpoch()));
        }
        boolean clean = existing == null || req.previousBrokerEpoch() == existing.brokerEpoch();
        if (existing != null && !existing.fenced() && !clean
                && sessions.isAlive(existing.id(), existing.brokerEpoch(), nowMs, config.brokerSessionTimeoutMs())) {
            return ControllerResult.of(new BrokerRegistrationReply(Errors.DUPLICATE_BROKER_REGISTRATION, -1));
        }
        long epoch = Math.max(existing == null ? -1 : existing.brokerEpoch(), image.offset()) + 1;
        List<MetadataRecord> records = new ArrayList<>();
        records.add(new RegisterBroker(req.brokerId(), req.incarnationId(), epoch, req.listeners(), req.rack(), true));
        if (existing != null) {
            MetadataImage projected = image.apply(image.offset(), records);
            records.addAll(partitions.brokersLeft(projected, Set.of(req.brokerId()),
                    clean ? Set.of() : Set.of(req.brokerId())));
        }
        sessions.touch(req.brokerId(), epoch, nowMs);
        return new ControllerResult<>(records, new BrokerRegistrationReply(Errors.NONE, epoch));
    }

    /**
     * A heartbeat: keeps the session open; unfences a fenced broker once its metadata offset reaches
     * the controller's offset at its first heartbeat of this epoch; fences on {@code wantFence}; and
     * runs controlled shutdown on {@code wantShutDown}: first the broker is marked and its leaderships
     * and ISR memberships handed over, and once the image shows it leads nothing and it has caught up
     * with that image, the reply says {@code shouldShutDown} and the broker is fenced.
     */
    public ControllerResult<BrokerHeartbeatReply> heartbeat(MetadataImage image, BrokerHeartbeatRequest req, long nowMs) {
        BrokerRegistration b = image.broker(req.brokerId()).orElse(null);
        if (b == null) {
            return ControllerResult.of(new BrokerHeartbeatReply(Errors.BROKER_ID_NOT_REGISTERED, false, true, false));
        }
        if (b.brokerEpoch() != req.brokerEpoch()) {
            return ControllerResult.of(new BrokerHeartbeatReply(Errors.STALE_BROKER_EPOCH, false, true, false));
        }
        sessions.touch(b.id(), b.brokerEpoch(), nowMs);
        BrokerHeartbeatTracker.Session s = sessions.session(b.id(), b.brokerEpoch(), nowMs);
        if (s.catchUpOffset == BrokerHeartbeatTracker.UNSET) {
            s.catchUpOffset = image.offset();
        }
        boolean caughtUp = req.currentMetadataOffset() >= s.catchUpOffset;

        if (req.wantShutDown()) {
            return controlledShutdown(image, b, s, req, caughtUp);
        }
        if (req.wantFence()) {
            if (b.fenced()) {
                return ControllerResult.of(new BrokerHeartbeatReply(Errors.NONE, caughtUp, true, false));
            }
            return new ControllerResult<>(fence(image, List.of(b)), new BrokerHeartbeatReply(Errors.NONE, caughtUp, true, false));
        }
        if (b.fenced() && caughtUp) {
            List<MetadataRecord> records = new ArrayList<>();
            records.add(new UnfenceBroker(b.id(), b.brokerEpoch()));
            MetadataImage projected = image.apply(image.offset(), records);
            records.addAll(partitions.electLeaderless(projected, t -> true));
            return new ControllerResult<>(records, new BrokerHeartbeatReply(Errors.NONE, true, false, false));
        }
        return ControllerResult.of(new BrokerHeartbeatReply(Errors.NONE, caughtUp, b.fenced(), false));
    }

    private ControllerResult<BrokerHeartbeatReply> controlledShutdown(MetadataImage image, BrokerRegistration b,
                                                                      BrokerHeartbeatTracker.Session s,
                                                                      BrokerHeartbeatRequest req, boolean caughtUp) {
        if (b.fenced()) {
            // A fenced broker leads nothing and is in no ISR it could be removed from safely: it may go.
            return ControllerResult.of(new BrokerHeartbeatReply(Errors.NONE, caughtUp, true, true));
        }
        if (!b.inControlledShutdown()) {
            List<MetadataRecord> records = new ArrayList<>();
            records.add(new BeginControlledShutdown(b.id(), b.brokerEpoch()));
            MetadataImage projected = image.apply(image.offset(), records);
            records.addAll(partitions.brokersLeft(projected, Set.of(b.id()), Set.of()));
            return new ControllerResult<>(records, new BrokerHeartbeatReply(Errors.NONE, caughtUp, false, false));
        }
        if (PartitionControl.leadershipCount(image, b.id()) > 0) {
            // Cannot happen while the broker is ineligible, but never release it while it still leads.
            return ControllerResult.of(new BrokerHeartbeatReply(Errors.NONE, caughtUp, false, false));
        }
        if (s.shutdownOffset == BrokerHeartbeatTracker.UNSET) {
            s.shutdownOffset = image.offset();
        }
        if (req.currentMetadataOffset() < s.shutdownOffset) {
            return ControllerResult.of(new BrokerHeartbeatReply(Errors.NONE, false, false, false));
        }
        return new ControllerResult<>(List.of(new FenceBroker(b.id(), b.brokerEpoch())),
                new BrokerHeartbeatReply(Errors.NONE, true, true, true));
    }

    /**
     * Fences every eligible or shutting-down broker whose session has been silent for more than
     * {@code broker.session.timeout.ms}, removes it from ISRs (never emptying one) and moves its
     * leaderships — all in one entry. Brokers the controller has not heard from since it became active
     * get a session starting now.
     */
    public ControllerResult<Set<Integer>> tick(MetadataImage image, long nowMs) {
        return tick(image, nowMs, Map.of());
    }

    /**
     * {@link #tick(MetadataImage, long)}, and also fences the brokers in {@code refused} (id to broker
     * epoch) that still have that epoch and have been silent for at least {@link #probeAfterMs}: a
     * liveness probe found nothing listening on their endpoint (connection refused), so their process is
     * gone and waiting out the session timeout would only leave their partitions leaderless longer.
     */
    public ControllerResult<Set<Integer>> tick(MetadataImage image, long nowMs, Map<Integer, Long> refused) {
        List<BrokerRegistration> expired = new ArrayList<>();
        for (BrokerRegistration b : image.brokers().values()) {
            if (b.fenced()) {
                continue;
            }
            boolean sessionExpired = !sessions.isAlive(b.id(), b.brokerEpoch(), nowMs, config.brokerSessionTimeoutMs());
            boolean gone = Long.valueOf(b.brokerEpoch()).equals(refused.get(b.id()))
                    && !sessions.isAlive(b.id(), b.brokerEpoch(), nowMs, probeAfterMs());
            if (sessionExpired || gone) {
                expired.add(b);
            }
        }
        if (expired.isEmpty()) {
            return ControllerResult.of(Set.of());
        }
        Set<Integer> ids = new TreeSet<>();
        expired.forEach(b -> ids.add(b.id()));
        return new ControllerResult<>(fence(image, expired), ids);
    }

    /**
     * How long a broker is silent before the active controller probes its endpoint: a quarter of the
     * session timeout (2.25 s with Kafka's 9 s), longer than a heartbeat interval (2 s) so a live broker
     * is rarely probed, and a probe of a live one costs one accepted connection.
     */
    public long probeAfterMs() {
        return Math.max(1, config.brokerSessionTimeoutMs() / 4);
    }

    /** Unfenced brokers silent for at least {@link #probeAfterMs} (whose endpoint the controller should probe). */
    public List<BrokerRegistration> silentBrokers(MetadataImage image, long nowMs) {
        List<BrokerRegistration> silent = new ArrayList<>();
        for (BrokerRegistration b : image.brokers().values()) {
            if (!b.fenced() && !sessions.isAlive(b.id(), b.brokerEpoch(), nowMs, probeAfterMs())) {
                silent.add(b);
            }
        }
        return silent;
    }

    private List<MetadataRecord> fence(MetadataImage image, List<BrokerRegistration> brokers) {
        List<MetadataRecord> records = new ArrayList<>();
        Set<Integer> ids = new TreeSet<>();
        for (BrokerRegistration b : brokers) {
            records.add(new FenceBroker(b.id(), b.brokerEpoch()));
            ids.add(b.id());
        }
        MetadataImage projected = image.apply(image.offset(), records);
        records.addAll(partitions.brokersLeft(projected, ids, Set.of()));
        return records;
    }

    /** Forgets a broker's session (after it was unregistered). */
    public void forget(int brokerId) {
        sessions.remove(brokerId);
    }
}
