package dev.varve.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Runs the shaded {@code varve.jar} as {@code java -jar}, the way {@code bin/varve} does. */
class VarveJarIT {

    private static final long TIMEOUT_SECONDS = 60;

    @Test
    void fatJarPrintsTheProjectVersion() throws Exception {
        Result result = runJar("--version");

        assertThat(result.exitCode).isZero();
        assertThat(result.out.strip()).isEqualTo("varve " + expectedVersion());
        assertThat(result.err).isEmpty();
    }

    @Test
    void fatJarPrintsUsage() throws Exception {
        Result result = runJar("--help");

        assertThat(result.exitCode).isZero();
        assertThat(result.out).startsWith("Usage: varve");
        assertThat(result.err).isEmpty();
    }

    private static String expectedVersion() throws IOException {
        try (InputStream in = VarveJarIT.class.getResourceAsStream("/expected-version.properties")) {
            Properties props = new Properties();
            props.load(in);
            return props.getProperty("version");
        }
    }

    private record Result(int exitCode, String out, String err) {}

    private static Result runJar(String... args) throws Exception {
        String jarProperty = System.getProperty("varve.jar");
        assertThat(jarProperty).as("system property varve.jar (set by failsafe)").isNotBlank();
        Path jar = Path.of(jarProperty);
        assertThat(jar).isRegularFile();

        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        Path outFile = Files.createTempFile("varve-it", ".out");
        Path errFile = Files.createTempFile("varve-it", ".err");
        try {
            List<String> command = new ArrayList<>(List.of(java.toString(), "-jar", jar.toString()));
            command.addAll(List.of(args));
            Process process = new ProcessBuilder(command)
                    .redirectOutput(outFile.toFile())
                    .redirectError(errFile.toFile())
                    .start();
            process.getOutputStream().close(); // no input
            if (!process.waitFor(TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new AssertionError("java -jar varve.jar did not exit within " + TIMEOUT_SECONDS + " s");
            }
            return new Result(
                    process.exitValue(),
                    Files.readString(outFile, StandardCharsets.UTF_8),
                    Files.readString(errFile, StandardCharsets.UTF_8));
        } finally {
            Files.deleteIfExists(outFile);
            Files.deleteIfExists(errFile);
        }
    }
}
