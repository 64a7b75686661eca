// The views of string, bytes, repeated and map fields that the generated message views
// (`Message.View`, `Frame.View`, ...) hand out: `StringView`, `BytesView`, `StringListView`,
// `ScalarListView` and `StringMapView`, one file each. Like the message views they read
// protobuf-c's structs in place (through the seam: CSeam/BinaryData.swift), allocate nothing, and
// are `~Escapable`: they live only as long as the view that lent them, which lives only inside
// `WireDecoder.withView(_:_:_:)`.

/// The UTF-8 bytes of a string field, read in place (checked as UTF-8 before protobuf-c ran).
public struct StringView: ~Escapable {
    let _base: UnsafePointer<UInt8>?
    /// The number of UTF-8 bytes.
    public let count: Int

    @_lifetime(borrow base)
    init(_base base: UnsafePointer<UInt8>?, count: Int) {
        _base = count > 0 ? base : nil
        self.count = _base == nil ? 0 : count
    }

    /// Whether the string is empty.
    public var isEmpty: Bool { count == 0 }

    /// The UTF-8 byte at `index`, which must be in `0..<count`.
    public subscript(index: Int) -> UInt8 {
        precondition(index >= 0 && index < count, "index out of range")
        return _base.unsafelyUnwrapped[index]
    }

    /// The first UTF-8 byte, or `nil` for the empty string.
    public var first: UInt8? { count > 0 ? _base.unsafelyUnwrapped[0] : nil }

    /// Calls `body` with the UTF-8 bytes; the buffer is valid only during the call.
    public func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeRawBufferPointer(start: _base, count: count))
    }

    /// Whether the string equals `other`, compared by UTF-8 bytes (no allocation).
    public func equals(_ other: String) -> Bool {
        var other = other
        return other.withUTF8 { utf8 in
            guard utf8.count == count else { return false }
            for index in 0..<count where utf8[index] != _base.unsafelyUnwrapped[index] { return false }
            return true
        }
    }

    /// The string as a Swift `String` (allocates unless it is short).
    ///
    /// The pre-scan checked the bytes as UTF-8 before protobuf-c ran, so where the standard library
    /// can take them without checking again (`UTF8Span(unchecked:)`, Swift 6.2's runtime) it does;
    /// elsewhere `String(decoding:as:)` checks them once more (and would repair, never trap).
    public func materialize() -> String {
        guard let base = _base else { return "" }
        let buffer = UnsafeBufferPointer(start: base, count: count)
        if #available(macOS 26, iOS 26, tvOS 26, watchOS 26, visionOS 26, *) {
            return String(copying: UTF8Span(unchecked: buffer.span))
        }
        return String(decoding: buffer, as: UTF8.self)
    }
}
