/// The protobuf wire primitives IMCodec handles in Swift, each written once: varints, tags and
/// fixed-width values, read and written. Everything in this package that reads or writes them
/// calls these (the generated encoders through ``_WireWriter``, the delimited framing, the text
/// format, IMCodecNIO, the tests and, through IMCodecTestSupport, the fuzz targets).
///
///     field  := tag value
///     tag    := varint(field_number << 3 | wire_type)
///     value  := varint                      (wire type 0)
///             | 8 bytes little-endian       (wire type 1)
///             | varint(length) bytes        (wire type 2)
///             | 4 bytes little-endian       (wire type 5)
///     varint := 1 to 10 bytes, 7 bits each, least significant group first; the high bit of a byte
///               is set when another byte follows
package enum WireFormat {
    /// The most bytes a varint takes (a 64-bit value in groups of 7 bits).
    @inlinable package static var maxVarintSize: Int { 10 }

    // MARK: Writing

    /// How many bytes `value` takes as a varint.
    @inlinable @inline(__always)
    package static func varintSize(_ value: UInt64) -> Int {
        var v = value
        var n = 1
        while v >= 0x80 {
            v >>= 7
            n += 1
        }
        return n
    }

    /// Stores `value` as a varint at `pointer`; returns the number of bytes stored
    /// (``varintSize(_:)``, at most ``maxVarintSize``).
    @inlinable @inline(__always)
    @discardableResult
    package static func storeVarint(_ value: UInt64, at pointer: UnsafeMutableRawPointer) -> Int {
        var v = value
        var i = 0
        while v >= 0x80 {
            pointer.storeBytes(of: UInt8(truncatingIfNeeded: v) | 0x80, toByteOffset: i, as: UInt8.self)
            v >>= 7
            i += 1
        }
        pointer.storeBytes(of: UInt8(truncatingIfNeeded: v), toByteOffset: i, as: UInt8.self)
        return i + 1
    }

    /// Stores `value` as a varint of exactly `size` bytes at `pointer`, padded with empty groups
    /// (valid protobuf, for a length written before it is known). `value` must fit: `varintSize(value) <= size`.
    @inlinable
    package static func storeVarint(_ value: UInt64, at pointer: UnsafeMutableRawPointer, paddedTo size: Int) {
        let n = storeVarint(value, at: pointer)
        precondition(n <= size, "WireFormat: a varint does not fit its padded size")
        guard n < size else { return }
        // The last byte written and the padding continue; the final padding byte ends the varint.
        let last = pointer.load(fromByteOffset: n - 1, as: UInt8.self)
        pointer.storeBytes(of: last | 0x80, toByteOffset: n - 1, as: UInt8.self)
        for k in n..<size - 1 { pointer.storeBytes(of: UInt8(0x80), toByteOffset: k, as: UInt8.self) }
        pointer.storeBytes(of: UInt8(0), toByteOffset: size - 1, as: UInt8.self)
    }

    /// Appends `value` as a varint.
    @inlinable
    package static func appendVarint(_ value: UInt64, to bytes: inout [UInt8]) {
        if value < 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: value))
            return
        }
        var scratch: (UInt64, UInt64) = (0, 0)  // room for maxVarintSize bytes, on the stack
        withUnsafeMutableBytes(of: &scratch) { raw in
            let n = storeVarint(value, at: raw.baseAddress!)
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: raw.bindMemory(to: UInt8.self)[..<n]))
        }
    }

    /// `value` as a varint.
    @inlinable
    package static func varint(_ value: UInt64) -> [UInt8] {
        var bytes: [UInt8] = []
        appendVarint(value, to: &bytes)
        return bytes
    }

    /// The varint value of the tag of field `number` with `wireType` (0, 1, 2, 3, 4 or 5).
    @inlinable @inline(__always)
    package static func tag(_ number: UInt64, _ wireType: UInt64) -> UInt64 {
        number << 3 | wireType
    }

    /// Appends the tag of field `number` with `wireType`.
    @inlinable
    package static func appendTag(_ number: UInt64, _ wireType: UInt64, to bytes: inout [UInt8]) {
        appendVarint(tag(number, wireType), to: &bytes)
    }

    /// Stores `value` little-endian (a fixed64 or fixed32 value) at `pointer`, unaligned.
    @inlinable @inline(__always)
    package static func storeFixed<T: FixedWidthInteger & UnsignedInteger>(
        _ value: T,
        at pointer: UnsafeMutableRawPointer
    ) {
        pointer.storeBytes(of: value.littleEndian, as: T.self)
    }

    /// Appends `value` little-endian: 8 bytes for a `UInt64` (wire type 1), 4 for a `UInt32` (wire type 5).
    @inlinable
    package static func appendFixed<T: FixedWidthInteger & UnsignedInteger>(_ value: T, to bytes: inout [UInt8]) {
        withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) }
    }

    // MARK: Reading

    /// Where reading a varint stopped.
    package enum VarintStatus: Equatable, Sendable {
        /// The varint's last byte was read.
        case complete
        /// The bytes ended first: the varint may go on in bytes not yet received.
        case truncated
        /// `maxBytes` bytes were read and each said another follows.
        case overlong
    }

    /// Reads varint bytes from `bytes[index..<end]` into `value` and `count`, continuing a varint of
    /// which `count` bytes (together worth `value`) were read before (0 and 0 start a new one), so
    /// that a varint split across buffers can be read piece by piece. Stops after the varint's last
    /// byte, at `end`, or once the varint has taken `maxBytes` bytes; `index` is left after the last
    /// byte read. As protobuf-c and Google's parsers do, bits past the 64th are dropped.
    @inlinable @inline(__always)
    package static func continueVarint<Bytes: RandomAccessCollection<UInt8>>(
        _ bytes: Bytes,
        _ index: inout Int,
        end: Int,
        value: inout UInt64,
        count: inout Int,
        maxBytes: Int = maxVarintSize
    ) -> VarintStatus where Bytes.Index == Int {
        while count < maxBytes {
            guard index < end else { return .truncated }
            let byte = bytes[index]
            index += 1
            value |= UInt64(byte & 0x7F) << UInt64(7 * count)
            count += 1
            if byte < 0x80 { return .complete }
        }
        return .overlong
    }

    /// Reads the varint at `index` (of at most `maxBytes` bytes, before `end`: the collection's end
    /// when nil) and moves `index` past it; nil, with `index` unchanged, when it is truncated or
    /// longer than `maxBytes`.
    @inlinable @inline(__always)
    package static func readVarint<Bytes: RandomAccessCollection<UInt8>>(
        _ bytes: Bytes,
        _ index: inout Int,
        end: Int? = nil,
        maxBytes: Int = maxVarintSize
    ) -> UInt64? where Bytes.Index == Int {
        var i = index
        var value: UInt64 = 0
        var count = 0
        let end = end ?? bytes.endIndex
        guard continueVarint(bytes, &i, end: end, value: &value, count: &count, maxBytes: maxBytes) == .complete else {
            return nil
        }
        index = i
        return value
    }

    /// Reads the little-endian fixed-width value at `index` (8 bytes for a `UInt64`, 4 for a
    /// `UInt32`) before `end` (the collection's end when nil) and moves `index` past it; nil, with
    /// `index` unchanged, when fewer bytes are left.
    @inlinable @inline(__always)
    package static func readFixed<T: FixedWidthInteger & UnsignedInteger, Bytes: RandomAccessCollection<UInt8>>(
        _ type: T.Type,
        _ bytes: Bytes,
        _ index: inout Int,
        end: Int? = nil
    ) -> T? where Bytes.Index == Int {
        let size = MemoryLayout<T>.size
        guard (end ?? bytes.endIndex) - index >= size else { return nil }
        var value: T = 0
        for k in 0..<size { value |= T(truncatingIfNeeded: bytes[index + k]) << (8 * k) }
        index += size
        return value
    }
}
