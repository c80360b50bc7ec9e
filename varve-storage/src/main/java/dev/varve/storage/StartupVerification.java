package dev.varve.storage;

import java.util.Locale;

/**
 * Which segments a log directory verifies when the broker starts ({@code log.startup.verify}).
 * Segments at or past the recovery point are always recovered after an unclean shutdown; this
 * decides about the others, which were fsynced (or closed cleanly) and so can only be damaged at
 * rest: bit rot, a bad sector, a file truncated or overwritten by something else.
 *
 * <p>Verifying a segment reads it once, sequentially (a CRC32C of every batch and a check of every
 * index entry against its batch); a segment that fails is recovered (valid prefix kept, indexes
 * rebuilt) and the segments after it are removed, so the replica fetches them again.
 */
public enum StartupVerification {
    /** Every segment after every start (the default): nothing corrupt is served after a restart. */
    ALL("all"),
    /** Every segment after an unclean shutdown; after a clean one only the index sanity checks. */
    AFTER_CRASH("after-crash"),
    /** Kafka's behaviour: only segments past the recovery point after an unclean shutdown. */
    UNFLUSHED("unflushed");

    private final String configValue;

    StartupVerification(String configValue) {
        this.configValue = configValue;
    }

    public String configValue() {
        return configValue;
    }

    /** Whether segments below the recovery point are verified after a clean or unclean shutdown. */
    public boolean verifiesAll(boolean cleanShutdown) {
        return this == ALL || (this == AFTER_CRASH && !cleanShutdown);
    }

    public static StartupVerification parse(String value) {
        String v = value.trim().toLowerCase(Locale.ROOT);
        for (StartupVerification s : values()) {
            if (s.configValue.equals(v)) {
                return s;
            }
        }
        throw new IllegalArgumentException("log.startup.verify must be all, after-crash or unflushed, not " + value);
    }
}
