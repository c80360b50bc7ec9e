package dev.varve.broker.group;

import org.apache.kafka.common.Uuid;

import java.util.Collection;

/** What a consumer group's coordinator reads of the topics: ids, names, partition counts. */
public interface GroupTopics {
    /** The topic's id, or null when it does not exist. */
    Uuid idOf(String name);

    /** The topic's name, or null when it does not exist. */
    String nameOf(Uuid id);

    /** The topic's partition count, 0 when it does not exist. */
    int partitions(Uuid id);

    /** Every topic's name (for regular-expression subscriptions). */
    Collection<String> names();

    /** Grows whenever a topic may have been created, deleted or resized. */
    long version();
}
