#if Tools
import IMCodecTestSupport
import Testing

@testable import imcodec_relay

/// ``ByteSearch`` (history's `text_contains`) finds what a search at every offset finds: seeded
/// texts and needles over two and three letters, where partial matches overlap most (the inputs
/// that made the old search cost the needle's length at each offset), and the edges.
@Suite("Relay: the history text search")
struct ByteSearchTests {
    private static func naive(_ needle: [UInt8], in text: [UInt8]) -> Bool {
        guard !needle.isEmpty else { return true }
        guard needle.count <= text.count else { return false }
        return (0...(text.count - needle.count)).contains { text[$0..<($0 + needle.count)].elementsEqual(needle) }
    }

    @Test func findsWhatASearchAtEveryOffsetFinds() {
        var rng = SeededGenerator(seed: 20_261_129)
        var found = 0
        for round in 0..<20_000 {
            let letters: [UInt8] = round % 2 == 0 ? [97, 98] : [97, 98, 99]
            let text = (0..<Int.random(in: 0...40, using: &rng)).map { _ in letters.randomElement(using: &rng)! }
            let needle = (0..<Int.random(in: 0...8, using: &rng)).map { _ in letters.randomElement(using: &rng)! }
            let expected = Self.naive(needle, in: text)
            #expect(ByteSearch(needle).occurs(in: text) == expected, "\(needle) in \(text)")
            if expected { found += 1 }
        }
        #expect(found > 5_000 && found < 15_000, "both answers are checked often: \(found) found")
    }

    @Test func theEdges() {
        let search = ByteSearch(Array("aab".utf8))
        #expect(search.occurs(in: Array("aaab".utf8)))
        #expect(!search.occurs(in: Array("aaaa".utf8)))
        #expect(!search.occurs(in: Array("aa".utf8)))
        #expect(ByteSearch([]).occurs(in: [UInt8]()))
        #expect(ByteSearch(Array("日本".utf8)).occurs(in: "こんにちは日本語".utf8))
        // The worst case of the old search: a needle that almost matches at every offset.
        let text = [UInt8](repeating: 97, count: 1 << 16)
        #expect(!ByteSearch([UInt8](repeating: 97, count: 1 << 12) + [98]).occurs(in: text))
        #expect(ByteSearch([UInt8](repeating: 97, count: 1 << 12)).occurs(in: text))
    }
}

extension Array where Element == UInt8 {
    /// Whether `needle` occurs in these bytes as a contiguous run (the tests' look for a secret in
    /// what the relay served or kept).
    func contains(subsequence needle: [UInt8]) -> Bool {
        ByteSearch(needle).occurs(in: self)
    }
}
#endif
