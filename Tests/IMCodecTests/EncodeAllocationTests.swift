import Foundation
import IMCodec
import IMCodecTestSupport
import Testing

/// `serializedBytes()` allocates once per encode (Benchmarks/README.md shows it: the `imcodec
/// encode` row's mallocs/msg): a message up to 1 KiB is encoded in a stack buffer and copied out;
/// a larger one is counted there and encoded a second time straight into an array of its exact
/// size; map entries are sorted in a stack buffer of dictionary indices. These tests check that the
/// bytes stay Google's deterministic serialization on each of those paths.
@Suite("Encoding in one allocation: large messages and maps keep their canonical bytes")
struct EncodeAllocationTests {
    /// The stack buffer `serializedBytes()` starts with.
    static let scratch = 1024

    /// The bytes of field `number` (length-delimited) at the top level of `bytes`, which holds only
    /// varint and length-delimited fields.
    static func lengthDelimited(_ number: UInt64, in bytes: [UInt8]) throws -> [UInt8] {
        var offset = 0
        func varint() throws -> UInt64 { try #require(WireFormat.readVarint(bytes, &offset)) }
        while offset < bytes.count {
            let tag = try varint()
            switch tag & 7 {
            case 0: _ = try varint()
            case 2:
                let length = Int(try varint())
                if tag >> 3 == number { return Array(bytes[offset..<offset + length]) }
                offset += length
            default: throw Protoc.Failure(description: "wire type \(tag & 7) in a test fixture")
            }
        }
        throw Protoc.Failure(description: "no field \(number)")
    }

    /// A golden fixture's bytes as Google's deterministic serializer writes them.
    static func golden(_ name: String) throws -> [UInt8] {
        let canonical = FixtureFiles.valid.appendingPathComponent(name + ".canonical.binpb")
        if FileManager.default.fileExists(atPath: canonical.path) { return try FixtureFiles.bytes(canonical) }
        return try FixtureFiles.bytes(FixtureFiles.valid.appendingPathComponent(name + ".binpb"))
    }

    /// Every way the library encodes `message` gives `expected`.
    static func expectEncodings<M: IMCodecMessage>(_ message: M, _ expected: [UInt8], _ what: String) {
        #expect(message.serializedBytes() == expected, "serializedBytes(): \(what)")
        #expect([UInt8](message.serializedData()) == expected, "serializedData(): \(what)")
        #expect(WireEncoder(capacity: 16).encode(message) == expected, "WireEncoder: \(what)")
    }

    @Test("golden fixtures over 1 KiB re-encode to Google's bytes")
    func largeFixtures() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: FixtureFiles.valid.path)
            .filter { $0.hasSuffix(".binpb") && !$0.hasSuffix(".canonical.binpb") }
            .map { String($0.dropLast(".binpb".count)) }
            .sorted()
        var large = 0
        for name in names {
            let expected = try Self.golden(name)
            guard expected.count > Self.scratch else { continue }
            large += 1
            Self.expectEncodings(try Frame(serializedBytes: expected), expected, name)
        }
        #expect(large >= 2, "the fixtures over 1 KiB (merger_inline_300, merger_nested_100_layers)")
    }

    @Test("a frame over 64 KiB made of golden messages encodes to their bytes and protoc's")
    func over64KiB() throws {
        // History pages of the fixtures' messages: Frame.history_response (32) holding
        // HistoryResponse.messages (2), each the bytes of a fixture's Frame.message (10).
        // (Not merger_nested_100_layers: protoc's recursion limit, 100, refuses it inside a page.)
        let names = ["merger_inline_300", "map_key_order", "element_image", "merger_inline_300"]
        var messages: [Message] = []
        var page: [UInt8] = []
        for name in names {
            let golden = try Self.golden(name)
            let bytes = try Self.lengthDelimited(10, in: golden)
            messages.append(try Message(serializedBytes: bytes))
            page += Wire.field(2, bytes)
        }
        let expected = Wire.field(32, page)
        #expect(expected.count > 64 << 10)
        var frame = Frame(.historyResponse(HistoryResponse.with { $0.messages = messages }))
        frame.schemaVersion = 0  // (Frame(_:) sets the versions; here the page is the only field.)
        frame.minReaderVersion = 0
        Self.expectEncodings(frame, expected, "history page of \(names)")
        #expect(try Protoc.reencode(expected) == expected)
    }

    @Test("sizes around the 1 KiB stack buffer and 64 KiB", arguments: [1023, 1024, 1025, 2049, (64 << 10) + 1])
    func boundarySizes(size: Int) throws {
        let frame = ValidFrames.frame(encodedSize: size)
        let bytes = frame.serializedBytes()
        #expect(bytes.count == size)
        #expect(try Protoc.reencode(bytes) == bytes)
        #expect(try Frame(serializedBytes: bytes) == frame)
        Self.expectEncodings(frame, bytes, "\(size) bytes")
    }

    @Test(
        "map fixtures with several keys re-encode to Google's bytes",
        arguments: ["map_key_order", "event_system_notice", "nul_in_custom_params_key_and_expansion_value"]
    )
    func mapFixtures(name: String) throws {
        let expected = try Self.golden(name)
        Self.expectEncodings(try Frame(serializedBytes: expected), expected, name)
    }

    @Test("maps of 2 to 200 keys, alone and in messages over 1 KiB, match protoc", arguments: [2, 3, 17, 64, 65, 200])
    func manyKeys(count: Int) throws {
        // Keys whose UTF-8 order differs from naive orders: shared prefixes, upper and lower case,
        // non-ASCII, the empty key.
        let stems = ["", "a", "B", "_x", "é", "中", "ab", "a\u{0}", "Z", "😀"]
        var params: [String: String] = [:]
        for i in 0..<count { params[stems[i % stems.count] + (i < stems.count ? "" : String(i, radix: 7))] = "v\(i)" }
        #expect(params.count == count)
        var message = ValidFrames.message()
        message.customParams = params
        message.expansion = Dictionary(uniqueKeysWithValues: params.map { ($0.value, $0.key) })
        let small = Frame(message)
        let smallBytes = small.serializedBytes()
        #expect(try Protoc.reencode(smallBytes) == smallBytes)
        Self.expectEncodings(small, smallBytes, "\(count) keys")

        // The same maps on both passes of a message over 1 KiB (counted, then written).
        message.cloudCustomData = Array(repeating: 0x5A, count: 1500)
        let large = Frame(message)
        let largeBytes = large.serializedBytes()
        #expect(largeBytes.count > Self.scratch)
        #expect(try Protoc.reencode(largeBytes) == largeBytes)
        Self.expectEncodings(large, largeBytes, "\(count) keys, over 1 KiB")
    }
}
