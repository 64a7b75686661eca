#if Tools
/// Who read one kept message sent with `MESSAGE_FLAG_NEED_READ_RECEIPT` (``Router/messageReaders``):
/// the readers in the order they read it (read-member pages list them so), a set of the same users
/// (whether one read it, at once), and the message's read and unread counts as last counted.
///
/// Counting walks the message's audience (every member of a group, less those who joined after it
/// or cleared it), so the counts are kept with the audience epoch they were counted at
/// (``Router/audienceEpochs``): they stay good until a member joins or leaves the conversation or a
/// user's `cleared_seq` in it moves, and a new reader adds one to them. A receipt or a pull of the
/// same message walks the members once between those changes, not once per receipt.
struct MessageReaders {
    /// The readers, in the order they read the message.
    private(set) var order: [String] = []
    /// The same users, for ``contains(_:)``.
    private var users: Set<String> = []
    /// The counts as last counted (``Router/countedReaders(of:in:)``), or `nil`.
    var counts: ReadCounts?

    init() {}

    init(_ readers: [String]) {
        for reader in readers { append(reader) }
    }

    var count: Int { order.count }

    func contains(_ user: String) -> Bool { users.contains(user) }

    /// Adds `user` after the others, and one to the read count when there is one (a reader is one
    /// of the message's receivers: ``Router/receiptRefusal(_:from:)``); `false`, and nothing
    /// changes, when it read the message already.
    @discardableResult
    mutating func append(_ user: String) -> Bool {
        guard users.insert(user).inserted else { return false }
        order.append(user)
        counts?.read += 1
        return true
    }

    /// Puts `readers` (those of a record from before per-reader records) before the others, less
    /// those already known.
    mutating func prepend(_ readers: [String]) {
        var earlier: [String] = []
        for reader in readers where users.insert(reader).inserted { earlier.append(reader) }
        order.insert(contentsOf: earlier, at: 0)
        counts = nil
    }
}

/// A group message's read and unread counts (receipts.proto `read_count`, `unread_count`), counted
/// at audience epoch `epoch` of its conversation.
struct ReadCounts {
    var epoch: UInt64
    /// Its audience less its sender that read it.
    var read: Int
    /// Its audience less its sender.
    var receivers: Int

    var unread: Int { receivers - read }
}
#endif
