package dev.varve.metadata.quorum;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.OptionalInt;

/**
 * A quorum member in its own JVM, for measuring failover after a hard kill. Arguments: node id,
 * voters ({@code controller.quorum.voters} syntax), storage dir, election timeout min and max (ms).
 * Prints one line per event on stdout: {@code LEADS <term>} once this node may act, and
 * {@code APPENDED <index>} when the entry it appends on becoming leader is committed and applied.
 * Exits when stdin closes.
 */
public final class QuorumNodeProcess {
    private QuorumNodeProcess() {
    }

    public static void main(String[] args) throws Exception {
        int nodeId = Integer.parseInt(args[0]);
        QuorumConfig config = QuorumConfig.builder(nodeId, QuorumConfig.parseVoters(args[1]), Path.of(args[2]))
                .electionTimeoutMs(Long.parseLong(args[3]), Long.parseLong(args[4]))
                .build();
        MetadataQuorum[] self = new MetadataQuorum[1];
        MetadataListener listener = new MetadataListener() {
            @Override
            public void onCommitted(long index, long term, byte[] entry) {
            }

            @Override
            public void onSnapshotLoaded(long index, byte[] snapshot) {
            }

            @Override
            public void onLeadershipChange(OptionalInt leaderId, boolean thisNodeLeads, long term) {
                if (thisNodeLeads) {
                    System.out.println("LEADS " + term);
                    // Not on the apply thread: append's future completes only after this callback returns.
                    new Thread(() -> self[0].append(("leader-" + nodeId + "-" + term).getBytes(StandardCharsets.UTF_8))
                            .thenAccept(i -> System.out.println("APPENDED " + i))).start();
                }
            }
        };
        try (MetadataQuorum q = MetadataQuorum.start(config, listener, null)) {
            self[0] = q;
            System.out.println("STARTED");
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            while (in.readLine() != null) {
                // wait for the parent to close stdin
            }
        }
    }
}
