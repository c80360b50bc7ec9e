package dev.varve.cli;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.Properties;
import picocli.CommandLine.IVersionProvider;

/**
 * The Varve version, as Maven filtered it into {@code varve-version.properties} at build time.
 *
 * <p>Read from the classpath, so it is the same whether Varve runs from the module's classes, its
 * jar or the shaded {@code varve.jar}. Thread-safe: the value is read once, lazily.
 */
public final class VarveVersion implements IVersionProvider {

    /** Classpath resource, relative to this class's package. */
    static final String RESOURCE = "varve-version.properties";

    private static final class Holder {
        static final String VERSION = load();
    }

    /** The project version, e.g. {@code 0.1.0-SNAPSHOT}. */
    public static String version() {
        return Holder.VERSION;
    }

    @Override
    public String[] getVersion() {
        return new String[] {"varve " + version()};
    }

    private static String load() {
        try (InputStream in = VarveVersion.class.getResourceAsStream(RESOURCE)) {
            if (in == null) {
                throw new IllegalStateException("missing classpath resource " + RESOURCE + ": the build is broken");
            }
            Properties props = new Properties();
            props.load(in);
            String version = props.getProperty("version", "").strip();
            // An unfiltered file still says ${project.version}: also a broken build, not a version.
            if (version.isEmpty() || version.contains("${")) {
                throw new IllegalStateException(RESOURCE + " was not filtered by Maven: version=" + version);
            }
            return version;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + RESOURCE, e);
        }
    }
}
