package dev.varve.tests.connect;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.connect.connector.Task;
import org.apache.kafka.connect.source.ExactlyOnceSupport;
import org.apache.kafka.connect.source.SourceConnector;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A source connector for tests: task {@code i} of {@code tasks.max} emits the numbers 0 ..
 * {@code records}-1 to partition {@code i} of {@code topic}, value {@code "i:n"}, with source
 * partition {@code {"task": i}} and source offset {@code {"n": n}}, and resumes after the committed
 * offset. It declares exactly-once support, so a worker with {@code exactly.once.source.support=enabled}
 * runs it with {@code exactly.once.support=required}.
 */
public class SequenceSourceConnector extends SourceConnector {
    static final String TOPIC = "topic";
    static final String RECORDS = "records";
    static final String BATCH = "batch";
    static final String POLL_SLEEP_MS = "poll.sleep.ms";
    static final String TASK = "task";

    private static final ConfigDef CONFIG = new ConfigDef()
            .define(TOPIC, ConfigDef.Type.STRING, ConfigDef.Importance.HIGH, "output topic")
            .define(RECORDS, ConfigDef.Type.LONG, ConfigDef.Importance.HIGH, "numbers each task emits")
            .define(BATCH, ConfigDef.Type.INT, 10, ConfigDef.Importance.LOW, "records per poll")
            .define(POLL_SLEEP_MS, ConfigDef.Type.LONG, 20L, ConfigDef.Importance.LOW, "pause in every poll");

    private Map<String, String> props;

    @Override
    public void start(Map<String, String> props) {
        CONFIG.parse(props); // fails a bad configuration at creation
        this.props = Map.copyOf(props);
    }

    @Override
    public Class<? extends Task> taskClass() {
        return SequenceSourceTask.class;
    }

    @Override
    public List<Map<String, String>> taskConfigs(int maxTasks) {
        List<Map<String, String>> configs = new ArrayList<>();
        for (int i = 0; i < maxTasks; i++) {
            Map<String, String> c = new HashMap<>(props);
            c.put(TASK, Integer.toString(i));
            configs.add(c);
        }
        return configs;
    }

    @Override
    public void stop() {
    }

    @Override
    public ConfigDef config() {
        return CONFIG;
    }

    @Override
    public String version() {
        return "1";
    }

    @Override
    public ExactlyOnceSupport exactlyOnceSupport(Map<String, String> connectorConfig) {
        return ExactlyOnceSupport.SUPPORTED;
    }
}
