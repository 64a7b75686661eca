internal import CIMCodecRuntime
internal import CProtobufC

/// An arena that protobuf-c allocates from while IMCodec decodes or encodes.
///
/// Wraps `imcodec_arena` (Sources/CIMCodecRuntime/arena.c). Everything allocated in it dies at the
/// next ``reset()`` or when the arena is released, so nothing that points into it may outlive the
/// scope that uses it: decoding copies every value out into Swift before it returns.
///
/// `@usableFromInline` (not public): the inlinable decode entry points pass a ``WireDecoder``'s
/// arena to ``DecodePipeline``, and never look inside it.
@usableFromInline
final class Arena {
    let raw: OpaquePointer
    /// The cap last set (``setMaxBytes(_:)``), or the one given at creation.
    private(set) var maxBytes: Int

    /// Creates an arena with a first block of `firstBlockSize` bytes and a cap of `maxBytes`.
    init(firstBlockSize: Int = 16 << 10, maxBytes: Int = .max) throws(IMCodecError) {
        guard let raw = imcodec_arena_create(firstBlockSize, maxBytes) else {
            throw .outOfMemory("cannot allocate a \(firstBlockSize)-byte arena")
        }
        self.raw = raw
        self.maxBytes = maxBytes
    }

    deinit { imcodec_arena_destroy(raw) }

    /// Frees every allocation at once; keeps the first block.
    @usableFromInline
    func reset() { imcodec_arena_reset(raw) }

    /// Caps the bytes handed out from now until the next reset.
    func setMaxBytes(_ maxBytes: Int) {
        imcodec_arena_set_max_bytes(raw, maxBytes)
        self.maxBytes = maxBytes
    }

    /// protobuf-c's view of the arena.
    var allocator: UnsafeMutablePointer<ProtobufCAllocator> { imcodec_arena_allocator(raw) }

    /// Whether an allocation was refused by the cap since the last reset.
    var limitHit: Bool { imcodec_arena_limit_hit(raw) != 0 }

    /// Bytes handed out since the last reset.
    var bytesUsed: Int { imcodec_arena_bytes_used(raw) }

    /// Bytes held from the system.
    var bytesReserved: Int { imcodec_arena_bytes_reserved(raw) }

    /// Returns `size` bytes aligned to 16, valid until the next ``reset()``.
    /// - Throws: ``IMCodecError/Code/memoryLimitExceeded`` when the cap would be passed,
    ///   ``IMCodecError/Code/outOfMemory`` when the system has no memory left.
    func allocate(_ size: Int) throws(IMCodecError) -> UnsafeMutableRawPointer {
        guard size >= 0 else { throw .invalidArgument("cannot allocate \(size) bytes") }
        guard let pointer = imcodec_arena_alloc(raw, size) else {
            if limitHit {
                throw IMCodecError(
                    code: .memoryLimitExceeded,
                    reason: "an arena allocation of \(size) bytes passes the memory cap"
                )
            }
            throw .outOfMemory("cannot allocate \(size) bytes")
        }
        return pointer
    }
}
