package dev.varve.cli.client;

import org.apache.kafka.clients.admin.Admin;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

import java.io.PrintWriter;
import java.util.concurrent.Callable;

/** A client command that works through one Admin client, opened for the call and closed after it. */
public abstract class AdminCommand implements Callable<Integer> {
    @Spec
    protected CommandSpec spec;

    @Mixin
    protected ClientOptions client;

    protected PrintWriter out() {
        return spec.commandLine().getOut();
    }

    @Override
    public Integer call() throws Exception {
        try (Admin admin = client.admin()) {
            return run(admin);
        }
    }

    /** The command's work; its exit status. */
    protected abstract int run(Admin admin) throws Exception;
}
