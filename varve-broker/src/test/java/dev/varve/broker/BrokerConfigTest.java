package dev.varve.broker;

import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.record.TimestampType;
import org.junit.jupiter.api.Test;

import java.io.File;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class BrokerConfigTest {
    @Test
    void replicaSelectorClassMustBeALoadableReplicaSelector() {
        assertThat(BrokerConfig.from(Map.of("replica.selector.class", "org.apache.kafka.common.replica.RackAwareReplicaSelector"))
                .replicaSelector()).isInstanceOf(org.apache.kafka.common.replica.RackAwareReplicaSelector.class);
        assertThat(BrokerConfig.from(Map.of()).replicaSelector()).isNull();
        assertThatThrownBy(() -> BrokerConfig.from(Map.of("replica.selector.class", "java.lang.String")))
                .hasMessageContaining("replica.selector.class").hasMessageContaining("not an org.apache.kafka.common.replica.ReplicaSelector");
        assertThatThrownBy(() -> BrokerConfig.from(Map.of("replica.selector.class", "com.example.Missing")))
                .hasMessageContaining("cannot be loaded");
    }

    @Test
    void zeroConfigIsASingleNodeOnLoopbackWithDataInVarveData() {
        BrokerConfig c = BrokerConfig.defaults();
        assertThat(c.nodeId()).isEqualTo(1);
        assertThat(c.listeners()).containsExactly(new BrokerConfig.Endpoint("PLAINTEXT", "127.0.0.1", 9092));
        assertThat(c.advertisedListeners()).isEqualTo(c.listeners());
        assertThat(c.logDirs()).containsExactly(new File("varve-data"));
        assertThat(c.autoCreateTopics()).isTrue();
        assertThat(c.numPartitions()).isEqualTo(1);
        assertThat(c.unknownKeys()).isEmpty();
    }

    @Test
    void kafkaKeysAreReadAndBrokerDefaultsBecomeTopicDefaults() {
        BrokerConfig c = BrokerConfig.from(Map.of(
                "node.id", "7",
                "listeners", "PLAINTEXT://0.0.0.0:29092",
                "advertised.listeners", "PLAINTEXT://broker7.example:29092",
                "log.dirs", "/data/a,/data/b",
                "num.partitions", "6",
                "log.segment.bytes", "1048576",
                "log.retention.hours", "2",
                "log.flush.interval.messages", "1",
                "message.max.bytes", "2000000",
                "log.message.timestamp.type", "LogAppendTime"));
        assertThat(c.nodeId()).isEqualTo(7);
        assertThat(c.advertisedListeners()).containsExactly(new BrokerConfig.Endpoint("PLAINTEXT", "broker7.example", 29092));
        assertThat(c.logDirs()).containsExactly(new File("/data/a"), new File("/data/b"));
        assertThat(c.numPartitions()).isEqualTo(6);
        assertThat(c.defaultLogConfig().segmentBytes()).isEqualTo(1048576);
        assertThat(c.defaultLogConfig().retentionMs()).isEqualTo(2 * 3_600_000L);
        assertThat(c.defaultLogConfig().flushMessages()).isEqualTo(1);
        assertThat(c.defaultLogConfig().maxMessageBytes()).isEqualTo(2_000_000);
        assertThat(c.defaultLogConfig().timestampType()).isEqualTo(TimestampType.LOG_APPEND_TIME);
    }

    @Test
    void retentionMsWinsOverHours() {
        BrokerConfig c = BrokerConfig.from(Map.of("log.retention.hours", "2", "log.retention.ms", "1000"));
        assertThat(c.defaultLogConfig().retentionMs()).isEqualTo(1000);
    }

    @Test
    void unknownKeysAreReportedNotFatal() {
        BrokerConfig c = BrokerConfig.from(Map.of("log.retention.ms", "1000", "no.such.key", "x"));
        assertThat(c.unknownKeys()).containsExactly("no.such.key");
    }

    @Test
    void invalidValuesAreRefusedNamingTheKey() {
        assertThatThrownBy(() -> BrokerConfig.from(Map.of("num.partitions", "zero")))
                .isInstanceOf(ConfigException.class).hasMessageContaining("num.partitions");
        assertThatThrownBy(() -> BrokerConfig.from(Map.of("listeners", "127.0.0.1:9092")))
                .isInstanceOf(ConfigException.class).hasMessageContaining("listeners");
        assertThatThrownBy(() -> BrokerConfig.from(Map.of("listeners", "PLAINTEXT://127.0.0.1:99999")))
                .isInstanceOf(ConfigException.class).hasMessageContaining("listeners");
        assertThatThrownBy(() -> BrokerConfig.from(Map.of("log.segment.bytes", "12")))
                .isInstanceOf(ConfigException.class).hasMessageContaining("log.segment.bytes");
        assertThatThrownBy(() -> BrokerConfig.from(Map.of("log.message.timestamp.type", "Sometimes")))
                .isInstanceOf(ConfigException.class).hasMessageContaining("log.message.timestamp.type");
    }

    @Test
    void listenerHostsMayBeIpv6() {
        BrokerConfig c = BrokerConfig.from(Map.of("listeners", "PLAINTEXT://[::1]:9092"));
        assertThat(c.listeners()).isEqualTo(List.of(new BrokerConfig.Endpoint("PLAINTEXT", "::1", 9092)));
    }

    @Test
    void kraftStyleClusterKeysAreReadAndChecked() {
        BrokerConfig c = BrokerConfig.from(Map.of(
                "node.id", "2",
                "process.roles", "broker,controller",
                "controller.quorum.voters", "1@127.0.0.1:29093,2@127.0.0.1:29193,3@[::1]:29293",
                "listeners", "PLAINTEXT://127.0.0.1:29192,CONTROLLER://127.0.0.1:29193",
                "replica.lag.time.max.ms", "10000",
                "broker.session.timeout.ms", "6000"));
        assertThat(c.clustered()).isTrue();
        assertThat(c.processRoles()).containsExactly("broker", "controller");
        assertThat(c.quorumVoters()).containsOnlyKeys(1, 2, 3);
        assertThat(c.quorumVoters().get(3).getHostString()).isEqualTo("::1");
        assertThat(c.controllerListener()).contains(new BrokerConfig.Endpoint("CONTROLLER", "127.0.0.1", 29193));
        assertThat(c.clientListeners()).containsExactly(new BrokerConfig.Endpoint("PLAINTEXT", "127.0.0.1", 29192));
        assertThat(c.advertisedListeners()).isEqualTo(c.clientListeners());
        assertThat(c.longValue(BrokerConfig.REPLICA_LAG_TIME_MAX_MS)).isEqualTo(10_000);
        assertThat(c.unknownKeys()).isEmpty();
        // a broker-only node needs no controller listener
        BrokerConfig broker = BrokerConfig.from(Map.of("node.id", "4", "process.roles", "broker",
                "controller.quorum.voters", "1@127.0.0.1:29093", "listeners", "PLAINTEXT://127.0.0.1:29392"));
        assertThat(broker.controllerListener()).isEmpty();
        // without the keys: the single-node default
        assertThat(BrokerConfig.defaults().clustered()).isFalse();
    }

    @Test
    void inconsistentClusterKeysAreRefusedNamingTheKey() {
        assertThatThrownBy(() -> BrokerConfig.from(Map.of("process.roles", "broker")))
                .isInstanceOf(ConfigException.class).hasMessageContaining("controller.quorum.voters");
        assertThatThrownBy(() -> BrokerConfig.from(Map.of("process.roles", "broker,zookeeper",
                "controller.quorum.voters", "1@h:1")))
                .isInstanceOf(ConfigException.class).hasMessageContaining("process.roles");
        assertThatThrownBy(() -> BrokerConfig.from(Map.of("node.id", "1", "process.roles", "controller,broker",
                "controller.quorum.voters", "1@127.0.0.1:29093",
                "listeners", "PLAINTEXT://127.0.0.1:1,CONTROLLER://127.0.0.1:29999")))
                .isInstanceOf(ConfigException.class).hasMessageContaining("voter port");
        assertThatThrownBy(() -> BrokerConfig.from(Map.of("node.id", "1", "process.roles", "controller,broker",
                "controller.quorum.voters", "1@127.0.0.1:29093", "listeners", "PLAINTEXT://127.0.0.1:1")))
                .isInstanceOf(ConfigException.class).hasMessageContaining("controller.listener.names");
        assertThatThrownBy(() -> BrokerConfig.from(Map.of("process.roles", "broker",
                "controller.quorum.voters", "one@127.0.0.1:x")))
                .isInstanceOf(ConfigException.class).hasMessageContaining("controller.quorum.voters");
    }

    @Test
    void aControllerOutsideTheVotersIsAnObserverAndNeedsAFixedRaftEndpoint() {
        // KIP-853: it starts as an observer of the quorum; kafka-metadata-quorum.sh add-controller makes it a voter
        BrokerConfig observer = BrokerConfig.from(Map.of("node.id", "4", "process.roles", "broker,controller",
                "controller.quorum.voters", "1@127.0.0.1:29093",
                "listeners", "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:29094"));
        assertThat(observer.quorumVoters()).doesNotContainKey(4);
        assertThat(observer.controllerListener().orElseThrow().port()).isEqualTo(29094);
        // its controller listener is the Raft endpoint the other controllers reach it at
        assertThatThrownBy(() -> BrokerConfig.from(Map.of("node.id", "4", "process.roles", "controller",
                "controller.quorum.voters", "1@127.0.0.1:29093",
                "listeners", "PLAINTEXT://127.0.0.1:0,CONTROLLER://127.0.0.1:0")))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("fixed port");
        assertThatThrownBy(() -> BrokerConfig.from(Map.of("node.id", "4", "process.roles", "controller",
                "controller.quorum.voters", "1@127.0.0.1:29093", "listeners", "PLAINTEXT://127.0.0.1:0")))
                .isInstanceOf(ConfigException.class)
                .hasMessageContaining("controller.listener.names");
    }
}
