import IMCodec
import Testing

/// A known field that arrives with the wrong wire type is kept as an unknown field; when its tag
/// is padded (an overlong varint), re-encoding writes the tag in its shortest form and the value as
/// it came, as the reference canonical bytes do (Scripts/google_reference.py re-serializes every
/// tag). Found by the differential test (a bit flip turned `a2 01` into `a2 00`).
@Suite("Unknown fields: a padded tag is written back in its shortest form")
struct PaddedTagTests {
    @Test("Message.random (field 4) sent as bytes with the tag padded to two bytes")
    func paddedTagOfAMismatchedField() throws {
        // Frame.message { field 4, wire type 2, tag a2 00 (34 padded), length 1, "x" }.
        let padded: [UInt8] = [0x52, 0x04, 0xA2, 0x00, 0x01, 0x78]
        let frame = try Frame(serializedBytes: padded)
        #expect(frame.serializedBytes() == [0x52, 0x03, 0x22, 0x01, 0x78])
        // A padded varint value is kept as it came (field 5, sender_id, sent as a varint 1 in 3 bytes).
        let paddedValue: [UInt8] = [0x52, 0x04, 0x28, 0x81, 0x80, 0x00]
        #expect(try Frame(serializedBytes: paddedValue).serializedBytes() == paddedValue)
    }
}
