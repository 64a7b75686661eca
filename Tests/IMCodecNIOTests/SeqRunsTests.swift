#if Tools
import IMCodec
import IMCodecTestSupport
import Testing

@testable import imcodec_relay

/// ``SeqRuns``: a user's unread seqs in one conversation, held and stored as runs of consecutive
/// seqs. It must hold exactly the set a list of seqs held, read the records relays wrote before
/// it, and refuse bytes that hold no set.
@Suite("Seq runs: unread seqs as runs")
struct SeqRunsTests {
    /// Random inserts, reads (remove through a seq) and removals of scattered seqs, checked after
    /// every step against a plain set, and read back from the bytes each step would store.
    @Test(arguments: [1, 2, 3, 4] as [UInt64])
    func seqRunsHoldWhatASetHolds(seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        var runs = SeqRuns()
        var model = Set<UInt64>()
        var newest: UInt64 = 0
        for step in 0..<2_000 {
            switch Int.random(in: 0..<10, using: &random) {
            case 0..<6:
                // Mostly new messages, above every seq; sometimes one from below (a gap filled).
                let seq =
                    Bool.random(using: &random) || newest < 3
                    ? newest + UInt64.random(in: 1...3, using: &random) : UInt64.random(in: 1...newest, using: &random)
                newest = max(newest, seq)
                runs.insert(seq)
                model.insert(seq)
            case 6:
                let seq = UInt64.random(in: 0...(newest + 1), using: &random)
                runs.removeAll(through: seq)
                model = model.filter { $0 > seq }
            default:
                let removed = Set(
                    (0..<Int.random(in: 1...4, using: &random)).map { _ in
                        UInt64.random(in: 0...(newest + 1), using: &random)
                    }
                )
                let changed = runs.remove(removed)
                #expect(changed == !model.isDisjoint(with: removed), "step \(step)")
                model.subtract(removed)
            }
            #expect(runs.seqs == model.sorted(), "step \(step)")
            #expect(runs.count == model.count, "step \(step)")
            for pair in zip(runs.runs, runs.runs.dropFirst()) {
                #expect(pair.0.upperBound + 1 < pair.1.lowerBound, "step \(step): runs that touch")
            }
            var bytes: [UInt8] = []
            runs.append(to: &bytes)
            #expect(SeqRuns(bytes: bytes[...]) == runs, "step \(step): read back from its bytes")
        }
        let probe = UInt64.random(in: 1...newest, using: &random)
        #expect(runs.contains(probe) == model.contains(probe))
    }

    /// A user who never reads costs one run however many messages it has not read: the record's
    /// unread part stays 16 bytes (a list of seqs grew by 8 bytes a message).
    @Test func aUserWhoNeverReadsKeepsOneRun() {
        var view = UserConversation()
        for seq in UInt64(1)...10_000 { view.unread.insert(seq) }
        let empty = UserConversation().bytes.count
        #expect(view.unread.runs == [1...10_000] && view.unread.count == 10_000)
        #expect(view.bytes.count == empty + 16)
        #expect(UserConversation(bytes: view.bytes)?.unread == view.unread)
        view.read(upTo: 9_000)
        #expect(view.unread.runs == [9_001...10_000])
        let dropped = view.drop([9_500])
        #expect(dropped && view.unread.runs == [9_001...9_499, 9_501...10_000])
        let droppedAgain = view.drop([9_500])
        #expect(!droppedAgain, "already gone")
    }

    /// Messages that count alternating with ones that do not leave an entry at most 64 runs: the
    /// oldest join, with the seqs between them (counted as unread); the newest stay exact, and so
    /// does a record read back. Before, each pair of messages added a run to a record rewritten at
    /// every message.
    @Test func anEntryKeepsAtMostSixtyFourUnreadRuns() {
        var view = UserConversation()
        for seq in stride(from: UInt64(1), through: 399, by: 2) { view.addUnread(seq) }
        #expect(view.unread.runs.count == UserConversation.maxUnreadRuns)
        // 200 unread in 200 runs: the oldest 137 joined as 1...273, the newest 63 as they were.
        #expect(view.unread.runs.first == 1...273)
        #expect(Array(view.unread.runs.dropFirst()) == stride(from: UInt64(275), through: 399, by: 2).map { $0...$0 })
        #expect(view.unread.count == 273 + 63)
        #expect(UserConversation(bytes: view.bytes)?.unread == view.unread)
        // A record an earlier relay kept with more runs is bounded when read.
        var earlier = UserConversation()
        for seq in stride(from: UInt64(1), through: 399, by: 2) { earlier.unread.insert(seq) }
        #expect(earlier.unread.runs.count == 200)
        #expect(UserConversation(bytes: earlier.bytes)?.unread == view.unread)
        // A recall that splits a run keeps the bound.
        _ = view.drop([100])
        #expect(view.unread.runs.count <= UserConversation.maxUnreadRuns)
    }

    /// The unread seqs of a record written before the runs (a list of single seqs) read as the
    /// same set, and bytes that hold no set are refused.
    @Test func recordsOfEarlierRelaysReadAndBadBytesAreRefused() {
        func bytes(_ values: [UInt64]) -> [UInt8] {
            var out: [UInt8] = []
            SeqListBytes.append(values, to: &out)
            return out
        }
        let top: UInt64 = 1 << 63
        let old = SeqRuns(bytes: bytes([3, 4, 5, 9])[...])
        #expect(old?.runs == [3...5, 9...9] && old?.count == 4)
        // Earlier relays read any list: so does this one, less seq 0 (never a message's).
        #expect(SeqRuns(bytes: bytes([9, 3, 3, 0, 4])[...])?.seqs == [3, 4, 9])
        let widest = SeqRuns(bytes: bytes([1, (top - 1) | top])[...])
        #expect(widest?.count == Int.max && widest?.contains(top - 1) == true)
        #expect(SeqRuns(bytes: [][...]) == SeqRuns())
        #expect(SeqRuns(bytes: bytes([3, 5 | top, 9])[...])?.seqs == [3, 4, 5, 9])
        for bad in [
            [3 | top], [3, 5 | top, 7 | top], [3, 3 | top], [3, 2 | top], [3, 4, 6 | top], [top], [0, 3 | top],
            [5, 3, 7 | top], [5, 6 | top, 6],
        ] as [[UInt64]] {
            #expect(SeqRuns(bytes: bytes(bad)[...]) == nil, "\(bad)")
        }
        #expect(SeqRuns(bytes: [1, 0, 0, 0, 0, 0, 0][...]) == nil, "not a multiple of 8")
    }
}
#endif
