package dev.varve.broker.replication;

/**
 * A snapshot of what a leader knows about one follower (for metrics, DescribeProducers-style
 * tooling and tests). Offsets are {@link LeaderState#UNKNOWN_OFFSET} and times
 * {@link LeaderState#NEVER_MS} until the follower's first fetch in this leader epoch.
 *
 * @param replicaId                  the follower's broker id
 * @param logEndOffset               the follower's log end offset: the fetch offset of its last fetch
 * @param lastFetchTimeMs            when the last fetch arrived
 * @param lastFetchLeaderEndOffset   the leader's log end offset when the last fetch arrived
 * @param lastCaughtUpTimeMs         the last time the follower was known to have everything the leader had
 * @param brokerEpoch                the broker epoch the follower fetched with ({@code -1} unknown)
 */
public record ReplicaView(int replicaId, long logEndOffset, long lastFetchTimeMs, long lastFetchLeaderEndOffset,
                          long lastCaughtUpTimeMs, long brokerEpoch) {
}
