package dev.varve.cli.client;

import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.errors.AuthenticationException;
import org.apache.kafka.common.errors.AuthorizationException;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import org.apache.kafka.common.errors.GroupNotEmptyException;
import org.apache.kafka.common.errors.InvalidPartitionsException;
import org.apache.kafka.common.errors.InvalidReplicationFactorException;
import org.apache.kafka.common.errors.SecurityDisabledException;
import org.apache.kafka.common.errors.TimeoutException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.errors.UnsupportedVersionException;
import picocli.CommandLine;

import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;

/**
 * Turns what a client command threw into one line on stderr that says what went wrong and what to do,
 * and exit status 1 (picocli's usage errors keep their 2). No stack trace: {@code VARVE_DEBUG=1}
 * prints it too.
 */
public final class CliErrors implements CommandLine.IExecutionExceptionHandler {

    /** A failure the command explains itself (the message is the whole story). */
    public static final class Failure extends RuntimeException {
        public Failure(String message) {
            super(message);
        }
    }

    @Override
    public int handleExecutionException(Exception ex, CommandLine cmd, CommandLine.ParseResult parsed) {
        Throwable t = unwrap(ex);
        cmd.getErr().println("error: " + explain(t, bootstrapOf(cmd)));
        if ("1".equals(System.getenv("VARVE_DEBUG"))) {
            t.printStackTrace(cmd.getErr());
        }
        cmd.getErr().flush();
        return 1;
    }

    public static Throwable unwrap(Throwable t) {
        while ((t instanceof ExecutionException || t instanceof CompletionException) && t.getCause() != null) {
            t = t.getCause();
        }
        return t;
    }

    private static String bootstrapOf(CommandLine cmd) {
        for (Object mixin : cmd.getMixins().values()) {
            if (mixin instanceof ClientOptions o) {
                try {
                    return o.bootstrapServers();
                } catch (RuntimeException e) {
                    return null;
                }
            }
        }
        return null;
    }

    /** The message for {@code t}, with the fix when there is an obvious one. */
    public static String explain(Throwable t, String bootstrap) {
        String msg = t.getMessage() == null ? t.getClass().getSimpleName() : t.getMessage();
        if (t instanceof Failure || t instanceof IllegalArgumentException) {
            return msg;
        }
        if (t instanceof TimeoutException) {
            return "no answer from the cluster" + (bootstrap == null ? "" : " at " + bootstrap) + " in time (" + msg
                    + "). Is a broker running there? Start one with `varve server`, or point at yours with"
                    + " --bootstrap-server HOST:PORT or a profile (`varve profile create`); --timeout waits longer.";
        }
        if (t instanceof TopicExistsException) {
            return msg + " (see it with `varve topic describe`)";
        }
        if (t instanceof UnknownTopicOrPartitionException) {
            return msg + " (list topics with `varve topic list`)";
        }
        if (t instanceof GroupIdNotFoundException) {
            return msg + " (list groups with `varve group list`)";
        }
        if (t instanceof GroupNotEmptyException) {
            return msg + " (stop the group's consumers first: a group with members cannot be changed)";
        }
        if (t instanceof org.apache.kafka.common.errors.GroupSubscribedToTopicException) {
            return msg + " (the group's consumers are subscribed to it: stop them first)";
        }
        if (t instanceof InvalidReplicationFactorException) {
            return msg + " (a topic cannot have more replicas than there are brokers: see `varve cluster info`)";
        }
        if (t instanceof InvalidPartitionsException) {
            return msg + " (partitions can only be added, never removed)";
        }
        if (t instanceof AuthenticationException) {
            return "authentication failed: " + msg + " (check the SASL/TLS settings: --command-config, -X or the profile)";
        }
        if (t instanceof AuthorizationException) {
            return "not authorized: " + msg + " (an operator can grant it with `varve acl create`)";
        }
        if (t instanceof SecurityDisabledException) {
            return msg + " (the cluster has no authorizer: set authorizer.class.name on the brokers to use ACLs)";
        }
        if (t instanceof UnsupportedVersionException) {
            return "the cluster does not support this: " + msg;
        }
        if (t instanceof ApiException) {
            return msg;
        }
        if (t instanceof java.io.IOException || t instanceof java.io.UncheckedIOException) {
            return msg;
        }
        return t.getClass().getSimpleName() + ": " + msg;
    }
}
