package dev.varve.storage.testing;

/**
 * For tests that need something of the machine (root for a tmpfs or network namespaces, a tool on
 * the PATH): outside CI a test without it is skipped (the caller turns {@code false} into a JUnit
 * assumption); in CI ({@code CI=true}, where .ci/run runs as root and installs the tools) a missing
 * capability fails the run instead, so no test can pass there by not running.
 */
public final class Capabilities {
    private Capabilities() {
    }

    /** Whether this run is CI's ({@code CI=true} in the environment, or {@code -Dvarve.ci=true}). */
    public static boolean inCi() {
        return "true".equalsIgnoreCase(System.getenv("CI")) || Boolean.getBoolean("varve.ci");
    }

    /**
     * Returns {@code available}; in CI, throws when it is false.
     *
     * @param what what is missing, for the failure message ("a tmpfs mount (needs root)")
     * @throws AssertionError in CI, when the capability is missing
     */
    public static boolean require(boolean available, String what) {
        if (!available && inCi()) {
            throw new AssertionError(what + " is missing, and CI=true: a test that cannot run fails the run");
        }
        return available;
    }
}
