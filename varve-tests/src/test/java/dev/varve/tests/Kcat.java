package dev.varve.tests;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/** kcat (librdkafka's command-line client, Debian package {@code kcat}) as the tests run it. */
final class Kcat {
    private Kcat() {
    }

    /** Skips the test when kcat is missing, except with {@code CI=true}, where that fails it. */
    static void require() {
        org.junit.jupiter.api.Assumptions.assumeTrue(dev.varve.storage.testing.Capabilities.require(available(),
                "kcat on the PATH"), "kcat is not on the PATH (apt-get install kcat)");
    }

    private static boolean available() {
        try {
            Process p = new ProcessBuilder("kcat", "-V").redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            return p.waitFor(10, TimeUnit.SECONDS) && p.exitValue() == 0;
        } catch (java.io.IOException | InterruptedException e) {
            return false;
        }
    }

    /**
     * {@code kcat -P} of {@code input} into partition 0 of {@code topic}, then {@code kcat -C} reads back
     * exactly {@code lines}; {@code security} are kcat's {@code -X} options.
     */
    static void roundTrip(Path dir, String boot, List<String> security, String topic, Path input, List<String> lines) throws Exception {
        List<String> produce = new ArrayList<>(List.of("kcat", "-b", boot, "-P", "-t", topic, "-p", "0"));
        produce.addAll(security);
        assertThat(run(dir, produce, input)).as("kcat -P").startsWith("exit 0");
        List<String> consume = new ArrayList<>(List.of("kcat", "-b", boot, "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e",
                "-f", "%s\\n"));
        consume.addAll(security);
        String out = run(dir, consume, null);
        assertThat(out).startsWith("exit 0");
        assertThat(out.substring(out.indexOf('\n') + 1).lines().toList()).isEqualTo(lines);
    }

    /** Runs a command within 60 s (its output files in {@code dir}): "exit N" and a newline, then its standard output. */
    static String run(Path dir, List<String> command, Path stdin) throws Exception {
        Path out = Files.createTempFile(dir, "cmd", ".out");
        Path err = Files.createTempFile(dir, "cmd", ".err");
        Process p = new ProcessBuilder(command)
                .redirectInput(stdin == null ? ProcessBuilder.Redirect.from(new java.io.File("/dev/null")) : ProcessBuilder.Redirect.from(stdin.toFile()))
                .redirectOutput(out.toFile()).redirectError(err.toFile()).start();
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly().waitFor();
            return "exit timeout\n" + Files.readString(err);
        }
        return "exit " + p.exitValue() + "\n" + Files.readString(out) + (p.exitValue() == 0 ? "" : "\nstderr: " + Files.readString(err));
    }
}
