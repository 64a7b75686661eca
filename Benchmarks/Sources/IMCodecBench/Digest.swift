/// A running hash of every field a decoder produced. The "decode" paths feed every field of every
/// decoded frame into one, so the compiler cannot skip work and a lazy decoder cannot skip
/// building anything: a string contributes its UTF-8 length and first byte, bytes their length and
/// first byte, a map its size and an order-independent sum over its entries, a sub-message its
/// presence and then its fields, a oneof its field number.
///
/// DigestIMCodec.swift and DigestSwiftProtobuf.swift walk the same fields in the same order, so
/// both decoders give the same digest for the same bytes: the harness checks that before timing.
struct Digest {
    private(set) var value: UInt64 = 0xCBF2_9CE4_8422_2325

    @inline(__always)
    mutating func mix(_ v: UInt64) { value = (value ^ v) &* 0x0000_0100_0000_01B3 }

    @inline(__always)
    mutating func add(_ v: UInt64) { mix(v) }
    @inline(__always)
    mutating func add(_ v: UInt32) { mix(UInt64(v)) }
    @inline(__always)
    mutating func add(_ v: Int64) { mix(UInt64(bitPattern: v)) }
    @inline(__always)
    mutating func add(_ v: Int32) { mix(UInt64(bitPattern: Int64(v))) }
    @inline(__always)
    mutating func add(_ v: Bool) { mix(v ? 1 : 0) }
    @inline(__always)
    mutating func add(_ v: Double) { mix(v.bitPattern) }
    @inline(__always)
    mutating func add(enum raw: Int) { mix(UInt64(bitPattern: Int64(raw))) }

    @inline(__always)
    mutating func add(_ s: String) {
        let utf8 = s.utf8
        mix(UInt64(utf8.count))
        mix(UInt64(utf8.first ?? 0))
    }

    @inline(__always)
    mutating func add<C: Collection>(bytes: C) where C.Element == UInt8 {
        mix(UInt64(bytes.count))
        mix(UInt64(bytes.first ?? 0))
    }

    mutating func add(_ strings: [String]) {
        mix(UInt64(strings.count))
        for s in strings { add(s) }
    }

    mutating func add(_ map: [String: String]) {
        mix(UInt64(map.count))
        var sum: UInt64 = 0
        for (key, value) in map {
            sum &+=
                (UInt64(key.utf8.count) &* 0x9E37_79B9 &+ UInt64(value.utf8.count)) &* 31
                &+ UInt64(key.utf8.first ?? 0) &+ UInt64(value.utf8.first ?? 0) << 8
        }
        mix(sum)
    }
}
