package dev.varve.tests;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Runs one of Apache Kafka's command-line tools (a class with a {@code main}) in a child JVM on this
 * test's classpath. A child process, not an in-process call, because Kafka's tools end with
 * {@code Exit.exit}, which would stop the test JVM.
 */
final class KafkaTool {
    /** What the tool printed and how it ended. */
    record Result(int exitCode, String stdout, String stderr) {
        String all() {
            return stdout + "\n" + stderr;
        }

        @Override
        public String toString() {
            return "exit code " + exitCode + "\n--- stdout (first 4000 chars) ---\n" + head(stdout)
                    + "\n--- stderr (first 4000 chars) ---\n" + head(stderr);
        }

        private static String head(String s) {
            return s.length() <= 4000 ? s : s.substring(0, 4000) + "\n[... " + (s.length() - 4000) + " more chars]";
        }
    }

    private static final long TIMEOUT_SECONDS = 120;

    private KafkaTool() {
    }

    static Result run(Path workDir, String mainClass, List<String> args) throws IOException, InterruptedException {
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> command = new ArrayList<>(List.of(java, "-Xmx512m", "-XX:TieredStopAtLevel=1",
                "-XX:+UseSerialGC", mainClass));
        command.addAll(args);
        Path out = Files.createTempFile(workDir, "tool", ".out");
        Path err = Files.createTempFile(workDir, "tool", ".err");
        ProcessBuilder pb = new ProcessBuilder(command)
                .redirectOutput(out.toFile())
                .redirectError(err.toFile())
                .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null")));
        // Surefire sets java.class.path to the real test classpath; CLASSPATH keeps the command line short.
        pb.environment().put("CLASSPATH", System.getProperty("java.class.path"));
        Process process = pb.start();
        if (!process.waitFor(TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            process.waitFor(10, TimeUnit.SECONDS);
            throw new AssertionError(mainClass + " " + args + " did not finish in " + TIMEOUT_SECONDS + " s");
        }
        return new Result(process.exitValue(), Files.readString(out, StandardCharsets.UTF_8),
                Files.readString(err, StandardCharsets.UTF_8));
    }
}
