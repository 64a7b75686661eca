#if Tools
/// What a group, chatroom or ultra-group channel kept after its last member left.
///
/// A join of a group with no members starts it, and what it kept stays after its members leave:
/// their devices may still read its messages through the stream entries of the time they were
/// members (a device offline when its user left). Kept forever, that was a conversation (its
/// messages, its per-message records, its timer) and a list entry per former member for every group
/// a user started, sent to and left: the join budget only slowed the growth.
///
/// So the relay notes, when a user leaves, its stream head then (``leavePositions``, a state record
/// each): no later entry of its stream is a message of that group. Once a group has no members and
/// every recorded leaver's stream has dropped its entries up to that position (stream retention,
/// `--max-stream-entries`), no device can read the group's messages through a stream any more, and
/// the sweep frees it: its messages are deleted as retention deletes them (with what was kept about
/// each), its timer goes, and each recorded leaver's list entry and messages deleted for itself go.
/// Its newest seq stays, so a later join goes on from there and a device never sees a seq twice.
///
/// What one user can make the relay keep of groups it started and left is then bounded by its own
/// stream: a loop of joining a new group, sending and leaving writes to it, and pushes its oldest
/// groups out. The groups of the groups file are never freed. (A leaver's list entry and leave
/// record of a group that keeps members stay, as its list entry did before.)
extension Router {
    /// Notes that `user` leaves `key` (before its leave is kept): its stream holds no message of
    /// `key` after its head now. A group its last member left waits for the sweep.
    func noteLeave(of key: ConversationKey, by user: String) {
        let position = streams[user]?.head ?? 0
        leavePositions[key, default: [:]][user] = position
        store.batch.records[.leave(key, user: user)] = SeqListBytes.bytes([position])
        if members[key] == nil, !isFileGroup(key) { emptyGroups.insert(key) }
    }

    /// Whether `key` is a group of the groups file: never freed (the file bounds them, and puts
    /// their members back at every start).
    private func isFileGroup(_ key: ConversationKey) -> Bool {
        guard case .shared(.group, let group, _) = key else { return false }
        return configuration.groups[group] != nil
    }

    /// Notes that `user` joins `key`: a member again, its leave is forgotten, and the group is not empty.
    func noteJoin(of key: ConversationKey, by user: String) {
        emptyGroups.remove(key)
        guard leavePositions[key]?.removeValue(forKey: user) != nil else { return }
        if leavePositions[key]?.isEmpty == true { leavePositions[key] = nil }
        store.batch.records[.leave(key, user: user)] = []
    }

    /// Loads a leave from its state record.
    func loadLeave(_ bytes: [UInt8], of key: ConversationKey, by user: String) {
        guard let position = SeqListBytes.seqs(bytes[...])?.first else { return }
        leavePositions[key, default: [:]][user] = position
    }

    /// After the records and the members are loaded: notes the leaves relays made before they noted
    /// leaves, forgets those of users who are members (the groups file puts its members back at
    /// every start), and finds the groups with none.
    ///
    /// A user with a list entry of a group, chatroom or channel it is not a member of left it (an
    /// entry is kept only for a member, and stays after its leave): without a leave on record, its
    /// stream head now stands for it (no later entry names the group's messages), so the group is
    /// not freed while its stream may name them. A leaver without a list entry never got a
    /// message of the group, so its stream names none.
    func findEmptyGroups() {
        for (user, views) in userConversations {
            for key in views.keys where key.isShared && members[key]?.contains(user) != true {
                guard leavePositions[key]?[user] == nil else { continue }
                noteLeave(of: key, by: user)
            }
        }
        for (key, leavers) in leavePositions {
            for user in leavers.keys where members[key]?.contains(user) == true { noteJoin(of: key, by: user) }
            if leavePositions[key] != nil, members[key] == nil, !isFileGroup(key) { emptyGroups.insert(key) }
        }
    }

    /// Frees each group without members whose every recorded leaver's stream dropped the entries it
    /// had when it left (the sweep).
    func freeEmptyGroups() {
        for key in emptyGroups where members[key] == nil {
            let leavers = leavePositions[key] ?? [:]
            guard leavers.allSatisfy({ (streams[$0.key]?.oldest ?? .max) > $0.value }) else { continue }
            free(key, leavers: Array(leavers.keys))
        }
    }

    /// Frees what empty group `key` kept, but its newest seq.
    private func free(_ key: ConversationKey, leavers: [String]) {
        emptyGroups.remove(key)
        leavePositions[key] = nil
        for user in leavers { store.batch.records[.leave(key, user: user)] = [] }
        if let maxSeq = conversations[key]?.maxSeq { dropMessages(of: key, below: maxSeq + 1) }
        (messageChanges[key], extensions[key], polls[key], messageReaders[key]) = (nil, nil, nil, nil)
        audienceEpochs[key] = nil
        if disappearingTimers.removeValue(forKey: key) != nil { store.batch.records[.disappearingTimer(key)] = [] }
        (notReceiving[key], groupLoads[key]) = (nil, nil)
        for user in leavers {
            if userConversations[user]?.removeValue(forKey: key) != nil {
                store.batch.records[.conversation(user: user, key)] = []
            }
            if deletedForMe[user]?.removeValue(forKey: key) != nil {
                store.batch.records[.deletedForMe(user: user, key)] = []
            }
        }
        logger.info("freed \(key.storageID): no members, and no leaver's stream holds its messages")
    }
}
#endif
