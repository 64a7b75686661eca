// Tests of the one varint, tag and fixed-width reader and writer (Sources/IMCodec/Encoding/WireFormat.swift).
// Expected bytes are written out by hand from the protobuf encoding rules, never by the writer.
import IMCodec
import Testing

@Suite("WireFormat: the one reader and writer of varints, tags and fixed-width values")
struct WireFormatTests {
    static let varints: [(UInt64, [UInt8])] = [
        (0, [0x00]),
        (1, [0x01]),
        (127, [0x7F]),
        (128, [0x80, 0x01]),
        (300, [0xAC, 0x02]),
        (16_383, [0xFF, 0x7F]),
        (16_384, [0x80, 0x80, 0x01]),
        (UInt64(UInt32.max), [0xFF, 0xFF, 0xFF, 0xFF, 0x0F]),
        (1 << 63, [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01]),
        (UInt64.max, [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]),
        // int32 -1 is sign-extended to 64 bits: 10 bytes.
        (UInt64(bitPattern: -1), [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]),
    ]

    @Test("a varint is written as its known bytes, and its size is their count", arguments: varints)
    func writesVarint(_ value: UInt64, _ expected: [UInt8]) {
        #expect(WireFormat.varint(value) == expected)
        #expect(WireFormat.varintSize(value) == expected.count)
        var bytes: [UInt8] = [0xAA]
        WireFormat.appendVarint(value, to: &bytes)
        #expect(bytes == [0xAA] + expected)
        var stored = [UInt8](repeating: 0xEE, count: 12)
        let n = stored.withUnsafeMutableBytes { WireFormat.storeVarint(value, at: $0.baseAddress! + 1) }
        #expect(n == expected.count)
        #expect(stored == [0xEE] + expected + [UInt8](repeating: 0xEE, count: 11 - expected.count))
    }

    @Test("a varint reads back from its bytes, in any byte collection", arguments: varints)
    func readsVarint(_ value: UInt64, _ bytes: [UInt8]) {
        let input = [0x99] + bytes + [0x42]
        var index = 1
        #expect(WireFormat.readVarint(input, &index) == value)
        #expect(index == 1 + bytes.count)
        input.withUnsafeBytes { raw in
            var i = 1
            #expect(WireFormat.readVarint(raw, &i) == value)
            #expect(i == 1 + bytes.count)
        }
        input.withUnsafeBufferPointer { buffer in
            var i = 1
            #expect(WireFormat.readVarint(buffer, &i, end: 1 + bytes.count) == value)
            #expect(i == 1 + bytes.count)
        }
        var i = 1
        #expect(WireFormat.readVarint(input[1...], &i) == value)  // a slice: indices of the whole array
    }

    @Test("a truncated varint reads as nil and leaves the index where it was")
    func truncatedVarint() {
        for bytes: [UInt8] in [[], [0x80], [0xFF, 0xFF], [0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80]] {
            var index = 0
            #expect(WireFormat.readVarint(bytes, &index) == nil)
            #expect(index == 0)
            var value: UInt64 = 0
            var count = 0
            index = 0
            let status = WireFormat.continueVarint(bytes, &index, end: bytes.count, value: &value, count: &count)
            #expect(status == .truncated)
            #expect(index == bytes.count && count == bytes.count)
        }
        // `end` bounds the read even when the collection goes on.
        var index = 0
        #expect(WireFormat.readVarint([0xAC, 0x02], &index, end: 1) == nil)
        #expect(index == 0)
    }

    @Test("a varint of more than 10 bytes is overlong")
    func overlongVarint() {
        let eleven = [UInt8](repeating: 0x80, count: 10) + [0x01]
        var index = 0
        #expect(WireFormat.readVarint(eleven, &index) == nil)
        #expect(index == 0)
        var value: UInt64 = 0
        var count = 0
        #expect(WireFormat.continueVarint(eleven, &index, end: eleven.count, value: &value, count: &count) == .overlong)
        #expect(index == 10 && count == 10)
    }

    @Test("a 10th byte's bits past the 64th are dropped, as protobuf-c and Google's parsers do")
    func tenthByteHighBits() {
        var index = 0
        let bytes = [UInt8](repeating: 0xFF, count: 9) + [0x7F]
        #expect(WireFormat.readVarint(bytes, &index) == UInt64.max)
        #expect(index == 10)
    }

    @Test("overlong non-minimal encodings of small values read as the value")
    func nonMinimalVarint() {
        var index = 0
        #expect(WireFormat.readVarint([0x81, 0x80, 0x80, 0x80, 0x00], &index) == 1)
        #expect(index == 5)
    }

    @Test("maxBytes caps a varint (length prefixes: 5 bytes)")
    func maxBytes() {
        var index = 0
        #expect(WireFormat.readVarint([0xFF, 0xFF, 0xFF, 0xFF, 0x0F], &index, maxBytes: 5) == UInt64(UInt32.max))
        index = 0
        #expect(WireFormat.readVarint([0x80, 0x80, 0x80, 0x80, 0x80, 0x01], &index, maxBytes: 5) == nil)
        var value: UInt64 = 0
        var count = 0
        let six: [UInt8] = [0x80, 0x80, 0x80, 0x80, 0x80, 0x01]
        #expect(WireFormat.continueVarint(six, &index, end: 6, value: &value, count: &count, maxBytes: 5) == .overlong)
        #expect(count == 5)
    }

    @Test("a varint split across buffers reads piece by piece")
    func continuedVarint() {
        let bytes = WireFormat.varint(1 << 40 | 12_345)
        for split in 0...bytes.count {
            var value: UInt64 = 0
            var count = 0
            var index = 0
            let first = Array(bytes[..<split])
            let status = WireFormat.continueVarint(first, &index, end: first.count, value: &value, count: &count)
            #expect(status == (split == bytes.count ? .complete : .truncated))
            if status == .complete { continue }
            let second = Array(bytes[split...])
            index = 0
            let rest = WireFormat.continueVarint(second, &index, end: second.count, value: &value, count: &count)
            #expect(rest == .complete)
            #expect(value == 1 << 40 | 12_345 && count == bytes.count && index == second.count)
        }
    }

    @Test("a padded varint takes exactly its size and reads back as its value")
    func paddedVarint() {
        for (value, expected): (UInt64, [UInt8]) in [
            (0, [0x80, 0x80, 0x80, 0x80, 0x00]), (1, [0x81, 0x80, 0x80, 0x80, 0x00]),
            (300, [0xAC, 0x82, 0x80, 0x80, 0x00]), ((1 << 35) - 1, [0xFF, 0xFF, 0xFF, 0xFF, 0x7F]),
        ] {
            var bytes = [UInt8](repeating: 0xEE, count: 5)
            bytes.withUnsafeMutableBytes { WireFormat.storeVarint(value, at: $0.baseAddress!, paddedTo: 5) }
            #expect(bytes == expected)
            var index = 0
            #expect(WireFormat.readVarint(bytes, &index) == value)
            #expect(index == 5)
        }
    }

    @Test("tags: field number << 3 | wire type")
    func tags() {
        #expect(WireFormat.tag(1, 0) == 0x08)
        #expect(WireFormat.tag(10, 2) == 0x52)
        var bytes: [UInt8] = []
        WireFormat.appendTag(32, 2, to: &bytes)
        WireFormat.appendTag(536_870_911, 5, to: &bytes)  // the largest field number
        #expect(bytes == [0x82, 0x02] + [0xFD, 0xFF, 0xFF, 0xFF, 0x0F])
    }

    @Test("fixed64 and fixed32 are little-endian, written and read")
    func fixedWidth() {
        var bytes: [UInt8] = []
        WireFormat.appendFixed(UInt64(0x0102_0304_0506_0708), to: &bytes)
        WireFormat.appendFixed(UInt32(0xA1B2_C3D4), to: &bytes)
        WireFormat.appendFixed(UInt64.max, to: &bytes)
        let expected: [UInt8] = [0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01, 0xD4, 0xC3, 0xB2, 0xA1]
        #expect(bytes == expected + [UInt8](repeating: 0xFF, count: 8))
        var stored = [UInt8](repeating: 0, count: 13)
        stored.withUnsafeMutableBytes {
            WireFormat.storeFixed(UInt64(0x0102_0304_0506_0708), at: $0.baseAddress! + 1)  // unaligned
            WireFormat.storeFixed(UInt32(0xA1B2_C3D4), at: $0.baseAddress! + 9)
        }
        #expect(stored == [0] + bytes[..<12])

        var index = 0
        #expect(WireFormat.readFixed(UInt64.self, bytes, &index) == 0x0102_0304_0506_0708)
        #expect(WireFormat.readFixed(UInt32.self, bytes, &index) == 0xA1B2_C3D4)
        #expect(WireFormat.readFixed(UInt64.self, bytes, &index) == UInt64.max)
        #expect(index == bytes.count)
        // Too few bytes left: nil, index unchanged.
        index = 13
        #expect(WireFormat.readFixed(UInt64.self, bytes, &index) == nil)
        #expect(index == 13)
        index = 0
        #expect(WireFormat.readFixed(UInt32.self, bytes, &index, end: 3) == nil)
        #expect(index == 0)
    }
}
