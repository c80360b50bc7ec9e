/**
 * The cluster edges of a broker that do I/O for replication: the follower fetchers
 * ({@link dev.varve.broker.cluster.ReplicaFetcherManager} and its threads), which fetch from leaders
 * with kafka-clients' own {@code NetworkClient} and apply the pure decisions of
 * {@link dev.varve.broker.replication} (divergence truncation, fencing) to local logs.
 */
package dev.varve.broker.cluster;
