// The views of string, bytes, repeated and map fields that the generated message views
// (`Message.View`, `Frame.View`, ...) hand out. Like the message views they read protobuf-c's
// structs in place, allocate nothing, and are `~Escapable`: they live only as long as the view
// that lent them, which lives only inside `WireDecoder.withView(_:_:_:)`.

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

/// The elements of a repeated string field, read in place.
public struct StringListView: ~Escapable {
    /// protobuf-c's array of `ProtobufCBinaryData` (see `_BinaryData`).
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
            let (base, length) = _BinaryData.read(_base.unsafelyUnwrapped, at: index * _BinaryData.stride)
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
        guard let entry = _entries.unsafelyUnwrapped.load(
            fromByteOffset: index * MemoryLayout<UnsafeRawPointer?>.stride, as: UnsafeRawPointer?.self)
        else { return (nil, 0) }
        return _BinaryData.read(entry, at: offset)
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

/// How protobuf-c lays out a string or bytes value (`ProtobufCBinaryData`: `size_t len;
/// uint8_t *data;`), so that the views above read lists and map entries without importing C.
/// Sources/CIMCodecRuntime/include/imcodec_string_field.h checks the C declaration against it when
/// it compiles (`_Static_assert`).
enum _BinaryData {
    static let stride = 2 * MemoryLayout<Int>.stride
    static let lengthOffset = 0
    static let dataOffset = MemoryLayout<Int>.stride

    /// The bytes and length of the `ProtobufCBinaryData` at `offset` bytes past `base`.
    @inline(__always)
    static func read(_ base: UnsafeRawPointer, at offset: Int) -> (UnsafePointer<UInt8>?, Int) {
        let length = base.load(fromByteOffset: offset + lengthOffset, as: Int.self)
        let data = base.load(fromByteOffset: offset + dataOffset, as: UnsafePointer<UInt8>?.self)
        return (length > 0 ? data : nil, length)
    }
}
