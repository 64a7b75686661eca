#if Tools
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import IMCodec
import IMCodecNIO
import NIOCore
import NIOWebSocket

/// The relay's protocol: IMCodec's session layer (session.proto) plus ordinary frames. See
/// README.md beside this file for the whole protocol.
///
/// A session:
/// - client → `login_request` (user_id; token: a JWT, HS256 under the relay's secret, `sub` the user
///   id, `exp` required (``RelayAuthenticator``); device_id and platform; last_seen: the highest seq
///   the client holds per conversation; stream_resume and stream_position: where this device's
///   stream resumes). It must be the connection's first frame.
/// - relay → `login_result` (error_code 0, session_id, heartbeat_interval_s, server_time_ms,
///   max_seqs: the relay's highest seq for every conversation named in last_seen and every
///   conversation the user belongs to; stream_position: the stream's head; resume_position). A bad
///   login gets a `login_result` with a non-zero ``LoginError`` code and the description
///   `notLoggedIn: ...`, then the connection closes; a refused token is ``LoginError/refused``,
///   whatever check failed.
/// - client → `stream_sync_request` from the resume position until `!has_more` (the device is
///   live from then on); `stream_ack` now and then. Or, per conversation, `sync_request` until
///   `!has_more`; `max_seq_request`.
/// - `Message` frames both ways (relay → `send_ack` for each, once it is committed), receipts,
///   recalls, edits, deletes, typing, reactions, pins, poll votes (the relay answers with its results), disappearing timers,
///   mark-reads; `system_notice` with a `recipient_id` to that user's online devices.
/// - `read_receipt_request` → `receipts`, `group_read_members_request` → `group_read_members`: the
///   read receipts the relay counted for the sender's own messages (Router+Receipts.swift).
/// - `ping` → `pong` (same id); `membership` join/leave and `presence_subscription` →
///   `request_result`; `logout` → `request_result`, then the relay closes the connection.
/// - relay → `kicked_offline` (LOGGED_IN_ELSEWHERE) when the same user logs in again with the same
///   device id (other devices stay online), (TOKEN_EXPIRED) when the token expires; `presence` to
///   subscribers; `membership` to a group's members.
///
/// Every answer repeats the request's `Frame.request_id` (a message's `send_ack` too). A forwarded
/// `Message` carries the sender's bytes with the server's uid, seq and time appended (see
/// ``RelayProtocol/stampedFrame(body:stamp:decoder:)``), then its direction for the receiving user;
/// every forwarded frame then gets `request_id` 0 (the sender's is its own) and its stream position. A `SystemNotice{type: "error", params: {"code", "reason"}}` reports a
/// protocol violation before the relay closes a connection, and a frame it cannot serve that has
/// no request id (connection kept).
enum RelayProtocol {
    /// The longest id the relay keeps, in UTF-8 bytes: a user, device, group (chatroom, ultra group)
    /// or ultra-group channel id (a UUID takes 36; Tencent Cloud IM allows 32 for a user, 48 for a
    /// group), and a message's `client_msg_id`. A longer id names nothing the relay keeps: a login
    /// with one is refused (2006, 2007), a message to one gets 1004 (with one as its client id,
    /// 1011), a conversation named by one is not a conversation the relay keeps
    /// (``ConversationKey``), and a presence subscription or a block of a user with one is refused
    /// (3003). Without it, every id a client made up was kept as long as it sent it: a user at
    /// ``RelayConfiguration/maxDirectConversations`` with peer ids near the frame size limit held
    /// gigabytes.
    static let maxIDBytes = 128

    /// Whether `id` fits ``maxIDBytes``.
    static func fitsIDBound(_ id: String) -> Bool { id.utf8.count <= maxIDBytes }

    /// Whether `id` is in Unicode Normalization Form C (an ASCII id always is). Swift compares
    /// strings by canonical equivalence: "\u{C5}lice", "A\u{30A}lice" and "\u{212B}lice" are one
    /// key of every table the router keeps per user or device. Two ids a token issuer tells apart
    /// would be one user to the relay: one could read the other's messages, kick its devices and
    /// publish keys as it. In NFC, canonically equivalent ids have the same bytes, so a relay that
    /// logs in NFC ids alone tells users apart as the issuer does.
    ///
    /// Checked for every id a frame names, so an id made of scalars that are in NFC whatever their
    /// neighbours (``isAlwaysComposed(_:)``: ASCII and Latin-1 up to U+02FF, kana, CJK ideographs,
    /// Hangul syllables, fullwidth forms) is taken without Foundation's normalization and its
    /// allocations; any other is normalized and compared.
    static func isNormalized(_ id: String) -> Bool {
        id.utf8.allSatisfy { $0 < 0x80 } || id.unicodeScalars.allSatisfy(isAlwaysComposed)
            || sameID(id.precomposedStringWithCanonicalMapping, id)
    }

    /// Whether `scalar` is in NFC whatever comes before or after it (Unicode's NFC_Quick_Check
    /// Yes and canonical combining class 0, in ranges where all scalars are so): nothing composes
    /// with it, and it decomposes to nothing else.
    static func isAlwaysComposed(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0..<0x300,  // up to the combining diacritical marks
            0x3041...0x3096, 0x30A1...0x30FA, 0x30FC,  // kana, without the combining sound marks
            0x4E00...0x9FFF,  // CJK unified ideographs (not the compatibility ones)
            0xAC00...0xD7A3,  // Hangul syllables (not the conjoining jamo)
            0xFF01...0xFF5E:  // fullwidth ASCII
            return true
        default:
            return false
        }
    }

    /// Whether `a` and `b` are the same id, byte for byte. An id a client claims (a sender, an
    /// actor, a device, a token's subject) is checked so, not with Swift's `==`, which takes
    /// canonically equivalent strings for one: the relay forwards the client's bytes, and receivers
    /// (and token issuers) that compare bytes would see another user.
    static func sameID(_ a: String, _ b: String) -> Bool { a.utf8.elementsEqual(b.utf8) }

    /// Whether `id` may name a user, group or ultra-group channel: it fits ``maxIDBytes``, holds no
    /// U+0000 (``holdsNUL(_:)``) and is in NFC (``isNormalized(_:)``). No user logs in with another
    /// id, and the router's tables, which compare by canonical equivalence, would take a non-NFC id
    /// for the NFC user's (while the stores and receivers compare bytes); so a frame naming one is
    /// refused, as one naming a long id.
    static func isAcceptedID(_ id: String) -> Bool { fitsIDBound(id) && !holdsNUL(id) && isNormalized(id) }

    /// Whether `text` holds U+0000, which no store keeps as it was given: PostgreSQL's `text`
    /// refuses it (the commit fails, and a relay whose commit fails stops: one client's join of
    /// a group "a\0b" stopped the relay, and every node that took over as the client sent it again),
    /// and SQLite's text, read back as a C string, ends at it ("a\0b" came back as "a"). So no id
    /// the relay keeps (a user, device, group or channel id, a `client_msg_id`) may hold one.
    static func holdsNUL(_ text: String) -> Bool { text.utf8.contains(0) }

    /// Why a frame that names an id past ``maxIDBytes``, holding U+0000 or not in NFC, is refused.
    static let idReason =
        "an id (of a user, device, group or ultra-group channel) holds at most \(maxIDBytes) bytes, "
        + "no U+0000, in Unicode Normalization Form C (NFC)"

    /// `SystemNotice.type` of an error report.
    static let error = "error"
    /// The `params` key of a forwarded system notice that holds its sender's user id
    /// (``Router/routeNotice(_:from:user:)``).
    static let noticeSenderKey = "sender_id"

    /// `SendAck.error_code` values (0 is success).
    enum AckError {
        /// The message's `sender_id` is not the logged-in user.
        static let senderMismatch: Int32 = 1001
        // 1002 is reserved: it meant "a one-to-one receiver is offline" before the relay stored
        // messages; such a message is now accepted, stored and delivered by sync.
        /// The sender is not a member of the group (chatroom, ultra-group channel).
        static let notAGroupMember: Int32 = 1003
        /// The conversation type is not one-to-one, group, chatroom or ultra group, or the target id
        /// is empty or longer than ``RelayProtocol/maxIDBytes`` (an ultra group's channel id too).
        static let unsupportedConversation: Int32 = 1004
        /// The message cannot be stamped: with the server's fields appended, the frame would pass the
        /// relay's frame size or field count limit.
        static let cannotStamp: Int32 = 1005
        /// A targeted message (`target_receivers`) outside a group or ultra-group conversation
        /// (Tencent: targeted messages are for groups; AVChatRoom-like chatrooms do not support them),
        /// or with a receiver id holding U+0000 or longer than ``RelayProtocol/maxIDBytes``.
        static let targetedOutsideGroup: Int32 = 1006
        /// The sender set a field only the server sets (`Message.serverAssignedFieldNames`: its uid,
        /// seq or time, an edit count, delivered or read lists, reactions, a thread summary, an
        /// expiry, ...); a receiver would show them as if the server had.
        static let serverAssignedField: Int32 = 1007
        /// A low-priority message (`PRIORITY_LOW`) to a group, chatroom or ultra group that is busy:
        /// it carried ``RelayConfiguration/groupMessageRate`` messages in the current second
        /// (message.proto Priority: "Under load, lower priorities are dropped first"). Nothing is
        /// kept or forwarded; the sender may send it again later.
        static let conversationBusy: Int32 = 1008
        /// A reply's quote that says what is not so (Router+Quotes.swift): a `quote_snapshot`
        /// without a quote, a quoted message its sender may not read (in a conversation it is not
        /// in, a targeted message sent to others, one from before its join or clear), an author
        /// (`quote.sender_id`, `quote_snapshot.author_id`) that is not the quoted message's sender,
        /// or a quote whose seq and ids name two messages. Nothing is kept or forwarded.
        static let badQuote: Int32 = 1009
        /// The first message to a peer the sender has no one-to-one conversation with, by a sender
        /// that has ``RelayConfiguration/maxDirectConversations`` of them. Nothing is kept or
        /// forwarded; messages in its conversations go on.
        static let conversationLimit: Int32 = 1010
        /// The message's `client_msg_id` is longer than ``RelayProtocol/maxIDBytes`` or holds U+0000
        /// (``RelayProtocol/holdsNUL(_:)``): the relay keeps it with every message, to find a
        /// resend. Nothing is kept or forwarded.
        static let clientMsgIDRefused: Int32 = 1011
        /// A message that would reach more users than its sender's ``RelayConfiguration/fanOutRate``
        /// budget has left, or a one-to-one message past what the sender may send the peer
        /// (``RelayConfiguration/peerRate``; Router+RateLimits.swift). Nothing is kept or forwarded:
        /// send it again later.
        static let tooFrequent: Int32 = 1012
    }

    /// `LoginResult.error_code` values (0 is success).
    enum LoginError {
        /// The login_request has no user_id or no token.
        static let missingCredentials: Int32 = 2001
        /// The connection is already logged in (a second login_request on it; the connection is kept).
        static let alreadyLoggedIn: Int32 = 2002
        /// The first frame was not a login_request (the connection is closed).
        static let notLoggedIn: Int32 = 2003
        /// The token was refused: malformed, not HS256, a bad signature, expired or without `exp`, or
        /// issued to another user (which check failed is not said); the connection is closed.
        static let refused: Int32 = 2004
        /// The user already has ``RelayConfiguration/maxDevicesPerUser`` devices online (or, after the
        /// bound was lowered, too few offline to forget down to it), and this login is from a device
        /// id the relay does not know (Router+Devices.swift); the connection is closed. A device that
        /// logs out makes room.
        static let tooManyDevices: Int32 = 2005
        /// The `device_id` is longer than ``RelayProtocol/maxIDBytes`` (the connection is
        /// closed): the relay keeps a device's id with everything it keeps per device, and repeats
        /// it in presence updates and kicks.
        static let deviceIDTooLong: Int32 = 2006
        /// The `user_id` is longer than ``RelayProtocol/maxIDBytes`` (the connection is closed): no
        /// conversation with such a user could be named.
        static let userIDTooLong: Int32 = 2007
        /// The user made ``RelayConfiguration/loginRate`` logins in the last minute (its budget,
        /// Router+RateLimits.swift; checked once its token passed, so no one else spends it): nothing
        /// changes, its other connections stay, and this one is closed. Log in again later.
        static let tooFrequent: Int32 = 2008
        /// The `user_id` or the `device_id` is not in Unicode Normalization Form C
        /// (``RelayProtocol/isNormalized(_:)``); the connection is closed.
        static let idNotNormalized: Int32 = 2009
    }

    /// `RequestResult.error_code` and `SyncResponse.error_code` values (0 is success).
    enum RequestError {
        /// The user is not a member of the conversation (sync, max seq), or names a targeted message
        /// that was not sent to it (an event about it).
        static let notAMember: Int32 = 3001
        /// Membership of a conversation that is not a group, chatroom or ultra group, or a sync or
        /// max seq of a conversation type the relay does not keep, or named by an id longer than
        /// ``RelayProtocol/maxIDBytes``.
        static let unsupportedConversation: Int32 = 3002
        /// A required field is missing or an action is unspecified.
        static let badRequest: Int32 = 3003
        /// The relay does not serve this payload kind.
        static let unsupported: Int32 = 3004
        /// An edit, reaction or delete names a message that was recalled or deleted for everyone.
        static let messageRemoved: Int32 = 3005
        /// A recall, edit or delete for everyone names a message another user sent.
        static let notTheSender: Int32 = 3006
        /// A key fetch found no published keys of that kind for the user (or the devices named).
        static let noKeys: Int32 = 3007
        /// A frame the relay would keep or forward is too large to reach a device within the frame
        /// size limit once the relay adds its fields (``deliveryReserve(targetID:channelID:)``), or an
        /// edit or extension update would make a kept message so.
        static let tooLargeToDeliver: Int32 = 3010
        /// A vote on a poll that its creator closed or whose `close_time_ms` passed.
        static let pollClosed: Int32 = 3011
        /// A list the relay keeps for the user is full: a block that would put more than
        /// ``Router/maxBlocklist`` users in its blocklist or make its `blocklist_response` too large
        /// for one frame, a presence subscription that would have it watch more than
        /// ``Router/maxWatchedUsers`` users, or a join by a user already in
        /// ``RelayConfiguration/maxJoinedConversations`` groups, chatrooms and channels, or a view
        /// (a conversation update, a receive option) or a kept event (a call, a disappearing timer)
        /// that would start a one-to-one conversation past ``RelayConfiguration/maxDirectConversations``.
        static let listFull: Int32 = 3012
        /// A history, sync, stream sync or conversation list request from a session that already
        /// has ``Session/maxReadsInFlight`` of them waiting for the store: ask again once one is
        /// answered.
        static let busy: Int32 = 3013
        /// A status update (`presence`) from a user that used up its
        /// ``RelayConfiguration/liveUpdateRate``, or a kept event, extension update, receipt, join or
        /// system notice past its ``RelayConfiguration/fanOutRate`` (or, to one user, past its
        /// ``RelayConfiguration/peerRate``), or a key fetch past the requester's
        /// ``RelayConfiguration/keyFetchRate`` for the user, or a join past the user's
        /// ``RelayConfiguration/joinRate`` (Router+RateLimits.swift): nothing is kept, sent, handed
        /// out or joined; send it again later.
        static let tooFrequent: Int32 = 3014
    }

    /// The room the relay keeps below `--max-frame-size` in every frame it keeps or forwards, for
    /// what it adds on the way to a device: a message's stamp is counted apart; then the direction
    /// and the stream position appended to it, and the page around it when a device reads it back
    /// (a `stream_sync_response`, `sync_response` or `history_response` always carries its first
    /// frame, however large, with the request id, positions, cursor and conversation around it).
    /// 128 bytes cover those fixed fields at their largest (each varint 10 bytes, each length 5);
    /// the page's conversation is the frame's own: its ids, and at most 23 bytes of type, tags and
    /// lengths. So a device that decodes with the relay's limit can read everything the relay
    /// accepted, live and when it syncs; without the reserve, one frame at the limit was a message
    /// its receivers could never read, nor sync past. Counted from the ids' lengths: nothing is
    /// built or encoded for it on the path of every frame.
    static func deliveryReserve(targetID: String, channelID: String) -> Int {
        128 + 23 + targetID.utf8.count + channelID.utf8.count
    }

    /// The most frames a connection may send before its login is answered (they wait for it).
    static let maxFramesDuringLogin = 256

    /// The most messages one sync_response carries (a larger or zero limit is capped to it).
    static let maxSyncLimit: UInt32 = 100

    /// The most kept messages one history request reads (``Router/history(_:requestID:session:user:)``):
    /// filters that match little make a short page with a cursor, not an unbounded read.
    static let maxHistoryScan: UInt64 = 1_000

    /// A frame carrying `payload` that answers the request `requestID`.
    static func answer(_ payload: Frame.Payload, requestID: UInt64) -> Frame {
        var frame = Frame(payload)
        frame.requestID = requestID
        return frame
    }

    /// The `kicked_offline` frame that tells a connection why the relay closes it.
    static func kickedFrame(
        _ reason: KickReason,
        _ description: String,
        otherDeviceID: String = "",
        otherPlatform: Platform = .unspecified
    ) -> Frame {
        Frame(
            .kickedOffline(
                KickedOffline.with {
                    $0.reason = reason
                    $0.description = description
                    $0.otherDeviceID = otherDeviceID
                    $0.otherPlatform = otherPlatform
                    $0.timeMs = nowMs()
                }
            )
        )
    }

    /// The login request of `userID` with `token` (a JWT the relay's secret signed, see
    /// ``RelayAuthenticator``). With `streamResume`, the device catches up with its stream from
    /// `streamPosition` before it gets live frames.
    static func loginFrame(
        _ userID: String,
        token: String,
        deviceID: String = "",
        platform: Platform = .unspecified,
        lastSeen: [ConversationSeq] = [],
        streamResume: Bool = false,
        streamPosition: UInt64 = 0,
        requestID: UInt64 = 0
    ) -> Frame {
        answer(
            .loginRequest(
                LoginRequest.with {
                    $0.userID = userID
                    $0.token = token
                    $0.deviceID = deviceID
                    $0.platform = platform
                    $0.lastSeen = lastSeen
                    $0.readerVersion = Frame.currentSchemaVersion
                    $0.streamResume = streamResume
                    $0.streamPosition = streamPosition
                }
            ),
            requestID: requestID
        )
    }

    /// A request to join (or leave) the group `groupID`.
    static func membershipFrame(_ action: MembershipAction, group groupID: String, requestID: UInt64) -> Frame {
        membershipFrame(action, .group(groupID), requestID: requestID)
    }

    /// A join or leave of `conversation` (a group, chatroom or ultra-group channel).
    static func membershipFrame(_ action: MembershipAction, _ conversation: Conversation, requestID: UInt64) -> Frame {
        answer(
            .membership(
                MembershipChange.with {
                    $0.action = action
                    $0.conversation = conversation
                    $0.timeMs = nowMs()
                }
            ),
            requestID: requestID
        )
    }

    /// A sync request for `conversation` from `fromSeq` (inclusive) to `toSeq` (0: the newest).
    static func syncFrame(
        _ conversation: Conversation,
        from fromSeq: UInt64,
        to toSeq: UInt64 = 0,
        limit: UInt32 = 0,
        requestID: UInt64
    ) -> Frame {
        answer(
            .syncRequest(
                SyncRequest.with {
                    $0.conversation = conversation
                    $0.fromSeq = fromSeq
                    $0.toSeq = toSeq
                    $0.limit = limit
                }
            ),
            requestID: requestID
        )
    }

    /// The most UTF-8 bytes of a description or a notice's reason the relay sends.
    static let maxDescriptionBytes = 512

    /// `text` cut to ``maxDescriptionBytes`` at a character boundary, with "…" when cut. A reason may
    /// name what the client sent (a conversation's id, a user's): without the cut, an id near the
    /// frame size limit made a notice (which holds its reason twice) that the client could not read.
    static func described(_ text: String) -> String {
        guard text.utf8.count > maxDescriptionBytes else { return text }
        var cut = ""
        var bytes = 0
        for character in text {
            bytes += character.utf8.count
            guard bytes <= maxDescriptionBytes - 3 else { break }
            cut.append(character)
        }
        return cut + "…"
    }

    /// An error notice carrying an ``IMCodec/IMCodecError``-style code and reason.
    static func errorFrame(code: String, reason: String) -> Frame {
        let reason = described(reason)
        return Frame(
            .systemNotice(
                SystemNotice.with {
                    $0.type = error
                    $0.params = ["code": code, "reason": reason]
                    $0.text = "\(code): \(reason)"
                    $0.timeMs = nowMs()
                }
            )
        )
    }

    /// The frame a receiver gets for a message frame `body`: the sender's bytes unchanged, followed
    /// by the stamp (``IMCodec/ServerStamp``: `Frame{message: {server_msg_uid, seq, server_time_ms}}`).
    /// Protobuf merges the repeated `message` field and keeps the last value of each scalar, so a
    /// receiver decodes the sender's message with the server's uid, seq and time set, and nothing is
    /// decoded or re-encoded here. The relay keeps this frame, and appends to it what differs per
    /// receiver (the message's direction, the stream position) when it sends it.
    /// - Parameters:
    ///   - body: The frame as received, without its length prefix.
    ///   - stamp: The fields the relay assigns.
    ///   - decoder: The relay's decoder: `body` is checked with its limits (which include the
    ///     frame size limit), and so is the stamped frame's size and field count.
    /// - Returns: The stamped frame, without a length prefix.
    /// - Throws: ``IMCodec/IMCodecError``: `payloadMismatch` when `body` carries no message,
    ///   `tooLarge` or `tooManyFields` when the stamped frame would pass the limits, or the decoding
    ///   error of `body`.
    static func stampedFrame(body: ByteBuffer, stamp: ServerStamp, decoder: WireDecoder) throws(IMCodecError) -> [UInt8]
    {
        try body.withUnsafeReadableBytes { raw in
            Result { () throws(IMCodecError) -> [UInt8] in try stamp.applied(to: raw, decoder: decoder) }
        }.get()
    }

    /// The code and reason a connection is closed with for an error raised in its pipeline (decoder,
    /// deadline, WebSocket), or `nil` for one that only follows an earlier error of a connection
    /// already `closing`.
    static func closeReason(for error: any Error, closing: Bool) -> (code: String, reason: String)? {
        switch error {
        case let error as IMCodecError:
            return (error.code.rawValue, error.reason)
        case is ByteToMessageDecoderError.PayloadTooLargeError:
            return (IMCodecError.Code.tooLarge.rawValue, "the decode buffer passed its cap")
        case let error as WebSocketFrameError:
            return (error.code, error.reason)
        case let error as ByteToMessageDecoderError:
            // Data after an earlier decode error; the connection is already being closed.
            return closing ? nil : ("internal", "\(error)")
        default:
            return ("io", "\(error)")
        }
    }

    /// The WebSocket close code for an error `code` the relay closes a connection with: `tooLarge`
    /// 1009 (message too big), the other decoding errors 1007 (invalid payload data), as
    /// ``IMCodecNIO/WebSocketFrameHandler/closeCode(for:)`` maps them; a text message 1003, a broken
    /// WebSocket rule 1002; the relay's own failures (`io`, `internal`, `outOfMemory`) 1011; a broken
    /// session rule (`notLoggedIn`, `loginTimeout`, `slowConsumer`, `pingFlood`, ...) 1008 (policy); a
    /// `logout` 1000 (normal closure).
    static func webSocketCloseCode(for code: String) -> WebSocketErrorCode {
        switch code {
        case "tooLarge", "truncated", "malformed", "wireTypeMismatch", "invalidUTF8", "tooDeep", "tooManyFields",
            "memoryLimitExceeded", "unsupported", "payloadMismatch":
            return WebSocketFrameHandler.closeCode(for: IMCodecError.Code(rawValue: code))
        case "textMessage": return .unacceptableData
        case "protocolError": return .protocolError
        case "io", "internal", "outOfMemory": return .unexpectedServerError
        case "logout": return .normalClosure
        case "serverShutdown": return .goingAway
        default: return .policyViolation
        }
    }

    /// Milliseconds since the Unix epoch.
    static func nowMs() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }
}
#endif
