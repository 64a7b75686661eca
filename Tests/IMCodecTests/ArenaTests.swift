// Tests of the imcodec_arena bump allocator (Sources/CIMCodecRuntime/arena.c), alone and as the
// allocator of protobuf_c_message_unpack.
import CIMCodecRuntime
import CIMCodecSchemas
import CProtobufC
import IMCodecTestSupport
import Testing

// MARK: - Helpers (file-private)

/// The real descriptor of imcodec.v1.Frame (its init function stores it in `base.descriptor`).
nonisolated(unsafe) private let arenaFrameDescriptor: UnsafePointer<ProtobufCMessageDescriptor> = {
    let scratch = UnsafeMutablePointer<Imcodec__V1__Frame>.allocate(capacity: 1)
    defer { scratch.deallocate() }
    imcodec__v1__frame__init(scratch)
    return scratch.pointee.base.descriptor
}()

/// A Frame with a message holding strings, a map, repeated elements and unknown fields: many
/// allocations of different sizes in protobuf-c.
private let sampleFrame: [UInt8] = {
    var message = Wire.string(1, "client-1") + Wire.string(2, "server-1") + Wire.uint(3, 99)
    message += Wire.field(6, Wire.uint(1, 2) + Wire.string(2, "group-42"))
    for i in 0..<5 { message += Wire.string(12, "receiver-\(i)") }
    for i in 0..<3 { message += Wire.field(16, Wire.string(1, "key\(i)") + Wire.string(2, "value \(i) 😀")) }
    for i in 0..<4 { message += Wire.field(20, Wire.field(1, Wire.string(1, "text element \(i) 中文"))) }
    message += Wire.uint(99, 1) + Wire.field(98, [1, 2, 3])
    return Wire.uint(1, 1) + Wire.field(10, message)
}()

private func unpackSample(_ arena: OpaquePointer) -> UnsafeMutablePointer<ProtobufCMessage>? {
    sampleFrame.withUnsafeBufferPointer {
        protobuf_c_message_unpack(arenaFrameDescriptor, imcodec_arena_allocator(arena), $0.count, $0.baseAddress)
    }
}

private func address(_ p: UnsafeMutableRawPointer?) -> UInt { UInt(bitPattern: p) }

// MARK: - Tests

@Suite("Arena")
struct ArenaTests {
    @Test("allocations are 16-byte aligned, writable and do not overlap")
    func alignment() throws {
        let arena = try #require(imcodec_arena_create(256, 1 << 20))
        defer { imcodec_arena_destroy(arena) }
        var blocks: [(UInt, Int)] = []
        for size in [1, 3, 7, 8, 15, 16, 17, 31, 100, 255, 256, 257, 1000, 5000, 1, 2] {
            let p = try #require(imcodec_arena_alloc(arena, size))
            #expect(address(p) % 16 == 0, "size \(size)")
            p.initializeMemory(as: UInt8.self, repeating: 0xAB, count: size)
            blocks.append((address(p), size))
        }
        for (i, a) in blocks.enumerated() {
            for b in blocks[(i + 1)...] {
                #expect(a.0 + UInt(a.1) <= b.0 || b.0 + UInt(b.1) <= a.0)
            }
        }
        #expect(imcodec_arena_limit_hit(arena) == 0)
    }

    @Test("bytes_used counts padding; size 0 gives a non-NULL pointer and costs nothing")
    func accounting() throws {
        let arena = try #require(imcodec_arena_create(1024, 1 << 20))
        defer { imcodec_arena_destroy(arena) }
        #expect(imcodec_arena_bytes_used(arena) == 0)
        _ = try #require(imcodec_arena_alloc(arena, 1))
        #expect(imcodec_arena_bytes_used(arena) == 1)
        _ = try #require(imcodec_arena_alloc(arena, 1))
        #expect(imcodec_arena_bytes_used(arena) == 17)  // 15 bytes of padding + 1
        let zero = try #require(imcodec_arena_alloc(arena, 0))
        #expect(address(zero) % 16 == 0)
        #expect(imcodec_arena_bytes_used(arena) == 17)
        #expect(imcodec_arena_bytes_reserved(arena) >= 1024)

        // Even a full arena has a pointer for size 0.
        imcodec_arena_set_max_bytes(arena, 0)
        #expect(imcodec_arena_alloc(arena, 0) != nil)
        #expect(imcodec_arena_limit_hit(arena) == 0)
    }

    @Test("reset keeps the first block, frees the others, and reuses the memory")
    func resetReuse() throws {
        let arena = try #require(imcodec_arena_create(1024, 1 << 24))
        defer { imcodec_arena_destroy(arena) }
        let initialReserved = imcodec_arena_bytes_reserved(arena)
        let first = try #require(imcodec_arena_alloc(arena, 100))
        for _ in 0..<20 { _ = try #require(imcodec_arena_alloc(arena, 4000)) }
        #expect(imcodec_arena_bytes_reserved(arena) > initialReserved)
        #expect(imcodec_arena_bytes_used(arena) >= 100 + 20 * 4000)
        // Blocks grow (at least doubling): 20 x 4000 bytes need only a handful of blocks.
        #expect(imcodec_arena_bytes_reserved(arena) < 4 * (100 + 20 * 4000) + initialReserved)

        imcodec_arena_reset(arena)
        #expect(imcodec_arena_bytes_used(arena) == 0)
        #expect(imcodec_arena_bytes_reserved(arena) == initialReserved)
        #expect(imcodec_arena_alloc(arena, 100) == first)

        // A request larger than any block gets a block of its own.
        let big = try #require(imcodec_arena_alloc(arena, 100_000))
        big.initializeMemory(as: UInt8.self, repeating: 1, count: 100_000)
        #expect(imcodec_arena_bytes_reserved(arena) >= initialReserved + 100_000)
    }

    @Test("the cap refuses allocations with NULL and sets the limit flag until reset")
    func cap() throws {
        let arena = try #require(imcodec_arena_create(1024, 100))
        defer { imcodec_arena_destroy(arena) }
        #expect(imcodec_arena_alloc(arena, 64) != nil)
        #expect(imcodec_arena_alloc(arena, 64) == nil)  // 128 > 100
        #expect(imcodec_arena_limit_hit(arena) == 1)
        #expect(imcodec_arena_bytes_used(arena) == 64)
        #expect(imcodec_arena_alloc(arena, 36) != nil)  // exactly 100
        #expect(imcodec_arena_bytes_used(arena) == 100)
        #expect(imcodec_arena_alloc(arena, 1) == nil)
        #expect(imcodec_arena_limit_hit(arena) == 1)  // stays set

        imcodec_arena_reset(arena)
        #expect(imcodec_arena_limit_hit(arena) == 0)
        // Past the first block, the cap still holds.
        #expect(imcodec_arena_alloc(arena, 2000) == nil)
        #expect(imcodec_arena_limit_hit(arena) == 1)

        // set_max_bytes takes effect at once, also below what is already used.
        imcodec_arena_reset(arena)
        imcodec_arena_set_max_bytes(arena, 10_000)
        #expect(imcodec_arena_alloc(arena, 5000) != nil)
        imcodec_arena_set_max_bytes(arena, 1000)
        #expect(imcodec_arena_alloc(arena, 1) == nil)
        #expect(imcodec_arena_limit_hit(arena) == 1)
        imcodec_arena_set_max_bytes(arena, 20_000)
        #expect(imcodec_arena_alloc(arena, 5000) != nil)
    }

    @Test("huge sizes return NULL, never a wrapped-around small block")
    func hugeSizes() throws {
        let sizeMax = Int(bitPattern: UInt.max)  // SIZE_MAX as size_t
        let arena = try #require(imcodec_arena_create(1024, sizeMax))
        defer { imcodec_arena_destroy(arena) }
        _ = try #require(imcodec_arena_alloc(arena, 1))
        // Within the cap (SIZE_MAX - 1 bytes left) but impossible: NULL without the limit flag.
        for size in [sizeMax - 1, sizeMax - 15, sizeMax - 16, sizeMax - 64, Int.max, Int.max - 15, Int.max / 2 + 1] {
            #expect(imcodec_arena_alloc(arena, size) == nil, "size \(UInt(bitPattern: size))")
        }
        #expect(imcodec_arena_limit_hit(arena) == 0)  // out of memory, not the cap
        #expect(imcodec_arena_alloc(arena, 16) != nil)  // still usable
        // SIZE_MAX itself is over the cap.
        #expect(imcodec_arena_alloc(arena, sizeMax) == nil)
        #expect(imcodec_arena_limit_hit(arena) == 1)

        // Under a normal cap, the same sizes hit the cap.
        imcodec_arena_set_max_bytes(arena, 1 << 20)
        #expect(imcodec_arena_alloc(arena, sizeMax) == nil)
        #expect(imcodec_arena_limit_hit(arena) == 1)

        #expect(imcodec_arena_create(sizeMax, 1 << 20) == nil)
        #expect(imcodec_arena_create(sizeMax - 8, 1 << 20) == nil)
        imcodec_arena_destroy(nil)
    }

    @Test("the protobuf-c allocator view points at the arena; free does nothing")
    func allocatorView() throws {
        let arena = try #require(imcodec_arena_create(0, 1 << 20))  // 0: a default first block
        defer { imcodec_arena_destroy(arena) }
        #expect(imcodec_arena_bytes_reserved(arena) > 0)
        let allocator = imcodec_arena_allocator(arena)!
        #expect(allocator.pointee.allocator_data == UnsafeMutableRawPointer(arena))
        let p = try #require(allocator.pointee.alloc(allocator.pointee.allocator_data, 40))
        #expect(address(p) % 16 == 0)
        #expect(imcodec_arena_bytes_used(arena) == 40)
        allocator.pointee.free(allocator.pointee.allocator_data, p)
        #expect(imcodec_arena_bytes_used(arena) == 40)
    }

    @Test("protobuf_c_message_unpack allocates from the arena")
    func unpackWithArena() throws {
        let arena = try #require(imcodec_arena_create(512, 1 << 20))
        defer { imcodec_arena_destroy(arena) }
        let base = try #require(unpackSample(arena))
        #expect(imcodec_arena_bytes_used(arena) > 0)
        let frame = UnsafeRawPointer(base).assumingMemoryBound(to: Imcodec__V1__Frame.self).pointee
        #expect(frame.schema_version == 1)
        let message = try #require(frame.message).pointee
        #expect(message.seq == 99)
        #expect(message.n_target_receivers == 5)
        #expect(message.n_custom_params == 3)
        let value = message.custom_params[2]!.pointee.value
        #expect(
            String(decoding: UnsafeBufferPointer(start: value.data, count: value.len), as: UTF8.self) == "value 2 😀"
        )
        #expect(message.n_elements == 4)
        #expect(message.base.n_unknown_fields == 2)
        // Every message protobuf-c made lives in the arena's memory; free_unpacked is a no-op.
        protobuf_c_message_free_unpacked(base, imcodec_arena_allocator(arena))
        let used = imcodec_arena_bytes_used(arena)

        // Reset, then the same unpack uses the same amount of memory again.
        imcodec_arena_reset(arena)
        _ = try #require(unpackSample(arena))
        #expect(imcodec_arena_bytes_used(arena) == used)
    }

    @Test("hitting the cap makes unpack return NULL cleanly, at every possible cap")
    func unpackAtEveryCap() throws {
        let arena = try #require(imcodec_arena_create(256, 1 << 20))
        defer { imcodec_arena_destroy(arena) }
        _ = try #require(unpackSample(arena))
        let needed = imcodec_arena_bytes_used(arena)
        #expect(needed > 0)

        for cap in 0..<needed {
            imcodec_arena_reset(arena)
            imcodec_arena_set_max_bytes(arena, cap)
            #expect(unpackSample(arena) == nil, "cap \(cap)")
            #expect(imcodec_arena_limit_hit(arena) == 1, "cap \(cap)")
        }
        imcodec_arena_reset(arena)
        imcodec_arena_set_max_bytes(arena, needed)
        #expect(unpackSample(arena) != nil)
        #expect(imcodec_arena_limit_hit(arena) == 0)
    }
}
