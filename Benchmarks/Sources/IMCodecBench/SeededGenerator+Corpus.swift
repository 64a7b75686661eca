/// SplitMix64: a small, fast, seeded generator, so the corpus is the same bytes on every run and
/// every machine (Swift's `random(in:using:)` algorithms are deterministic for a given generator).
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A uniform integer in `range`.
    mutating func int(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &self) }

    /// `true` with probability `p`.
    mutating func chance(_ p: Double) -> Bool { Double.random(in: 0..<1, using: &self) < p }

    /// One element of `items`.
    mutating func pick<T>(_ items: [T]) -> T { items[int(0...(items.count - 1))] }

    /// `count` lowercase hex digits.
    mutating func hex(_ count: Int) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var bytes = [UInt8](repeating: 0, count: count)
        for i in 0..<count { bytes[i] = digits[Int(next() & 15)] }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `count` decimal digits (the first one not 0).
    mutating func digits(_ count: Int) -> String {
        var s = String(int(1...9))
        for _ in 1..<max(count, 1) { s += String(int(0...9)) }
        return s
    }
}
