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
}
