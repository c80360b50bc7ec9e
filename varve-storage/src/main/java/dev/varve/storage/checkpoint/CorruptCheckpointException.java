package dev.varve.storage.checkpoint;

import java.io.IOException;

/** A checkpoint file exists but cannot be parsed. */
public class CorruptCheckpointException extends IOException {
    public CorruptCheckpointException(String message) {
        super(message);
    }
}
