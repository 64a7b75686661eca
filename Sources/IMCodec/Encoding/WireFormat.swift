/// Small pieces of the protobuf wire format that IMCodec handles in Swift: varints, the
/// varint-length-prefixed ("delimited") framing, and splitting kept unknown fields.
///
///     field  := tag value
///     tag    := varint(field_number << 3 | wire_type)
///     value  := varint                      (wire type 0)
///             | 8 bytes little-endian       (wire type 1)
///             | varint(length) bytes        (wire type 2)
///             | 4 bytes little-endian       (wire type 5)
enum WireFormat {
    /// Appends `value` as a base-128 varint.
    @inline(__always)
    static func appendVarint(_ value: UInt64, to bytes: inout [UInt8]) {
        var v = value
        while v >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }

    /// How many bytes `value` takes as a varint.
    static func varintSize(_ value: UInt64) -> Int {
        var v = value
        var n = 1
        while v >= 0x80 { v >>= 7; n += 1 }
        return n
    }

    /// Reads a varint at `index`, advancing it.
    /// - Throws: ``IMCodecError`` `truncated` or `malformed` (more than 10 bytes).
    static func readVarint<C: Collection>(_ bytes: C, _ index: inout C.Index) throws(IMCodecError) -> UInt64
    where C.Element == UInt8 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        let start = index
        while true {
            guard index != bytes.endIndex else {
                throw .truncated("the input ends inside a varint", offset: bytes.distance(from: bytes.startIndex, to: start))
            }
            let byte = bytes[index]
            bytes.formIndex(after: &index)
            if shift == 63 && byte > 1 {
                throw .malformed("varint longer than 10 bytes", offset: bytes.distance(from: bytes.startIndex, to: start))
            }
            result |= UInt64(byte & 0x7F) << shift
            if byte < 0x80 { return result }
            shift += 7
        }
    }

    /// One field of a byte string holding whole fields.
    struct Field {
        var number: UInt32
        var wireType: UInt32
        /// The value's bytes (for wire type 2, including the length prefix).
        var value: Range<Int>
    }

    /// Splits bytes made of whole fields (kept unknown fields) into fields.
    static func splitFields(_ bytes: [UInt8]) throws(IMCodecError) -> [Field] {
        var fields: [Field] = []
        var i = 0
        while i < bytes.count {
            let tag = try readVarint(bytes, &i)
            let start = i
            let wireType = UInt32(tag & 7)
            switch wireType {
            case 0: _ = try readVarint(bytes, &i)
            case 1: i += 8
            case 5: i += 4
            case 2:
                let length = try readVarint(bytes, &i)
                guard length <= UInt64(bytes.count - i) else { throw .truncated("unknown field runs past the end", offset: start) }
                i += Int(length)
            default: throw .malformed("wire type \(wireType) in unknown fields", offset: start)
            }
            guard i <= bytes.count, tag >> 3 > 0, tag >> 3 <= 0x1FFF_FFFF else {
                throw .malformed("unknown fields are not whole fields", offset: start)
            }
            fields.append(Field(number: UInt32(tag >> 3), wireType: wireType, value: start..<i))
        }
        return fields
    }
}
