#if Tools
import IMCodec

/// The groups of `serve --groups FILE` at start: the file says who is in each (a closed group
/// refuses any other join, Router+Requests.swift), so its members are put back, and the members it
/// named at the last start and names no more are taken out.
extension Router {
    /// Applies the groups file to the members loaded from the store: a member the file names is
    /// added (a leave made since is undone), and one the file named at the last start
    /// (`namedBefore`, kept in a state record per group) and names no more leaves, as by a
    /// `membership` leave: the change is kept in the stream of every member and of the leaver, who
    /// reads up to it. Before, a user an operator took out of the file stayed in the group, with
    /// everything it kept and everything sent to it after. A member the file never named (one who
    /// joined while the group was open, before it went into the file) is not taken out, nor is
    /// anyone at the first start with a file, or the first of a relay that did not keep the record.
    func applyGroupsFile(namedBefore: [String: Set<String>]) {
        for (group, users) in configuration.groups.sorted(by: { $0.key < $1.key }) {
            let key = ConversationKey.group(group)
            for user in users where members[key, default: []].insert(user).inserted {
                belongs[user, default: []].insert(key)
                store.batch.memberships.append((key, user, true))
            }
            if namedBefore[group] != users {
                var bytes: [UInt8] = []
                StringListBytes.append(users.sorted(), to: &bytes)
                store.batch.records[.fileGroup(group)] = bytes  // none: no record
            }
            let removed = members[key, default: []].subtracting(users).intersection(namedBefore[group] ?? [])
            for user in removed.sorted() {
                logger.info("\(user) is no longer in \(group) in the groups file: it leaves")
                let reached = self.users(of: key)
                removeMember(user, from: key)
                let told = MembershipChange.with {
                    $0.action = .leave
                    $0.conversation = key.conversation(for: user)
                    $0.userID = user
                    $0.timeMs = RelayProtocol.nowMs()
                }
                let body = Frame(.membership(told)).serializedBytes()
                // As a leave that does not fit: applied, and told to no one.
                guard body.count <= deliveryRoom(in: key) else { continue }
                _ = keep(.event(body), for: reached, origin: Self.relayOrigin)
            }
        }
    }

    /// Takes `user` out of `key`'s members (a leave): kept, the read counts counted again, the
    /// leave noted. Returns whether it was a member.
    @discardableResult
    func removeMember(_ user: String, from key: ConversationKey) -> Bool {
        guard members[key]?.remove(user) != nil else { return false }
        // A group its last member left holds no empty set of members for as long as the relay runs.
        if members[key]?.isEmpty == true { members[key] = nil }
        belongs[user]?.remove(key)
        store.batch.memberships.append((key, user, false))
        audienceChanged(key)
        noteLeave(of: key, by: user)
        return true
    }
}
#endif
