// Seeded random numbers for the tests (both test targets) and the benchmark corpus: the one
// SplitMix64 of this repository. Test-only, like the rest of IMCodecTestSupport.

/// SplitMix64: a small, fast, seeded generator, so a failure reproduces and a corpus is the same
/// bytes on every run and every machine (Swift's `random(in:using:)` algorithms are deterministic
/// for a given generator).
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    /// The generator's state: the seed, advanced once per number.
    public var state: UInt64

    /// A generator that starts from `seed`.
    public init(seed: UInt64) { state = seed }

    /// The next 64 random bits.
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
