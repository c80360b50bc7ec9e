package dev.varve.broker;

import org.apache.kafka.common.errors.TopicExistsException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Creates an internal topic ({@code __consumer_offsets}, {@code __transaction_state}) on first use:
 * on a single node here and now; in a cluster by one request to the controller at a time (a burst of
 * FindCoordinator sends one), never waiting on the calling thread.
 */
final class InternalTopicCreation {
    private static final Logger LOG = LoggerFactory.getLogger(InternalTopicCreation.class);

    private final BrokerContext broker;
    private final String name;
    private final AtomicReference<CompletableFuture<Void>> creating = new AtomicReference<>();

    InternalTopicCreation(BrokerContext broker, String name) {
        this.broker = broker;
        this.name = name;
    }

    /**
     * Whether the topic exists; when it does not, starts creating it with {@code partitions}, a
     * replication factor of {@code replicationFactor} (capped at the brokers present) and
     * {@code configs}, and answers false (the caller answers COORDINATOR_NOT_AVAILABLE and the client
     * retries, as with Kafka). A single node creates it at once and answers true.
     */
    boolean ensureExists(int partitions, short replicationFactor, Map<String, String> configs) {
        if (broker.topics().get(name).isPresent()) {
            return true;
        }
        if (broker.replicaManager().cluster() != null) {
            CompletableFuture<Void> inFlight = creating.get();
            if (inFlight == null || inFlight.isDone()) {
                CompletableFuture<Void> next = new CompletableFuture<>();
                if (creating.compareAndSet(inFlight, next)) {
                    broker.createTopicAsync(name, partitions, replicationFactor, configs).whenComplete((v, e) -> {
                        if (e != null) {
                            LOG.warn("creating {} failed (the next request retries): {}", name, e.toString());
                        } else {
                            LOG.info("created {} with {} partitions", name, partitions);
                        }
                        next.complete(null);
                    });
                }
            }
            return broker.topics().get(name).isPresent();
        }
        try {
            broker.createTopic(name, partitions, configs);
            LOG.info("created {} with {} partitions", name, partitions);
        } catch (TopicExistsException e) {
            // created concurrently
        }
        return true;
    }
}
