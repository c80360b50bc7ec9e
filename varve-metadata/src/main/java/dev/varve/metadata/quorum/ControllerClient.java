package dev.varve.metadata.quorum;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.common.KafkaException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.ratis.RaftConfigKeys;
import org.apache.ratis.client.RaftClient;
import org.apache.ratis.client.RaftClientConfigKeys;
import org.apache.ratis.conf.RaftProperties;
import org.apache.ratis.protocol.ClientId;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftGroup;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftPeer;
import org.apache.ratis.retry.RetryPolicies;
import org.apache.ratis.rpc.SupportedRpcType;
import org.apache.ratis.thirdparty.com.google.protobuf.ByteString;
import org.apache.ratis.util.TimeDuration;

/**
 * Sends commands to whichever voter currently leads the metadata quorum (the active controller), as
 * Ratis read-only requests over a few client streams ({@link #MAX_STREAMS}): a voter that does not lead answers with a redirect and the Ratis client
 * retries at the leader, across elections, within the configured time. The leader's
 * {@link CommandHandler} serves the command. Used by every broker, including brokers that are not
 * voters, so commands need no second port: they travel on the voters' Raft endpoints.
 *
 * <p>Thread-safe; {@link #send} never blocks.
 */
public final class ControllerClient implements AutoCloseable {
    /**
     * Ratis serves the requests of one client in order, one after the other (Netty has no unordered
     * requests): commands go out on a small pool of clients, each to one with nothing in flight if there
     * is one, so that a broker's heartbeat never waits behind its own slow CreateTopics and concurrent
     * commands can share one metadata entry. Commands are idempotent by request id, so their relative
     * order does not matter.
     */
    static final int MAX_STREAMS = 8;

    private final RaftGroup group;
    private final RaftProperties properties;
    private final int maxAttempts;
    // guarded by "this"
    private final List<RaftClient> clients = new ArrayList<>();
    private final List<int[]> inFlight = new ArrayList<>();
    private boolean closed;

    /**
     * @param voters    the quorum's voters (node id → Raft endpoint)
     * @param clusterId the cluster id the quorum was formatted with (names the Raft group)
     * @param requestTimeoutMs how long one attempt may take before the client tries again
     * @param maxAttempts attempts per command (redirects and connection failures each count one)
     */
    public ControllerClient(Map<Integer, InetSocketAddress> voters, String clusterId, long requestTimeoutMs,
                            int maxAttempts) {
        this(voters, clusterId, requestTimeoutMs, maxAttempts, null);
    }

    /** As above, over mutual TLS when {@code tls} is not null (the voters must serve TLS too). */
    public ControllerClient(Map<Integer, InetSocketAddress> voters, String clusterId, long requestTimeoutMs,
                            int maxAttempts, QuorumTls tls) {
        this(voters, List.of(), clusterId, requestTimeoutMs, maxAttempts, tls);
    }

    /**
     * As above, also trying {@code bootstrap} endpoints ({@code controller.quorum.bootstrap.servers}: Raft
     * endpoints of controllers whose ids are not known here). Ratis serves a client request at any member of
     * the group whatever id the client gave it, and its redirect names the leader and the current members,
     * which the client then uses: after the initial voters were replaced, the current controllers are found
     * through these.
     */
    public ControllerClient(Map<Integer, InetSocketAddress> voters, List<InetSocketAddress> bootstrap, String clusterId,
                            long requestTimeoutMs, int maxAttempts, QuorumTls tls) {
        QuorumConfig shape = QuorumConfig.builder(voters.keySet().iterator().next(), voters,
                java.nio.file.Path.of(".")).clusterId(clusterId).build();
        List<RaftPeer> peers = new ArrayList<>();
        java.util.Set<String> known = new java.util.HashSet<>();
        for (Map.Entry<Integer, InetSocketAddress> e : voters.entrySet()) {
            String hostPort = hostPort(e.getValue());
            known.add(hostPort);
            peers.add(RaftPeer.newBuilder().setId(MetadataQuorum.peerIdOf(e.getKey())).setAddress(hostPort).build());
        }
        int i = 0;
        for (InetSocketAddress a : bootstrap) {
            String hostPort = hostPort(a);
            if (known.add(hostPort)) {
                peers.add(RaftPeer.newBuilder().setId("bootstrap-" + i++).setAddress(hostPort).build());
            }
        }
        this.properties = new RaftProperties();
        this.tls = tls;
        if (tls != null) {
            QuorumTls.useGrpc(properties, null);
        } else {
            RaftConfigKeys.Rpc.setType(properties, SupportedRpcType.NETTY);
        }
        RaftClientConfigKeys.Rpc.setRequestTimeout(properties, TimeDuration.valueOf(requestTimeoutMs, TimeUnit.MILLISECONDS));
        this.group = RaftGroup.valueOf(RaftGroupId.valueOf(shape.groupUuid()), peers);
        this.maxAttempts = maxAttempts;
        newClient();
    }

    private final QuorumTls tls;

    private static String hostPort(InetSocketAddress a) {
        String host = a.getHostString();
        return (host.indexOf(':') >= 0 ? "[" + host + "]" : host) + ":" + a.getPort();
    }

    private RaftClient newClient() {
        RaftClient c = RaftClient.newBuilder()
                .setClientId(ClientId.randomId())
                .setRaftGroup(group)
                .setProperties(properties)
                .setParameters(tls == null ? new org.apache.ratis.conf.Parameters() : tls.parameters())
                .setRetryPolicy(RetryPolicies.retryUpToMaximumCountWithFixedSleep(maxAttempts,
                        TimeDuration.valueOf(100, TimeUnit.MILLISECONDS)))
                .build();
        clients.add(c);
        inFlight.add(new int[1]);
        return c;
    }

    /** An idle stream, a new one while fewer than {@link #MAX_STREAMS}, else the least busy. Caller holds this. */
    private int pick() {
        int best = 0;
        for (int i = 0; i < clients.size(); i++) {
            if (inFlight.get(i)[0] < inFlight.get(best)[0]) {
                best = i;
            }
        }
        if (inFlight.get(best)[0] > 0 && clients.size() < MAX_STREAMS) {
            newClient();
            best = clients.size() - 1;
        }
        return best;
    }

    /**
     * Sends one command to the active controller.
     *
     * @return the reply bytes of the leader's {@link CommandHandler}; fails with {@link TimeoutException}
     *         when no leader answered within the attempts, {@link KafkaException} otherwise
     */
    public CompletableFuture<byte[]> send(byte[] command) {
        CompletableFuture<byte[]> result = new CompletableFuture<>();
        RaftClient client;
        int[] counter;
        synchronized (this) {
            if (closed) {
                result.completeExceptionally(new TimeoutException("the controller client is closed"));
                return result;
            }
            int i = pick();
            client = clients.get(i);
            counter = inFlight.get(i);
            counter[0]++;
        }
        client.async().sendReadOnly(Message.valueOf(ByteString.copyFrom(command))).whenComplete((reply, error) -> {
            synchronized (this) {
                counter[0]--;
            }
            if (error != null) {
                Throwable t = error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
                result.completeExceptionally(new TimeoutException("no metadata leader answered: " + t, t));
            } else if (!reply.isSuccess()) {
                result.completeExceptionally(new KafkaException("the controller failed the command: " + reply.getException(),
                        reply.getException()));
            } else {
                result.complete(reply.getMessage().getContent().toByteArray());
            }
        });
        return result;
    }

    @Override
    public void close() {
        List<RaftClient> all;
        synchronized (this) {
            closed = true;
            all = List.copyOf(clients);
        }
        for (RaftClient c : all) {
            try {
                c.close();
            } catch (IOException e) {
                // nothing to do: the connections are gone either way
            }
        }
    }
}
