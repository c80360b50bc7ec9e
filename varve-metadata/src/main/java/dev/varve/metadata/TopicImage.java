package dev.varve.metadata;

import org.apache.kafka.common.Uuid;

import java.util.List;
import java.util.Objects;

/**
 * A topic in the metadata image: name, id and its partitions (index = partition number). Immutable;
 * equality is by value.
 */
public final class TopicImage {
    private final String name;
    private final Uuid id;
    private final PartitionList partitions;

    TopicImage(String name, Uuid id, PartitionList partitions) {
        this.name = Objects.requireNonNull(name);
        this.id = Objects.requireNonNull(id);
        this.partitions = partitions;
    }

    public String name() {
        return name;
    }

    public Uuid id() {
        return id;
    }

    public int partitionCount() {
        return partitions.size();
    }

    /** The partition, or null when the topic has no such partition. */
    public PartitionState partition(int index) {
        return index >= 0 && index < partitions.size() ? partitions.get(index) : null;
    }

    /** All partitions, by index; an immutable view. */
    public List<PartitionState> partitions() {
        return partitions;
    }

    PartitionList partitionList() {
        return partitions;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof TopicImage t && name.equals(t.name) && id.equals(t.id) && partitions.equals(t.partitions);
    }

    @Override
    public int hashCode() {
        return Objects.hash(name, id, partitions.size());
    }

    @Override
    public String toString() {
        return "TopicImage(" + name + ", " + id + ", " + partitions.size() + " partitions)";
    }
}
