package dev.varve.broker.cluster;

import dev.varve.metadata.BrokerRegistration;
import dev.varve.metadata.MetadataImage;
import dev.varve.metadata.MetadataRecord;
import org.apache.kafka.common.protocol.Errors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Decides whether a Fetch that claims to come from follower broker {@code replicaId} may be taken as
 * that follower's (CVE-2018-1288 class). A leader believes a follower's fetch offset: it moves the high
 * watermark and completes acks=all produces. A client posing as a follower could therefore make the
 * leader acknowledge writes no follower holds. Varve has no authentication yet (Kafka relies on its
 * authorizer's ClusterAction here, and without an authorizer has no defence at all), so the leader
 * checks what it can:
 * <ul>
 *   <li>the broker epoch the fetch carries (Fetch v15+, KIP-903) must be the one the replica is
 *       registered with (STALE_BROKER_EPOCH otherwise: an old process of that broker, or a guess);</li>
 *   <li>the connection must come from an address of the replica's registered (advertised) hosts
 *       (CLUSTER_AUTHORIZATION_FAILED otherwise), so a client on another machine cannot pose as a
 *       follower. {@code replica.fetch.verify.source=false} turns this off for networks where brokers
 *       reach each other from addresses other than their advertised ones (NAT).</li>
 * </ul>
 * A process on the follower's own machine passes both checks; only authentication can stop that.
 *
 * <p>Thread-safety: safe; host resolutions are cached for {@link #RESOLVE_TTL_MS} and refreshed on
 * a mismatch no more often than that.
 */
public final class FollowerIdentity {
    private static final Logger LOG = LoggerFactory.getLogger(FollowerIdentity.class);
    static final long RESOLVE_TTL_MS = 30_000;

    private record Resolved(List<InetAddress> addresses, long atMs) {
    }

    private final boolean verifySource;
    private final Map<String, Resolved> resolved = new ConcurrentHashMap<>();
    private final Map<Integer, Long> lastWarnMs = new ConcurrentHashMap<>();

    public FollowerIdentity(boolean verifySource) {
        this.verifySource = verifySource;
    }

    /**
     * @param replicaEpoch the broker epoch in the request, {@code -1} when the version has none
     * @param from         the connection's remote address ({@code null} when unknown)
     */
    public Errors check(MetadataImage image, int replicaId, long replicaEpoch, InetAddress from, long nowMs) {
        BrokerRegistration b = image.broker(replicaId).orElse(null);
        if (b == null) {
            return refuse(replicaId, Errors.CLUSTER_AUTHORIZATION_FAILED, "no broker " + replicaId + " is registered", from, nowMs);
        }
        if (replicaEpoch >= 0 && replicaEpoch != b.brokerEpoch()) {
            return refuse(replicaId, Errors.STALE_BROKER_EPOCH, "broker epoch " + replicaEpoch + " is not the registered "
                    + b.brokerEpoch(), from, nowMs);
        }
        if (!verifySource || from == null || matches(b, from, nowMs)) {
            return Errors.NONE;
        }
        return refuse(replicaId, Errors.CLUSTER_AUTHORIZATION_FAILED, from.getHostAddress()
                + " is not an address of its advertised hosts " + b.endpoints().stream().map(MetadataRecord.Endpoint::host).toList()
                + " (behind NAT set replica.fetch.verify.source=false)", from, nowMs);
    }

    /**
     * Whether a broker-to-broker request that names no broker (WriteTxnMarkers) may be taken: the
     * connection must come from an address of some registered broker's advertised hosts
     * (CLUSTER_AUTHORIZATION_FAILED otherwise; NONE when {@code replica.fetch.verify.source=false}).
     */
    public Errors checkAnyBroker(MetadataImage image, InetAddress from, long nowMs) {
        if (!verifySource || from == null) {
            return Errors.NONE;
        }
        for (BrokerRegistration b : image.brokers().values()) {
            if (matches(b, from, nowMs)) {
                return Errors.NONE;
            }
        }
        return Errors.CLUSTER_AUTHORIZATION_FAILED;
    }

    private boolean matches(BrokerRegistration b, InetAddress from, long nowMs) {
        for (MetadataRecord.Endpoint e : b.endpoints()) {
            if (addresses(e.host(), nowMs, false).contains(from)) {
                return true;
            }
        }
        // perhaps an address changed: resolve again (at most once per TTL per host)
        for (MetadataRecord.Endpoint e : b.endpoints()) {
            if (addresses(e.host(), nowMs, true).contains(from)) {
                return true;
            }
        }
        return false;
    }

    private List<InetAddress> addresses(String host, long nowMs, boolean refresh) {
        Resolved r = resolved.get(host);
        if (r != null && (!refresh || nowMs - r.atMs() < RESOLVE_TTL_MS)) {
            return r.addresses();
        }
        List<InetAddress> list;
        try {
            list = Arrays.asList(InetAddress.getAllByName(host));
        } catch (UnknownHostException e) {
            list = r != null ? r.addresses() : List.of();
        }
        resolved.put(host, new Resolved(list, nowMs));
        return list;
    }

    private Errors refuse(int replicaId, Errors error, String why, InetAddress from, long nowMs) {
        Long last = lastWarnMs.get(replicaId);
        if (last == null || nowMs - last >= 10_000) {
            lastWarnMs.put(replicaId, nowMs);
            LOG.warn("Refused a fetch as follower {} from {}: {} ({})", replicaId, from == null ? "?" : from.getHostAddress(),
                    why, error);
        }
        return error;
    }
}
