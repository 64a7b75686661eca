import CIMCodecRuntime
import CProtobufC

/// An arena that protobuf-c allocates from while IMCodec decodes or encodes (implementation detail).
///
/// Wraps `imcodec_arena` (Sources/CIMCodecRuntime/arena.c). Everything allocated in it dies at the
/// next ``reset()`` or when the arena is released, so nothing that points into it may outlive the
/// scope that uses it: decoding copies every value out into Swift before it returns.
public final class _Arena {
    let raw: OpaquePointer

    /// Creates an arena with a first block of `firstBlockSize` bytes and a cap of `maxBytes`.
    init(firstBlockSize: Int = 16 << 10, maxBytes: Int = .max) throws(IMCodecError) {
        guard let raw = imcodec_arena_create(firstBlockSize, maxBytes) else {
            throw .outOfMemory("cannot allocate a \(firstBlockSize)-byte arena")
        }
        self.raw = raw
    }

    deinit { imcodec_arena_destroy(raw) }

    /// Frees every allocation at once; keeps the first block.
    func reset() { imcodec_arena_reset(raw) }

    /// Caps the bytes handed out from now until the next reset.
    func setMaxBytes(_ maxBytes: Int) { imcodec_arena_set_max_bytes(raw, maxBytes) }

    /// protobuf-c's view of the arena.
    var allocator: UnsafeMutablePointer<ProtobufCAllocator> { imcodec_arena_allocator(raw) }

    /// Whether an allocation was refused by the cap since the last reset.
    var limitHit: Bool { imcodec_arena_limit_hit(raw) != 0 }

    /// Bytes handed out since the last reset.
    var bytesUsed: Int { imcodec_arena_bytes_used(raw) }

    /// Bytes held from the system.
    var bytesReserved: Int { imcodec_arena_bytes_reserved(raw) }

    @inline(__always)
    func allocate(_ size: Int) throws(IMCodecError) -> UnsafeMutableRawPointer {
        guard let p = imcodec_arena_alloc(raw, size) else {
            throw .outOfMemory("the encoding arena could not grow by \(size) bytes")
        }
        return p
    }

    @inline(__always)
    func allocate<T>(_ type: T.Type, count: Int) throws(IMCodecError) -> UnsafeMutablePointer<T> {
        let (bytes, overflow) = MemoryLayout<T>.stride.multipliedReportingOverflow(by: count)
        guard !overflow else { throw .outOfMemory("\(count) elements do not fit in memory") }
        return try allocate(bytes).bindMemory(to: T.self, capacity: count)
    }

    /// A new protobuf-c message struct, set to its defaults by its generated init function.
    @inline(__always)
    func message<T>(_ type: T.Type, _ initialize: (UnsafeMutablePointer<T>?) -> Void) throws(IMCodecError)
    -> UnsafeMutablePointer<T> {
        let p = try allocate(T.self, count: 1)
        initialize(p)
        return p
    }

    /// The UTF-8 of `string` copied into the arena, as protobuf-c bytes.
    @inline(__always)
    func string(_ string: String) throws(IMCodecError) -> ProtobufCBinaryData {
        var string = string
        var result: Result<ProtobufCBinaryData, IMCodecError> = .success(ProtobufCBinaryData(len: 0, data: nil))
        string.withUTF8 { utf8 in result = Result { () throws(IMCodecError) in try copy(UnsafeRawBufferPointer(utf8)) } }
        return try result.get()
    }

    /// `bytes` copied into the arena.
    @inline(__always)
    func bytes(_ bytes: [UInt8]) throws(IMCodecError) -> ProtobufCBinaryData {
        var result: Result<ProtobufCBinaryData, IMCodecError> = .success(ProtobufCBinaryData(len: 0, data: nil))
        bytes.withUnsafeBytes { raw in result = Result { () throws(IMCodecError) in try copy(raw) } }
        return try result.get()
    }

    @inline(__always)
    private func copy(_ source: UnsafeRawBufferPointer) throws(IMCodecError) -> ProtobufCBinaryData {
        guard let base = source.baseAddress, !source.isEmpty else {
            return ProtobufCBinaryData(len: 0, data: nil)
        }
        let p = try allocate(source.count)
        p.copyMemory(from: base, byteCount: source.count)
        return ProtobufCBinaryData(len: source.count, data: p.assumingMemoryBound(to: UInt8.self))
    }

    /// A NUL-terminated copy of `string` (map keys and values, which protobuf-c keeps as C strings).
    func cString(_ string: String) throws(IMCodecError) -> UnsafeMutablePointer<CChar> {
        var string = string
        var result: Result<UnsafeMutablePointer<CChar>, IMCodecError> = .failure(.outOfMemory("unreachable"))
        string.withUTF8 { utf8 in
            result = Result { () throws(IMCodecError) -> UnsafeMutablePointer<CChar> in
                if utf8.contains(0) {
                    throw .unsupported("map keys and values cannot contain U+0000: protobuf-c keeps them as C strings")
                }
                let p = try allocate(CChar.self, count: utf8.count + 1)
                if let base = utf8.baseAddress {
                    UnsafeMutableRawPointer(p).copyMemory(from: base, byteCount: utf8.count)
                }
                p[utf8.count] = 0
                return p
            }
        }
        return try result.get()
    }

    func strings(_ values: [String]) throws(IMCodecError) -> (Int, UnsafeMutablePointer<ProtobufCBinaryData>?) {
        try scalars(values) { (value) throws(IMCodecError) in try string(value) }
    }

    func byteArrays(_ values: [[UInt8]]) throws(IMCodecError) -> (Int, UnsafeMutablePointer<ProtobufCBinaryData>?) {
        try scalars(values) { (value) throws(IMCodecError) in try bytes(value) }
    }

    /// A C array holding `transform` of every value.
    @inline(__always)
    func scalars<S, C>(_ values: [S], _ transform: (S) throws(IMCodecError) -> C) throws(IMCodecError)
    -> (Int, UnsafeMutablePointer<C>?) {
        if values.isEmpty { return (0, nil) }
        let p = try allocate(C.self, count: values.count)
        for (i, value) in values.enumerated() {
            (p + i).initialize(to: try transform(value))
        }
        return (values.count, p)
    }

    /// A C array of pointers to the protobuf-c form of every message.
    @inline(__always)
    func messages<S, C>(_ values: [S], _ build: (S) throws(IMCodecError) -> UnsafeMutablePointer<C>)
    throws(IMCodecError) -> (Int, UnsafeMutablePointer<UnsafeMutablePointer<C>?>?) {
        try scalars(values) { (value) throws(IMCodecError) -> UnsafeMutablePointer<C>? in try build(value) }
    }

    /// Map entries, sorted by the UTF-8 bytes of their keys (the order Google's deterministic
    /// serializer uses).
    func mapEntries<E>(
        _ map: [String: String],
        _ initialize: (UnsafeMutablePointer<E>?) -> Void,
        _ set: (UnsafeMutablePointer<E>, UnsafeMutablePointer<CChar>, UnsafeMutablePointer<CChar>) -> Void
    ) throws(IMCodecError) -> (Int, UnsafeMutablePointer<UnsafeMutablePointer<E>?>?) {
        if map.isEmpty { return (0, nil) }
        let keys = map.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        return try scalars(keys) { (key) throws(IMCodecError) -> UnsafeMutablePointer<E>? in
            let entry = try message(E.self, initialize)
            set(entry, try cString(key), try cString(map[key] ?? ""))
            return entry
        }
    }

    /// Attaches `unknownFields` to a protobuf-c message so that pack writes them after the known
    /// fields.
    func setUnknownFields(_ unknownFields: UnknownFields, on base: inout ProtobufCMessage) throws(IMCodecError) {
        if unknownFields.isEmpty { return }
        let fields = try WireFormat.splitFields(unknownFields.bytes)
        let array = try allocate(ProtobufCMessageUnknownField.self, count: fields.count)
        for (i, field) in fields.enumerated() {
            let data = try bytes(Array(unknownFields.bytes[field.value]))
            (array + i).initialize(to: ProtobufCMessageUnknownField(
                tag: field.number,
                wire_type: ProtobufCWireType(rawValue: field.wireType),
                len: data.len,
                data: data.data))
        }
        base.n_unknown_fields = UInt32(fields.count)
        base.unknown_fields = array
    }
}
