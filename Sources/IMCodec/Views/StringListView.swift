/// The elements of a repeated string field, read in place.
public struct StringListView: ~Escapable {
    /// protobuf-c's array of `ProtobufCBinaryData` (read through `BinaryData`, in the seam).
    let _base: UnsafeRawPointer?
    /// The number of elements.
    public let count: Int

    @_lifetime(borrow base)
    init(_base base: UnsafeRawPointer?, count: Int) {
        _base = base
        self.count = base == nil ? 0 : count
    }

    /// Whether the field has no elements.
    public var isEmpty: Bool { count == 0 }

    /// The positions of the elements, `0..<count`.
    public var indices: Range<Int> { 0..<count }

    /// The element at `index`, which must be in `indices`.
    public subscript(index: Int) -> StringView {
        @_lifetime(copy self)
        get {
            precondition(index >= 0 && index < count, "index out of range")
            let (base, length) = BinaryData.element(index, of: _base.unsafelyUnwrapped)
            return _overrideLifetime(StringView(_base: base, count: length), copying: self)
        }
    }

    /// Calls `body` with each element in order.
    public func forEach(_ body: (StringView) throws -> Void) rethrows {
        for index in 0..<count { try body(self[index]) }
    }

    /// The elements as Swift strings.
    public func materialize() -> [String] {
        guard count > 0 else { return [] }
        return Array(unsafeUninitializedCapacity: count) { buffer, initialized in
            for index in 0..<count { (buffer.baseAddress! + index).initialize(to: self[index].materialize()) }
            initialized = count
        }
    }
}
