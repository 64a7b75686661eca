#if Tools
import Crypto
import Foundation
import IMCodec
import IMCodecNIO
import JWTKit
import NIOConcurrencyHelpers
import NIOCore
import NIOPosix
import Testing

@testable import imcodec_relay

/// Authentication (issue 16, item 4): a login token is a JWT (RFC 7519) signed with HS256 under the
/// relay's secret, whose `sub` is the user id and which carries `exp` (``RelayAuthenticator``, through
/// vapor/jwt-kit). Every other token gets one failed `login_result` (2004,
/// ``RelayProtocol/LoginError/refused``) that does not say which check failed, then the connection
/// closes; a token that expires during a session ends it with `KICK_REASON_TOKEN_EXPIRED` (Tencent
/// onUserSigExpired, per session.proto's KickReason); a user reads only its own conversations.
@Suite("Relay authentication", .timeLimit(.minutes(2)))
struct RelayAuthTests {
    /// A token the relay must refuse for a login as "alice".
    enum BadToken: String, CaseIterable, Sendable, CustomTestStringConvertible {
        /// Signed with HS256 under another secret (a forged signature).
        case forged
        /// Signed by the relay's secret, but expired a minute ago.
        case expired
        /// Signed by the relay's secret for another user ("bob").
        case foreign
        /// `alg: none` with an empty signature (RFC 7519 section 6, unsecured JWT).
        case algNone
        /// Signed by the relay's secret with HS256, but without `exp`.
        case noExpiry
        /// Signed by the relay's secret, but with HS384 (not the relay's one algorithm).
        case otherAlgorithm
        /// Signed by the relay's secret with HS256, but its header says HS512: jwt-kit alone accepts
        /// it (it verifies with its one key whatever `alg` says); the relay's own check of the header
        /// refuses it (without that check, this case fails).
        case mislabeledAlgorithm
        /// Signed by the relay's secret with HS256 and `exp`, but valid only from an hour on (`nbf`,
        /// RFC 7519 4.1.5: it must not be accepted before then).
        case notYetValid
        /// Not a JWT at all (the issue's `"not-a-real-token"`).
        case malformed

        var testDescription: String { rawValue }

        /// The claims of a token without `exp`.
        struct NoExpiryClaims: JWTPayload {
            var sub: SubjectClaim
            func verify(using algorithm: some JWTAlgorithm) async throws {}
        }

        static func base64URL(_ bytes: some Sequence<UInt8>) -> String {
            Data(bytes).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
        }

        /// The relay's secret as a swift-crypto key (for tokens jwt-kit would not make).
        static var relayKey: SymmetricKey { SymmetricKey(data: Data(TestAuth.secret.utf8)) }

        /// `HEADER.PAYLOAD` of a token for alice, valid for an hour, whose header says `alg`.
        static func unsigned(alg: String) -> String {
            let exp = Int(Date().timeIntervalSince1970) + 3600
            return base64URL(#"{"alg":"\#(alg)","typ":"JWT"}"#.utf8) + "."
                + base64URL(#"{"sub":"alice","exp":\#(exp)}"#.utf8)
        }

        /// The token, made for this test (forged test input, not parsing).
        func token() async throws -> String {
            switch self {
            case .forged:
                let other = try await RelayAuthenticator(secret: "another-secret-that-is-long-enough-0123456789")
                return try await other.mint(user: "alice", ttl: 3600)
            case .expired:
                return try await TestAuth.token("alice", ttl: -60)
            case .foreign:
                return try await TestAuth.token("bob")
            case .algNone:
                return Self.unsigned(alg: "none") + "."
            case .noExpiry:
                let keys = JWTKeyCollection()
                await keys.add(hmac: HMACKey(from: TestAuth.secret), digestAlgorithm: .sha256)
                return try await keys.sign(NoExpiryClaims(sub: SubjectClaim(value: "alice")))
            case .otherAlgorithm:
                // Signed with swift-crypto: jwt-kit asserts that an HS384 key has 48 bytes.
                let unsigned = Self.unsigned(alg: "HS384")
                let signature = HMAC<SHA384>.authenticationCode(for: Data(unsigned.utf8), using: Self.relayKey)
                return unsigned + "." + Self.base64URL(signature)
            case .mislabeledAlgorithm:
                let unsigned = Self.unsigned(alg: "HS512")
                let signature = HMAC<SHA256>.authenticationCode(for: Data(unsigned.utf8), using: Self.relayKey)
                return unsigned + "." + Self.base64URL(signature)
            case .notYetValid:
                let keys = JWTKeyCollection()
                await keys.add(hmac: HMACKey(from: TestAuth.secret), digestAlgorithm: .sha256)
                let claims = RelayClaims(
                    sub: SubjectClaim(value: "alice"),
                    exp: ExpirationClaim(value: Date(timeIntervalSinceNow: 7200)),
                    nbf: NotBeforeClaim(value: Date(timeIntervalSinceNow: 3600))
                )
                return try await keys.sign(claims)
            case .malformed:
                return "not-a-real-token"
            }
        }
    }

    /// Logs in as alice with `token` on a raw connection; returns every frame the relay sent before
    /// it closed the connection (`nil` when it did not close it).
    private func refusedLogin(_ token: String, server: RelayServer, group: any EventLoopGroup) async throws -> [Frame]?
    {
        let client = try await RawClient.connect(to: server, group: group)
        try await client.write(frame: RelayProtocol.loginFrame("alice", token: token, deviceID: "phone", requestID: 5))
        guard await client.closedByPeer(within: 20) else {
            try? await client.channel.close().get()
            return nil
        }
        return client.collector.frames
    }

    /// Issue 16 item 4 (RFC 7519, HS256, `exp` required, `sub` bound to the user): each bad token
    /// gets exactly one failed login_result with 2004 and the connection closes.
    @Test(arguments: BadToken.allCases)
    func aBadTokenGetsOneRefusedLoginResultAndTheConnectionCloses(_ bad: BadToken) async throws {
        try await withClientGroup { group in
            try await withRelay { server in
                let frames = try #require(try await refusedLogin(try await bad.token(), server: server, group: group))
                #expect(frames.count == 1, "\(frames)")
                guard case .loginResult(let result)? = frames.first?.payload else {
                    Issue.record("no login_result: \(frames)")
                    return
                }
                #expect(frames.first?.requestID == 5)
                #expect(result.errorCode == RelayProtocol.LoginError.refused && result.sessionID.isEmpty)
                let stats = try await server.stats().get()
                #expect(stats.logins == 0 && stats.loginsRefused == 1 && stats.usersOnline == 0)
            }
        }
    }

    /// Issue 16 item 4: a refusal "does not say which check failed"; CONVENTIONS: "a failed login
    /// says no more than 'refused'". Every bad token gets the same code and description.
    @Test func everyRefusedTokenGetsTheSameAnswer() async throws {
        try await withClientGroup { group in
            try await withRelay { server in
                var answers: [String: (Int32, String)] = [:]
                for bad in BadToken.allCases {
                    let frames = try await refusedLogin(try await bad.token(), server: server, group: group)
                    guard case .loginResult(let result)? = frames?.first?.payload else {
                        Issue.record("\(bad): no login_result")
                        continue
                    }
                    answers[bad.rawValue] = (result.errorCode, result.errorDescription)
                }
                #expect(answers.count == BadToken.allCases.count)
                #expect(Set(answers.values.map(\.0)) == [RelayProtocol.LoginError.refused])
                let descriptions = Set(answers.values.map(\.1))
                #expect(descriptions.count == 1, "\(answers)")
                for word in ["exp", "sign", "alg", "sub", "bob", "none", "HS"] {
                    #expect(
                        !(descriptions.first ?? "").contains(word),
                        "the description names a check: \(descriptions)"
                    )
                }
            }
        }
    }

    /// The control: a token the relay's secret signed for the user, HS256 with `exp`, logs in.
    @Test func aValidTokenLogsIn() async throws {
        try await withClientGroup { group in
            try await withRelay { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "phone")
                let result = try #require(alice.collector.loginResults.first)
                #expect(result.errorCode == 0 && !result.sessionID.isEmpty && alice.channel.isActive)
                await alice.close()
            }
        }
    }

    /// A token whose `nbf` has passed, or is less than ``RelayClaims/notBeforeLeeway`` ahead (an
    /// issuer's clock a little ahead of the relay's), logs in; the claim is optional.
    @Test(arguments: [-60.0, 30.0])
    func aTokenPastItsNotBeforeLogsIn(_ notBefore: Double) async throws {
        try await withClientGroup { group in
            try await withRelay { server in
                let keys = JWTKeyCollection()
                await keys.add(hmac: HMACKey(from: TestAuth.secret), digestAlgorithm: .sha256)
                let token = try await keys.sign(
                    RelayClaims(
                        sub: SubjectClaim(value: "alice"),
                        exp: ExpirationClaim(value: Date(timeIntervalSinceNow: 3600)),
                        nbf: NotBeforeClaim(value: Date(timeIntervalSinceNow: notBefore))
                    )
                )
                let alice = try await TestClient.connect(
                    to: server,
                    sending: RelayProtocol.loginFrame("alice", token: token, deviceID: "phone", requestID: 1),
                    group: group
                )
                #expect(await eventually { alice.collector.loginResults.first != nil })
                #expect(alice.collector.loginResults.first?.errorCode == 0)
                await alice.close()
            }
        }
    }

    /// Swift's `==` takes "\u{C5}lice" and "A\u{30A}lice" (and "\u{212B}lice") for one string, so
    /// they were one key of every table the relay keeps per user: whoever held a token for one
    /// form could log in as the other's user (read its messages, kick its devices, publish its
    /// keys). Now a user id or device id not in NFC is refused (2009) whatever its token, and a
    /// token's `sub` must be the login's user id byte for byte: a token for "A\u{30A}lice" does not
    /// log in "\u{C5}lice". The NFC form with its own token logs in.
    @Test func canonicallyEquivalentIDsAreNotOneUser() async throws {
        let composed = "\u{C5}lice"
        let decomposed = "A\u{30A}lice"
        #expect(composed == decomposed && !composed.utf8.elementsEqual(decomposed.utf8))
        try await withClientGroup { group in
            try await withRelay { server in
                func login(_ user: String, tokenFor subject: String, device: String) async throws -> LoginResult? {
                    let client = try await RawClient.connect(to: server, group: group)
                    let token = try await TestAuth.token(subject)
                    try await client.write(
                        frame: RelayProtocol.loginFrame(user, token: token, deviceID: device, requestID: 1)
                    )
                    #expect(await eventually { !client.collector.frames.isEmpty })
                    guard case .loginResult(let result)? = client.collector.frames.first?.payload else { return nil }
                    if result.errorCode != 0 {
                        #expect(await client.closedByPeer(within: 20), "a refused login closes its connection")
                    }
                    try? await client.channel.close().get()
                    return result
                }
                let notNFC = RelayProtocol.LoginError.idNotNormalized
                #expect(try await login(decomposed, tokenFor: decomposed, device: "phone")?.errorCode == notNFC)
                #expect(try await login("\u{212B}lice", tokenFor: "\u{212B}lice", device: "phone")?.errorCode == notNFC)
                #expect(try await login(composed, tokenFor: composed, device: "e\u{301}")?.errorCode == notNFC)
                let refused = RelayProtocol.LoginError.refused
                #expect(try await login(composed, tokenFor: decomposed, device: "phone")?.errorCode == refused)
                #expect(try await login(composed, tokenFor: composed, device: "\u{E9}")?.errorCode == 0)
                let stats = try await server.stats().get()
                #expect(stats.logins == 1 && stats.loginsRefused == 4)
                // Logged in, the NFC user cannot name itself by the other form either: the relay
                // forwards the sender's bytes, which a receiver comparing bytes takes for another user.
                let alice = try await TestClient.connect(to: server, as: composed, group: group)
                func send(from sender: String, id: UInt64) async throws -> Int32? {
                    let message = Message.c2cText(from: sender, to: "bob", "hi", clientMsgID: "c-\(id)")
                    return try await alice.ask(RelayProtocol.answer(.message(message), requestID: id))?.sendAck?
                        .errorCode
                }
                #expect(try await send(from: decomposed, id: 1) == RelayProtocol.AckError.senderMismatch)
                #expect(try await send(from: composed, id: 2) == 0)
                await alice.close()
            }
        }
    }

    /// Issue 16 item 4: "When a token expires during a session, send kicked_offline with
    /// KICK_REASON_TOKEN_EXPIRED" (Tencent onUserSigExpired); the user's other devices, whose tokens
    /// still hold, stay online.
    @Test func aTokenThatExpiresDuringASessionIsKickedWithTokenExpired() async throws {
        try await withClientGroup { group in
            try await withRelay { server in
                let laptop = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "laptop")
                let token = try await TestAuth.token("alice", ttl: 6)  // room for a slow login under a sanitizer
                let phone = try await TestClient.connect(
                    to: server,
                    sending: RelayProtocol.loginFrame("alice", token: token, deviceID: "phone", requestID: 1),
                    group: group
                )
                #expect(await eventually { phone.collector.loginResults.first != nil })
                #expect(phone.collector.loginResults.first?.errorCode == 0, "the token holds at login")

                #expect(await eventually(30) { !phone.channel.isActive }, "kicked once the token expired")
                let kicks = phone.collector.frames.compactMap {
                    if case .kickedOffline(let k)? = $0.payload { k } else { nil }
                }
                #expect(kicks.map(\.reason) == [.tokenExpired])
                #expect(kicks.first?.timeMs ?? 0 > 0)
                let pong = RelayProtocol.answer(.ping(Ping.with { $0.id = 2 }), requestID: 2)
                try await laptop.send(pong)
                #expect(await eventually { laptop.collector.answer(to: 2) != nil })
                #expect(laptop.channel.isActive)
                let stats = try await server.stats().get()
                #expect(stats.usersOnline == 1)
                await laptop.close()
            }
        }
    }

    /// Issue 16 item 4: "A user reads and syncs only conversations it belongs to": a sync_request of
    /// a group it is not in is refused with 3001 (``RelayProtocol/RequestError/notAMember``), and a
    /// max_seq_request about it is answered with seq 0.
    @Test func aUserSyncsOnlyConversationsItBelongsTo() async throws {
        try await withClientGroup { group in
            try await withRelay({ $0.groups = ["team": ["alice", "bob"]] }) { server in
                let alice = try await TestClient.connect(to: server, as: "alice", group: group)
                try await alice.send(
                    Frame(Message.groupText(from: "alice", group: "team", "secret", clientMsgID: "s-1"))
                )
                #expect(await eventually { alice.collector.acks.count == 1 })
                let mallory = try await TestClient.connect(to: server, as: "mallory", group: group)
                try await mallory.send(RelayProtocol.syncFrame(.group("team"), from: 1, requestID: 1))
                #expect(await eventually { mallory.collector.answer(to: 1) != nil })
                guard case .syncResponse(let sync)? = mallory.collector.answer(to: 1)?.payload else {
                    Issue.record("no sync_response")
                    return
                }
                #expect(
                    sync.errorCode == RelayProtocol.RequestError.notAMember && sync.messages.isEmpty && sync.maxSeq == 0
                )
                try await mallory.send(
                    RelayProtocol.answer(
                        .maxSeqRequest(
                            MaxSeqRequest.with {
                                $0.conversations = [.group("team")]
                            }
                        ),
                        requestID: 2
                    )
                )
                #expect(await eventually { mallory.collector.answer(to: 2) != nil })
                guard case .maxSeqResponse(let max)? = mallory.collector.answer(to: 2)?.payload else {
                    Issue.record("no max_seq_response")
                    return
                }
                #expect(max.maxSeqs.map(\.seq) == [0])
                #expect(mallory.collector.loginResults.first?.maxSeqs.isEmpty == true)
                #expect(mallory.collector.messages.isEmpty)
                await alice.close()
                await mallory.close()
            }
        }
    }

    /// Each user's logins come from a budget (`--login-rate`, here 3 a minute in bursts of 3;
    /// Matrix Synapse's `rc_login` per account), taken once the token passed: forged, expired and
    /// foreign tokens spend none of it, nor does a login refused for the user's devices (2005, here 2
    /// at most). Past it a login gets one login result with 2008 and its
    /// connection closes; nothing changes: the user's other devices stay (one with the same device
    /// id is not kicked) and its subscribers hear nothing. Before, one user logging in and out in a
    /// loop had the relay tell each of its subscribers twice per loop, charged to no one.
    @Test func aUserLogsInAtMostLoginRateTimesAMinute() async throws {
        let clock = FrozenClock()
        try await withClientGroup { group in
            try await withRelay({
                $0.loginRate = 3; $0.maxDevicesPerUser = 2; $0.silenceClock = clock.now
            }) { server in
                let carol = try await TestClient.connect(to: server, as: "carol", group: group)
                let watch = PresenceSubscription.with {
                    $0.action = .subscribe; $0.userIDs = ["alice"]
                }
                #expect(try await RelayUserStateTests.ask(carol, .presenceSubscription(watch), id: 1) != nil)
                for bad in BadToken.allCases {
                    let frames = try await refusedLogin(try await bad.token(), server: server, group: group)
                    #expect(frames?.first?.loginResult?.errorCode == RelayProtocol.LoginError.refused, "\(bad)")
                }
                let phone = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "phone")
                let first = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "tablet")
                // A third device while both are online is refused for the devices (2005): no login spent.
                for _ in 0..<2 {
                    let client = try await RawClient.connect(to: server, group: group)
                    try await client.write(frame: try await TestAuth.login("alice", deviceID: "laptop", requestID: 6))
                    #expect(await client.closedByPeer(within: 20))
                    #expect(
                        client.collector.frames.first?.loginResult?.errorCode == RelayProtocol.LoginError.tooManyDevices
                    )
                }
                // The tablet again: the third login.
                await first.close()
                let tablet = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "tablet")
                // The fourth, from a new device or as the phone again, is refused and kicks no one.
                for device in ["laptop", "phone"] {
                    let client = try await RawClient.connect(to: server, group: group)
                    try await client.write(frame: try await TestAuth.login("alice", deviceID: device, requestID: 7))
                    #expect(await client.closedByPeer(within: 20), "\(device)")
                    let result = client.collector.frames.first?.loginResult
                    #expect(result?.errorCode == RelayProtocol.LoginError.tooFrequent, "\(device)")
                    #expect(result?.errorDescription.contains("--login-rate") == true)
                    #expect(client.collector.frames.count == 1)
                }
                try await phone.roundTrip(8)
                #expect(phone.collector.frames.allSatisfy { $0.payload?.kind != .kickedOffline })
                // Bob's budget is his own.
                let bob = try await TestClient.connect(to: server, as: "bob", group: group)
                // Twenty seconds give one login: the laptop, once the tablet went offline to make room.
                clock.advance(by: 20_000)
                await tablet.close()
                #expect(await eventually { (try? server.withRouter { $0.sessions["alice"]?.count }.wait()) == 1 })
                let laptop = try await TestClient.connect(to: server, as: "alice", group: group, deviceID: "laptop")
                #expect(laptop.collector.loginResults.first?.errorCode == 0)
                let stats = try await server.stats().get()
                #expect(stats.logins == 6 && stats.loginsRefused == BadToken.allCases.count + 4)
                // Carol heard alice come online once: from the phone, the first of her devices.
                try await carol.roundTrip(10)
                #expect(carol.collector.presences.filter { $0.userID == "alice" && $0.status == .online }.count == 1)
                for client in [carol, phone, bob, laptop] { await client.close() }
            }
        }
    }

    /// Frames a client sends after its login request wait for the login's answer: at most 256, and
    /// together at most `--max-frame-size` bytes; past either the connection is closed
    /// (`tooManyFrames`), and the other clients' logins go on. The token checks are held
    /// (``RelayConfiguration/beforeTokenCheck``) until the relay has closed the two clients that
    /// sent too much, so every frame below arrives while its login waits. Before, only the count
    /// was bounded: 256 frames at the size limit, 256 MiB held for a connection that had shown
    /// nothing but a token.
    @Test func framesSentDuringALoginAreBoundedInCountAndBytes() async throws {
        let released = NIOLockedValueBox(false)
        let hold: @Sendable () async -> Void = {
            while !released.withLockedValue({ $0 }) { try? await Task.sleep(for: .milliseconds(5)) }
        }
        try await withClientGroup { group in
            try await withRelay({ $0.beforeTokenCheck = hold }) { server in
                func connect(_ user: String, then frames: [Frame]) async throws -> RawClient {
                    let client = try await RawClient.connect(to: server, group: group)
                    var bytes = ByteBuffer()
                    bytes.writeFrame(try await TestAuth.login(user, requestID: 1))
                    for frame in frames { bytes.writeFrame(frame) }
                    try await client.write(bytes)
                    return client
                }
                func ping(_ id: UInt64) -> Frame {
                    RelayProtocol.answer(.ping(Ping.with { $0.id = id }), requestID: id)
                }
                let text = String(repeating: "x", count: 600_000)
                let large = try await connect(
                    "bob",
                    then: [
                        Frame(Message.c2cText(from: "bob", to: "alice", text, clientMsgID: "b-1")),
                        Frame(Message.c2cText(from: "bob", to: "alice", text, clientMsgID: "b-2")),
                    ]
                )
                let many = try await connect("carol", then: (2...258).map(ping))
                let fair = try await connect(
                    "alice",
                    then: [
                        ping(2), Frame(Message.c2cText(from: "alice", to: "bob", "hi", clientMsgID: "a-1")), ping(3),
                    ]
                )
                #expect(await large.closedByPeer(within: 60))
                #expect(large.collector.errorCode == "tooManyFrames", "\(large.collector.frames)")
                #expect(await many.closedByPeer(within: 60))
                #expect(many.collector.errorCode == "tooManyFrames", "\(many.collector.frames)")
                #expect(fair.channel.isActive && fair.collector.frames.isEmpty, "its login still waits")

                released.withLockedValue { $0 = true }
                #expect(await eventually { fair.collector.frames.count == 4 })
                let kinds = fair.collector.frames.map { $0.payload?.kind }
                #expect(kinds == [.loginResult, .pong, .sendAck, .pong], "\(kinds)")
                let login = fair.collector.frames.first.flatMap {
                    if case .loginResult(let result)? = $0.payload { result } else { nil }
                }
                #expect(login?.errorCode == 0)
                #expect(fair.collector.frames.map(\.requestID) == [1, 2, 0, 3], "answered in order")
                fair.channel.close(promise: nil)
            }
        }
    }
}
#endif
