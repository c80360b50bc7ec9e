package dev.varve.broker.cluster;

import dev.varve.broker.WheelTimer;
import dev.varve.metadata.ControllerEnvelope;
import dev.varve.metadata.MetadataImage;
import dev.varve.metadata.quorum.ControllerClient;
import dev.varve.metadata.quorum.ControllerReply;
import dev.varve.metadata.quorum.MetadataLoader;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.Errors;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

/**
 * The broker's line to the active controller: sends Kafka controller RPCs ({@link ControllerEnvelope})
 * through {@link ControllerClient}, retries while no controller is active (elections, a new leader
 * catching up) until a deadline, and can wait until this broker's own metadata image has reached the
 * offset a decision was committed at, so a client told "created" then finds its topic here.
 */
public final class ControllerChannel implements MetadataLoader.ImageListener, AutoCloseable {
    /** A decided command: the controller's response and the metadata offset it is committed at. */
    public record Reply(ApiMessage response, long metadataOffset) {
    }

    private static final long RETRY_BACKOFF_MS = 100;

    private final ControllerClient client;
    private final long timeoutMs;
    /** The broker's timer (retry back-offs, metadata waits); the broker closes it. */
    private final WheelTimer timer;
    private final CopyOnWriteArrayList<OffsetWaiter> waiters = new CopyOnWriteArrayList<>();

    private record OffsetWaiter(long offset, CompletableFuture<Void> future) {
    }

    /**
     * The channel must be given every image this broker has fully applied ({@link #onImage}); until the
     * first one, {@link #awaitMetadata} waits.
     */
    public ControllerChannel(ControllerClient client, long timeoutMs, WheelTimer timer) {
        this.client = client;
        this.timeoutMs = timeoutMs;
        this.timer = timer;
    }

    /** The offset of the newest image this broker has fully applied. */
    private volatile long appliedOffset = -1;

    /**
     * Sends {@code request} (at the latest version) and completes with the controller's response; fails
     * with {@link TimeoutException} when no controller decided within the channel's timeout, or with
     * the error the controller refused the whole request with.
     */
    public CompletableFuture<Reply> send(ApiKeys key, ApiMessage request) {
        return send(key, key.latestVersion(), request);
    }

    /**
     * Sends {@code request} at {@code version} (a client's request forwarded as it came). Every attempt
     * carries the same request id, so the controller decides the command once however often it is
     * retried here or in the Ratis client (a slow CreateTopics retried must not answer
     * TOPIC_ALREADY_EXISTS for the topic its first attempt created).
     */
    public CompletableFuture<Reply> send(ApiKeys key, short version, ApiMessage request) {
        byte[] command = ControllerEnvelope.encodeRequest(key, version, request, org.apache.kafka.common.Uuid.randomUuid());
        CompletableFuture<Reply> result = new CompletableFuture<>();
        // completed by hand, not with thenApply: callers see the controller's own exception, unwrapped
        sendRaw(command, timeoutMs).whenComplete((reply, error) -> {
            try {
                if (error != null) {
                    result.completeExceptionally(error);
                } else if (reply.error() != Errors.NONE) {
                    result.completeExceptionally(reply.error().exception(reply.message()));
                } else {
                    result.complete(new Reply(ControllerEnvelope.decodeResponse(key, version, reply.response()),
                            reply.metadataOffset()));
                }
            } catch (RuntimeException e) {
                result.completeExceptionally(e);
            }
        });
        return result;
    }

    /**
     * Sends a command's bytes (a Kafka request in its envelope, or a
     * {@link dev.varve.metadata.quorum.MetadataFetch}), retrying while no controller is active, for at
     * most {@code timeoutMs}; completes with the first reply that is not NOT_CONTROLLER.
     */
    public CompletableFuture<ControllerReply> sendRaw(byte[] command, long timeoutMs) {
        CompletableFuture<ControllerReply> result = new CompletableFuture<>();
        attemptRaw(command, result, System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs));
        return result;
    }

    private void attemptRaw(byte[] command, CompletableFuture<ControllerReply> result, long deadline) {
        client.send(command).whenComplete((bytes, error) -> {
            if (error == null) {
                try {
                    ControllerReply reply = ControllerReply.decode(bytes);
                    if (reply.error() != Errors.NOT_CONTROLLER) {
                        result.complete(reply);
                        return;
                    }
                } catch (RuntimeException e) {
                    result.completeExceptionally(e);
                    return;
                }
            }
            if (System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(RETRY_BACKOFF_MS) >= deadline) {
                result.completeExceptionally(new TimeoutException("no active controller answered"
                        + (error == null ? "" : ": " + error.getMessage())));
                return;
            }
            try {
                timer.schedule(RETRY_BACKOFF_MS, () -> attemptRaw(command, result, deadline));
            } catch (IllegalStateException stopped) {
                result.completeExceptionally(new TimeoutException("broker is shutting down"));
            }
        });
    }

    /** Completes once this broker's image has reached {@code offset} (at once if it has). */
    public CompletableFuture<Void> awaitMetadata(long offset) {
        CompletableFuture<Void> f = new CompletableFuture<>();
        if (appliedOffset >= offset) {
            f.complete(null);
            return f;
        }
        OffsetWaiter w = new OffsetWaiter(offset, f);
        waiters.add(w);
        if (appliedOffset >= offset) { // raced with an image
            waiters.remove(w);
            f.complete(null);
        }
        Runnable cancel = timer.schedule(timeoutMs, () -> {
            waiters.remove(w);
            f.completeExceptionally(new TimeoutException("metadata offset " + offset + " not reached"));
        });
        f.whenComplete((v, e) -> cancel.run());
        return f;
    }

    @Override
    public void onImage(MetadataImage previous, MetadataImage next) {
        appliedOffset = next.offset();
        for (OffsetWaiter w : waiters) {
            if (next.offset() >= w.offset()) {
                waiters.remove(w);
                w.future().complete(null);
            }
        }
    }

    /** The exception for an error code the controller put in a response, for logging. */
    static ApiException exception(short code, String message) {
        return Errors.forCode(code).exception(message);
    }

    @Override
    public void close() {
        client.close();
    }
}
