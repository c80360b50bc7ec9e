package dev.varve.cli.client;

import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.Callable;

/** {@code varve profile ...}: named client settings, as rpk's profiles ({@link Profiles}). */
@Command(name = "profile", mixinStandardHelpOptions = true,
        description = "Named connection settings for the client commands (kept in ~/.config/varve/profiles.yaml, or $VARVE_CONFIG).",
        subcommands = {ProfileCommand.Create.class, ProfileCommand.Use.class, ProfileCommand.ListProfiles.class,
                ProfileCommand.Show.class, ProfileCommand.Delete.class})
public final class ProfileCommand {

    abstract static class Base implements Callable<Integer> {
        @Spec
        CommandSpec spec;

        @Option(names = {"-o", "--output"}, paramLabel = "FORMAT", converter = ClientOptions.OutputConverter.class,
                defaultValue = "text", description = "text (default), json or yaml.")
        Output output = Output.TEXT;

        Profiles profiles() {
            return Profiles.load(Profiles.defaultFile(ClientOptions.environment));
        }
    }

    @Command(name = "create", mixinStandardHelpOptions = true,
            description = "Create (or replace) a profile and make it current.")
    static final class Create extends Base {
        @Parameters(paramLabel = "NAME")
        String name;

        @Option(names = {"-b", "--bootstrap-server"}, required = true, paramLabel = "HOST:PORT[,...]")
        String bootstrap;

        @Option(names = {"-X", "--set"}, paramLabel = "KEY=VALUE", description = "A Kafka client property (repeatable).")
        Map<String, String> props = new LinkedHashMap<>();

        @Override
        public Integer call() throws Exception {
            Profiles p = profiles();
            Map<String, String> all = new TreeMap<>(props);
            all.put("bootstrap.servers", bootstrap);
            p.put(name, all);
            p.use(name);
            p.save();
            spec.commandLine().getOut().println("Created profile " + name + " in " + p.file() + " and made it current.");
            return 0;
        }
    }

    @Command(name = "use", mixinStandardHelpOptions = true, description = "Make a profile current.")
    static final class Use extends Base {
        @Parameters(paramLabel = "NAME")
        String name;

        @Override
        public Integer call() throws Exception {
            Profiles p = profiles();
            p.use(name);
            p.save();
            spec.commandLine().getOut().println("Profile " + name + " is current.");
            return 0;
        }
    }

    @Command(name = "list", aliases = "ls", mixinStandardHelpOptions = true, description = "List profiles.")
    static final class ListProfiles extends Base {
        @Override
        public Integer call() {
            Profiles p = profiles();
            List<Map<String, Object>> rows = new ArrayList<>();
            p.all().forEach((n, props) -> {
                Map<String, Object> row = new LinkedHashMap<>();
                row.put("name", n);
                row.put("current", n.equals(p.current()));
                row.put("bootstrap-servers", props.get("bootstrap.servers"));
                rows.add(row);
            });
            output.emit(spec.commandLine().getOut(), rows, o -> {
                List<Map<String, Object>> shown = new ArrayList<>();
                for (Map<String, Object> r : rows) {
                    Map<String, Object> s = new LinkedHashMap<>(r);
                    s.put("name", r.get("name") + (Boolean.TRUE.equals(r.get("current")) ? "*" : ""));
                    shown.add(s);
                }
                Output.table(o, List.of("name", "bootstrap-servers"), shown);
            });
            return 0;
        }
    }

    @Command(name = "show", mixinStandardHelpOptions = true, description = "Print a profile's settings (default: the current one).")
    static final class Show extends Base {
        @Parameters(arity = "0..1", paramLabel = "NAME")
        String name;

        @Override
        public Integer call() {
            Profiles p = profiles();
            String n = name != null ? name : p.current();
            if (n == null) {
                throw new CliErrors.Failure("no current profile (create one with: varve profile create NAME --bootstrap-server HOST:PORT)");
            }
            Map<String, Object> shown = new TreeMap<>();
            p.get(n).forEach((k, v) -> shown.put(k, k.contains("password") || k.contains("jaas") ? "(hidden)" : v));
            output.emit(spec.commandLine().getOut(), shown, o -> Output.fields(o, shown));
            return 0;
        }
    }

    @Command(name = "delete", mixinStandardHelpOptions = true, description = "Delete a profile.")
    static final class Delete extends Base {
        @Parameters(paramLabel = "NAME")
        String name;

        @Override
        public Integer call() throws Exception {
            Profiles p = profiles();
            p.get(name);
            p.remove(name);
            p.save();
            spec.commandLine().getOut().println("Deleted profile " + name + ".");
            return 0;
        }
    }
}
