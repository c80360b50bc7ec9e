package dev.varve.metadata.quorum;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

class QuorumConfigTest {
    private static final Path DIR = Path.of("/tmp/unused");

    @Test
    void parsesKafkaVoterSyntax() {
        Map<Integer, InetSocketAddress> voters =
                QuorumConfig.parseVoters(" 1@127.0.0.1:29093, 2@localhost:29193,3@[::1]:29293 ");
        assertThat(voters.keySet()).containsExactly(1, 2, 3);
        assertThat(voters.get(1).getHostString()).isEqualTo("127.0.0.1");
        assertThat(voters.get(1).getPort()).isEqualTo(29093);
        assertThat(voters.get(2).getHostString()).isEqualTo("localhost");
        assertThat(voters.get(3).getAddress().isLoopbackAddress()).isTrue();
        assertThat(voters.get(3).getPort()).isEqualTo(29293);
    }

    @Test
    void rejectsBadVoterStringsWithTheOffendingEntry() {
        for (List<String> c : List.of(
                List.of("", "no voter"),
                List.of("1@127.0.0.1", "id@host:port"),
                List.of("127.0.0.1:29093", "id@host:port"),
                List.of("x@127.0.0.1:29093", "node id 'x'"),
                List.of("1@127.0.0.1:port", "port 'port'"),
                List.of("1@127.0.0.1:0", "outside 1..65535"),
                List.of("1@127.0.0.1:70000", "outside 1..65535"),
                List.of("-1@127.0.0.1:1", "negative"),
                List.of("1@a:1,1@b:2", "appears twice"),
                List.of("1@a:1,,2@b:2", "empty entry"),
                List.of("1@:29093", "id@host:port"))) {
            assertThatThrownBy(() -> QuorumConfig.parseVoters(c.get(0)))
                    .as(c.get(0)).isInstanceOf(IllegalArgumentException.class).hasMessageContaining(c.get(1));
        }
    }

    @Test
    void roleFollowsMembership() {
        Map<Integer, InetSocketAddress> voters = QuorumConfig.parseVoters("1@127.0.0.1:1000,2@127.0.0.1:1001");
        Map<Integer, InetSocketAddress> listeners = QuorumConfig.parseVoters("7@127.0.0.1:1007");
        QuorumConfig voter = QuorumConfig.builder(2, voters, DIR).listeners(listeners).build();
        assertThat(voter.role()).isEqualTo(QuorumConfig.Role.VOTER);
        assertThat(voter.address().getPort()).isEqualTo(1001);
        QuorumConfig listener = QuorumConfig.builder(7, voters, DIR).listeners(listeners).build();
        assertThat(listener.role()).isEqualTo(QuorumConfig.Role.LISTENER);
        assertThat(listener.address().getPort()).isEqualTo(1007);
        assertThat(voter.groupUuid()).isEqualTo(listener.groupUuid());
        assertThat(QuorumConfig.builder(1, voters, DIR).clusterId("other").build().groupUuid())
                .isNotEqualTo(voter.groupUuid());
        assertThat(voter.electionTimeoutMinMs()).isEqualTo(QuorumConfig.DEFAULT_ELECTION_TIMEOUT_MIN_MS);
    }

    @Test
    void validatesEverything() {
        Map<Integer, InetSocketAddress> voters = QuorumConfig.parseVoters("1@127.0.0.1:1000");
        assertThatThrownBy(() -> QuorumConfig.builder(5, voters, DIR).build())
                .hasMessageContaining("node.id 5 is neither");
        assertThatThrownBy(() -> QuorumConfig.builder(1, voters, DIR).listeners(voters).build())
                .hasMessageContaining("both a voter and a listener");
        assertThatThrownBy(() -> QuorumConfig.builder(1, voters, DIR).electionTimeoutMs(500, 500).build())
                .hasMessageContaining("election timeout");
        assertThatThrownBy(() -> QuorumConfig.builder(1, voters, DIR).requestTimeoutMs(0).build())
                .hasMessageContaining("requestTimeoutMs");
        assertThatThrownBy(() -> QuorumConfig.builder(1, voters, DIR).maxEntryBytes(64 * 1024 * 1024).build())
                .hasMessageContaining("maxEntryBytes");
        assertThatThrownBy(() -> QuorumConfig.builder(1, voters, DIR).snapshotThresholdEntries(-1).build())
                .hasMessageContaining("snapshotThresholdEntries");
        assertThatThrownBy(() -> QuorumConfig.builder(1, Map.of(1, new InetSocketAddress("127.0.0.1", 0)), DIR).build())
                .hasMessageContaining("fixed port");
    }
}
