package dev.varve.storage;

import dev.varve.storage.RetentionPolicy.Decision;
import dev.varve.storage.RetentionPolicy.SegmentFacts;
import org.apache.kafka.common.config.TopicConfig;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

class RetentionPolicyTest {
    private static final long NOW = 1_000_000L;
    // Three segments: [0,10) 100 B ts NOW-500, [10,20) 100 B ts NOW-300, active [20,25) 50 B ts NOW-100.
    private static final List<SegmentFacts> SEGMENTS = List.of(
            new SegmentFacts(0, 10, 100, NOW - 500),
            new SegmentFacts(10, 20, 100, NOW - 300),
            new SegmentFacts(20, 25, 50, NOW - 100));

    private static LogConfig config(Map<String, Object> overrides) {
        return LogConfig.fromMap(Map.of(TopicConfig.RETENTION_MS_CONFIG, -1L)).with(overrides);
    }

    @Test
    void byTime() {
        Decision d = RetentionPolicy.decide(SEGMENTS, config(Map.of(TopicConfig.RETENTION_MS_CONFIG, 400L)), NOW, 0, 25, 25);
        assertThat(d).isEqualTo(new Decision(1, false));
        Decision all = RetentionPolicy.decide(SEGMENTS, config(Map.of(TopicConfig.RETENTION_MS_CONFIG, 50L)), NOW, 0, 25, 25);
        assertThat(all).isEqualTo(new Decision(3, true));
    }

    @Test
    void bySizeDeletesOnlyWholeSegmentsInExcess() {
        // 250 bytes in all.
        assertThat(RetentionPolicy.decide(SEGMENTS, config(Map.of(TopicConfig.RETENTION_BYTES_CONFIG, 50L)), NOW, 0, 25, 25))
                .isEqualTo(new Decision(2, false));
        assertThat(RetentionPolicy.decide(SEGMENTS, config(Map.of(TopicConfig.RETENTION_BYTES_CONFIG, 150L)), NOW, 0, 25, 25))
                .isEqualTo(new Decision(1, false));
        assertThat(RetentionPolicy.decide(SEGMENTS, config(Map.of(TopicConfig.RETENTION_BYTES_CONFIG, 151L)), NOW, 0, 25, 25))
                .isEqualTo(Decision.NONE);
    }

    @Test
    void byRecordCountKeepsAtLeastTheLimit() {
        assertThat(RetentionPolicy.decide(SEGMENTS, config(Map.of(LogConfig.RETENTION_MESSAGES_CONFIG, 5L)), NOW, 0, 25, 25))
                .isEqualTo(new Decision(2, false));
        assertThat(RetentionPolicy.decide(SEGMENTS, config(Map.of(LogConfig.RETENTION_MESSAGES_CONFIG, 6L)), NOW, 0, 25, 25))
                .isEqualTo(new Decision(1, false));
    }

    @Test
    void belowLogStartOffset() {
        assertThat(RetentionPolicy.decide(SEGMENTS, config(Map.of()), NOW, 12, 25, 25)).isEqualTo(new Decision(1, false));
        assertThat(RetentionPolicy.decide(SEGMENTS, config(Map.of()), NOW, 20, 25, 25)).isEqualTo(new Decision(2, false));
    }

    @Test
    void nothingAboveTheHighWatermark() {
        assertThat(RetentionPolicy.decide(SEGMENTS, config(Map.of(TopicConfig.RETENTION_MS_CONFIG, 1L)), NOW, 0, 15, 25))
                .isEqualTo(new Decision(1, false));
        assertThat(RetentionPolicy.decide(SEGMENTS, config(Map.of(TopicConfig.RETENTION_MS_CONFIG, 1L)), NOW, 0, 5, 25))
                .isEqualTo(Decision.NONE);
    }

    @Test
    void anEmptyActiveSegmentNeverGoes() {
        List<SegmentFacts> withEmptyActive = List.of(new SegmentFacts(0, 10, 100, NOW - 500), new SegmentFacts(10, 10, 0, NOW));
        assertThat(RetentionPolicy.decide(withEmptyActive, config(Map.of(TopicConfig.RETENTION_MS_CONFIG, 1L)), NOW, 0, 10, 10))
                .isEqualTo(new Decision(1, false));
    }
}
