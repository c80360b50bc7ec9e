package dev.varve.storage;

/** A leader epoch and the first offset written in it. */
public record EpochEntry(int epoch, long startOffset) {
}
