#if Tools
import IMCodec
import Testing

@testable import imcodec_relay

/// What retention forgets of the messages it drops (``Swift/Range/present(in:)``,
/// ``Router/forgetChanges(in:trimmed:)``): the seqs of the trimmed range, found by looking each up
/// when the range is the shorter and by walking the map when it is not, with the same answer either
/// way. Before, each trim walked every entry of the conversation's per-message maps, at every
/// message kept once the conversation was full.
@Suite("Relay: what retention forgets")
struct RangeRetentionTests {
    @Test func presentFindsTheSameSeqsByEitherWalk() {
        let seqs: Set<UInt64> = [2, 3, 5, 8, 13, 21]
        // Shorter than the set: looked up; longer: the set walked.
        #expect(Set((3..<6).present(in: seqs)) == [3, 5])
        #expect(Set((0..<1_000_000).present(in: seqs)) == seqs)
        #expect(Set((9..<1_000_000).present(in: seqs)) == [13, 21])
        #expect((6..<8).present(in: seqs).isEmpty)
        #expect((UInt64.max - 1..<UInt64.max).present(in: seqs).isEmpty)
        let dictionary: [UInt64: String] = [1: "a", 4: "b", 9: "c"]
        #expect(Set((4..<10).present(in: dictionary.keys)) == [4, 9])
        #expect((0..<10).present(in: nil as Set<UInt64>?).isEmpty)
    }

    /// Each kind of per-message state of seqs 1...6 is forgotten for the trimmed seqs only, in the
    /// router and as deleted records, by a short range (one looked up at a time) and by a long one
    /// (the maps walked).
    @Test func aTrimForgetsWhatTheRelayKeptAboutEachDroppedMessage() async throws {
        try await withRelay { server in
            let outcome = try await server.withRouter { router in
                let key = ConversationKey.group("team")
                let seqs = UInt64(1)...6
                for seq in seqs {
                    router.messageChanges[key, default: [:]][seq] = Message()
                    router.extensions[key, default: [:]][seq] = [:]
                    router.polls[key, default: [:]][seq] = []
                    router.messageReaders[key, default: [:]][seq] = MessageReaders(["bob"])
                    router.viewOnceMessages[key, default: []].insert(seq)
                    // Reply seq + 10 quotes seq: linked both ways (quotedBy, quoting).
                    let (quoted, reply) = (
                        MessageKey(conversation: key, seq: seq), MessageKey(conversation: key, seq: seq + 10)
                    )
                    router.quotedBy[key, default: [:]][seq] = [reply]
                    router.quoting[key, default: [:]][seq + 10] = [quoted]
                }
                func held() -> [[UInt64]] {
                    var maps: [[UInt64]] = []
                    maps.append(Array(router.messageChanges[key]?.keys ?? [:].keys))
                    maps.append(Array(router.extensions[key]?.keys ?? [:].keys))
                    maps.append(Array(router.polls[key]?.keys ?? [:].keys))
                    maps.append(Array(router.messageReaders[key]?.keys ?? [:].keys))
                    maps.append(Array(router.viewOnceMessages[key] ?? []))
                    maps.append(Array(router.quotedBy[key]?.keys ?? [:].keys))
                    return maps.map { $0.sorted() }
                }
                func deleted(_ seq: UInt64) -> [Bool] {
                    let records = router.store.batch.records
                    let keys: [StateRecordKey] = [
                        .messageChange(key, seq: seq), .messageExtension(key, seq: seq), .polls(key, seq: seq),
                        .readers(key, seq: seq), .reader(MessageKey(conversation: key, seq: seq), user: "bob"),
                        .quote(
                            of: MessageKey(conversation: key, seq: seq),
                            reply: MessageKey(conversation: key, seq: seq + 10)
                        ),
                    ]
                    return keys.map { records[$0] == [] }
                }
                router.forgetChanges(in: key, trimmed: 1..<3)
                let afterShort = (held(), deleted(1) + deleted(2), deleted(3))
                let replies = (router.quoting[key]?.keys).map { Array($0).sorted() }
                router.forgetChanges(in: key, trimmed: 3..<1_000_000)
                let afterLong = (held(), deleted(6), router.store.batch.records[.viewOnce(key)])
                return (afterShort, afterLong, replies, router.quoting[key] == nil)
            }.get()
            let ((heldShort, gone, kept), (heldLong, goneLast, viewOnce), replies, noReplies) = outcome
            // The replies of the dropped messages lost their links too; the last trim dropped the rest.
            #expect(replies == [13, 14, 15, 16])
            #expect(noReplies)
            #expect(heldShort == Array(repeating: [3, 4, 5, 6], count: 6))
            #expect(gone == Array(repeating: true, count: 12))
            #expect(kept == Array(repeating: false, count: 6))
            #expect(heldLong == Array(repeating: [], count: 6))
            #expect(goneLast == Array(repeating: true, count: 6))
            #expect(viewOnce == [])
        }
    }
}
#endif
