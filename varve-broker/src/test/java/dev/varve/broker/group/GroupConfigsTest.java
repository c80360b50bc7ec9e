package dev.varve.broker.group;

import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.junit.jupiter.api.Test;

import java.util.HashMap;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatCode;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Group config validation and effective values. The messages are Kafka 4.4's, checked against a Kafka
 * 4.4 broker with its default bounds (consumer and share heartbeats 5-15 s, sessions 45-60 s, record
 * locks 15-60 s).
 */
class GroupConfigsTest {
    private final GroupConfigs configs = new GroupConfigs(GroupConfigs.Broker.defaults());

    private void refused(Map<String, String> overrides, String message) {
        assertThatThrownBy(() -> configs.validate(overrides)).as("%s", overrides)
                .isInstanceOf(InvalidConfigurationException.class).hasMessage(message);
    }

    @Test
    void valuesInsideTheBrokersBoundsAreAccepted() {
        assertThatCode(() -> configs.validate(Map.of(
                "consumer.heartbeat.interval.ms", "15000", "consumer.session.timeout.ms", "46000",
                "share.heartbeat.interval.ms", "5000", "share.session.timeout.ms", "60000",
                "share.record.lock.duration.ms", "15000", "share.auto.offset.reset", "by_duration:PT1H",
                "share.isolation.level", "read_committed"))).doesNotThrowAnyException();
        assertThatCode(() -> configs.validate(Map.of())).doesNotThrowAnyException();
        assertThatCode(() -> configs.validate(Map.of("share.auto.offset.reset", "earliest"))).doesNotThrowAnyException();
        assertThatCode(() -> configs.validate(Map.of("share.auto.offset.reset", "latest"))).doesNotThrowAnyException();
    }

    @Test
    void kafkasMessagesForBadValues() {
        refused(Map.of("no.such.key", "1"), "Unknown group config name: no.such.key");
        refused(Map.of("group.consumer.heartbeat.interval.ms", "6000"),
                "Unknown group config name: group.consumer.heartbeat.interval.ms");
        refused(Map.of("consumer.heartbeat.interval.ms", "1000"),
                "consumer.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive.");
        refused(Map.of("consumer.heartbeat.interval.ms", "abc"),
                "Invalid value abc for configuration consumer.heartbeat.interval.ms: Not a number of type INT");
        refused(Map.of("consumer.session.timeout.ms", "5000"),
                "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive.");
        refused(Map.of("share.record.lock.duration.ms", "1000"),
                "share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive.");
        refused(Map.of("share.record.lock.duration.ms", "999"),
                "Invalid value 999 for configuration share.record.lock.duration.ms: Value must be at least 1000");
        for (String bad : new String[]{"bogus", "EARLIEST", "by_duration:-PT1H", "by_duration:1h"}) {
            refused(Map.of("share.auto.offset.reset", bad), "Invalid value " + bad
                    + " for configuration share.auto.offset.reset: Invalid value `" + bad
                    + "` for configuration share.auto.offset.reset. The value must be either 'earliest', 'latest' "
                    + "or of the format 'by_duration:<PnDTnHnMn.nS>'.");
        }
        refused(Map.of("share.isolation.level", "READ_COMMITTED"), "Invalid value READ_COMMITTED for configuration "
                + "share.isolation.level: String must be one of: read_committed, read_uncommitted");
    }

    @Test
    void aSessionTimeoutMustExceedTheHeartbeatIntervalEachTakenFromTheBrokerWhenNotSet() {
        GroupConfigs wide = new GroupConfigs(new GroupConfigs.Broker(true, true, 45_000, 1_000, 60_000, 5_000, 500, 15_000,
                45_000, 1_000, 60_000, 5_000, 500, 15_000, 30_000, 15_000, 60_000));
        assertThatThrownBy(() -> wide.validate(Map.of("consumer.session.timeout.ms", "5000")))
                .hasMessage("consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms");
        assertThatThrownBy(() -> wide.validate(Map.of("consumer.session.timeout.ms", "3000",
                "consumer.heartbeat.interval.ms", "3000")))
                .hasMessage("consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms");
        assertThatThrownBy(() -> wide.validate(Map.of("share.heartbeat.interval.ms", "15000",
                "share.session.timeout.ms", "2000")))
                .hasMessage("share.session.timeout.ms must be greater than share.heartbeat.interval.ms");
        assertThatCode(() -> wide.validate(Map.of("consumer.session.timeout.ms", "2000",
                "consumer.heartbeat.interval.ms", "500"))).doesNotThrowAnyException();
    }

    @Test
    void kafkasOtherGroupKeysAndKeysOfProtocolsNotOfferedAreRefusedNotIgnored() {
        for (String key : GroupConfigs.REFUSED) {
            refused(Map.of(key, "1"), "Group config " + key + " is not supported by Varve: it would have no effect here.");
        }
        GroupConfigs classicOnly = new GroupConfigs(new GroupConfigs.Broker(false, false, 45_000, 45_000, 60_000, 5_000,
                5_000, 15_000, 45_000, 45_000, 60_000, 5_000, 5_000, 15_000, 30_000, 15_000, 60_000));
        assertThatThrownBy(() -> classicOnly.validate(Map.of("share.auto.offset.reset", "earliest")))
                .isInstanceOf(InvalidConfigurationException.class).hasMessageContaining("does not offer share groups");
        assertThatThrownBy(() -> classicOnly.validate(Map.of("consumer.heartbeat.interval.ms", "6000")))
                .isInstanceOf(InvalidConfigurationException.class).hasMessageContaining("does not offer consumer groups");
    }

    @Test
    void effectiveValuesAreTheGroupsOverrideElseTheBrokers() {
        Map<String, Map<String, String>> overrides = new HashMap<>();
        overrides.put("g", Map.of("consumer.heartbeat.interval.ms", "7000", "consumer.session.timeout.ms", "50000",
                "share.heartbeat.interval.ms", "8000", "share.session.timeout.ms", "55000",
                "share.record.lock.duration.ms", "20000", "share.auto.offset.reset", "earliest",
                "share.isolation.level", "read_committed"));
        configs.setOverrides(overrides::get);
        assertThat(configs.consumerHeartbeatIntervalMs("g")).isEqualTo(7000);
        assertThat(configs.consumerSessionTimeoutMs("g")).isEqualTo(50_000);
        assertThat(configs.shareHeartbeatIntervalMs("g")).isEqualTo(8000);
        assertThat(configs.shareSessionTimeoutMs("g")).isEqualTo(55_000);
        assertThat(configs.shareRecordLockDurationMs("g")).isEqualTo(20_000);
        assertThat(configs.shareAutoOffsetReset("g")).isEqualTo("earliest");
        assertThat(configs.shareReadCommitted("g")).isTrue();

        assertThat(configs.consumerHeartbeatIntervalMs("other")).isEqualTo(5000);
        assertThat(configs.consumerSessionTimeoutMs("other")).isEqualTo(45_000);
        assertThat(configs.shareHeartbeatIntervalMs("other")).isEqualTo(5000);
        assertThat(configs.shareSessionTimeoutMs("other")).isEqualTo(45_000);
        assertThat(configs.shareRecordLockDurationMs("other")).isEqualTo(30_000);
        assertThat(configs.shareAutoOffsetReset("other")).isEqualTo("latest");
        assertThat(configs.shareReadCommitted("other")).isFalse();
    }
}
