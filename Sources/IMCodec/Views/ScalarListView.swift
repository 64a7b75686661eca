/// The elements of a repeated number field, read in place.
public struct ScalarListView<Element: BitwiseCopyable>: ~Escapable {
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
    public subscript(index: Int) -> Element {
        precondition(index >= 0 && index < count, "index out of range")
        return _base.unsafelyUnwrapped.load(fromByteOffset: index * MemoryLayout<Element>.stride, as: Element.self)
    }

    /// The elements as an array.
    public func materialize() -> [Element] {
        guard let base = _base, count > 0 else { return [] }
        return Array(UnsafeBufferPointer(start: base.assumingMemoryBound(to: Element.self), count: count))
    }
}
