#if Tools
import IMCodec
import NIOCore
import NIOSSL

/// The relay's TLS (swift-nio-ssl): one certificate chain and private key, in PEM files, for the TCP
/// listener and the WebSocket listener (`wss://`). TLS 1.2 or newer.
///
/// A client that connects and never finishes the handshake sends no login frame, so the
/// connection's login timeout (``RelayConfiguration/loginTimeout``; for WebSocket, the upgrade
/// timeout) closes it.
struct RelayTLS: Sendable {
    let context: NIOSSLContext
    /// The SHA-256 of the certificate (the chain's first), in hex: what other relay nodes pin
    /// (``NodeLink``).
    let fingerprint: String

    /// Loads the certificate chain and the private key.
    /// - Throws: ``RelayTLSError`` naming the file that cannot be read or used, or saying that the
    ///   key does not belong to the certificate.
    init(certificateFile: String, keyFile: String) throws {
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMFile(certificateFile)
        } catch {
            throw RelayTLSError(description: "cannot read a PEM certificate chain from \(certificateFile) (\(error))")
        }
        guard !chain.isEmpty else {
            throw RelayTLSError(description: "\(certificateFile) holds no certificate")
        }
        fingerprint = NodeLink.fingerprint((try? chain[0].toDERBytes()) ?? [])
        let key: NIOSSLPrivateKey
        do {
            key = try NIOSSLPrivateKey(file: keyFile, format: .pem)
        } catch {
            throw RelayTLSError(description: "cannot read a PEM private key from \(keyFile) (\(error))")
        }
        var configuration = TLSConfiguration.makeServerConfiguration(
            certificateChain: chain.map { .certificate($0) },
            privateKey: .privateKey(key)
        )
        configuration.minimumTLSVersion = .tlsv12
        do {
            context = try NIOSSLContext(configuration: configuration)
        } catch {
            throw RelayTLSError(
                description:
                    "the key in \(keyFile) cannot be used with the certificate in \(certificateFile) (\(error))"
            )
        }
    }

    /// Puts the TLS server handler at the front of a new connection's pipeline.
    func addHandler(to pipeline: ChannelPipeline.SynchronousOperations) throws {
        try pipeline.addHandler(NIOSSLServerHandler(context: context))
    }
}

/// Why the relay cannot use the TLS files it was given (`serve` prints it and exits with status 1).
struct RelayTLSError: Error, CustomStringConvertible {
    let description: String
}
#endif
