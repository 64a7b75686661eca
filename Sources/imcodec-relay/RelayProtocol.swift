#if Tools
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import IMCodec
import IMCodecNIO
import NIOCore
import NIOWebSocket

/// The small control protocol the relay speaks on top of ``IMCodec/Frame``s. The schema has no
/// login or join frame, so the relay uses `SystemNotice` frames for them; everything else is an
/// ordinary frame. See README.md beside this file for the whole protocol.
///
/// Client to relay:
/// - `SystemNotice{type: "login", params: {"user_id": U}}` — must be the connection's first frame.
/// - `SystemNotice{type: "join_group" | "leave_group", params: {"group_id": G}}`.
/// - `Message` frames (one-to-one or group), receipts, recalls, edits, deletes and typing events.
///
/// Relay to client:
/// - `SystemNotice{type: "logged_in", params: {"user_id": U}}`, `"joined"` / `"left"` with `group_id`.
/// - `SendAck` for every `Message` (server uid, per-conversation seq, server time, or an error code).
/// - The original bytes of every frame routed to the client; in a forwarded `Message` the server's
///   uid, seq and time are appended (see ``RelayProtocol/stampedRecord(body:stamp:decoder:allocator:)``).
/// - `SystemNotice{type: "error", params: {"code": ..., "reason": ...}}` before the relay closes a
///   connection for a protocol violation, and for a request it cannot serve (connection kept).
/// - `SystemNotice{type: "kicked_offline"}` when the same user logs in on another connection.
enum RelayProtocol {
    /// `SystemNotice.type` of the login request.
    static let login = "login"
    /// `SystemNotice.type` of the login answer.
    static let loggedIn = "logged_in"
    /// `SystemNotice.type` of a request to join a group.
    static let joinGroup = "join_group"
    /// `SystemNotice.type` of the answer to ``joinGroup``.
    static let joined = "joined"
    /// `SystemNotice.type` of a request to leave a group.
    static let leaveGroup = "leave_group"
    /// `SystemNotice.type` of the answer to ``leaveGroup``.
    static let left = "left"
    /// `SystemNotice.type` of an error report.
    static let error = "error"
    /// `SystemNotice.type` sent to a connection replaced by a newer login of the same user.
    static let kickedOffline = "kicked_offline"

    /// `SendAck.error_code` values (0 is success).
    enum AckError {
        /// The message's `sender_id` is not the logged-in user.
        static let senderMismatch: Int32 = 1001
        /// A one-to-one receiver is not connected (the relay stores nothing).
        static let receiverOffline: Int32 = 1002
        /// The sender is not a member of the group.
        static let notAGroupMember: Int32 = 1003
        /// The conversation type is not one-to-one or group, or the target id is empty.
        static let unsupportedConversation: Int32 = 1004
        /// The message cannot be stamped: with the server's fields appended, the frame would pass the
        /// relay's frame size or field count limit.
        static let cannotStamp: Int32 = 1005
    }

    /// A system notice frame.
    static func notice(_ type: String, _ params: [String: String] = [:], text: String = "") -> Frame {
        Frame(.systemNotice(SystemNotice.with {
            $0.type = type
            $0.params = params
            $0.text = text
            $0.timeMs = nowMs()
        }))
    }

    /// The login frame for `userID`.
    static func loginFrame(_ userID: String) -> Frame { notice(login, ["user_id": userID]) }

    /// The join-group frame.
    static func joinFrame(_ groupID: String) -> Frame { notice(joinGroup, ["group_id": groupID]) }

    /// The leave-group frame.
    static func leaveFrame(_ groupID: String) -> Frame { notice(leaveGroup, ["group_id": groupID]) }

    /// An error notice carrying an ``IMCodec/IMCodecError``-style code and reason.
    static func errorFrame(code: String, reason: String) -> Frame {
        notice(error, ["code": code, "reason": reason], text: "\(code): \(reason)")
    }

    /// The record a receiver gets for a message frame `body`: the sender's bytes unchanged, followed
    /// by the stamp (``IMCodec/ServerStamp``: `Frame{message: {server_msg_uid, seq, server_time_ms}}`),
    /// behind a length prefix that covers both. Protobuf merges the repeated `message` field and
    /// keeps the last value of each scalar, so a receiver decodes the sender's message with the
    /// server's uid, seq and time set, and nothing is decoded or re-encoded here.
    /// - Parameters:
    ///   - body: The frame as received, without its length prefix.
    ///   - stamp: The fields the relay assigns.
    ///   - decoder: The relay's decoder: `body` is checked with its limits (which include the
    ///     frame size limit), and so is the stamped frame's size and field count.
    ///   - allocator: Makes the record's buffer.
    /// - Returns: The length-prefixed record to write to every receiver.
    /// - Throws: ``IMCodec/IMCodecError``: `payloadMismatch` when `body` carries no message,
    ///   `tooLarge` or `tooManyFields` when the stamped frame would pass the limits, or the decoding
    ///   error of `body`.
    static func stampedRecord(
        body: ByteBuffer, stamp: ServerStamp, decoder: WireDecoder, allocator: ByteBufferAllocator
    ) throws(IMCodecError) -> ByteBuffer {
        try body.withUnsafeReadableBytes { raw in
            Result { () throws(IMCodecError) -> ByteBuffer in
                try stamp.withBytesToAppend(to: raw, decoder: decoder) { appended in
                    let length = raw.count + appended.count
                    var out = allocator.buffer(capacity: length + 5)
                    out.writeLengthPrefix(length)
                    out.writeBytes(raw)
                    out.writeBytes(appended)
                    return out
                }
            }
        }.get()
    }

    /// The WebSocket close code for an error `code` the relay closes a connection with: `tooLarge`
    /// 1009 (message too big), the other decoding errors 1007 (invalid payload data), as
    /// ``IMCodecNIO/WebSocketFrameHandler/closeCode(for:)`` maps them; a text message 1003, a broken
    /// WebSocket rule 1002; the relay's own failures (`io`, `internal`, `outOfMemory`) 1011; a broken
    /// session rule (`notLoggedIn`, `loginTimeout`, `slowConsumer`, `pingFlood`, ...) 1008 (policy).
    static func webSocketCloseCode(for code: String) -> WebSocketErrorCode {
        switch code {
        case "tooLarge", "truncated", "malformed", "wireTypeMismatch", "invalidUTF8", "tooDeep", "tooManyFields",
            "memoryLimitExceeded", "unsupported", "payloadMismatch":
            return WebSocketFrameHandler.closeCode(for: IMCodecError.Code(rawValue: code))
        case "textMessage": return .unacceptableData
        case "protocolError": return .protocolError
        case "io", "internal", "outOfMemory": return .unexpectedServerError
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
