package dev.varve.tests.connect;

import org.apache.kafka.connect.data.Schema;
import org.apache.kafka.connect.source.SourceRecord;
import org.apache.kafka.connect.source.SourceTask;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** Emits its task's numbers after the last committed one; see {@link SequenceSourceConnector}. */
public class SequenceSourceTask extends SourceTask {
    private String topic;
    private int task;
    private long records;
    private int batch;
    private long sleepMs;
    private Map<String, Object> partition;
    private long next;

    @Override
    public void start(Map<String, String> props) {
        topic = props.get(SequenceSourceConnector.TOPIC);
        task = Integer.parseInt(props.get(SequenceSourceConnector.TASK));
        records = Long.parseLong(props.get(SequenceSourceConnector.RECORDS));
        batch = Integer.parseInt(props.getOrDefault(SequenceSourceConnector.BATCH, "10"));
        sleepMs = Long.parseLong(props.getOrDefault(SequenceSourceConnector.POLL_SLEEP_MS, "20"));
        partition = Map.of("task", task);
        Map<String, Object> offset = context.offsetStorageReader().offset(partition);
        next = offset == null ? 0 : ((Number) offset.get("n")).longValue() + 1;
    }

    @Override
    public List<SourceRecord> poll() throws InterruptedException {
        Thread.sleep(sleepMs);
        if (next >= records) {
            return null;
        }
        List<SourceRecord> out = new ArrayList<>();
        for (int i = 0; i < batch && next < records; i++, next++) {
            out.add(new SourceRecord(partition, Map.of("n", next), topic, task,
                    Schema.STRING_SCHEMA, Integer.toString(task), Schema.STRING_SCHEMA, task + ":" + next));
        }
        return out;
    }

    @Override
    public void stop() {
    }

    @Override
    public String version() {
        return "1";
    }
}
