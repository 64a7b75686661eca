// The fields of a message that its server sets and its sender never does (message.proto), so that
// a server can refuse a message that arrives with them set: otherwise a sender could show its
// receivers a read list, reactions, an edit mark or an expiry that never happened.
extension Message {
    /// The proto names of the fields a server assigns or keeps for a message, which its sender
    /// leaves unset, in field order: its uid, seq and server time (stamped, ``ServerStamp``), the
    /// edit count, the receiver's own status flags, who it was delivered to and read by, when it last
    /// changed, its reactions and thread summaries, when it expires and whether it was delivered
    /// offline. `direction` is not among them: it is the holder's, and a server sets it on delivery.
    public static let serverAssignedFieldNames: [String] = [
        "server_msg_uid", "seq", "server_time_ms", "edit_version", "received_status", "delivered_ids", "read_ids",
        "updated_at_ms", "reactions", "thread", "expire_at_ms", "is_offline",
    ]
}

extension Message.View {
    /// The fields of ``Message/serverAssignedFieldNames`` this message sets, by proto name, in field
    /// order: empty for a message as its sender should send it. Reads the fields in place.
    public var serverAssignedFields: [String] {
        var set: [String] = []
        if !serverMsgUID.isEmpty { set.append("server_msg_uid") }
        if seq != 0 { set.append("seq") }
        if serverTimeMs != 0 { set.append("server_time_ms") }
        if editVersion != 0 { set.append("edit_version") }
        if receivedStatus != 0 { set.append("received_status") }
        if !deliveredIDs.isEmpty { set.append("delivered_ids") }
        if !readIDs.isEmpty { set.append("read_ids") }
        if updatedAtMs != 0 { set.append("updated_at_ms") }
        if !reactions.isEmpty { set.append("reactions") }
        if thread != nil { set.append("thread") }
        if expireAtMs != 0 { set.append("expire_at_ms") }
        if isOffline { set.append("is_offline") }
        return set
    }
}
