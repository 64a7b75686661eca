/// The entries of a `map<string, string>` field, read in place, in wire order. A key can occur in
/// more than one entry (protobuf parsing keeps the last one, as ``value(forKey:)`` and
/// ``materialize()`` do).
public struct StringMapView: ~Escapable {
    let _entries: UnsafeRawPointer?
    let keyOffset: Int
    let valueOffset: Int
    /// The number of entries on the wire (a repeated key counts each time).
    public let count: Int

    @_lifetime(borrow entries)
    init(_entries entries: UnsafeRawPointer?, count: Int, keyOffset: Int, valueOffset: Int) {
        _entries = entries
        self.count = entries == nil ? 0 : count
        self.keyOffset = keyOffset
        self.valueOffset = valueOffset
    }

    /// Whether the map has no entries.
    public var isEmpty: Bool { count == 0 }

    /// The positions of the entries, `0..<count`.
    public var indices: Range<Int> { 0..<count }

    private func data(_ index: Int, _ offset: Int) -> (UnsafePointer<UInt8>?, Int) {
        precondition(index >= 0 && index < count, "index out of range")
        guard
            let entry = _entries.unsafelyUnwrapped.load(
                fromByteOffset: index * MemoryLayout<UnsafeRawPointer?>.stride,
                as: UnsafeRawPointer?.self
            )
        else { return (nil, 0) }
        return BinaryData.read(entry, at: offset)
    }

    /// The key of entry `index`, which must be in `indices`.
    @_lifetime(copy self)
    public func key(at index: Int) -> StringView {
        let (base, length) = data(index, keyOffset)
        return _overrideLifetime(StringView(_base: base, count: length), copying: self)
    }

    /// The value of entry `index`, which must be in `indices`.
    @_lifetime(copy self)
    public func value(at index: Int) -> StringView {
        let (base, length) = data(index, valueOffset)
        return _overrideLifetime(StringView(_base: base, count: length), copying: self)
    }

    /// The value of the last entry whose key is `key`, as protobuf parsing keeps it; `nil` when
    /// no entry has that key.
    @_lifetime(copy self)
    public func value(forKey key: String) -> StringView? {
        var index = count - 1
        while index >= 0 {
            if self.key(at: index).equals(key) { return value(at: index) }
            index -= 1
        }
        return nil
    }

    /// The map as a dictionary (a repeated key keeps its last value).
    public func materialize() -> [String: String] {
        guard count > 0 else { return [:] }
        var out: [String: String] = [:]
        out.reserveCapacity(count)
        for index in 0..<count { out[key(at: index).materialize()] = value(at: index).materialize() }
        return out
    }
}
