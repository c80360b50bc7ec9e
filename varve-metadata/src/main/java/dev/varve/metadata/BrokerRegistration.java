package dev.varve.metadata;

import dev.varve.metadata.MetadataRecord.Endpoint;
import org.apache.kafka.common.Uuid;

import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * A registered broker as the metadata image knows it. Immutable.
 *
 * @param brokerEpoch          the epoch of the current registration; requests carrying another one are stale
 * @param rack                 {@code broker.rack}, or null
 * @param fenced               true while the broker may not lead or join ISRs (new registrations, expired sessions)
 * @param inControlledShutdown true from the broker's shutdown request until it is fenced or registers again
 */
public record BrokerRegistration(int id, Uuid incarnationId, long brokerEpoch, List<Endpoint> endpoints, String rack,
                                 boolean fenced, boolean inControlledShutdown) {
    public BrokerRegistration {
        Objects.requireNonNull(incarnationId, "incarnationId");
        endpoints = List.copyOf(endpoints);
    }

    /** May lead partitions and be added to ISRs: unfenced and not shutting down. */
    public boolean isEligible() {
        return !fenced && !inControlledShutdown;
    }

    public Optional<Endpoint> endpoint(String listenerName) {
        return endpoints.stream().filter(e -> e.name().equals(listenerName)).findFirst();
    }

    /**
     * The endpoint to tell a client that connected through {@code listenerName}: the broker's endpoint
     * of that listener, else its first (a cluster whose nodes name their listeners differently).
     */
    public Optional<Endpoint> endpointForClientsOf(String listenerName) {
        return endpoint(listenerName).or(() -> endpoints.stream().findFirst());
    }

    BrokerRegistration withFenced(boolean fenced) {
        return new BrokerRegistration(id, incarnationId, brokerEpoch, endpoints, rack, fenced, fenced ? false : inControlledShutdown);
    }

    BrokerRegistration withControlledShutdown() {
        return new BrokerRegistration(id, incarnationId, brokerEpoch, endpoints, rack, fenced, true);
    }
}
