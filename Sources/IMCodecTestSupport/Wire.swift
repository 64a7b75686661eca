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
