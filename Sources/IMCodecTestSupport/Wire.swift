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
        fieldVariants(bytes, depth: depth) { _, _ in [[]] }
    }

    /// The numbers that stand at an edge of the integer types a field may be read as: the largest
    /// `uint64` (`-1` as `int64` or `int32`), the smallest and largest `int64`, the largest
    /// `uint32`, and 2^31 (the smallest `int32`, the largest `uint32` half).
    public static let extremeValues: [UInt64] = [
        .max, 1 << 63, (1 << 63) - 1, UInt64(UInt32.max), 1 << 31,
    ]

    /// Every message made from `bytes` by setting one number to each of ``extremeValues``, at the
    /// depths ``fieldRemovals(_:depth:)`` reaches: a varint field; a fixed64 or fixed32 field (all
    /// bits set, and the sign bit alone); the first element of a length-delimited field that
    /// parses as varints (a packed repeated field; a string or bytes field that happens to parse
    /// gives variants a decoder may refuse). What a client sends to overflow what it counts: a
    /// seq, a time, a duration, a limit.
    public static func valueExtremes(_ bytes: [UInt8], depth: Int) -> [[UInt8]] {
        fieldVariants(bytes, depth: depth) { whole, payload in
            var valueStart = 0
            guard let tag = WireFormat.readVarint(whole, &valueStart) else { return [] }
            let key = Array(whole[..<valueStart])
            switch tag & 7 {
            case 0: return extremeValues.map { key + varint($0) }
            case 1: return [key + fixed(UInt64.max), key + fixed(UInt64(1) << 63)]
            case 5: return [key + fixed(UInt32.max), key + fixed(UInt32(1) << 31)]
            case 2:
                guard let packed = payload, !packed.isEmpty else { return [] }
                var i = 0
                var firstEnd: Int?
                while i < packed.count {
                    guard WireFormat.readVarint(packed, &i) != nil else { return [] }
                    if firstEnd == nil { firstEnd = i }
                }
                guard let firstEnd else { return [] }
                return extremeValues.map { value in
                    let elements = varint(value) + packed[firstEnd...]
                    return key + varint(UInt64(elements.count)) + elements
                }
            default: return []
            }
        }
    }

    /// Every message made from `bytes`, a `Message`, by writing one of its number fields (an
    /// integer, a bool or an enum, set or not) at its end with each of ``extremeValues`` (a
    /// fixed-width one: all bits set, the sign bit alone): a decoder keeps a field's last value, and
    /// a repeated field gains one. The same inside each message field it holds, down to `depth`
    /// levels. Each comes with the field it sets (`imcodec.v1.ConversationUpdate.6`). What
    /// ``valueExtremes(_:depth:)`` cannot reach: a number a client sends where the frame it copies
    /// has none (a clear up to the largest seq).
    public static func numberInsertions<Message: IMCodecMessage>(
        _ bytes: [UInt8],
        as type: Message.Type,
        depth: Int
    ) -> [(field: String, bytes: [UInt8])] {
        numberInsertions(bytes, Message.messageSchema, depth: depth)
    }

    private static func numberInsertions(
        _ bytes: [UInt8],
        _ schema: MessageSchema,
        depth: Int
    ) -> [(field: String, bytes: [UInt8])] {
        guard depth > 0, let fields = fields(bytes) else { return [] }
        var variants: [(field: String, bytes: [UInt8])] = []
        for field in schema.fields {
            let wireType = field.value.kind.wireType
            let values: [[UInt8]]
            switch wireType {
            case 0: values = extremeValues.map(varint)
            case 1: values = [fixed(UInt64.max), fixed(UInt64(1) << 63)]
            case 5: values = [fixed(UInt32.max), fixed(UInt32(1) << 31)]
            default: continue
            }
            let name = "\(schema.fullName).\(field.number)"
            for value in values { variants.append((name, bytes + tag(field.number, wireType) + value)) }
        }
        for (whole, payload) in fields {
            guard let payload else { continue }
            var tagEnd = whole.lowerBound
            guard let tag = WireFormat.readVarint(bytes, &tagEnd),
                let index = schema.field(number: UInt32(truncatingIfNeeded: tag >> 3)),
                let nested = schema.fields[index].value.message
            else { continue }
            let before = Array(bytes[..<whole.lowerBound]) + bytes[whole.lowerBound..<tagEnd]
            let after = Array(bytes[whole.upperBound...])
            for (name, inner) in numberInsertions(Array(bytes[payload]), nested, depth: depth - 1) {
                variants.append((name, before + varint(UInt64(inner.count)) + inner + after))
            }
        }
        return variants
    }

    /// Every message made from `bytes` by replacing one field with each of `change(field, payload)`
    /// (the field's whole bytes, tag included, and a length-delimited field's payload), at the top
    /// level or inside a length-delimited field that parses as whole fields, down to `depth` levels.
    private static func fieldVariants(
        _ bytes: [UInt8],
        depth: Int,
        _ change: (_ whole: [UInt8], _ payload: [UInt8]?) -> [[UInt8]]
    ) -> [[UInt8]] {
        guard depth > 0, let fields = fields(bytes) else { return [] }
        var variants: [[UInt8]] = []
        for field in fields {
            let before = bytes[..<field.whole.lowerBound]
            let after = bytes[field.whole.upperBound...]
            for replacement in change(Array(bytes[field.whole]), field.payload.map { Array(bytes[$0]) }) {
                variants.append(Array(before + replacement + after))
            }
            guard let payload = field.payload else { continue }
            let head = Array(bytes[field.whole.lowerBound..<payload.lowerBound])
            // The tag alone: the length is written again for each changed payload.
            var tagEnd = 0
            _ = WireFormat.readVarint(head, &tagEnd)
            let tag = Array(head[..<tagEnd])
            for inner in fieldVariants(Array(bytes[payload]), depth: depth - 1, change) {
                variants.append(Array(before) + tag + varint(UInt64(inner.count)) + inner + Array(after))
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
