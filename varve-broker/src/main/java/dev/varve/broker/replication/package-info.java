/**
 * The replication core, pure: decisions about one partition's replicas as plain objects driven by
 * events and a clock passed in ({@code long nowMs}). No threads, sockets, files or Netty; the broker's
 * replica manager, fetchers and purgatory (the edges) call in and act on the answers.
 *
 * <ul>
 *   <li>{@link dev.varve.broker.replication.PartitionReplica}: one replica's state machine (role and
 *       epochs from the metadata, leader appends, follower fetches, acks tied to the epoch of their
 *       append, ISR changes and their answers) over a {@link dev.varve.broker.replication.ReplicaLog};
 *       {@link dev.varve.broker.replication.FollowerReplica}: the follower's handling of a fetch answer.
 *       The broker and the simulation run both;</li>
 *   <li>{@link dev.varve.broker.replication.ReplicaDelta}: what one metadata delta means for a broker's
 *       replicas (partitions assigned here whose state changed, held ones no longer assigned, ineligible
 *       brokers), walked once per delta by the broker's replica manager and by the simulation;</li>
 *   <li>{@link dev.varve.broker.replication.LeaderState}: on the leader, the followers' fetch
 *       positions, the ISR with its in-flight AlterPartition change (the "maximal ISR", KIP-497), the
 *       high watermark, {@code min.insync.replicas} and {@code acks=all} status;</li>
 *   <li>{@link dev.varve.broker.replication.EpochEndOffsets}: the leader's OffsetForLeaderEpoch answers
 *       and the fetch-time diverging-epoch check;</li>
 *   <li>{@link dev.varve.broker.replication.FollowerTruncation}: where a new follower truncates
 *       (KIP-101, KIP-279), never blindly at its high watermark;</li>
 *   <li>{@link dev.varve.broker.replication.EpochFencing}: the current-leader-epoch check that fences
 *       stale leaders and followers (KIP-320).</li>
 * </ul>
 *
 * <p>On a follower the high watermark is {@code min(leader's HW from the fetch response, own LEO)}; it
 * may go down once after a leader change (a new leader starts from the HW it knew), as in Kafka.
 *
 * <p>The seeded simulation in the tests ({@code ReplicationSimulation}) runs these same pieces for a topic
 * of several partitions on three brokers, with the real controller decisions, the broker's fetch session
 * cache and Kafka's fetch session handler, a lossy network and crashing disks, and checks the safety
 * invariants of every partition after every event.
 */
package dev.varve.broker.replication;
