import IMCodec
import IMCodecTestSupport
import Testing

/// A length prefix padded to 6-10 bytes (a short length continued by `0x80` bytes): upb (Google's
/// Python), Java and Go read it, C++ and protobuf-c stop at 5 bytes. IMCodec decodes it as upb does
/// (the pre-scan counts it, imcodec_transcode shortens a known field's prefix and wraps an unknown
/// field); DifferentialTests checks the same against Google's parser on mutated fixtures. Found by
/// an audit (`52 80 80 80 80 80 00` was refused).
@Suite("A length prefix padded to 6-10 bytes is read as upb reads it")
struct PaddedLengthTests {
    /// The prefix of `length` padded to `size` bytes.
    private func padded(_ length: Int, to size: Int) -> [UInt8] {
        var bytes = Wire.varint(UInt64(length))
        precondition(bytes.count <= size)
        bytes[bytes.count - 1] |= 0x80
        bytes += [UInt8](repeating: 0x80, count: size - bytes.count - 1) + [0x00]
        return bytes
    }

    /// Field `number`, wire type 2, `payload` behind a prefix padded to `size` bytes.
    private func field(_ number: Int, _ payload: [UInt8], prefix size: Int) -> [UInt8] {
        Wire.tag(number, 2) + padded(payload.count, to: size) + payload
    }

    private let message = Message.c2cText(from: "alice", to: "bob", "hi")

    /// A frame that carries `message` and nothing else, in the shortest form.
    private var canonical: [UInt8] { Wire.field(10, message.serializedBytes()) }

    private func carried(_ frame: Frame) -> Message? {
        guard case .message(let message)? = frame.payload else { return nil }
        return message
    }

    @Test(
        "a known sub-message, string and packed field: the same value, written back in the shortest form",
        arguments: 2...10
    )
    func knownFields(size: Int) throws {
        let input = field(10, message.serializedBytes(), prefix: size)
        let frame = try Frame(serializedBytes: input)
        #expect(carried(frame) == message)
        #expect(frame.serializedBytes() == canonical)
        #expect(try WireDecoder().withView(Frame.self, input) { $0.materialize() } == frame)

        // A string inside the padded sub-message, itself padded.
        let inner = field(1, Array("c-1".utf8), prefix: size) + Wire.string(5, "alice")
        let nested = try Frame(serializedBytes: field(10, inner, prefix: size))
        #expect(carried(nested)?.clientMsgID == "c-1" && carried(nested)?.senderID == "alice")
        #expect(carried(nested)?.unknownFields.bytes.isEmpty == true)

        // Packed option ids.
        let packed = field(4, Wire.varint(1) + Wire.varint(300) + Wire.varint(7), prefix: size)
        let vote = try PollVoteEvent(serializedBytes: packed)
        #expect(vote.optionIDs == [1, 300, 7])
        #expect(vote.serializedBytes() == Wire.field(4, Wire.varint(1) + Wire.varint(300) + Wire.varint(7)))
    }

    @Test("an unknown field and a field with another wire type are written back as they came", arguments: 6...10)
    func keptFields(size: Int) throws {
        // Field 77 (unknown to Frame), and Frame.schema_version (field 1, a varint) sent as bytes,
        // each beside a message whose own prefix is padded too.
        let unknown = field(77, [1, 2, 3], prefix: size)
        let mismatched = field(1, [9], prefix: size)
        let input = unknown + field(10, message.serializedBytes(), prefix: size) + mismatched
        let frame = try Frame(serializedBytes: input)
        #expect(carried(frame) == message)
        #expect(frame.schemaVersion == 0)
        #expect(frame.unknownFields.bytes == unknown + mismatched)
        #expect(frame.serializedBytes() == canonical + unknown + mismatched)
    }

    @Test("a padded prefix where a singular sub-message occurs twice (merged)")
    func merged() throws {
        let first = Wire.string(1, "c-1")
        let second = Wire.string(5, "alice")
        let input = field(10, first, prefix: 8) + Wire.field(10, second) + field(10, [], prefix: 10)
        let frame = try Frame(serializedBytes: input)
        #expect(carried(frame)?.clientMsgID == "c-1" && carried(frame)?.senderID == "alice")
        #expect(frame.serializedBytes() == Wire.field(10, first + second))
    }

    /// A tenth byte's lowest bit is the length's 64th; its other bits lie past it, and upb and Java
    /// drop them (Go refuses them). IMCodec reads such a prefix as upb does.
    @Test("a tenth byte's bits past the 64th are dropped, as upb drops them", arguments: [0x02, 0x7E] as [UInt8])
    func tenthByte(last: UInt8) throws {
        var prefix = padded(message.serializedBytes().count, to: 10)
        prefix[9] = last
        let frame = try Frame(serializedBytes: Wire.tag(10, 2) + prefix + message.serializedBytes())
        #expect(carried(frame) == message)
        #expect(frame.serializedBytes() == canonical)
        // An unknown field with such a prefix is written back as it came.
        var unknown = Wire.tag(77, 2) + padded(3, to: 10) + [1, 2, 3]
        unknown[Wire.tag(77, 2).count + 9] = last
        let kept = try Frame(serializedBytes: canonical + unknown)
        #expect(kept.unknownFields.bytes == unknown)
        // Its lowest bit set, the length is past 2^63: refused.
        prefix[9] = last | 1
        let error = #expect(throws: IMCodecError.self) {
            try Frame(serializedBytes: Wire.tag(10, 2) + prefix + message.serializedBytes())
        }
        #expect(error?.code == .malformed && error?.reason.contains("length over 2^31-1") == true)
    }

    @Test("refused: more than 10 bytes, a length over 2^31-1, and any padded prefix when the option is off")
    func refused() throws {
        let body = message.serializedBytes()
        func failure(_ input: [UInt8], _ options: DecodingOptions = DecodingOptions()) -> IMCodecError? {
            #expect(throws: IMCodecError.self) { try Frame(serializedBytes: input, options: options) }
        }
        var error = failure([0x52] + [UInt8](repeating: 0x80, count: 10) + [0x00] + body)
        #expect(error?.code == .malformed && error?.reason.contains("length prefix longer than 10 bytes") == true)
        #expect(error?.offset == 1)
        // 2^31 in 10 bytes.
        error = failure([0x52, 0x80, 0x80, 0x80, 0x80, 0x88, 0x80, 0x80, 0x80, 0x80, 0x00])
        #expect(error?.code == .malformed && error?.reason.contains("length over 2^31-1") == true)

        let strict = DecodingOptions(acceptsLongLengthPrefixes: false)
        error = failure(field(10, body, prefix: 6), strict)
        #expect(error?.code == .malformed && error?.reason.contains("length prefix longer than 5 bytes") == true)
        error = failure(canonical + field(77, [1], prefix: 6), strict)
        #expect(error?.code == .malformed && error?.offset == canonical.count + 2)
        // Five bytes, padded, are read either way (protobuf-c reads them).
        #expect(try carried(Frame(serializedBytes: field(10, body, prefix: 5), options: strict)) == message)
    }
}
