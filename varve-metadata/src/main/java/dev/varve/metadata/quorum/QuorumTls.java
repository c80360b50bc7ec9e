package dev.varve.metadata.quorum;

import org.apache.ratis.conf.Parameters;
import org.apache.ratis.conf.RaftProperties;
import org.apache.ratis.grpc.GrpcConfigKeys;
import org.apache.ratis.grpc.GrpcTlsConfig;

import javax.net.ssl.KeyManager;
import javax.net.ssl.TrustManager;
import java.net.InetSocketAddress;
import java.util.Objects;

/**
 * Mutual TLS on the metadata quorum: the voters' Raft traffic and the brokers' commands go over Ratis'
 * gRPC transport (its Netty transport has no TLS), each side presenting its certificate from
 * {@code keyManager} and accepting only certificates {@code trustManager} trusts. A peer without such a
 * certificate cannot open a connection, so the quorum port is no door to the metadata.
 */
public record QuorumTls(KeyManager keyManager, TrustManager trustManager) {
    public QuorumTls {
        Objects.requireNonNull(keyManager, "keyManager");
        Objects.requireNonNull(trustManager, "trustManager");
    }

    /** Ratis' TLS configuration: mutual authentication, for the server, its peers and clients alike. */
    Parameters parameters() {
        GrpcTlsConfig tls = new GrpcTlsConfig(keyManager, trustManager, true);
        Parameters p = new Parameters();
        GrpcConfigKeys.TLS.setConf(p, tls);
        GrpcConfigKeys.Server.setTlsConf(p, tls);
        GrpcConfigKeys.Client.setTlsConf(p, tls);
        GrpcConfigKeys.Admin.setTlsConf(p, tls);
        return p;
    }

    /** Sets the gRPC transport and, for a server, its address. */
    static void useGrpc(RaftProperties p, InetSocketAddress serverAddress) {
        org.apache.ratis.RaftConfigKeys.Rpc.setType(p, org.apache.ratis.rpc.SupportedRpcType.GRPC);
        if (serverAddress != null) {
            GrpcConfigKeys.Server.setHost(p, serverAddress.getHostString());
            GrpcConfigKeys.Server.setPort(p, serverAddress.getPort());
        }
        // as the Netty transport's default: a whole snapshot chunk or a large batch of appends fits
        GrpcConfigKeys.setMessageSizeMax(p, org.apache.ratis.util.SizeInBytes.valueOf("64MB"));
    }
}
