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
///   uid, seq and time are appended inside the message field (see ``RelayProtocol/stampedRecord(body:stamp:allocator:)``).
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

    /// The server's fields for a forwarded message, encoded as `Message` fields
    /// (`server_msg_uid`, `seq`, `server_time_ms`).
    static func stamp(serverMsgUID: String, seq: UInt64, serverTimeMs: Int64) -> [UInt8] {
        Message.with {
            $0.serverMsgUID = serverMsgUID
            $0.seq = seq
            $0.serverTimeMs = serverTimeMs
        }.serializedBytes()
    }

    /// The record a receiver gets for a message frame `body`: the sender's bytes unchanged, with
    /// `stamp` appended inside the `message` field (field 10), whose length prefix and the frame's
    /// length prefix grow to match. Protobuf lets a later occurrence of a scalar field replace an
    /// earlier one, so a reader sees the sender's message with the server's uid, seq and time set.
    /// Appending a second `message` field instead would be a repeated singular sub-message, which
    /// IMCodec refuses. Returns `nil` when `body` has no `message` field (the caller then forwards
    /// the original record).
    static func stampedRecord(body: ByteBuffer, stamp: [UInt8], allocator: ByteBufferAllocator) -> ByteBuffer? {
        body.withUnsafeReadableBytes { raw -> ByteBuffer? in
            func varint(_ i: inout Int) -> UInt64? {
                var value: UInt64 = 0
                var shift: UInt64 = 0
                while i < raw.count, shift < 64 {
                    let byte = raw[i]
                    i += 1
                    value |= UInt64(byte & 0x7F) << shift
                    if byte < 0x80 { return value }
                    shift += 7
                }
                return nil
            }
            var i = 0
            var message: (tagStart: Int, contentStart: Int, contentEnd: Int)?
            while i < raw.count {
                let tagStart = i
                guard let tag = varint(&i) else { return nil }
                switch tag & 7 {
                case 0: guard varint(&i) != nil else { return nil }
                case 1: i += 8
                case 5: i += 4
                case 2:
                    guard let length = varint(&i), length <= UInt64(raw.count - i) else { return nil }
                    if tag >> 3 == 10 { message = (tagStart, i, i + Int(length)) }
                    i += Int(length)
                default: return nil
                }
                guard i <= raw.count else { return nil }
            }
            guard let message else { return nil }
            let contentLength = message.contentEnd - message.contentStart + stamp.count
            var field = allocator.buffer(capacity: 6)
            field.writeInteger(UInt8(10 << 3 | 2))
            field.writeLengthPrefix(contentLength)
            let bodyLength = raw.count - (message.contentStart - message.tagStart) + field.readableBytes + stamp.count
            var out = allocator.buffer(capacity: bodyLength + 5)
            out.writeLengthPrefix(bodyLength)
            out.writeBytes(UnsafeRawBufferPointer(rebasing: raw[0..<message.tagStart]))
            out.writeImmutableBuffer(field)
            out.writeBytes(UnsafeRawBufferPointer(rebasing: raw[message.contentStart..<message.contentEnd]))
            out.writeBytes(stamp)
            out.writeBytes(UnsafeRawBufferPointer(rebasing: raw[message.contentEnd...]))
            return out
        }
    }

    /// Milliseconds since the Unix epoch.
    static func nowMs() -> Int64 {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        return Int64(now.tv_sec) * 1000 + Int64(now.tv_nsec) / 1_000_000
    }
}
