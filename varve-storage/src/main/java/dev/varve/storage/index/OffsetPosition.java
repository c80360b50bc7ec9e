package dev.varve.storage.index;

/** An offset index entry: the last offset of a batch and that batch's byte position in the segment. */
public record OffsetPosition(long offset, int position) {
}
