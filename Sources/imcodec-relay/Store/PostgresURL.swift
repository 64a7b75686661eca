#if Tools
import Foundation

/// A PostgreSQL server and database, as `serve --store` names it:
/// `postgresql://USER[:PASSWORD]@HOST[:PORT]/DB` (or `postgres://`; PORT defaults to 5432).
///
/// USER, PASSWORD and DB may be percent-encoded (`%40` for `@`, `%3A` for `:`, `%2F` for `/`); an
/// IPv6 HOST is written in brackets (`[::1]`). Query parameters (`?sslmode=...`) are refused: the
/// relay connects without TLS, so the server belongs on loopback or a private network.
///
/// ``description`` leaves the password out: it is what the relay prints and logs, and what its
/// errors name.
struct PostgresURL: Sendable, Equatable, CustomStringConvertible {
    var user: String
    var password: String?
    var host: String
    var port: Int
    var database: String

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
        let rest = text.dropFirst(scheme.count)
        guard !rest.contains("?"), !rest.contains("#") else {
            throw Malformed("query parameters and fragments are not supported")
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
    }

    /// The URL without its password (`postgresql://USER@HOST:PORT/DB`).
    var description: String {
        let host = self.host.contains(":") ? "[\(self.host)]" : self.host
        return "postgresql://\(Self.encode(user))@\(host):\(port)/\(Self.encode(database))"
    }

    /// The URL with its password, for a child relay's `--store` (never printed).
    var withPassword: String {
        guard let password else { return description }
        let host = self.host.contains(":") ? "[\(self.host)]" : self.host
        return "postgresql://\(Self.encode(user)):\(Self.encode(password))@\(host):\(port)/\(Self.encode(database))"
    }

    /// Why a `--store` URL was refused.
    struct Malformed: Error, CustomStringConvertible {
        let reason: String
        init(_ reason: String) { self.reason = reason }
        var description: String {
            "a PostgreSQL URL is postgresql://USER[:PASSWORD]@HOST[:PORT]/DB; in this one \(reason)"
        }
    }

    private static func decode(_ part: Substring, _ name: String) throws -> String {
        guard let decoded = String(part).removingPercentEncoding else {
            throw Malformed("\(name) has a malformed %-escape")
        }
        guard !decoded.contains("\u{0}") else { throw Malformed("\(name) holds a NUL") }
        return decoded
    }

    private static func encode(_ part: String) -> String {
        var allowed = CharacterSet.urlUserAllowed
        allowed.remove(charactersIn: ":@/")
        return part.addingPercentEncoding(withAllowedCharacters: allowed) ?? part
    }
}
#endif
