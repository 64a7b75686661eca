import IMCodec
import IMCodecTestSupport
import Testing

@Suite("Limits and errors")
struct LimitTests {
    func code(_ bytes: [UInt8], options: DecodingOptions = DecodingOptions()) -> IMCodecError? {
        do {
            _ = try Frame(serializedBytes: bytes, options: options)
            return nil
        } catch {
            return error
        }
    }

    @Test("a nesting bomb of 100,000 levels is rejected as tooDeep without a crash")
    func depthBomb() throws {
        let bomb = Wire.nestingBomb(levels: 100_000)
        #expect(bomb.count > 300_000)
        let clock = ContinuousClock()
        var error: IMCodecError?
        let elapsed = clock.measure { error = code(bomb) }
        #expect(error?.code == .tooDeep)
        #expect(error?.offset != nil)
        #expect(elapsed < .seconds(5))  // generous: the pre-scan stops at level 321
    }

    @Test("nesting exactly at maxDepth decodes; one more level is tooDeep")
    func depthBoundary() throws {
        let maxDepth = DecodingOptions().maxDepth
        #expect(maxDepth == 320)
        #expect(code(Wire.nestingBomb(levels: maxDepth)) == nil)
        #expect(code(Wire.nestingBomb(levels: maxDepth + 1))?.code == .tooDeep)
        #expect(code(Wire.nestingBomb(levels: 10), options: DecodingOptions(maxDepth: 9))?.code == .tooDeep)
        #expect(code(Wire.nestingBomb(levels: 200), options: DecodingOptions(maxDepth: 200)) == nil)
    }

    @Test("maxDepth above the cap is treated as the cap")
    func depthCap() throws {
        let error = code(
            Wire.nestingBomb(levels: DecodingOptions.maxDepthCap + 1),
            options: DecodingOptions(maxDepth: 1_000_000)
        )
        #expect(error?.code == .tooDeep)
    }

    @Test("input above maxInputSize is tooLarge")
    func oversize() throws {
        let bytes = Frame(Message.c2cText(from: "a", to: "b", String(repeating: "x", count: 2_000))).serializedBytes()
        #expect(code(bytes, options: DecodingOptions(maxInputSize: 1_024))?.code == .tooLarge)
        #expect(code(bytes, options: DecodingOptions(maxInputSize: bytes.count)) == nil)
    }

    @Test(
        "truncated input is reported with its offset",
        arguments: [
            ([0x08] as [UInt8], 1),  // tag, then nothing
            ([0x08, 0x80], 1),  // varint cut short
            ([0x52, 0x05, 0x0A], 1),  // length runs past the end (offset of the length)
            ([0x52], 1),  // length prefix missing
            ([0x80], 0),  // tag cut short
        ]
    )
    func truncated(bytes: [UInt8], offset: Int) throws {
        let error = code(bytes)
        #expect(error?.code == .truncated)
        #expect(error?.offset == offset)
    }

    @Test(
        "malformed input is rejected",
        arguments: [
            [0x08, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01] as [UInt8],  // 11-byte varint
            [0x02, 0x00],  // field number 0
            [0x80, 0x80, 0x80, 0x80, 0x10, 0x00],  // field number 2^29
            [0x0B],  // start group
            [0x0C],  // end group
            [0x0E],  // wire type 6
            [0x0F],  // wire type 7
            [0x52, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F],  // length 2^32-1
        ]
    )
    func malformed(bytes: [UInt8]) throws {
        #expect(code(bytes)?.code == .malformed)
    }

    @Test("a negative maxDepth is enforced as 0, and the error names that limit")
    func negativeMaxDepth() {
        let error = code(Wire.field(10, []), options: DecodingOptions(maxDepth: -3))
        #expect(error?.code == .tooDeep)
        #expect(error?.reason.contains("(maxDepth 0)") == true, "\(String(describing: error?.reason))")
    }

    @Test("invalid UTF-8 in a string field is rejected; the same bytes in a bytes field are not")
    func invalidUTF8() throws {
        for bad: [UInt8] in [
            [0xC0, 0x80], [0xED, 0xA0, 0x80], [0x80], [0xE4, 0xB8], [0xFF], [0xF5, 0x80, 0x80, 0x80],
        ] {
            // Frame.message.elements.text.text
            let text = Wire.field(10, Wire.field(20, Wire.field(1, Wire.field(1, bad))))
            #expect(code(text)?.code == .invalidUTF8)
            let custom = Wire.field(10, Wire.field(20, Wire.field(2, Wire.field(1, bad))))  // ... custom.data (bytes)
            #expect(code(custom) == nil)
        }
    }

    @Test("a known field with the wrong wire type is kept as an unknown field, as Google's parsers do")
    func wireTypeMismatch() throws {
        // Frame.schema_version (uint32) sent length-delimited (see HardeningTests for more).
        #expect(code([0x0A, 0x01, 0x00]) == nil)
        let frame = try Frame(serializedBytes: [0x0A, 0x01, 0x00])
        #expect(frame.schemaVersion == 0)
        #expect(frame.unknownFields.bytes == [0x0A, 0x01, 0x00])
        #expect(frame.serializedBytes() == [0x0A, 0x01, 0x00])
    }

    @Test("U+0000 in a map key or value is kept, as Google's parsers keep it")
    func nulInMap() throws {
        let entry = Wire.field(1, [0x6B, 0x00]) + Wire.field(2, [0x61, 0x00, 0x62])
        let frame = try Frame(serializedBytes: Wire.field(10, Wire.field(16, entry)))
        #expect(frame.payload == .message(.with { $0.customParams = ["k\u{0}": "a\u{0}b"] }))
        #expect(frame.serializedBytes() == Wire.field(10, Wire.field(16, entry)))
    }

    @Test("more fields than maxFieldCount is tooManyFields")
    func fieldCount() throws {
        let bytes = [UInt8](repeating: 0, count: 0) + (0..<1_000).flatMap { _ in [0x08, 0x01] as [UInt8] }
        #expect(code(bytes, options: DecodingOptions(maxFieldCount: 999))?.code == .tooManyFields)
        #expect(code(bytes, options: DecodingOptions(maxFieldCount: 1_000)) == nil)
    }

    @Test("decoding that would allocate more than maxDecodedMemory stops with memoryLimitExceeded")
    func memoryLimit() throws {
        // 20,000 empty messages in a history page: 2 bytes each on the wire, a ~250-byte struct each
        // in protobuf-c. The default cap (16 × input + 1 MiB) refuses that amplification.
        let page = Wire.field(32, (0..<20_000).flatMap { _ in [0x12, 0x00] as [UInt8] })
        #expect(code(page)?.code == .memoryLimitExceeded)
        #expect(code(page, options: DecodingOptions(maxDecodedMemory: 1 << 20))?.code == .memoryLimitExceeded)
        #expect(code(page, options: DecodingOptions(maxDecodedMemory: 64 << 20)) == nil)
    }

    @Test("realistic large frames decode within the default limits")
    func largeFramesFit() throws {
        let messages = (0..<300).map { i in
            var m = Samples.message(elements: [.text("message \(i) with some ordinary text in it 🙂")])
            m.customParams = [:]
            return m
        }
        let merger = Frame(Message.merger(from: "a", in: .oneToOne("b"), title: "300", messages: messages))
        #expect(try Frame(serializedBytes: merger.serializedBytes()) == merger)
        let page = Frame(.historyResponse(HistoryResponse.with { $0.messages = messages }))
        #expect(try Frame(serializedBytes: page.serializedBytes()) == page)
    }

    @Test("errors compare by code and describe themselves")
    func errorShape() throws {
        let error = try #require(code([0x52, 0x05, 0x0A]))
        #expect(error == IMCodecError.truncated("anything"))
        #expect(error != IMCodecError.malformed("anything"))
        #expect(error.description.hasPrefix("truncated: "))
        #expect(error.description.contains("at byte 1"))
    }
}
