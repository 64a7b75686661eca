#if Tools
import IMCodec
import IMCodecTestSupport
import Testing

@testable import imcodec_relay

/// What the router holds of each kept message (``ConversationState``, ``KeptMessages``,
/// ``DigestIndex``, ``PackedUID``): found by seq, by uid and by sender and `client_msg_id` as a
/// dictionary of everything would find it, in less space.
struct KeptMessagesTests {
    /// A uid the relay writes packs into 16 bytes and reads back as written; any other text stays text.
    @Test func uidsPackAndReadBackAsWritten() {
        let written = "0123456789abcdeffedcba9876543210"
        #expect(PackedUID(written) == .hex(0x0123_4567_89ab_cdef, 0xfedc_ba98_7654_3210))
        #expect(PackedUID(written).string == written)
        for text in [
            "", "0123456789ABCDEFFEDCBA9876543210", "0123456789abcdeffedcba987654321",
            "0123456789abcdeffedcba98765432100", "relay-1-42", "0123456789abcdeffedcba987654321g",
        ] {
            #expect(PackedUID(text) == .text(text), "\(text)")
            #expect(PackedUID(text).string == text)
        }
    }

    /// The point of the layout: a kept message costs 64 bytes in its conversation's array.
    @Test func aKeptMessageTakes64Bytes() {
        #expect(MemoryLayout<KeptMessage?>.stride == 64)
    }

    /// Seeded random adds and trims, checked at every step against plain dictionaries (what the
    /// conversation held before): by seq, by uid, by sender and client id, with uids of both forms,
    /// client ids reused (the later message wins, as a dictionary overwrite did), and holes.
    @Test(arguments: [1, 2, 3, 4] as [UInt64])
    func findsWhatDictionariesFind(seed: UInt64) {
        var random = SeededGenerator(seed: seed)
        var state = ConversationState()
        var bySeq: [UInt64: StoredMessage] = [:]
        var byUID: [String: UInt64] = [:]
        var bySender: [String: UInt64] = [:]
        var nextSeq: UInt64 = 1
        let senders = ["alice", "bob", "a-user-id-longer-than-fifteen-bytes"]
        for step in 0..<1_000 {
            if random.next() % 5 == 0, state.oldestSeq < nextSeq {
                // Retention drops the oldest few.
                let below = min(nextSeq, state.oldestSeq + 1 + random.next() % 4)
                for seq in state.oldestSeq..<below {
                    if let old = bySeq.removeValue(forKey: seq) {
                        if byUID[old.serverMsgUID] == seq { byUID[old.serverMsgUID] = nil }
                        let key = "\(old.senderID)/\(old.clientMsgID)"
                        if bySender[key] == seq { bySender[key] = nil }
                    }
                }
                state.trim(below: below)
            } else {
                let seq = nextSeq
                nextSeq += 1
                // A seq the store could not read at start: a hole.
                if random.next() % 17 == 0 {
                    state.maxSeq = seq
                    continue
                }
                let sender = senders[Int(random.next() % 3)]
                let clientMsgID = random.next() % 7 == 0 ? "" : "c\(random.next() % 40)"
                // Uids of an earlier relay (text), some given twice (the later message wins).
                let uid =
                    random.next() % 4 == 0
                    ? "old-\(random.next() % 30)"
                    : String((0..<32).map { _ in "0123456789abcdef".randomElement(using: &random)! })
                let message = StoredMessage(
                    conversation: .direct("alice", "bob"),
                    seq: seq,
                    senderID: String(sender),
                    clientMsgID: clientMsgID,
                    serverMsgUID: uid,
                    serverTimeMs: Int64(seq) * 10,
                    frame: [UInt8](repeating: 1, count: Int(seq % 9))
                )
                state.add(message)
                bySeq[seq] = message
                byUID[uid] = seq
                if !clientMsgID.isEmpty { bySender["\(sender)/\(clientMsgID)"] = seq }
            }
            // Everything that was ever given a seq, and ids that were never given; one comparison a
            // step.
            func line(
                _ seq: UInt64,
                _ sender: String?,
                _ id: String?,
                _ uid: String?,
                _ time: Int64?,
                _ size: Int?
            )
                -> String
            { "\(seq) \(sender ?? "-") \(id ?? "-") \(uid ?? "-") \(time ?? -1) \(size ?? -1)" }
            let held = (0...nextSeq).map { seq in
                let kept = state.kept[seq]
                return line(seq, kept?.sender, kept?.clientMsgID, kept?.serverMsgUID, kept?.serverTimeMs, kept?.size)
            }
            let expected = (0...nextSeq).map { seq in
                let message = bySeq[seq]
                return line(
                    seq,
                    message?.senderID,
                    message?.clientMsgID,
                    message?.serverMsgUID,
                    message?.serverTimeMs,
                    message?.frame.count
                )
            }
            #expect(held == expected, "step \(step)")
            #expect(state.kept.count == bySeq.count)
            #expect(state.kept.all.map(\.seq) == bySeq.keys.sorted())
            var found: [String] = []
            var wanted: [String] = []
            for (uid, seq) in byUID.sorted(by: { $0.key < $1.key }) {
                let ref = MessageRef.with { $0.serverMsgUID = uid }
                found.append("\(uid) \(state.resolve(ref))")
                wanted.append("\(uid) \(ConversationState.Reference.kept(seq))")
            }
            for sender in senders {
                for id in 0..<40 {
                    let seq = bySender["\(sender)/c\(id)"]
                    let sent = state.sent(by: sender, clientMsgID: "c\(id)")
                    let ref = MessageRef.with {
                        $0.senderID = sender
                        $0.clientMsgID = "c\(id)"
                    }
                    found.append(
                        "\(sender) c\(id) \(sent?.seq ?? 0) \(sent?.serverMsgUID ?? "-") \(state.resolve(ref))"
                    )
                    wanted.append(
                        "\(sender) c\(id) \(seq ?? 0) \(seq.flatMap { bySeq[$0]?.serverMsgUID } ?? "-") "
                            + "\(seq.map { ConversationState.Reference.kept($0) } ?? .unknown)"
                    )
                }
            }
            #expect(found == wanted, "step \(step)")
            #expect(state.resolve(MessageRef.with { $0.serverMsgUID = "old-30" }) == .unknown)
        }
    }

    /// Keys whose hashes collide are still told apart: the second goes to the map by key, and
    /// either is found until it is removed, whichever goes first.
    @Test func collidingKeysAreToldApart() {
        var index = DigestIndex<Colliding>()
        var keys: [UInt64: Colliding] = [:]
        func keyOf(_ seq: UInt64) -> Colliding? { keys[seq] }
        for seq in 1...5 as ClosedRange<UInt64> {
            keys[seq] = Colliding(name: "k\(seq)")
            index.insert(keys[seq]!, seq: seq, keyOf: keyOf)
        }
        #expect(index.collisions == 4)
        for seq in 1...5 as ClosedRange<UInt64> {
            #expect(index.seq(of: Colliding(name: "k\(seq)"), keyOf: keyOf) == seq)
        }
        #expect(index.seq(of: Colliding(name: "k6"), keyOf: keyOf) == nil)
        // The one held by hash goes first; the others are still found.
        index.remove(keys[1]!, seq: 1)
        keys[1] = nil
        for seq in 2...5 as ClosedRange<UInt64> {
            #expect(index.seq(of: Colliding(name: "k\(seq)"), keyOf: keyOf) == seq)
        }
        // A new key takes the free hash; a collided one sent again moves there.
        keys[6] = Colliding(name: "k3")
        index.insert(keys[6]!, seq: 6, keyOf: keyOf)
        #expect(index.seq(of: Colliding(name: "k3"), keyOf: keyOf) == 6)
        index.remove(Colliding(name: "k3"), seq: 3)
        #expect(index.seq(of: Colliding(name: "k3"), keyOf: keyOf) == 6, "the older seq of a key sent again")
        // The key the hash holds is sent again at a new seq while others collide with it.
        keys[7] = Colliding(name: "k3")
        index.insert(keys[7]!, seq: 7, keyOf: keyOf)
        #expect(index.seq(of: Colliding(name: "k3"), keyOf: keyOf) == 7)
        index.remove(Colliding(name: "k3"), seq: 6)
        #expect(index.seq(of: Colliding(name: "k3"), keyOf: keyOf) == 7)
        for seq in 4...5 as ClosedRange<UInt64> {
            #expect(index.seq(of: Colliding(name: "k\(seq)"), keyOf: keyOf) == seq)
        }
        index.remove(keys[2]!, seq: 2)
        #expect(index.seq(of: Colliding(name: "k2"), keyOf: keyOf) == nil)
        #expect(index.seq(of: Colliding(name: "k4"), keyOf: keyOf) == 4)
        #expect(index.seq(of: Colliding(name: "k5"), keyOf: keyOf) == 5)
    }

    /// A message stored again at a seq (no path of the router does this) replaces the first in every
    /// lookup.
    @Test func aMessageAddedAgainAtItsSeqReplacesTheFirst() {
        var state = ConversationState()
        func message(_ uid: String, _ clientMsgID: String) -> StoredMessage {
            StoredMessage(
                conversation: .direct("alice", "bob"),
                seq: 1,
                senderID: "alice",
                clientMsgID: clientMsgID,
                serverMsgUID: uid,
                serverTimeMs: 1,
                frame: [1]
            )
        }
        state.add(message("first", "c1"))
        state.add(message("second", "c2"))
        #expect(state.resolve(MessageRef.with { $0.serverMsgUID = "first" }) == .unknown)
        #expect(state.resolve(MessageRef.with { $0.serverMsgUID = "second" }) == .kept(1))
        #expect(state.sent(by: "alice", clientMsgID: "c1") == nil)
        #expect(state.sent(by: "alice", clientMsgID: "c2")?.serverMsgUID == "second")
        #expect(state.kept.count == 1)
    }

    /// A conversation whose stored seqs jump (a damaged store) loads, answers by both ids, and
    /// trims across the jump without walking it seq by seq.
    @Test func aConversationWithAJumpInItsSeqsLoadsAndTrims() {
        var state = ConversationState()
        let jump: UInt64 = 1 << 50
        for seq in [1, 2, jump, jump + 1] as [UInt64] {
            state.addLoaded(
                StoredMessage(
                    conversation: .direct("alice", "bob"),
                    seq: seq,
                    senderID: "alice",
                    clientMsgID: "c\(seq)",
                    serverMsgUID: "u\(seq)",
                    serverTimeMs: 1,
                    frame: [1]
                ),
                removed: seq == 2
            )
        }
        #expect(state.oldestSeq == 1 && state.maxSeq == jump + 1 && state.kept.count == 4)
        #expect(state.resolve(MessageRef.with { $0.serverMsgUID = "u\(jump)" }) == .kept(jump))
        #expect(state.sent(by: "alice", clientMsgID: "c2")?.seq == 2)
        state.trim(below: jump + 1)
        #expect(state.oldestSeq == jump + 1 && state.kept.count == 1 && state.removed.isEmpty)
        #expect(state.resolve(MessageRef.with { $0.serverMsgUID = "u\(jump)" }) == .unknown)
        #expect(state.sent(by: "alice", clientMsgID: "c1") == nil)
        #expect(state.sent(by: "alice", clientMsgID: "c\(jump + 1)")?.seq == jump + 1)
    }

    /// Kept seqs with holes, dropped from the oldest past the array's compaction point, then kept
    /// again after all were dropped.
    @Test func keptMessagesMoveTheirStart() {
        var kept = KeptMessages()
        func message(_ seq: UInt64) -> KeptMessage {
            KeptMessage(sender: "alice", clientMsgID: "c\(seq)", serverMsgUID: "u\(seq)", serverTimeMs: 0, size: 1)
        }
        for seq in 10..<300 as Range<UInt64> where seq % 10 != 5 { kept.insert(message(seq), at: seq) }
        #expect(kept.count == 261)
        #expect(kept[15] == nil && kept[9] == nil && kept[300] == nil && kept[16]?.clientMsgID == "c16")
        for seq in 10..<200 as Range<UInt64> { kept.removeValue(at: seq) }
        #expect(kept.count == 90)
        #expect(kept[199] == nil && kept[200]?.clientMsgID == "c200" && kept[299]?.clientMsgID == "c299")
        #expect(kept.all.first?.seq == 200 && kept.all.count == 90)
        // One before the first held goes in front.
        kept.insert(message(150), at: 150)
        #expect(kept[150]?.clientMsgID == "c150" && kept[151] == nil && kept.count == 91)
        for seq in 150..<300 as Range<UInt64> { kept.removeValue(at: seq) }
        #expect(kept.isEmpty && kept.all.isEmpty)
        kept.insert(message(400), at: 400)
        #expect(kept[400]?.clientMsgID == "c400" && kept[299] == nil && kept.count == 1)
        // Seqs far apart (a damaged store): held beside the array, not padded into it.
        var far = KeptMessages()
        let huge: UInt64 = 1 << 40
        for seq in [1, 2, huge, huge + 1, UInt64.max - 1] { far.insert(message(seq), at: seq) }
        #expect(far.count == 5 && far[huge]?.clientMsgID == "c\(huge)" && far[UInt64.max - 1] != nil)
        #expect(far[3] == nil && far[huge - 1] == nil && far[UInt64.max] == nil)
        #expect(far.all.map(\.seq) == [1, 2, huge, huge + 1, UInt64.max - 1])
        // The array grows over an outlier: it is still found, and replacing it keeps the count.
        far.insert(message(10_000), at: 10_000)
        for seq in 3..<10_100 as Range<UInt64> where seq != 10_000 { far.insert(message(seq), at: seq) }
        #expect(far[10_000]?.clientMsgID == "c10000" && far.count == 10_102)
        far.insert(message(10_000), at: 10_000)
        #expect(far.count == 10_102 && far.all.count == 10_102)
        #expect(far.removeValue(at: huge)?.clientMsgID == "c\(huge)" && far[huge] == nil && far.count == 10_101)
        // A frame larger than 32 bits counts as the largest.
        let large = KeptMessage(sender: "a", clientMsgID: "", serverMsgUID: "", serverTimeMs: 0, size: Int.max)
        #expect(large.size == Int(UInt32.max))
    }
}

/// A key every instance of which hashes alike.
private struct Colliding: Hashable, Sendable {
    var name: String
    func hash(into hasher: inout Hasher) { hasher.combine(0) }
    static func == (a: Colliding, b: Colliding) -> Bool { a.name == b.name }
}
#endif
