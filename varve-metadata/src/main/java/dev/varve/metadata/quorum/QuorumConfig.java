package dev.varve.metadata.quorum;

import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;

/**
 * Immutable configuration of one node's membership in the metadata quorum.
 *
 * <p>Voters are parsed from Kafka's {@code controller.quorum.voters} syntax
 * ({@code 1@127.0.0.1:29093,2@127.0.0.1:29193}); the port is that node's Raft endpoint. Listeners
 * are broker-only nodes that follow the log without voting (Ratis {@code RaftPeerRole.LISTENER}); they
 * use the same {@code id@host:port} syntax (Kafka has no key for them; {@link #parseVoters} parses both).
 * A node's {@link #role()} follows from where its {@link #nodeId()} appears.
 *
 * <p>Every node of a cluster must be given the same voters, listeners and {@link #clusterId()}: the
 * Raft group id is derived from the cluster id, and the initial membership is written to disk at
 * the first start. Later starts recover membership from disk (the configured sets only matter for
 * a node whose storage is empty).
 *
 * <p>Thread-safety: immutable, safe to share.
 */
public final class QuorumConfig {

    /** Whether this node votes or only follows the log. */
    public enum Role {
        /** Takes part in elections and commits; may become leader (the active controller). */
        VOTER,
        /** Receives every committed entry but never votes and never leads (a broker-only node). */
        LISTENER,
        /**
         * A controller outside the initial voters and listeners (KIP-853's observer): it starts outside the
         * Raft configuration, is added as a listener once it has announced itself to the active controller,
         * and may then be made a voter (AddRaftVoter). Its membership lives in the Raft log from then on.
         */
        OBSERVER
    }

    /** Default lower bound of the randomized election timeout (production). */
    public static final long DEFAULT_ELECTION_TIMEOUT_MIN_MS = 1_000;
    /** Default upper bound of the randomized election timeout (production). */
    public static final long DEFAULT_ELECTION_TIMEOUT_MAX_MS = 2_000;
    /** Default entries applied between two automatic snapshots. */
    public static final long DEFAULT_SNAPSHOT_THRESHOLD_ENTRIES = 10_000;
    /** Default time an {@code append} may take before it fails with a timeout. */
    public static final long DEFAULT_REQUEST_TIMEOUT_MS = 10_000;
    /** Hard ceiling for {@link Builder#maxEntryBytes}: Ratis' log appender buffer is 4 MiB. */
    public static final int MAX_ENTRY_BYTES_LIMIT = 3 * 1024 * 1024;
    /**
     * Default largest entry {@code append} accepts: the ceiling, because one decision must fit one
     * entry, and a CreateTopics of 10,000 partitions (the most one request may add) is about 0.9 MB at
     * RF=3 and 1.3 MB at RF=7.
     */
    public static final int DEFAULT_MAX_ENTRY_BYTES = MAX_ENTRY_BYTES_LIMIT;
    /** Default size at which a Raft log segment is closed (closed segments can be purged after a snapshot). */
    public static final long DEFAULT_LOG_SEGMENT_BYTES = 8L * 1024 * 1024;
    /** Default cluster id (the Raft group id is derived from it). */
    public static final String DEFAULT_CLUSTER_ID = "varve";

    private final int nodeId;
    private final Map<Integer, InetSocketAddress> voters;
    private final Map<Integer, InetSocketAddress> listeners;
    private final Path storageDir;
    private final String clusterId;
    private final long electionTimeoutMinMs;
    private final long electionTimeoutMaxMs;
    private final long snapshotThresholdEntries;
    private final boolean snapshotOnClose;
    private final int snapshotsRetained;
    private final long requestTimeoutMs;
    private final int maxEntryBytes;
    private final long logSegmentBytes;
    private final QuorumTls tls;
    /** This node's Raft endpoint when it is neither a voter nor a listener (an {@link Role#OBSERVER}). */
    private final InetSocketAddress observerAddress;

    private QuorumConfig(Builder b) {
        this.nodeId = b.nodeId;
        this.voters = Collections.unmodifiableMap(new LinkedHashMap<>(b.voters));
        this.listeners = Collections.unmodifiableMap(new LinkedHashMap<>(b.listeners));
        this.storageDir = b.storageDir;
        this.clusterId = b.clusterId;
        this.electionTimeoutMinMs = b.electionTimeoutMinMs;
        this.electionTimeoutMaxMs = b.electionTimeoutMaxMs;
        this.snapshotThresholdEntries = b.snapshotThresholdEntries;
        this.snapshotOnClose = b.snapshotOnClose;
        this.snapshotsRetained = b.snapshotsRetained;
        this.requestTimeoutMs = b.requestTimeoutMs;
        this.maxEntryBytes = b.maxEntryBytes;
        this.logSegmentBytes = b.logSegmentBytes;
        this.tls = b.tls;
        this.observerAddress = b.observerAddress;
    }

    /** Mutual TLS on the quorum (Ratis over gRPC); null: plaintext (Ratis over Netty). */
    public QuorumTls tls() {
        return tls;
    }

    /**
     * Starts a builder.
     *
     * @param nodeId this node's {@code node.id}
     * @param voters the voters, e.g. from {@link #parseVoters(String)}
     * @param storageDir directory holding the Raft log and snapshots (created if missing)
     */
    public static Builder builder(int nodeId, Map<Integer, InetSocketAddress> voters, Path storageDir) {
        return new Builder(nodeId, voters, storageDir);
    }

    /**
     * Parses Kafka's {@code controller.quorum.voters} syntax: comma-separated {@code id@host:port}
     * entries; whitespace around entries is ignored; IPv6 hosts go in brackets ({@code 1@[::1]:29093}).
     *
     * @return ids in the order given, mapped to unresolved-if-necessary socket addresses
     * @throws IllegalArgumentException naming the bad entry when the syntax, an id, a port or a
     *         duplicate id is wrong, or when the string holds no entry
     */
    public static Map<Integer, InetSocketAddress> parseVoters(String value) {
        Objects.requireNonNull(value, "controller.quorum.voters");
        Map<Integer, InetSocketAddress> result = new LinkedHashMap<>();
        for (String raw : value.split(",", -1)) {
            String entry = raw.strip();
            if (entry.isEmpty()) {
                if (value.isBlank()) {
                    break;
                }
                throw new IllegalArgumentException("controller.quorum.voters: empty entry in '" + value + "'");
            }
            int at = entry.indexOf('@');
            int colon = entry.lastIndexOf(':');
            if (at <= 0 || colon < at + 2 || colon == entry.length() - 1) {
                throw new IllegalArgumentException("controller.quorum.voters: entry '" + entry
                        + "' is not of the form id@host:port");
            }
            int id = parseInt(entry.substring(0, at), "node id", entry);
            if (id < 0) {
                throw new IllegalArgumentException("controller.quorum.voters: node id in '" + entry + "' is negative");
            }
            String host = entry.substring(at + 1, colon);
            if (host.startsWith("[") && host.endsWith("]")) {
                host = host.substring(1, host.length() - 1);
            }
            if (host.isEmpty()) {
                throw new IllegalArgumentException("controller.quorum.voters: entry '" + entry + "' has no host");
            }
            int port = parseInt(entry.substring(colon + 1), "port", entry);
            if (port < 1 || port > 65_535) {
                throw new IllegalArgumentException("controller.quorum.voters: port " + port + " in '" + entry
                        + "' is outside 1..65535");
            }
            if (result.putIfAbsent(id, new InetSocketAddress(host, port)) != null) {
                throw new IllegalArgumentException("controller.quorum.voters: node id " + id + " appears twice");
            }
        }
        if (result.isEmpty()) {
            throw new IllegalArgumentException("controller.quorum.voters: no voter given");
        }
        return result;
    }

    private static int parseInt(String text, String what, String entry) {
        try {
            return Integer.parseInt(text.strip());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("controller.quorum.voters: " + what + " '" + text + "' in '"
                    + entry + "' is not a number", e);
        }
    }

    /** This node's {@code node.id}; also its Raft peer id (its decimal string). */
    public int nodeId() {
        return nodeId;
    }

    /** Voters by node id, in configuration order; unmodifiable. */
    public Map<Integer, InetSocketAddress> voters() {
        return voters;
    }

    /** Listeners (non-voting followers) by node id; unmodifiable, possibly empty. */
    public Map<Integer, InetSocketAddress> listeners() {
        return listeners;
    }

    /**
     * This node's role in the initial membership: {@link Role#VOTER} among the voters, {@link Role#LISTENER}
     * among the listeners, otherwise {@link Role#OBSERVER}. Once the membership has changed (AddRaftVoter,
     * RemoveRaftVoter) the Raft configuration decides, not this ({@link MetadataQuorum#membership()}).
     */
    public Role role() {
        return voters.containsKey(nodeId) ? Role.VOTER : listeners.containsKey(nodeId) ? Role.LISTENER : Role.OBSERVER;
    }

    /** The Raft endpoint this node binds to. */
    public InetSocketAddress address() {
        return voters.containsKey(nodeId) ? voters.get(nodeId)
                : listeners.containsKey(nodeId) ? listeners.get(nodeId) : observerAddress;
    }

    public Path storageDir() {
        return storageDir;
    }

    public String clusterId() {
        return clusterId;
    }

    /** The Raft group id: a name-based (v3) UUID of {@code "varve-metadata/" + clusterId}. */
    public UUID groupUuid() {
        return UUID.nameUUIDFromBytes(("varve-metadata/" + clusterId).getBytes(StandardCharsets.UTF_8));
    }

    public long electionTimeoutMinMs() {
        return electionTimeoutMinMs;
    }

    public long electionTimeoutMaxMs() {
        return electionTimeoutMaxMs;
    }

    /** Applied log entries between automatic snapshots; 0 disables automatic snapshots. */
    public long snapshotThresholdEntries() {
        return snapshotThresholdEntries;
    }

    /** Whether a clean {@code close()} takes a snapshot of what was applied since the last one. */
    public boolean snapshotOnClose() {
        return snapshotOnClose;
    }

    /** Snapshot files kept on disk; older ones are deleted after each new snapshot. */
    public int snapshotsRetained() {
        return snapshotsRetained;
    }

    public long requestTimeoutMs() {
        return requestTimeoutMs;
    }

    public int maxEntryBytes() {
        return maxEntryBytes;
    }

    public long logSegmentBytes() {
        return logSegmentBytes;
    }

    @Override
    public String toString() {
        return "QuorumConfig{nodeId=" + nodeId + ", role=" + role() + ", voters=" + voters + ", listeners="
                + listeners + ", storageDir=" + storageDir + ", clusterId=" + clusterId + ", electionTimeoutMs="
                + electionTimeoutMinMs + ".." + electionTimeoutMaxMs + ", snapshotThresholdEntries="
                + snapshotThresholdEntries + ", requestTimeoutMs=" + requestTimeoutMs + "}";
    }

    /** Builder with production defaults; {@link #build()} validates everything at once. */
    public static final class Builder {
        private final int nodeId;
        private final Map<Integer, InetSocketAddress> voters;
        private final Path storageDir;
        private Map<Integer, InetSocketAddress> listeners = Map.of();
        private String clusterId = DEFAULT_CLUSTER_ID;
        private long electionTimeoutMinMs = DEFAULT_ELECTION_TIMEOUT_MIN_MS;
        private long electionTimeoutMaxMs = DEFAULT_ELECTION_TIMEOUT_MAX_MS;
        private long snapshotThresholdEntries = DEFAULT_SNAPSHOT_THRESHOLD_ENTRIES;
        private boolean snapshotOnClose = true;
        private int snapshotsRetained = 2;
        private long requestTimeoutMs = DEFAULT_REQUEST_TIMEOUT_MS;
        private int maxEntryBytes = DEFAULT_MAX_ENTRY_BYTES;
        private long logSegmentBytes = DEFAULT_LOG_SEGMENT_BYTES;
        private QuorumTls tls;
        private InetSocketAddress observerAddress;

        private Builder(int nodeId, Map<Integer, InetSocketAddress> voters, Path storageDir) {
            this.nodeId = nodeId;
            this.voters = Objects.requireNonNull(voters, "voters");
            this.storageDir = Objects.requireNonNull(storageDir, "storageDir");
        }

        /** Non-voting followers (broker-only nodes), same syntax as the voters. */
        public Builder listeners(Map<Integer, InetSocketAddress> listeners) {
            this.listeners = Objects.requireNonNull(listeners, "listeners");
            return this;
        }

        /** The cluster id the Raft group id is derived from; the same on every node. */
        public Builder clusterId(String clusterId) {
            this.clusterId = Objects.requireNonNull(clusterId, "clusterId");
            return this;
        }

        /**
         * The randomized election timeout: a follower that hears nothing from a leader for a time
         * drawn from {@code [minMs, maxMs]} starts an election. Failover takes roughly this long
         * plus one round trip. Tests use about 300..600 ms.
         */
        public Builder electionTimeoutMs(long minMs, long maxMs) {
            this.electionTimeoutMinMs = minMs;
            this.electionTimeoutMaxMs = maxMs;
            return this;
        }

        /** Applied entries between automatic snapshots; 0 disables them. */
        public Builder snapshotThresholdEntries(long entries) {
            this.snapshotThresholdEntries = entries;
            return this;
        }

        /** Whether a clean close snapshots what was applied since the last snapshot (default true). */
        public Builder snapshotOnClose(boolean snapshotOnClose) {
            this.snapshotOnClose = snapshotOnClose;
            return this;
        }

        /** Snapshot files kept on disk (default 2). */
        public Builder snapshotsRetained(int count) {
            this.snapshotsRetained = count;
            return this;
        }

        /** How long an {@code append} may wait for commit and local apply. */
        public Builder requestTimeoutMs(long timeoutMs) {
            this.requestTimeoutMs = timeoutMs;
            return this;
        }

        /** Largest entry {@code append} accepts (at most {@link #MAX_ENTRY_BYTES_LIMIT}). */
        public Builder maxEntryBytes(int maxBytes) {
            this.maxEntryBytes = maxBytes;
            return this;
        }

        /** Mutual TLS on the quorum (null: plaintext). */
        public Builder tls(QuorumTls tls) {
            this.tls = tls;
            return this;
        }

        /**
         * This node's Raft endpoint when its id is neither a voter nor a listener: it then starts as an
         * {@link Role#OBSERVER}, outside the configuration until the active controller adds it.
         */
        public Builder observerAddress(InetSocketAddress address) {
            this.observerAddress = address;
            return this;
        }

        /** Raft log segment size; only closed segments are purged after a snapshot. */
        public Builder logSegmentBytes(long bytes) {
            this.logSegmentBytes = bytes;
            return this;
        }

        /** @throws IllegalArgumentException listing what is wrong */
        public QuorumConfig build() {
            if (voters.isEmpty()) {
                throw new IllegalArgumentException("controller.quorum.voters: no voter given");
            }
            for (Integer id : listeners.keySet()) {
                if (voters.containsKey(id)) {
                    throw new IllegalArgumentException("node " + id + " is both a voter and a listener");
                }
            }
            if (!voters.containsKey(nodeId) && !listeners.containsKey(nodeId) && observerAddress == null) {
                throw new IllegalArgumentException("node.id " + nodeId + " is neither in controller.quorum.voters "
                        + voters.keySet() + " nor among the quorum listeners " + listeners.keySet()
                        + " and has no observer endpoint: it needs a Raft endpoint to follow the metadata log");
            }
            if (observerAddress != null && (voters.containsKey(nodeId) || listeners.containsKey(nodeId))) {
                throw new IllegalArgumentException("node " + nodeId + " is in the initial membership: its endpoint comes"
                        + " from there, not from an observer endpoint");
            }
            if (observerAddress != null && observerAddress.getPort() < 1) {
                throw new IllegalArgumentException("observer " + nodeId + " needs a fixed port, got " + observerAddress);
            }
            checkIds(voters, "voter");
            checkIds(listeners, "listener");
            if (electionTimeoutMinMs < 50 || electionTimeoutMaxMs <= electionTimeoutMinMs) {
                throw new IllegalArgumentException("election timeout must satisfy 50 <= min < max, got min="
                        + electionTimeoutMinMs + " ms, max=" + electionTimeoutMaxMs + " ms");
            }
            if (snapshotThresholdEntries < 0) {
                throw new IllegalArgumentException("snapshotThresholdEntries must be >= 0, got " + snapshotThresholdEntries);
            }
            if (snapshotsRetained < 1) {
                throw new IllegalArgumentException("snapshotsRetained must be >= 1, got " + snapshotsRetained);
            }
            if (requestTimeoutMs <= 0) {
                throw new IllegalArgumentException("requestTimeoutMs must be > 0, got " + requestTimeoutMs);
            }
            if (maxEntryBytes <= 0 || maxEntryBytes > MAX_ENTRY_BYTES_LIMIT) {
                throw new IllegalArgumentException("maxEntryBytes must be in 1.." + MAX_ENTRY_BYTES_LIMIT + ", got "
                        + maxEntryBytes);
            }
            if (logSegmentBytes < 64 * 1024) {
                throw new IllegalArgumentException("logSegmentBytes must be >= 65536, got " + logSegmentBytes);
            }
            if (clusterId.isBlank()) {
                throw new IllegalArgumentException("clusterId must not be blank");
            }
            return new QuorumConfig(this);
        }

        private static void checkIds(Map<Integer, InetSocketAddress> nodes, String what) {
            for (Map.Entry<Integer, InetSocketAddress> e : nodes.entrySet()) {
                if (e.getKey() == null || e.getKey() < 0) {
                    throw new IllegalArgumentException(what + " id " + e.getKey() + " must be >= 0");
                }
                InetSocketAddress a = Objects.requireNonNull(e.getValue(), what + " " + e.getKey() + " address");
                if (a.getPort() < 1) {
                    throw new IllegalArgumentException(what + " " + e.getKey() + " needs a fixed port, got " + a);
                }
            }
        }
    }
}
