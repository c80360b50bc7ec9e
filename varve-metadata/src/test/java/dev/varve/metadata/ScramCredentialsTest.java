package dev.varve.metadata;

import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.common.message.AlterUserScramCredentialsRequestData;
import org.apache.kafka.common.message.AlterUserScramCredentialsRequestData.ScramCredentialDeletion;
import org.apache.kafka.common.message.AlterUserScramCredentialsRequestData.ScramCredentialUpsertion;
import org.apache.kafka.common.message.AlterUserScramCredentialsResponseData.AlterUserScramCredentialsResult;
import org.apache.kafka.common.message.DescribeUserScramCredentialsRequestData;
import org.apache.kafka.common.message.DescribeUserScramCredentialsResponseData.DescribeUserScramCredentialsResult;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.security.scram.ScramCredential;
import org.apache.kafka.common.security.scram.internals.ScramFormatter;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

class ScramCredentialsTest {
    private static final byte SHA256 = ScramMechanism.SCRAM_SHA_256.type();
    private static final byte SHA512 = ScramMechanism.SCRAM_SHA_512.type();

    private static ScramCredentialUpsertion upsert(String user, byte mechanism, int iterations, String password) throws Exception {
        var internal = org.apache.kafka.common.security.scram.internals.ScramMechanism.forMechanismName(
                ScramMechanism.fromType(mechanism).mechanismName());
        byte[] salt = ("salt-of-" + user).getBytes(StandardCharsets.UTF_8);
        byte[] salted = new ScramFormatter(internal).saltedPassword(password, salt, iterations);
        return new ScramCredentialUpsertion().setName(user).setMechanism(mechanism).setIterations(iterations)
                .setSalt(salt).setSaltedPassword(salted);
    }

    private static Map<String, Short> errors(List<AlterUserScramCredentialsResult> results) {
        return results.stream().collect(Collectors.toMap(AlterUserScramCredentialsResult::user, AlterUserScramCredentialsResult::errorCode));
    }

    @Test
    void upsertionsKeepKeysAServerVerifiesThePasswordWithNeverThePassword() throws Exception {
        var decided = ScramCredentials.EMPTY.alter(new AlterUserScramCredentialsRequestData()
                .setUpsertions(List.of(upsert("alice", SHA512, 8192, "alice-secret"), upsert("bob", SHA256, 4096, "bob-secret"))));
        assertThat(errors(decided.response().results())).containsOnly(Map.entry("alice", Errors.NONE.code()),
                Map.entry("bob", Errors.NONE.code()));
        ScramCredentials after = ScramCredentials.EMPTY;
        for (MetadataRecord r : decided.records()) {
            after = after.apply(r);
        }
        MetadataRecord.UserScramCredential alice = after.get("alice", ScramMechanism.SCRAM_SHA_512);
        assertThat(alice.iterations()).isEqualTo(8192);
        // what Kafka's SCRAM server derives from the password must match what is kept
        var formatter = new ScramFormatter(org.apache.kafka.common.security.scram.internals.ScramMechanism.SCRAM_SHA_512);
        ScramCredential expected = formatter.generateCredential(alice.salt(), formatter.saltedPassword("alice-secret", alice.salt(), 8192),
                8192);
        assertThat(alice.storedKey()).isEqualTo(expected.storedKey());
        assertThat(alice.serverKey()).isEqualTo(expected.serverKey());
        assertThat(new String(alice.storedKey(), StandardCharsets.ISO_8859_1)).doesNotContain("alice-secret");
        assertThat(after.get("alice", ScramMechanism.SCRAM_SHA_256)).isNull();

        // a snapshot rebuilds the same credentials
        ScramCredentials replayed = ScramCredentials.EMPTY;
        for (MetadataRecord r : MetadataRecordSerde.deserialize(MetadataRecordSerde.serialize(after.toRecords()))) {
            replayed = replayed.apply(r);
        }
        assertThat(replayed).isEqualTo(after);
    }

    @Test
    void refusalsCarryKafkasErrorCodesAndChangeNothing() throws Exception {
        ScramCredentials base = ScramCredentials.EMPTY.apply(ScramCredentials.EMPTY.alter(new AlterUserScramCredentialsRequestData()
                .setUpsertions(List.of(upsert("carol", SHA256, 4096, "x")))).records().get(0));
        var decided = base.alter(new AlterUserScramCredentialsRequestData()
                .setDeletions(List.of(
                        new ScramCredentialDeletion().setName("nobody").setMechanism(SHA256),
                        new ScramCredentialDeletion().setName("carol").setMechanism((byte) 0),
                        new ScramCredentialDeletion().setName("dave").setMechanism(SHA256),
                        new ScramCredentialDeletion().setName("dave").setMechanism(SHA512)))
                .setUpsertions(List.of(
                        upsert("few", SHA256, 4095, "x"),
                        upsert("many", SHA512, 16_385, "x"),
                        upsert("", SHA256, 4096, "x"),
                        upsert("twice", SHA256, 4096, "x"),
                        upsert("twice", SHA512, 4096, "x"))));
        assertThat(decided.records()).isEmpty();
        assertThat(errors(decided.response().results())).containsOnly(
                Map.entry("nobody", Errors.RESOURCE_NOT_FOUND.code()),
                Map.entry("carol", Errors.UNSUPPORTED_SASL_MECHANISM.code()),
                Map.entry("dave", Errors.RESOURCE_NOT_FOUND.code()),
                Map.entry("few", Errors.UNACCEPTABLE_CREDENTIAL.code()),
                Map.entry("many", Errors.UNACCEPTABLE_CREDENTIAL.code()),
                Map.entry("", Errors.UNACCEPTABLE_CREDENTIAL.code()),
                Map.entry("twice", Errors.DUPLICATE_RESOURCE.code()));

        // one request may delete one user's credential and add another's
        var mixed = base.alter(new AlterUserScramCredentialsRequestData()
                .setDeletions(List.of(new ScramCredentialDeletion().setName("carol").setMechanism(SHA256)))
                .setUpsertions(List.of(upsert("erin", SHA512, 4096, "y"))));
        ScramCredentials after = base;
        for (MetadataRecord r : mixed.records()) {
            after = after.apply(r);
        }
        assertThat(after.get("carol", ScramMechanism.SCRAM_SHA_256)).isNull();
        assertThat(after.get("erin", ScramMechanism.SCRAM_SHA_512)).isNotNull();
    }

    @Test
    void describeListsMechanismsAndIterationsOnly() throws Exception {
        ScramCredentials creds = ScramCredentials.EMPTY;
        for (var u : List.of(upsert("alice", SHA256, 4096, "a"), upsert("alice2", SHA512, 5000, "b"))) {
            creds = creds.apply(creds.alter(new AlterUserScramCredentialsRequestData().setUpsertions(List.of(u))).records().get(0));
        }
        creds = creds.apply(creds.alter(new AlterUserScramCredentialsRequestData()
                .setUpsertions(List.of(upsert("alice", SHA512, 9000, "c")))).records().get(0));

        var all = creds.describe(new DescribeUserScramCredentialsRequestData().setUsers(null)).results();
        assertThat(all).extracting(DescribeUserScramCredentialsResult::user).containsExactly("alice", "alice2");
        assertThat(all.get(0).credentialInfos()).extracting(c -> c.mechanism() + ":" + c.iterations())
                .containsExactly(SHA256 + ":4096", SHA512 + ":9000");

        var named = creds.describe(new DescribeUserScramCredentialsRequestData().setUsers(List.of(
                new DescribeUserScramCredentialsRequestData.UserName().setName("alice2"),
                new DescribeUserScramCredentialsRequestData.UserName().setName("ghost"),
                new DescribeUserScramCredentialsRequestData.UserName().setName("alice"),
                new DescribeUserScramCredentialsRequestData.UserName().setName("alice")))).results();
        assertThat(named).extracting(DescribeUserScramCredentialsResult::user, DescribeUserScramCredentialsResult::errorCode)
                .containsExactly(org.assertj.core.groups.Tuple.tuple("alice2", Errors.NONE.code()),
                        org.assertj.core.groups.Tuple.tuple("ghost", Errors.RESOURCE_NOT_FOUND.code()),
                        org.assertj.core.groups.Tuple.tuple("alice", Errors.DUPLICATE_RESOURCE.code()));
    }

    @Test
    void theControllerDecidesAlterationsIntoTheImage() throws Exception {
        ControllerApis apis = new ControllerApis(new ControllerLogic(ControllerConfig.defaults(), org.apache.kafka.common.Uuid::randomUuid, (t, c) -> { }));
        var result = apis.handle(MetadataImage.EMPTY, ApiKeys.ALTER_USER_SCRAM_CREDENTIALS,
                new AlterUserScramCredentialsRequestData().setUpsertions(List.of(upsert("frank", SHA256, 4096, "f"))), 0);
        MetadataImage image = MetadataImage.EMPTY.apply(1, result.records());
        assertThat(image.scram().get("frank", ScramMechanism.SCRAM_SHA_256)).isNotNull();
        assertThat(MetadataImage.fromSnapshot(1, image.toRecords())).isEqualTo(image);
    }
}
