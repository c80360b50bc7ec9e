package dev.varve.broker.cluster;

import dev.varve.broker.BrokerConfig;
import dev.varve.metadata.quorum.MetadataLoader;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.BrokerHeartbeatRequestData;
import org.apache.kafka.common.message.BrokerHeartbeatResponseData;
import org.apache.kafka.common.message.BrokerRegistrationRequestData;
import org.apache.kafka.common.message.BrokerRegistrationResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * A broker's membership of the cluster: registers with the controller (a fresh incarnation id per
 * process, the broker epoch of its last clean shutdown), sends a heartbeat every
 * {@code broker.heartbeat.interval.ms} with the offset of its metadata image (the controller unfences it
 * once caught up), and on shutdown runs controlled shutdown: heartbeats asking to shut down until the
 * controller has moved every leadership away, so clients see at most a retry.
 *
 * <p>The broker epoch of a clean shutdown is written to {@code <log dir>/varve-broker-epoch} after the
 * logs are closed and removed at the next start: its absence tells the controller the previous run
 * ended uncleanly (KIP-966's last-replica-standing guard).
 */
public final class BrokerLifecycle implements AutoCloseable {
    private static final Logger LOG = LoggerFactory.getLogger(BrokerLifecycle.class);
    public static final String EPOCH_FILE = "varve-broker-epoch";

    private final BrokerConfig config;
    private final ControllerChannel controller;
    private final MetadataLoader loader;
    private final List<BrokerConfig.Endpoint> endpoints;
    private final File epochFile;
    private final Uuid incarnationId = Uuid.randomUuid();
    private final long previousBrokerEpoch;
    private final java.util.function.BooleanSupplier storageFailed;
    /** For logging the storage fence once. */
    private volatile boolean askedToFence;
    private final ScheduledExecutorService thread = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "broker-lifecycle");
        t.setDaemon(true);
        return t;
    });
    private final CompletableFuture<Void> unfenced = new CompletableFuture<>();
    private final CompletableFuture<Void> caughtUp = new CompletableFuture<>();
    private volatile long brokerEpoch = -1;
    private volatile boolean shuttingDown;
    private volatile boolean fenced = true;

    public BrokerLifecycle(BrokerConfig config, ControllerChannel controller, MetadataLoader loader,
                           List<BrokerConfig.Endpoint> endpoints, File logDir) throws IOException {
        this(config, controller, loader, endpoints, logDir, false, () -> false);
    }

    /**
     * @param logsDamaged the logs found corrupt flushed data at start-up and cut it: this broker then
     *                    registers as after an unclean shutdown, whatever its last shutdown was, so the
     *                    controller moves it out of every ISR and ELR (it no longer holds everything it
     *                    acknowledged) and it rejoins only by fetching the rest from the leaders
     * @param storageFailed whether a log directory failed (a full disk, an unwritable directory): while
     *                    true every heartbeat asks the controller to fence this broker (KRaft's
     *                    {@code WantFence}), which moves its leaderships away and takes it out of every
     *                    ISR; it stays fenced until the process restarts
     */
    public BrokerLifecycle(BrokerConfig config, ControllerChannel controller, MetadataLoader loader,
                           List<BrokerConfig.Endpoint> endpoints, File logDir, boolean logsDamaged,
                           java.util.function.BooleanSupplier storageFailed) throws IOException {
        this.storageFailed = storageFailed;
        this.config = config;
        this.controller = controller;
        this.loader = loader;
        this.endpoints = List.copyOf(endpoints);
        this.epochFile = new File(logDir, EPOCH_FILE);
        long previous = -1;
        if (epochFile.exists()) {
            try {
                previous = Long.parseLong(Files.readString(epochFile.toPath(), StandardCharsets.UTF_8).trim());
            } catch (NumberFormatException e) {
                LOG.warn("Ignoring unreadable {}", epochFile);
            }
            Files.delete(epochFile.toPath()); // from now on a crash must look unclean
        }
        if (logsDamaged && previous >= 0) {
            LOG.warn("Corrupt data was cut from logs at start-up: registering as after an unclean shutdown");
            previous = -1;
        }
        this.previousBrokerEpoch = previous;
    }

    /** Starts registering and heart-beating; {@link #unfenced()} completes when the controller unfences this broker. */
    public void start() {
        thread.execute(this::register);
    }

    public CompletableFuture<Void> unfenced() {
        return unfenced;
    }

    /**
     * Completes when the controller first says this broker's image has caught up with the metadata
     * log (as of its registration); before that the image may be a replayed, historical one.
     */
    public CompletableFuture<Void> caughtUp() {
        return caughtUp;
    }

    public long brokerEpoch() {
        return brokerEpoch;
    }

    public boolean isFenced() {
        return fenced;
    }

    private void register() {
        if (shuttingDown) {
            return;
        }
        BrokerRegistrationRequestData req = new BrokerRegistrationRequestData()
                .setBrokerId(config.nodeId())
                .setClusterId("")
                .setIncarnationId(incarnationId)
                .setRack(config.rack())
                .setPreviousBrokerEpoch(previousBrokerEpoch);
        for (BrokerConfig.Endpoint e : endpoints) {
            req.listeners().add(new BrokerRegistrationRequestData.Listener().setName(e.listenerName()).setHost(e.host())
                    .setPort(e.port()).setSecurityProtocol((short) 0));
        }
        controller.send(ApiKeys.BROKER_REGISTRATION, req).whenComplete((reply, error) -> {
            Errors err = error != null ? Errors.forException(error)
                    : Errors.forCode(((BrokerRegistrationResponseData) reply.response()).errorCode());
            if (err != Errors.NONE) {
                LOG.warn("Broker registration failed ({}); retrying", error != null ? error.getMessage() : err);
                schedule(this::register, 1000);
                return;
            }
            brokerEpoch = ((BrokerRegistrationResponseData) reply.response()).brokerEpoch();
            LOG.info("Registered broker {} with broker epoch {}", config.nodeId(), brokerEpoch);
            schedule(this::heartbeat, 0);
        });
    }

    private void heartbeat() {
        if (shuttingDown) {
            return;
        }
        send(false).whenComplete((resp, error) -> {
            if (error != null) {
                LOG.debug("Heartbeat failed: {}", error.getMessage());
            } else {
                Errors err = Errors.forCode(resp.errorCode());
                if (err == Errors.STALE_BROKER_EPOCH || err == Errors.BROKER_ID_NOT_REGISTERED) {
                    LOG.warn("Heartbeat refused with {}: registering again", err);
                    schedule(this::register, 0);
                    return;
                }
                if (err == Errors.NONE) {
                    fenced = resp.isFenced();
                    if (resp.isCaughtUp() && !caughtUp.isDone()) {
                        LOG.info("Broker {} has caught up with the metadata log at offset {}", config.nodeId(),
                                loader.image().offset());
                        caughtUp.complete(null);
                    }
                    if (!resp.isFenced() && !unfenced.isDone()) {
                        LOG.info("Broker {} is unfenced", config.nodeId());
                        unfenced.complete(null);
                    }
                }
            }
            // Until unfenced, heartbeat often (as Kafka's broker does while starting): the controller unfences
            // at the first heartbeat that shows the metadata caught up, and waiting a whole interval for it
            // would keep a restarted broker out of every ISR for up to that long.
            long interval = config.longValue(BrokerConfig.BROKER_HEARTBEAT_INTERVAL_MS);
            schedule(this::heartbeat, unfenced.isDone() ? interval : Math.min(interval, STARTING_HEARTBEAT_INTERVAL_MS));
        });
    }

    /**
     * A log directory just failed: one heartbeat now (asking to be fenced) instead of at the next
     * interval, so that leadership moves off this broker at once. Called on the failing thread; the
     * heartbeat is sent from the lifecycle thread.
     */
    public void onStorageFailure() {
        schedule(() -> {
            if (!shuttingDown && brokerEpoch >= 0) {
                send(false).exceptionally(e -> {
                    LOG.debug("Heartbeat after a storage failure failed: {}", e.getMessage());
                    return null;
                });
            }
        }, 0);
    }

    /** Heartbeat interval while registered but not yet unfenced. */
    static final long STARTING_HEARTBEAT_INTERVAL_MS = 50;

    private CompletableFuture<BrokerHeartbeatResponseData> send(boolean wantShutDown) {
        boolean wantFence = !wantShutDown && storageFailed.getAsBoolean();
        if (wantFence && !askedToFence) {
            askedToFence = true;
            LOG.error("A log directory failed: asking the controller to fence broker {} (its leaderships move to other"
                    + " replicas); restart it once the disk is fixed", config.nodeId());
        }
        BrokerHeartbeatRequestData req = new BrokerHeartbeatRequestData()
                .setBrokerId(config.nodeId())
                .setBrokerEpoch(brokerEpoch)
                .setCurrentMetadataOffset(loader.image().offset())
                .setWantFence(wantFence)
                .setWantShutDown(wantShutDown);
        return controller.send(ApiKeys.BROKER_HEARTBEAT, req).thenApply(r -> (BrokerHeartbeatResponseData) r.response());
    }

    private void schedule(Runnable r, long delayMs) {
        try {
            thread.schedule(r, delayMs, TimeUnit.MILLISECONDS);
        } catch (java.util.concurrent.RejectedExecutionException e) {
            // closing
        }
    }

    /**
     * Controlled shutdown: asks the controller to move this broker's leaderships away and waits (up to
     * {@code timeoutMs}) until it agrees the broker may stop.
     */
    public void controlledShutdown(long timeoutMs) {
        shuttingDown = true;
        if (brokerEpoch < 0) {
            return;
        }
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        while (System.nanoTime() < deadline) {
            try {
                BrokerHeartbeatResponseData resp = send(true).get(Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime())),
                        TimeUnit.MILLISECONDS);
                if (resp.errorCode() != Errors.NONE.code() || resp.shouldShutDown()) {
                    LOG.info("Controlled shutdown complete");
                    return;
                }
            } catch (Exception e) {
                LOG.warn("Controlled shutdown heartbeat failed: {}", e.toString());
            }
            try {
                Thread.sleep(100);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
        LOG.warn("Controlled shutdown did not complete within {} ms; stopping anyway", timeoutMs);
    }

    /** Records the broker epoch of a clean shutdown; call after every log is flushed and closed. */
    public void recordCleanShutdown() {
        if (brokerEpoch < 0) {
            return;
        }
        try {
            File tmp = new File(epochFile.getPath() + ".tmp");
            Files.writeString(tmp.toPath(), Long.toString(brokerEpoch), StandardCharsets.UTF_8);
            Files.move(tmp.toPath(), epochFile.toPath(), StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            LOG.warn("Could not record the clean shutdown in {}", epochFile, e);
        }
    }

    @Override
    public void close() {
        shuttingDown = true;
        thread.shutdownNow();
    }
}
