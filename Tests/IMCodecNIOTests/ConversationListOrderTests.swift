#if Tools
import IMCodec
import Testing

@testable import imcodec_relay

/// A conversation list page takes the first entries by (version, storage id), and an entry the
/// first read horizons of its group, from a heap of that many (``SmallestElements``), not from a sort
/// of every one: the same, in the same order, as the whole sort gave, with versions tied as a
/// mark-read of every conversation ties them.
@Suite("Relay: conversation list order")
struct ConversationListOrderTests {
    @Test func theFirstEntriesAreThoseOfTheWholeSort() {
        var random = SystemRandomNumberGenerator()
        for round in 0..<20 {
            var entries: [ConversationKey: UserConversation] = [:]
            for index in 0..<(round * 37) {
                var view = UserConversation()
                // Few versions, so many entries tie.
                view.info.version = UInt64.random(in: 1...5, using: &random)
                let key: ConversationKey = index % 3 == 0 ? .group("g\(index)") : .direct("alice", "u\(index)")
                entries[key] = view
            }
            let sorted = entries.map { (version: $0.value.info.version, id: $0.key.storageID) }
                .sorted { ($0.version, $0.id) < ($1.version, $1.id) }
            for count in [1, 2, 101] {
                let first = Router.first(count, of: entries)
                #expect(first.map(\.order.0) == sorted.prefix(count).map(\.version))
                #expect(first.map(\.order.1) == sorted.prefix(count).map(\.id))
                #expect(
                    first.allSatisfy { entries[$0.key]?.info.version == $0.order.0 && $0.key.storageID == $0.order.1 }
                )
            }
        }
    }

    /// A list entry's read horizons: the furthest read first, then by user id, the first 100 of a
    /// group's members, as the whole sort gave them.
    @Test func theReadHorizonsKeptAreThoseOfTheWholeSort() {
        var random = SystemRandomNumberGenerator()
        for members in [0, 1, 99, 100, 101, 1_000] {
            let horizons = (0..<members).map {
                Router.Horizon(readSeq: UInt64.random(in: 1...20, using: &random), userID: "member-\($0)")
            }
            var first = SmallestElements<Router.Horizon>(capacity: Router.maxReadHorizons)
            for horizon in horizons { first.insert(horizon) }
            let whole = horizons.sorted { ($0.readSeq, $1.userID) > ($1.readSeq, $0.userID) }
            #expect(first.sorted == Array(whole.prefix(Router.maxReadHorizons)))
        }
    }
}
#endif
