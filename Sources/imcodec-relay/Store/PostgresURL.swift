#if Tools
import Foundation

/// A PostgreSQL server and database, as `serve --store` names it:
/// `postgresql://USER[:PASSWORD]@HOST[:PORT]/DB[?PARAMETERS]` (or `postgres://`; PORT defaults to
/// 5432).
///
/// USER, PASSWORD, DB and parameter values may be percent-encoded (`%40` for `@`, `%3A` for `:`,
/// `%2F` for `/`, `%3F` for `?`); an IPv6 HOST is written in brackets (`[::1]`). The parameters,
/// joined by `&`:
/// - `sslmode`: `disable`, `require` (encrypted, the server's certificate not checked), `verify-ca`
///   (its certificate chain checked against the trusted roots) or `verify-full` (and its name or
///   address against HOST), as libpq names them. Without it: `disable` on loopback (`localhost`,
///   `127.x.x.x`, `::1`), `verify-full` anywhere else, so a password and messages never cross a
///   network in the clear or to a server that is not the one named unless the URL says so. libpq's
///   `allow` and `prefer`, which fall back to clear text, are refused.
/// - `sslrootcert`: a PEM file of the certificates to trust instead of the system's roots (for a
///   server whose certificate a private CA signed); alone it means `verify-full`.
/// - `timeout`: how many seconds the relay waits for any answer from the server (connecting, each
///   statement, each commit) before it gives up, 1...3600, default 10. A store that gives up stops
///   the relay, as any failed commit does: nothing it had not acknowledged is lost, and its clients
///   reconnect.
///
/// ``description`` leaves the password out: it is what the relay prints and logs, and what its
/// errors name.
struct PostgresURL: Sendable, Equatable, CustomStringConvertible {
    var user: String
    var password: String?
    var host: String
    var port: Int
    var database: String
    /// `sslmode`, when the URL gives it (``effectiveTLSMode`` is the one used).
    var tlsMode: TLSMode?
    /// `sslrootcert`: the PEM file of the certificates to trust.
    var rootCertificateFile: String?
    /// `timeout` in seconds, when the URL gives it (``timeoutSeconds`` is the one used).
    var timeout: Int?

    /// How the connection uses TLS (libpq's `sslmode` values the relay takes).
    enum TLSMode: String, Sendable, CaseIterable {
        case disable
        case require
        case verifyCA = "verify-ca"
        case verifyFull = "verify-full"
    }

    /// The TLS mode used: the URL's, else `verify-full` with a `sslrootcert` or off loopback, else `disable`.
    var effectiveTLSMode: TLSMode {
        tlsMode ?? (rootCertificateFile != nil || !RelayServer.isLoopback(host) ? .verifyFull : .disable)
    }

    /// The default of `timeout`.
    static let defaultTimeoutSeconds = 10

    /// How long the store waits for any answer from the server.
    var timeoutSeconds: Int { timeout ?? Self.defaultTimeoutSeconds }

    /// The schemes accepted.
    static let schemes = ["postgresql://", "postgres://"]

    /// Whether `text` starts with a PostgreSQL scheme (whether or not the rest is well-formed).
    static func hasScheme(_ text: String) -> Bool {
        schemes.contains { text.lowercased().hasPrefix($0) }
    }

    /// Parses `text`.
    /// - Throws: ``PostgresURL/Malformed`` saying what is wrong, without repeating the text (which
    ///   may hold a password).
    init(_ text: String) throws {
        guard let scheme = Self.schemes.first(where: { text.lowercased().hasPrefix($0) }) else {
            throw Malformed("it does not start with postgresql:// or postgres://")
        }
        var rest = text.dropFirst(scheme.count)
        guard !rest.contains("#") else { throw Malformed("a fragment (#) is not supported") }
        var query: Substring?
        if let mark = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: mark)...]
            rest = rest[..<mark]
        }
        guard let at = rest.lastIndex(of: "@") else { throw Malformed("USER@ is missing") }
        let userInfo = rest[..<at]
        let location = rest[rest.index(after: at)...]
        guard let slash = location.firstIndex(of: "/") else { throw Malformed("/DB is missing") }
        let hostPort = location[..<slash]
        let database = try Self.decode(location[location.index(after: slash)...], "DB")
        guard !database.isEmpty, !database.contains("/") else { throw Malformed("DB is empty or holds a /") }

        let user: String
        var password: String?
        if let colon = userInfo.firstIndex(of: ":") {
            user = try Self.decode(userInfo[..<colon], "USER")
            password = try Self.decode(userInfo[userInfo.index(after: colon)...], "PASSWORD")
        } else {
            user = try Self.decode(userInfo, "USER")
        }
        guard !user.isEmpty else { throw Malformed("USER is empty") }

        var host: Substring
        var portText: Substring?
        if hostPort.hasPrefix("[") {
            guard let close = hostPort.firstIndex(of: "]") else { throw Malformed("an IPv6 HOST lacks its ]") }
            host = hostPort[hostPort.index(after: hostPort.startIndex)..<close]
            let after = hostPort[hostPort.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw Malformed("HOST is followed by something other than :PORT") }
                portText = after.dropFirst()
            }
        } else if let colon = hostPort.firstIndex(of: ":") {
            host = hostPort[..<colon]
            portText = hostPort[hostPort.index(after: colon)...]
        } else {
            host = hostPort
        }
        guard !host.isEmpty, !host.contains(where: { $0 == " " || $0 == "%" || $0 == "/" }) else {
            throw Malformed("HOST is empty or malformed")
        }
        var port = 5432
        if let portText {
            guard !portText.isEmpty, portText.allSatisfy(\.isASCII), portText.allSatisfy(\.isNumber),
                let number = Int(portText), (1...65_535).contains(number)
            else { throw Malformed("PORT is not a number in 1...65535") }
            port = number
        }
        self.user = user
        self.password = password
        self.host = String(host)
        self.port = port
        self.database = database
        if let query { try parseParameters(query) }
    }

    /// Reads `sslmode`, `sslrootcert` and `timeout`; refuses anything else.
    private mutating func parseParameters(_ query: Substring) throws {
        var seen: Set<String> = []
        for pair in query.split(separator: "&", omittingEmptySubsequences: false) {
            guard let equals = pair.firstIndex(of: "=") else { throw Malformed("a parameter lacks its =VALUE") }
            let name = String(pair[..<equals])
            let value = try Self.decode(pair[pair.index(after: equals)...], name.isEmpty ? "a parameter" : name)
            guard seen.insert(name).inserted else { throw Malformed("the parameter \(name) is given twice") }
            switch name {
            case "sslmode":
                guard let mode = TLSMode(rawValue: value) else {
                    throw Malformed(
                        value == "allow" || value == "prefer"
                            ? "sslmode=\(value) may fall back to clear text: say disable or require (or verify-ca, verify-full)"
                            : "sslmode is one of disable, require, verify-ca, verify-full"
                    )
                }
                tlsMode = mode
            case "sslrootcert":
                guard !value.isEmpty else { throw Malformed("sslrootcert is empty") }
                rootCertificateFile = value
            case "timeout":
                guard let seconds = Int(value), (1...3600).contains(seconds), value.allSatisfy(\.isASCII) else {
                    throw Malformed("timeout is a number of seconds in 1...3600")
                }
                timeout = seconds
            default:
                throw Malformed(
                    "the parameter \(name.isEmpty ? "(empty)" : name) is not one of sslmode, sslrootcert, timeout"
                )
            }
        }
        if rootCertificateFile != nil, let tlsMode, tlsMode == .disable || tlsMode == .require {
            throw Malformed("sslrootcert is for sslmode=verify-ca or verify-full, not \(tlsMode.rawValue)")
        }
    }

    /// `?sslmode=...&sslrootcert=...&timeout=...`, with the parameters the URL gave, or nothing.
    private var queryText: String {
        var parameters: [String] = []
        if let tlsMode { parameters.append("sslmode=\(tlsMode.rawValue)") }
        if let rootCertificateFile { parameters.append("sslrootcert=\(Self.encodeValue(rootCertificateFile))") }
        if let timeout { parameters.append("timeout=\(timeout)") }
        return parameters.isEmpty ? "" : "?" + parameters.joined(separator: "&")
    }

    /// The URL without its password (`postgresql://USER@HOST:PORT/DB`).
    var description: String { text(password: nil) }

    /// The URL with its password, for a child relay's `--store` (never printed).
    var withPassword: String { text(password: password) }

    private func text(password: String?) -> String {
        let host = self.host.contains(":") ? "[\(self.host)]" : self.host
        let userInfo = Self.encode(user) + (password.map { ":" + Self.encode($0) } ?? "")
        return "postgresql://\(userInfo)@\(host):\(port)/\(Self.encode(database))\(queryText)"
    }

    /// Why a `--store` URL was refused.
    struct Malformed: Error, CustomStringConvertible {
        let reason: String
        init(_ reason: String) { self.reason = reason }
        var description: String {
            "a PostgreSQL URL is postgresql://USER[:PASSWORD]@HOST[:PORT]/DB[?sslmode=...&sslrootcert=...&timeout=...]; "
                + "in this one \(reason)"
        }
    }

    private static func decode(_ part: Substring, _ name: String) throws -> String {
        guard let decoded = String(part).removingPercentEncoding else {
            throw Malformed("\(name) has a malformed %-escape")
        }
        guard !decoded.contains("\u{0}") else { throw Malformed("\(name) holds a NUL") }
        return decoded
    }

    /// A parameter's value: a path keeps its `/`.
    private static func encodeValue(_ value: String) -> String {
        var allowed = CharacterSet.urlQueryAllowed
        allowed.remove(charactersIn: "&=#+?%")
        return value.addingPercentEncoding(withAllowedCharacters: allowed) ?? value
    }

    private static func encode(_ part: String) -> String {
        var allowed = CharacterSet.urlUserAllowed
        allowed.remove(charactersIn: ":@/")
        return part.addingPercentEncoding(withAllowedCharacters: allowed) ?? part
    }
}
#endif
