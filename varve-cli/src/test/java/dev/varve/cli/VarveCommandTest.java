package dev.varve.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.Properties;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;

class VarveCommandTest {

    /** The project version as Maven filtered it into the test resources, independently of main. */
    private static String expectedVersion;

    @BeforeAll
    static void loadExpectedVersion() throws IOException {
        try (InputStream in = VarveCommandTest.class.getResourceAsStream("/expected-version.properties")) {
            assertThat(in).as("expected-version.properties on the test classpath").isNotNull();
            Properties props = new Properties();
            props.load(in);
            expectedVersion = props.getProperty("version");
        }
        assertThat(expectedVersion).as("filtered project version").isNotBlank().doesNotContain("${");
    }

    @Test
    void versionPrintsTheMavenProjectVersion() {
        Run run = Run.of("--version");

        assertThat(run.exitCode).isZero();
        assertThat(run.out.strip()).isEqualTo("varve " + expectedVersion);
        assertThat(run.err).isEmpty();
        assertThat(VarveVersion.version()).isEqualTo(expectedVersion);
    }

    @Test
    void helpExitsZeroAndPrintsUsage() {
        Run run = Run.of("--help");

        assertThat(run.exitCode).isZero();
        assertThat(run.out)
                .startsWith("Usage: varve")
                .contains("Varve: a distributed commit log that speaks the Apache Kafka protocol.")
                .contains("--help", "--version", "help");
        assertThat(run.err).isEmpty();
    }

    @Test
    void helpSubcommandPrintsTheSameUsage() {
        Run run = Run.of("help");

        assertThat(run.exitCode).isZero();
        assertThat(run.out).isEqualTo(Run.of("--help").out);
    }

    @Test
    void noSubcommandIsAUsageError() {
        Run run = Run.of();

        assertThat(run.exitCode).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(run.out).isEmpty();
        assertThat(run.err).startsWith("Usage: varve");
    }

    @Test
    void unknownOptionIsAUsageError() {
        Run run = Run.of("--no-such-option");

        assertThat(run.exitCode).isEqualTo(CommandLine.ExitCode.USAGE);
        assertThat(run.err).contains("Unknown option: '--no-such-option'");
    }

    /** One in-process run of the command with stdout and stderr captured. */
    private record Run(int exitCode, String out, String err) {
        static Run of(String... args) {
            StringWriter out = new StringWriter();
            StringWriter err = new StringWriter();
            CommandLine cmd = new CommandLine(new VarveCommand());
            cmd.setOut(new PrintWriter(out, true));
            cmd.setErr(new PrintWriter(err, true));
            int exitCode = cmd.execute(args);
            return new Run(exitCode, out.toString(), err.toString());
        }
    }
}
