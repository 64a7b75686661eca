#if Tools
import IMCodec
import Testing

@testable import imcodec_relay

/// A conversation list page takes the first entries by (version, storage id) from a heap of the
/// page's size (``Router/first(_:of:)``), not from a sort of every entry: the same entries, in the
/// same order, as the whole sort gave, with versions tied as a mark-read of every conversation
/// ties them.
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
}
#endif
