package dev.varve.cli.client;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialAlteration;
import org.apache.kafka.clients.admin.UserScramCredentialDeletion;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.admin.UserScramCredentialsDescription;
import org.apache.kafka.common.errors.ResourceNotFoundException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;

/** {@code varve user ...}: SASL/SCRAM credentials kept by the cluster. */
@Command(name = "user", mixinStandardHelpOptions = true,
        description = "Create, list and delete SASL/SCRAM users (SCRAM-SHA-256 and SCRAM-SHA-512 credentials).",
        subcommands = {UserCommand.Create.class, UserCommand.ListUsers.class, UserCommand.Delete.class})
public final class UserCommand {

    abstract static class Base extends AdminCommand {
    }

    static ScramMechanism mechanism(String value) {
        ScramMechanism m = ScramMechanism.fromMechanismName(value.trim().toUpperCase(Locale.ROOT));
        if (m == ScramMechanism.UNKNOWN) {
            throw new CliErrors.Failure("unknown mechanism '" + value + "': use SCRAM-SHA-256 or SCRAM-SHA-512");
        }
        return m;
    }

    /** Every user's mechanisms (name to "SCRAM-SHA-256 (4096 iterations)" rows). */
    static Map<String, UserScramCredentialsDescription> describe(Admin admin, List<String> users) throws Exception {
        return users == null ? admin.describeUserScramCredentials().all().get() : admin.describeUserScramCredentials(users).all().get();
    }

    /** Applies {@code changes} in as few requests as Kafka allows: one change per user in each (DUPLICATE_RESOURCE otherwise). */
    static void alter(Admin admin, List<UserScramCredentialAlteration> changes) throws Exception {
        List<UserScramCredentialAlteration> left = new ArrayList<>(changes);
        while (!left.isEmpty()) {
            java.util.Set<String> users = new java.util.HashSet<>();
            List<UserScramCredentialAlteration> round = new ArrayList<>();
            for (var it = left.iterator(); it.hasNext(); ) {
                UserScramCredentialAlteration c = it.next();
                if (users.add(c.user())) {
                    round.add(c);
                    it.remove();
                }
            }
            admin.alterUserScramCredentials(round).all().get();
        }
    }

    @Command(name = "create", mixinStandardHelpOptions = true,
            description = {"Create a user, or set a new password for one (per mechanism).",
                    "Without --password it is read from the terminal, else from the first line of stdin."})
    static final class Create extends Base {
        @Parameters(paramLabel = "USER")
        String user;

        @Option(names = {"-p", "--password"}, paramLabel = "PASSWORD", description = "The password (visible to other local users in the process list).")
        String password;

        @Option(names = {"-m", "--mechanism"}, split = ",", paramLabel = "MECHANISM", defaultValue = "SCRAM-SHA-256",
                description = "SCRAM-SHA-256 (default) and/or SCRAM-SHA-512.")
        List<String> mechanisms;

        @Option(names = "--iterations", paramLabel = "N", defaultValue = "4096", description = "SCRAM iterations (4096 to 16384; default 4096).")
        int iterations;

        @Override
        protected int run(Admin admin) throws Exception {
            if (password == null) {
                password = readPassword();
            }
            if (password.isEmpty()) {
                throw new CliErrors.Failure("the password is empty");
            }
            List<UserScramCredentialAlteration> changes = new ArrayList<>();
            List<String> names = new ArrayList<>();
            for (String m : mechanisms) {
                ScramMechanism mech = mechanism(m);
                names.add(mech.mechanismName());
                changes.add(new UserScramCredentialUpsertion(user, new ScramCredentialInfo(mech, iterations), password));
            }
            alter(admin, changes);
            Map<String, Object> result = new LinkedHashMap<>();
            result.put("user", user);
            result.put("mechanisms", names);
            result.put("iterations", iterations);
            client.output.emit(out(), result, o -> o.println("Created user " + user + " (" + String.join(", ", names) + ", "
                    + iterations + " iterations)."));
            return 0;
        }

        private String readPassword() throws Exception {
            java.io.Console console = System.console();
            if (console != null) {
                char[] first = console.readPassword("Password for %s: ", user);
                char[] again = console.readPassword("Again: ");
                if (first == null || again == null || !String.valueOf(first).equals(String.valueOf(again))) {
                    throw new CliErrors.Failure("the passwords differ");
                }
                return String.valueOf(first);
            }
            String line = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
            if (line == null) {
                throw new CliErrors.Failure("no password: give --password, or the password on stdin");
            }
            return line;
        }
    }

    @Command(name = "list", aliases = "ls", mixinStandardHelpOptions = true, description = "List SCRAM users and their mechanisms.")
    static final class ListUsers extends Base {
        @Parameters(arity = "0..*", paramLabel = "USER", description = "Only these users.")
        List<String> users;

        @Override
        protected int run(Admin admin) throws Exception {
            Map<String, UserScramCredentialsDescription> all;
            try {
                all = new TreeMap<>(describe(admin, users == null || users.isEmpty() ? null : users));
            } catch (ExecutionException e) {
                if (CliErrors.unwrap(e) instanceof ResourceNotFoundException r) {
                    throw new CliErrors.Failure(r.getMessage() + " (list every user with `varve user list`)");
                }
                throw e;
            }
            List<Map<String, Object>> rows = new ArrayList<>();
            for (var e : all.entrySet()) {
                List<Map<String, Object>> creds = new ArrayList<>();
                List<String> cells = new ArrayList<>();
                for (ScramCredentialInfo i : e.getValue().credentialInfos()) {
                    Map<String, Object> c = new LinkedHashMap<>();
                    c.put("mechanism", i.mechanism().mechanismName());
                    c.put("iterations", i.iterations());
                    creds.add(c);
                    cells.add(i.mechanism().mechanismName() + " (" + i.iterations() + ")");
                }
                Map<String, Object> row = new LinkedHashMap<>();
                row.put("user", e.getKey());
                row.put("credentials", creds);
                row.put("mechanisms", cells);
                rows.add(row);
            }
            List<Map<String, Object>> data = new ArrayList<>();
            for (Map<String, Object> row : rows) {
                Map<String, Object> d = new LinkedHashMap<>(row);
                d.remove("mechanisms");
                data.add(d);
            }
            client.output.emit(out(), data, o -> {
                if (rows.isEmpty()) {
                    o.println("No SCRAM users.");
                } else {
                    Output.table(o, List.of("user", "mechanisms"), rows);
                }
            });
            return 0;
        }
    }

    @Command(name = "delete", mixinStandardHelpOptions = true, description = "Delete users' SCRAM credentials (all their mechanisms unless --mechanism).")
    static final class Delete extends Base {
        @Parameters(arity = "1..*", paramLabel = "USER")
        List<String> users;

        @Option(names = {"-m", "--mechanism"}, split = ",", paramLabel = "MECHANISM", description = "Only these mechanisms.")
        List<String> mechanisms;

        @Override
        protected int run(Admin admin) throws Exception {
            Map<String, UserScramCredentialsDescription> known = describe(admin, null);
            List<UserScramCredentialAlteration> changes = new ArrayList<>();
            List<Map<String, Object>> rows = new ArrayList<>();
            for (String u : users) {
                if (!known.containsKey(u)) {
                    throw new CliErrors.Failure("no SCRAM user " + u + " (list them with `varve user list`)");
                }
                List<String> removed = new ArrayList<>();
                for (ScramCredentialInfo i : known.get(u).credentialInfos()) {
                    if (mechanisms == null || mechanisms.stream().map(UserCommand::mechanism).anyMatch(m -> m == i.mechanism())) {
                        changes.add(new UserScramCredentialDeletion(u, i.mechanism()));
                        removed.add(i.mechanism().mechanismName());
                    }
                }
                if (removed.isEmpty()) {
                    throw new CliErrors.Failure("user " + u + " has no " + String.join(" or ", mechanisms) + " credential");
                }
                Map<String, Object> row = new LinkedHashMap<>();
                row.put("user", u);
                row.put("mechanisms", removed);
                rows.add(row);
            }
            alter(admin, changes);
            client.output.emit(out(), rows, o -> {
                for (Map<String, Object> row : rows) {
                    o.println("Deleted " + Output.cell(row.get("mechanisms")) + " credentials of user " + row.get("user") + ".");
                }
            });
            return 0;
        }
    }
}
