package dev.varve.metadata;

import dev.varve.metadata.MetadataRecord.RemoveUserScramCredential;
import dev.varve.metadata.MetadataRecord.UserScramCredential;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.common.message.AlterUserScramCredentialsRequestData;
import org.apache.kafka.common.message.AlterUserScramCredentialsResponseData;
import org.apache.kafka.common.message.DescribeUserScramCredentialsRequestData;
import org.apache.kafka.common.message.DescribeUserScramCredentialsResponseData;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.requests.ApiError;
import org.apache.kafka.common.security.scram.internals.ScramFormatter;

import java.security.NoSuchAlgorithmException;
import java.security.InvalidKeyException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The users' SCRAM credentials (KIP-554), as the cluster metadata holds them: one per user and
 * mechanism, the salt, stored key, server key and iteration count a server needs, never a password.
 * Immutable; {@link #with} and {@link #without} return changed copies.
 *
 * <p>{@link #alter} decides an AlterUserScramCredentials request as Kafka's controller does: a user
 * named twice in one request (in deletions or upsertions, whatever the mechanisms) is
 * DUPLICATE_RESOURCE; an empty name UNACCEPTABLE_CREDENTIAL; an unknown mechanism
 * UNSUPPORTED_SASL_MECHANISM; fewer iterations than the mechanism's minimum (4,096) or more than
 * 16,384 UNACCEPTABLE_CREDENTIAL; the deletion of a credential that does not exist RESOURCE_NOT_FOUND.
 * The client sends the salted password; the stored and server keys are derived from it here, so what
 * is kept cannot be replayed as a password. {@link #describe} answers DescribeUserScramCredentials with
 * the mechanisms and iteration counts only.
 */
public final class ScramCredentials {
    public static final ScramCredentials EMPTY = new ScramCredentials(Collections.emptyMap());
    /** Kafka's upper bound on iterations. */
    static final int MAX_ITERATIONS = 16_384;

    /** User to mechanism type to credential; both levels sorted. */
    private final Map<String, Map<Byte, UserScramCredential>> byUser;

    private ScramCredentials(Map<String, Map<Byte, UserScramCredential>> byUser) {
        this.byUser = byUser;
    }

    /** {@code user}'s credential for {@code mechanism}, or null. */
    public UserScramCredential get(String user, ScramMechanism mechanism) {
        Map<Byte, UserScramCredential> m = byUser.get(user);
        return m == null ? null : m.get(mechanism.type());
    }

    public boolean isEmpty() {
        return byUser.isEmpty();
    }

    /** With {@code c} in place of the user's credential of its mechanism. */
    public ScramCredentials with(UserScramCredential c) {
        Map<String, Map<Byte, UserScramCredential>> users = new TreeMap<>(byUser);
        Map<Byte, UserScramCredential> mechanisms = new TreeMap<>(users.getOrDefault(c.name(), Map.of()));
        mechanisms.put(c.mechanism(), c);
        users.put(c.name(), Collections.unmodifiableMap(mechanisms));
        return new ScramCredentials(Collections.unmodifiableMap(users));
    }

    /**
     * Without the user's credential of {@code mechanism}.
     *
     * @throws IllegalStateException when there is none (a controller bug)
     */
    public ScramCredentials without(String user, byte mechanism) {
        Map<Byte, UserScramCredential> current = byUser.get(user);
        if (current == null || !current.containsKey(mechanism)) {
            throw new IllegalStateException("no SCRAM credential of mechanism " + mechanism + " for user " + user);
        }
        Map<String, Map<Byte, UserScramCredential>> users = new TreeMap<>(byUser);
        Map<Byte, UserScramCredential> mechanisms = new TreeMap<>(current);
        mechanisms.remove(mechanism);
        if (mechanisms.isEmpty()) {
            users.remove(user);
        } else {
            users.put(user, Collections.unmodifiableMap(mechanisms));
        }
        return new ScramCredentials(Collections.unmodifiableMap(users));
    }

    /** Applies a credential record; other records leave it as it is. */
    public ScramCredentials apply(MetadataRecord record) {
        if (record instanceof UserScramCredential c) {
            return with(c);
        }
        if (record instanceof RemoveUserScramCredential r) {
            return without(r.name(), r.mechanism());
        }
        return this;
    }

    /** The records that rebuild these credentials from {@link #EMPTY}, users in order. */
    public List<MetadataRecord> toRecords() {
        List<MetadataRecord> out = new ArrayList<>();
        byUser.values().forEach(m -> out.addAll(m.values()));
        return out;
    }

    /** DescribeUserScramCredentials: every user with a credential when none is named. */
    public DescribeUserScramCredentialsResponseData describe(DescribeUserScramCredentialsRequestData request) {
        Map<String, Boolean> users = new LinkedHashMap<>(); // user -> named more than once
        if (request.users() == null || request.users().isEmpty()) {
            byUser.keySet().forEach(u -> users.put(u, false));
        } else {
            for (DescribeUserScramCredentialsRequestData.UserName u : request.users()) {
                users.merge(u.name(), false, (a, b) -> true);
            }
        }
        DescribeUserScramCredentialsResponseData response = new DescribeUserScramCredentialsResponseData();
        users.forEach((user, duplicate) -> {
            var result = new DescribeUserScramCredentialsResponseData.DescribeUserScramCredentialsResult().setUser(user);
            Map<Byte, UserScramCredential> found = byUser.get(user);
            if (duplicate) {
                result.setErrorCode(Errors.DUPLICATE_RESOURCE.code())
                        .setErrorMessage("Cannot describe SCRAM credentials for the same user twice in a single request: " + user);
            } else if (found == null) {
                result.setErrorCode(Errors.RESOURCE_NOT_FOUND.code())
                        .setErrorMessage("Attempt to describe a user credential that does not exist: " + user);
            } else {
                found.values().forEach(c -> result.credentialInfos().add(
                        new DescribeUserScramCredentialsResponseData.CredentialInfo()
                                .setMechanism(c.mechanism()).setIterations(c.iterations())));
            }
            response.results().add(result);
        });
        return response;
    }

    /** Decides an AlterUserScramCredentials request against these credentials: the records, and the answer. */
    public ControllerResult<AlterUserScramCredentialsResponseData> alter(AlterUserScramCredentialsRequestData request) {
        Map<String, AlterUserScramCredentialsRequestData.ScramCredentialDeletion> deletions = new LinkedHashMap<>();
        Map<String, AlterUserScramCredentialsRequestData.ScramCredentialUpsertion> upsertions = new LinkedHashMap<>();
        Map<String, ApiError> refused = new LinkedHashMap<>();
        for (var d : request.deletions()) {
            if (refused.containsKey(d.name())) {
                continue;
            }
            if (deletions.remove(d.name()) != null) {
                refused.put(d.name(), twice());
                continue;
            }
            ApiError error = check(d.name(), d.mechanism());
            if (error == null && get(d.name(), ScramMechanism.fromType(d.mechanism())) == null) {
                error = new ApiError(Errors.RESOURCE_NOT_FOUND, "Attempt to delete a user credential that does not exist");
            }
            if (error != null) {
                refused.put(d.name(), error);
            } else {
                deletions.put(d.name(), d);
            }
        }
        for (var u : request.upsertions()) {
            if (refused.containsKey(u.name())) {
                continue;
            }
            if (deletions.remove(u.name()) != null || upsertions.remove(u.name()) != null) {
                refused.put(u.name(), twice());
                continue;
            }
            ApiError error = check(u.name(), u.mechanism());
            if (error == null) {
                var internal = internal(u.mechanism());
                if (u.iterations() < internal.minIterations()) {
                    error = new ApiError(Errors.UNACCEPTABLE_CREDENTIAL, "Too few iterations");
                } else if (u.iterations() > MAX_ITERATIONS) {
                    error = new ApiError(Errors.UNACCEPTABLE_CREDENTIAL, "Too many iterations");
                } else if (u.salt() == null || u.salt().length == 0 || u.saltedPassword() == null
                        || u.saltedPassword().length == 0) {
                    error = new ApiError(Errors.UNACCEPTABLE_CREDENTIAL, "The salt and the salted password must not be empty");
                }
            }
            if (error != null) {
                refused.put(u.name(), error);
            } else {
                upsertions.put(u.name(), u);
            }
        }
        List<MetadataRecord> records = new ArrayList<>();
        AlterUserScramCredentialsResponseData response = new AlterUserScramCredentialsResponseData();
        for (var d : deletions.values()) {
            records.add(new RemoveUserScramCredential(d.name(), d.mechanism()));
            response.results().add(ok(d.name()));
        }
        for (var u : upsertions.values()) {
            try {
                ScramFormatter formatter = new ScramFormatter(internal(u.mechanism()));
                byte[] salted = u.saltedPassword();
                records.add(new UserScramCredential(u.name(), u.mechanism(), u.salt(),
                        formatter.storedKey(formatter.clientKey(salted)), formatter.serverKey(salted), u.iterations()));
                response.results().add(ok(u.name()));
            } catch (NoSuchAlgorithmException | InvalidKeyException e) {
                refused.put(u.name(), new ApiError(Errors.UNKNOWN_SERVER_ERROR, "cannot derive the SCRAM keys: " + e));
            }
        }
        refused.forEach((user, error) -> response.results().add(
                new AlterUserScramCredentialsResponseData.AlterUserScramCredentialsResult()
                        .setUser(user).setErrorCode(error.error().code()).setErrorMessage(error.message())));
        return new ControllerResult<>(records, response);
    }

    private static ApiError twice() {
        return new ApiError(Errors.DUPLICATE_RESOURCE, "A user credential cannot be altered twice in the same request");
    }

    private static AlterUserScramCredentialsResponseData.AlterUserScramCredentialsResult ok(String user) {
        return new AlterUserScramCredentialsResponseData.AlterUserScramCredentialsResult()
                .setUser(user).setErrorCode(Errors.NONE.code()).setErrorMessage(null);
    }

    /** The error for a bad user name or mechanism, or null. */
    private static ApiError check(String user, byte mechanism) {
        if (user == null || user.isEmpty()) {
            return new ApiError(Errors.UNACCEPTABLE_CREDENTIAL, "Username must not be empty");
        }
        if (ScramMechanism.fromType(mechanism) == ScramMechanism.UNKNOWN) {
            return new ApiError(Errors.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism");
        }
        return null;
    }

    private static org.apache.kafka.common.security.scram.internals.ScramMechanism internal(byte type) {
        return org.apache.kafka.common.security.scram.internals.ScramMechanism.forMechanismName(
                ScramMechanism.fromType(type).mechanismName());
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof ScramCredentials c && byUser.equals(c.byUser);
    }

    @Override
    public int hashCode() {
        return byUser.hashCode();
    }

    @Override
    public String toString() {
        Map<String, List<String>> shown = new LinkedHashMap<>(); // byUser is sorted already
        byUser.forEach((u, m) -> shown.put(u, m.keySet().stream().map(t -> ScramMechanism.fromType(t).mechanismName()).toList()));
        return "ScramCredentials(" + shown + ")";
    }
}
