/// Writes protobuf wire bytes back to front (implementation detail of the generated encoders).
///
/// Encoding a message front to back needs every nested message's size before its bytes, which
/// means a size pass over the whole tree first. Writing back to front (as upb does) needs no size
/// pass: a nested message is written, then its length — now known — then its tag.
///
///     buffer: [ free space ......... | tag len [ nested bytes ] tag value ... ]
///                                     ^ start                                   ^ capacity
///
/// The buffer grows by doubling, copying the written tail to the end of the new buffer. A writer
/// made with ``init(sizing:)`` never grows: once its buffer is full it only counts, so that one pass
/// gives the exact size of a message of any size (see ``IMCodecMessage/serializedBytes()``).
///
/// Public only because ``_IMCodecMessageImplementation/_encode(to:)`` names it; its members are
/// internal (the generated encoders are in this module) or `@usableFromInline` (what the inlinable
/// `serializedBytes()` calls).
public struct _WireWriter: ~Copyable {
    private var buffer: UnsafeMutableRawPointer
    private var capacity: Int
    /// Where the written bytes begin; below 0 once a writer that may not grow has overflowed
    /// (the bytes are then counted, not stored).
    private var start: Int
    /// Whether `buffer` is ours to grow and free (else it is a caller's scratch buffer).
    private var owned: Bool
    /// Whether the writer moves to a bigger heap buffer when full (else it goes on counting).
    private let growable: Bool

    /// Creates a writer with room for `capacity` bytes before it first grows.
    init(capacity: Int = 256) {
        let capacity = max(capacity, 16)
        buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
        self.capacity = capacity
        start = capacity
        owned = true
        growable = true
    }

    /// Creates a writer that fills `scratch` first (no allocation) and moves to the heap only if
    /// the message outgrows it. `scratch` must outlive the writer.
    init(scratch: UnsafeMutableRawBufferPointer) {
        if let base = scratch.baseAddress, scratch.count >= 16 {
            buffer = base
            capacity = scratch.count
            owned = false
        } else {
            capacity = 256
            buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
            owned = true
        }
        start = capacity
        growable = true
    }

    /// Creates a writer that fills `buffer` and never allocates: bytes that do not fit are counted
    /// but not stored, and ``overflowed`` tells. ``count`` is then the exact size of what was
    /// written. `buffer` must outlive the writer.
    @usableFromInline
    init(sizing buffer: UnsafeMutableRawBufferPointer) {
        // (A 1-byte dummy base for an empty buffer: it is never written, as everything overflows.)
        self.buffer = buffer.baseAddress ?? UnsafeMutableRawPointer(bitPattern: 1)!
        capacity = buffer.count
        start = capacity
        owned = false
        growable = false
    }

    deinit { if owned { buffer.deallocate() } }

    /// Bytes written so far (counted, for a writer that has overflowed).
    @usableFromInline
    var count: Int { capacity - start }

    /// Whether a writer made with ``init(sizing:)`` ran out of room: its bytes are incomplete, and
    /// only ``count`` is meaningful.
    @usableFromInline
    var overflowed: Bool { start < 0 }

    /// Forgets what was written; keeps the buffer.
    mutating func removeAll() { start = capacity }

    /// The bytes written, front to back.
    func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        precondition(!overflowed, "_WireWriter: the bytes did not fit")
        return try body(UnsafeRawBufferPointer(start: buffer + start, count: count))
    }

    /// The bytes written, as an array (one allocation, exactly sized).
    @usableFromInline
    var bytes: [UInt8] {
        precondition(!overflowed, "_WireWriter: the bytes did not fit")
        let count = count
        // (Never `unsafeUninitializedCapacity: 0`: the standard library then writes the count into
        // the shared empty-array singleton, a data race ThreadSanitizer reports.)
        if count == 0 { return [] }
        return [UInt8](unsafeUninitializedCapacity: count) { array, initialized in
            if count > 0, let base = array.baseAddress {
                UnsafeMutableRawPointer(base).copyMemory(from: buffer + start, byteCount: count)
            }
            initialized = count
        }
    }

    /// Encodes `count` bytes (the exact size, from a pass with a writer that overflowed) straight
    /// into a new array: the one allocation of an encode larger than a scratch buffer.
    @usableFromInline
    static func bytes(count: Int, _ write: (inout _WireWriter) -> Void) -> [UInt8] {
        if count == 0 { return [] }
        return [UInt8](unsafeUninitializedCapacity: count) { array, initialized in
            var writer = _WireWriter(sizing: UnsafeMutableRawBufferPointer(array))
            write(&writer)
            // A value encodes to the same bytes twice; anything else would leave bytes unwritten.
            precondition(writer.start == 0, "_WireWriter: the second pass wrote another size")
            initialized = count
        }
    }

    /// Moves `start` back by `n`; whether the `n` bytes at `start` may be stored (false: the writer
    /// may not grow and is full, so it only counts).
    @inline(__always)
    private mutating func claim(_ n: Int) -> Bool {
        if _fastPath(start >= n) {
            start -= n
            return true
        }
        return claimSlow(n)
    }

    @inline(never)
    private mutating func claimSlow(_ n: Int) -> Bool {
        if growable {
            grow(n)
            start -= n
            return true
        }
        start -= n
        return false
    }

    private mutating func grow(_ n: Int) {
        let used = count
        var newCapacity = capacity * 2
        while newCapacity - used < n { newCapacity *= 2 }
        let newBuffer = UnsafeMutableRawPointer.allocate(byteCount: newCapacity, alignment: 16)
        (newBuffer + (newCapacity - used)).copyMemory(from: buffer + start, byteCount: used)
        if owned { buffer.deallocate() }
        buffer = newBuffer
        capacity = newCapacity
        start = newCapacity - used
        owned = true
    }

    /// Writes `value` as a varint in front of what is written.
    @inline(__always)
    mutating func writeVarint(_ value: UInt64) {
        if value < 0x80 {
            // A varint below 0x80 is the byte itself.
            if claim(1) { buffer.storeBytes(of: UInt8(truncatingIfNeeded: value), toByteOffset: start, as: UInt8.self) }
            return
        }
        guard claim(WireFormat.varintSize(value)) else { return }
        WireFormat.storeVarint(value, at: buffer + start)
    }

    /// Writes 8 little-endian bytes.
    @inline(__always)
    mutating func writeFixed64(_ value: UInt64) {
        guard claim(8) else { return }
        WireFormat.storeFixed(value, at: buffer + start)
    }

    /// Writes 4 little-endian bytes.
    @inline(__always)
    mutating func writeFixed32(_ value: UInt32) {
        guard claim(4) else { return }
        WireFormat.storeFixed(value, at: buffer + start)
    }

    @inline(__always)
    private mutating func writeRawBuffer(_ source: UnsafeRawBufferPointer) {
        guard let base = source.baseAddress, !source.isEmpty, claim(source.count) else { return }
        (buffer + start).copyMemory(from: base, byteCount: source.count)
    }

    /// Writes bytes as they are (no length prefix).
    @inline(__always)
    mutating func writeRaw(_ bytes: [UInt8]) {
        if bytes.isEmpty { return }
        bytes.withUnsafeBytes { writeRawBuffer($0) }
    }

    /// Writes a string's UTF-8 and, in front of it, its length.
    @inline(__always)
    mutating func writeString(_ string: String) {
        var string = string
        string.withUTF8 { writeRawBuffer(UnsafeRawBufferPointer($0)) }
        writeVarint(UInt64(string.utf8.count))
    }

    /// Writes bytes and, in front of them, their length.
    @inline(__always)
    mutating func writeBytes(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { writeRawBuffer($0) }
        writeVarint(UInt64(bytes.count))
    }

    /// Writes a `map<string, V>` field: calls `writeEntry` once per entry (it writes the entry,
    /// its length and the field's tag), largest key first, so that the entries appear on the wire
    /// sorted by the UTF-8 of their keys, as Google's deterministic serializer writes them.
    ///
    /// Allocates nothing for maps of up to 64 entries: their order is sorted in a stack buffer of
    /// the dictionary's indices (the most `withUnsafeTemporaryAllocation` always places on the
    /// stack is 1 KiB). A larger map's buffer may go to the heap, and is sorted by the standard
    /// library (O(n log n), where the insertion sort of small maps is O(n²)).
    @inline(__always)
    mutating func writeMap<Value>(
        _ map: [String: Value],
        _ writeEntry: (inout _WireWriter, String, Value) -> Void
    ) {
        switch map.count {
        case 0:
            return
        case 1:
            let entry = map[map.startIndex]
            writeEntry(&self, entry.key, entry.value)
        default:
            writeSortedMap(map, writeEntry)
        }
    }

    private mutating func writeSortedMap<Value>(
        _ map: [String: Value],
        _ writeEntry: (inout _WireWriter, String, Value) -> Void
    ) {
        let n = map.count
        withUnsafeTemporaryAllocation(of: Dictionary<String, Value>.Index.self, capacity: n) { order in
            guard let base = order.baseAddress else { return }
            defer { base.deinitialize(count: n) }
            if n > 64 {
                var index = map.startIndex
                for position in 0..<n {
                    (base + position).initialize(to: index)
                    map.formIndex(after: &index)
                }
                var indices = order  // (the same memory; `sort` is declared mutating)
                indices.sort { map[$0].key.utf8.lexicographicallyPrecedes(map[$1].key.utf8) }
            } else {
                // Insertion sort of the indices by key, ascending.
                var sorted = 0
                var index = map.startIndex
                while index != map.endIndex {
                    let key = map[index].key
                    var position = sorted
                    while position > 0, key.utf8.lexicographicallyPrecedes(map[base[position - 1]].key.utf8) {
                        position -= 1
                    }
                    if position < sorted {
                        (base + position + 1).moveInitialize(from: base + position, count: sorted - position)
                    }
                    (base + position).initialize(to: index)
                    sorted += 1
                    map.formIndex(after: &index)
                }
            }
            // Back to front: the largest key first.
            for position in stride(from: n - 1, through: 0, by: -1) {
                let entry = map[base[position]]
                writeEntry(&self, entry.key, entry.value)
            }
        }
    }
}
