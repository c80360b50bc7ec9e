package dev.varve.broker.admin.console;

import java.util.List;
import java.util.OptionalInt;

/**
 * What the web console needs of the broker it runs in: everything else it learns as any client would,
 * through the stock Kafka Admin and Consumer clients connected to this broker's own Kafka listener.
 */
public interface ConsoleHost {
    /** This broker's {@code node.id}. */
    int nodeId();

    /**
     * host:port of a PLAINTEXT Kafka listener of this broker, for the console's own clients.
     *
     * @throws IllegalStateException saying why there is none (every listener needs TLS or SASL)
     */
    String plaintextBootstrap();

    /** Why this broker is not ready to serve; empty when it is (as /health/ready). */
    List<String> notReadyBecause();

    /** The active controller's node id as this broker knows it (the metadata quorum's leader), if any. */
    OptionalInt activeControllerId();
}
