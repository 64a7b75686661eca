/// The bytes of a bytes field, read in place.
public struct BytesView: ~Escapable {
    let _base: UnsafePointer<UInt8>?
    /// The number of bytes.
    public let count: Int

    @_lifetime(borrow base)
    init(_base base: UnsafePointer<UInt8>?, count: Int) {
        _base = count > 0 ? base : nil
        self.count = _base == nil ? 0 : count
    }

    /// Whether there are no bytes.
    public var isEmpty: Bool { count == 0 }

    /// The byte at `index`, which must be in `0..<count`.
    public subscript(index: Int) -> UInt8 {
        precondition(index >= 0 && index < count, "index out of range")
        return _base.unsafelyUnwrapped[index]
    }

    /// The first byte, or `nil` when there is none.
    public var first: UInt8? { count > 0 ? _base.unsafelyUnwrapped[0] : nil }

    /// Calls `body` with the bytes; the buffer is valid only during the call.
    public func withUnsafeBytes<R, E: Error>(_ body: (UnsafeRawBufferPointer) throws(E) -> R) throws(E) -> R {
        try body(UnsafeRawBufferPointer(start: _base, count: count))
    }

    /// The bytes as an array.
    public func materialize() -> [UInt8] {
        guard let base = _base else { return [] }
        return Array(UnsafeBufferPointer(start: base, count: count))
    }
}
