package dev.varve.metadata.quorum;

import java.util.concurrent.CompletableFuture;

/**
 * Serves commands sent to the quorum with {@link ControllerClient}: Ratis routes each one to the current
 * Raft leader, whose {@link MetadataQuorum} hands it to this handler. The handler decides, appends the
 * resulting records with {@link MetadataQuorum#append} and completes the future with the reply bytes.
 *
 * <p>Called on Ratis' RPC threads; must not block. A future completed exceptionally reaches the sender
 * as a failed call, so handlers should encode application errors in the reply instead.
 */
@FunctionalInterface
public interface CommandHandler {
    CompletableFuture<byte[]> handle(byte[] command);
}
