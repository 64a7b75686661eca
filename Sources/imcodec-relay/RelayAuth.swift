#if Tools
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import JWTKit

/// The claims of a relay login token: whose it is (`sub`), until when (`exp`, required) and, when
/// the issuer says, from when (`nbf`).
struct RelayClaims: JWTPayload {
    var sub: SubjectClaim
    var exp: ExpirationClaim
    var nbf: NotBeforeClaim?

    /// How far ahead of the relay's clock a token's `nbf` may be, in seconds.
    static let notBeforeLeeway: TimeInterval = 60

    func verify(using algorithm: some JWTAlgorithm) async throws {
        try exp.verifyNotExpired()
        // RFC 7519 4.1.5: a token must not be accepted before its `nbf`, give or take "a small
        // leeway" for clocks: a minute here, so that an issuer whose clock runs a little ahead of
        // the relay's, and that sets `nbf` to its now, is not refused.
        try nbf?.verifyNotBefore(currentDate: Date(timeIntervalSinceNow: RelayClaims.notBeforeLeeway))
    }
}

/// Checks login tokens: JWTs (RFC 7519) signed with HS256 under the relay's secret, through
/// vapor/jwt-kit. A token is accepted only when all of these hold: it parses; its header's `alg` is
/// `HS256` (never `none`, never another algorithm); its signature verifies; it carries `exp` and has
/// not expired; its `nbf`, if any, has passed; its `sub` is the user id of the login, byte for byte
/// (not merely canonically equivalent, as Swift's `==` compares). A refusal does not say which
/// check failed.
struct RelayAuthenticator: Sendable {
    /// The shortest secret accepted, in characters.
    static let minimumSecretLength = 32

    private let keys: JWTKeyCollection

    /// An authenticator whose HMAC key is `secret` (at least ``minimumSecretLength`` characters).
    init(secret: String) async throws {
        guard secret.count >= Self.minimumSecretLength else {
            throw RelayAuthError(
                description:
                    "the auth secret has \(secret.count) characters; at least \(Self.minimumSecretLength) are needed"
            )
        }
        keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
    }

    /// The expiry of `token` when it logs in `user`, else `nil`.
    func verify(_ token: String, user: String) async -> Date? {
        do {
            let (header, _, _) = try DefaultJWTParser().parse(Array(token.utf8), as: RelayClaims.self)
            guard header.alg == "HS256" else { return nil }
            let claims = try await keys.verify(token, as: RelayClaims.self)
            guard RelayProtocol.sameID(claims.sub.value, user) else { return nil }
            return claims.exp.value
        } catch {
            return nil
        }
    }

    /// A token for `user` valid for `ttl` seconds from now.
    func mint(user: String, ttl: TimeInterval) async throws -> String {
        try await keys.sign(
            RelayClaims(sub: SubjectClaim(value: user), exp: ExpirationClaim(value: Date(timeIntervalSinceNow: ttl)))
        )
    }

    /// The secret in the first line of the file at `path`.
    static func readSecret(_ path: String) throws -> String {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw RelayAuthError(description: "cannot read the auth secret file \(path)")
        }
        let text = String(decoding: data, as: UTF8.self)
        let line = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        let secret = line.hasSuffix("\r") ? String(line.dropLast()) : String(line)
        guard secret.count >= minimumSecretLength else {
            throw RelayAuthError(
                description:
                    "the first line of \(path) has \(secret.count) characters; an auth secret needs at least \(minimumSecretLength)"
            )
        }
        return secret
    }

    /// The secret file the relay makes in its data directory when no `--auth-secret-file` is given.
    static func defaultSecretPath(dataDirectory: String) -> String { "\(dataDirectory)/auth-secret" }

    /// Reads the secret at `path`, first creating it (mode 0600, 64 random hex characters) when
    /// `create` is set and there is no file. Returns the secret and whether it was created.
    static func loadOrCreateSecret(at path: String, create: Bool) throws -> (secret: String, created: Bool) {
        if FileManager.default.fileExists(atPath: path) || !create { return (try readSecret(path), false) }
        var generator = SystemRandomNumberGenerator()
        let secret = (0..<32).map { _ in String(format: "%02x", UInt8.random(in: 0...255, using: &generator)) }.joined()
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0o600)
        guard fd >= 0 else { throw RelayAuthError(description: "cannot create the auth secret file \(path)") }
        let bytes = Array((secret + "\n").utf8)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        fsync(fd)
        close(fd)
        guard written == bytes.count else {
            throw RelayAuthError(description: "cannot write the auth secret file \(path)")
        }
        return (secret, true)
    }
}

/// Why the relay cannot set up authentication.
struct RelayAuthError: Error, CustomStringConvertible {
    let description: String
}
#endif
