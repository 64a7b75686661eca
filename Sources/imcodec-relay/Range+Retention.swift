#if Tools
extension Range<UInt64> {
    /// The seqs of this range that `seqs` holds, in no order: looked up one by one when the range is
    /// the shorter (retention drops one seq, or a few, at each message kept in a full conversation),
    /// else found by a walk of `seqs` (a lowered `--max-stored-messages` drops many at once). So a
    /// trim costs the smaller of the two. Before, each trim walked every entry of the
    /// conversation's per-message maps (changes, extensions, polls, readers, quotes), at every
    /// message kept once the conversation was full. None (`nil`): none.
    func present<Seqs: Collection<UInt64>>(in seqs: Seqs?) -> [UInt64] {
        guard let seqs else { return [] }
        // `contains` of a set or a dictionary's keys is a hash lookup.
        return upperBound - lowerBound <= UInt64(seqs.count)
            ? filter { seqs.contains($0) } : seqs.filter { contains($0) }
    }
}
#endif
