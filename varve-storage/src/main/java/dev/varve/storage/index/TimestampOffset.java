package dev.varve.storage.index;

/** A time index entry: the largest timestamp seen so far and the first offset that carried it. */
public record TimestampOffset(long timestamp, long offset) {
}
