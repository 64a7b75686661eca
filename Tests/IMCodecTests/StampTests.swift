import IMCodec
import IMCodecTestSupport
import Testing

/// ServerStamp: server-assigned fields appended to a frame's bytes, relying on merge semantics.
@Suite("Server stamping without re-encoding")
struct StampTests {
    private func bytes(_ message: some IMCodecMessage) -> [UInt8] { message.serializedBytes() }

    /// A stamp with a random subset of its fields set, every set field non-zero.
    private func randomStamp(_ random: inout RandomMessages) -> ServerStamp {
        var stamp = ServerStamp()
        if random.chance(80) { stamp.serverMsgUID = "s-\(UInt64.random(in: 1...UInt64.max, using: &random.rng))" }
        let seqs: [UInt64] = [1, 127, 128, .max, UInt64.random(in: 1...UInt64.max, using: &random.rng)]
        let times: [Int64] = [-1, .min, .max, 1_700_000_000_123]
        let statuses: [MessageStatus] = [.sent, .failed, .recalled, .unrecognized(99), .unrecognized(-3)]
        if random.chance(80) { stamp.seq = seqs.randomElement(using: &random.rng) }
        if random.chance(80) { stamp.serverTimeMs = times.randomElement(using: &random.rng) }
        if random.chance(50) { stamp.status = statuses.randomElement(using: &random.rng) }
        let timers: [UInt32] = [1, 127, 128, 86_400, .max]
        if random.chance(30) { stamp.expireAfterS = timers.randomElement(using: &random.rng) }
        if random.chance(30) { stamp.expireAtMs = times.randomElement(using: &random.rng) }
        return stamp
    }

    private func code(_ body: () throws(IMCodecError) -> Void) -> IMCodecError.Code? {
        do {
            try body()
            return nil
        } catch {
            return error.code
        }
    }

    @Test("random frames: every decoding path sees the original frame with the stamped fields set")
    func randomFrames() throws {
        var random = RandomMessages(seed: 1010)
        let decoder = WireDecoder()
        var stamped = 0
        for _ in 0..<400 {
            let original = random.frame(messagePercent: 100)
            let input = bytes(original)
            let stamp = randomStamp(&random)
            var expected = original
            try stamp.apply(to: &expected)
            if stamp.serverMsgUID != nil || stamp.seq != nil || stamp.serverTimeMs != nil || stamp.status != nil
                || stamp.expireAfterS != nil || stamp.expireAtMs != nil
            {
                stamped += 1
            }

            let output = try stamp.applied(to: input, decoder: decoder)
            // The sender's bytes are untouched, and what follows them is the stamp's canonical frame.
            #expect(Array(output.prefix(input.count)) == input)
            #expect(Array(output.dropFirst(input.count)) == bytes(stamp.frame))
            // The in-place form and the one-shot form write the same bytes.
            var inPlace = input
            try stamp.apply(to: &inPlace, decoder: decoder)
            #expect(inPlace == output)
            #expect(try stamp.applied(to: input[...]) == output)

            let decoded = try Frame(serializedBytes: output)
            #expect(decoded == expected)
            #expect(try decoder.decode(Frame.self, from: output) == expected)
            let view = try decoder.withFrameView(output) { view in
                (view.materialize(), view.serverMsgUID, view.seq, view.payloadKind, view.senderID)
            }
            #expect(view.0 == expected)
            guard case .message(let message)? = expected.payload else {
                Issue.record("a random message frame has no message")
                continue
            }
            #expect(view.1 == message.serverMsgUID && view.2 == message.seq && view.3 == .message)
            #expect(view.4 == message.senderID)
            // Re-encoding the decoded frame gives the canonical bytes of the modified value.
            #expect(bytes(decoded) == bytes(expected))
            // merge(serializedBytes:) of the stamp gives the same value.
            var merged = original
            try merged.merge(serializedBytes: bytes(stamp.frame))
            #expect(merged == expected)
        }
        #expect(stamped > 300)
    }

    @Test("Google's parser reads a stamped frame as IMCodec does (protoc decode, deterministic encode)")
    func googleAgrees() throws {
        var random = RandomMessages(seed: 77)
        for _ in 0..<12 {
            let original = Frame(.message(random.message(depth: 1)))
            let stamp = ServerStamp(
                serverMsgUID: "srv-\(random.string())",
                seq: 9,
                serverTimeMs: 1_700_000_000_000,
                status: .sent,
                expireAfterS: 86_400,
                expireAtMs: 1_700_086_400_000
            )
            let output = try stamp.applied(to: bytes(original))
            var expected = original
            try stamp.apply(to: &expected)
            #expect(try Protoc.reencode(output) == bytes(expected))
        }
    }

    @Test("a frame whose payload is not a message is refused, and the bytes are left as they were")
    func otherPayloads() throws {
        var random = RandomMessages(seed: 5)
        let stamp = ServerStamp(serverMsgUID: "s-1", seq: 1, serverTimeMs: 2)
        let decoder = WireDecoder()
        var refused = 0
        for _ in 0..<200 {
            let frame = random.frame(messagePercent: 0)
            var input = bytes(frame)
            let before = input
            let error = #expect(throws: IMCodecError.self) { try stamp.apply(to: &input, decoder: decoder) }
            #expect(error?.code == .payloadMismatch)
            #expect(input == before)
            #expect(code { () throws(IMCodecError) in _ = try stamp.applied(to: before) } == .payloadMismatch)
            var value = frame
            #expect(code { () throws(IMCodecError) in try stamp.apply(to: &value) } == .payloadMismatch)
            #expect(value == frame)
            refused += 1
        }
        #expect(refused == 200)
        // Why: appended blindly, the stamp's message would replace the receipt.
        let receipt = Frame(
            .receipt(
                .with {
                    $0.kind = .read; $0.userID = "r"
                }
            )
        )
        #expect(try Frame(serializedBytes: bytes(receipt) + bytes(stamp.frame)).payload == stamp.frame.payload)
        // The payload that counts is the last member: message then receipt is a receipt (refused);
        // receipt then message is a message (stamped, the receipt is gone as in any parser).
        let message = Frame(
            .message(
                .with {
                    $0.clientMsgID = "c"; $0.seq = 5
                }
            )
        )
        let messageThenReceipt = bytes(message) + bytes(receipt)
        #expect(code { () throws(IMCodecError) in _ = try stamp.applied(to: messageThenReceipt) } == .payloadMismatch)
        let replaced = try stamp.applied(to: bytes(receipt) + bytes(message))
        #expect(
            try Frame(serializedBytes: replaced).payload
                == .message(
                    .with {
                        $0.clientMsgID = "c"; $0.seq = 1; $0.serverMsgUID = "s-1"; $0.serverTimeMs = 2
                    }
                )
        )
        // An empty frame has no payload.
        #expect(code { () throws(IMCodecError) in _ = try stamp.applied(to: [UInt8]()) } == .payloadMismatch)
    }

    @Test("the last value wins: a stamp replaces what the sender wrote; nil fields keep it; stamping twice")
    func lastValueWins() throws {
        let sent = Frame(
            .message(
                .with {
                    $0.clientMsgID = "c-1"; $0.serverMsgUID = "spoofed"; $0.seq = 999; $0.serverTimeMs = 5;
                    $0.status = .sending
                    $0.senderID = "alice"; $0.elements = [.text("hi")]
                }
            )
        )
        let first = ServerStamp(serverMsgUID: "srv-1", seq: 42)
        let once = try first.applied(to: bytes(sent))
        guard case .message(let message)? = try Frame(serializedBytes: once).payload else {
            Issue.record("no message")
            return
        }
        #expect(message.serverMsgUID == "srv-1" && message.seq == 42)
        // Fields the stamp leaves nil keep the sender's values.
        #expect(message.serverTimeMs == 5 && message.status == .sending && message.clientMsgID == "c-1")
        #expect(message.elements == [.text("hi")])
        // A second stamp wins over the first.
        let twice = try ServerStamp(seq: 43, serverTimeMs: 6, status: .sent).applied(to: once)
        guard case .message(let again)? = try Frame(serializedBytes: twice).payload else {
            Issue.record("no message")
            return
        }
        #expect(again.serverMsgUID == "srv-1" && again.seq == 43 && again.serverTimeMs == 6 && again.status == .sent)
        // The stamp sets only message fields: the sender's schema versions stay.
        let versions = Frame.with {
            $0.schemaVersion = 7; $0.minReaderVersion = 2; $0.payload = sent.payload
        }
        #expect(try Frame(serializedBytes: first.applied(to: bytes(versions))).schemaVersion == 7)
        #expect(try Frame(serializedBytes: first.applied(to: bytes(versions))).minReaderVersion == 2)
        // An empty stamp appends an empty message: the frame decodes unchanged.
        #expect(try Frame(serializedBytes: ServerStamp().applied(to: bytes(sent))) == sent)
    }

    @Test("the in-place form appends to the array's own storage when it has room (no copy of the frame)")
    func inPlaceKeepsStorage() throws {
        var bytes = self.bytes(
            Frame(
                .message(
                    .with {
                        $0.senderID = "alice"; $0.elements = [.text("hi")]
                    }
                )
            )
        )
        let sent = bytes
        bytes.reserveCapacity(bytes.count + 256)
        let before = bytes.withUnsafeBufferPointer { $0.baseAddress }
        let stamp = ServerStamp(serverMsgUID: "srv-1", seq: 42, serverTimeMs: 1_700_000_000_123, status: .sent)
        try stamp.apply(to: &bytes, decoder: WireDecoder())
        #expect(bytes.withUnsafeBufferPointer { $0.baseAddress } == before)
        #expect(bytes == sent + self.bytes(stamp.frame))
    }

    @Test("zero values cannot be appended: stamping one throws invalidArgument and changes nothing")
    func zeroValues() throws {
        let sent = Frame(
            .message(
                .with {
                    $0.serverMsgUID = "x"; $0.seq = 7; $0.serverTimeMs = 8; $0.status = .sent
                }
            )
        )
        let zeros = [
            ServerStamp(serverMsgUID: ""), ServerStamp(seq: 0), ServerStamp(serverTimeMs: 0),
            ServerStamp(status: .unspecified), ServerStamp(status: .unrecognized(0)),
            ServerStamp(serverMsgUID: "ok", seq: 0), ServerStamp(expireAtMs: 0),
            ServerStamp(expireAfterS: 0),
        ]
        for stamp in zeros {
            #expect(code { () throws(IMCodecError) in try stamp.check() } == .invalidArgument)
            var input = bytes(sent)
            #expect(code { () throws(IMCodecError) in try stamp.apply(to: &input) } == .invalidArgument)
            #expect(input == bytes(sent))
            var value = sent
            #expect(code { () throws(IMCodecError) in try stamp.apply(to: &value) } == .invalidArgument)
            #expect(value == sent)
        }
        // The reason: canonical encoding leaves a zero out, so nothing would override the 7.
        #expect(bytes(ServerStamp(serverMsgUID: "s", seq: 0).frame) == Wire.field(10, Wire.field(2, Array("s".utf8))))
    }

    @Test("a disappearing message expires expire_after_s after the server time; other messages get no expiry")
    func expiry() {
        #expect(ServerStamp.expiry(serverTimeMs: 1_700_000_000_123, expireAfterS: 60) == 1_700_000_060_123)
        #expect(ServerStamp.expiry(serverTimeMs: 1_700_000_000_123, expireAfterS: 0) == nil)
        #expect(ServerStamp.expiry(serverTimeMs: .max - 5, expireAfterS: 1) == .max)
        #expect(ServerStamp.expiry(serverTimeMs: -60_000, expireAfterS: 60) == nil)  // 0 cannot be stamped.
        #expect(ServerStamp.expiry(serverTimeMs: 0, expireAfterS: .max) == Int64(UInt32.max) * 1000)
    }

    @Test("hostile input fails with the error decoding gives, before anything is appended")
    func hostileInput() throws {
        let valid = bytes(
            Frame(
                .message(
                    .with {
                        $0.senderID = "alice"; $0.elements = [.text("hi")]
                    }
                )
            )
        )
        let stamp = ServerStamp(serverMsgUID: "s", seq: 1)
        let cases: [(String, [UInt8], DecodingOptions)] = [
            ("truncated", Array(valid.dropLast()), DecodingOptions()),
            ("field number 0", [0x00, 0x01] + valid, DecodingOptions()),
            ("group wire type", valid + [0x0B], DecodingOptions()),
            ("invalid UTF-8", Wire.field(10, Wire.field(5, [0xC0, 0x80])), DecodingOptions()),
            ("too deep", Wire.nestingBomb(levels: 40), DecodingOptions(maxDepth: 30)),
            ("too many fields", valid, DecodingOptions(maxFieldCount: 2)),
            ("too large", valid, DecodingOptions(maxInputSize: valid.count - 1)),
            ("memory", valid, DecodingOptions(maxDecodedMemory: 16)),
            ("length past the end", [0x52, 0x7F] + Array(repeating: 0, count: 10), DecodingOptions()),
        ]
        var usableAfterwards = 0
        for (name, input, options) in cases {
            let expected = code { () throws(IMCodecError) in _ = try Frame(serializedBytes: input, options: options) }
            #expect(expected != nil, "\(name) decodes")
            var stamped = input
            let inPlace = code { () throws(IMCodecError) in try stamp.apply(to: &stamped, options: options) }
            #expect(inPlace == expected, "\(name)")
            #expect(stamped == input, "\(name)")
            let decoder = WireDecoder(options: options)
            let copied = code { () throws(IMCodecError) in _ = try stamp.applied(to: input, decoder: decoder) }
            #expect(copied == expected, "\(name)")
            // The decoder that refused the input still stamps a valid frame (when its limits admit one).
            if code({ () throws(IMCodecError) in _ = try Frame(serializedBytes: valid, options: options) }) == nil {
                #expect(try stamp.applied(to: valid, decoder: decoder) == valid + bytes(stamp.frame), "\(name)")
                usableAfterwards += 1
            }
        }
        #expect(usableAfterwards >= 5)
        // Input that needs IMCodec's rewriting (a repeated message, a wire-type mismatch) is stamped too.
        let repeated = valid + bytes(Frame(.message(.with { $0.seq = 3 })))
        let mismatch = valid + Wire.field(10, Wire.tag(1, 0) + [5])
        for input in [repeated, mismatch] {
            var expected = try Frame(serializedBytes: input)
            try stamp.apply(to: &expected)
            #expect(try Frame(serializedBytes: stamp.applied(to: input)) == expected)
        }
    }

    @Test("the stamped frame stays within the limits it was checked with")
    func outputLimits() throws {
        let input = bytes(
            Frame(
                .message(
                    .with {
                        $0.senderID = "alice"; $0.elements = [.text("hi")]
                    }
                )
            )
        )
        let stamp = ServerStamp(serverMsgUID: "srv-1", seq: 42, serverTimeMs: 1_700_000_000_123)
        let stampSize = bytes(stamp.frame).count
        // Size: a frame that fits only without the stamp.
        let tight = DecodingOptions(maxInputSize: input.count + stampSize - 1)
        var bytes = input
        #expect(code { () throws(IMCodecError) in try stamp.apply(to: &bytes, options: tight) } == .tooLarge)
        #expect(bytes == input)
        let exact = DecodingOptions(maxInputSize: input.count + stampSize)
        try stamp.apply(to: &bytes, options: exact)
        #expect(bytes.count == exact.maxInputSize)
        var expected = try Frame(serializedBytes: input)
        try stamp.apply(to: &expected)
        #expect(try Frame(serializedBytes: bytes, options: exact) == expected)
        // Fields: the input's plus Frame.message and the three stamped fields.
        // schema_version, min_reader_version, message, sender_id, elements, MessageElement.text, TextElement.text
        let inputFields = 7
        #expect(
            code { () throws(IMCodecError) in
                _ = try Frame(serializedBytes: input, options: DecodingOptions(maxFieldCount: inputFields - 1))
            } == .tooManyFields
        )
        #expect(
            code { () throws(IMCodecError) in
                _ = try stamp.applied(to: input, options: DecodingOptions(maxFieldCount: inputFields + 3))
            } == .tooManyFields
        )
        let fits = DecodingOptions(maxFieldCount: inputFields + 4)
        let stamped = try stamp.applied(to: input, options: fits)
        #expect(code { () throws(IMCodecError) in _ = try Frame(serializedBytes: stamped, options: fits) } == nil)
    }

    @Test("the send ack carries the stamp's uid, seq and time")
    func sendAck() {
        let conversation = Conversation.with {
            $0.type = .group; $0.targetID = "team"
        }
        let stamp = ServerStamp(serverMsgUID: "srv-7", seq: 3, serverTimeMs: 99, status: .sent)
        #expect(
            stamp.sendAck(clientMsgID: "c-7", conversation: conversation)
                == SendAck.with {
                    $0.clientMsgID = "c-7"; $0.serverMsgUID = "srv-7"; $0.seq = 3; $0.serverTimeMs = 99
                    $0.conversation = conversation
                }
        )
        let partial = ServerStamp(seq: 4).sendAck(clientMsgID: "c", conversation: nil)
        #expect(
            partial
                == SendAck.with {
                    $0.clientMsgID = "c"; $0.seq = 4
                }
        )
    }
}
