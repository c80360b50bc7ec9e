package dev.varve.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;

class ServerCommandTest {
    @TempDir
    File tmp;

    @Test
    void onlyPlainServerInvocationsTakeTheFastPath() {
        assertThat(ServerCommand.fastPathArgs(new String[]{"server"})).contains(Optional.empty());
        assertThat(ServerCommand.fastPathArgs(new String[]{"server", "--config", "a.properties"}))
                .contains(Optional.of(new File("a.properties")));
        assertThat(ServerCommand.fastPathArgs(new String[]{"server", "-c", "a.properties"}))
                .contains(Optional.of(new File("a.properties")));
        assertThat(ServerCommand.fastPathArgs(new String[]{"server", "--config=a.properties"}))
                .contains(Optional.of(new File("a.properties")));
        assertThat(ServerCommand.fastPathArgs(new String[]{"server", "--help"})).isEmpty();
        assertThat(ServerCommand.fastPathArgs(new String[]{"server", "--config"})).isEmpty();
        assertThat(ServerCommand.fastPathArgs(new String[]{"log", "dump", "x"})).isEmpty();
        assertThat(ServerCommand.fastPathArgs(new String[]{})).isEmpty();
    }

    @Test
    void aMissingOrInvalidConfigFileIsRefusedWithAClearMessage() throws Exception {
        StringWriter err = new StringWriter();
        assertThat(ServerCommand.run(new File(tmp, "nope.properties"), new PrintWriter(err))).isEqualTo(2);
        assertThat(err.toString()).contains("no such config file");

        File bad = new File(tmp, "bad.properties");
        Files.writeString(bad.toPath(), "num.partitions=zero\n");
        StringWriter err2 = new StringWriter();
        assertThat(ServerCommand.run(bad, new PrintWriter(err2))).isEqualTo(2);
        assertThat(err2.toString()).contains("invalid configuration", "num.partitions");
    }
}
