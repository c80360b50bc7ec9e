package dev.varve.broker.group;

import org.apache.kafka.common.message.JoinGroupResponseData;
import org.apache.kafka.common.message.SyncGroupResponseData;

import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;

/**
 * One member of a classic group: who it is, the protocols it supports (name and opaque metadata,
 * in its order of preference), its assignment, and the join or sync request it has waiting.
 *
 * <p>Not thread-safe: guarded by the lock of its {@link ClassicGroup}.
 */
final class GroupMember {
    /** A protocol the member supports, with the metadata it sends for it (a consumer's subscription). */
    record Protocol(String name, byte[] metadata) {
    }

    private String memberId;
    final String groupInstanceId;
    final String clientId;
    final String clientHost;
    int rebalanceTimeoutMs;
    int sessionTimeoutMs;
    final String protocolType;
    List<Protocol> protocols;
    byte[] assignment = new byte[0];

    CompletableFuture<JoinGroupResponseData> awaitingJoin;
    CompletableFuture<SyncGroupResponseData> awaitingSync;
    /** Cancels the pending session-timeout check; replaced on every heartbeat. */
    Runnable heartbeatTimer;
    /** Incremented whenever the heartbeat timer is rescheduled, so a stale firing is ignored. */
    long heartbeatEpoch;

    GroupMember(String memberId, String groupInstanceId, String clientId, String clientHost, int rebalanceTimeoutMs,
                int sessionTimeoutMs, String protocolType, List<Protocol> protocols) {
        this.memberId = Objects.requireNonNull(memberId);
        this.groupInstanceId = groupInstanceId;
        this.clientId = clientId;
        this.clientHost = clientHost;
        this.rebalanceTimeoutMs = rebalanceTimeoutMs;
        this.sessionTimeoutMs = sessionTimeoutMs;
        this.protocolType = protocolType;
        this.protocols = List.copyOf(protocols);
    }

    String memberId() {
        return memberId;
    }

    /** A static member rejoining under a new member id keeps everything else. */
    void setMemberId(String memberId) {
        this.memberId = Objects.requireNonNull(memberId);
    }

    boolean isStatic() {
        return groupInstanceId != null;
    }

    boolean isAwaitingJoin() {
        return awaitingJoin != null;
    }

    boolean isAwaitingSync() {
        return awaitingSync != null;
    }

    /** The metadata this member sent for {@code protocol}, or null when it does not support it. */
    byte[] metadata(String protocol) {
        for (Protocol p : protocols) {
            if (p.name().equals(protocol)) {
                return p.metadata();
            }
        }
        return null;
    }

    boolean supports(String protocol) {
        return metadata(protocol) != null;
    }

    /** Same protocols, same order, same metadata: a rejoin that changes nothing. */
    boolean sameProtocols(List<Protocol> other) {
        if (other.size() != protocols.size()) {
            return false;
        }
        for (int i = 0; i < other.size(); i++) {
            Protocol a = protocols.get(i);
            Protocol b = other.get(i);
            if (!a.name().equals(b.name()) || !Arrays.equals(a.metadata(), b.metadata())) {
                return false;
            }
        }
        return true;
    }

    /** The member's preferred protocol among {@code candidates}. */
    String vote(java.util.Set<String> candidates) {
        for (Protocol p : protocols) {
            if (candidates.contains(p.name())) {
                return p.name();
            }
        }
        throw new IllegalStateException("member " + memberId + " supports none of " + candidates);
    }
}
