// Wire bytes built by hand for tests and probes, written by the library's one writer
// (``WireFormat``, package access): the one wire builder of Tests/, Fuzz/ and Benchmarks/.
// Test-only, like the rest of IMCodecTestSupport.
import IMCodec

/// Wire bytes for tests: tags, varints, fixed-width values and whole fields, encoded by
/// ``WireFormat``. Field numbers and wire types take any integer type (the C field-number constants
/// are `UInt32`).
public enum Wire {
    /// `value` as a varint.
    public static func varint(_ value: UInt64) -> [UInt8] { WireFormat.varint(value) }

    /// The tag of field `number` with `wireType`.
    public static func tag(_ number: some BinaryInteger, _ wireType: some BinaryInteger) -> [UInt8] {
        varint(WireFormat.tag(UInt64(number), UInt64(wireType)))
    }

    /// A varint field (wire type 0).
    public static func uint(_ number: some BinaryInteger, _ value: UInt64) -> [UInt8] { tag(number, 0) + varint(value) }

    /// A length-delimited field (wire type 2).
    public static func field(_ number: some BinaryInteger, _ payload: [UInt8]) -> [UInt8] {
        tag(number, 2) + varint(UInt64(payload.count)) + payload
    }

    /// A length-delimited field holding the UTF-8 of `text`.
    public static func string(_ number: some BinaryInteger, _ text: String) -> [UInt8] {
        field(number, Array(text.utf8))
    }

    /// `value` little-endian: 8 bytes for a `UInt64`, 4 for a `UInt32`.
    public static func fixed<T: FixedWidthInteger & UnsignedInteger>(_ value: T) -> [UInt8] {
        var out: [UInt8] = []
        WireFormat.appendFixed(value, to: &out)
        return out
    }

    /// A fixed64 field (wire type 1).
    public static func fixed64(_ number: some BinaryInteger, _ value: UInt64) -> [UInt8] {
        tag(number, 1) + fixed(value)
    }

    /// A fixed32 field (wire type 5).
    public static func fixed32(_ number: some BinaryInteger, _ value: UInt32) -> [UInt8] {
        tag(number, 5) + fixed(value)
    }

    /// `count` copies of `piece`.
    public static func repeated(_ piece: [UInt8], _ count: Int) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(piece.count * count)
        for _ in 0..<count { out += piece }
        return out
    }

    /// The top-level fields of `bytes`: each one's whole span (tag and value), and for a
    /// length-delimited field its payload's span; `nil` when `bytes` are not a sequence of whole
    /// fields (groups included: wire types 3 and 4 are refused).
    public static func fields(_ bytes: [UInt8]) -> [(whole: Range<Int>, payload: Range<Int>?)]? {
        var fields: [(whole: Range<Int>, payload: Range<Int>?)] = []
        var i = 0
        while i < bytes.count {
            let start = i
            guard let tag = WireFormat.readVarint(bytes, &i) else { return nil }
            var payload: Range<Int>?
            switch tag & 7 {
            case 0: guard WireFormat.readVarint(bytes, &i) != nil else { return nil }
            case 1: i += 8
            case 5: i += 4
            case 2:
                guard let length = WireFormat.readVarint(bytes, &i), length <= UInt64(bytes.count - i) else {
                    return nil
                }
                payload = i..<(i + Int(length))
                i += Int(length)
            default: return nil
            }
            guard i <= bytes.count else { return nil }
            fields.append((start..<i, payload))
        }
        return fields
    }

    /// Every message made from `bytes` by removing one field, at the top level or inside a
    /// length-delimited field that parses as whole fields (a nested message; a string or bytes
    /// field that happens to parse gives variants a decoder may refuse), down to `depth` levels.
    /// What a client leaves out: a reference without its sender, a conversation without its target.
    public static func fieldRemovals(_ bytes: [UInt8], depth: Int) -> [[UInt8]] {
        guard depth > 0, let fields = fields(bytes) else { return [] }
        var variants: [[UInt8]] = []
        for field in fields {
            variants.append(Array(bytes[..<field.whole.lowerBound] + bytes[field.whole.upperBound...]))
            guard let payload = field.payload else { continue }
            let head = Array(bytes[field.whole.lowerBound..<payload.lowerBound])
            // The tag alone: the length is written again for each smaller payload.
            var tagEnd = 0
            _ = WireFormat.readVarint(head, &tagEnd)
            let tag = Array(head[..<tagEnd])
            for inner in fieldRemovals(Array(bytes[payload]), depth: depth - 1) {
                variants.append(
                    Array(bytes[..<field.whole.lowerBound]) + tag + varint(UInt64(inner.count)) + inner
                        + Array(bytes[field.whole.upperBound...])
                )
            }
        }
        return variants
    }

    /// Frame.message → (Message.elements → MessageElement.merger → MergerElement.messages)* nested
    /// to `levels` messages in all (the Frame counts as one).
    public static func nestingBomb(levels: Int) -> [UInt8] {
        // Innermost first: build the chain of (field number) from the inside out.
        var numbers: [UInt64] = [10]  // Frame.message
        let cycle: [UInt64] = [20, 10, 4]  // Message.elements, MessageElement.merger, MergerElement.messages
        while numbers.count < levels - 1 { numbers.append(cycle[(numbers.count - 1) % 3]) }
        var bytes: [UInt8] = []
        for number in numbers.reversed() { bytes = field(number, bytes) }
        return bytes
    }
}
