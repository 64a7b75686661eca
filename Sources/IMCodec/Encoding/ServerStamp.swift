/// The fields a server assigns to a message it accepts (its uid, the conversation's sequence
/// number, the server time, a status, a disappearing message's timer and when it expires), added
/// to a received frame's bytes without decoding and re-encoding them.
///
/// Protobuf parsing is merging: a singular sub-message that occurs again is merged into the first
/// occurrence, and in the merged message the last value of a scalar wins. So appending the
/// canonical encoding of `Frame{message: Message{server_msg_uid, seq, server_time_ms, status,
/// expire_after_s, expire_at_ms}}` to a frame whose payload is a message gives a frame that every conforming parser (IMCodec's and
/// Google's) decodes to the sender's frame with the stamped fields set, and the sender's bytes are
/// forwarded untouched:
///
/// ```swift
/// let stamp = ServerStamp(serverMsgUID: "s-1842", seq: 42, serverTimeMs: 1_700_000_000_123)
/// var bytes = receivedFrameBytes
/// try stamp.apply(to: &bytes, decoder: decoder)   // checks, then appends a few dozen bytes
/// ```
///
/// Rules that follow from the wire format:
/// - Only a frame whose payload is `message` can be stamped. `payload` is a oneof, and a `message`
///   appended to a frame with another member would *replace* that payload, so stamping checks the
///   payload first and throws ``IMCodecError/Code/payloadMismatch`` for any other frame.
/// - A field that is `nil` is not stamped: the frame keeps what the sender wrote.
/// - A stamped value replaces what the frame already holds (the last value wins), so a client
///   cannot spoof a server uid or seq that survives stamping.
/// - Proto3 does not write zero values (`0`, `""`, ``MessageStatus/unspecified``), so a zero
///   cannot override anything by appending: stamping a zero throws
///   ``IMCodecError/Code/invalidArgument`` instead of leaving the sender's value in place unnoticed.
///
/// The receiver decodes a stamped frame on IMCodec's merge path (the repeated `message` field is
/// merged before protobuf-c runs), which costs noticeably more than decoding the unstamped frame
/// (Benchmarks/README.md: `imcodec decode, stamped messages`); the canonical re-encoding of the
/// decoded value has a single `message` field again.
public struct ServerStamp: Sendable, Hashable {
    /// `Message.server_msg_uid`, the id the server assigned, or `nil` to leave it as it is.
    public var serverMsgUID: String?
    /// `Message.seq`, the per-conversation sequence number, or `nil` to leave it as it is.
    public var seq: UInt64?
    /// `Message.server_time_ms`, when the server accepted the message (milliseconds since the Unix
    /// epoch), or `nil` to leave it as it is.
    public var serverTimeMs: Int64?
    /// `Message.status`, or `nil` to leave it as it is.
    public var status: MessageStatus?
    /// `Message.expire_after_s`, the disappearing timer the message was sent under, or `nil` to
    /// leave it as it is: a server that enforces a conversation's timer (events.proto
    /// `DisappearingTimerEvent`) stamps it over what the sender wrote.
    public var expireAfterS: UInt32?
    /// `Message.expire_at_ms`, when receivers delete a disappearing message (the server time plus
    /// `expire_after_s`; see ``expiry(serverTimeMs:expireAfterS:)``), or `nil` to leave it as it is.
    public var expireAtMs: Int64?

    /// Creates a stamp; the fields left `nil` are not stamped.
    /// - Parameters:
    ///   - serverMsgUID: The id the server assigned (not empty).
    ///   - seq: The per-conversation sequence number (not 0).
    ///   - serverTimeMs: The server time in milliseconds since the Unix epoch (not 0).
    ///   - status: The message's status (not ``MessageStatus/unspecified``).
    ///   - expireAfterS: The disappearing timer the message was sent under (not 0).
    ///   - expireAtMs: When receivers delete a disappearing message (not 0).
    public init(
        serverMsgUID: String? = nil,
        seq: UInt64? = nil,
        serverTimeMs: Int64? = nil,
        status: MessageStatus? = nil,
        expireAfterS: UInt32? = nil,
        expireAtMs: Int64? = nil
    ) {
        self.serverMsgUID = serverMsgUID
        self.seq = seq
        self.serverTimeMs = serverTimeMs
        self.status = status
        self.expireAfterS = expireAfterS
        self.expireAtMs = expireAtMs
    }

    /// The `expire_at_ms` of a message with `expire_after_s` accepted at `serverTimeMs`, or `nil`
    /// for a message that does not disappear (`expireAfterS` 0) (message.proto: "set by the server
    /// from server_time_ms + expire_after_s"). Saturates instead of overflowing.
    public static func expiry(serverTimeMs: Int64, expireAfterS: UInt32) -> Int64? {
        guard expireAfterS > 0 else { return nil }
        let (sum, overflow) = serverTimeMs.addingReportingOverflow(Int64(expireAfterS) * 1000)
        let expiry = overflow ? Int64.max : sum
        return expiry == 0 ? nil : expiry
    }

    /// The number of fields the appended bytes hold, as the pre-scan counts them: `Frame.message`
    /// and each stamped field in it.
    var stampFieldCount: Int {
        var count = 1
        if serverMsgUID != nil { count += 1 }
        if seq != nil { count += 1 }
        if serverTimeMs != nil { count += 1 }
        if status != nil { count += 1 }
        if expireAfterS != nil { count += 1 }
        if expireAtMs != nil { count += 1 }
        return count
    }

    /// The `Message` holding exactly the stamped fields (every other field at its default).
    public var message: Message {
        var message = Message()
        if let serverMsgUID { message.serverMsgUID = serverMsgUID }
        if let seq { message.seq = seq }
        if let serverTimeMs { message.serverTimeMs = serverTimeMs }
        if let status { message.status = status }
        if let expireAfterS { message.expireAfterS = expireAfterS }
        if let expireAtMs { message.expireAtMs = expireAtMs }
        return message
    }

    /// The frame whose canonical encoding ``apply(to:decoder:)`` appends: a `Frame` whose payload
    /// is ``message`` (and nothing else: `schema_version` and `min_reader_version` stay the
    /// sender's).
    public var frame: Frame {
        // Not `Frame(_:)`, which also sets the schema versions: appended, they would overwrite the
        // sender's.
        var frame = Frame()
        frame.payload = .message(message)
        return frame
    }

    /// Throws when a field is set to a value that appending cannot express.
    /// - Throws: ``IMCodecError`` `invalidArgument` naming the first field set to a proto3 zero value.
    public func check() throws(IMCodecError) {
        if serverMsgUID?.isEmpty == true { throw Self.zero("serverMsgUID", "\"\"") }
        if seq == 0 { throw Self.zero("seq", "0") }
        if serverTimeMs == 0 { throw Self.zero("serverTimeMs", "0") }
        if status?.rawValue == 0 { throw Self.zero("status", ".unspecified") }
        if expireAfterS == 0 { throw Self.zero("expireAfterS", "0") }
        if expireAtMs == 0 { throw Self.zero("expireAtMs", "0") }
    }

    private static func zero(_ field: String, _ value: String) -> IMCodecError {
        .invalidArgument(
            "ServerStamp.\(field) is \(value): proto3 does not write zero values, so appending cannot set it; "
                + "leave the field nil to keep the frame's value"
        )
    }

    /// Sets the stamped fields in a decoded message: what decoding a stamped frame gives, for
    /// code that holds values rather than bytes.
    /// - Parameters:
    ///   - message: The message to stamp.
    /// - Throws: ``IMCodecError`` `invalidArgument` when a field is set to a zero value (see ``check()``).
    public func apply(to message: inout Message) throws(IMCodecError) {
        try check()
        if let serverMsgUID { message.serverMsgUID = serverMsgUID }
        if let seq { message.seq = seq }
        if let serverTimeMs { message.serverTimeMs = serverTimeMs }
        if let status { message.status = status }
        if let expireAfterS { message.expireAfterS = expireAfterS }
        if let expireAtMs { message.expireAtMs = expireAtMs }
    }

    /// Sets the stamped fields in a decoded frame's message.
    /// - Parameters:
    ///   - frame: The frame to stamp; its payload must be a message.
    /// - Throws: ``IMCodecError`` `payloadMismatch` when the frame's payload is not a message,
    ///   `invalidArgument` when a field is set to a zero value; the frame is unchanged then.
    public func apply(to frame: inout Frame) throws(IMCodecError) {
        guard case .message(var message)? = frame.payload else { throw Self.mismatch(frame.payload?.kind) }
        try apply(to: &message)
        frame.payload = .message(message)
    }

    /// Checks a frame's bytes and lends `body` the bytes to append to them (the canonical encoding
    /// of ``frame``), for callers that write the stamped frame somewhere else (a NIO `ByteBuffer`).
    ///
    /// The frame is checked exactly as decoding it with `decoder` would be (every limit of its
    /// ``WireDecoder/options``, and protobuf-c unpacks it into the decoder's arena); then its
    /// payload must be a message; then the stamped frame must still fit the same limits: at most
    /// `maxInputSize` bytes and `maxFieldCount` fields.
    /// - Parameters:
    ///   - frame: The received frame's bytes.
    ///   - decoder: The decoder whose limits and arena the check uses.
    ///   - body: Receives the bytes to append; they are valid only during the call.
    /// - Returns: What `body` returns.
    /// - Throws: ``IMCodecError``: the decoding error of `frame`; `payloadMismatch` when its payload
    ///   is not a message; `tooLarge` or `tooManyFields` when the stamped frame would pass a limit;
    ///   `invalidArgument` when a field is set to a zero value. `body` is not called then.
    public func withBytesToAppend<R>(
        to frame: UnsafeRawBufferPointer,
        decoder: WireDecoder,
        _ body: (UnsafeRawBufferPointer) -> R
    ) throws(IMCodecError) -> R {
        try withEncoded { (writer) throws(IMCodecError) -> R in
            try checkFrame(frame, stampSize: writer.count, decoder: decoder)
            return writer.withBytes(body)
        }
    }

    /// Stamps a received frame's bytes in place by appending the stamp (see ``ServerStamp``);
    /// the bytes already there are not copied unless the array must grow.
    /// - Parameters:
    ///   - frame: The frame's bytes; on success the stamp is appended to them.
    ///   - decoder: The decoder whose limits and arena the check uses (one per thread or connection).
    /// - Throws: ``IMCodecError``: the decoding error of `frame`; `payloadMismatch` when its payload
    ///   is not a message; `tooLarge` or `tooManyFields` when the stamped frame would pass a limit;
    ///   `invalidArgument` when a field is set to a zero value. `frame` is unchanged then.
    public func apply(to frame: inout [UInt8], decoder: WireDecoder) throws(IMCodecError) {
        try withEncoded { (writer) throws(IMCodecError) in
            try withContiguousBytes(frame) { (raw) throws(IMCodecError) in
                try checkFrame(raw, stampSize: writer.count, decoder: decoder)
            }
            writer.withBytes { frame.append(contentsOf: $0) }
        }
    }

    /// Checks the stamp's fields, encodes ``frame`` into a stack buffer (no allocation: a stamp is
    /// a few dozen bytes) and lends `body` the writer holding it.
    private func withEncoded<R>(_ body: (borrowing _WireWriter) throws(IMCodecError) -> R) throws(IMCodecError) -> R {
        try check()
        return try withUnsafeTemporaryAllocation(byteCount: 256, alignment: 16) { (scratch) throws(IMCodecError) -> R in
            var writer = _WireWriter(scratch: scratch)
            encode(to: &writer)
            return try body(writer)
        }
    }

    /// Writes the canonical encoding of ``frame`` without building the values: what the generated
    /// `Frame._encode` writes for it (StampTests compares the two), back to front as every encoder
    /// does (see ``_WireWriter``): `Message` fields 36, 35, 10, 8, 3, 2, then the `Frame.message` length
    /// and tag. Call it only after ``check()``: zero values would be written here.
    private func encode(to writer: inout _WireWriter) {
        if let expireAtMs {
            writer.writeVarint(UInt64(bitPattern: expireAtMs))
            writer.writeVarint(WireFormat.tag(36, 0))
        }
        if let expireAfterS {
            writer.writeVarint(UInt64(expireAfterS))
            writer.writeVarint(WireFormat.tag(35, 0))
        }
        if let status {
            writer.writeVarint(UInt64(bitPattern: Int64(status.rawValue)))
            writer.writeVarint(WireFormat.tag(10, 0))
        }
        if let serverTimeMs {
            writer.writeVarint(UInt64(bitPattern: serverTimeMs))
            writer.writeVarint(WireFormat.tag(8, 0))
        }
        if let seq {
            writer.writeVarint(seq)
            writer.writeVarint(WireFormat.tag(3, 0))
        }
        if let serverMsgUID {
            writer.writeString(serverMsgUID)
            writer.writeVarint(WireFormat.tag(2, 2))
        }
        writer.writeVarint(UInt64(writer.count))
        writer.writeVarint(WireFormat.tag(10, 2))
    }

    /// Checks `frame` as decoding it with `decoder` would, that its payload is a message, and that
    /// the frame stamped with `stampSize` bytes of ``stampFieldCount`` fields stays within the
    /// decoder's size and field limits.
    private func checkFrame(
        _ frame: UnsafeRawBufferPointer,
        stampSize: Int,
        decoder: WireDecoder
    ) throws(IMCodecError) {
        let (kind, fieldCount) = try decoder.withCheckedFrame(frame) { view, count in (view.payloadKind, count) }
        guard kind == .message else { throw Self.mismatch(kind) }
        let options = decoder.options
        guard frame.count + stampSize <= options.maxInputSize else {
            throw .tooLarge(
                "the stamped frame would be \(frame.count + stampSize) bytes; the limit (maxInputSize) is "
                    + "\(options.maxInputSize)"
            )
        }
        guard fieldCount + stampFieldCount <= options.maxFieldCount else {
            throw IMCodecError(
                code: .tooManyFields,
                reason: "the stamped frame would hold \(fieldCount + stampFieldCount) fields; the limit "
                    + "(maxFieldCount) is \(options.maxFieldCount)"
            )
        }
    }

    /// Stamps a received frame's bytes in place, with a decoder made for the call (see
    /// ``apply(to:decoder:)``; a server should reuse a ``WireDecoder``).
    /// - Parameters:
    ///   - frame: The frame's bytes; on success the stamp is appended to them.
    ///   - options: The limits `frame` is checked against, as when decoding it.
    /// - Throws: ``IMCodecError``, as ``apply(to:decoder:)``; `frame` is unchanged then.
    public func apply(to frame: inout [UInt8], options: DecodingOptions = DecodingOptions()) throws(IMCodecError) {
        try apply(to: &frame, decoder: WireDecoder(options: options, arenaBlockSize: 0))
    }

    /// Returns a received frame's bytes with the stamp appended (see ``ServerStamp``).
    /// - Parameters:
    ///   - frame: The frame's bytes (`[UInt8]`, `Data`, `ArraySlice<UInt8>`, ...).
    ///   - decoder: The decoder whose limits and arena the check uses (one per thread or connection).
    /// - Returns: `frame` followed by the canonical encoding of ``frame``.
    /// - Throws: ``IMCodecError``, as ``apply(to:decoder:)``.
    public func applied<Bytes: Collection>(to frame: Bytes, decoder: WireDecoder) throws(IMCodecError) -> [UInt8]
    where Bytes.Element == UInt8 {
        try withContiguousBytes(frame) { (raw) throws(IMCodecError) -> [UInt8] in
            try withBytesToAppend(to: raw, decoder: decoder) { stamp in
                var out = [UInt8]()
                out.reserveCapacity(raw.count + stamp.count)
                out.append(contentsOf: raw)
                out.append(contentsOf: stamp)
                return out
            }
        }
    }

    /// Returns a received frame's bytes with the stamp appended, checked with a decoder made for
    /// the call (see ``applied(to:decoder:)``).
    /// - Parameters:
    ///   - frame: The frame's bytes.
    ///   - options: The limits `frame` is checked against, as when decoding it.
    /// - Returns: `frame` followed by the canonical encoding of ``frame``.
    /// - Throws: ``IMCodecError``, as ``apply(to:decoder:)``.
    public func applied<Bytes: Collection>(
        to frame: Bytes,
        options: DecodingOptions = DecodingOptions()
    )
        throws(IMCodecError) -> [UInt8] where Bytes.Element == UInt8
    {
        try applied(to: frame, decoder: WireDecoder(options: options, arenaBlockSize: 0))
    }

    /// The send ack that answers the stamped message: its client id and conversation, and the
    /// stamp's uid, seq and server time (the fields left `nil` stay unset).
    /// - Parameters:
    ///   - clientMsgID: The sender's `client_msg_id`.
    ///   - conversation: The message's conversation.
    /// - Returns: A successful `SendAck` (error code 0).
    public func sendAck(clientMsgID: String, conversation: Conversation?) -> SendAck {
        var ack = SendAck()
        ack.clientMsgID = clientMsgID
        ack.conversation = conversation
        if let serverMsgUID { ack.serverMsgUID = serverMsgUID }
        if let seq { ack.seq = seq }
        if let serverTimeMs { ack.serverTimeMs = serverTimeMs }
        return ack
    }

    private static func mismatch(_ kind: Frame.Payload.Kind?) -> IMCodecError {
        IMCodecError(
            code: .payloadMismatch,
            reason: "only a frame whose payload is a message can be stamped; this one "
                + (kind.map { "carries \($0.protoName)" } ?? "has no payload")
                + " (appending a message would replace it)"
        )
    }
}
