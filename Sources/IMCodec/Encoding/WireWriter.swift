/// Writes protobuf wire bytes back to front (implementation detail of the generated encoders).
///
/// Encoding a message front to back needs every nested message's size before its bytes, which
/// means a size pass over the whole tree first. Writing back to front (as upb does) needs no size
/// pass: a nested message is written, then its length — now known — then its tag.
///
///     buffer: [ free space ......... | tag len [ nested bytes ] tag value ... ]
///                                     ^ start                                   ^ capacity
///
/// The buffer grows by doubling, copying the written tail to the end of the new buffer.
public struct _WireWriter: ~Copyable {
    private var buffer: UnsafeMutableRawPointer
    private var capacity: Int
    private var start: Int
    /// Whether `buffer` is ours to grow and free (else it is a caller's scratch buffer).
    private var owned: Bool

    /// Creates a writer with room for `capacity` bytes before it first grows.
    init(capacity: Int = 256) {
        let capacity = max(capacity, 16)
        buffer = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
        self.capacity = capacity
        start = capacity
        owned = true
    }

    /// Creates a writer that fills `scratch` first (no allocation) and moves to the heap only if
    /// the message outgrows it. `scratch` must outlive the writer.
    @usableFromInline
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
    }

    deinit { if owned { buffer.deallocate() } }

    /// Bytes written so far.
    public var count: Int { capacity - start }

    /// Forgets what was written; keeps the buffer.
    mutating func removeAll() { start = capacity }

    /// The bytes written, front to back.
    func withBytes<R>(_ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        try body(UnsafeRawBufferPointer(start: buffer + start, count: count))
    }

    /// The bytes written, as an array (one allocation, exactly sized).
    @usableFromInline
    var bytes: [UInt8] {
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

    @inline(__always)
    private mutating func reserve(_ n: Int) {
        if _fastPath(start >= n) { return }
        grow(n)
    }

    @inline(never)
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
    public mutating func writeVarint(_ value: UInt64) {
        if value < 0x80 {
            reserve(1)
            start -= 1
            buffer.storeBytes(of: UInt8(truncatingIfNeeded: value), toByteOffset: start, as: UInt8.self)
            return
        }
        let n = WireFormat.varintSize(value)
        reserve(n)
        start -= n
        var v = value
        var i = start
        while v >= 0x80 {
            buffer.storeBytes(of: UInt8(truncatingIfNeeded: v) | 0x80, toByteOffset: i, as: UInt8.self)
            v >>= 7
            i += 1
        }
        buffer.storeBytes(of: UInt8(truncatingIfNeeded: v), toByteOffset: i, as: UInt8.self)
    }

    /// Writes 8 little-endian bytes.
    @inline(__always)
    public mutating func writeFixed64(_ value: UInt64) {
        reserve(8)
        start -= 8
        buffer.storeBytes(of: value.littleEndian, toByteOffset: start, as: UInt64.self)
    }

    /// Writes 4 little-endian bytes.
    @inline(__always)
    public mutating func writeFixed32(_ value: UInt32) {
        reserve(4)
        start -= 4
        buffer.storeBytes(of: value.littleEndian, toByteOffset: start, as: UInt32.self)
    }

    @inline(__always)
    private mutating func writeRawBuffer(_ source: UnsafeRawBufferPointer) {
        guard let base = source.baseAddress, !source.isEmpty else { return }
        reserve(source.count)
        start -= source.count
        (buffer + start).copyMemory(from: base, byteCount: source.count)
    }

    /// Writes bytes as they are (no length prefix).
    @inline(__always)
    public mutating func writeRaw(_ bytes: [UInt8]) {
        if bytes.isEmpty { return }
        bytes.withUnsafeBytes { writeRawBuffer($0) }
    }

    /// Writes a string's UTF-8 and, in front of it, its length.
    @inline(__always)
    public mutating func writeString(_ string: String) {
        var string = string
        string.withUTF8 { writeRawBuffer(UnsafeRawBufferPointer($0)) }
        writeVarint(UInt64(string.utf8.count))
    }

    /// Writes bytes and, in front of them, their length.
    @inline(__always)
    public mutating func writeBytes(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { writeRawBuffer($0) }
        writeVarint(UInt64(bytes.count))
    }

    /// Orders map keys so that, written back to front, they appear on the wire sorted by their UTF-8
    /// bytes (the order of Google's deterministic serializer).
    public static func utf8Descending(_ a: String, _ b: String) -> Bool {
        b.utf8.lexicographicallyPrecedes(a.utf8)
    }
}
