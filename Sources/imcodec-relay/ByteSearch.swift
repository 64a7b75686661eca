#if Tools
/// A search for one byte string in many texts, in time linear in each text whatever the needle
/// (Knuth-Morris-Pratt): a history page's `text_contains` is the client's, up to the frame size,
/// and a search that compares the needle at every offset cost its length times each text's (a
/// needle of 256 KiB in 1,000 messages of 512 KiB: about 10^14 comparisons on the router's loop).
struct ByteSearch {
    let needle: [UInt8]
    /// For each prefix length `i + 1` of the needle, the length of its longest proper prefix that is
    /// also its suffix: where the match goes on after a mismatch.
    private let fallback: [Int]

    init(_ needle: [UInt8]) {
        self.needle = needle
        var fallback = [Int](repeating: 0, count: needle.count)
        var matched = 0
        for index in needle.indices.dropFirst() {
            while matched > 0 && needle[index] != needle[matched] { matched = fallback[matched - 1] }
            if needle[index] == needle[matched] { matched += 1 }
            fallback[index] = matched
        }
        self.fallback = fallback
    }

    /// Whether the needle occurs in `text` as a contiguous run (an empty needle always does).
    func occurs(in text: some Sequence<UInt8>) -> Bool {
        guard !needle.isEmpty else { return true }
        var matched = 0
        for byte in text {
            while matched > 0 && byte != needle[matched] { matched = fallback[matched - 1] }
            if byte == needle[matched] { matched += 1 }
            if matched == needle.count { return true }
        }
        return false
    }
}
#endif
