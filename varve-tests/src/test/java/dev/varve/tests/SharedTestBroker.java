package dev.varve.tests;

import org.apache.kafka.common.utils.Utils;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

/**
 * One {@link TestBroker} for a whole test class, as a JUnit extension:
 * {@code @RegisterExtension static final SharedTestBroker BROKER = new SharedTestBroker();}
 * starts it (in-process Varve in a fresh directory, or the external broker) before the first test
 * and stops it after the last.
 */
final class SharedTestBroker implements BeforeAllCallback, AfterAllCallback {
    private final Map<String, String> config;
    private Path dataDir;
    private TestBroker broker;

    SharedTestBroker() {
        this(Map.of());
    }

    SharedTestBroker(Map<String, String> config) {
        this.config = config;
    }

    @Override
    public void beforeAll(ExtensionContext context) throws Exception {
        dataDir = Files.createTempDirectory("varve-test-broker");
        broker = TestBroker.start(dataDir, config);
    }

    @Override
    public void afterAll(ExtensionContext context) throws Exception {
        try {
            if (broker != null) {
                broker.close();
            }
        } finally {
            if (dataDir != null) {
                Utils.delete(dataDir.toFile());
            }
        }
    }

    String bootstrap() {
        return broker.bootstrap();
    }
}
