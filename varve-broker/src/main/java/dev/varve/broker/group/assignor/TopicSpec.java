package dev.varve.broker.group.assignor;

import org.apache.kafka.common.Uuid;

import java.util.Objects;

/** A topic that exists, as the assignors see it: its id, name and partition count. */
public record TopicSpec(Uuid id, String name, int partitions) {
    public TopicSpec {
        Objects.requireNonNull(id, "id");
        if (partitions < 0) {
            throw new IllegalArgumentException("negative partition count " + partitions + " for topic " + id);
        }
    }
}
