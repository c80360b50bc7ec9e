package dev.varve.storage.testing;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** In CI a missing capability fails the test that needs it; elsewhere it only skips it. */
class CapabilitiesTest {
    @Test
    void aMissingCapabilityFailsInCiAndOnlyReportsFalseElsewhere() {
        String before = System.getProperty("varve.ci");
        try {
            System.setProperty("varve.ci", "true");
            assertThat(Capabilities.require(true, "root")).isTrue();
            assertThatThrownBy(() -> Capabilities.require(false, "a tmpfs mount (needs root)"))
                    .isInstanceOf(AssertionError.class).hasMessageContaining("a tmpfs mount");
            System.setProperty("varve.ci", "false");
            if (!"true".equalsIgnoreCase(System.getenv("CI"))) {
                assertThat(Capabilities.require(false, "root")).isFalse();
            }
        } finally {
            if (before == null) {
                System.clearProperty("varve.ci");
            } else {
                System.setProperty("varve.ci", before);
            }
        }
    }
}
