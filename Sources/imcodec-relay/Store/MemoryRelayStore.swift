#if Tools
import IMCodec

/// A store that keeps everything in memory and loses it with the process: for tests, and as the
/// relay benchmark's baseline (the same router and group commit, without the disk).
final class MemoryRelayStore: RelayStore {
    /// Per conversation, in seq order; per user, in position order (both only grow at the end).
    private var messages: [ConversationKey: [StoredMessage]] = [:]
    private var state = StoredState()
    private var streams: [String: [StreamEntry]] = [:]
    /// The kept events (``KeptEvent``), by id, each with the number of stream entries that name it:
    /// deleted with the last of them.
    private var events: [UInt64: (event: KeptEvent, entries: Int)] = [:]
    /// The events that carry content of each kept message (``KeptEvent/about``), by message;
    /// dropped with the message (retention), and an event's id with the event (an id of a deleted
    /// event may be given again after a load).
    private var eventsAbout: [MessageKey: [UInt64]] = [:]
    /// Each device's key bundles, by kind (``StoredState/keyBundles`` is made from it at load).
    private var keyBundles: [DeviceKey: [Int32: StoredKeyBundle]] = [:]

    init() {}

    func load() throws -> StoredState {
        var loaded = state
        loaded.keyBundles = keyBundles.values.flatMap(\.values)
        // As a database reads it: the largest id kept (retention may have deleted larger ones).
        loaded.lastEventID = events.keys.max() ?? 0
        return loaded
    }

    func commit(_ batch: StoreBatch) throws {
        for message in batch.messages {
            messages[message.conversation, default: []].append(message)
            state.conversations[message.conversation, default: ConversationState()].add(message)
        }
        for event in batch.events {
            events[event.id] = (event, 0)
            if let about = event.about { eventsAbout[about, default: []].append(event.id) }
        }
        for entry in batch.streamEntries {
            streams[entry.user, default: []].append(entry)
            state.streams[entry.user, default: StreamState()].head = entry.position
            guard case .event(let id) = entry.item else { continue }
            events[id]?.entries += 1
            if let device = entry.originDevice, let frame = events[id]?.event.frame {
                let key = DeviceKey(user: entry.user, device: device)
                state.recentEvents[key, default: []].append(frame)
                if state.recentEvents[key]!.count > RecentEvents.capacity { state.recentEvents[key]!.removeFirst() }
            }
        }
        for change in batch.memberships {
            if change.joined {
                state.members[change.conversation, default: []].insert(change.user)
            } else {
                state.members[change.conversation]?.remove(change.user)
                // As the router's own (and the SQL stores', which delete the row): no empty sets.
                if state.members[change.conversation]?.isEmpty == true { state.members[change.conversation] = nil }
            }
        }
        if !batch.removals.isEmpty { erase(batch.removals) }
        if !batch.redactedQuotes.isEmpty { redactQuotes(batch.redactedQuotes) }
        for device in batch.forgottenDevices {
            state.devicePositions[device] = nil
            keyBundles[device] = nil
        }
        for (device, position) in batch.devicePositions {
            state.devicePositions[device] = max(state.devicePositions[device] ?? 0, position)
        }
        for (key, seqs) in batch.trimmedConversations {
            let seq = seqs.upperBound  // Everything below it: the rest went with earlier batches.
            let drop = Self.firstIndex(messages[key] ?? [], atLeast: seq, by: \.seq)
            messages[key]?.removeFirst(drop)
            state.conversations[key]?.trim(below: seq)
            if !eventsAbout.isEmpty {
                eventsAbout = eventsAbout.filter { $0.key.conversation != key || $0.key.seq >= seq }
            }
        }
        for (user, positions) in batch.trimmedStreams {
            let position = positions.upperBound
            let drop = Self.firstIndex(streams[user] ?? [], atLeast: position, by: \.position)
            for entry in streams[user]?.prefix(drop) ?? [] {
                guard case .event(let id) = entry.item, let kept = events[id] else { continue }
                guard kept.entries == 1 else {
                    events[id]!.entries -= 1
                    continue
                }
                events[id] = nil
                if let about = kept.event.about {
                    eventsAbout[about]?.removeAll { $0 == id }
                    if eventsAbout[about]?.isEmpty == true { eventsAbout[about] = nil }
                }
            }
            streams[user]?.removeFirst(drop)
            state.streams[user]?.oldest = position
        }
        for bundle in batch.keyBundles {
            keyBundles[bundle.device, default: [:]][bundle.kind] = bundle
        }
        for (key, bytes) in batch.records {
            state.records[key] = bytes.isEmpty ? nil : bytes
        }
        if let through = batch.eraseExpiredThrough { eraseExpired(through: through) }
    }

    /// Marks recalled and deleted messages removed and keeps their stubs in place of their frames,
    /// and redacts the events about them that carry their content (``Redaction``).
    private func erase(_ removals: [(conversation: ConversationKey, seq: UInt64, stub: [UInt8])]) {
        for removal in removals {
            let message = MessageKey(conversation: removal.conversation, seq: removal.seq)
            state.conversations[removal.conversation]?.removed.insert(removal.seq)
            let kept = messages[removal.conversation] ?? []
            let index = Self.firstIndex(kept, atLeast: removal.seq, by: \.seq)
            if index < kept.count, kept[index].seq == removal.seq {
                messages[removal.conversation]![index].frame = removal.stub
            }
            rewriteEvents(eventsAbout.removeValue(forKey: message) ?? [], Redaction.event)
        }
    }

    /// Redacts the quote snapshots of kept replies whose quoted message is gone, and of the events
    /// kept about them (``StoreBatch/redactedQuotes``, ``Redaction/quote(_:quoting:)``).
    private func redactQuotes(_ replies: [(reply: MessageKey, quotedUID: String)]) {
        for (reply, uid) in replies {
            let kept = messages[reply.conversation] ?? []
            let index = Self.firstIndex(kept, atLeast: reply.seq, by: \.seq)
            if index < kept.count, kept[index].seq == reply.seq {
                messages[reply.conversation]![index].frame = Redaction.quote(kept[index].frame, quoting: [uid])
            }
            rewriteEvents(eventsAbout[reply] ?? []) { Redaction.quote($0, quoting: [uid]) }
        }
    }

    /// Rewrites with `transform` the frames of the kept events `ids` (those still kept).
    private func rewriteEvents(_ ids: [UInt64], _ transform: ([UInt8]) -> [UInt8]) {
        for id in ids where events[id] != nil {
            events[id]!.event.frame = transform(events[id]!.event.frame)
        }
    }

    /// Empties the frames of the disappearing messages and events that expired by `through`.
    private func eraseExpired(through: Int64) {
        for key in messages.keys {
            for index in messages[key]!.indices where Expiry.passed(messages[key]![index].expireAtMs, at: through) {
                messages[key]![index].frame = []
            }
        }
        for id in events.keys where Expiry.passed(events[id]!.event.expireAtMs, at: through) {
            events[id]!.event.frame = []
        }
    }

    /// How many events are kept (each once, whatever the entries that name it): for tests.
    var keptEventCount: Int { events.count }

    func messages(
        in conversation: ConversationKey,
        from: UInt64,
        through: UInt64,
        limit: Int,
        visibleTo user: String
    ) throws -> [StoredMessage] {
        guard let kept = messages[conversation] else { return [] }
        var out: [StoredMessage] = []
        for message in kept[Self.firstIndex(kept, atLeast: from, by: \.seq)...] {
            guard message.seq <= through, out.count < limit else { break }
            guard message.receivers.isEmpty || message.senderID == user || message.receivers.contains(user) else {
                continue
            }
            out.append(message)
        }
        return out
    }

    func stream(of user: String, after: UInt64, through: UInt64, limit: Int) throws -> [StreamRow] {
        guard let entries = streams[user] else { return [] }
        var out: [StreamRow] = []
        for entry in entries[Self.firstIndex(entries, atLeast: after + 1, by: \.position)...] {
            guard entry.position <= through, out.count < limit else { break }
            switch entry.item {
            case .message(let key, let seq, let sent):
                let kept = messages[key] ?? []
                let index = Self.firstIndex(kept, atLeast: seq, by: \.seq)
                let found = index < kept.count && kept[index].seq == seq
                out.append(
                    StreamRow(
                        position: entry.position,
                        originDevice: entry.originDevice,
                        frame: found ? kept[index].frame : [],
                        sent: sent,
                        isMessage: true,
                        expireAtMs: found ? kept[index].expireAtMs : 0
                    )
                )
            case .event(let id):
                let event = events[id]?.event
                out.append(
                    StreamRow(
                        position: entry.position,
                        originDevice: entry.originDevice,
                        frame: event?.frame ?? [],
                        sent: false,
                        isMessage: false,
                        expireAtMs: event?.expireAtMs ?? 0
                    )
                )
            }
        }
        return out
    }

    /// The index of the first element of `sorted` whose `key` is at least `value` (binary search).
    private static func firstIndex<T>(_ sorted: [T], atLeast value: UInt64, by key: KeyPath<T, UInt64>) -> Int {
        var low = 0
        var high = sorted.count
        while low < high {
            let mid = (low + high) / 2
            if sorted[mid][keyPath: key] < value { low = mid + 1 } else { high = mid }
        }
        return low
    }
}
#endif
