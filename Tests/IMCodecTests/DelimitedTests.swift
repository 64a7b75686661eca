import IMCodec
import Testing

@Suite("Delimited streams")
struct DelimitedTests {
    @Test("frames written delimited read back in order")
    func roundTrip() throws {
        let frames = Samples.frames.keys.sorted().map { Samples.frames[$0]! }
        let bytes = Delimited.serialize(frames)
        var reader = Delimited.Reader<Frame>(bytes)
        var back: [Frame] = []
        while let frame = try reader.next() { back.append(frame) }
        #expect(back == frames)
    }

    @Test("length prefixes: need more bytes, oversize, over-long")
    func prefixes() throws {
        try [UInt8]([0x80, 0x80]).withUnsafeBytes { (raw) throws in
            #expect(try Delimited.readLengthPrefix(raw, maxLength: 100) == nil)
        }
        try [UInt8]([0x05]).withUnsafeBytes { (raw) throws in
            let prefix = try Delimited.readLengthPrefix(raw, maxLength: 100)
            #expect(prefix?.length == 5 && prefix?.prefixSize == 1)
        }
        _ = [UInt8]([0xE5, 0x01]).withUnsafeBytes { raw in
            #expect(throws: IMCodecError.tooLarge("")) { try Delimited.readLengthPrefix(raw, maxLength: 100) }
        }
        _ = [UInt8]([0x80, 0x80, 0x80, 0x80, 0x80, 0x01]).withUnsafeBytes { raw in
            #expect(throws: IMCodecError.malformed("")) { try Delimited.readLengthPrefix(raw, maxLength: .max) }
        }
        // A short length padded to 10 bytes is read, as Google's delimited readers do; 11 are not.
        let padded: [UInt8] = [0x85] + [UInt8](repeating: 0x80, count: 8) + [0x00]
        try padded.withUnsafeBytes { (raw) throws in
            let prefix = try Delimited.readLengthPrefix(raw, maxLength: 100)
            #expect(prefix?.length == 5 && prefix?.prefixSize == 10)
        }
        ([0x85] + [UInt8](repeating: 0x80, count: 9) + [0x00]).withUnsafeBytes { raw in
            let error = #expect(throws: IMCodecError.self) { try Delimited.readLengthPrefix(raw, maxLength: 100) }
            #expect(error?.code == .malformed && error?.reason == "length prefix longer than 10 bytes")
        }
    }

    @Test("a record cut short and a bad record are reported with offsets in the whole stream")
    func badRecords() throws {
        var bytes = Delimited.serialize([Frame(Message.c2cText(from: "a", to: "b", "hi"))])
        let first = bytes.count
        bytes += [0x03, 0x08, 0x01, 0x0E]  // a 3-byte record whose third byte is a bad tag
        bytes += [0x09, 0x00]  // a record cut short
        var reader = Delimited.Reader<Frame>(bytes)
        #expect(try reader.next() != nil)
        do {
            _ = try reader.next()
            Issue.record("no error")
        } catch {
            #expect(error.code == .malformed)
            #expect(error.offset == first + 3)
        }
        var records = Delimited.RecordReader(Array(bytes[(first + 4)...]), maxLength: 100)
        #expect(throws: IMCodecError.truncated("")) { try records.next() }
    }
}
