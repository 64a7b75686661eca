#if Tools
import IMCodec

/// What the store keeps of a message recalled or deleted for everyone (events.proto: it is removed
/// "for every participant"), and of the events kept about it that carried its content: their ids,
/// where they stand in the streams, and nothing the message said. So every read serves the same
/// frames at the same positions as before, with the content gone.
enum Redaction {
    /// The frame kept in place of a removed message: its conversation (as its sender named it), its
    /// sender, ids, seq and server time, `status` (`MESSAGE_STATUS_RECALLED` for a recall,
    /// `MESSAGE_STATUS_DELETED` for a delete for everyone), and no content.
    static func message(
        in key: ConversationKey,
        seq: UInt64,
        sender: String,
        clientMsgID: String,
        serverMsgUID: String,
        serverTimeMs: Int64,
        status: MessageStatus
    ) -> [UInt8] {
        Frame(
            .message(
                Message.with {
                    $0.conversation = key.conversation(for: sender)
                    $0.senderID = sender
                    $0.clientMsgID = clientMsgID
                    $0.serverMsgUID = serverMsgUID
                    $0.seq = seq
                    $0.serverTimeMs = serverTimeMs
                    $0.status = status
                }
            )
        ).serializedBytes()
    }

    /// What a receiver reads again of a view-once message (message.proto `view_once`: "receivers
    /// show the media once, then delete it and keep no copy"): what routes and orders the message
    /// (ids, seq, conversation, sender, times, flags, status, direction, references, expiry, reactions
    /// and thread counts), an empty element of each media kind it held (an image, a video or a voice
    /// message a client shows as opened), and nothing it said: no media, mentions, push text, custom
    /// data or parameters, extension keys, extra or quote snapshot. Each receiving device gets the
    /// content once, through its stream (Router+ViewOnce.swift).
    static func viewedOnce(_ message: Message) -> Message {
        Message.with {
            $0.clientMsgID = message.clientMsgID
            $0.serverMsgUID = message.serverMsgUID
            $0.seq = message.seq
            $0.random = message.random
            $0.senderID = message.senderID
            if let conversation = message.conversation { $0.conversation = conversation }
            $0.clientTimeMs = message.clientTimeMs
            $0.serverTimeMs = message.serverTimeMs
            $0.priority = message.priority
            $0.status = message.status
            $0.flags = message.flags
            $0.targetReceivers = message.targetReceivers
            $0.storagePolicy = message.storagePolicy
            if let quote = message.quote { $0.quote = quote }
            $0.elements = message.elements.compactMap { element in
                switch element.content {
                case .image?: MessageElement.with { $0.content = .image(ImageElement()) }
                case .video?: MessageElement.with { $0.content = .video(VideoElement()) }
                case .sound?: MessageElement.with { $0.content = .sound(SoundElement()) }
                default: nil
                }
            }
            $0.editVersion = message.editVersion
            $0.senderNickname = message.senderNickname
            $0.senderDeviceID = message.senderDeviceID
            $0.direction = message.direction
            $0.receivedStatus = message.receivedStatus
            $0.objectName = message.objectName
            $0.dialogID = message.dialogID
            $0.deliveredIDs = message.deliveredIDs
            $0.readIDs = message.readIDs
            $0.updatedAtMs = message.updatedAtMs
            $0.reactions = message.reactions
            if let root = message.threadRoot { $0.threadRoot = root }
            if let thread = message.thread { $0.thread = thread }
            $0.expireAfterS = message.expireAfterS
            $0.expireAtMs = message.expireAtMs
            $0.viewOnce = true
            $0.forwardScore = message.forwardScore
            $0.isOffline = message.isOffline
        }
    }

    /// A kept reply (or an edit kept about one) whose quoted message, one with a server uid of
    /// `quotedUIDs`, was recalled, deleted for everyone or expired: its `quote_snapshot` keeps who
    /// wrote the quoted message and the kind of its first element, and loses the text it quoted. A
    /// snapshot whose quote names another message by its uid is kept (an edit may quote another
    /// message than the reply); one whose quote names no uid loses its text too (the safe side). So
    /// is another frame kept (a stub, an emptied frame, a message without a snapshot), and one that
    /// does not decode (none should: it was checked when it arrived).
    static func quote(_ frame: [UInt8], quoting quotedUIDs: Set<String>) -> [UInt8] {
        guard !frame.isEmpty, var decoded = try? Frame(serializedBytes: frame) else { return frame }
        func names(_ message: Message) -> Bool {
            guard let quote = message.quote, message.quoteSnapshot?.text.isEmpty == false else { return false }
            return quote.serverMsgUID.isEmpty || quotedUIDs.contains(quote.serverMsgUID)
        }
        switch decoded.payload {
        case .message(var message)? where names(message):
            quote(&message, keepingAuthor: true)
            decoded.payload = .message(message)
        case .edit(var edit)? where edit.newMessage.map(names) == true:
            quote(&edit.newMessage!, keepingAuthor: true)
            decoded.payload = .edit(edit)
        default:
            return frame
        }
        return decoded.serializedBytes()
    }

    /// Takes the quoted text out of `message`'s quote snapshot, and unless `keepingAuthor` its author
    /// too (the snapshot's author id and nickname, the quote's `sender_id`): what it quoted is not
    /// served, or who wrote it cannot be told. The snapshot's element kind and the quote's ids stay.
    static func quote(_ message: inout Message, keepingAuthor: Bool) {
        if var snapshot = message.quoteSnapshot {
            snapshot.text = ""
            if !keepingAuthor {
                snapshot.authorID = ""
                snapshot.authorNickname = ""
            }
            message.quoteSnapshot = snapshot
        }
        if !keepingAuthor, message.quote != nil { message.quote!.senderID = "" }
    }

    /// An event frame kept about a removed message, without the content it carried: an edit's
    /// `new_message` keeps only its ids (status `MESSAGE_STATUS_RECALLED`), a stream chunk loses its
    /// text; the event's reference, actor and time stay. Another frame is kept as it is, and one
    /// that does not decode (none should: it was checked when it arrived) is emptied.
    static func event(_ frame: [UInt8]) -> [UInt8] {
        guard var decoded = try? Frame(serializedBytes: frame) else { return [] }
        switch decoded.payload {
        case .edit(var edit)?:
            if let edited = edit.newMessage {
                edit.newMessage = Message.with {
                    if let conversation = edited.conversation { $0.conversation = conversation }
                    $0.senderID = edited.senderID
                    $0.clientMsgID = edited.clientMsgID
                    $0.serverMsgUID = edited.serverMsgUID
                    $0.seq = edited.seq
                    $0.status = .recalled
                }
            }
            decoded.payload = .edit(edit)
        case .streamChunk(var chunk)?:
            chunk.text = ""
            decoded.payload = .streamChunk(chunk)
        default:
            return frame
        }
        return decoded.serializedBytes()
    }
}
#endif
