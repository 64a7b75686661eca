// The corpus's draws on the shared seeded generator (SplitMix64, IMCodecTestSupport's
// ``SeededGenerator``): the corpus is the same bytes on every run and every machine.
import IMCodecTestSupport

extension SeededGenerator {
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
