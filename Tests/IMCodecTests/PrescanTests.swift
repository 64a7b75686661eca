// Tests of imcodec_prescan and imcodec_utf8_valid (Sources/CIMCodecRuntime/prescan.c).
//
// Every input is built by hand from tags and varints, so each expected offset can be read off
// the bytes. Offsets follow prescan.c: a tag problem is reported at the tag's first byte, a value
// problem at the first byte after the tag, bad UTF-8 at the lead byte of the bad sequence.
import CIMCodecRuntime
import CIMCodecSchemas
import CProtobufC
import IMCodecTestSupport
import Testing

private typealias Descriptor = UnsafePointer<ProtobufCMessageDescriptor>

/// The real descriptor of a generated message: its init function stores it in `base.descriptor`.
private func descriptor<T>(_ type: T.Type, _ initialize: (UnsafeMutablePointer<T>?) -> Void) -> Descriptor {
    let scratch = UnsafeMutablePointer<T>.allocate(capacity: 1)
    defer { scratch.deallocate() }
    initialize(scratch)
    return UnsafeRawPointer(scratch).load(as: Descriptor.self)
}

nonisolated(unsafe) private let frameDescriptor = descriptor(Imcodec__V1__Frame.self, imcodec__v1__frame__init)
nonisolated(unsafe) private let messageDescriptor = descriptor(Imcodec__V1__Message.self, imcodec__v1__message__init)

private func scan(
    _ d: Descriptor,
    _ bytes: [UInt8],
    maxDepth: UInt32 = 100,
    maxFields: Int = 1_000_000
) -> imcodec_scan_result {
    bytes.withUnsafeBufferPointer { imcodec_prescan(d, $0.baseAddress, $0.count, maxDepth, maxFields) }
}

private func name(_ r: imcodec_scan_result) -> String? { r.message_name.map { String(cString: $0) } }
private func detail(_ r: imcodec_scan_result) -> String? { r.detail.map { String(cString: $0) } }

/// Checks status, offset, and optionally field number and message name of a failed scan.
private func expectScan(
    _ r: imcodec_scan_result,
    _ status: imcodec_scan_status,
    at offset: Int,
    field: UInt32? = nil,
    message: String? = nil,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(
        r.status == status,
        "status \(r.status.rawValue), detail \(detail(r) ?? "nil")",
        sourceLocation: sourceLocation
    )
    #expect(r.offset == offset, "detail \(detail(r) ?? "nil")", sourceLocation: sourceLocation)
    if let field { #expect(r.field_number == field, sourceLocation: sourceLocation) }
    if let message { #expect(name(r) == message, sourceLocation: sourceLocation) }
    if status != IMCODEC_SCAN_OK {
        #expect(r.detail != nil, sourceLocation: sourceLocation)
    }
}

/// Frame { message: Message { client_msg_id: <raw> } }, and the offset of <raw> in it.
private func frameWithClientMsgID(_ raw: [UInt8]) -> (bytes: [UInt8], payloadAt: Int) {
    let bytes = Wire.field(10, Wire.field(1, raw))
    return (bytes, bytes.count - raw.count)
}

/// Frame { message: Message { custom_params: { key: <key>, value: <value> } } }.
private func frameWithCustomParam(key: [UInt8], value: [UInt8]) -> [UInt8] {
    Wire.field(10, Wire.field(16, Wire.field(1, key) + Wire.field(2, value)))
}

// MARK: - Depth chains

/// Frame.message(10) -> Message.elements(20) -> MessageElement.merger(10) -> MergerElement.messages(4)
/// -> Message.elements(20) -> ...: `levels` nested messages in all (the Frame is level 1), the
/// innermost empty. Built front to back in O(levels) from precomputed sizes.
private struct DepthChain {
    var bytes: [UInt8] = []
    /// tagOffsets[k] is the offset of the tag that enters level k + 2 (from level k + 1).
    var tagOffsets: [Int] = []

    static let names = ["imcodec.v1.Message", "imcodec.v1.MessageElement", "imcodec.v1.MergerElement"]

    /// The tag leaving level `level` (1-based) for the next one.
    static func tag(leaving level: Int) -> [UInt8] {
        if level == 1 { return Wire.tag(10, 2) }
        switch (level - 2) % 3 {
        case 0: return Wire.tag(20, 2)  // Message.elements
        case 1: return Wire.tag(10, 2)  // MessageElement.merger
        default: return Wire.tag(4, 2)  // MergerElement.messages
        }
    }

    static func field(leaving level: Int) -> UInt32 {
        if level == 1 { return 10 }
        return [20, 10, 4][(level - 2) % 3]
    }

    static func name(of level: Int) -> String {
        level == 1 ? "imcodec.v1.Frame" : names[(level - 2) % 3]
    }

    init(levels: Int) {
        // contentSize[k]: bytes inside level k + 1 (0-based k); the innermost is empty.
        var contentSize = [Int](repeating: 0, count: levels)
        if levels >= 2 {
            for k in stride(from: levels - 2, through: 0, by: -1) {
                let child = contentSize[k + 1]
                contentSize[k] = Self.tag(leaving: k + 1).count + Wire.varint(UInt64(child)).count + child
            }
        }
        bytes.reserveCapacity(contentSize[0])
        tagOffsets.reserveCapacity(levels)
        for k in 0..<(levels - 1) {
            tagOffsets.append(bytes.count)
            bytes += Self.tag(leaving: k + 1)
            bytes += Wire.varint(UInt64(contentSize[k + 1]))
        }
        precondition(bytes.count == contentSize[0])
    }
}

// MARK: - Accepting valid input

@Suite("Prescan")
struct PrescanTests {
    @Test("an empty input is an empty message")
    func emptyInput() {
        let r = scan(frameDescriptor, [])
        expectScan(r, IMCODEC_SCAN_OK, at: 0, field: 0, message: "imcodec.v1.Frame")
        #expect(r.field_count == 0)
        #expect(r.max_depth_seen == 1)
        #expect(r.detail == nil)
    }

    @Test("a valid Frame is accepted, and protobuf-c unpacks it")
    func validFrameAcceptedAndUnpacked() throws {
        let text = "héllo 😀 中文字符"
        let conversation = Wire.uint(1, 2) + Wire.string(2, "group-1")  // 2 fields
        let textElement = Wire.field(1, Wire.string(1, text))  // MessageElement.text -> TextElement.text: 2 fields
        let location = Wire.field(
            7,
            Wire.string(1, "here") + Wire.fixed64(2, 0x405E_0000_0000_0000) + Wire.fixed64(3, 0)
        )  // 4 fields
        let entry = Wire.string(1, "k") + Wire.string(2, "v")  // 2 fields
        let message =
            Wire.string(1, "c-1")
            + Wire.uint(3, 42)
            + Wire.uint(4, 7)
            + Wire.field(6, conversation)
            + Wire.uint(7, 1_700_000_000_000)
            + Wire.string(12, "u1") + Wire.string(12, "u2")
            + Wire.field(15, [0x00, 0xFF, 0xFE])  // bytes: anything goes
            + Wire.field(16, entry)
            + Wire.field(20, textElement)
            + Wire.field(20, location)
            // The last four fields are unknown ones.
            + Wire.uint(99, 5) + Wire.fixed32(98, 1) + Wire.fixed64(97, 2) + Wire.field(96, [0xFF, 0xFF, 0x0B])
        // Message: 1+1+1+(1+2)+1+2+1+(1+2)+(1+2)+(1+4)+4 = 25 fields (nested ones included).
        let frame = Wire.uint(1, 1) + Wire.uint(2, 1) + Wire.field(10, message)
        let r = scan(frameDescriptor, frame)
        expectScan(r, IMCODEC_SCAN_OK, at: frame.count, field: 0, message: "imcodec.v1.Frame")
        #expect(r.field_count == 3 + 25)
        #expect(r.max_depth_seen == 4)  // Frame > Message > MessageElement > TextElement
        #expect(r.detail == nil)

        let unpacked = frame.withUnsafeBufferPointer {
            protobuf_c_message_unpack(frameDescriptor, nil, $0.count, $0.baseAddress)
        }
        let base = try #require(unpacked)
        defer { protobuf_c_message_free_unpacked(base, nil) }
        let f = UnsafeRawPointer(base).assumingMemoryBound(to: Imcodec__V1__Frame.self).pointee
        #expect(f.schema_version == 1)
        #expect(f.payload_case == IMCODEC__V1__FRAME__PAYLOAD_MESSAGE)
        let m = try #require(f.message).pointee
        #expect(
            Array(UnsafeBufferPointer(start: m.client_msg_id.data, count: m.client_msg_id.len)) == Array("c-1".utf8)
        )
        #expect(m.seq == 42)
        #expect(m.n_target_receivers == 2)
        #expect(m.cloud_custom_data.len == 3)
        #expect(m.n_custom_params == 1)
        let key = m.custom_params[0]!.pointee.key
        #expect(Array(UnsafeBufferPointer(start: key.data, count: key.len)) == Array("k".utf8))
        #expect(m.n_elements == 2)
        let t = try #require(m.elements[0]!.pointee.text).pointee.text
        #expect(String(decoding: UnsafeBufferPointer(start: t.data, count: t.len), as: UTF8.self) == text)
        #expect(try #require(m.elements[1]!.pointee.location).pointee.longitude == 120)
        #expect(m.base.n_unknown_fields == 4)
    }

    @Test("unknown fields are skipped, never descended into")
    func unknownFieldsAreSkipped() {
        // Field 190 is unknown in Frame; its payload is not protobuf at all.
        let bytes = Wire.field(190, [0x00, 0x0B, 0xFF, 0xFF]) + Wire.uint(1, 1)
        let r = scan(frameDescriptor, bytes)
        expectScan(r, IMCODEC_SCAN_OK, at: bytes.count)
        #expect(r.field_count == 2)
        #expect(r.max_depth_seen == 1)
    }

    @Test("a 10-byte varint and the largest field number are accepted")
    func limitsThatAreStillValid() {
        let tenBytes = [0x08] + [UInt8](repeating: 0xFF, count: 9) + [0x01]
        expectScan(scan(frameDescriptor, tenBytes), IMCODEC_SCAN_OK, at: 11)
        // Field 2^29-1 = 536870911, wire type 0: tag F8 FF FF FF 0F.
        let maxField = [0xF8, 0xFF, 0xFF, 0xFF, 0x0F, 0x00] as [UInt8]
        expectScan(scan(frameDescriptor, maxField), IMCODEC_SCAN_OK, at: 6)
        // A non-minimal tag (field 1 in 2 bytes) and a 5-byte length prefix.
        let padded = [0x88, 0x00, 0x05] + [0x52, 0x80, 0x80, 0x80, 0x80, 0x00] as [UInt8]
        expectScan(scan(frameDescriptor, padded), IMCODEC_SCAN_OK, at: padded.count)
    }

    // MARK: - TRUNCATED

    @Test("TRUNCATED at the exact offset")
    func truncated() {
        // A tag cut short (after a valid field): reported at the tag's first byte.
        var r = scan(frameDescriptor, [0x08, 0x01, 0x80])
        expectScan(r, IMCODEC_SCAN_TRUNCATED, at: 2, field: 0, message: "imcodec.v1.Frame")

        // A varint value cut short: at the value's first byte.
        r = scan(frameDescriptor, [0x08, 0x96])
        expectScan(r, IMCODEC_SCAN_TRUNCATED, at: 1, field: 1)

        // fixed64 / fixed32 (unknown fields 99 and 98) with too few bytes.
        r = scan(frameDescriptor, Wire.tag(99, 1) + [1, 2, 3, 4, 5, 6, 7])
        expectScan(r, IMCODEC_SCAN_TRUNCATED, at: 2, field: 99)
        r = scan(frameDescriptor, Wire.tag(98, 5) + [1, 2, 3])
        expectScan(r, IMCODEC_SCAN_TRUNCATED, at: 2, field: 98)

        // A length prefix cut short, and a length past the end of the input.
        r = scan(frameDescriptor, [0x52, 0x80])
        expectScan(r, IMCODEC_SCAN_TRUNCATED, at: 1, field: 10)
        r = scan(frameDescriptor, [0x08, 0x01, 0x52, 0x05, 0x0A, 0x00])
        expectScan(r, IMCODEC_SCAN_TRUNCATED, at: 3, field: 10)
        #expect(detail(r) == "length runs past the end of the input")

        // A length past the end of the enclosing sub-message (the input goes on after it).
        r = scan(frameDescriptor, [0x52, 0x04, 0x0A, 0x05, 0x61, 0x62, 0x08, 0x01, 0x08, 0x01, 0x08, 0x01])
        expectScan(r, IMCODEC_SCAN_TRUNCATED, at: 3, field: 1, message: "imcodec.v1.Message")
        #expect(detail(r) == "length runs past the end of the enclosing message")

        // A sub-message that ends inside a varint (Message.seq) although the input has more bytes.
        r = scan(frameDescriptor, [0x52, 0x02, 0x18, 0x96, 0x01])
        expectScan(r, IMCODEC_SCAN_TRUNCATED, at: 3, field: 3, message: "imcodec.v1.Message")

        // A sub-message that ends inside a tag.
        r = scan(frameDescriptor, [0x52, 0x01, 0xA2, 0x01, 0x00])
        expectScan(r, IMCODEC_SCAN_TRUNCATED, at: 2, field: 0, message: "imcodec.v1.Message")
    }

    // MARK: - MALFORMED

    @Test("MALFORMED at the exact offset")
    func malformed() {
        // Varint of 11 bytes (continuation bit on the 10th).
        var r = scan(frameDescriptor, [0x08] + [UInt8](repeating: 0xFF, count: 10) + [0x01])
        expectScan(r, IMCODEC_SCAN_MALFORMED, at: 1, field: 1)
        #expect(detail(r) == "varint longer than 10 bytes")
        // ... also when the input ends right after the 10th byte.
        r = scan(frameDescriptor, [0x08] + [UInt8](repeating: 0xFF, count: 10))
        expectScan(r, IMCODEC_SCAN_MALFORMED, at: 1, field: 1)

        // Field number 0, in one byte and in a (non-minimal) two-byte tag.
        r = scan(frameDescriptor, [0x08, 0x01, 0x00, 0x00])
        expectScan(r, IMCODEC_SCAN_MALFORMED, at: 2, field: 0)
        #expect(detail(r) == "field number 0")
        r = scan(frameDescriptor, [0x80, 0x00, 0x00])
        expectScan(r, IMCODEC_SCAN_MALFORMED, at: 0, field: 0)

        // Wire types 3 and 4 (groups), 6 and 7.
        for wireType: UInt8 in [3, 4, 6, 7] {
            r = scan(frameDescriptor, [0x10, 0x01] + Wire.tag(1, wireType) + [0x00])
            expectScan(r, IMCODEC_SCAN_MALFORMED, at: 2, field: 1)
        }
        r = scan(frameDescriptor, Wire.tag(1, 3))
        #expect(detail(r) == "group wire type 3 is not supported")

        // A tag longer than 5 bytes, and a 5-byte tag whose value needs more than 32 bits
        // (field number 2^29).
        r = scan(frameDescriptor, [0x88, 0x80, 0x80, 0x80, 0x80, 0x00, 0x01])
        expectScan(r, IMCODEC_SCAN_MALFORMED, at: 0, field: 0)
        r = scan(frameDescriptor, [0x08, 0x01, 0x80, 0x80, 0x80, 0x80, 0x10, 0x00])
        expectScan(r, IMCODEC_SCAN_MALFORMED, at: 2, field: 0)

        // A length over 2^31-1 (known and unknown field), and a length prefix over 5 bytes.
        r = scan(frameDescriptor, [0x52] + Wire.varint(1 << 31))
        expectScan(r, IMCODEC_SCAN_MALFORMED, at: 1, field: 10)
        #expect(detail(r) == "length over 2^31-1")
        r = scan(frameDescriptor, Wire.tag(77, 2) + Wire.varint(0xFFFF_FFFF))
        expectScan(r, IMCODEC_SCAN_MALFORMED, at: 2, field: 77)
        r = scan(frameDescriptor, [0x52, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00])
        expectScan(r, IMCODEC_SCAN_MALFORMED, at: 1, field: 10)

        // Inside a sub-message, the offset is still absolute.
        r = scan(frameDescriptor, Wire.uint(1, 1) + Wire.field(10, Wire.uint(3, 1) + [0x00]))
        expectScan(r, IMCODEC_SCAN_MALFORMED, at: 6, field: 0, message: "imcodec.v1.Message")
    }

    // MARK: - UTF-8

    @Test(
        "valid UTF-8 passes",
        arguments: [
            "", "hello", "😀", "中文字符", "héllo wörld", "\u{80}", "\u{7FF}", "\u{800}", "\u{D7FF}", "\u{E000}",
            "\u{FFFF}", "\u{10000}", "\u{10FFFF}",
            String(repeating: "a", count: 37) + "👨‍👩‍👧" + String(repeating: "b", count: 40),
        ]
    )
    func validUTF8(_ text: String) {
        let raw = Array(text.utf8)
        #expect(raw.withUnsafeBufferPointer { imcodec_utf8_valid($0.baseAddress, $0.count) } == 1)
        #expect(raw.withUnsafeBufferPointer { imcodec_utf8_first_invalid($0.baseAddress, $0.count) } == raw.count)
        let (bytes, _) = frameWithClientMsgID(raw)
        expectScan(scan(frameDescriptor, bytes), IMCODEC_SCAN_OK, at: bytes.count)
    }

    /// Ill-formed byte strings and the index of the lead byte of the first bad sequence.
    static let invalidUTF8Cases: [([UInt8], Int)] = [
        ([0xC0, 0x80], 0),  // overlong U+0000
        ([0xC1, 0xBF], 0),  // overlong U+007F
        ([0x61, 0xE0, 0x80, 0x80], 1),  // overlong 3-byte
        ([0xE0, 0x9F, 0xBF], 0),  // overlong U+07FF
        ([0xF0, 0x80, 0x80, 0x80], 0),  // overlong 4-byte
        ([0xF0, 0x8F, 0xBF, 0xBF], 0),  // overlong U+FFFF
        ([0xED, 0xA0, 0x80], 0),  // surrogate U+D800
        ([0x7A, 0xED, 0xBF, 0xBF], 1),  // surrogate U+DFFF
        ([0xF4, 0x90, 0x80, 0x80], 0),  // U+110000
        ([0xF5, 0x80, 0x80, 0x80], 0),  // F5 lead
        ([0xF8, 0x88, 0x80, 0x80, 0x80], 0),
        ([0xFF], 0),
        ([0xFE], 0),
        ([0x80], 0),  // stray continuation
        ([0x61, 0x62, 0xBF], 2),
        ([0xC3], 0),  // truncated 2-byte
        ([0x61, 0xE4, 0xB8], 1),  // truncated 3-byte at the end
        ([0xF0, 0x9F, 0x98], 0),  // truncated emoji
        ([0x61, 0x62, 0xE4, 0xB8, 0x63, 0x64], 2),  // truncated in the middle
        ([0xC3, 0x28], 0),  // bad continuation
        (Array("abcdefgh".utf8) + [0xE4, 0xB8] + Array("ijklmnopqrstuvwx".utf8), 8),  // after the fast path
        (Array("中文字符abcdefghij".utf8) + [0xED, 0xA0, 0x80], 22),
    ]

    @Test("invalid UTF-8 is rejected at the offending byte", arguments: invalidUTF8Cases)
    func invalidUTF8(_ raw: [UInt8], _ badIndex: Int) {
        #expect(raw.withUnsafeBufferPointer { imcodec_utf8_valid($0.baseAddress, $0.count) } == 0)
        #expect(raw.withUnsafeBufferPointer { imcodec_utf8_first_invalid($0.baseAddress, $0.count) } == badIndex)
        let (bytes, payloadAt) = frameWithClientMsgID(raw)
        let r = scan(frameDescriptor, bytes)
        expectScan(r, IMCODEC_SCAN_INVALID_UTF8, at: payloadAt + badIndex, field: 1, message: "imcodec.v1.Message")
        #expect(detail(r) == "invalid UTF-8 in a string field")
    }

    @Test("U+0000 is valid UTF-8, kept in a string field and in a map key or value")
    func embeddedNul() throws {
        let raw: [UInt8] = [0x61, 0x00, 0x62]
        #expect(raw.withUnsafeBufferPointer { imcodec_utf8_valid($0.baseAddress, $0.count) } == 1)

        // string_as_bytes field (Message.client_msg_id): accepted, and protobuf-c keeps all 3 bytes.
        let (bytes, _) = frameWithClientMsgID(raw)
        expectScan(scan(frameDescriptor, bytes), IMCODEC_SCAN_OK, at: bytes.count)
        let unpacked = try #require(
            bytes.withUnsafeBufferPointer {
                protobuf_c_message_unpack(frameDescriptor, nil, $0.count, $0.baseAddress)
            }
        )
        let m = UnsafeRawPointer(unpacked).assumingMemoryBound(to: Imcodec__V1__Frame.self).pointee.message!.pointee
        #expect(m.client_msg_id.len == 3)
        protobuf_c_message_free_unpacked(unpacked, nil)

        // Map value and key (Message.custom_params): also accepted, and protobuf-c keeps every byte
        // (map strings are bytes, Scripts/postprocess-protoc-c.py), even after 8+ ASCII bytes.
        let key = Array("abcdefghijk".utf8) + [0x00] + Array("lmnopqrstuv".utf8)
        var map = frameWithCustomParam(key: key, value: raw)
        var r = scan(frameDescriptor, map)
        expectScan(r, IMCODEC_SCAN_OK, at: map.count)
        let entries = try #require(
            map.withUnsafeBufferPointer {
                protobuf_c_message_unpack(frameDescriptor, nil, $0.count, $0.baseAddress)
            }
        )
        let entry = UnsafeRawPointer(entries).assumingMemoryBound(to: Imcodec__V1__Frame.self).pointee.message!.pointee
            .custom_params[0]!.pointee
        #expect(Array(UnsafeBufferPointer(start: entry.key.data, count: entry.key.len)) == key)
        #expect(Array(UnsafeBufferPointer(start: entry.value.data, count: entry.value.len)) == raw)
        protobuf_c_message_free_unpacked(entries, nil)
        // Invalid UTF-8 in a map string is INVALID_UTF8.
        map = frameWithCustomParam(key: Array("k".utf8), value: [0x61, 0xED, 0xA0, 0x80])
        r = scan(frameDescriptor, map)
        expectScan(r, IMCODEC_SCAN_INVALID_UTF8, at: map.count - 3, field: 2)
        // A valid map entry with non-ASCII text is accepted.
        map = frameWithCustomParam(key: Array("ключ".utf8), value: Array("値😀".utf8))
        expectScan(scan(frameDescriptor, map), IMCODEC_SCAN_OK, at: map.count)
    }

    @Test("a bytes field is not checked for UTF-8")
    func bytesFieldIsNotUTF8Checked() {
        let bytes = Wire.field(10, Wire.field(15, [0xFF, 0xC0, 0x80, 0x00]))  // Message.cloud_custom_data
        expectScan(scan(frameDescriptor, bytes), IMCODEC_SCAN_OK, at: bytes.count)
    }

    // MARK: - WIRE_TYPE_MISMATCH

    @Test("a known field with the wrong wire type is WIRE_TYPE_MISMATCH at its tag")
    func wireTypeMismatch() {
        // Frame.payload message (field 10) as a varint.
        var r = scan(frameDescriptor, [0x08, 0x01, 0x50, 0x01])
        expectScan(r, IMCODEC_SCAN_WIRE_TYPE_MISMATCH, at: 2, field: 10, message: "imcodec.v1.Frame")
        #expect(detail(r) == "wire type 0 for a length-delimited field")
        // Frame.schema_version (uint32, not repeated) as length-delimited: not a packed field.
        r = scan(frameDescriptor, [0x0A, 0x01, 0x01])
        expectScan(r, IMCODEC_SCAN_WIRE_TYPE_MISMATCH, at: 0, field: 1)
        // ... and as fixed32 / fixed64.
        r = scan(frameDescriptor, Wire.fixed32(1, 1))
        expectScan(r, IMCODEC_SCAN_WIRE_TYPE_MISMATCH, at: 0, field: 1)
        r = scan(frameDescriptor, Wire.fixed64(2, 1))
        expectScan(r, IMCODEC_SCAN_WIRE_TYPE_MISMATCH, at: 0, field: 2)
        // LocationElement.longitude (double) as fixed32, deep inside.
        let location = Wire.field(10, Wire.field(20, Wire.field(7, Wire.fixed32(2, 0))))
        r = scan(frameDescriptor, location)
        expectScan(r, IMCODEC_SCAN_WIRE_TYPE_MISMATCH, at: 7, field: 2, message: "imcodec.v1.LocationElement")
        // Repeated non-scalar fields have no packed form: Message.elements and target_receivers as varints.
        r = scan(frameDescriptor, Wire.field(10, Wire.uint(20, 1)))
        expectScan(r, IMCODEC_SCAN_WIRE_TYPE_MISMATCH, at: 2, field: 20)
        r = scan(frameDescriptor, Wire.field(10, Wire.uint(12, 1)))
        expectScan(r, IMCODEC_SCAN_WIRE_TYPE_MISMATCH, at: 2, field: 12)
        // The same wire types on unknown fields are fine.
        let unknown = Wire.uint(190, 1) + Wire.fixed32(191, 1) + Wire.fixed64(192, 1) + Wire.field(193, [1])
        expectScan(scan(frameDescriptor, unknown), IMCODEC_SCAN_OK, at: unknown.count)
    }

    // MARK: - Depth

    @Test("a 100,000-level depth bomb is TOO_DEEP, quickly, at the tag that goes too deep")
    func depthBomb() {
        let chain = DepthChain(levels: 100_000)
        let clock = ContinuousClock()
        var r = imcodec_scan_result()
        let elapsed = clock.measure {
            r = scan(frameDescriptor, chain.bytes, maxDepth: UInt32.max)  // clamped to 512
        }
        let cap = Int(IMCODEC_PRESCAN_DEPTH_CAP)
        expectScan(
            r,
            IMCODEC_SCAN_TOO_DEEP,
            at: chain.tagOffsets[cap - 1],
            field: DepthChain.field(leaving: cap),
            message: DepthChain.name(of: cap)
        )
        #expect(r.max_depth_seen == UInt32(cap))
        #expect(detail(r) == "nesting deeper than max_depth")
        #expect(elapsed < .seconds(1))

        // With a smaller limit, the same bytes stop earlier.
        r = scan(frameDescriptor, chain.bytes, maxDepth: 100)
        expectScan(r, IMCODEC_SCAN_TOO_DEEP, at: chain.tagOffsets[99], field: DepthChain.field(leaving: 100))
        #expect(r.max_depth_seen == 100)
        #expect(r.field_count == 100)
    }

    @Test("depth exactly at max_depth is accepted; one more is TOO_DEEP", arguments: [1, 2, 5, 64, 512])
    func depthAtTheLimit(_ limit: Int) {
        let atLimit = DepthChain(levels: limit)
        var r = scan(frameDescriptor, atLimit.bytes, maxDepth: UInt32(limit))
        expectScan(r, IMCODEC_SCAN_OK, at: atLimit.bytes.count)
        #expect(r.max_depth_seen == UInt32(limit))
        #expect(r.field_count == limit - 1)

        let over = DepthChain(levels: limit + 1)
        r = scan(frameDescriptor, over.bytes, maxDepth: UInt32(limit))
        expectScan(r, IMCODEC_SCAN_TOO_DEEP, at: over.tagOffsets[limit - 1], message: DepthChain.name(of: limit))
        #expect(r.max_depth_seen == UInt32(limit))
    }

    @Test("protobuf-c unpacks a chain the pre-scan accepted")
    func acceptedChainUnpacks() {
        let chain = DepthChain(levels: 64)
        expectScan(scan(frameDescriptor, chain.bytes, maxDepth: 64), IMCODEC_SCAN_OK, at: chain.bytes.count)
        let unpacked = chain.bytes.withUnsafeBufferPointer {
            protobuf_c_message_unpack(frameDescriptor, nil, $0.count, $0.baseAddress)
        }
        #expect(unpacked != nil)
        protobuf_c_message_free_unpacked(unpacked, nil)
    }

    @Test("max_depth 0 rejects even the top-level message; the depth cap is 512")
    func depthEdges() {
        expectScan(scan(frameDescriptor, [], maxDepth: 0), IMCODEC_SCAN_TOO_DEEP, at: 0)
        #expect(IMCODEC_PRESCAN_DEPTH_CAP == 512)
        // Unknown length-delimited fields do not nest, however deep their bytes look.
        let chain = DepthChain(levels: 2_000)
        let hidden = Wire.field(70, chain.bytes)
        expectScan(scan(frameDescriptor, hidden, maxDepth: 1), IMCODEC_SCAN_OK, at: hidden.count)
    }

    // MARK: - Field count

    @Test("more than max_fields fields is TOO_MANY_FIELDS at the first field over")
    func tooManyFields() {
        let bytes = Wire.uint(1, 1) + Wire.uint(2, 2) + Wire.field(10, Wire.uint(3, 3) + Wire.uint(4, 4))  // 5 fields
        var r = scan(frameDescriptor, bytes, maxFields: 5)
        expectScan(r, IMCODEC_SCAN_OK, at: bytes.count)
        #expect(r.field_count == 5)
        r = scan(frameDescriptor, bytes, maxFields: 4)
        expectScan(r, IMCODEC_SCAN_TOO_MANY_FIELDS, at: 8, field: 4, message: "imcodec.v1.Message")
        #expect(r.field_count == 5)
        r = scan(frameDescriptor, bytes, maxFields: 2)
        expectScan(r, IMCODEC_SCAN_TOO_MANY_FIELDS, at: 4, field: 10)
        r = scan(frameDescriptor, bytes, maxFields: 0)
        expectScan(r, IMCODEC_SCAN_TOO_MANY_FIELDS, at: 0, field: 1)
        // Unknown fields count too.
        let unknown = [UInt8](repeating: 0, count: 0) + Wire.uint(190, 1) + Wire.uint(191, 1) + Wire.uint(192, 1)
        r = scan(frameDescriptor, unknown, maxFields: 2)
        expectScan(r, IMCODEC_SCAN_TOO_MANY_FIELDS, at: 6, field: 192)
    }

    @Test("many fields are counted in one pass")
    func manyFields() {
        var bytes: [UInt8] = []
        for i in 0..<100_000 { bytes += Wire.uint(1, UInt64(i & 0x7F)) }
        let r = scan(frameDescriptor, bytes, maxFields: 100_000)
        expectScan(r, IMCODEC_SCAN_OK, at: bytes.count)
        #expect(r.field_count == 100_000)
        expectScan(scan(frameDescriptor, bytes, maxFields: 99_999), IMCODEC_SCAN_TOO_MANY_FIELDS, at: 199_998)
    }
}

// MARK: - Packed repeated scalars

/// A message with repeated scalars, which imcodec.v1 does not have, built by hand:
///
///     message test.Packed {
///       repeated uint32 ids = 1;       // varint
///       repeated fixed32 codes = 2;
///       repeated double values = 3;    // fixed64
///       repeated sint64 deltas = 4;    // varint
///       uint32 single = 5;
///       repeated bool flags = 6;
///     }
///
/// The pre-scan reads only numbers, labels, types and the number ranges, so offsets and sizes are 0.
/// A C string that lives as long as the test process.
private func cString(_ text: String) -> UnsafePointer<CChar> {
    let chars = Array(text.utf8CString)
    let p = UnsafeMutablePointer<CChar>.allocate(capacity: chars.count)
    p.initialize(from: chars, count: chars.count)
    return UnsafePointer(p)
}

nonisolated(unsafe) private let packedDescriptor: Descriptor = {
    let specs: [(UInt32, ProtobufCLabel, ProtobufCType)] = [
        (1, PROTOBUF_C_LABEL_REPEATED, PROTOBUF_C_TYPE_UINT32),
        (2, PROTOBUF_C_LABEL_REPEATED, PROTOBUF_C_TYPE_FIXED32),
        (3, PROTOBUF_C_LABEL_REPEATED, PROTOBUF_C_TYPE_DOUBLE),
        (4, PROTOBUF_C_LABEL_REPEATED, PROTOBUF_C_TYPE_SINT64),
        (5, PROTOBUF_C_LABEL_NONE, PROTOBUF_C_TYPE_UINT32),
        (6, PROTOBUF_C_LABEL_REPEATED, PROTOBUF_C_TYPE_BOOL),
    ]
    let fields = UnsafeMutablePointer<ProtobufCFieldDescriptor>.allocate(capacity: specs.count)
    for (i, (id, label, type)) in specs.enumerated() {
        fields[i] = ProtobufCFieldDescriptor(
            name: cString("f\(id)"),
            id: id,
            label: label,
            type: type,
            quantifier_offset: 0,
            offset: 0,
            descriptor: nil,
            default_value: nil,
            flags: label == PROTOBUF_C_LABEL_REPEATED ? UInt32(PROTOBUF_C_FIELD_FLAG_PACKED.rawValue) : 0,
            reserved_flags: 0,
            reserved2: nil,
            reserved3: nil
        )
    }
    let ranges = UnsafeMutablePointer<ProtobufCIntRange>.allocate(capacity: 2)
    ranges[0] = ProtobufCIntRange(start_value: 1, orig_index: 0)
    ranges[1] = ProtobufCIntRange(start_value: 0, orig_index: UInt32(specs.count))
    let d = UnsafeMutablePointer<ProtobufCMessageDescriptor>.allocate(capacity: 1)
    d.initialize(
        to: ProtobufCMessageDescriptor(
            magic: UInt32(PROTOBUF_C__MESSAGE_DESCRIPTOR_MAGIC),
            name: cString("test.Packed"),
            short_name: cString("Packed"),
            c_name: cString("Test__Packed"),
            package_name: cString("test"),
            sizeof_message: 0,
            n_fields: UInt32(specs.count),
            fields: fields,
            fields_sorted_by_name: nil,
            n_field_ranges: 1,
            field_ranges: ranges,
            message_init: nil,
            reserved1: nil,
            reserved2: nil,
            reserved3: nil
        )
    )
    return UnsafePointer(d)
}()

@Suite("Prescan packed")
struct PrescanPackedTests {
    private func le32(_ v: UInt32) -> [UInt8] { Wire.fixed(v) }

    @Test("packed payloads of whole elements are accepted; each element is a field")
    func packedAccepted() {
        let varints = Wire.varint(1) + Wire.varint(300) + Wire.varint(1 << 63)  // 1 + 2 + 10 bytes
        var bytes = Wire.field(1, varints)
        var r = scan(packedDescriptor, bytes)
        expectScan(r, IMCODEC_SCAN_OK, at: bytes.count, message: "test.Packed")
        #expect(r.field_count == 3)

        bytes =
            Wire.field(2, le32(1) + le32(2)) + Wire.field(3, [UInt8](repeating: 0, count: 24))
            + Wire.field(6, [1, 0, 1, 1])
        r = scan(packedDescriptor, bytes)
        expectScan(r, IMCODEC_SCAN_OK, at: bytes.count)
        #expect(r.field_count == 2 + 3 + 4)

        // Unpacked occurrences of the same fields are fine too, and an empty packed payload counts 1.
        bytes =
            Wire.uint(1, 7) + Wire.uint(1, 8) + Wire.fixed32(2, 9) + Wire.fixed64(3, 10) + Wire.uint(4, 3)
            + Wire.field(4, [])
        r = scan(packedDescriptor, bytes)
        expectScan(r, IMCODEC_SCAN_OK, at: bytes.count)
        #expect(r.field_count == 6)
    }

    @Test("packed payloads that are not whole elements are MALFORMED at the incomplete element")
    func packedMalformed() {
        // Varints: the payload ends inside the second element.
        var bytes = Wire.uint(5, 1) + Wire.field(1, [0x01, 0x96])
        var r = scan(packedDescriptor, bytes)
        expectScan(r, IMCODEC_SCAN_MALFORMED, at: 5, field: 1, message: "test.Packed")
        #expect(detail(r) == "packed payload ends inside a varint")
        // ... even when the input goes on after the payload.
        bytes = Wire.field(4, [0x01, 0x96]) + Wire.uint(5, 1)
        expectScan(scan(packedDescriptor, bytes), IMCODEC_SCAN_MALFORMED, at: 3, field: 4)
        // A packed varint over 10 bytes.
        bytes = Wire.field(1, [0x05] + [UInt8](repeating: 0x80, count: 10) + [0x01])
        r = scan(packedDescriptor, bytes)
        expectScan(r, IMCODEC_SCAN_MALFORMED, at: 3, field: 1)
        #expect(detail(r) == "packed varint longer than 10 bytes")
        // fixed32: 7 bytes; fixed64: 12 bytes.
        r = scan(packedDescriptor, Wire.field(2, [UInt8](repeating: 1, count: 7)))
        expectScan(r, IMCODEC_SCAN_MALFORMED, at: 2 + 4, field: 2)
        r = scan(packedDescriptor, Wire.field(3, [UInt8](repeating: 1, count: 12)))
        expectScan(r, IMCODEC_SCAN_MALFORMED, at: 2 + 8, field: 3)
        r = scan(packedDescriptor, Wire.field(3, [UInt8](repeating: 1, count: 3)))
        expectScan(r, IMCODEC_SCAN_MALFORMED, at: 2, field: 3)
    }

    @Test("packed elements count against max_fields")
    func packedFieldCount() {
        // Field 5 (1 field), then 5 packed varints: elements 1, 2 reach 3; element 3 (offset) is over.
        var bytes = Wire.uint(5, 1) + Wire.field(1, [0x01, 0x02, 0x83, 0x01, 0x04, 0x05])
        var r = scan(packedDescriptor, bytes, maxFields: 3)
        expectScan(r, IMCODEC_SCAN_TOO_MANY_FIELDS, at: 2 + 2 + 2, field: 1)
        #expect(r.field_count == 4)
        expectScan(scan(packedDescriptor, bytes, maxFields: 6), IMCODEC_SCAN_OK, at: bytes.count)
        expectScan(scan(packedDescriptor, bytes, maxFields: 5), IMCODEC_SCAN_TOO_MANY_FIELDS, at: 9)

        // fixed32: 5 elements with max_fields 3: the fourth element (index 3) is over.
        bytes = Wire.field(2, [UInt8](repeating: 0, count: 20))
        r = scan(packedDescriptor, bytes, maxFields: 3)
        expectScan(r, IMCODEC_SCAN_TOO_MANY_FIELDS, at: 2 + 3 * 4, field: 2)
        #expect(r.field_count == 4)
        expectScan(scan(packedDescriptor, bytes, maxFields: 5), IMCODEC_SCAN_OK, at: bytes.count)
        // The tag counts the first element.
        expectScan(scan(packedDescriptor, bytes, maxFields: 0), IMCODEC_SCAN_TOO_MANY_FIELDS, at: 0)
    }

    @Test("only repeated scalars may be packed; other mismatches are WIRE_TYPE_MISMATCH")
    func packedMismatch() {
        // Non-repeated uint32 as length-delimited.
        var r = scan(packedDescriptor, Wire.field(5, [0x01]))
        expectScan(r, IMCODEC_SCAN_WIRE_TYPE_MISMATCH, at: 0, field: 5)
        #expect(detail(r) == "wire type 2 for a non-repeated varint field")
        // Repeated fixed32 as a varint, repeated double as fixed32, repeated uint32 as fixed64.
        r = scan(packedDescriptor, Wire.uint(2, 1))
        expectScan(r, IMCODEC_SCAN_WIRE_TYPE_MISMATCH, at: 0, field: 2)
        #expect(detail(r) == "wire type 0 for a fixed32 field")
        r = scan(packedDescriptor, Wire.uint(5, 1) + Wire.fixed32(3, 1))
        expectScan(r, IMCODEC_SCAN_WIRE_TYPE_MISMATCH, at: 2, field: 3)
        r = scan(packedDescriptor, Wire.fixed64(1, 1))
        expectScan(r, IMCODEC_SCAN_WIRE_TYPE_MISMATCH, at: 0, field: 1)
    }
}
