package dev.varve.metadata.quorum;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;

/** In-process quorum members on free loopback ports, each with its own storage directory. */
final class TestCluster implements AutoCloseable {
    static final long TEST_ELECTION_MIN_MS = 300;
    static final long TEST_ELECTION_MAX_MS = 600;

    final Map<Integer, InetSocketAddress> voters = new LinkedHashMap<>();
    final Map<Integer, InetSocketAddress> listeners = new LinkedHashMap<>();
    /** Nodes outside the initial membership (KIP-853 observers), started with {@link #startObserver}. */
    final Map<Integer, InetSocketAddress> observers = new LinkedHashMap<>();
    final Map<Integer, MetadataQuorum> running = new LinkedHashMap<>();
    final Map<Integer, RecordingListener> recorders = new LinkedHashMap<>();
    private final Path root;
    private final UnaryOperator<QuorumConfig.Builder> tuning;

    TestCluster(Path root, int voterCount, int listenerCount, UnaryOperator<QuorumConfig.Builder> tuning) {
        this.root = root;
        this.tuning = tuning;
        for (int id = 1; id <= voterCount; id++) {
            voters.put(id, new InetSocketAddress("127.0.0.1", freePort()));
        }
        for (int id = 101; id < 101 + listenerCount; id++) {
            listeners.put(id, new InetSocketAddress("127.0.0.1", freePort()));
        }
    }

    static int freePort() {
        try (ServerSocket s = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            s.setReuseAddress(true);
            return s.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    QuorumConfig config(int nodeId) {
        QuorumConfig.Builder b = QuorumConfig.builder(nodeId, voters, root.resolve("node-" + nodeId))
                .listeners(listeners)
                .clusterId("test-cluster")
                .electionTimeoutMs(TEST_ELECTION_MIN_MS, TEST_ELECTION_MAX_MS)
                .requestTimeoutMs(5_000);
        if (observers.containsKey(nodeId)) {
            b.observerAddress(observers.get(nodeId));
        }
        return tuning.apply(b).build();
    }

    /** Starts (or restarts) a node with a fresh listener; returns that listener. */
    RecordingListener start(int nodeId, boolean snapshots) {
        RecordingListener listener = new RecordingListener();
        try {
            MetadataQuorum q = MetadataQuorum.start(config(nodeId), listener, snapshots ? listener : null);
            running.put(nodeId, q);
            recorders.put(nodeId, listener);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return listener;
    }

    /** Starts a node outside the initial membership on a free port; the leader must add it. */
    RecordingListener startObserver(int nodeId, boolean snapshots) {
        observers.computeIfAbsent(nodeId, id -> new InetSocketAddress("127.0.0.1", freePort()));
        return start(nodeId, snapshots);
    }

    void startAll(boolean snapshots) {
        List<Integer> all = new ArrayList<>(voters.keySet());
        all.addAll(listeners.keySet());
        for (int id : all) {
            start(id, snapshots);
        }
    }

    void stop(int nodeId) {
        MetadataQuorum q = running.remove(nodeId);
        if (q != null) {
            q.close();
        }
    }

    MetadataQuorum quorum(int nodeId) {
        return running.get(nodeId);
    }

    RecordingListener recorder(int nodeId) {
        return recorders.get(nodeId);
    }

    Path storage(int nodeId) {
        return root.resolve("node-" + nodeId);
    }

    /** The running node that announced itself leader, or -1. */
    int announcedLeader() {
        int found = -1;
        for (Map.Entry<Integer, MetadataQuorum> e : running.entrySet()) {
            if (e.getValue().isLeader() && recorders.get(e.getKey()).leads) {
                if (found != -1) {
                    return -2; // two announced leaders at once: only transiently possible, callers retry
                }
                found = e.getKey();
            }
        }
        return found;
    }

    @Override
    public void close() {
        for (Integer id : new ArrayList<>(running.keySet())) {
            stop(id);
        }
    }
}
