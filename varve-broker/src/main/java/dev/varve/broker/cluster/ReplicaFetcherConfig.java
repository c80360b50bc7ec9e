package dev.varve.broker.cluster;

/**
 * Settings of the follower fetchers, under Kafka's keys and with Kafka's defaults.
 *
 * @param fetchMaxBytes         {@code replica.fetch.max.bytes}: bytes wanted per partition and fetch (the
 *                              first batch of a fetch is returned whole even if larger)
 * @param fetchResponseMaxBytes {@code replica.fetch.response.max.bytes}: bytes wanted per fetch response
 * @param fetchWaitMaxMs        {@code replica.fetch.wait.max.ms}: how long the leader may hold a fetch that
 *                              has fewer than {@code fetchMinBytes} ready
 * @param fetchMinBytes         {@code replica.fetch.min.bytes}: bytes the leader waits for before answering
 * @param fetchBackoffMs        {@code replica.fetch.backoff.ms}: pause before retrying a partition (or a
 *                              leader) after an error
 * @param socketTimeoutMs       {@code replica.socket.timeout.ms}: connection setup and request timeout
 * @param numFetchers           {@code num.replica.fetchers}: fetcher threads (and connections) per leader
 */
public record ReplicaFetcherConfig(int fetchMaxBytes, int fetchResponseMaxBytes, int fetchWaitMaxMs, int fetchMinBytes,
                                   long fetchBackoffMs, int socketTimeoutMs, int numFetchers) {
    public static final String REPLICA_FETCH_MAX_BYTES = "replica.fetch.max.bytes";
    public static final String REPLICA_FETCH_RESPONSE_MAX_BYTES = "replica.fetch.response.max.bytes";
    public static final String REPLICA_FETCH_WAIT_MAX_MS = "replica.fetch.wait.max.ms";
    public static final String REPLICA_FETCH_MIN_BYTES = "replica.fetch.min.bytes";
    public static final String REPLICA_FETCH_BACKOFF_MS = "replica.fetch.backoff.ms";
    public static final String REPLICA_SOCKET_TIMEOUT_MS = "replica.socket.timeout.ms";
    public static final String NUM_REPLICA_FETCHERS = "num.replica.fetchers";

    public ReplicaFetcherConfig {
        check(fetchMaxBytes > 0, REPLICA_FETCH_MAX_BYTES, fetchMaxBytes);
        check(fetchResponseMaxBytes > 0, REPLICA_FETCH_RESPONSE_MAX_BYTES, fetchResponseMaxBytes);
        check(fetchWaitMaxMs >= 0, REPLICA_FETCH_WAIT_MAX_MS, fetchWaitMaxMs);
        check(fetchMinBytes >= 0, REPLICA_FETCH_MIN_BYTES, fetchMinBytes);
        check(fetchBackoffMs >= 0, REPLICA_FETCH_BACKOFF_MS, fetchBackoffMs);
        check(socketTimeoutMs > 0, REPLICA_SOCKET_TIMEOUT_MS, socketTimeoutMs);
        check(numFetchers >= 1, NUM_REPLICA_FETCHERS, numFetchers);
    }

    /** Kafka's defaults. */
    public static ReplicaFetcherConfig defaults() {
        return new ReplicaFetcherConfig(1_048_576, 10_485_760, 500, 1, 1_000, 30_000, 1);
    }

    private static void check(boolean ok, String key, long value) {
        if (!ok) {
            throw new IllegalArgumentException("invalid " + key + ": " + value);
        }
    }
}
